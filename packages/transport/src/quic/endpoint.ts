/*
 * Binding facts this endpoint relies on (`@matrixai/quic` 2.0.9, quiche 0.18.0, BoringSSL via
 * the `boring` crate; read from its `dist/native/types.d.ts` and checked at runtime):
 *
 * - Loading: `@matrixai/quic/native/quiche.js` default-exports the napi module for this platform
 *   (`@matrixai/quic-linux-x64/node.napi.node`); nothing of QUICServer/QUICSocket is involved.
 * - Config: `Config.withBoringSslCtx(verifyPeer, verifyAllowFail, caPem, [keyPem], [chainPem],
 *   sigalgs)` takes PEM bytes from memory; only the first key/chain of the lists is used. Setters:
 *   setApplicationProtos, setMaxIdleTimeout (ms), setMax{Recv,Send}UdpPayloadSize,
 *   setInitialMax*, enableDgram(on, recvQueue, sendQueue), setCcAlgorithmName('cubic' | 'reno' |
 *   'bbr'; 'bbr2' is refused by this build), enablePacing, setDisableActiveMigration.
 * - `Header.fromSlice(packet, dcidLen)` parses long and short headers (reads only; copies the
 *   ids). `versionIsSupported(v)`, `negotiateVersion(scid, dcid, out)` build version negotiation.
 * - `Connection.accept(scid, odcid | null, local, peer, config)`; addresses are `{host, port}`
 *   literals; `local` must be the same value on every `recv` (we use the bound address).
 * - `recv(buf, {from, to})` decrypts IN PLACE in the caller's buffer: parse the header first, and
 *   do not read the buffer afterwards. Datagrams arrive in `@svc/udp-batch`'s receive memory
 *   (one `recvmmsg` per read, the memory reused by the next read), or, without the addon, in a
 *   fresh Buffer per `message` event; quiche copies what it keeps either way.
 * - `send(buf)` writes one packet into `buf` and returns `[length, {from, to, at}]`, or `null` when
 *   there is nothing to send. `at` (the pacing time) is an opaque napi External: it cannot be read
 *   from JS, so packets leave at once. `buf` is any Uint8Array: we hand quiche a view of the send
 *   batch (`@svc/udp-batch`), so a packet is written once, in place, and every packet of a flush
 *   leaves in one `sendmmsg` (with UDP GSO). Without the native addon the batch copies each
 *   packet for `dgram.send`.
 * - quiche's `Done` becomes `null` (send, streamRecv, streamSend, dgramSend = queue full,
 *   dgramRecvVec = empty, close = already closing); every other error is thrown as a plain Error
 *   with `code: 'GenericFailure'` and the Debug text of `quiche::Error` as message
 *   (`BufferTooShort`, `InvalidStreamState(4)`, `StreamReset(258)`, `StreamStopped(258)`, …).
 * - `streamSend` and `dgramSend` copy the caller's bytes into quiche; `streamRecv` fills the
 *   buffer it is given (ours, copied out); `dgramRecvVec` returns a fresh buffer.
 * - `timeout()` is whole milliseconds (truncated) or `null`; `onTimeout()` then flush.
 * - `pathStats()` gives rtt in whole milliseconds (0 on loopback), cwnd, deliveryRate (bytes/s),
 *   pmtu; no min-RTT and no bytes in flight are exposed.
 * - `dgramMaxWritableLen()` is `null` before the handshake completes (1310 with a 1350-byte
 *   payload limit on both sides, 1326 towards Chromium 156).
 * - Pitfall: BoringSSL silently drops a private key that does not match the certificate loaded
 *   after it; the Config builds and every handshake then fails. Key and certificate are matched
 *   with node:crypto before a Config is built.
 * - Pitfall: Chromium's ClientHello (with a post-quantum key share) spans two Initial datagrams
 *   sent with the same client-chosen DCID before our reply arrives, so a new connection is routed
 *   by that DCID as well as by the id we issue.
 */
