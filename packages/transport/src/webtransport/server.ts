import type { CertificateSource } from '../cert/rotation.js';
import { isTransportError, TransportError } from '../errors.js';
import { CapsuleReader, encodeCapsule } from '../h3/capsules.js';
import { H3_ERROR, h3ErrorCodeFor } from '../h3/codes.js';
import { decodeDatagram, encodeDatagram } from '../h3/datagram.js';
import { encodeControlStreamPreamble, encodeDataFrameHeader, FrameReader } from '../h3/frames.js';
import { decodeHeaders } from '../h3/qpack.js';
import { encodeWebTransportResponse, parseWebTransportRequest } from '../h3/request.js';
import { serverSettings } from '../h3/settings.js';
import { UniStreamReader } from '../h3/streams.js';
import type { QuicConnection } from '../quic/connection.js';
import { QuicEndpoint, type QuicEndpointOptions } from '../quic/endpoint.js';
import { type RelayAttachRequest, type RelayAttachResult, RelayLegs } from '../relay/leg.js';
import type { Session, SessionCloseInfo, SessionHandlers, SessionStats } from '../session.js';
import { StreamWriter } from './stream-writer.js';

/** Options of {@link WebTransportServer}. */
export interface WebTransportServerOptions {
  /** Address to bind (`0.0.0.0`, `::` for dual stack, `127.0.0.1`, ...). */
  readonly host: string;
  /** UDP port (`quic_port`); 0 picks one. */
  readonly port: number;
  readonly certificates: CertificateSource;
  /** The one request path sessions are accepted on (default `/`); others get 404. */
  readonly path?: string;
  /** Sessions at once; more are refused with 429 (default 16). */
  readonly maxSessions?: number;
  /** Called with each new session, before any of its data is delivered. */
  readonly onSession: (session: Session) => void;
  /** Something went wrong that is not any one session's business (logged by the caller). */
  readonly onError?: (err: unknown) => void;
  /** QUIC tuning passed to the endpoint. */
  readonly quic?: Partial<Omit<QuicEndpointOptions, 'host' | 'port' | 'certificates'>>;
}

/** Close code for a session the server shuts down. */
const GOING_AWAY = 0;
/** How long a closing session waits for its close capsule to leave before closing the connection. */
const CLOSE_LINGER_MS = 250;

/**
 * A WebTransport server over HTTP/3: accepts QUIC connections, speaks the HTTP/3 control stream
 * with the settings Chromium needs (draft-02 and later), accepts an extended CONNECT for
 * WebTransport on one path and refuses anything else cleanly, and turns each accepted CONNECT
 * into a {@link Session}: datagrams with the quarter-stream-id prefix, the first bidirectional
 * WebTransport stream as the control stream, and the close capsule.
 */
export class WebTransportServer {
  readonly #endpoint: QuicEndpoint;
  readonly #options: WebTransportServerOptions;
  readonly #sessions = new Set<WebTransportSession>();
  readonly #relay: RelayLegs;

