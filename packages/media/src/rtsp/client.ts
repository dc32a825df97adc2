/**
 * One RTSP session with a camera (RFC 2326): OPTIONS, DESCRIBE, SETUP of the video stream, PLAY,
 * keep-alives, TEARDOWN; RTP over the RTSP connection (interleaved) or over UDP.
 */

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { isIP, type Socket as TcpSocket, connect as tcpConnect } from 'node:net';
import { type Logger, redactText, redactUrl, silentLogger } from '@svc/runtime';
import { MediaError } from '../errors.js';
import {
  findVideoMedia,
  parseSdp,
  resolveControlUrl,
  type SdpMedia,
  type SessionDescription,
} from '../sdp.js';
import { parseAuthenticateHeaders, RtspAuthenticator, type RtspCredentials } from './auth.js';
import {
  parsePublicHeader,
  parseSessionHeader,
  parseTransportHeader,
  type SessionHeader,
} from './headers.js';
import {
  hasControlCharacter,
  type RtspMessage,
  RtspMessageParser,
  type RtspResponse,
  type RtspServerRequest,
  serializeRequest,
  serializeResponse,
} from './message.js';
import { keepAliveIntervalMs, type Scheduler, systemScheduler } from './timing.js';

/** Options shared by {@link RtspClient} and `RtspSource`. */
export interface RtspOptions {
  /** `rtsp://[user:password@]host[:port]/path`. Credentials are used for auth and never logged. */
  readonly url: string;
  /** How RTP travels: interleaved on the RTSP connection (default) or UDP. */
  readonly transport?: 'tcp' | 'udp';
  readonly logger?: Logger;
  /** `User-Agent` header. */
  readonly userAgent?: string;
  /** Allowed time for connecting and for each answer, in ms. Default 10 000. */
  readonly timeoutMs?: number;
}

/** Options of {@link RtspClient}. */
export interface RtspClientOptions extends RtspOptions {
  /** Every RTP packet of the chosen stream, raw; RTCP never reaches it. */
  readonly onRtp?: (packet: Uint8Array, receivedAtMs: number) => void;
  /** The chosen stream, once DESCRIBE is answered and before any of its packets. */
  readonly onDescription?: (media: SdpMedia) => void;
  /** The session failed after `start()` resolved (connection lost, keep-alive failed, garbage). */
  readonly onError?: (error: MediaError) => void;
  /** Timers for answers and keep-alives; the process's by default. */
  readonly scheduler?: Scheduler;
  /** Clock for `receivedAtMs`; `performance.now()` by default. */
  readonly now?: () => number;
}

/** Where a {@link RtspClient} is in its life. */
export type RtspClientState = 'idle' | 'starting' | 'playing' | 'closing' | 'closed';

/** Default of {@link RtspOptions.timeoutMs}. */
export const DEFAULT_RTSP_TIMEOUT_MS = 10_000;
/** TEARDOWN on stop waits at most this long: the camera may be gone. */
const TEARDOWN_TIMEOUT_MS = 2000;
/** DESCRIBE follows at most this many redirects. */
const MAX_REDIRECTS = 3;
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 305, 307]);
const DEFAULT_RTSP_PORT = 554;
const DEFAULT_USER_AGENT = 'svc-media';
/** Attempts at binding an even RTP port with the odd RTCP port above it. */
const UDP_BIND_ATTEMPTS = 32;

