import { Buffer } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import quiche from '@matrixai/quic/native/quiche.js';
import type { Config, Connection, Host } from '@matrixai/quic/native/types.js';

/** Options of {@link QuicTestClient.connect}. */
export interface QuicTestClientOptions {
  /** Server address literal (`127.0.0.1`, `::1`). */
  host: string;
  /** Server UDP port. */
  port: number;
  /** ALPN protocols offered; defaults to `['h3']`. */
  alpn?: string[];
  /** Our idle timeout in ms; 0 (the default) means none from our side. */
  idleTimeoutMs?: number;
  /**
   * SHA-256 of the DER certificate the server must present, checked after the handshake the way
   * Chromium checks `serverCertificateHashes`. Without it the certificate is not checked.
   */
  expectedSha256?: Uint8Array;
  /** Limit for the handshake in ms; defaults to 10 000. */
  timeoutMs?: number;
}

/** How the client's connection ended. */
export interface ClientCloseInfo {
  /** True when the server sent CONNECTION_CLOSE. */
  readonly byPeer: boolean;
  /** True when the code is an application code. */
  readonly isApp: boolean;
  /** The close code (0 when none). */
  readonly code: number;
  /** The reason phrase. */
  readonly reason: string;
  /** True when the connection died of its idle timeout. */
  readonly timedOut: boolean;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A minimal QUIC client for tests, written directly on the quiche native binding (client mode,
 * `Connection.connect`), independent of the server code under test. It owns its UDP socket and
 * drives quiche the sans-IO way: recv, flush, timer.
 */
export class QuicTestClient {
  /** Milliseconds from the first Initial to handshake completion. */
  handshakeMs = 0;
  readonly #socket: Socket;
  readonly #conn: Connection;
  readonly #local: Host;
  readonly #server: Host;
  readonly #sendBuffer = new Uint8Array(1500);
  readonly #recvBuffer = new Uint8Array(65_536);
  readonly #streams = new Map<number, { chunks: Uint8Array[]; fin: boolean; waiters: (() => void)[] }>();
  readonly #datagrams: Uint8Array[] = [];
  #datagramWaiters: ((d: Uint8Array) => void)[] = [];
  #timer: NodeJS.Timeout | undefined;
  #onChange: (() => void)[] = [];
  #closeInfo: ClientCloseInfo | undefined;
  #socketClosed = false;
  #pendingSends = 0;
  #sendsDone: (() => void) | undefined;
  readonly #closedWaiters: ((info: ClientCloseInfo) => void)[] = [];

