import { WireError } from './errors.js';

/**
 * The robot's leg of the relay: the few datagrams the robot and svc-cloud's relay exchange on a
 * relayed session's robot-facing port besides the QUIC packets they carry (`docs/protocol/relay.md`).
 *
 * Every such datagram starts with the 4-byte magic `00 73 76 72` (`\0svr`). A QUIC packet never
 * starts with `00`: its first byte has the fixed bit (0x40) set, or the long-header bit (0x80).
 * So a receiver tells the two apart by the first byte alone ({@link isRelayControl}).
 */

/** The magic every relay control datagram starts with. */
export const RELAY_MAGIC = Uint8Array.of(0x00, 0x73, 0x76, 0x72);

/** Longest attach token accepted, bytes. */
export const MAX_RELAY_TOKEN_BYTES = 1024;

/** Longest relay control datagram, bytes. */
export const MAX_RELAY_CONTROL_BYTES = RELAY_MAGIC.byteLength + 1 + 2 + MAX_RELAY_TOKEN_BYTES;

/**
 * Why the relay refused an attach, as a stable code:
 *
 * - `bad-token`: the token does not verify (signature, format, or a party other than the robot);
 * - `expired`: the token's lifetime is over;
 * - `replayed`: the token was already used from another address;
 * - `wrong-session`: the token names another session than this port's;
 * - `gone`: the allocation ended (the session was revoked, expired, or the pilot left).
 */
export const RELAY_REFUSALS = ['bad-token', 'expired', 'replayed', 'wrong-session', 'gone'] as const;
/** One of {@link RELAY_REFUSALS}. */
export type RelayRefusal = (typeof RELAY_REFUSALS)[number];

/** A relay control datagram, decoded. */
export type RelayControl =
  /** Robot → relay: attach this source address to the allocation the token names. */
  | { readonly type: 'attach'; readonly token: string }
  /** Relay → robot: attached; the allocation lives `expiresInMs` more unless renewed. */
  | { readonly type: 'attached'; readonly expiresInMs: number }
  /** Relay → robot: refused, with a code and words for the log. */
  | { readonly type: 'refused'; readonly code: RelayRefusal; readonly message: string };

const TYPE = { attach: 1, attached: 2, refused: 3 } as const;
const MAX_MESSAGE_BYTES = 200;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** Whether a datagram is relay control rather than a QUIC packet (its first byte is 0). */
export function isRelayControl(datagram: Uint8Array): boolean {
  return datagram.byteLength > 0 && datagram[0] === 0;
}

/**
 * The bytes of a relay control datagram.
 *
 * @throws {TypeError} for a token longer than {@link MAX_RELAY_TOKEN_BYTES} or not ASCII, or an
 *   expiry that is not a whole number of ms from 0 to 2^32 - 1.
 */
export function encodeRelayControl(message: RelayControl): Uint8Array {
  switch (message.type) {
    case 'attach': {
      const token = encoder.encode(message.token);
      if (token.byteLength === 0 || token.byteLength > MAX_RELAY_TOKEN_BYTES) {
        throw new TypeError(`relay attach token must be 1..${MAX_RELAY_TOKEN_BYTES} bytes`);
      }
      if (token.byteLength !== message.token.length) throw new TypeError('relay attach token must be ASCII');
      const out = withHeader(TYPE.attach, 2 + token.byteLength);
      new DataView(out.buffer).setUint16(5, token.byteLength);
      out.set(token, 7);
      return out;
    }
    case 'attached': {
      const { expiresInMs } = message;
      if (!Number.isInteger(expiresInMs) || expiresInMs < 0 || expiresInMs > 0xffff_ffff) {
        throw new TypeError(`relay expiry must be 0..${0xffff_ffff} ms, got ${String(expiresInMs)}`);
      }
      const out = withHeader(TYPE.attached, 4);
      new DataView(out.buffer).setUint32(5, expiresInMs);
      return out;
    }
    case 'refused': {
      const text = encoder.encode(message.message).subarray(0, MAX_MESSAGE_BYTES);
      const out = withHeader(TYPE.refused, 1 + text.byteLength);
      out[5] = RELAY_REFUSALS.indexOf(message.code) + 1;
      out.set(text, 6);
      return out;
    }
    default:
      return message satisfies never;
  }
}

/**
 * Decodes a relay control datagram. Anything else (no magic, unknown type, lengths that do not
 * add up, a token that is not ASCII) is a {@link WireError} `relay-control`, returned.
 */
export function decodeRelayControl(datagram: Uint8Array): RelayControl | WireError {
  if (datagram.byteLength < RELAY_MAGIC.byteLength + 1 || datagram.byteLength > MAX_RELAY_CONTROL_BYTES) {
    return bad(`a relay control datagram is 5..${MAX_RELAY_CONTROL_BYTES} bytes, got ${datagram.byteLength}`);
  }
  for (let i = 0; i < RELAY_MAGIC.byteLength; i++) {
    if (datagram[i] !== RELAY_MAGIC[i]) return bad('not a relay control datagram (no magic)');
  }
  const view = new DataView(datagram.buffer, datagram.byteOffset, datagram.byteLength);
  const type = datagram[4];
  if (type === TYPE.attach) {
    if (datagram.byteLength < 7) return bad('attach without a token length');
    const length = view.getUint16(5);
    if (length === 0 || length > MAX_RELAY_TOKEN_BYTES || 7 + length !== datagram.byteLength) {
      return bad(`attach token length ${length} does not match the datagram`);
    }
    const bytes = datagram.subarray(7);
    if (bytes.some((b) => b < 0x21 || b > 0x7e)) return bad('attach token is not printable ASCII');
    return { type: 'attach', token: decoder.decode(bytes) };
  }
  if (type === TYPE.attached) {
    if (datagram.byteLength !== 9) return bad('attached must carry exactly a 32-bit expiry');
    return { type: 'attached', expiresInMs: view.getUint32(5) };
  }
  if (type === TYPE.refused) {
    if (datagram.byteLength < 6) return bad('refused without a code');
    const code = RELAY_REFUSALS[datagram[5]! - 1];
    if (code === undefined) return bad(`unknown refusal code ${datagram[5]}`);
    let message: string;
    try {
      message = decoder.decode(datagram.subarray(6));
    } catch {
      return bad('refusal message is not UTF-8');
    }
    return { type: 'refused', code, message };
  }
  return bad(`unknown relay control type ${String(type)}`);
}

function withHeader(type: number, bodyBytes: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(RELAY_MAGIC.byteLength + 1 + bodyBytes);
  out.set(RELAY_MAGIC, 0);
  out[4] = type;
  return out;
}

function bad(message: string): WireError {
  return new WireError('relay-control', message);
}