/** A parsed `rtsp://` URL, credentials split off. */
interface RtspTarget {
  /** The URL without userinfo or fragment: what requests carry. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly credentials: RtspCredentials | undefined;
}

/** Percent-decodes userinfo, keeping text that is not valid percent-encoding as it is. */
function decodeUserinfo(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Splits an `rtsp://` URL into the request URL, host, port and credentials.
 *
 * @throws MediaError `bad-url` for anything else; the message shows the URL redacted.
 */
function parseRtspUrl(raw: string): RtspTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // No `cause`: Node's TypeError carries the unredacted input.
    throw new MediaError('bad-url', `${JSON.stringify(redactUrl(raw))} is not a URL`);
  }
  if (url.protocol !== 'rtsp:') {
    throw new MediaError(
      'bad-url',
      `${redactUrl(raw)}: only rtsp:// URLs are supported, not ${url.protocol}//`,
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new MediaError('bad-url', `${redactUrl(raw)} names no host`);
  const port = url.port === '' ? DEFAULT_RTSP_PORT : Number(url.port);
  if (port === 0) throw new MediaError('bad-url', `${redactUrl(raw)}: port 0 is not a camera's port`);
  let credentials: RtspCredentials | undefined;
  if (url.username !== '' || url.password !== '') {
    credentials = { username: decodeUserinfo(url.username), password: decodeUserinfo(url.password) };
    if (hasControlCharacter(credentials.username + credentials.password)) {
      throw new MediaError('bad-url', `the credentials of ${redactUrl(raw)} contain a control character`);
    }
  }
  url.username = '';
  url.password = '';
  url.hash = '';
  return { url: url.href, host, port, credentials };
}

/** An IPv4-mapped IPv6 address in its IPv4 form, so addresses compare equal. */
function normalizeAddress(address: string): string {
  const lower = address.toLowerCase();
  return lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower;
}

/** True when `packet` looks like RTP (version 2, header present) and not RTCP (PT 200-204). */
function isRtp(packet: Uint8Array): boolean {
  if (packet.length < 12 || (packet[0] ?? 0) >> 6 !== 2) return false;
  const type = (packet[1] ?? 0) & 0x7f;
  return type < 72 || type > 76;
}

/** A reason phrase from the network, safe to put in a message. */
function sanitizeReason(reason: string): string {
  const printable = reason.replace(/[^\x20-\x7e]/g, '?');
  return redactText(printable.length > 80 ? `${printable.slice(0, 80)}...` : printable);
}

/** A request awaiting its answer. */
interface PendingRequest {
  readonly resolve: (response: RtspResponse) => void;
  readonly reject: (error: MediaError) => void;
  readonly timer: unknown;
}

/** The UDP sockets of a session. */
interface UdpPair {
  readonly rtp: UdpSocket;
  readonly rtcp: UdpSocket;
  readonly port: number;
}

/**
 * One RTSP session with a camera: connects, negotiates the first video stream, and delivers its
 * RTP packets to `onRtp` until stopped or failed.
 *
 * Used alone (for `svcd probe-input`) it surfaces the first error: `start()` rejects with a
 * {@link MediaError} (`bad-url`, `unreachable`, `unauthorized`, `not-found`, `rtsp-status`,
 * `timeout`, `malformed-rtsp`, `malformed-sdp`, `closed`). A failure after `start()` resolved
 * goes to `onError`, once. Wrap it in `RtspSource` to reconnect.
 *
 * Credentials come from the URL's userinfo; no URL with them, and no password, appears in a log
 * line or an error message.
 */
export class RtspClient {
  readonly #options: RtspClientOptions;
  readonly #logger: Logger;
  readonly #scheduler: Scheduler;
  readonly #now: () => number;
  readonly #timeoutMs: number;
  readonly #transport: 'tcp' | 'udp';

  #state: RtspClientState = 'idle';
  #socket: TcpSocket | undefined;
  #socketClosed: Promise<void> = Promise.resolve();
  #parser = new RtspMessageParser();
  readonly #pending = new Map<number, PendingRequest>();
  #cseq = 0;
  /** Set once the connection failed or closing began: every later request fails with it. */
  #failure: MediaError | undefined;

  #credentials: RtspCredentials | undefined;
  #auth: RtspAuthenticator | undefined;
  #publicMethods = new Set<string>();
  #session: SessionHeader | undefined;
  #description: SessionDescription | undefined;
  #media: SdpMedia | undefined;
  #aggregateUrl: string | undefined;
  #rtpChannel = 0;
  #udp: UdpPair | undefined;
  #allowedSources = new Set<string>();
  #foreignPacketsLogged = false;
  #keepAliveTimer: unknown;
  #packets = 0;
  #stopping: Promise<void> | undefined;

  /** @param options - Where to connect and where packets go; see {@link RtspClientOptions}. */
  constructor(options: RtspClientOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#scheduler = options.scheduler ?? systemScheduler;
    this.#now = options.now ?? (() => performance.now());
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_RTSP_TIMEOUT_MS;
    this.#transport = options.transport ?? 'tcp';
  }

  /** Where the session is in its life. */
  get state(): RtspClientState {
    return this.#state;
  }

  /** The chosen video stream (payload type, encoding, clock rate, fmtp), once DESCRIBE was answered. */
  get media(): SdpMedia | undefined {
    return this.#media;
  }

  /** The whole session description, once DESCRIBE was answered. */
  get description(): SessionDescription | undefined {
    return this.#description;
  }

  /** RTP packets delivered so far. */
  get packetsReceived(): number {
    return this.#packets;
  }

  /**
   * Runs OPTIONS, DESCRIBE (following redirects), SETUP and PLAY. Resolves with the chosen
   * stream once the camera answered PLAY; packets may already have reached `onRtp`.
   *
   * @throws MediaError with the first failure; the connection is closed by then.
   * @throws TypeError when called twice.
   */
  async start(): Promise<SdpMedia> {
    if (this.#state !== 'idle') throw new TypeError('RtspClient.start() may be called once');
    this.#state = 'starting';
    try {
      const media = await this.#negotiate();
      this.#throwIfStopping();
      this.#state = 'playing';
      this.#scheduleKeepAlive();
      return media;
    } catch (err) {
      const error = this.#toMediaError(err);
      await this.stop();
      // Sockets opened while stop() was already running are closed here.
      await this.#closeTransport();
      throw error;
    }
  }

  /**
   * Ends the session: TEARDOWN (best effort, at most 2 s), then closes the connection and the
   * UDP sockets. Resolves when everything is closed. Safe to call at any time and repeatedly.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#shutdown();
    return this.#stopping;
  }

  async #shutdown(): Promise<void> {
    const wasHealthy = this.#failure === undefined;
    this.#state = 'closing';
    this.#clearKeepAlive();
    if (wasHealthy && this.#session !== undefined && this.#aggregateUrl !== undefined) {
      try {
        await this.#send('TEARDOWN', this.#aggregateUrl, [], Math.min(this.#timeoutMs, TEARDOWN_TIMEOUT_MS));
      } catch (err) {
        this.#logger.debug(
          { url: redactUrl(this.#aggregateUrl), error: this.#toMediaError(err).message },
          'RTSP TEARDOWN got no answer (best effort)',
        );
      }
    }
    this.#failure ??= new MediaError('closed', 'the RTSP session was stopped');
    this.#rejectPending(this.#failure);
    await this.#closeTransport();
    this.#state = 'closed';
  }

  /** Throws `closed` once `stop()` was called. */
  #throwIfStopping(): void {
    if (this.#state === 'closing' || this.#state === 'closed') {
      throw this.#failure ?? new MediaError('closed', 'the RTSP session was stopped');
    }
  }

  /** OPTIONS, DESCRIBE with redirects, SETUP, PLAY. */
  async #negotiate(): Promise<SdpMedia> {
    const initial = parseRtspUrl(this.#options.url);
    this.#credentials = initial.credentials;
    let requestUrl = initial.url;
    let endpoint = { host: initial.host, port: initial.port };
    await this.#open(endpoint.host, endpoint.port);
    await this.#askOptions(requestUrl);

    let describe: RtspResponse | undefined;
    for (let redirects = 0; ; redirects++) {
      describe = await this.#request('DESCRIBE', requestUrl, [['Accept', 'application/sdp']]);
      if (!REDIRECT_STATUSES.has(describe.status)) break;
      if (redirects === MAX_REDIRECTS) {
        throw new MediaError(
          'rtsp-status',
          `more than ${MAX_REDIRECTS} redirects from ${redactUrl(initial.url)}`,
        );
      }
      const location = describe.headers.get('location');
      if (location === undefined) {
        throw new MediaError(
          'rtsp-status',
          `DESCRIBE ${redactUrl(requestUrl)} answered ${describe.status} without a Location`,
        );
      }
      let resolved: string;
      try {
        resolved = new URL(location, requestUrl).href;
      } catch {
        // No `cause`: Node's TypeError carries the unredacted input.
        throw new MediaError(
          'rtsp-status',
          `redirect to an invalid Location ${JSON.stringify(redactUrl(location))}`,
        );
      }
      const next = parseRtspUrl(resolved);
      this.#logger.info(
        { status: describe.status, from: redactUrl(requestUrl), to: redactUrl(next.url) },
        'RTSP DESCRIBE redirected',
      );
      // 305 Use Proxy: same request URL, through the server the Location names.
      if (describe.status !== 305) requestUrl = next.url;
      if (next.credentials !== undefined) {
        this.#credentials = next.credentials;
      } else if (next.host !== initial.host) {
        // Credentials are for the camera that was configured, not for wherever it points.
        this.#credentials = undefined;
      }
      if (next.host !== endpoint.host || next.port !== endpoint.port) {
        endpoint = { host: next.host, port: next.port };
        await this.#closeTransport();
        this.#auth = undefined;
        await this.#open(endpoint.host, endpoint.port);
        await this.#askOptions(requestUrl);
      }
    }
    this.#ensureSuccess(describe, 'DESCRIBE', requestUrl);

    const description = parseSdp(Buffer.from(describe.body).toString('utf8'));
    const media = findVideoMedia(description);
    const base = this.#baseUrl(describe, requestUrl);
    this.#description = description;
    this.#media = media;
    this.#aggregateUrl = resolveControlUrl(base, description.control);
    const mediaUrl = resolveControlUrl(base, media.control);
    this.#logger.debug(
      {
        url: redactUrl(requestUrl),
        encoding: media.encodingName,
        payloadType: media.payloadType,
        clockRate: media.clockRate,
        control: redactUrl(mediaUrl),
      },
      'RTSP stream chosen',
    );
    this.#safeCall('onDescription', () => this.#options.onDescription?.(media));

    await this.#setup(mediaUrl);
    const play = await this.#request('PLAY', this.#aggregateUrl, [['Range', 'npt=0.000-']]);
    this.#ensureSuccess(play, 'PLAY', this.#aggregateUrl);
    this.#logger.info(
      {
        url: redactUrl(requestUrl),
        transport: this.#transport,
        encoding: media.encodingName,
        payloadType: media.payloadType,
        sessionTimeoutS: this.#session?.timeoutS,
      },
      'RTSP session playing',
    );
    return media;
  }

  /** OPTIONS: learns whether GET_PARAMETER works for keep-alives. Failure statuses are tolerated. */
  async #askOptions(url: string): Promise<void> {
    const response = await this.#request('OPTIONS', url, []);
    if (response.status >= 200 && response.status < 300) {
      this.#publicMethods = parsePublicHeader(response.headers.get('public'));
    } else {
      this.#publicMethods = new Set();
      this.#logger.debug({ url: redactUrl(url), status: response.status }, 'RTSP OPTIONS failed; continuing');
    }
  }

  /** Content-Base, else Content-Location, else the request URL (RFC 2326 C.1.1). */
  #baseUrl(describe: RtspResponse, requestUrl: string): string {
    for (const name of ['content-base', 'content-location']) {
      const value = describe.headers.get(name);
      if (value === undefined || value === '') continue;
      // An absolute base is kept exactly as sent: cameras expect their own spelling back.
      if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) return value;
      try {
        return new URL(value, requestUrl).href;
      } catch {
        this.#logger.debug({ header: name }, 'RTSP base URL header ignored: not a URL');
      }
    }
    return requestUrl;
  }

  /** SETUP of the chosen stream over the configured transport. */
  async #setup(mediaUrl: string): Promise<void> {
    let requested: string;
    if (this.#transport === 'tcp') {
      requested = 'RTP/AVP/TCP;unicast;interleaved=0-1';
    } else {
      this.#udp = await this.#bindUdpPair();
      this.#throwIfStopping();
      requested = `RTP/AVP;unicast;client_port=${this.#udp.port}-${this.#udp.port + 1}`;
    }
    const response = await this.#request('SETUP', mediaUrl, [['Transport', requested]]);
    this.#ensureSuccess(response, 'SETUP', mediaUrl);
    const sessionValue = response.headers.get('session');
    if (sessionValue === undefined) {
      throw new MediaError(
        'malformed-rtsp',
        `SETUP ${redactUrl(mediaUrl)} was answered without a Session header`,
      );
    }
    this.#session = parseSessionHeader(sessionValue);
    const transportValue = response.headers.get('transport');
    if (transportValue === undefined) {
      throw new MediaError(
        'malformed-rtsp',
        `SETUP ${redactUrl(mediaUrl)} was answered without a Transport header`,
      );
    }
    const transport = parseTransportHeader(transportValue);
    if (transport.tcp !== (this.#transport === 'tcp')) {
      throw new MediaError(
        'malformed-rtsp',
        `asked for RTP over ${this.#transport.toUpperCase()} but the camera chose ${transport.protocol}`,
      );
    }
    if (transport.tcp) {
      this.#rtpChannel = transport.interleaved?.[0] ?? 0;
    } else if (transport.source !== undefined && isIP(transport.source) !== 0) {
      this.#allowedSources.add(normalizeAddress(transport.source));
    }
  }

  /** Connects the RTSP connection. */
  async #open(host: string, port: number): Promise<void> {
    this.#throwIfStopping();
    this.#parser = new RtspMessageParser();
    const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const socket = tcpConnect({ host, port });
    this.#socket = socket;
    this.#socketClosed = new Promise((resolve) => socket.once('close', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const timer = this.#scheduler.setTimeout(() => {
        reject(new MediaError('unreachable', `no connection to ${where} within ${this.#timeoutMs} ms`));
        socket.destroy();
      }, this.#timeoutMs);
      const onError = (err: Error): void => {
        this.#scheduler.clearTimeout(timer);
        reject(
          new MediaError('unreachable', `cannot connect to ${where}: ${redactText(err.message)}`, {
            cause: err,
          }),
        );
      };
      socket.once('error', onError);
      socket.once('close', () => {
        this.#scheduler.clearTimeout(timer);
        reject(this.#failure ?? new MediaError('closed', 'the RTSP session was stopped while connecting'));
      });
      socket.once('connect', () => {
        this.#scheduler.clearTimeout(timer);
        socket.off('error', onError);
        resolve();
      });
    });
    socket.setNoDelay(true);
    this.#allowedSources = new Set([normalizeAddress(socket.remoteAddress ?? host)]);
    socket.on('data', (chunk: Buffer) => this.#onData(socket, chunk));
    socket.on('error', (err) => {
      this.#fail(
        socket,
        new MediaError('unreachable', `connection to ${where} failed: ${redactText(err.message)}`, {
          cause: err,
        }),
      );
    });
    socket.on('close', () => {
      this.#fail(socket, new MediaError('unreachable', `the camera at ${where} closed the connection`));
    });
    this.#logger.debug({ address: where }, 'RTSP connected');
  }

  /** Binds the RTP (even port) and RTCP (next port) sockets on the RTSP connection's local address. */
  async #bindUdpPair(): Promise<UdpPair> {
    const local = normalizeAddress(this.#socket?.localAddress ?? '127.0.0.1');
    const type = isIP(local) === 6 ? 'udp6' : 'udp4';
    const bind = (socket: UdpSocket, port: number): Promise<void> =>
      new Promise((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, local, () => {
          socket.off('error', reject);
          resolve();
        });
      });
    const close = (socket: UdpSocket): Promise<void> =>
      new Promise((resolve) => socket.close(() => resolve()));
    for (let attempt = 0; attempt < UDP_BIND_ATTEMPTS; attempt++) {
      const rtp = createSocket(type);
      try {
        await bind(rtp, 0);
      } catch (err) {
        await close(rtp);
        throw new MediaError(
          'unreachable',
          `cannot bind a UDP socket on ${local}: ${redactText(String(err))}`,
          { cause: err },
        );
      }
      const port = rtp.address().port;
      if (port % 2 === 0 && port < 65535) {
        const rtcp = createSocket(type);
        try {
          await bind(rtcp, port + 1);
          return this.#attachUdp({ rtp, rtcp, port });
        } catch {
          await close(rtcp);
        }
      }
      await close(rtp);
    }
    throw new MediaError(
      'unreachable',
      `no free even/odd UDP port pair on ${local} after ${UDP_BIND_ATTEMPTS} attempts`,
    );
  }

  #attachUdp(pair: UdpPair): UdpPair {
    pair.rtp.on('message', (packet, remote) => {
      if (!this.#allowedSources.has(normalizeAddress(remote.address))) {
        if (!this.#foreignPacketsLogged) {
          this.#foreignPacketsLogged = true;
          this.#logger.warn({ from: remote.address }, 'RTP from an address other than the camera dropped');
        }
        return;
      }
      this.#deliver(new Uint8Array(packet.buffer, packet.byteOffset, packet.length));
    });
    for (const udp of [pair.rtp, pair.rtcp]) {
      udp.on('error', (err) => {
        const tcp = this.#socket;
        if (tcp !== undefined) {
          this.#fail(
            tcp,
            new MediaError('unreachable', `UDP receive failed: ${redactText(err.message)}`, { cause: err }),
          );
        }
      });
    }
    return pair;
  }

  /** One chunk from the RTSP connection: responses, server requests, interleaved packets. */
  #onData(socket: TcpSocket, chunk: Uint8Array): void {
    if (socket !== this.#socket) return;
    let messages: RtspMessage[];
    try {
      messages = this.#parser.push(chunk);
    } catch (err) {
      this.#fail(socket, this.#toMediaError(err));
      return;
    }
    for (const message of messages) {
      switch (message.kind) {
        case 'interleaved':
          if (message.channel === this.#rtpChannel) this.#deliver(message.payload);
          break;
        case 'response':
          this.#onResponse(message);
          break;
        case 'request':
          this.#answerServerRequest(socket, message);
          break;
        default: {
          const unreachable: never = message;
          throw new TypeError(`unknown RTSP message ${String(unreachable)}`);
        }
      }
    }
  }

  #deliver(packet: Uint8Array): void {
    if (this.#state === 'closing' || this.#state === 'closed' || !isRtp(packet)) return;
    this.#packets++;
    const receivedAtMs = this.#now();
    this.#safeCall('onRtp', () => this.#options.onRtp?.(packet, receivedAtMs));
  }

  #onResponse(response: RtspResponse): void {
    const cseqText = response.headers.get('cseq');
    const cseq = cseqText !== undefined && /^\d{1,9}$/.test(cseqText.trim()) ? Number(cseqText) : undefined;
    let key = cseq;
    // A camera that drops CSeq still answers in order: give it to the only request waiting.
    if (key === undefined && this.#pending.size === 1) key = this.#pending.keys().next().value;
    const pending = key === undefined ? undefined : this.#pending.get(key);
    if (key === undefined || pending === undefined) {
      this.#logger.debug(
        { cseq: cseqText, status: response.status },
        'RTSP response to no pending request ignored',
      );
      return;
    }
    this.#pending.delete(key);
    this.#scheduler.clearTimeout(pending.timer);
    pending.resolve(response);
  }

  /** RFC 2326 lets servers send requests too: answer keep-alive pings, decline the rest. */
  #answerServerRequest(socket: TcpSocket, request: RtspServerRequest): void {
    const ok = request.method === 'OPTIONS' || request.method === 'GET_PARAMETER';
    this.#logger.debug({ method: request.method }, 'RTSP request from the camera');
    socket.write(
      serializeResponse(ok ? 200 : 501, ok ? 'OK' : 'Not Implemented', request.headers.get('cseq')),
    );
  }

  /** Sends a request, answering one 401 with credentials. */
  async #request(
    method: string,
    url: string,
    headers: readonly (readonly [string, string])[],
  ): Promise<RtspResponse> {
    this.#throwIfStopping();
    let retried = false;
    for (;;) {
      const response = await this.#send(method, url, headers, this.#timeoutMs);
      if (response.status !== 401) return response;
      const credentials = this.#credentials;
      if (credentials === undefined) {
        throw new MediaError(
          'unauthorized',
          `the camera at ${redactUrl(url)} requires credentials: set SVC_RTSP_USER and SVC_RTSP_PASSWORD`,
        );
      }
      if (retried) {
        throw new MediaError(
          'unauthorized',
          `the camera at ${redactUrl(url)} rejected the credentials (${method} answered 401 twice); ` +
            'check SVC_RTSP_USER and SVC_RTSP_PASSWORD',
        );
      }
      const challenges = parseAuthenticateHeaders(response.headers.getAll('www-authenticate'));
      const auth = RtspAuthenticator.fromChallenges(challenges, credentials);
      if (auth === undefined) {
        const offered = challenges.map((c) => c.scheme).join(', ') || 'none';
        throw new MediaError(
          'unauthorized',
          `the camera at ${redactUrl(url)} asks for authentication this client cannot do (offered: ${sanitizeReason(offered)})`,
        );
      }
      this.#logger.debug({ scheme: auth.scheme, method }, 'RTSP authenticating');
      this.#auth = auth;
      retried = true;
    }
  }

  /** Writes one request and waits for the answer with its CSeq. */
  #send(
    method: string,
    url: string,
    headers: readonly (readonly [string, string])[],
    timeoutMs: number,
  ): Promise<RtspResponse> {
    const socket = this.#socket;
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (socket === undefined)
      return Promise.reject(new MediaError('closed', 'the RTSP session is not connected'));
    const cseq = ++this.#cseq;
    let bytes: Uint8Array;
    try {
      bytes = serializeRequest({
        method,
        uri: url,
        headers: [
          ['CSeq', String(cseq)],
          ['User-Agent', this.#options.userAgent ?? DEFAULT_USER_AGENT],
          ...(this.#session === undefined ? [] : [['Session', this.#session.id] as const]),
          ...(this.#auth === undefined
            ? []
            : [['Authorization', this.#auth.authorization(method, url)] as const]),
          ...headers,
        ],
      });
    } catch (err) {
      return Promise.reject(
        new MediaError(
          'malformed-rtsp',
          `cannot send ${method} to ${redactUrl(url)}: ${redactText(String(err))}`,
          {
            cause: err,
          },
        ),
      );
    }
    this.#logger.debug({ method, url: redactUrl(url), cseq }, 'RTSP request');
    return new Promise<RtspResponse>((resolve, reject) => {
      const timer = this.#scheduler.setTimeout(() => {
        this.#pending.delete(cseq);
        reject(new MediaError('timeout', `no answer to ${method} ${redactUrl(url)} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(cseq, {
        resolve: (response) => {
          this.#logger.debug({ method, cseq, status: response.status }, 'RTSP response');
          resolve(response);
        },
        reject,
        timer,
      });
      socket.write(bytes);
    });
  }

  /** 2xx passes; 404 is `not-found`; anything else is `rtsp-status`. */
  #ensureSuccess(response: RtspResponse, method: string, url: string): void {
    if (response.status >= 200 && response.status < 300) return;
    const reason = sanitizeReason(response.reason);
    if (response.status === 404) {
      throw new MediaError(
        'not-found',
        `no such stream/mount at ${redactUrl(url)} (${method} answered 404 ${reason})`,
      );
    }
    throw new MediaError('rtsp-status', `${method} ${redactUrl(url)} answered ${response.status} ${reason}`);
  }

  #scheduleKeepAlive(): void {
    const session = this.#session;
    if (session === undefined || this.#state !== 'playing') return;
    this.#keepAliveTimer = this.#scheduler.setTimeout(() => {
      this.#keepAliveTimer = undefined;
      this.#keepAlive().catch((err: unknown) => {
        const socket = this.#socket;
        if (socket !== undefined && this.#state === 'playing') this.#fail(socket, this.#toMediaError(err));
      });
    }, keepAliveIntervalMs(session.timeoutS));
  }

  /** GET_PARAMETER when the camera lists it, else OPTIONS (RFC 2326 §10.8, §12.37). */
  async #keepAlive(): Promise<void> {
    const url = this.#aggregateUrl;
    if (this.#state !== 'playing' || url === undefined) return;
    const method = this.#publicMethods.has('GET_PARAMETER') ? 'GET_PARAMETER' : 'OPTIONS';
    const response = await this.#request(method, url, []);
    if (response.status === 454) {
      throw new MediaError(
        'rtsp-status',
        `the camera at ${redactUrl(url)} ended the session (454 ${sanitizeReason(response.reason)})`,
      );
    }
    if (response.status < 200 || response.status >= 300) {
      this.#logger.warn({ method, status: response.status }, 'RTSP keep-alive answered with an error status');
    }
    this.#scheduleKeepAlive();
  }

  #clearKeepAlive(): void {
    if (this.#keepAliveTimer !== undefined) this.#scheduler.clearTimeout(this.#keepAliveTimer);
    this.#keepAliveTimer = undefined;
  }

  /** The connection failed: fail every waiting request, close, and report if playing. */
  #fail(socket: TcpSocket, error: MediaError): void {
    if (socket !== this.#socket || this.#failure !== undefined) return;
    this.#failure = error;
    this.#rejectPending(error);
    this.#clearKeepAlive();
    const wasPlaying = this.#state === 'playing';
    void this.#closeTransport();
    if (wasPlaying) {
      this.#logger.warn({ code: error.code }, `RTSP session failed: ${error.message}`);
      this.#safeCall('onError', () => this.#options.onError?.(error));
    }
  }

  #rejectPending(error: MediaError): void {
    for (const pending of this.#pending.values()) {
      this.#scheduler.clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.#pending.clear();
  }

  /** Closes the connection and UDP sockets; resolves once they are closed. */
  async #closeTransport(): Promise<void> {
    const socket = this.#socket;
    const udp = this.#udp;
    this.#socket = undefined;
    this.#udp = undefined;
    const closing: Promise<void>[] = [];
    if (socket !== undefined) {
      socket.destroy();
      closing.push(this.#socketClosed);
    }
    if (udp !== undefined) {
      for (const s of [udp.rtp, udp.rtcp]) closing.push(new Promise((resolve) => s.close(() => resolve())));
    }
    await Promise.all(closing);
  }

  /** Calls back into the user's code; an exception there is logged, never lost or fatal. */
  #safeCall(name: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.#logger.error({ callback: name }, `RTSP ${name} callback threw: ${redactText(String(err))}`);
    }
  }

  /** Any error as a {@link MediaError} whose message is redacted. */
  #toMediaError(err: unknown): MediaError {
    if (err instanceof MediaError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new MediaError('malformed-rtsp', `RTSP client error: ${redactText(message)}`, { cause: err });
  }
}
