import { TransportError, type TransportErrorCode } from '../errors.js';
import { type NativeConnection, type NativeHostPort, quiche, quicheError } from './binding.js';
import { type EventMap, type Listener, TypedEmitter } from './emitter.js';

/**
 * Which {@link TransportError} code each QUIC failure raises. The shared error union has no
 * QUIC-specific codes yet; this table is the one place to change when it gets them.
 */
const ERROR_CODES = {
  /** The connection is closed or closing. */
  connectionClosed: 'closed',
  /** The stream does not exist (any more) or is in a state that forbids the operation. */
  streamState: 'stream-state',
  /** The peer asked us to stop sending on the stream (STOP_SENDING). */
  streamStopped: 'stream-stopped',
  /** Opening another stream would exceed the peer's stream limit. */
  streamLimit: 'stream-limit',
  /** A datagram larger than {@link QuicConnection.maxDatagramSize}. */
  datagramTooLarge: 'datagram-too-large',
  /** The peer did not enable datagrams, or the handshake is not complete. */
  datagramUnavailable: 'datagram-unavailable',
} as const satisfies Record<string, TransportErrorCode>;

/** A UDP address as the binding passes it. */
export interface SocketAddress {
  /** IP address literal. */
  readonly host: string;
  /** UDP port. */
  readonly port: number;
}

/** Who ended a connection. */
export type CloseInitiator = 'local' | 'peer' | 'idle-timeout' | 'endpoint';

/** Why a connection ended. */
export interface QuicCloseInfo {
  /**
   * `local`: this side called {@link QuicConnection.close} or quiche closed on a protocol error;
   * `peer`: the peer sent CONNECTION_CLOSE; `idle-timeout`: nothing was heard for the idle
   * timeout; `endpoint`: the endpoint was closed.
   */
  readonly initiator: CloseInitiator;
  /** True when `code` is an application (HTTP/3) error code, false for a QUIC transport error code. */
  readonly applicationError: boolean;
  /** The error code from the CONNECTION_CLOSE frame (0 when none was exchanged). */
  readonly code: number;
  /** The reason phrase from the CONNECTION_CLOSE frame, decoded as UTF-8. */
  readonly reason: string;
}

/** What {@link QuicConnection.streamRecv} returns when there is something to report. */
export type StreamRead =
  | {
      /** Stream bytes, in order. */
      readonly type: 'data';
      /** The bytes read (a fresh copy owned by the caller; may be empty when only `fin` arrived). */
      readonly data: Uint8Array;
      /** True when this read reached the end of the stream. */
      readonly fin: boolean;
    }
  | {
      /** The peer reset its sending side (RESET_STREAM). */
      readonly type: 'reset';
      /** The application error code of the RESET_STREAM frame. */
      readonly errorCode: number;
    };

/** Congestion and loss figures of a connection's active path (quiche `path_stats` and `stats`). */
export interface QuicConnectionStats {
  /** Smoothed round-trip time in milliseconds. The binding truncates it to whole milliseconds. */
  readonly rttMs: number;
  /** Congestion window in bytes. */
  readonly cwndBytes: number;
  /** quiche's latest delivery-rate estimate, in bytes per second. */
  readonly deliveryRateBps: number;
  /** Packets declared lost. */
  readonly lostPackets: number;
  /** Packets sent. */
  readonly sentPackets: number;
  /** Packets received. */
  readonly recvPackets: number;
  /** Packets retransmitted. */
  readonly retransmittedPackets: number;
  /** Bytes sent. */
  readonly sentBytes: number;
  /** Bytes received. */
  readonly recvBytes: number;
  /** Bytes lost. */
  readonly lostBytes: number;
  /** Path MTU quiche currently uses, in bytes. */
  readonly pmtuBytes: number;
  /** Datagrams queued in quiche waiting for the congestion window. */
  readonly sendQueueDatagrams: number;
  /** Bytes of datagrams queued in quiche waiting for the congestion window. */
  readonly sendQueueBytes: number;
}

/** Events of a {@link QuicConnection}. */
export interface QuicConnectionEvents extends EventMap {
  /**
   * A stream has data, a FIN or a reset to read (also the first sign of a stream the peer
   * opened). Read it with {@link QuicConnection.streamRecv} until it returns `null`; a stream
   * left unread is announced again after the next packet.
   */
  streamReadable: [streamId: number];
  /** A datagram arrived (a fresh buffer owned by the listener). */
  datagram: [bytes: Uint8Array];
  /** The connection is gone; emitted once, after which every method throws or returns nothing. */
  closed: [info: QuicCloseInfo];
}

