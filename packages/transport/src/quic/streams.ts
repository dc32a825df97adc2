/**
 * The stream bookkeeping of a QUIC connection: argument checks, the ids of the streams this
 * server opens, writers waiting for capacity, and quiche's stream errors as coded errors.
 */
import { TransportError, type TransportErrorCode } from '../errors.js';
import { type NativeConnection, quicheError } from './binding.js';

/**
 * Which {@link TransportError} code each QUIC failure raises. The shared error union has no
 * QUIC-specific codes yet; this table is the one place to change when it gets them.
 */
export const QUIC_ERROR_CODES = {
  /** The connection is closed or closing. */
  connectionClosed: 'closed',
  /** The stream does not exist (any more) or is in a state that forbids the operation. */
  streamState: 'stream-state',
  /** The peer asked us to stop sending on the stream (STOP_SENDING). */
  streamStopped: 'stream-stopped',
  /** Opening another stream would exceed the peer's stream limit. */
  streamLimit: 'stream-limit',
  /** A datagram larger than the connection can carry now. */
  datagramTooLarge: 'datagram-too-large',
  /** The peer did not enable datagrams, or the handshake is not complete. */
  datagramUnavailable: 'datagram-unavailable',
} as const satisfies Record<string, TransportErrorCode>;

/** First stream id a server opens, by direction (RFC 9000 §2.1: low bits 0b01 and 0b11). */
const SERVER_STREAM_BASE = { bidi: 1, uni: 3 } as const;

/**
 * Checks a stream id: QUIC varints carry at most 2^62 - 1, JS numbers are exact to 2^53 - 1.
 *
 * @throws TypeError unless `streamId` is a non-negative safe integer.
 */
export function checkStreamId(streamId: number): void {
  if (!(Number.isSafeInteger(streamId) && streamId >= 0)) {
    throw new TypeError(`a stream id must be a non-negative safe integer, got ${String(streamId)}`);
  }
}

/**
 * Checks an application error code.
 *
 * @throws TypeError unless `code` is a non-negative safe integer.
 */
export function checkErrorCode(code: number): void {
  if (!(Number.isSafeInteger(code) && code >= 0)) {
    throw new TypeError(`an error code must be a non-negative safe integer, got ${String(code)}`);
  }
}

/** Turns a binding error from a stream operation into a coded error. */
export function streamError(err: unknown, streamId: number, action: string): TransportError {
  const quicheErr = quicheError(err);
  switch (quicheErr?.kind) {
    case 'StreamStopped':
      return new TransportError(
        QUIC_ERROR_CODES.streamStopped,
        `cannot ${action} stream ${streamId}: the peer sent STOP_SENDING with code ${quicheErr.value ?? 0}`,
        { cause: err },
      );
    case 'StreamLimit':
      return new TransportError(
        QUIC_ERROR_CODES.streamLimit,
        `cannot ${action} stream ${streamId}: the peer's stream limit is reached`,
        { cause: err },
      );
    default:
      return new TransportError(
        QUIC_ERROR_CODES.streamState,
        `cannot ${action} stream ${streamId}: ${quicheErr?.kind ?? String(err)}`,
        { cause: err },
      );
  }
}

/** Hands out the ids of the streams this server opens (`bidi`: 1, 5, 9…; `uni`: 3, 7, 11…). */
export class ServerStreamIds {
  readonly #next = { bidi: 0, uni: 0 };

  /**
   * The next id of `direction`, when the peer's limit allows another stream.
   *
   * @throws TransportError `stream-limit` when the peer's stream limit is used up.
   */
  open(native: NativeConnection, direction: 'bidi' | 'uni'): number {
    const left = direction === 'bidi' ? native.peerStreamsLeftBidi() : native.peerStreamsLeftUni();
    if (left <= 0) {
      throw new TransportError(
        QUIC_ERROR_CODES.streamLimit,
        `the peer allows no more ${direction === 'bidi' ? 'bidirectional' : 'unidirectional'} streams`,
      );
    }
    const index = this.#next[direction];
    this.#next[direction] = index + 1;
    return SERVER_STREAM_BASE[direction] + 4 * index;
  }
}

/** A writer waiting for stream capacity. */
interface WritableWaiter {
  readonly streamId: number;
  readonly bytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/** Writers waiting for stream capacity, checked after every packet and flush. */
export class WritableWaiters {
  #waiters: WritableWaiter[] = [];

  /** Resolves once stream `streamId` can take `bytes` more bytes; see {@link WritableWaiters.check}. */
  wait(streamId: number, bytes: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiters.push({ streamId, bytes, resolve, reject });
    });
  }

  /** Resolves the writers whose stream has room now, rejects those whose stream is gone. */
  check(native: NativeConnection): void {
    if (this.#waiters.length === 0) return;
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiting) {
      let ready: boolean;
      try {
        ready = native.streamWritable(waiter.streamId, waiter.bytes);
      } catch (err) {
        waiter.reject(streamError(err, waiter.streamId, 'wait for capacity on'));
        continue;
      }
      if (ready) waiter.resolve();
      else this.#waiters.push(waiter);
    }
  }

  /** Rejects every writer with `error` (the connection closed). */
  rejectAll(error: TransportError): void {
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiting) waiter.reject(error);
  }
}