import { Buffer } from 'node:buffer';
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { systemClock, TypedEmitter } from '@svc/runtime';
import {
  nativeSupport,
  UdpBatchError,
  UdpBatchReceiver,
  UdpBatchSender,
  type UdpReceiveMode,
  type UdpSendMode,
} from '@svc/udp-batch';
import type { CertificateSource } from '../cert/rotation.js';
import type { CertificateMaterial } from '../cert/self-signed.js';
import { loadQuiche, type NativeConfig, type NativeConnection, type NativeHostPort } from './binding.js';
import {
  buildServerConfig,
  type QuicTransportOptions,
  type ResolvedTransportOptions,
  resolveTransportOptions,
} from './config.js';
import { type ConnectionHost, QuicConnection } from './connection.js';
import { parsePacketHeader } from './header.js';
import { reportingLogger } from './report.js';
import type { SocketAddress } from './types.js';

/** Length of the connection ids this endpoint issues (RFC 9000 allows up to 20). */
const SCID_LENGTH = 16;

/** RFC 9000 §14.1: a client's Initial travels in a datagram of at least 1200 bytes. */
const MIN_INITIAL_DATAGRAM = 1200;

/** RFC 9000 §7.2: the client's first destination connection id is at least 8 bytes. */
const MIN_INITIAL_DCID = 8;

/** Scratch size for stream reads. */
const STREAM_READ_CHUNK = 65_536;

/** Options of {@link QuicEndpoint.listen}. */
export interface QuicEndpointOptions extends QuicTransportOptions {
  /** Address to bind: `0.0.0.0`, `127.0.0.1`, `::`, `::1` or another literal. */
  host: string;
  /** UDP port; 0 picks a free one (read it from {@link QuicEndpoint.port}). */
  port: number;
  /** Certificate for new connections, asked for at every handshake (`CertificateRotation` is one). */
  certificates: CertificateSource;
  /** With `::`, accept IPv6 only instead of IPv4 as well (dual stack); defaults to false. */
  ipv6Only?: boolean;
  /** Connections held at once; further handshakes are ignored. Defaults to 1000. */
  maxConnections?: number;
  /** Kernel socket receive/send buffer size in bytes, for bursts of video; defaults to the system's. */
  socketBufferBytes?: number;
  /**
   * Send each flush's packets in one system call through `@svc/udp-batch` when its addon is built
   * (defaults to true); false sends every packet with `dgram.send`.
   */
  batchedSends?: boolean;
  /**
   * Read every datagram waiting in one system call (`recvmmsg`) through `@svc/udp-batch` when its
   * addon is built (defaults to true); false takes them one by one from `message` events.
   */
  batchedReceives?: boolean;
}

/** Events of a {@link QuicEndpoint}: each name with its listener's signature. */
export interface QuicEndpointEvents {
  /** A handshake completed; attach the connection's listeners here. */
  connection: (conn: QuicConnection) => void;
  /**
   * A socket error after binding, or an error thrown by a listener of the endpoint or of one of
   * its connections. Without a listener (or when a listener of `error` throws) such errors are
   * rethrown as uncaught exceptions.
   */
  error: (err: unknown) => void;
  /**
   * A datagram that is not QUIC (its first byte is 0: neither the long-header nor the fixed bit
   * is set), such as the cloud relay's answers to the robot (`docs/protocol/relay.md`). `msg` is
   * valid only during the call.
   */
  foreign: (msg: Uint8Array, from: SocketAddress) => void;
}

/** Counters of what the endpoint dropped, for diagnostics. */
export interface QuicEndpointCounters {
  /** Datagrams whose header did not parse. */
  readonly malformed: number;
  /** Packets for no known connection that could not start one. */
  readonly unroutable: number;
  /** Version negotiation packets sent. */
  readonly versionNegotiations: number;
  /** Handshakes ignored because `maxConnections` was reached or the endpoint is closing. */
  readonly refused: number;
  /** UDP sends that failed. */
  readonly sendErrors: number;
  /** Packets handed to the kernel in batched calls (`sendmmsg`, UDP GSO). */
  readonly batchedPackets: number;
  /** Packets sent one by one with `dgram.send` (no native addon, or a full socket buffer). */
  readonly fallbackPackets: number;
  /** Datagrams received. */
  readonly receivedPackets: number;
  /** Reads that returned them (`recvmmsg` calls; one per datagram without the addon). */
  readonly receiveReads: number;
}