  private constructor(endpoint: QuicEndpoint, options: WebTransportServerOptions) {
    this.#endpoint = endpoint;
    this.#options = options;
    this.#relay = new RelayLegs({
      send: (bytes, to) => endpoint.sendRaw(bytes, to),
      ipv6Socket: endpoint.address.host.includes(':'),
    });
    endpoint.on('foreign', (msg, from) => this.#relay.handle(msg, from));
  }

  /** Binds the UDP socket and starts accepting. */
  static async listen(options: WebTransportServerOptions): Promise<WebTransportServer> {
    const endpoint = await QuicEndpoint.listen({
      ...options.quic,
      host: options.host,
      port: options.port,
      certificates: options.certificates,
    });
    const server = new WebTransportServer(endpoint, options);
    endpoint.on('error', (err) => options.onError?.(err));
    endpoint.on('connection', (conn) => new H3Connection(conn, server.#hooks()));
    return server;
  }

  /** The bound UDP port. */
  get port(): number {
    return this.#endpoint.port;
  }

  /** Sessions open now. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /**
   * Attaches the QUIC port to a relayed session's robot-facing relay port (svc-cloud's
   * `relay-open`): the pilot's connection then arrives from there, and its session says `relay`.
   */
  attachRelay(request: RelayAttachRequest): Promise<RelayAttachResult> {
    return this.#relay.attach(request);
  }

  /** Closes every session and the endpoint. */
  async close(): Promise<void> {
    this.#relay.close();
    for (const session of [...this.#sessions]) session.close(GOING_AWAY, 'server shutting down');
    await this.#endpoint.close();
  }

  #hooks(): ConnectionHooks {
    return {
      path: this.#options.path ?? '/',
      isRelay: (peer) => this.#relay.isRelay(peer.host, peer.port),
      canAccept: () => this.#sessions.size < (this.#options.maxSessions ?? 16),
      opened: (session) => {
        this.#sessions.add(session);
        this.#options.onSession(session);
      },
      closed: (session) => this.#sessions.delete(session),
      error: (err) => this.#options.onError?.(err),
    };
  }
}

interface ConnectionHooks {
  readonly path: string;
  /** Whether a peer is a relay port this server attached to. */
  isRelay(peer: { readonly host: string; readonly port: number }): boolean;
  canAccept(): boolean;
  opened(session: WebTransportSession): void;
  closed(session: WebTransportSession): void;
  error(err: unknown): void;
}

/** The HTTP/3 side of one QUIC connection. */
class H3Connection {
  readonly #conn: QuicConnection;
  readonly #hooks: ConnectionHooks;
  readonly #bidi = new Map<number, FrameReader>();
  readonly #uni = new Map<number, UniStreamReader>();
  readonly #uniKinds = new Set<string>();
  readonly #sessions = new Map<number, WebTransportSession>();
  /** WebTransport streams by stream id, with their session. */
  readonly #wtStreams = new Map<number, WebTransportSession>();

  constructor(conn: QuicConnection, hooks: ConnectionHooks) {
    this.#conn = conn;
    this.#hooks = hooks;
    const control = conn.openStream('uni');
    new StreamWriter(conn, control).write(encodeControlStreamPreamble(serverSettings({ maxSessions: 1 })));
    conn.on('streamReadable', (id) => this.#readable(id));
    conn.on('datagram', (bytes) => this.#datagram(bytes));
    conn.on('closed', (info) => {
      for (const session of this.#sessions.values()) {
        session.ended({ code: info.code, reason: info.reason || info.initiator, by: 'transport' });
      }
      this.#sessions.clear();
    });
  }

  #readable(id: number): void {
    try {
      for (let read = this.#conn.streamRecv(id); read !== null; read = this.#conn.streamRecv(id)) {
        if (read.type === 'reset') {
          this.#streamGone(id);
          return;
        }
        if (read.data.byteLength > 0) this.#streamData(id, read.data);
        if (read.fin) {
          this.#streamEnded(id);
          return;
        }
      }
    } catch (err) {
      this.#fail(err);
    }
  }

  #streamData(id: number, data: Uint8Array): void {
    const wt = this.#wtStreams.get(id);
    if (wt !== undefined) {
      wt.streamData(id, data);
      return;
    }
    if ((id & 0x2) !== 0) {
      this.#uniData(id, data);
      return;
    }
    let reader = this.#bidi.get(id);
    if (reader === undefined) {
      reader = new FrameReader({ role: 'request' });
      this.#bidi.set(id, reader);
    }
    for (const event of reader.push(data)) {
      switch (event.type) {
        case 'webtransport-stream': {
          const session = this.#sessions.get(event.sessionId);
          if (session === undefined) {
            this.#conn.streamShutdown(id, 'read', H3_ERROR.REQUEST_REJECTED);
            return;
          }
          this.#wtStreams.set(id, session);
          session.streamOpened(id);
          break;
        }
        case 'webtransport-data':
          this.#wtStreams.get(id)?.streamData(id, event.payload);
          break;
        case 'headers':
          this.#request(id, event.block);
          break;
        case 'data':
          this.#sessions.get(id)?.connectStreamData(event.payload);
          break;
        default:
          break; // other frames on a request stream carry nothing we act on
      }
    }
  }

  #request(id: number, block: Uint8Array): void {
    if (this.#sessions.has(id)) return; // trailers on a CONNECT stream: nothing to do
    const check = parseWebTransportRequest(decodeHeaders(block));
    const respond = (status: number) =>
      new StreamWriter(this.#conn, id).write(encodeWebTransportResponse(status), true);
    if (!check.ok) {
      if (check.malformed) this.#conn.streamShutdown(id, 'write', H3_ERROR.MESSAGE_ERROR);
      else respond(check.status);
      return;
    }
    if (check.request.path !== this.#hooks.path || !this.#hooks.canAccept()) {
      respond(check.request.path !== this.#hooks.path ? 404 : 429);
      return;
    }
    const writer = new StreamWriter(this.#conn, id);
    writer.write(encodeWebTransportResponse(200));
    const kind = this.#hooks.isRelay(this.#conn.remoteAddress) ? 'relay' : 'direct';
    const session = new WebTransportSession(this.#conn, id, writer, check.request.path, kind, () => {
      this.#sessions.delete(id);
      this.#hooks.closed(session);
    });
    this.#sessions.set(id, session);
    this.#hooks.opened(session);
  }

  #uniData(id: number, data: Uint8Array): void {
    let reader = this.#uni.get(id);
    if (reader === undefined) {
      reader = new UniStreamReader();
      this.#uni.set(id, reader);
    }
    for (const event of reader.push(data)) {
      if (event.type === 'stream-type' && event.kind !== 'unknown') {
        if (this.#uniKinds.has(event.kind)) {
          throw new TransportError('stream-creation-error', `a second ${event.kind} stream from the client`);
        }
        this.#uniKinds.add(event.kind);
      }
      // Client-initiated unidirectional WebTransport streams are not used by this service: drained.
    }
  }

  #streamEnded(id: number): void {
    this.#sessions.get(id)?.ended({ code: 0, reason: '', by: 'peer' });
    this.#streamGone(id);
  }

  #streamGone(id: number): void {
    this.#bidi.delete(id);
    this.#uni.delete(id);
    const session = this.#sessions.get(id);
    if (session !== undefined) session.ended({ code: 0, reason: 'CONNECT stream reset', by: 'peer' });
    this.#wtStreams.get(id)?.streamClosed(id);
    this.#wtStreams.delete(id);
  }

  #datagram(bytes: Uint8Array): void {
    try {
      const { quarterStreamId, payload } = decodeDatagram(bytes);
      this.#sessions.get(quarterStreamId * 4)?.datagram(payload);
    } catch (err) {
      if (!isTransportError(err)) throw err;
      // A datagram for no session, or without a usable prefix, is dropped (RFC 9297 §2.1).
    }
  }

  #fail(err: unknown): void {
    if (isTransportError(err)) {
      this.#conn.close(h3ErrorCodeFor(err), err.message);
      return;
    }
    this.#hooks.error(err);
    this.#conn.close(H3_ERROR.INTERNAL_ERROR, 'internal error');
  }
}

