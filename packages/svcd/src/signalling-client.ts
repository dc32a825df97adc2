/**
 * The daemon's side of signalling v2 (`docs/protocol/signalling.md`): one WebSocket to svc-cloud's
 * `/ws` kept up for the life of the daemon. It proves the robot's Ed25519 key, announces how
 * pilots reach the robot, reports sessions, and hears about sessions the cloud opens or revokes.
 */
import { type Logger, redactText, redactUrl } from '@svc/runtime';
import {
  type DenialReason,
  encodeSignalMessage,
  isWireError,
  MAX_SIGNAL_MESSAGE_BYTES,
  parseSignalServerMessage,
  robotChallengePayload,
  SIGNAL_CLOSE,
  SIGNAL_SUBPROTOCOL,
  type SignalCandidate,
  type SignalChannel,
  type SignalClientMessage,
  type SignalServerMessage,
} from '@svc/wire';
import WebSocket from 'ws';

/** The robot's key as the signalling client needs it (`RobotCredential` of `credential.ts` fits). */
export interface SignallingCredential {
  /** The raw 32-byte Ed25519 public key, base64url without padding. */
  readonly publicKey: string;
  /** An Ed25519 signature (64 bytes) of `bytes`. */
  sign(bytes: Uint8Array): Uint8Array;
}

/** What the robot announces, read afresh for every `announce` (the open sessions are added). */
export interface AnnounceState {
  readonly candidates: readonly SignalCandidate[];
  /** SHA-256 of the current certificate, and of the previous one during a rotation, hex. */
  readonly cert_hashes: readonly string[];
  readonly channels: readonly SignalChannel[];
  readonly max_sessions: number;
  readonly relay: boolean;
}

/** A session open on the robot, as `announce.sessions` and `session-started` carry it. */
export interface SignallingSession {
  readonly session_id: string;
  readonly role: 'driver' | 'observer';
  /** The pilot's subject (`sub` of the pilot session token). */
  readonly sub: string;
}

/** `session-open`: the cloud is about to offer this session to a pilot. */
export type SessionOpenMessage = Extract<SignalServerMessage, { type: 'session-open' }>;
/** `session-revoked`: end the session now and refuse its token's `jti` until it expires. */
export type SessionRevokedMessage = Extract<SignalServerMessage, { type: 'session-revoked' }>;

/**
 * What a {@link SignallingClient} is doing.
 *
 * - `connecting`: opening the WebSocket;
 * - `authenticating`: connected, answering the challenge;
 * - `online`: `auth-ok` received, announced, heartbeating;
 * - `backoff`: the connection failed or was lost; the next attempt is scheduled;
 * - `denied`: the cloud refused this robot (`unknown-robot`, `key-mismatch`, deleted); the next
 *   attempt is 5 minutes away;
 * - `stopped`: `stop()` was called.
 */
export type SignallingState = 'connecting' | 'authenticating' | 'online' | 'backoff' | 'denied' | 'stopped';

/** Extra information with a state change. */
export interface SignallingStateDetail {
  /** With `backoff` and `denied`: when the next attempt starts. */
  readonly retryInMs?: number;
  /** With `backoff` and `denied`: why the connection ended, for people (no secrets). */
  readonly reason?: string;
  /** With `backoff` and `denied`: the WebSocket close code, when there was a close. */
  readonly closeCode?: number;
  /** With `denied`: the reason the cloud gave. */
  readonly denial?: DenialReason;
  /** With `online`: the org the robot is enrolled in, `null` when admitted by open dev enrolment. */
  readonly orgId?: string | null;
}