/** What a connection needs from the endpoint that owns its socket. Internal to the QUIC layer. */
export interface ConnectionHost {
  /**
   * Memory for the next outgoing packet (at least the largest UDP payload we send): a view of
   * the endpoint's send batch, valid until {@link ConnectionHost.commitPacket}.
   */
  packetBuffer(): Uint8Array;
  /** The first `length` bytes of the last {@link ConnectionHost.packetBuffer} are a packet for `to`. */
  commitPacket(length: number, to: NativeHostPort): void;
  /** Sends the packets committed so far (the end of a flush). */
  sendPackets(): void;
  /** The handshake completed. */
  established(conn: QuicConnection): void;
  /** The connection is closed and must leave the routing table. */
  removed(conn: QuicConnection): void;
  /** A listener threw, or processing failed unexpectedly. */
  reportError(err: unknown): void;
  /** Scratch buffer for `streamRecv`. */
  readonly recvBuffer: Uint8Array;
}

/** A writer waiting for stream capacity. */
interface WritableWaiter {
  readonly streamId: number;
  readonly bytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();

/** A timer due this much later than quiche's deadline is re-armed; Node's timers are whole ms anyway. */
const TIMER_SLACK_MS = 1;

/** First stream id a server opens, by direction (RFC 9000 §2.1: low bits 0b01 and 0b11). */
const SERVER_STREAM_BASE = { bidi: 1, uni: 3 } as const;

/**
 * One QUIC connection accepted by a {@link QuicEndpoint}: streams, datagrams, stats and close.
 *
 * quiche is sans-IO: this object feeds it packets from the endpoint's socket, runs its one timer
 * (`timeout()` then `onTimeout()`) and flushes what it wants to send after every change.
 * Created by the endpoint only.
 */
export class QuicConnection {
  /** Our source connection id, hex: how the endpoint routes packets to this connection. */
  readonly id: string;
  /** Routing keys (hex connection ids) the endpoint filed this connection under. */
  readonly routingKeys: readonly string[];
  readonly #native: NativeConnection;
  readonly #host: ConnectionHost;
  readonly #local: NativeHostPort;
  readonly #events: TypedEmitter<QuicConnectionEvents>;
  #peer: NativeHostPort;
  #timer: NodeJS.Timeout | undefined;
  /** When {@link QuicConnection.#timer} fires, on the `performance.now()` clock. */
  #timerDeadline = 0;
  #flushImmediate: NodeJS.Immediate | undefined;
  #established = false;
  #closeInfo: QuicCloseInfo | undefined;
  #closingByEndpoint = false;
  #closeCalled = false;
  #waiters: WritableWaiter[] = [];
  #nextStream = { bidi: 0, uni: 0 };

  /** @param routingKeys - hex connection ids the endpoint files this connection under, ours first. */
  constructor(
    native: NativeConnection,
    host: ConnectionHost,
    local: NativeHostPort,
    peer: NativeHostPort,
    routingKeys: readonly string[],
  ) {
    this.#native = native;
    this.#host = host;
    this.#local = local;
    this.#peer = peer;
    this.routingKeys = routingKeys;
    this.id = routingKeys[0] ?? '';
    this.#events = new TypedEmitter((err) => host.reportError(err));
  }

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof QuicConnectionEvents>(
    event: K,
    listener: Listener<QuicConnectionEvents, K>,
  ): () => void {
    return this.#events.on(event, listener);
  }

  /** Removes a listener. */
  off<K extends keyof QuicConnectionEvents>(event: K, listener: Listener<QuicConnectionEvents, K>): void {
    this.#events.off(event, listener);
  }

