import { TransportError } from '../errors.js';
import {
  copyInto,
  readTlvVarint,
  TLV,
  TlvReader,
  type TlvValueAction,
  tlvByteLength,
  tlvValue,
  writeTlvHeader,
} from './tlv.js';
import { readVarint, readVarintId } from './varint.js';

/** Capsule types (RFC 9297 §3.5, draft-ietf-webtrans-http3) this library understands. */
export const CAPSULE_TYPE = {
  /** An HTTP datagram sent over the stream instead of a QUIC DATAGRAM frame (RFC 9297 §3.5). */
  DATAGRAM: 0x00,
  /** Ends a WebTransport session with an application error code and a reason. */
  CLOSE_WEBTRANSPORT_SESSION: 0x2843,
  /** Asks the peer to wind a WebTransport session down (no payload). */
  DRAIN_WEBTRANSPORT_SESSION: 0x78ae,
} as const;

/** Longest reason, in UTF-8 bytes, a CLOSE_WEBTRANSPORT_SESSION capsule may carry. */
export const MAX_CLOSE_REASON_BYTES = 1024;

/** Default limit on a DATAGRAM capsule's payload (other capsules have their own fixed limits). */
export const DEFAULT_MAX_CAPSULE_PAYLOAD = 64 * 1024;

/** A capsule we act on. */
export type Capsule =
  | { readonly type: 'datagram'; readonly payload: Uint8Array }
  | { readonly type: 'close-session'; readonly code: number; readonly reason: string }
  | { readonly type: 'drain-session' };

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The capsule type of each capsule variant. */
const CAPSULE_TYPE_OF: { readonly [T in Capsule['type']]: number } = {
  datagram: CAPSULE_TYPE.DATAGRAM,
  'close-session': CAPSULE_TYPE.CLOSE_WEBTRANSPORT_SESSION,
  'drain-session': CAPSULE_TYPE.DRAIN_WEBTRANSPORT_SESSION,
};

