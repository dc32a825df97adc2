import type { TransportError, TransportErrorCode } from '../errors.js';
import { isReservedId } from './varint.js';

/**
 * HTTP/3 application error codes (RFC 9114 §8.1, RFC 9204 §6, RFC 9297 §5) and the WebTransport
 * ones (draft-ietf-webtrans-http3), for CONNECTION_CLOSE, RESET_STREAM and STOP_SENDING.
 */
export const H3_ERROR = {
  NO_ERROR: 0x100,
  GENERAL_PROTOCOL_ERROR: 0x101,
  INTERNAL_ERROR: 0x102,
  STREAM_CREATION_ERROR: 0x103,
  CLOSED_CRITICAL_STREAM: 0x104,
  FRAME_UNEXPECTED: 0x105,
  FRAME_ERROR: 0x106,
  EXCESSIVE_LOAD: 0x107,
  ID_ERROR: 0x108,
  SETTINGS_ERROR: 0x109,
  MISSING_SETTINGS: 0x10a,
  REQUEST_REJECTED: 0x10b,
  REQUEST_CANCELLED: 0x10c,
  REQUEST_INCOMPLETE: 0x10d,
  MESSAGE_ERROR: 0x10e,
  CONNECT_ERROR: 0x10f,
  VERSION_FALLBACK: 0x110,
  QPACK_DECOMPRESSION_FAILED: 0x200,
  QPACK_ENCODER_STREAM_ERROR: 0x201,
  QPACK_DECODER_STREAM_ERROR: 0x202,
  DATAGRAM_ERROR: 0x33,
  /** A WebTransport stream arrived for a session that is not (or no longer) there. */
  WEBTRANSPORT_BUFFERED_STREAM_REJECTED: 0x3994bd84,
  /** Sent on WebTransport streams when their session goes away. */
  WEBTRANSPORT_SESSION_GONE: 0x170d7b68,
} as const;

/** One of the {@link H3_ERROR} values. */
export type H3ErrorCode = (typeof H3_ERROR)[keyof typeof H3_ERROR];

/** The HTTP/3 code each {@link TransportErrorCode} reaches the peer under. */
const H3_CODE_FOR: { readonly [C in TransportErrorCode]: H3ErrorCode } = {
  'varint-error': H3_ERROR.FRAME_ERROR,
  'frame-error': H3_ERROR.FRAME_ERROR,
  'frame-unexpected': H3_ERROR.FRAME_UNEXPECTED,
  'missing-settings': H3_ERROR.MISSING_SETTINGS,
  'settings-error': H3_ERROR.SETTINGS_ERROR,
  'critical-stream-closed': H3_ERROR.CLOSED_CRITICAL_STREAM,
  'stream-creation-error': H3_ERROR.STREAM_CREATION_ERROR,
  'qpack-error': H3_ERROR.QPACK_DECOMPRESSION_FAILED,
  'qpack-stream-error': H3_ERROR.QPACK_ENCODER_STREAM_ERROR,
  'capsule-error': H3_ERROR.MESSAGE_ERROR,
  'message-error': H3_ERROR.MESSAGE_ERROR,
  'datagram-error': H3_ERROR.DATAGRAM_ERROR,
  // Local and QUIC-level conditions: nothing the peer did wrong at the HTTP/3 layer.
  'stream-state': H3_ERROR.INTERNAL_ERROR,
  'stream-stopped': H3_ERROR.INTERNAL_ERROR,
  'stream-reset': H3_ERROR.INTERNAL_ERROR,
  'stream-limit': H3_ERROR.INTERNAL_ERROR,
  'datagram-too-large': H3_ERROR.INTERNAL_ERROR,
  'datagram-unavailable': H3_ERROR.INTERNAL_ERROR,
  'socket-error': H3_ERROR.INTERNAL_ERROR,
  'quic-unavailable': H3_ERROR.INTERNAL_ERROR,
  closed: H3_ERROR.NO_ERROR,
};

/**
 * The HTTP/3 error code to close the connection (or reset the stream) with after a
 * {@link TransportError} from this library, so each failure reaches the peer under its RFC name.
 */
export function h3ErrorCodeFor(error: TransportError): H3ErrorCode {
  return H3_CODE_FOR[error.code];
}

/** First HTTP/3 error code of the range that carries WebTransport application error codes. */
export const WEBTRANSPORT_ERROR_FIRST = 0x52e4a40fa8db;

/** Last HTTP/3 error code of that range (application code 2^32-1). */
export const WEBTRANSPORT_ERROR_LAST = 0x52e5ac983162;

/**
 * Maps a 32-bit WebTransport application error code (what `WebTransportError.streamErrorCode`
 * shows in the browser) to the HTTP/3 code sent in RESET_STREAM or STOP_SENDING. The range skips
 * the reserved `0x1f * N + 0x21` points, hence the `floor(n / 0x1e)` term.
 */
export function webTransportCodeToH3(code: number): number {
  if (!Number.isInteger(code) || code < 0 || code > 0xffff_ffff) {
    throw new TypeError(`WebTransport error code ${code} is outside 0..2^32-1`);
  }
  return WEBTRANSPORT_ERROR_FIRST + code + Math.floor(code / 0x1e);
}

/**
 * The WebTransport application error code carried by an HTTP/3 error code, or `undefined` when
 * the code lies outside the WebTransport range or on one of its reserved points.
 */
export function h3CodeToWebTransport(h3Code: number): number | undefined {
  if (
    !Number.isSafeInteger(h3Code) ||
    h3Code < WEBTRANSPORT_ERROR_FIRST ||
    h3Code > WEBTRANSPORT_ERROR_LAST
  ) {
    return undefined;
  }
  if (isReservedId(h3Code)) return undefined;
  const shifted = h3Code - WEBTRANSPORT_ERROR_FIRST;
  return shifted - Math.floor(shifted / 0x1f);
}