/**
 * The QUIC server of the WebTransport endpoint: one UDP socket, many connections.
 *
 * quiche is used sans-IO: this class owns the socket, parses each datagram's header, routes it by
 * destination connection id to its {@link QuicConnection} (creating one for a new client
 * Initial), and sends what the connections produce. Certificates come from a
 * {@link CertificateSource}; each certificate gets its own quiche `Config`, so connections keep
 * the certificate they started with across a rotation.
 */
export class QuicEndpoint {
  readonly #socket: Socket;
  readonly #options: ResolvedTransportOptions;
  readonly #certificates: CertificateSource;
  readonly #maxConnections: number;
  readonly #local: NativeHostPort;
  readonly #events: TypedEmitter<QuicEndpointEvents>;
  readonly #routes = new Map<string, QuicConnection>();
  readonly #connections = new Set<QuicConnection>();
  readonly #configs = new Map<string, NativeConfig>();
  readonly #host: ConnectionHost;
  readonly #counters = { malformed: 0, unroutable: 0, versionNegotiations: 0, refused: 0, sendErrors: 0 };
  readonly #batch: UdpBatchSender;
  readonly #receiver: UdpBatchReceiver;
  readonly #maxPacket: number;
  /** Connections fed datagrams in the current read: flushed once at its end. */
  readonly #fed: QuicConnection[] = [];
  /** While the connections of a read are flushed, their packets leave together at the end. */
  #endingRead = false;
  /** While the `error` event is emitted: an error thrown by its listener is not reported to it again. */
  #reportingError = false;
  #closing: Promise<void> | undefined;

  private constructor(
    socket: Socket,
    options: ResolvedTransportOptions,
    certificates: CertificateSource,
    maxConnections: number,
    batchedSends: boolean,
    batchedReceives: boolean,
  ) {
    this.#socket = socket;
    this.#options = options;
    this.#certificates = certificates;
    this.#maxConnections = maxConnections;
    const address = socket.address();
    this.#local = { host: address.address, port: address.port };
    this.#events = new TypedEmitter(reportingLogger((err) => this.#reportError(err)));
    this.#batch = new UdpBatchSender(socket, { native: batchedSends });
    this.#maxPacket = Math.max(options.maxSendUdpPayload, options.loopbackMaxSendUdpPayload);
    if (this.#batch.mode === 'dgram' && batchedSends) warnUnbatchedOnce();
    this.#host = {
      recvBuffer: new Uint8Array(STREAM_READ_CHUNK),
      packetBuffer: () => this.#batch.packetBuffer(this.#maxPacket),
      commitPacket: (length, to) => this.#batch.commit(length, to),
      sendPackets: () => {
        if (!this.#endingRead) this.#sendBatch();
      },
      established: (conn) => this.#events.safeEmit('connection', conn),
      removed: (conn) => this.#remove(conn),
      reportError: (err) => this.#reportError(err),
      clock: systemClock,
    };
    socket.on('error', (err) => this.#reportError(err));
    this.#receiver = new UdpBatchReceiver(socket, {
      native: batchedReceives,
      onPacket: (packet, from) => {
        try {
          this.#onDatagram(packet, from);
        } catch (err) {
          // A failure while handling one datagram must not take the socket down.
          this.#reportError(err);
        }
      },
      onBatchEnd: () => this.#endRead(),
    });
  }

