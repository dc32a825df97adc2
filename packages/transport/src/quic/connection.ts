/**
 * One QUIC connection of the endpoint: its life as one `state` union, the packets in and out of
 * quiche, and the public stream and datagram operations. Stream bookkeeping is in `streams.ts`,
 * datagrams in `datagrams.ts`, the timers in `timers.ts`.
 */
import { assertTransition, type Clock, type TransitionTable, TypedEmitter } from '@svc/runtime';
import { TransportError } from '../errors.js';
import { loadQuiche, type NativeConnection, type NativeHostPort, quicheError } from './binding.js';
import { maxDatagramSize, sendDatagram } from './datagrams.js';
import { reportingLogger } from './report.js';
import {
  checkErrorCode,
  checkStreamId,
  QUIC_ERROR_CODES,
  ServerStreamIds,
  streamError,
  WritableWaiters,
} from './streams.js';
import { DeadlineTimer, DeferredFlush } from './timers.js';
import type {
  CloseInitiator,
  QuicCloseInfo,
  QuicConnectionEvents,
  QuicConnectionStats,
  SocketAddress,
  StreamRead,
} from './types.js';

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
  /** Time and timers (quiche's deadline). */
  readonly clock: Clock;
}

/**
 * The life of a {@link QuicConnection}; each variant holds what is valid in it.
 *
 * - `handshaking` → `open` when quiche completes the handshake;
 * - `handshaking` | `open` → `closing` when this side calls `close()` (quiche's closing period);
 * - any but `closed` → `terminating` when the endpoint shuts down (within one call);
 * - any but `closed` → `closed` once quiche is done: the `closed` event.
 */
type ConnectionState =
  | { readonly kind: 'handshaking' }
  | { readonly kind: 'open' }
  | { readonly kind: 'closing'; readonly established: boolean }
  | { readonly kind: 'terminating'; readonly established: boolean }
  | { readonly kind: 'closed'; readonly established: boolean; readonly info: QuicCloseInfo };