  private constructor(socket: Socket, conn: Connection, local: Host, server: Host) {
    this.#socket = socket;
    this.#conn = conn;
    this.#local = local;
    this.#server = server;
    socket.on('message', (msg, rinfo) => {
      if (this.#closeInfo !== undefined) return;
      try {
        this.#conn.recv(msg, { from: { host: rinfo.address, port: rinfo.port }, to: this.#local });
      } catch {
        // quiche drops what it cannot use; fatal errors show as isClosed() below.
      }
      this.#afterInput();
    });
  }

  /**
   * Binds a UDP socket on the loopback address of the server's family, connects, and resolves
   * once the handshake completes (and the certificate matched `expectedSha256`).
   */
  static async connect(options: QuicTestClientOptions): Promise<QuicTestClient> {
    const { host, port, alpn = ['h3'], idleTimeoutMs = 0, expectedSha256, timeoutMs = 10_000 } = options;
    const v6 = isIP(host) === 6;
    const socket = createSocket(v6 ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, v6 ? '::1' : '127.0.0.1', () => {
        socket.off('error', reject);
        resolve();
      });
    });
    const address = socket.address();
    const local = { host: address.address, port: address.port };
    const server = { host, port };
    let conn: Connection;
    try {
      conn = quiche.Connection.connect(
        'localhost',
        randomBytes(16),
        local,
        server,
        clientConfig(alpn, idleTimeoutMs),
      );
    } catch (err) {
      socket.close();
      throw err;
    }
    const client = new QuicTestClient(socket, conn, local, server);
    const started = performance.now();
    client.#flush();
    try {
      await client.#until(
        // A refused handshake shows as an error before quiche's draining period ends.
        () =>
          conn.isEstablished() ||
          client.#closeInfo !== undefined ||
          conn.peerError() !== null ||
          conn.localError() !== null,
        timeoutMs,
        'handshake',
      );
    } catch (err) {
      await client.close();
      throw err;
    }
    if (!conn.isEstablished()) {
      const error = conn.peerError() ?? conn.localError();
      await client.close();
      throw new Error(`handshake failed with code ${error?.errorCode ?? 'none'}`);
    }
    client.handshakeMs = performance.now() - started;
    if (expectedSha256 !== undefined) {
      const chain = conn.peerCertChain();
      const leaf = chain?.[0];
      const actual = leaf === undefined ? undefined : createHash('sha256').update(leaf).digest();
      if (actual === undefined || !actual.equals(Buffer.from(expectedSha256))) {
        await client.close();
        throw new Error('the server presented a certificate whose SHA-256 does not match');
      }
    }
    return client;
  }

  /** The negotiated ALPN protocol. */
  get alpn(): string {
    return decoder.decode(this.#conn.applicationProto());
  }

  /** SHA-256 of the server's leaf certificate. */
  get peerCertificateSha256(): Uint8Array | undefined {
    const leaf = this.#conn.peerCertChain()?.[0];
    return leaf === undefined ? undefined : new Uint8Array(createHash('sha256').update(leaf).digest());
  }

  /** How the connection ended, once it has. */
  get closeInfo(): ClientCloseInfo | undefined {
    return this.#closeInfo;
  }

  /** Largest datagram the server accepts now. */
  maxDatagramSize(): number {
    return this.#conn.dgramMaxWritableLen() ?? 0;
  }

  /** Writes all of `bytes` on a client stream (0, 4, 8…), waiting for flow control. */
  async write(streamId: number, bytes: Uint8Array, fin: boolean): Promise<void> {
    let offset = 0;
    for (;;) {
      const rest = bytes.subarray(offset);
      const written = this.#conn.streamSend(streamId, rest, fin) ?? 0;
      offset += written;
      this.#flush();
      if (offset >= bytes.byteLength) return;
      await this.#until(
        () => this.#closeInfo !== undefined || this.#capacity(streamId) > 0,
        10_000,
        'stream capacity',
      );
      if (this.#closeInfo !== undefined) throw new Error('connection closed while writing');
    }
  }

  /** Reads stream `streamId` until its FIN and returns all its bytes. */
  async readAll(streamId: number, timeoutMs = 10_000): Promise<Uint8Array> {
    await this.#until(
      () => this.#stream(streamId).fin || this.#closeInfo !== undefined,
      timeoutMs,
      'stream FIN',
    );
    const state = this.#stream(streamId);
    if (!state.fin)
      throw new Error(`stream ${streamId} ended without FIN: ${JSON.stringify(this.#closeInfo)}`);
    return Buffer.concat(state.chunks);
  }

  /** Resets our sending side of stream `streamId` (RESET_STREAM) with `code`. */
  resetStream(streamId: number, code: number): void {
    this.#conn.streamShutdown(streamId, quiche.Shutdown.Write, code);
    this.#flush();
  }

  /** Sends one datagram; false when quiche's queue is full. */
  sendDatagram(bytes: Uint8Array): boolean {
    const queued = this.#conn.dgramSend(bytes) as undefined | null;
    this.#flush();
    return queued !== null;
  }

  /** Sends `text` as UTF-8 on client stream `streamId`, with FIN. */
  async sendText(streamId: number, text: string): Promise<void> {
    await this.write(streamId, encoder.encode(text), true);
  }

  /** Resolves with the next datagram from the server. */
  nextDatagram(timeoutMs = 10_000): Promise<Uint8Array> {
    const queued = this.#datagrams.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#datagramWaiters = this.#datagramWaiters.filter((w) => w !== waiter);
        reject(new Error('no datagram arrived in time'));
      }, timeoutMs);
      const waiter = (d: Uint8Array) => {
        clearTimeout(timer);
        resolve(d);
      };
      this.#datagramWaiters.push(waiter);
    });
  }

  /** Resolves once the connection has ended (server close, idle timeout, or our close). */
  waitClosed(timeoutMs = 10_000): Promise<ClientCloseInfo> {
    if (this.#closeInfo !== undefined) return Promise.resolve(this.#closeInfo);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the connection did not close in time')), timeoutMs);
      this.#closedWaiters.push((info) => {
        clearTimeout(timer);
        resolve(info);
      });
    });
  }

  /** Closes the connection (application code 0) if still open, and the socket. */
  async close(): Promise<void> {
    if (this.#closeInfo === undefined) {
      this.#conn.close(true, 0, encoder.encode('client done'));
      this.#flush();
      this.#ended();
    }
    if (!this.#socketClosed) {
      this.#socketClosed = true;
      // Let the CONNECTION_CLOSE leave: a send still resolving its address dies with the socket.
      if (this.#pendingSends > 0) await new Promise<void>((resolve) => (this.#sendsDone = resolve));
      await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
    }
  }

  /** Send capacity of a stream; 1 when quiche refuses (the next write reports the real error). */
  #capacity(streamId: number): number {
    try {
      return this.#conn.streamCapacity(streamId);
    } catch {
      return 1;
    }
  }

  #stream(id: number): { chunks: Uint8Array[]; fin: boolean; waiters: (() => void)[] } {
    let state = this.#streams.get(id);
    if (state === undefined) {
      state = { chunks: [], fin: false, waiters: [] };
      this.#streams.set(id, state);
    }
    return state;
  }

  #afterInput(): void {
    if (this.#conn.isEstablished()) {
      for (const id of this.#conn.readable()) {
        const state = this.#stream(id);
        for (;;) {
          let result: [number, boolean] | null;
          try {
            result = this.#conn.streamRecv(id, this.#recvBuffer);
          } catch {
            state.fin = true;
            break;
          }
          if (result === null) break;
          state.chunks.push(this.#recvBuffer.slice(0, result[0]));
          if (result[1]) {
            state.fin = true;
            break;
          }
        }
      }
      for (;;) {
        const datagram = this.#conn.dgramRecvVec();
        if (datagram === null) break;
        const waiter = this.#datagramWaiters.shift();
        if (waiter !== undefined) waiter(datagram);
        else this.#datagrams.push(datagram);
      }
    }
    this.#flush();
  }

  #flush(): void {
    if (this.#closeInfo !== undefined) return;
    for (;;) {
      let result: ReturnType<Connection['send']>;
      try {
        result = this.#conn.send(this.#sendBuffer);
      } catch {
        break;
      }
      if (result === null) break;
      const [length, info] = result;
      this.#pendingSends++;
      this.#socket.send(Buffer.from(this.#sendBuffer.subarray(0, length)), info.to.port, info.to.host, () => {
        this.#pendingSends--;
        if (this.#pendingSends === 0) this.#sendsDone?.();
      });
    }
    if (this.#conn.isClosed()) {
      this.#ended();
      return;
    }
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const ms = this.#conn.timeout();
    if (ms !== null) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#conn.onTimeout();
        this.#afterInput();
      }, ms);
    }
    this.#notify();
  }

  #ended(): void {
    if (this.#closeInfo !== undefined) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const peer = this.#conn.peerError();
    const local = this.#conn.localError();
    const error = peer ?? local;
    this.#closeInfo = {
      byPeer: peer !== null,
      isApp: error?.isApp ?? false,
      code: error?.errorCode ?? 0,
      reason: error === null ? '' : decoder.decode(error.reason),
      timedOut: this.#conn.isTimedOut(),
    };
    for (const waiter of this.#closedWaiters.splice(0)) waiter(this.#closeInfo);
    this.#notify();
  }

  #notify(): void {
    for (const check of [...this.#onChange]) check();
  }

  /** Resolves when `condition` holds, re-checked after every flush. */
  #until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!condition()) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what} from ${this.#server.host}:${this.#server.port}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#onChange = this.#onChange.filter((c) => c !== check);
      };
      this.#onChange.push(check);
    });
  }
}

/** quiche client configuration: no certificate verification (tests pin the hash themselves). */
function clientConfig(alpn: string[], idleTimeoutMs: number): Config {
  const config = quiche.Config.withBoringSslCtx(false, false, null, null, null, null);
  config.verifyPeer(false);
  config.setApplicationProtos(alpn);
  config.setMaxIdleTimeout(idleTimeoutMs);
  config.setMaxRecvUdpPayloadSize(1500);
  config.setMaxSendUdpPayloadSize(1350);
  config.setInitialMaxData(10_000_000);
  config.setInitialMaxStreamDataBidiLocal(1_000_000);
  config.setInitialMaxStreamDataBidiRemote(1_000_000);
  config.setInitialMaxStreamDataUni(1_000_000);
  config.setInitialMaxStreamsBidi(100);
  config.setInitialMaxStreamsUni(100);
  config.enableDgram(true, 1024, 1024);
  return config;
}
