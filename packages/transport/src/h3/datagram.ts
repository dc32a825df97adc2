import { TransportError } from '../errors.js';
import { readVarint, varintLength, writeVarint } from './varint.js';

/** A received HTTP/3 datagram: the session it belongs to and its payload. */
export interface H3Datagram {
  /** The CONNECT stream id of the session divided by 4 (multiply by 4 to get the stream id). */
  readonly quarterStreamId: number;
  /** The application payload: a view into the received bytes, not a copy. */
  readonly payload: Uint8Array;
}

function quarterOf(streamId: number): number {
  if (!Number.isSafeInteger(streamId) || streamId < 0 || streamId % 4 !== 0) {
    throw new TypeError(`stream id ${streamId} is not a client-initiated bidirectional stream`);
  }
  return streamId / 4;
}

/**
 * HTTP/3 datagram layout (RFC 9297 §2.1), the whole content of a QUIC DATAGRAM frame:
 *
 * ```text
 * HTTP/3 Datagram {
 *   Quarter Stream ID (i),     the session's CONNECT stream id / 4
 *   HTTP Datagram Payload (..),
 * }
 * ```
 */
export const h3Datagram = {
  /** Bytes the datagram takes for the session on `streamId` and a payload of `payloadLength` bytes. */
  byteLength(streamId: number, payloadLength: number): number {
    return varintLength(quarterOf(streamId)) + payloadLength;
  },

  /**
   * Writes the quarter stream id of `streamId` and then `payload` (when given) at `offset`; returns
   * the bytes written. Without a payload it writes only the prefix, for callers that place the
   * payload themselves.
   */
  encodeInto(view: DataView, offset: number, streamId: number, payload?: Uint8Array): number {
    const written = writeVarint(view, offset, quarterOf(streamId));
    if (payload === undefined) return written;
    if (offset + written + payload.length > view.byteLength) {
      throw new TypeError(
        `datagram payload of ${payload.length} bytes does not fit at offset ${offset + written}`,
      );
    }
    new Uint8Array(view.buffer, view.byteOffset + offset + written, payload.length).set(payload);
    return written + payload.length;
  },

  /**
   * Reads a received datagram. Throws {@link TransportError} `datagram-error` when it does not
   * start with a whole quarter stream id (RFC 9297 §2.1: H3_DATAGRAM_ERROR), or with one above
   * 2^53-1 (no session has a stream id that large).
   */
  decode(bytes: Uint8Array, offset = 0, end = bytes.length): { value: H3Datagram; bytes: number } {
    const view = bytes.subarray(offset, end);
    let quarter: { value: number; bytes: number };
    try {
      quarter = readVarint(view, 0);
    } catch (error) {
      throw new TransportError('datagram-error', 'datagram does not start with a usable quarter stream id', {
        cause: error,
      });
    }
    return {
      value: { quarterStreamId: quarter.value, payload: view.subarray(quarter.bytes) },
      bytes: view.length,
    };
  },
} as const;

/** Builds the datagram carrying `payload` for the session whose CONNECT stream id is `streamId`. */
export function encodeDatagram(streamId: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(h3Datagram.byteLength(streamId, payload.length));
  h3Datagram.encodeInto(new DataView(out.buffer), 0, streamId, payload);
  return out;
}

/** Splits a received datagram into quarter stream id and payload (a view, no copy). */
export function decodeDatagram(bytes: Uint8Array): H3Datagram {
  return h3Datagram.decode(bytes).value;
}