/** A `setTimeout`-like timer service, injected so tests run the timers without waiting. */
export interface SignallingScheduler {
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Options of {@link SignallingClient}. */
export interface SignallingClientOptions {
  /** `signal_url`: `wss://<host>/ws` (`ws://` for a local development server). */
  readonly url: string;
  /** `robot_id`. */
  readonly robotId: string;
  readonly credential: SignallingCredential;
  readonly logger: Logger;
  /** The current announcement; called on every connect and every re-announce. */
  readonly announce: () => AnnounceState;
  /** The cloud opened a session for a pilot (it will be offered next). */
  readonly onSessionOpen?: (message: SessionOpenMessage) => void;
  /** The cloud revoked a session: end it now and refuse its token's `jti`. */
  readonly onSessionRevoked?: (message: SessionRevokedMessage) => void;
  readonly onStateChange?: (state: SignallingState, detail: SignallingStateDetail) => void;
  /** The configuration file, named in the remedy for an unenrolled robot. */
  readonly configPath?: string;
  /** Uniform draw in [0, 1) for the backoff jitter; `Math.random` by default. */
  readonly random?: () => number;
  /** Timers (retries, heartbeats, handshake timeout); the process's by default. */
  readonly scheduler?: SignallingScheduler;
  /** Monotonic clock in ms; `performance.now()` by default. */
  readonly now?: () => number;
  /** The WebSocket class; `ws` by default. */
  readonly WebSocketImpl?: typeof WebSocket;
  /** How long connecting and authenticating may take. Default {@link SIGNALLING_TIMING}. */
  readonly handshakeTimeoutMs?: number;
}

/** The client's timing policy (the contract's numbers). */
export const SIGNALLING_TIMING = Object.freeze({
  /** Ceiling of the first retry delay; it doubles with each failure. */
  backoffBaseMs: 500,
  /** Largest retry delay. */
  backoffCapMs: 30_000,
  /** A connection that stayed online this long resets the backoff. */
  healthyAfterMs: 60_000,
  /** Retry period after the cloud denied this robot. */
  deniedRetryMs: 5 * 60_000,
  /** Connecting plus authenticating may take this long before the attempt counts as failed. */
  handshakeTimeoutMs: 20_000,
  /** Heartbeat period when `auth-ok` names none (it always does in v2). */
  defaultHeartbeatMs: 15_000,
  /** Periods of silence after which the connection is considered dead. */
  silentPeriods: 3,
});

/** Most candidates one `announce` may carry (the schema's limit). */
const MAX_CANDIDATES = 16;

const systemScheduler: SignallingScheduler = Object.freeze({
  setTimeout: (callback: () => void, delayMs: number): unknown => setTimeout(callback, delayMs),
  clearTimeout: (handle: unknown): void => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/** Robot-level denials: retrying soon cannot help, an operator must act in the console. */
const OPERATOR_DENIALS: ReadonlySet<DenialReason> = new Set([
  'unknown-robot',
  'key-mismatch',
  'robot-deleted',
]);

/**
 * Keeps a robot connected to svc-cloud's signalling endpoint until `stop()`.
 *
 * Every failure leads to another attempt: capped exponential backoff with full jitter (0.5 s
 * doubling to 30 s, reset after a connection that stayed online 60 s), or every 5 minutes when
 * the cloud denied the robot, with the remedy in the log. Nothing here throws at the caller for
 * a remote failure; watch `state` / `onStateChange`.
 */
export class SignallingClient {
  readonly #options: SignallingClientOptions;
  readonly #logger: Logger;
  readonly #scheduler: SignallingScheduler;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #WebSocket: typeof WebSocket;
  readonly #redactedUrl: string;
  /** Sessions open on the robot, in the order they started. */
  readonly #sessions = new Map<string, SignallingSession>();

  #state: SignallingState | undefined;
  #ws: WebSocket | undefined;
  #attempt = 0;
  #retryTimer: unknown;
  #handshakeTimer: unknown;
  #heartbeatTimer: unknown;
  #heartbeatMs: number = SIGNALLING_TIMING.defaultHeartbeatMs;
  #onlineAt: number | undefined;
  #lastHeardAt = 0;
  /**
   * The last announce sent on this connection without its sessions (those travel as
   * `session-started`/`session-ended`), to notice other changes at heartbeats.
   */
  #lastAnnounce: string | undefined;
  /** The last announce failure logged, so a persistent one is logged once. */
  #announceError: string | undefined;
  #stopping: Promise<void> | undefined;

  /** @param options - Endpoint, identity, callbacks and injected time; see {@link SignallingClientOptions}. */
  constructor(options: SignallingClientOptions) {
    this.#options = options;
    this.#logger = options.logger;
    this.#scheduler = options.scheduler ?? systemScheduler;
    this.#now = options.now ?? (() => performance.now());
    this.#random = options.random ?? Math.random;
    this.#WebSocket = options.WebSocketImpl ?? WebSocket;
    this.#redactedUrl = redactUrl(options.url);
  }

  /** The current state; undefined before `start()`. */
  get state(): SignallingState | undefined {
    return this.#state;
  }

  /** The sessions open on the robot as the next `announce` will list them. */
  get sessions(): SignallingSession[] {
    return [...this.#sessions.values()];
  }

  /**
   * Starts connecting. Failures never throw: they show as `backoff` or `denied` states.
   *
   * @throws TypeError when called twice.
   */
  start(): void {
    if (this.#state !== undefined) throw new TypeError('SignallingClient.start() may be called once');
    this.#connect();
  }

  /** Closes the connection (1000) and stops reconnecting; resolves once the socket is closed. */
  stop(): Promise<void> {
    this.#stopping ??= this.#shutdown();
    return this.#stopping;
  }

  /**
   * Sends a fresh `announce` now when online (call it when candidates, certificate hashes or
   * channels change). Offline, the next connection announces anyway. Changes are also noticed
   * at each heartbeat, so a forgotten call only delays the update.
   */
  reannounce(): void {
    if (this.#state === 'online') this.#sendAnnounce();
  }

  /**
   * Reports a session that began on the robot. Sent now when online; otherwise the next
   * `announce` lists it.
   *
   * @throws TypeError when the session breaks the schema (an empty id, a role that is not one).
   */
  sessionStarted(session: SignallingSession): void {
    const entry: SignallingSession = { session_id: session.session_id, role: session.role, sub: session.sub };
    const text = encodeSignalMessage({ type: 'session-started', ...entry });
    this.#sessions.set(entry.session_id, entry);
    if (this.#state === 'online') this.#sendText(text);
  }

  /**
   * Reports a session that ended on the robot. Sent now when online; offline, the next
   * `announce` omits it. An id never reported through {@link sessionStarted} is ignored.
   */
  sessionEnded(sessionId: string): void {
    const known = this.#sessions.delete(sessionId);
    if (this.#state === 'online' && known) this.#send({ type: 'session-ended', session_id: sessionId });
  }

  async #shutdown(): Promise<void> {
    this.#clearTimers();
    clearTimer(this.#scheduler, this.#retryTimer);
    this.#retryTimer = undefined;
    const ws = this.#ws;
    this.#ws = undefined;
    this.#state = 'stopped';
    if (ws !== undefined && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(1000, 'robot stopping');
      });
    }
    this.#emitState('stopped', {});
  }

  #connect(): void {
    if (this.#stopping !== undefined) return;
    this.#setState('connecting', {});
    let ws: WebSocket;
    try {
      ws = new this.#WebSocket(this.#options.url, [SIGNAL_SUBPROTOCOL], {
        maxPayload: MAX_SIGNAL_MESSAGE_BYTES,
        perMessageDeflate: false,
      });
    } catch (err) {
      // A URL the WebSocket class refuses outright: retrying cannot fix it, but keep the daemon up.
      this.#logger.error(
        { url: this.#redactedUrl },
        `cannot open the signalling connection: ${describeError(err)}`,
      );
      this.#retry({ reason: describeError(err) });
      return;
    }
    this.#ws = ws;
    this.#handshakeTimer = this.#scheduler.setTimeout(() => {
      this.#handshakeTimer = undefined;
      if (this.#ws !== ws) return;
      this.#logger.warn({ url: this.#redactedUrl }, 'signalling handshake timed out; reconnecting');
      this.#drop(ws, { reason: 'handshake timed out', dead: true });
    }, this.#options.handshakeTimeoutMs ?? SIGNALLING_TIMING.handshakeTimeoutMs);

    ws.on('open', () => {
      if (this.#ws !== ws) return;
      this.#lastHeardAt = this.#now();
      this.#setState('authenticating', {});
    });
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
      if (this.#ws !== ws) return;
      this.#lastHeardAt = this.#now();
      if (isBinary) {
        this.#logger.warn(
          {},
          'signalling: ignored a binary message from the cloud (the protocol is text only)',
        );
        return;
      }
      this.#handleText(ws, rawText(data));
    });
    ws.on('error', (err: Error) => {
      if (this.#ws !== ws) return;
      this.#logger.warn({ url: this.#redactedUrl }, `signalling connection error: ${describeError(err)}`);
    });
    ws.on('close', (code: number, reason: Buffer) => {
      if (this.#ws !== ws) return;
      this.#connectionEnded(code, reason.toString('utf8'));
    });
  }

  #handleText(ws: WebSocket, text: string): void {
    const message = parseSignalServerMessage(text);
    if (isWireError(message)) {
      this.#logger.warn(
        { code: message.code },
        `signalling: skipped a message from the cloud: ${message.message}`,
      );
      return;
    }
    switch (message.type) {
      case 'challenge':
        this.#answerChallenge(message.nonce);
        return;
      case 'auth-ok':
        this.#authenticated(ws, message);
        return;
      case 'denied':
        this.#denied(ws, message);
        return;
      case 'heartbeat-ack':
        return;
      case 'session-open':
        if (!this.#expectOnline(message.type)) return;
        this.#safeCall('onSessionOpen', () => this.#options.onSessionOpen?.(message));
        return;
      case 'session-revoked':
        if (!this.#expectOnline(message.type)) return;
        this.#safeCall('onSessionRevoked', () => this.#options.onSessionRevoked?.(message));
        return;
      case 'error':
        this.#logger.warn(
          { code: message.code },
          `signalling: the cloud reported an error: ${redactText(message.message)}`,
        );
        return;
      case 'offer':
      case 'robot-offline':
        this.#logger.warn({ type: message.type }, 'signalling: skipped a pilot message sent to this robot');
        return;
      default: {
        const unexpected: never = message;
        this.#logger.warn({ message: String(unexpected) }, 'signalling: skipped an unknown message');
      }
    }
  }

  #answerChallenge(nonce: string): void {
    if (this.#state !== 'authenticating') {
      this.#logger.warn({ state: this.#state }, 'signalling: skipped a challenge that came out of order');
      return;
    }
    let sig: string;
    try {
      sig = base64url(this.#options.credential.sign(robotChallengePayload(nonce, this.#options.robotId)));
    } catch (err) {
      // The error of a signer may quote its input; name only its class.
      this.#logger.error({}, `cannot sign the signalling challenge with the robot key (${errorName(err)})`);
      this.#drop(this.#ws, { reason: 'cannot sign the challenge' });
      return;
    }
    this.#send({
      type: 'auth',
      v: 2,
      robot_id: this.#options.robotId,
      public_key: this.#options.credential.publicKey,
      sig,
    });
  }

  #authenticated(ws: WebSocket, message: Extract<SignalServerMessage, { type: 'auth-ok' }>): void {
    if (this.#state !== 'authenticating') {
      this.#logger.warn({ state: this.#state }, 'signalling: skipped an auth-ok that came out of order');
      return;
    }
    if (message.role !== 'robot' || message.robot_id !== this.#options.robotId) {
      this.#logger.error(
        { role: message.role, robot_id: message.robot_id },
        `signalling: the cloud accepted this connection as ${message.role} "${message.robot_id}", not as robot "${this.#options.robotId}"; reconnecting`,
      );
      this.#drop(ws, { reason: 'auth-ok for another identity' });
      return;
    }
    clearTimer(this.#scheduler, this.#handshakeTimer);
    this.#handshakeTimer = undefined;
    this.#heartbeatMs = message.heartbeat_ms;
    this.#onlineAt = this.#now();
    this.#lastHeardAt = this.#onlineAt;
    this.#lastAnnounce = undefined;
    const orgId = message.org_id ?? null;
    this.#logger.info(
      { url: this.#redactedUrl, robot_id: this.#options.robotId, org_id: orgId },
      orgId === null
        ? 'signalling online (admitted by open dev enrolment: the robot belongs to no org)'
        : 'signalling online',
    );
    this.#setState('online', { orgId });
    this.#sendAnnounce();
    this.#scheduleHeartbeat(ws);
  }

  #denied(ws: WebSocket, message: Extract<SignalServerMessage, { type: 'denied' }>): void {
    const robotId = this.#options.robotId;
    const remedy = remedyFor(message.reason, robotId, this.#options.configPath);
    this.#logger.error(
      { reason: message.reason, robot_id: robotId, server_message: redactText(message.message) },
      remedy,
    );
    this.#drop(ws, {
      reason: `denied: ${message.reason}`,
      ...(OPERATOR_DENIALS.has(message.reason) ? { denial: message.reason } : {}),
    });
  }

  #expectOnline(type: string): boolean {
    if (this.#state === 'online') return true;
    this.#logger.warn({ type, state: this.#state }, 'signalling: skipped a message that came before auth-ok');
    return false;
  }

  #scheduleHeartbeat(ws: WebSocket): void {
    this.#heartbeatTimer = this.#scheduler.setTimeout(() => {
      this.#heartbeatTimer = undefined;
      if (this.#ws !== ws || this.#state !== 'online') return;
      const silentMs = this.#now() - this.#lastHeardAt;
      const limitMs = SIGNALLING_TIMING.silentPeriods * this.#heartbeatMs;
      if (silentMs >= limitMs) {
        this.#logger.warn(
          { url: this.#redactedUrl, silent_ms: Math.round(silentMs) },
          'signalling: nothing heard from the cloud for three heartbeat periods; reconnecting',
        );
        this.#drop(ws, { reason: 'heartbeat timeout', dead: true });
        return;
      }
      this.#send({ type: 'heartbeat' });
      // A change nobody re-announced (a new address from DHCP) goes out now.
      this.#sendAnnounce({ onlyIfChanged: true });
      this.#scheduleHeartbeat(ws);
    }, this.#heartbeatMs);
  }

  #sendAnnounce(options: { onlyIfChanged?: boolean } = {}): void {
    let state: AnnounceState;
    try {
      state = this.#options.announce();
    } catch (err) {
      this.#announceFailed(`cannot build the signalling announce: ${describeError(err)}`);
      return;
    }
    let candidates = state.candidates;
    if (candidates.length > MAX_CANDIDATES) {
      if (!options.onlyIfChanged) {
        this.#logger.warn(
          { found: candidates.length },
          `more than ${MAX_CANDIDATES} candidates; announcing the first ${MAX_CANDIDATES}`,
        );
      }
      candidates = candidates.slice(0, MAX_CANDIDATES);
    }
    const message: SignalClientMessage = {
      type: 'announce',
      candidates: [...candidates],
      cert_hashes: [...state.cert_hashes],
      channels: [...state.channels],
      max_sessions: state.max_sessions,
      relay: state.relay,
      sessions: this.sessions,
    };
    let text: string;
    try {
      text = encodeSignalMessage(message);
    } catch (err) {
      this.#announceFailed(`cannot announce this robot: ${describeError(err)}`);
      return;
    }
    this.#announceError = undefined;
    const key = JSON.stringify({ ...message, sessions: [] });
    if (options.onlyIfChanged && key === this.#lastAnnounce) return;
    this.#lastAnnounce = key;
    this.#sendText(text);
  }

  /** Logs a failed announce once, not at every heartbeat that tries again. */
  #announceFailed(text: string): void {
    if (this.#announceError !== text) this.#logger.error({}, text);
    this.#announceError = text;
  }

  #send(message: SignalClientMessage): void {
    this.#sendText(encodeSignalMessage(message));
  }

  #sendText(text: string): void {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
    ws.send(text, (err) => {
      if (err) this.#logger.debug({}, `signalling send failed: ${describeError(err)}`);
    });
  }

  /** Ends the connection from this side (no close event will be handled) and schedules the next attempt. */
  #drop(ws: WebSocket | undefined, detail: { reason: string; denial?: DenialReason; dead?: boolean }): void {
    if (ws === undefined || this.#ws !== ws) return;
    this.#ws = undefined;
    ws.removeAllListeners();
    ws.on('error', () => {});
    // A connection that went silent gets no closing handshake: its peer may never answer one.
    if (ws.readyState === WebSocket.OPEN && detail.dead !== true) ws.close(1000, 'reconnecting');
    else ws.terminate();
    this.#connectionEnded(undefined, detail.reason, detail.denial);
  }

  #connectionEnded(code: number | undefined, reasonText: string, denial?: DenialReason): void {
    const wasOnlineFor = this.#onlineAt === undefined ? 0 : this.#now() - this.#onlineAt;
    // A connection that never opened was already explained by its `error` event.
    const opened = this.#state !== 'connecting';
    this.#ws = undefined;
    this.#onlineAt = undefined;
    this.#clearTimers();
    if (this.#stopping !== undefined) return;
    if (wasOnlineFor >= SIGNALLING_TIMING.healthyAfterMs) this.#attempt = 0;
    const reason = reasonText === '' ? closeMeaning(code) : reasonText;
    if (code === SIGNAL_CLOSE.replaced) {
      this.#logger.warn(
        { robot_id: this.#options.robotId },
        `another connection for robot "${this.#options.robotId}" replaced this one (4409): two daemons share this robot id`,
      );
    } else if (code !== undefined && code !== SIGNAL_CLOSE.denied && (opened || code !== 1006)) {
      this.#logger.warn({ url: this.#redactedUrl, code, reason }, 'signalling connection closed');
    }
    if (denial !== undefined || code === SIGNAL_CLOSE.denied) {
      if (denial === undefined) {
        this.#logger.error({ robot_id: this.#options.robotId }, 'the cloud denied this robot (4403)');
      }
      this.#attempt = 0;
      const retryInMs = SIGNALLING_TIMING.deniedRetryMs;
      this.#logger.info({ retry_in_ms: retryInMs }, 'signalling: trying again in 5 minutes');
      this.#scheduleRetry('denied', retryInMs, {
        reason,
        ...(code === undefined ? {} : { closeCode: code }),
        ...(denial === undefined ? {} : { denial }),
      });
      return;
    }
    this.#retry({ reason, ...(code === undefined ? {} : { closeCode: code }) });
  }

  #retry(detail: { reason: string; closeCode?: number }): void {
    const retryInMs = signallingBackoffMs(this.#attempt, this.#random);
    this.#attempt += 1;
    this.#scheduleRetry('backoff', retryInMs, detail);
  }

  #scheduleRetry(
    state: 'backoff' | 'denied',
    retryInMs: number,
    detail: { reason: string; closeCode?: number; denial?: DenialReason },
  ): void {
    clearTimer(this.#scheduler, this.#retryTimer);
    this.#setState(state, { ...detail, retryInMs });
    this.#retryTimer = this.#scheduler.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#connect();
    }, retryInMs);
  }

  #clearTimers(): void {
    clearTimer(this.#scheduler, this.#handshakeTimer);
    clearTimer(this.#scheduler, this.#heartbeatTimer);
    this.#handshakeTimer = undefined;
    this.#heartbeatTimer = undefined;
  }

  #setState(state: SignallingState, detail: SignallingStateDetail): void {
    if (this.#stopping !== undefined) return;
    this.#state = state;
    this.#emitState(state, detail);
  }

  #emitState(state: SignallingState, detail: SignallingStateDetail): void {
    this.#safeCall('onStateChange', () => this.#options.onStateChange?.(state, detail));
  }

  /** Calls back into the daemon's code; an exception there is logged, never lost or fatal. */
  #safeCall(name: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.#logger.error({ callback: name }, `signalling ${name} callback threw: ${describeError(err)}`);
    }
  }
}