  /** The peer's address as last seen by quiche. */
  get remoteAddress(): SocketAddress {
    return { host: this.#peer.host, port: this.#peer.port };
  }

  /** The ALPN protocol the handshake chose (`h3`), empty before the handshake completes. */
  get alpn(): string {
    return utf8Decoder.decode(this.#native.applicationProto());
  }

  /** The server name (SNI) the client asked for, if any. */
  get serverName(): string | undefined {
    return this.#native.serverName() ?? undefined;
  }

  /** True once the handshake completed. */
  get established(): boolean {
    return this.#established;
  }

  /** True once the connection is gone (the `closed` event has been emitted). */
  get closed(): boolean {
    return this.#closeInfo !== undefined;
  }

  /** Why the connection closed, once it has. */
  get closeInfo(): QuicCloseInfo | undefined {
    return this.#closeInfo;
  }

  /** quiche's trace id, for logs. */
  get traceId(): string {
    return this.#native.traceId();
  }

  /**
   * Queues `bytes` on stream `streamId` (creating a stream we open on first use).
   *
   * @returns how many bytes quiche accepted; fewer than `bytes.length` (possibly 0) when flow
   *   control or the congestion window is short. Wait with {@link QuicConnection.waitWritable} and
   *   send the rest. With `fin`, the FIN is only sent if every byte was accepted.
   * @throws TransportError `closed` when the connection or stream is closed or the peer sent
   *   STOP_SENDING; `stream-creation-error` beyond the peer's stream limit.
   */
  streamSend(streamId: number, bytes: Uint8Array, fin = false): number {
    checkStreamId(streamId);
    this.#assertOpen();
    let written: number | null;
    try {
      // quiche copies the bytes into its stream buffer: the caller may reuse `bytes` afterwards.
      written = this.#native.streamSend(streamId, bytes, fin);
    } catch (err) {
      throw this.#streamError(err, streamId, 'send on');
    }
    this.#scheduleFlush();
    return written ?? 0;
  }

  /**
   * Reads what is available on stream `streamId`, at most `maxBytes` (default 64 KiB) at a time.
   *
   * @returns the data (and whether it ends the stream), a reset signalled by the peer, or `null`
   *   when nothing is available now.
   * @throws TransportError `closed` when the connection is closed or the stream no longer exists
   *   (for example after its FIN was read).
   */
  streamRecv(streamId: number, maxBytes = this.#host.recvBuffer.byteLength): StreamRead | null {
    checkStreamId(streamId);
    this.#assertOpen();
    const scratch = this.#host.recvBuffer;
    const view = maxBytes >= scratch.byteLength ? scratch : scratch.subarray(0, Math.max(1, maxBytes));
    let result: [number, boolean] | null;
    try {
      result = this.#native.streamRecv(streamId, view);
    } catch (err) {
      const quicheErr = quicheError(err);
      if (quicheErr?.kind === 'StreamReset') {
        this.#scheduleFlush();
        return { type: 'reset', errorCode: quicheErr.value ?? 0 };
      }
      throw this.#streamError(err, streamId, 'read from');
    }
    if (result === null) return null;
    const [read, fin] = result;
    // Reading frees flow-control credit: quiche may now send MAX_STREAM_DATA / MAX_DATA.
    this.#scheduleFlush();
    return { type: 'data', data: view.slice(0, read), fin };
  }

  /**
   * True when stream `streamId` can take `bytes` more bytes now. When it cannot, quiche tells the
   * peer the stream is blocked.
   *
   * @throws TransportError `closed` when the stream is closed or stopped by the peer.
   */
  streamWritable(streamId: number, bytes = 1): boolean {
    checkStreamId(streamId);
    this.#assertOpen();
    try {
      return this.#native.streamWritable(streamId, bytes);
    } catch (err) {
      throw this.#streamError(err, streamId, 'check capacity of');
    }
  }

  /**
   * Resolves once stream `streamId` can take `bytes` more bytes (checked after every packet and
   * flush).
   *
   * @throws TransportError `closed` (as a rejection) when the stream or connection closes first.
   */
  waitWritable(streamId: number, bytes = 1): Promise<void> {
    try {
      if (this.streamWritable(streamId, bytes)) return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.#waiters.push({ streamId, bytes, resolve, reject });
    });
  }

  /**
   * Stops our side of a stream: `read` sends STOP_SENDING (and discards what arrives), `write`
   * sends RESET_STREAM, both with the application error code `errorCode`.
   *
   * @throws TransportError `closed` when the connection is closed.
   */
  streamShutdown(streamId: number, direction: 'read' | 'write', errorCode: number): void {
    checkStreamId(streamId);
    checkErrorCode(errorCode);
    this.#assertOpen();
    const shutdown = direction === 'read' ? quiche.Shutdown.Read : quiche.Shutdown.Write;
    try {
      // Returns null (quiche's Done) when that side was already shut down: nothing to do.
      this.#native.streamShutdown(streamId, shutdown, errorCode);
    } catch (err) {
      throw this.#streamError(err, streamId, 'shut down');
    }
    this.#scheduleFlush();
  }

  /** True when every byte of stream `streamId` has been read, including its FIN (or it was reset). */
  streamFinished(streamId: number): boolean {
    return this.#native.streamFinished(streamId);
  }

  /**
   * Allocates the id of the next stream this server opens (`bidi`: 1, 5, 9…; `uni`: 3, 7, 11…).
   * The stream exists for the peer once something (data or FIN) is sent on it.
   *
   * @throws TransportError `stream-creation-error` when the peer's stream limit is used up.
   */
  openStream(direction: 'bidi' | 'uni'): number {
    this.#assertOpen();
    const left =
      direction === 'bidi' ? this.#native.peerStreamsLeftBidi() : this.#native.peerStreamsLeftUni();
    if (left <= 0) {
      throw new TransportError(
        ERROR_CODES.streamLimit,
        `the peer allows no more ${direction === 'bidi' ? 'bidirectional' : 'unidirectional'} streams`,
      );
    }
    const index = this.#nextStream[direction];
    this.#nextStream[direction] = index + 1;
    return SERVER_STREAM_BASE[direction] + 4 * index;
  }

  /**
   * The largest datagram payload that fits in one packet now; 0 before the handshake completes
   * or when the peer does not accept datagrams.
   */
  maxDatagramSize(): number {
    if (this.closed) return 0;
    return this.#native.dgramMaxWritableLen() ?? 0;
  }

  /**
   * Queues one unreliable datagram (RFC 9221). quiche copies the bytes.
   *
   * @returns false when quiche's datagram send queue is full (the datagram was dropped).
   * @throws TransportError `datagram-error` when `bytes` exceeds {@link QuicConnection.maxDatagramSize}
   *   or datagrams are not available; `closed` when the connection is closed.
   */
  datagramSend(bytes: Uint8Array): boolean {
    this.#assertOpen();
    const max = this.maxDatagramSize();
    if (max === 0) {
      throw new TransportError(
        ERROR_CODES.datagramUnavailable,
        'datagrams are not available on this connection (handshake incomplete or not enabled by the peer)',
      );
    }
    if (bytes.byteLength > max) {
      throw new TransportError(
        ERROR_CODES.datagramTooLarge,
        `datagram of ${bytes.byteLength} bytes exceeds the ${max} bytes that fit in one packet`,
      );
    }
    let queued: undefined | null;
    try {
      queued = this.#native.dgramSend(bytes) as undefined | null;
    } catch (err) {
      const kind = quicheError(err)?.kind;
      if (kind === 'BufferTooShort') {
        throw new TransportError(
          ERROR_CODES.datagramTooLarge,
          `datagram of ${bytes.byteLength} bytes does not fit in one packet`,
          { cause: err },
        );
      }
      throw new TransportError(
        ERROR_CODES.datagramUnavailable,
        `datagram refused by quiche (${String(kind)})`,
        {
          cause: err,
        },
      );
    }
    // quiche answers Done (null) when its send queue is full.
    if (queued === null) return false;
    this.#scheduleFlush();
    return true;
  }

  /** Bytes of datagrams queued in quiche waiting for the congestion window (cheap: no allocation). */
  queuedDatagramBytes(): number {
    return this.#native.dgramSendQueueByteSize();
  }

  /** Congestion, loss and queue figures of the active path. */
  stats(): QuicConnectionStats {
    const stats = this.#native.stats();
    const paths = this.#native.pathStats();
    const path = paths.find((p) => p.active) ?? paths[0];
    return {
      rttMs: path?.rtt ?? 0,
      cwndBytes: path?.cwnd ?? 0,
      deliveryRateBps: path?.deliveryRate ?? 0,
      lostPackets: stats.lost,
      sentPackets: stats.sent,
      recvPackets: stats.recv,
      retransmittedPackets: stats.retrans,
      sentBytes: stats.sentBytes,
      recvBytes: stats.recvBytes,
      lostBytes: stats.lostBytes,
      pmtuBytes: path?.pmtu ?? 0,
      sendQueueDatagrams: this.#native.dgramSendQueueLen(),
      sendQueueBytes: this.#native.dgramSendQueueByteSize(),
    };
  }

  /**
   * Closes the connection with an application error code (for HTTP/3, `H3_NO_ERROR` is 0x100)
   * and a reason phrase. The `closed` event follows once quiche has finished closing (after the
   * peer acknowledges or the closing period ends). Calling it again does nothing.
   */
  close(applicationError = 0, reason = ''): void {
    checkErrorCode(applicationError);
    if (this.closed || this.#closeCalled) return;
    this.#closeCalled = true;
    // Returns null (quiche's Done) when quiche is already closing on its own.
    this.#native.close(true, applicationError, utf8Encoder.encode(reason));
    this.#flush();
  }

  /**
   * Feeds one UDP datagram from `from` to quiche and emits what it made available. Called by the
   * endpoint, which calls {@link QuicConnection.flushAfterInput} once after the datagrams of a
   * read, so a burst of them is answered in as few packets as possible.
   */
  handlePacket(packet: Uint8Array, from: NativeHostPort): void {
    if (this.closed) return;
    try {
      // quiche decrypts in place: `packet` is consumed here and must not be used afterwards.
      this.#native.recv(packet, { from, to: this.#local });
    } catch {
      // A packet quiche cannot use is dropped by it; a fatal one closes the connection, which
      // shows in isClosed() / localError() below.
    }
    this.#afterInput();
  }

  /** Sends what the datagrams fed since the last flush caused, and re-arms the timer. */
  flushAfterInput(): void {
    if (!this.closed) this.#flush();
  }

  /**
   * Sends a CONNECTION_CLOSE (transport NO_ERROR) and forgets the connection at once, without
   * waiting for the closing period. Called by the endpoint when it shuts down.
   */
  terminate(reason: string): void {
    if (this.closed) return;
    this.#closingByEndpoint = true;
    this.#native.close(false, quiche.ConnectionErrorCode.NoError, utf8Encoder.encode(reason));
    this.#flush();
    this.#finish();
  }

  /** Emits what the last input made available; the caller flushes. */
  #afterInput(): void {
    if (!this.#established && this.#native.isEstablished()) {
      this.#established = true;
      this.#host.established(this);
    }
    // isReadable() is cheap, readable() is not (the binding builds an iterator object each time,
    // tens of µs): most packets from a pilot carry only acknowledgements.
    if (this.#established && !this.closed && this.#native.isReadable()) {
      for (const streamId of this.#native.readable()) {
        if (this.closed) break;
        this.#events.emit('streamReadable', streamId);
      }
      while (!this.closed) {
        // Null is quiche's Done: the receive queue is empty. The buffer is a fresh copy.
        const datagram = this.#native.dgramRecvVec();
        if (datagram === null) break;
        this.#events.emit('datagram', datagram);
      }
    }
    if (this.#established && !this.closed) this.#checkWaiters();
    if (!this.closed && this.#native.isClosed()) this.#finish();
  }

  #scheduleFlush(): void {
    if (this.#flushImmediate !== undefined || this.closed) return;
    // Deferred to the check phase: every datagram of this socket read batch is processed first,
    // so acknowledgements and stream writes leave in as few packets as possible.
    this.#flushImmediate = setImmediate(() => {
      this.#flushImmediate = undefined;
      this.#guarded(() => this.#flush());
    });
  }

  /** Sends everything quiche has for the peer, then re-arms the timer. */
  #flush(): void {
    if (this.#flushImmediate !== undefined) {
      clearImmediate(this.#flushImmediate);
      this.#flushImmediate = undefined;
    }
    if (this.closed) return;
    const host = this.#host;
    for (;;) {
      let result: ReturnType<NativeConnection['send']>;
      try {
        // quiche writes the packet straight into the endpoint's send batch: no copy.
        result = this.#native.send(host.packetBuffer());
      } catch {
        // A fatal error: quiche has closed the connection.
        break;
      }
      if (result === null) break;
      const [length, info] = result;
      host.commitPacket(length, info.to);
      this.#peer = info.to;
    }
    // Everything this flush produced leaves in one system call.
    host.sendPackets();
    if (this.#closingByEndpoint) return;
    if (this.#native.isClosed()) {
      this.#finish();
      return;
    }
    this.#checkWaiters();
    this.#armTimer();
  }

  /**
   * Keeps one timer at quiche's next deadline. A timer already set to fire no later than that is
   * kept (re-arming on every flush cost more than the occasional early wake-up): when it fires
   * early, `onTimeout()` has nothing to do and the timer is set again for the real deadline.
   */
  #armTimer(): void {
    const ms = this.#native.timeout();
    if (ms === null) {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      return;
    }
    const deadline = performance.now() + ms;
    if (this.#timer !== undefined) {
      if (this.#timerDeadline <= deadline + TIMER_SLACK_MS) return;
      clearTimeout(this.#timer);
    }
    this.#timerDeadline = deadline;
    this.#timer = setTimeout(this.#onTimer, ms);
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    if (this.closed) return;
    this.#guarded(() => {
      // A timer kept from an earlier deadline fires before quiche's current one: set it again.
      const ms = this.#native.timeout();
      if (ms !== null && ms > 0) {
        this.#armTimer();
        return;
      }
      this.#native.onTimeout();
      this.#afterInput();
      if (!this.closed) this.#flush();
    });
  };

  #checkWaiters(): void {
    if (this.#waiters.length === 0) return;
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiting) {
      let ready: boolean;
      try {
        ready = this.#native.streamWritable(waiter.streamId, waiter.bytes);
      } catch (err) {
        waiter.reject(this.#streamError(err, waiter.streamId, 'wait for capacity on'));
        continue;
      }
      if (ready) waiter.resolve();
      else this.#waiters.push(waiter);
    }
  }

  /** Tears the connection down once: timers, waiters, routing, then the `closed` event. */
  #finish(): void {
    if (this.#closeInfo !== undefined) return;
    const info = this.#describeClose();
    this.#closeInfo = info;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#flushImmediate !== undefined) clearImmediate(this.#flushImmediate);
    this.#flushImmediate = undefined;
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiting) {
      waiter.reject(new TransportError(ERROR_CODES.connectionClosed, 'the QUIC connection closed'));
    }
    this.#host.removed(this);
    this.#events.emit('closed', info);
    this.#events.clear();
  }