  /**
   * Binds the UDP socket and starts accepting connections.
   *
   * @throws TypeError for invalid options or a certificate quiche cannot load; the socket's
   *   system error (`EADDRINUSE`, `EADDRNOTAVAIL`, …) when binding fails; TransportError
   *   `quic-unavailable` when this machine's install has no QUIC binding.
   */
  static async listen(options: QuicEndpointOptions): Promise<QuicEndpoint> {
    const {
      host,
      port,
      certificates,
      ipv6Only = false,
      maxConnections = 1000,
      socketBufferBytes,
      batchedSends = true,
      batchedReceives = true,
    } = options;
    // Before any socket is bound: an install without the binding hears why at once.
    loadQuiche();
    const family = isIP(host);
    if (family === 0)
      throw new TypeError(`QUIC option host must be an IP address literal, got ${String(host)}`);
    if (!(Number.isInteger(port) && port >= 0 && port <= 65_535)) {
      throw new TypeError(`QUIC option port must be an integer from 0 to 65535, got ${String(port)}`);
    }
    if (!(Number.isInteger(maxConnections) && maxConnections > 0)) {
      throw new TypeError(
        `QUIC option maxConnections must be a positive integer, got ${String(maxConnections)}`,
      );
    }
    if (socketBufferBytes !== undefined && !(Number.isInteger(socketBufferBytes) && socketBufferBytes > 0)) {
      throw new TypeError(
        `QUIC option socketBufferBytes must be a positive integer, got ${String(socketBufferBytes)}`,
      );
    }
    if (certificates === null || typeof certificates?.current !== 'function') {
      throw new TypeError('QUIC option certificates must have a current() method');
    }
    const resolved = resolveTransportOptions(options);
    // Fail now, not at the first handshake, when the certificate does not load.
    const firstConfig = configFor(certificates.current(), resolved);

    const socket = createSocket({
      type: family === 6 ? 'udp6' : 'udp4',
      ipv6Only,
      ...(socketBufferBytes === undefined
        ? {}
        : { recvBufferSize: socketBufferBytes, sendBufferSize: socketBufferBytes }),
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => {
        socket.off('listening', onListening);
        socket.close();
        reject(err);
      };
      const onListening = () => {
        socket.off('error', onError);
        resolve();
      };
      socket.once('error', onError);
      socket.once('listening', onListening);
      socket.bind({ address: host, port, exclusive: true });
    });
    const endpoint = new QuicEndpoint(
      socket,
      resolved,
      certificates,
      maxConnections,
      batchedSends,
      batchedReceives,
    );
    endpoint.#configs.set(hashKey(certificates.current()), firstConfig);
    return endpoint;
  }

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof QuicEndpointEvents>(event: K, listener: QuicEndpointEvents[K]): () => void {
    return this.#events.on(event, listener);
  }

  /** Removes a listener. */
  off<K extends keyof QuicEndpointEvents>(event: K, listener: QuicEndpointEvents[K]): void {
    this.#events.off(event, listener);
  }

  /** The bound UDP port (the real one when 0 was asked for). */
  get port(): number {
    return this.#local.port;
  }

