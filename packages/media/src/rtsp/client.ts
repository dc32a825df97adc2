/**
 * One RTSP session with a camera (RFC 2326): OPTIONS, DESCRIBE, SETUP of the video stream, PLAY,
 * keep-alives, TEARDOWN; RTP over the RTSP connection (interleaved) or over UDP. The session's
 * life is one `state` union; the exchange of requests is {@link RtspConnection}'s, the ways RTP
 * travels are in `rtp-transport.ts`.
 */

import {
  assertTransition,
  type Clock,
  type Logger,
  redactUrl,
  safeCall,
  silentLogger,
  systemClock,
  type TimerHandle,
  type TransitionTable,
} from '@svc/runtime';
import { MediaError } from '../errors.js';
import {
  findVideoMedia,
  parseSdp,
  resolveControlUrl,
  type SdpMedia,
  type SessionDescription,
} from '../sdp.js';
import type { RtspCredentials } from './auth.js';
import {
  asMediaError,
  ensureSuccess,
  type HeaderLine,
  RtspConnection,
  sanitizeReason,
} from './connection.js';
import {
  parsePublicHeader,
  parseSessionHeader,
  parseTransportHeader,
  type SessionHeader,
} from './headers.js';
import type { RtspResponse } from './message.js';
import { acceptTransport, isRtp, RtpUdpPair, requestedTransport } from './rtp-transport.js';
import { keepAliveIntervalMs } from './timing.js';
import { parseRtspUrl } from './url.js';

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
  /** Time and timers (answers, keep-alives, `receivedAtMs`); the process's by default. */
  readonly clock?: Clock;
}

/** Options of {@link RtspClient}. */
export interface RtspClientOptions extends RtspOptions {
  /** Every RTP packet of the chosen stream, raw; RTCP never reaches it. */
  readonly onRtp?: (packet: Uint8Array, receivedAtMs: number) => void;
  /**
   * Every RTCP compound packet of the chosen stream, raw (the interleaved RTCP channel, the UDP
   * RTCP port, or RTCP multiplexed with RTP): the camera's sender reports are in it.
   */
  readonly onRtcp?: (packet: Uint8Array, receivedAtMs: number) => void;
  /** The chosen stream, once DESCRIBE is answered and before any of its packets. */
  readonly onDescription?: (media: SdpMedia) => void;
  /** The session failed after `start()` resolved (connection lost, keep-alive failed, garbage). */
  readonly onError?: (error: MediaError) => void;
}

/**
 * Where a {@link RtspClient} is in its life: `failed` once the connection broke (the sockets are
 * closing; `stop()` still has to be called), `closing` while `stop()` runs.
 */
export type RtspClientState = 'idle' | 'starting' | 'playing' | 'failed' | 'closing' | 'closed';

/** Default of {@link RtspOptions.timeoutMs}. */
export const DEFAULT_RTSP_TIMEOUT_MS = 10_000;
/** TEARDOWN on stop waits at most this long: the camera may be gone. */
const TEARDOWN_TIMEOUT_MS = 2000;
/** DESCRIBE follows at most this many redirects. */
const MAX_REDIRECTS = 3;
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 305, 307]);
const DEFAULT_USER_AGENT = 'svc-media';

/** The sockets of a session and what SETUP agreed: closed however the session ends. */
interface Link {
  /** The RTSP connection in use (replaced when DESCRIBE is redirected to another camera). */
  conn: RtspConnection | undefined;
  udp: RtpUdpPair | undefined;
  /** Methods the camera listed in its OPTIONS answer. */
  publicMethods: ReadonlySet<string>;
  /** The interleaved channels of RTP and RTCP (over TCP). */
  rtpChannel: number;
  rtcpChannel: number;
  session: SessionHeader | undefined;
  /** The URL of PLAY, keep-alives and TEARDOWN. */
  aggregateUrl: string | undefined;
}

/** A session that PLAY started: what keep-alives and TEARDOWN need is known. */
interface PlayingLink extends Link {
  conn: RtspConnection;
  session: SessionHeader;
  aggregateUrl: string;
}

/** The life of a {@link RtspClient}; each variant holds what is valid in it. */
type ClientState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'starting'; readonly link: Link }
  | { readonly kind: 'playing'; readonly link: PlayingLink; keepAlive: TimerHandle | undefined }
  | { readonly kind: 'failed'; readonly link: Link; readonly error: MediaError }
  | { readonly kind: 'closing'; readonly error: MediaError; readonly done: Promise<void> }
  | { readonly kind: 'closed'; readonly error: MediaError };

/** The session's life cycle: where each state may go. */
const CLIENT_MOVES: TransitionTable<ClientState['kind']> = {
  idle: ['starting', 'closing'],
  starting: ['playing', 'failed', 'closing'],
  playing: ['failed', 'closing'],
  failed: ['closing'],
  closing: ['closed'],
  closed: [],
};