/** The connection's life cycle: where each state may go. */
const CONNECTION_MOVES: TransitionTable<ConnectionState['kind']> = {
  handshaking: ['open', 'closing', 'terminating', 'closed'],
  open: ['closing', 'terminating', 'closed'],
  // closing → closing: the handshake completed during the closing period.
  closing: ['closing', 'terminating', 'closed'],
  terminating: ['closed'],
  closed: [],
};

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();

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
  readonly #timer: DeadlineTimer;
  readonly #deferredFlush: DeferredFlush;
  readonly #waiters = new WritableWaiters();
  readonly #streamIds = new ServerStreamIds();
  #peer: NativeHostPort;
  #state: ConnectionState = { kind: 'handshaking' };
  #latePackets = 0;

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
    this.#events = new TypedEmitter(reportingLogger((err) => host.reportError(err)));
    this.#timer = new DeadlineTimer(host.clock, () => this.#guarded(this.#onTimer));
    this.#deferredFlush = new DeferredFlush(() => this.#guarded(this.#flush));
  }

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof QuicConnectionEvents>(event: K, listener: QuicConnectionEvents[K]): () => void {
    return this.#events.on(event, listener);
  }

  /** Removes a listener. */
  off<K extends keyof QuicConnectionEvents>(event: K, listener: QuicConnectionEvents[K]): void {
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

  /** True once the handshake completed (and still after the connection closed). */
  get established(): boolean {
    const state = this.#state;
    return state.kind === 'open' || ('established' in state && state.established);
  }

  /** True once the connection is gone (the `closed` event has been emitted). */
  get closed(): boolean {
    return this.#state.kind === 'closed';
  }

  /** Why the connection closed, once it has. */
  get closeInfo(): QuicCloseInfo | undefined {
    return this.#state.kind === 'closed' ? this.#state.info : undefined;
  }

  /** Datagrams that reached the connection after it closed, ignored. */
  get latePackets(): number {
    return this.#latePackets;
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
   * @throws TransportError `closed` when the connection is closed, `stream-stopped` when the peer
   *   sent STOP_SENDING, `stream-limit` beyond the peer's stream limit, `stream-state` otherwise.
   * @throws TypeError for a stream id that is not a non-negative safe integer.
   */
  streamSend(streamId: number, bytes: Uint8Array, fin = false): number {
    checkStreamId(streamId);
    this.#assertOpen();
    let written: number | null;
    try {
      // quiche copies the bytes into its stream buffer: the caller may reuse `bytes` afterwards.
      written = this.#native.streamSend(streamId, bytes, fin);
    } catch (err) {
      throw streamError(err, streamId, 'send on');
    }
    this.#deferredFlush.schedule();
    return written ?? 0;
  }

  /**
   * Reads what is available on stream `streamId`, at most `maxBytes` (default 64 KiB) at a time.
   *
   * @returns the data (and whether it ends the stream), a reset signalled by the peer, or `null`
   *   when nothing is available now.
   * @throws TransportError `closed` when the connection is closed, `stream-state` when the stream
   *   no longer exists (for example after its FIN was read).
   * @throws TypeError for a stream id that is not a non-negative safe integer.
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
        this.#deferredFlush.schedule();
        return { type: 'reset', errorCode: quicheErr.value ?? 0 };
      }
      throw streamError(err, streamId, 'read from');
    }
    if (result === null) return null;
    const [read, fin] = result;
    // Reading frees flow-control credit: quiche may now send MAX_STREAM_DATA / MAX_DATA.
    this.#deferredFlush.schedule();
    return { type: 'data', data: view.slice(0, read), fin };
  }

  /**
   * True when stream `streamId` can take `bytes` more bytes now. When it cannot, quiche tells the
   * peer the stream is blocked.
   *
   * @throws TransportError `closed` when the connection is closed; `stream-stopped` or
   *   `stream-state` when the stream is stopped by the peer or gone.
   * @throws TypeError for a stream id that is not a non-negative safe integer.
   */
  streamWritable(streamId: number, bytes = 1): boolean {
    checkStreamId(streamId);
    this.#assertOpen();
    try {
      return this.#native.streamWritable(streamId, bytes);
    } catch (err) {
      throw streamError(err, streamId, 'check capacity of');
    }
  }

  /**
   * Resolves once stream `streamId` can take `bytes` more bytes (checked after every packet and
   * flush). Capacity includes the congestion window: ask for what the next write needs (1 byte
   * by default), not a large block, which a small window (BBR's probe-RTT keeps four packets) may
   * never offer while nothing is in flight to move it.
   *
   * @throws TransportError `closed` (as a rejection) when the stream or connection closes first.
   */
  waitWritable(streamId: number, bytes = 1): Promise<void> {
    try {
      if (this.streamWritable(streamId, bytes)) return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#waiters.wait(streamId, bytes);
  }

  /**
   * Stops our side of a stream: `read` sends STOP_SENDING (and discards what arrives), `write`
   * sends RESET_STREAM, both with the application error code `errorCode`.
   *
   * @throws TransportError `closed` when the connection is closed.
   * @throws TypeError for a stream id or error code that is not a non-negative safe integer.
   */
  streamShutdown(streamId: number, direction: 'read' | 'write', errorCode: number): void {
    checkStreamId(streamId);
    checkErrorCode(errorCode);
    this.#assertOpen();
    const shutdown = direction === 'read' ? loadQuiche().Shutdown.Read : loadQuiche().Shutdown.Write;
    try {
      // Returns null (quiche's Done) when that side was already shut down: nothing to do.
      this.#native.streamShutdown(streamId, shutdown, errorCode);
    } catch (err) {
      throw streamError(err, streamId, 'shut down');
    }
    this.#deferredFlush.schedule();
  }

  /** True when every byte of stream `streamId` has been read, including its FIN (or it was reset). */
  streamFinished(streamId: number): boolean {
    return this.#native.streamFinished(streamId);
  }

  /**
   * Allocates the id of the next stream this server opens (`bidi`: 1, 5, 9…; `uni`: 3, 7, 11…).
   * The stream exists for the peer once something (data or FIN) is sent on it.
   *
   * @throws TransportError `stream-limit` when the peer's stream limit is used up, `closed` when
   *   the connection is closed.
   */
  openStream(direction: 'bidi' | 'uni'): number {
    this.#assertOpen();
    return this.#streamIds.open(this.#native, direction);
  }

  /**
   * The largest datagram payload that fits in one packet now; 0 before the handshake completes,
   * when the peer does not accept datagrams, or once the connection is closed.
   */
  maxDatagramSize(): number {
    return this.closed ? 0 : maxDatagramSize(this.#native);
  }

  /**
   * Queues one unreliable datagram (RFC 9221). quiche copies the bytes.
   *
   * @returns false when quiche's datagram send queue is full (the datagram was dropped).
   * @throws TransportError `datagram-too-large` when `bytes` exceeds
   *   {@link QuicConnection.maxDatagramSize}, `datagram-unavailable` when datagrams are not
   *   available, `closed` when the connection is closed.
   */
  datagramSend(bytes: Uint8Array): boolean {
    this.#assertOpen();
    if (!sendDatagram(this.#native, bytes)) return false;
    this.#deferredFlush.schedule();
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
   * peer acknowledges or the closing period ends). Calling it again, or on a connection that is
   * closing or closed, does nothing.
   *
   * @throws TypeError for an error code that is not a non-negative safe integer.
   */
  close(applicationError = 0, reason = ''): void {
    checkErrorCode(applicationError);
    const state = this.#state;
    if (state.kind !== 'handshaking' && state.kind !== 'open') return;
    this.#transition({ kind: 'closing', established: state.kind === 'open' });
    // Returns null (quiche's Done) when quiche is already closing on its own.
    this.#native.close(true, applicationError, utf8Encoder.encode(reason));
    this.#flush();
  }

  /**
   * Feeds one UDP datagram from `from` to quiche and emits what it made available. Called by the
   * endpoint, which calls {@link QuicConnection.flushAfterInput} once after the datagrams of a
   * read, so a burst of them is answered in as few packets as possible. A datagram after the
   * connection closed is ignored and counted ({@link QuicConnection.latePackets}).
   */
  handlePacket(packet: Uint8Array, from: NativeHostPort): void {
    if (this.closed) {
      this.#latePackets++;
      return;
    }
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
    const state = this.#state;
    if (state.kind === 'closed' || state.kind === 'terminating') return;
    this.#transition({ kind: 'terminating', established: this.established });
    this.#native.close(false, loadQuiche().ConnectionErrorCode.NoError, utf8Encoder.encode(reason));
    this.#flush();
    this.#finish();
  }

  /** The one place the state changes; refuses a change CONNECTION_MOVES does not allow. */
  #transition(next: ConnectionState): void {
    assertTransition('QuicConnection', CONNECTION_MOVES, this.#state.kind, next.kind);
    this.#state = next;
  }

  /** Emits what the last input made available; the caller flushes. */
  #afterInput(): void {
    if (!this.established && this.#native.isEstablished()) this.#handshakeDone();
    // isReadable() is cheap, readable() is not (the binding builds an iterator object each time,
    // tens of µs): most packets from a pilot carry only acknowledgements.
    if (this.established && !this.closed && this.#native.isReadable()) {
      for (const streamId of this.#native.readable()) {
        if (this.closed) break;
        this.#events.safeEmit('streamReadable', streamId);
      }
      while (!this.closed) {
        // Null is quiche's Done: the receive queue is empty. The buffer is a fresh copy.
        const datagram = this.#native.dgramRecvVec();
        if (datagram === null) break;
        this.#events.safeEmit('datagram', datagram);
      }
    }
    if (this.established && !this.closed) this.#waiters.check(this.#native);
    if (!this.closed && this.#native.isClosed()) this.#finish();
  }

  /** quiche completed the handshake: the endpoint announces the connection. */
  #handshakeDone(): void {
    const state = this.#state;
    switch (state.kind) {
      case 'handshaking':
        this.#transition({ kind: 'open' });
        break;
      case 'closing':
        this.#transition({ kind: 'closing', established: true });
        break;
      case 'open':
      case 'terminating':
      case 'closed':
        return;
      default: {
        const unreachable: never = state;
        throw new TypeError(`unknown QuicConnection state ${String(unreachable)}`);
      }
    }
    this.#host.established(this);
  }

  /** Sends everything quiche has for the peer, then re-arms the timer. */
  readonly #flush = (): void => {
    this.#deferredFlush.cancel();
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
    if (this.#state.kind === 'terminating') return;
    if (this.#native.isClosed()) {
      this.#finish();
      return;
    }
    this.#waiters.check(this.#native);
    this.#timer.arm(this.#native.timeout());
  };

  /** quiche's timer is due (or an earlier one kept by the timer fired first). */
  readonly #onTimer = (): void => {
    if (this.closed) return;
    // A timer kept from an earlier deadline fires before quiche's current one: set it again.
    const ms = this.#native.timeout();
    if (ms !== null && ms > 0) {
      this.#timer.arm(ms);
      return;
    }
    this.#native.onTimeout();
    this.#afterInput();
    if (!this.closed) this.#flush();
  };

  /** Tears the connection down once: timers, waiters, routing, then the `closed` event. */
  #finish(): void {
    if (this.closed) return;
    const info = this.#describeClose();
    this.#transition({ kind: 'closed', established: this.established, info });
    this.#timer.cancel();
    this.#deferredFlush.cancel();
    this.#waiters.rejectAll(
      new TransportError(QUIC_ERROR_CODES.connectionClosed, 'the QUIC connection closed'),
    );
    this.#host.removed(this);
    this.#events.safeEmit('closed', info);
    this.#events.removeAllListeners();
  }

  #describeClose(): QuicCloseInfo {
    const kind = this.#state.kind;
    const peer = this.#native.peerError();
    const local = this.#native.localError();
    const initiator: CloseInitiator =
      kind === 'terminating'
        ? 'endpoint'
        : this.#native.isTimedOut()
          ? 'idle-timeout'
          : peer !== null && kind !== 'closing'
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

  /** @throws TransportError `closed` once the connection is closed. */
  #assertOpen(): void {
    if (this.closed) {
      throw new TransportError(QUIC_ERROR_CODES.connectionClosed, 'the QUIC connection is closed');
    }
  }
}