  /** The bound address and port. */
  get address(): SocketAddress {
    return { host: this.#local.host, port: this.#local.port };
  }

  /** The transport options in force, defaults applied. */
  get options(): ResolvedTransportOptions {
    return this.#options;
  }

  /** Connections currently held (handshaking, open or closing). */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /** The connections currently held. */
  connections(): QuicConnection[] {
    return [...this.#connections];
  }

  /** What the endpoint dropped so far, and how its packets left. */
  counters(): QuicEndpointCounters {
    return {
      ...this.#counters,
      batchedPackets: this.#batch.stats.batchedPackets,
      fallbackPackets: this.#batch.stats.fallbackPackets,
      sendErrors: this.#counters.sendErrors + this.#batch.stats.sendErrors,
      receivedPackets: this.#receiver.stats.packets,
      receiveReads: this.#receiver.stats.reads,
    };
  }

  /** How packets leave: `gso` or `sendmmsg` in batches, or `dgram` one by one. */
  get sendMode(): UdpSendMode {
    return this.#batch.mode;
  }

  /** How datagrams are read: `recvmmsg` in batches, or `dgram` one by one. */
  get receiveMode(): UdpReceiveMode {
    return this.#receiver.mode;
  }

  /**
   * Closes every connection (each peer gets a CONNECTION_CLOSE with NO_ERROR and each
   * connection emits `closed` with initiator `endpoint`), waits for those packets to leave, then
   * closes the socket. Safe to call more than once.
   */
  close(reason = 'server shutting down'): Promise<void> {
    this.#closing ??= (async () => {
      for (const conn of [...this.#connections]) conn.terminate(reason);
      await this.#batch.drained();
      this.#receiver.close();
      await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
      this.#configs.clear();
      this.#events.removeAllListeners();
    })();
    return this.#closing;
  }

  /**
   * Sends one datagram that is not QUIC (a relay attach) from this endpoint's socket, so that it
   * leaves from `quic_port` and opens the same NAT mapping the relayed QUIC packets will use.
   * A closed endpoint drops it.
   */
  sendRaw(bytes: Uint8Array, to: SocketAddress): void {
    if (this.#closing !== undefined) return;
    this.#batch.add(bytes, to);
    this.#sendBatch();
  }

  /** One datagram from `from`; `msg` is valid only during the call (quiche decrypts it in place). */
  #onDatagram(msg: Uint8Array, from: NativeHostPort): void {
    if (msg[0] === 0) {
      this.#events.safeEmit('foreign', msg, from);
      return;
    }
    // A short header (RFC 9000 §17.3: first bit 0) carries the id we issued right after its first
    // byte. Nearly every datagram of an open connection is one: it is routed here without
    // quiche's header parser, which builds an object and two buffers per call.
    if ((msg[0]! & 0x80) === 0 && msg.byteLength > SCID_LENGTH) {
      const conn = this.#routes.get(hex(msg.subarray(1, 1 + SCID_LENGTH)));
      if (conn !== undefined) {
        this.#feed(conn, msg, from);
        return;
      }
    }
    const header = parsePacketHeader(msg, SCID_LENGTH);
    if (header === null) {
      this.#counters.malformed++;
      return;
    }
    const known = this.#routes.get(hex(header.dcid));
    if (known !== undefined) {
      this.#feed(known, msg, from);
      return;
    }
    if (header.type === 'short' || header.type === 'version-negotiation') {
      this.#counters.unroutable++;
      return;
    }
    if (!loadQuiche().versionIsSupported(header.version)) {
      // Answer only datagrams big enough to be a client's first flight (no amplification).
      if (msg.byteLength >= MIN_INITIAL_DATAGRAM && this.#closing === undefined) {
        this.#sendVersionNegotiation(header.scid, header.dcid, from);
      } else {
        this.#counters.unroutable++;
      }
      return;
    }
    if (
      header.type !== 'initial' ||
      msg.byteLength < MIN_INITIAL_DATAGRAM ||
      header.dcid.byteLength < MIN_INITIAL_DCID
    ) {
      this.#counters.unroutable++;
      return;
    }
    if (this.#closing !== undefined || this.#connections.size >= this.#maxConnections) {
      this.#counters.refused++;
      return;
    }
    const conn = this.#accept(header.dcid, from);
    if (conn !== undefined) this.#feed(conn, msg, from);
  }

  #feed(conn: QuicConnection, msg: Uint8Array, from: NativeHostPort): void {
    conn.handlePacket(msg, from);
    if (!this.#fed.includes(conn)) this.#fed.push(conn);
  }

  /**
   * The end of one read: each connection that got datagrams sends what they caused
   * (acknowledgements, answers), and every packet of the read leaves in one system call.
   */
  #endRead(): void {
    if (this.#fed.length === 0) return;
    this.#endingRead = true;
    try {
      for (const conn of this.#fed) {
        try {
          conn.flushAfterInput();
        } catch (err) {
          this.#reportError(err);
        }
      }
    } finally {
      this.#fed.length = 0;
      this.#endingRead = false;
    }
    this.#sendBatch();
  }

  /** Creates the connection for a client's first Initial and files it under both its ids. */
  #accept(clientDcid: Uint8Array, from: NativeHostPort): QuicConnection | undefined {
    const scid = randomBytes(SCID_LENGTH);
    let native: NativeConnection;
    try {
      const config = this.#currentConfig(isLoopback(from.host));
      native = loadQuiche().Connection.accept(scid, null, this.#local, from, config);
    } catch (err) {
      this.#reportError(err);
      return undefined;
    }
    // The client keeps using its own first DCID until our Initial reaches it (Chromium splits
    // a post-quantum ClientHello over several Initials), so that id routes here too.
    const keys = [hex(scid), hex(clientDcid)];
    const conn = new QuicConnection(native, this.#host, this.#local, from, keys);
    for (const key of keys) this.#routes.set(key, conn);
    this.#connections.add(conn);
    return conn;
  }

  /**
   * The quiche Config for the current certificate, built once per certificate and kind of peer:
   * a peer on loopback gets larger packets (fewer per video frame).
   */
  #currentConfig(loopback: boolean): NativeConfig {
    const material = this.#certificates.current();
    const key = loopback ? `${hashKey(material)}:loopback` : hashKey(material);
    let config = this.#configs.get(key);
    if (config === undefined) {
      const options = loopback
        ? { ...this.#options, maxSendUdpPayload: this.#options.loopbackMaxSendUdpPayload }
        : this.#options;
      config = configFor(material, options);
      this.#configs.set(key, config);
      // Keep the newest two of each kind: connections hold their own reference to the TLS context.
      while (this.#configs.size > 4) {
        const oldest = this.#configs.keys().next().value;
        if (oldest === undefined) break;
        this.#configs.delete(oldest);
      }
    }
    return config;
  }

  #sendVersionNegotiation(clientScid: Uint8Array, clientDcid: Uint8Array, to: NativeHostPort): void {
    const out = new Uint8Array(MIN_INITIAL_DATAGRAM);
    let length: number;
    try {
      length = loadQuiche().negotiateVersion(clientScid, clientDcid, out);
    } catch {
      this.#counters.unroutable++;
      return;
    }
    this.#counters.versionNegotiations++;
    this.#batch.add(out.subarray(0, length), to);
    this.#sendBatch();
  }

  #remove(conn: QuicConnection): void {
    for (const key of conn.routingKeys) {
      if (this.#routes.get(key) === conn) this.#routes.delete(key);
    }
    this.#connections.delete(conn);
  }

  /** Sends what the batch holds; a closed socket drops it and counts the packets. */
  #sendBatch(): void {
    const queued = this.#batch.queued;
    try {
      this.#batch.send();
    } catch (err) {
      if (!(err instanceof UdpBatchError)) throw err;
      this.#counters.sendErrors += queued;
    }
  }

  /** To the `error` event; uncaught when nobody listens, or when an `error` listener threw it. */
  #reportError(err: unknown): void {
    if (this.#reportingError || this.#events.listenerCount('error') === 0) {
      throwLater(err);
      return;
    }
    this.#reportingError = true;
    try {
      this.#events.safeEmit('error', err);
    } finally {
      this.#reportingError = false;
    }
  }
}