/** Closes the sockets of `link`, failing what still waits with `reason`. Safe to repeat. */
async function closeLink(link: Link, reason: MediaError): Promise<void> {
  await Promise.all([link.conn?.close(reason), link.udp?.close()]);
}

/** True once `link` has what PLAY, keep-alives and TEARDOWN need. */
function isPlayable(link: Link): link is PlayingLink {
  return link.conn !== undefined && link.session !== undefined && link.aggregateUrl !== undefined;
}

function stoppedError(): MediaError {
  return new MediaError('closed', 'the RTSP session was stopped');
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
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #transport: 'tcp' | 'udp';

  #state: ClientState = { kind: 'idle' };
  #credentials: RtspCredentials | undefined;
  #description: SessionDescription | undefined;
  #media: SdpMedia | undefined;
  #packets = 0;
  #lateEvents = 0;

  /** @param options - Where to connect and where packets go; see {@link RtspClientOptions}. */
  constructor(options: RtspClientOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? systemClock;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_RTSP_TIMEOUT_MS;
    this.#transport = options.transport ?? 'tcp';
  }

  /** Where the session is in its life. */
  get state(): RtspClientState {
    return this.#state.kind;
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
   * Network events that came too late to matter, ignored: packets that arrived while the session
   * was failing or closing, the failure of a connection already replaced or closed.
   */
  get lateEvents(): number {
    return this.#lateEvents;
  }

  /**
   * Runs OPTIONS, DESCRIBE (following redirects), SETUP and PLAY. Resolves with the chosen
   * stream once the camera answered PLAY; packets may already have reached `onRtp`.
   *
   * @throws MediaError with the first failure; the connection is closed by then.
   * @throws TypeError when called more than once, or after `stop()`.
   */
  async start(): Promise<SdpMedia> {
    if (this.#state.kind !== 'idle') {
      throw new TypeError(`RtspClient.start() may be called once, before stop() (state ${this.#state.kind})`);
    }
    const link: Link = {
      conn: undefined,
      udp: undefined,
      publicMethods: new Set(),
      rtpChannel: 0,
      rtcpChannel: 1,
      session: undefined,
      aggregateUrl: undefined,
    };
    this.#transition({ kind: 'starting', link });
    try {
      const media = await this.#negotiate(link);
      this.#checkStarting(link);
      if (!isPlayable(link))
        throw new TypeError('RTSP negotiation ended without a connection, session and URL');
      const playing: ClientState = { kind: 'playing', link, keepAlive: undefined };
      this.#transition(playing);
      this.#scheduleKeepAlive(playing);
      return media;
    } catch (err) {
      const error = asMediaError(err);
      await this.stop();
      // A UDP pair bound while stop() was already running is closed here.
      await closeLink(link, error);
      throw error;
    }
  }

  /**
   * Ends the session: TEARDOWN (best effort, at most 2 s), then closes the connection and the
   * UDP sockets. Resolves when everything is closed. Safe to call at any time and repeatedly.
   */
  stop(): Promise<void> {
    const state = this.#state;
    switch (state.kind) {
      case 'closing':
        return state.done;
      case 'closed':
        return Promise.resolve();
      case 'idle':
      case 'starting':
      case 'playing':
      case 'failed': {
        const error = state.kind === 'failed' ? state.error : stoppedError();
        let finished!: () => void;
        const done = new Promise<void>((resolve) => {
          finished = resolve;
        });
        this.#transition({ kind: 'closing', error, done });
        this.#shutdown(state, error).then(finished, (err: unknown) => {
          this.#logger.error({ err }, 'RTSP session shutdown failed');
          finished();
        });
        return done;
      }
      default: {
        const unreachable: never = state;
        throw new TypeError(`unknown RtspClient state ${String(unreachable)}`);
      }
    }
  }

  /** The one place the state changes; refuses a change CLIENT_MOVES does not allow. */
  #transition(next: ClientState): void {
    assertTransition('RtspClient', CLIENT_MOVES, this.#state.kind, next.kind);
    this.#state = next;
  }

  async #shutdown(previous: ClientState, error: MediaError): Promise<void> {
    if (previous.kind === 'starting' || previous.kind === 'playing') {
      const { link } = previous;
      if (previous.kind === 'playing') this.#clock.clearTimeout(previous.keepAlive);
      if (link.conn !== undefined && link.session !== undefined && link.aggregateUrl !== undefined) {
        const timeoutMs = Math.min(this.#timeoutMs, TEARDOWN_TIMEOUT_MS);
        try {
          await link.conn.send('TEARDOWN', link.aggregateUrl, [], timeoutMs);
        } catch (err) {
          this.#logger.debug(
            { url: redactUrl(link.aggregateUrl), error: asMediaError(err).message },
            'RTSP TEARDOWN got no answer (best effort)',
          );
        }
      }
    }
    if (previous.kind === 'starting' || previous.kind === 'playing' || previous.kind === 'failed') {
      await closeLink(previous.link, error);
    }
    this.#transition({ kind: 'closed', error });
  }

  /**
   * Throws when the session is no longer starting with `link` (stopped or failed meanwhile).
   *
   * @throws MediaError the failure, or `closed`.
   */
  #checkStarting(link: Link): void {
    const state = this.#state;
    if (state.kind === 'starting' && state.link === link) return;
    throw 'error' in state ? state.error : stoppedError();
  }

  /**
   * A request of the negotiation or a keep-alive, on the session's connection.
   *
   * @throws MediaError the session's failure, or `closed` once it is stopping.
   */
  async #request(
    link: Link,
    method: string,
    url: string,
    headers: readonly HeaderLine[],
  ): Promise<RtspResponse> {
    const state = this.#state;
    if (!((state.kind === 'starting' || state.kind === 'playing') && state.link === link)) {
      throw 'error' in state ? state.error : stoppedError();
    }
    const conn = link.conn;
    if (conn === undefined) throw new MediaError('closed', 'the RTSP session is not connected');
    return conn.request(method, url, headers, this.#credentials, this.#timeoutMs);
  }

  /** OPTIONS, DESCRIBE with redirects, SETUP, PLAY. */
  async #negotiate(link: Link): Promise<SdpMedia> {
    const initial = parseRtspUrl(this.#options.url);
    this.#credentials = initial.credentials;
    let requestUrl = initial.url;
    let endpoint = { host: initial.host, port: initial.port };
    await this.#open(link, endpoint.host, endpoint.port);
    await this.#askOptions(link, requestUrl);

    let describe: RtspResponse | undefined;
    for (let redirects = 0; ; redirects++) {
      describe = await this.#request(link, 'DESCRIBE', requestUrl, [['Accept', 'application/sdp']]);
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
        const previous = link.conn;
        link.conn = undefined;
        await previous?.close(new MediaError('closed', 'the RTSP connection was redirected'));
        await this.#open(link, endpoint.host, endpoint.port);
        await this.#askOptions(link, requestUrl);
      }
    }
    ensureSuccess(describe, 'DESCRIBE', requestUrl);

    const description = parseSdp(Buffer.from(describe.body).toString('utf8'));
    const media = findVideoMedia(description);
    const base = this.#baseUrl(describe, requestUrl);
    this.#description = description;
    this.#media = media;
    const aggregateUrl = resolveControlUrl(base, description.control);
    link.aggregateUrl = aggregateUrl;
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
    safeCall(this.#logger, 'onDescription', () => this.#options.onDescription?.(media));

    await this.#setup(link, mediaUrl);
    const play = await this.#request(link, 'PLAY', aggregateUrl, [['Range', 'npt=0.000-']]);
    ensureSuccess(play, 'PLAY', aggregateUrl);
    this.#logger.info(
      {
        url: redactUrl(requestUrl),
        transport: this.#transport,
        encoding: media.encodingName,
        payloadType: media.payloadType,
        sessionTimeoutS: link.session?.timeoutS,
      },
      'RTSP session playing',
    );
    return media;
  }

  /** Connects the RTSP connection of `link`. */
  async #open(link: Link, host: string, port: number): Promise<void> {
    this.#checkStarting(link);
    const conn: RtspConnection = new RtspConnection({
      host,
      port,
      timeoutMs: this.#timeoutMs,
      userAgent: this.#options.userAgent ?? DEFAULT_USER_AGENT,
      clock: this.#clock,
      logger: this.#logger,
      onInterleaved: (channel, payload) => {
        if (channel === link.rtpChannel) this.#deliver(payload);
        else if (channel === link.rtcpChannel) this.#deliverRtcp(payload);
      },
      onFailure: (error) => this.#connectionFailed(conn, error),
    });
    link.conn = conn;
    await conn.connect();
  }

  /** OPTIONS: learns whether GET_PARAMETER works for keep-alives. Failure statuses are tolerated. */
  async #askOptions(link: Link, url: string): Promise<void> {
    const response = await this.#request(link, 'OPTIONS', url, []);
    if (response.status >= 200 && response.status < 300) {
      link.publicMethods = parsePublicHeader(response.headers.get('public'));
    } else {
      link.publicMethods = new Set();
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
  async #setup(link: Link, mediaUrl: string): Promise<void> {
    const conn = link.conn;
    if (conn === undefined) throw new MediaError('closed', 'the RTSP session is not connected');
    if (this.#transport === 'udp') {
      const udp = await RtpUdpPair.bind(
        conn.localAddress,
        conn.remoteAddress,
        {
          onPacket: (packet) => this.#deliver(packet),
          onRtcp: (packet) => this.#deliverRtcp(packet),
          onError: (error) => link.conn?.fail(error),
        },
        this.#logger,
      );
      link.udp = udp;
      this.#checkStarting(link);
    }
    const response = await this.#request(link, 'SETUP', mediaUrl, [
      ['Transport', requestedTransport(link.udp)],
    ]);
    ensureSuccess(response, 'SETUP', mediaUrl);
    const sessionValue = response.headers.get('session');
    if (sessionValue === undefined) {
      throw new MediaError(
        'malformed-rtsp',
        `SETUP ${redactUrl(mediaUrl)} was answered without a Session header`,
      );
    }
    const session = parseSessionHeader(sessionValue);
    link.session = session;
    conn.session = session.id;
    const transportValue = response.headers.get('transport');
    if (transportValue === undefined) {
      throw new MediaError(
        'malformed-rtsp',
        `SETUP ${redactUrl(mediaUrl)} was answered without a Transport header`,
      );
    }
    const channels = acceptTransport(parseTransportHeader(transportValue), link.udp);
    link.rtpChannel = channels.rtp;
    link.rtcpChannel = channels.rtcp;
  }

  /** One RTP (or RTCP) packet from either transport. Runs per packet: allocates nothing. */
  #deliver(packet: Uint8Array): void {
    const kind = this.#state.kind;
    if (kind !== 'starting' && kind !== 'playing') {
      this.#lateEvents++;
      return;
    }
    if (!isRtp(packet)) {
      this.#deliverRtcp(packet);
      return;
    }
    this.#packets++;
    const onRtp = this.#options.onRtp;
    if (onRtp === undefined) return;
    // Not safeCall: a closure per packet is too much on this path.
    try {
      onRtp(packet, this.#clock.now());
    } catch (err) {
      this.#logger.error({ err, listener: 'onRtp' }, 'an RTSP onRtp callback threw; the session carries on');
    }
  }

  /** One RTCP compound packet: handed on as it is (it is parsed, and checked, by the ingest). */
  #deliverRtcp(packet: Uint8Array): void {
    const kind = this.#state.kind;
    const onRtcp = this.#options.onRtcp;
    if ((kind !== 'starting' && kind !== 'playing') || onRtcp === undefined) return;
    try {
      onRtcp(packet, this.#clock.now());
    } catch (err) {
      this.#logger.error(
        { err, listener: 'onRtcp' },
        'an RTSP onRtcp callback threw; the session carries on',
      );
    }
  }

  /** The connection `conn` failed: the session fails with it if it is still the session's. */
  #connectionFailed(conn: RtspConnection, error: MediaError): void {
    const state = this.#state;
    if ((state.kind !== 'starting' && state.kind !== 'playing') || state.link.conn !== conn) {
      this.#lateEvents++;
      return;
    }
    if (state.kind === 'playing') this.#clock.clearTimeout(state.keepAlive);
    this.#transition({ kind: 'failed', link: state.link, error });
    void closeLink(state.link, error);
    if (state.kind === 'playing') {
      this.#logger.warn({ code: error.code }, `RTSP session failed: ${error.message}`);
      safeCall(this.#logger, 'onError', () => this.#options.onError?.(error));
    }
  }

  #scheduleKeepAlive(playing: Extract<ClientState, { kind: 'playing' }>): void {
    if (this.#state !== playing) return;
    playing.keepAlive = this.#clock.setTimeout(() => {
      playing.keepAlive = undefined;
      this.#keepAlive(playing).catch((err: unknown) => {
        if (this.#state === playing) playing.link.conn.fail(asMediaError(err));
      });
    }, keepAliveIntervalMs(playing.link.session.timeoutS));
  }

  /** GET_PARAMETER when the camera lists it, else OPTIONS (RFC 2326 §10.8, §12.37). */
  async #keepAlive(playing: Extract<ClientState, { kind: 'playing' }>): Promise<void> {
    if (this.#state !== playing) return;
    const { link } = playing;
    const method = link.publicMethods.has('GET_PARAMETER') ? 'GET_PARAMETER' : 'OPTIONS';
    const response = await this.#request(link, method, link.aggregateUrl, []);
    if (response.status === 454) {
      throw new MediaError(
        'rtsp-status',
        `the camera at ${redactUrl(link.aggregateUrl)} ended the session (454 ${sanitizeReason(response.reason)})`,
      );
    }
    if (response.status < 200 || response.status >= 300) {
      this.#logger.warn({ method, status: response.status }, 'RTSP keep-alive answered with an error status');
    }
    this.#scheduleKeepAlive(playing);
  }
}
