import { TransportError } from '../errors.js';
import { VarintCollector } from './collector.js';
import { readVarint, readVarintId, varintLength, writeVarint } from './varint.js';

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

function capsuleTypeOf(value: Capsule): number {
  switch (value.type) {
    case 'datagram':
      return CAPSULE_TYPE.DATAGRAM;
    case 'close-session':
      return CAPSULE_TYPE.CLOSE_WEBTRANSPORT_SESSION;
    case 'drain-session':
      return CAPSULE_TYPE.DRAIN_WEBTRANSPORT_SESSION;
    default: {
      const unreachable: never = value;
      throw new TypeError(`unknown capsule ${JSON.stringify(unreachable)}`);
    }
  }
}

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
 * Capsule layout (RFC 9297 §3.2), carried in the DATA frames of a WebTransport CONNECT stream:
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
    const length = capsuleValue(value).length;
    return varintLength(capsuleTypeOf(value)) + varintLength(length) + length;
  },

  /** Writes the capsule at `offset`; returns the bytes written. `TypeError` when it does not fit. */
  encodeInto(view: DataView, offset: number, value: Capsule): number {
    const bytes = capsuleValue(value);
    let at = offset + writeVarint(view, offset, capsuleTypeOf(value));
    at += writeVarint(view, at, bytes.length);
    if (at + bytes.length > view.byteLength) {
      throw new TypeError(`capsule value of ${bytes.length} bytes does not fit at offset ${at}`);
    }
    new Uint8Array(view.buffer, view.byteOffset + at, bytes.length).set(bytes);
    return at + bytes.length - offset;
  },

  /**
   * Reads one whole capsule at `offset` of a buffer ending at `end`; `value` is `undefined` for a
   * capsule of unknown type (skipped). Throws {@link TransportError} `capsule-error` when it is
   * truncated or its value malformed. A DATAGRAM payload is a view into `bytes`.
   */
  decode(bytes: Uint8Array, offset = 0, end = bytes.length): { value: Capsule | undefined; bytes: number } {
    const view = bytes.subarray(offset, end);
    const type = readCapsuleVarint(view, 0, 'type', readVarintId);
    const length = readCapsuleVarint(view, type.bytes, 'length', readVarint);
    const start = type.bytes + length.bytes;
    if (length.value > view.length - start) {
      throw new TransportError(
        'capsule-error',
        `capsule of type 0x${type.value.toString(16)} announces ${length.value} bytes, ${view.length - start} left`,
      );
    }
    const value = view.subarray(start, start + length.value);
    return { value: parseCapsule(type.value, value), bytes: start + length.value };
  },
} as const;

/** Encodes one capsule (see {@link capsule}). */
export function encodeCapsule(value: Capsule): Uint8Array {
  const out = new Uint8Array(capsule.byteLength(value));
  capsule.encodeInto(new DataView(out.buffer), 0, value);
  return out;
}

function readCapsuleVarint(
  bytes: Uint8Array,
  offset: number,
  field: string,
  read: (bytes: Uint8Array, offset: number) => { value: number; bytes: number },
): { value: number; bytes: number } {
  try {
    return read(bytes, offset);
  } catch (error) {
    throw new TransportError('capsule-error', `capsule ${field} is truncated or too large`, { cause: error });
  }
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
export class CapsuleReader {
  readonly #maxDatagram: number;
  readonly #type = new VarintCollector();
  readonly #length = new VarintCollector();
  #state: 'header' | 'buffer' | 'skip' | 'closed' | 'failed' = 'header';
  #capsuleType = 0;
  #remaining = 0;
  #buffer: Uint8Array = new Uint8Array(0);
  #filled = 0;

  /** A reader for one CONNECT stream; `TypeError` for a negative or fractional limit. */
  constructor(options: CapsuleReaderOptions = {}) {
    this.#maxDatagram = options.maxDatagramPayload ?? DEFAULT_MAX_CAPSULE_PAYLOAD;
    if (!Number.isSafeInteger(this.#maxDatagram) || this.#maxDatagram < 0) {
      throw new TypeError(`maxDatagramPayload = ${this.#maxDatagram} must be a non-negative integer`);
    }
  }

  /** Takes the next stream bytes; returns the capsules they complete, in order. */
  push(chunk: Uint8Array): Capsule[] {
    if (this.#state === 'failed') throw new TransportError('closed', 'capsule reader failed earlier');
    try {
      return this.#push(chunk);
    } catch (error) {
      this.#state = 'failed';
      throw error;
    }
  }

  /** Declares the end of the stream; `capsule-error` when it ends inside a capsule (RFC 9297 §3.3). */
  end(): void {
    if (this.#state === 'failed') throw new TransportError('closed', 'capsule reader failed earlier');
    if (this.#state === 'closed') return;
    if (this.#state !== 'header' || this.#type.started) {
      this.#state = 'failed';
      throw new TransportError('capsule-error', 'stream ended inside a capsule');
    }
  }

  #push(chunk: Uint8Array): Capsule[] {
    const out: Capsule[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      switch (this.#state) {
        case 'header':
          offset = this.#readHeader(chunk, offset, out);
          break;
        case 'skip': {
          const count = Math.min(this.#remaining, chunk.length - offset);
          offset += count;
          this.#remaining -= count;
          if (this.#remaining === 0) this.#state = 'header';
          break;
        }
        case 'buffer': {
          const count = Math.min(this.#buffer.length - this.#filled, chunk.length - offset);
          this.#buffer.set(chunk.subarray(offset, offset + count), this.#filled);
          this.#filled += count;
          offset += count;
          if (this.#filled === this.#buffer.length) this.#finish(out);
          break;
        }
        case 'closed':
          throw new TransportError('capsule-error', 'data after CLOSE_WEBTRANSPORT_SESSION');
        case 'failed':
          throw new TransportError('closed', 'capsule reader failed earlier');
        default: {
          const unreachable: never = this.#state;
          throw new TypeError(`unknown reader state ${String(unreachable)}`);
        }
      }
    }
    return out;
  }

  #readHeader(chunk: Uint8Array, offset: number, out: Capsule[]): number {
    let at = offset;
    if (!this.#type.done) at = this.#type.take(chunk, at);
    if (this.#type.done && !this.#length.done) at = this.#length.take(chunk, at);
    if (!this.#length.done) return at;
    const type = readVarintId(this.#type.bytes(), 0).value;
    const length = readCapsuleVarint(this.#length.bytes(), 0, 'length', readVarint).value;
    this.#type.reset();
    this.#length.reset();
    const limit = valueLimit(type, this.#maxDatagram);
    if (limit === undefined) {
      this.#remaining = length;
      this.#state = length === 0 ? 'header' : 'skip';
      return at;
    }
    if (length > limit) {
      throw new TransportError(
        'capsule-error',
        `capsule of type 0x${type.toString(16)} announces ${length} bytes, more than the ${limit} allowed`,
      );
    }
    this.#capsuleType = type;
    this.#buffer = new Uint8Array(length);
    this.#filled = 0;
    this.#state = 'buffer';
    if (length === 0) this.#finish(out);
    return at;
  }

  #finish(out: Capsule[]): void {
    const value = parseCapsule(this.#capsuleType, this.#buffer);
    this.#buffer = new Uint8Array(0);
    this.#state = value?.type === 'close-session' ? 'closed' : 'header';
    if (value !== undefined) out.push(value);
  }
}
