import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link TransportError}. Callers branch on `code`, never on the message.
 *
 * - `varint-error`: a QUIC variable-length integer is truncated or larger than the reader accepts.
 * - `frame-error`: an HTTP/3 frame is malformed: truncated, too large, or with bytes left over.
 * - `frame-unexpected`: a frame or stream signal that is not allowed where it arrived (HTTP/2-only
 *   frame types, DATA on the control stream, a second SETTINGS, push from a client).
 * - `missing-settings`: the first frame on a control stream is not SETTINGS.
 * - `settings-error`: a SETTINGS frame repeats an identifier, carries an HTTP/2-only one, or gives a
 *   setting a value it cannot have.
 * - `critical-stream-closed`: the peer ended its control stream or one of its QPACK streams.
 * - `stream-creation-error`: the peer opened a stream it may not open (a second control stream, a
 *   push stream from a client).
 * - `qpack-error`: an encoded field section cannot be decoded
 *   (dynamic table references while we allow none, bad Huffman code, limits exceeded).
 * - `qpack-stream-error`: the peer's QPACK encoder stream carries an instruction we cannot accept
 *   (any insertion, since our dynamic table capacity is 0).
 * - `capsule-error`: a capsule is truncated, too large, or malformed, or data follows a session close.
 * - `datagram-error`: an HTTP/3 datagram does not start with a usable quarter stream id.
 * - `message-error`: an HTTP message is malformed (pseudo-header rules, forbidden fields).
 * - `stream-state`: the stream does not exist (any more) or forbids the operation.
 * - `stream-stopped`: the peer asked us to stop sending on the stream (STOP_SENDING).
 * - `stream-reset`: the peer reset the stream.
 * - `stream-limit`: opening another stream would exceed the peer's limit.
 * - `datagram-too-large`: a datagram larger than the connection can carry now.
 * - `datagram-unavailable`: the peer does not accept datagrams, or the handshake is not complete.
 * - `socket-error`: the UDP socket failed.
 * - `quic-unavailable`: the QUIC binding does not load on this machine (no build for its platform).
 * - `closed`: the stream, session or connection is already closed.
 */
export type TransportErrorCode =
  | 'varint-error'
  | 'frame-error'
  | 'frame-unexpected'
  | 'missing-settings'
  | 'settings-error'
  | 'critical-stream-closed'
  | 'stream-creation-error'
  | 'qpack-error'
  | 'qpack-stream-error'
  | 'capsule-error'
  | 'datagram-error'
  | 'message-error'
  | 'stream-state'
  | 'stream-stopped'
  | 'stream-reset'
  | 'stream-limit'
  | 'datagram-too-large'
  | 'datagram-unavailable'
  | 'socket-error'
  | 'quic-unavailable'
  | 'closed';

/** The one error class of `@svc/transport`: bad bytes or rule breaks from the peer, or a closed handle. */
export class TransportError extends CodedError<TransportErrorCode> {
  override readonly name = 'TransportError';
}

/** True when `err` is a {@link TransportError}, optionally with the given code. */
export const isTransportError = codedErrorGuard(TransportError);