/** The capsule's value bytes; `TypeError` for an out-of-range code or an over-long reason. */
function capsuleValue(value: Capsule): Uint8Array {
  switch (value.type) {
    case 'datagram':
      return value.payload;
    case 'close-session': {
      if (!Number.isInteger(value.code) || value.code < 0 || value.code > 0xffff_ffff) {
        throw new TypeError(`session close code ${value.code} is outside 0..2^32-1`);
      }
      const reason = utf8.encode(value.reason);
      if (reason.length > MAX_CLOSE_REASON_BYTES) {
        throw new TypeError(
          `session close reason of ${reason.length} bytes exceeds ${MAX_CLOSE_REASON_BYTES}`,
        );
      }
      const out = new Uint8Array(4 + reason.length);
      new DataView(out.buffer).setUint32(0, value.code);
      out.set(reason, 4);
      return out;
    }
    case 'drain-session':
      return new Uint8Array(0);
    default: {
      const unreachable: never = value;
      throw new TypeError(`unknown capsule ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * Capsule layout (RFC 9297 §3.2), carried in the DATA frames of a WebTransport CONNECT stream (the
 * record layout of `tlv.ts`, shared with HTTP/3 frames):
 *
 * ```text
 * Capsule {
 *   Capsule Type (i),
 *   Capsule Length (i),
 *   Capsule Value (..),
 * }
 *
 * CLOSE_WEBTRANSPORT_SESSION value {          DRAIN_WEBTRANSPORT_SESSION value: empty
 *   Application Error Code (32),             DATAGRAM value: the HTTP datagram payload
 *   Application Error Message (..),  UTF-8, at most 1024 bytes
 * }
 * ```
 */
export const capsule = {
  /** Bytes the whole capsule takes. */
  byteLength(value: Capsule): number {
    return tlvByteLength(CAPSULE_TYPE_OF[value.type], capsuleValue(value).length);
  },

  /** Writes the capsule at `offset`; returns the bytes written. `TypeError` when it does not fit. */
  encodeInto(view: DataView, offset: number, value: Capsule): number {
    const bytes = capsuleValue(value);
    const at = writeTlvHeader(view, offset, CAPSULE_TYPE_OF[value.type], bytes.length, TLV.capsule);
    copyInto(view, at, bytes);
    return at + bytes.length - offset;
  },

  /**
   * Reads one whole capsule at `offset` of a buffer ending at `end`; `value` is `undefined` for a
   * capsule of unknown type (skipped). Throws {@link TransportError} `capsule-error` when it is
   * truncated or its value malformed. A DATAGRAM payload is a view into `bytes`.
   */
  decode(bytes: Uint8Array, offset = 0, end = bytes.length): { value: Capsule | undefined; bytes: number } {
    const view = bytes.subarray(offset, end);
    const type = readTlvVarint(view, 0, 'type', readVarintId, TLV.capsule);
    const length = readTlvVarint(view, type.bytes, 'length', readVarint, TLV.capsule);
    const start = type.bytes + length.bytes;
    const value = tlvValue(view, type.value, start, length.value, TLV.capsule);
    return { value: parseCapsule(type.value, value), bytes: start + length.value };
  },
} as const;

/** Encodes one capsule (see {@link capsule}). */
export function encodeCapsule(value: Capsule): Uint8Array {
  const out = new Uint8Array(capsule.byteLength(value));
  capsule.encodeInto(new DataView(out.buffer), 0, value);
  return out;
}

/** Largest value each known capsule type may have (`undefined`: unknown, skipped unbuffered). */
function valueLimit(type: number, maxDatagram: number): number | undefined {
  switch (type) {
    case CAPSULE_TYPE.DATAGRAM:
      return maxDatagram;
    case CAPSULE_TYPE.CLOSE_WEBTRANSPORT_SESSION:
      return 4 + MAX_CLOSE_REASON_BYTES;
    case CAPSULE_TYPE.DRAIN_WEBTRANSPORT_SESSION:
      return 0;
    default:
      return undefined;
  }
}

function parseCapsule(type: number, value: Uint8Array): Capsule | undefined {
  switch (type) {
    case CAPSULE_TYPE.DATAGRAM:
      return { type: 'datagram', payload: value };
    case CAPSULE_TYPE.CLOSE_WEBTRANSPORT_SESSION: {
      if (value.length < 4) {
        throw new TransportError(
          'capsule-error',
          `CLOSE_WEBTRANSPORT_SESSION of ${value.length} bytes has no error code`,
        );
      }
      if (value.length - 4 > MAX_CLOSE_REASON_BYTES) {
        throw new TransportError(
          'capsule-error',
          `CLOSE_WEBTRANSPORT_SESSION reason of ${value.length - 4} bytes exceeds ${MAX_CLOSE_REASON_BYTES}`,
        );
      }
      const code = new DataView(value.buffer, value.byteOffset, 4).getUint32(0);
      let reason: string;
      try {
        reason = strictUtf8.decode(value.subarray(4));
      } catch (error) {
        throw new TransportError('capsule-error', 'CLOSE_WEBTRANSPORT_SESSION reason is not UTF-8', {
          cause: error,
        });
      }
      return { type: 'close-session', code, reason };
    }
    case CAPSULE_TYPE.DRAIN_WEBTRANSPORT_SESSION:
      if (value.length !== 0) {
        throw new TransportError('capsule-error', `DRAIN_WEBTRANSPORT_SESSION carries ${value.length} bytes`);
      }
      return { type: 'drain-session' };
    default:
      return undefined;
  }
}

/** Options of {@link CapsuleReader}. */
export interface CapsuleReaderOptions {
  /** Largest DATAGRAM capsule payload accepted; default {@link DEFAULT_MAX_CAPSULE_PAYLOAD}. */
  readonly maxDatagramPayload?: number;
}

/**
 * Incremental capsule reader for the data of a WebTransport CONNECT stream (the concatenated
 * payloads of its DATA frames). Unknown capsule types are skipped without being buffered; a known
 * capsule's announced length is checked against its limit before anything is allocated.
 *
 * After CLOSE_WEBTRANSPORT_SESSION the stream must end: any further byte is `capsule-error`
 * (the draft asks for the stream to be reset with H3_MESSAGE_ERROR). After a throw the reader is
 * spent.
 */
export class CapsuleReader extends TlvReader<Capsule> {
  readonly #maxDatagram: number;

  /** A reader for one CONNECT stream; `TypeError` for a negative or fractional limit. */
  constructor(options: CapsuleReaderOptions = {}) {
    super(TLV.capsule);
    this.#maxDatagram = options.maxDatagramPayload ?? DEFAULT_MAX_CAPSULE_PAYLOAD;
    if (!Number.isSafeInteger(this.#maxDatagram) || this.#maxDatagram < 0) {
      throw new TypeError(`maxDatagramPayload = ${this.#maxDatagram} must be a non-negative integer`);
    }
  }

  protected override onHeader(type: number, length: number): TlvValueAction {
    const limit = valueLimit(type, this.#maxDatagram);
    if (limit === undefined) return 'skip';
    this.checkLength(type, length, limit);
    return 'buffer';
  }

  protected override onValue(type: number, value: Uint8Array, out: Capsule[]): 'header' | 'raw' {
    const parsed = parseCapsule(type, value);
    if (parsed === undefined) return 'header';
    out.push(parsed);
    // The stream must end after a session close: any further byte is refused in onRaw.
    return parsed.type === 'close-session' ? 'raw' : 'header';
  }

  protected override onRaw(): never {
    throw new TransportError('capsule-error', 'data after CLOSE_WEBTRANSPORT_SESSION');
  }
}