/** Where outgoing datagrams are assembled (prefix then payload) before quiche copies them. */
let scratch = new Uint8Array(2048);

/** One WebTransport session: an accepted CONNECT stream and what hangs off it. */
class WebTransportSession implements Session {
  readonly id: string;
  readonly kind: 'direct' | 'relay';
  readonly backend = 'quic' as const;
  readonly remoteAddress: string;
  readonly path: string;
  readonly #conn: QuicConnection;
  readonly #connectWriter: StreamWriter;
  readonly #prefix: Uint8Array;
  readonly #capsules = new CapsuleReader();
  readonly #onGone: () => void;
  #handlers: SessionHandlers = {};
  #controlStream: number | undefined;
  #controlWriter: StreamWriter | undefined;
  /** Control bytes and datagrams that arrived before handlers were installed. */
  #pendingControl: Uint8Array[] = [];
  #pendingControlOut: Uint8Array[] = [];
  #closed = false;
  readonly #lostAtStart: number;
  readonly #sentAtStart: number;

  constructor(
    conn: QuicConnection,
    connectStream: number,
    writer: StreamWriter,
    path: string,
    kind: 'direct' | 'relay',
    onGone: () => void,
  ) {
    this.kind = kind;
    this.#conn = conn;
    this.#connectWriter = writer;
    this.path = path;
    this.#onGone = onGone;
    const peer = conn.remoteAddress;
    this.remoteAddress = peer.host.includes(':')
      ? `[${peer.host}]:${peer.port}`
      : `${peer.host}:${peer.port}`;
    this.id = `${conn.id.slice(0, 8)}-${connectStream}`;
    this.#prefix = encodeDatagram(connectStream, new Uint8Array(0));
    const start = conn.stats();
    this.#lostAtStart = start.lostPackets;
    this.#sentAtStart = start.sentPackets;
  }