  #describeClose(): QuicCloseInfo {
    const peer = this.#native.peerError();
    const local = this.#native.localError();
    const initiator: CloseInitiator = this.#closingByEndpoint
      ? 'endpoint'
      : this.#native.isTimedOut()
        ? 'idle-timeout'
        : peer !== null && !this.#closeCalled
          ? 'peer'
          : 'local';
    const error = initiator === 'peer' ? peer : local;
    return {
      initiator,
      applicationError: error?.isApp ?? false,
      code: error?.errorCode ?? 0,
      reason: error === null || error === undefined ? '' : utf8Decoder.decode(error.reason),
    };
  }

  /** Runs work started by a timer, reporting a failure instead of crashing the process. */
  #guarded(work: () => void): void {
    try {
      work();
    } catch (err) {
      this.#host.reportError(err);
    }
  }

  #assertOpen(): void {
    if (this.closed) throw new TransportError(ERROR_CODES.connectionClosed, 'the QUIC connection is closed');
  }

  /** Turns a binding error from a stream operation into a coded error. */
  #streamError(err: unknown, streamId: number, action: string): TransportError {
    const quicheErr = quicheError(err);
    switch (quicheErr?.kind) {
      case 'StreamStopped':
        return new TransportError(
          ERROR_CODES.streamStopped,
          `cannot ${action} stream ${streamId}: the peer sent STOP_SENDING with code ${quicheErr.value ?? 0}`,
          { cause: err },
        );
      case 'StreamLimit':
        return new TransportError(
          ERROR_CODES.streamLimit,
          `cannot ${action} stream ${streamId}: the peer's stream limit is reached`,
          { cause: err },
        );
      default:
        return new TransportError(
          ERROR_CODES.streamState,
          `cannot ${action} stream ${streamId}: ${quicheErr?.kind ?? String(err)}`,
          { cause: err },
        );
    }
  }
}

/** QUIC varints carry at most 2^62 - 1; JS numbers are exact to 2^53 - 1. */
function checkStreamId(streamId: number): void {
  if (!(Number.isSafeInteger(streamId) && streamId >= 0)) {
    throw new TypeError(`a stream id must be a non-negative safe integer, got ${String(streamId)}`);
  }
}

/** An application error code: a non-negative safe integer. */
function checkErrorCode(code: number): void {
  if (!(Number.isSafeInteger(code) && code >= 0)) {
    throw new TypeError(`an error code must be a non-negative safe integer, got ${String(code)}`);
  }
}