let warnedUnbatched = false;

/** Says once per process that packets go out (and come in) one by one, and why. */
function warnUnbatchedOnce(): void {
  if (warnedUnbatched) return;
  warnedUnbatched = true;
  const support = nativeSupport();
  const reason = support.available ? "this Node version hides the socket's descriptor" : support.reason;
  process.emitWarning(
    `QUIC packets are sent and received one by one through dgram (more CPU per packet): ${reason}`,
    {
      code: 'SVC_UDP_UNBATCHED',
    },
  );
}

/** Rethrows `err` as an uncaught exception, so an error nobody listens for is not lost. */
function throwLater(err: unknown): void {
  queueMicrotask(() => {
    throw err;
  });
}

/**
 * Builds the quiche Config for `material`, as a TypeError when the key does not match the
 * certificate or quiche refuses them. The match is checked here because BoringSSL silently drops
 * a key that does not match the certificate loaded after it, and every handshake then fails.
 */
function configFor(material: CertificateMaterial, options: ResolvedTransportOptions): NativeConfig {
  try {
    if (!new X509Certificate(material.certPem).checkPrivateKey(createPrivateKey(material.keyPem))) {
      throw new Error('the private key does not belong to the certificate');
    }
    return buildServerConfig(material, options);
  } catch (err) {
    throw new TypeError(
      `quiche cannot use the certificate or key: ${err instanceof Error ? err.message : String(err)}`,
      {
        cause: err,
      },
    );
  }
}

/** True for 127.0.0.0/8, ::1 and IPv4-mapped loopback addresses. */
function isLoopback(host: string): boolean {
  return host.startsWith('127.') || host === '::1' || host.startsWith('::ffff:127.');
}

/** Cache key of a certificate: its SHA-256, hex. */
function hashKey(material: CertificateMaterial): string {
  return hex(material.sha256);
}

/** Lower-case hex of `bytes` without copying them. */
function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}