  get closed(): boolean {
    return this.#closed;
  }

  maxDatagramBytes(): number {
    return Math.max(0, this.#conn.maxDatagramSize() - this.#prefix.byteLength);
  }

  sendDatagram(payload: Uint8Array): boolean {
    if (this.#closed) return false;
    // quiche copies the datagram at once, so one scratch buffer serves every send: no
    // allocation per datagram (each would be an ArrayBuffer outside V8's heap, and those drive
    // garbage collection at video packet rates).
    const length = this.#prefix.byteLength + payload.byteLength;
    if (scratch.byteLength < length) scratch = new Uint8Array(length);
    scratch.set(this.#prefix, 0);
    scratch.set(payload, this.#prefix.byteLength);
    return this.#conn.datagramSend(scratch.subarray(0, length));
  }

  queuedDatagramBytes(): number {
    return this.#conn.queuedDatagramBytes();
  }

  writeControl(bytes: Uint8Array): void {
    if (this.#closed) return;
    if (this.#controlWriter === undefined) this.#pendingControlOut.push(bytes);
    else this.#controlWriter.write(bytes);
  }

  setHandlers(handlers: SessionHandlers): void {
    this.#handlers = handlers;
    const pending = this.#pendingControl;
    this.#pendingControl = [];
    for (const bytes of pending) handlers.onControlData?.(bytes);
  }

  close(code = 0, reason = ''): void {
    if (this.#closed) return;
    const capsule = encodeCapsule({ type: 'close-session', code, reason });
    this.#connectWriter.write(concat(encodeDataFrameHeader(capsule.byteLength), capsule), true);
    this.ended({ code, reason, by: 'local' });
    // One session per connection: once the close capsule has had a moment to leave, close it.
    setTimeout(() => {
      if (!this.#conn.closed) this.#conn.close(0, reason);
    }, CLOSE_LINGER_MS).unref();
  }

  stats(): SessionStats {
    const s = this.#conn.stats();
    return {
      rttMs: s.rttMs,
      cwndBytes: s.cwndBytes,
      deliveryRateBps: s.deliveryRateBps * 8,
      lostPackets: s.lostPackets - this.#lostAtStart,
      sentPackets: s.sentPackets - this.#sentAtStart,
      transportQueuedDatagrams: s.sendQueueDatagrams,
    };
  }

  /** A bidirectional WebTransport stream of this session opened; the first is the control stream. */
  streamOpened(id: number): void {
    if (this.#controlStream !== undefined) return; // further streams are not used by this service
    this.#controlStream = id;
    this.#controlWriter = new StreamWriter(this.#conn, id);
    for (const bytes of this.#pendingControlOut) this.#controlWriter.write(bytes);
    this.#pendingControlOut = [];
  }

  streamData(id: number, bytes: Uint8Array): void {
    if (id !== this.#controlStream) return;
    if (this.#handlers.onControlData === undefined) this.#pendingControl.push(bytes);
    else this.#handlers.onControlData(bytes);
  }

  streamClosed(id: number): void {
    if (id === this.#controlStream && !this.#closed) this.close(0, 'control stream closed');
  }

  connectStreamData(bytes: Uint8Array): void {
    for (const capsule of this.#capsules.push(bytes)) {
      if (capsule.type === 'close-session')
        this.ended({ code: capsule.code, reason: capsule.reason, by: 'peer' });
    }
  }

  datagram(payload: Uint8Array): void {
    if (!this.#closed) this.#handlers.onDatagram?.(payload);
  }

  /** The session is over, whoever ended it. */
  ended(info: SessionCloseInfo): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#onGone();
    this.#handlers.onClose?.(info);
    if (info.by === 'peer' && !this.#conn.closed) this.#conn.close(0, 'session closed by peer');
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