/**
 * Delay before retry number `attempt` (0 for the first): full jitter, a uniform draw in
 * `[0, min(30 s, 0.5 s * 2^attempt))`, so robots that lost the same cloud node do not return
 * in lockstep.
 */
export function signallingBackoffMs(attempt: number, random: () => number): number {
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), 40);
  const ceiling = Math.min(SIGNALLING_TIMING.backoffCapMs, SIGNALLING_TIMING.backoffBaseMs * 2 ** exponent);
  const draw = Math.min(Math.max(random(), 0), 1);
  return Math.min(Math.floor(draw * ceiling), ceiling - 1);
}

/** What the operator should do about a denial, as logged. */
export function remedyFor(reason: DenialReason, robotId: string, configPath?: string): string {
  switch (reason) {
    case 'unknown-robot':
      return (
        'this robot is not enrolled: create an enrolment token in the console and run ' +
        `\`svcd --config ${configPath ?? '<path>'} enrol --token <T>\`, or set SVC_ENROLMENT_TOKEN`
      );
    case 'key-mismatch':
      return `robot ${robotId} is enrolled with another key: delete the robot in the console and enrol again`;
    case 'robot-deleted':
      return `robot ${robotId} was deleted in the console: create an enrolment token and enrol again`;
    case 'bad-signature':
      return `the cloud could not verify robot ${robotId}'s signature; check the credential file, reconnecting`;
    case 'bad-token':
    case 'forbidden':
      return `the cloud refused robot ${robotId} (${reason}); reconnecting`;
    default: {
      const unknown: never = reason;
      return `the cloud denied robot ${robotId} (${String(unknown)})`;
    }
  }
}

function closeMeaning(code: number | undefined): string {
  switch (code) {
    case undefined:
      return 'connection lost';
    case 1000:
      return 'closed by the cloud';
    case 1001:
      return 'the cloud is shutting down';
    case 1006:
      return 'connection lost';
    case 1009:
      return 'message too large';
    case SIGNAL_CLOSE.protocolError:
      return 'protocol error';
    case SIGNAL_CLOSE.unauthenticated:
      return 'signature did not verify';
    case SIGNAL_CLOSE.denied:
      return 'denied';
    case SIGNAL_CLOSE.timeout:
      return 'timed out';
    case SIGNAL_CLOSE.replaced:
      return 'replaced by another connection of this robot';
    case SIGNAL_CLOSE.rateLimited:
      return 'over the rate limit';
    default:
      return `closed (${code})`;
  }
}

function clearTimer(scheduler: SignallingScheduler, handle: unknown): void {
  if (handle !== undefined) scheduler.clearTimeout(handle);
}

function rawText(data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

function describeError(err: unknown): string {
  return redactText(err instanceof Error ? err.message : String(err));
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
