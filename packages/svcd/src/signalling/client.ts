/**
 * The daemon's side of signalling v2 (`docs/protocol/signalling.md`): one WebSocket to svc-cloud's
 * `/ws` kept up for the life of the daemon. It proves the robot's Ed25519 key, announces how
 * pilots reach the robot, reports sessions, and hears about sessions the cloud opens or revokes.
 */
import {
  assertTransition,
  Backoff,
  type Clock,
  type Logger,
  RECONNECT_BACKOFF,
  redactText,
  redactUrl,
  safeCall,
  systemClock,
  type TimerHandle,
} from '@svc/runtime';
import {
  type DenialReason,
  encodeSignalMessage,
  isWireError,
  MAX_SIGNAL_MESSAGE_BYTES,
  parseSignalServerMessage,
  robotChallengePayload,
  type SessionBackend,
  SIGNAL_CLOSE,
  SIGNAL_SUBPROTOCOL,
  type SignalClientMessage,
  type SignalServerMessage,
} from '@svc/wire';
import WebSocket from 'ws';
import { AnnounceBuilder, type AnnounceState, type SignallingSession } from './announce.js';
import { closeMeaning, describeError, errorName, OPERATOR_DENIALS, remedyFor } from './remedies.js';
import {
  type ConnectionEnd,
  type ConnectionState,
  publicState,
  SIGNALLING_MOVES,
  type SignallingState,
  socketOf,
  timerOf,
} from './state.js';

/** The robot's key as the signalling client needs it (`RobotCredential` of `credential.ts` fits). */
export interface SignallingCredential {
  /** The raw 32-byte Ed25519 public key, base64url without padding. */
  readonly publicKey: string;
  /** An Ed25519 signature (64 bytes) of `bytes`. */
  sign(bytes: Uint8Array): Uint8Array;
}

/** `session-open`: the cloud is about to offer this session to a pilot. */
export type SessionOpenMessage = Extract<SignalServerMessage, { type: 'session-open' }>;
/** `session-revoked`: end the session now and refuse its token's `jti` until it expires. */
export type SessionRevokedMessage = Extract<SignalServerMessage, { type: 'session-revoked' }>;
/** The cloud's `session-role`: the driver slot moved (handover, takeover, release). */
export type SessionRoleMessage = Extract<SignalServerMessage, { type: 'session-role' }>;

/** The cloud's `relay-open`: a pilot is coming through the relay; attach the QUIC port to it. */
export type RelayOpenMessage = Extract<SignalServerMessage, { type: 'relay-open' }>;
/** A pilot's WebRTC offer for one of the robot's sessions. */
export type RtcSessionMessage = Extract<SignalServerMessage, { type: 'rtc-session' }>;
/** A pilot's trickled ICE candidate. */
export type RtcCandidateMessage = Extract<SignalServerMessage, { type: 'rtc-candidate' }>;
/** What the robot tells a WebRTC session's pilot through svc-cloud. */
export type RtcReply = Extract<SignalClientMessage, { type: 'rtc-answer' | 'rtc-candidate' | 'rtc-failed' }>;

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
  /** The cloud moved the driver slot: the session's role is now the one given. */
  readonly onSessionRole?: (message: SessionRoleMessage) => void;
  /** A pilot comes through the cloud's relay: attach the QUIC port to the port named. */
  readonly onRelayOpen?: (message: RelayOpenMessage) => void;
  /**
   * A pilot's WebRTC offer (`docs/protocol/webrtc.md`); answer with {@link SignallingClient.rtc}.
   * Without it the robot answers `rtc-failed`.
   */
  readonly onRtcSession?: (message: RtcSessionMessage) => void;
  /** A WebRTC session's pilot trickled an ICE candidate. */
  readonly onRtcCandidate?: (message: RtcCandidateMessage) => void;
  /** Every change of {@link SignallingClient.state}. */
  readonly onStateChange?: (state: SignallingState) => void;
  /** The configuration file, named in the remedy for an unenrolled robot. */
  readonly configPath?: string;
  /** Uniform draw in [0, 1) for the backoff jitter; `Math.random` by default. */
  readonly random?: () => number;
  /** Time and timers (retries, heartbeats, handshake timeout); `systemClock` by default. */
  readonly clock?: Clock;
  /** The WebSocket class; `ws` by default. */
  readonly WebSocketImpl?: typeof WebSocket;
  /** How long connecting and authenticating may take. Default {@link SIGNALLING_TIMING}. */
  readonly handshakeTimeoutMs?: number;
}

/**
 * The client's timing policy (the contract's numbers). Reconnections wait a full-jitter backoff
 * of `RECONNECT_BACKOFF` (`@svc/runtime`: 0.5 s doubling up to 30 s).
 */
export const SIGNALLING_TIMING = Object.freeze({
  /** A connection that stayed online this long resets the backoff. */
  healthyAfterMs: 60_000,
  /** Retry period after the cloud denied this robot. */
  deniedRetryMs: 5 * 60_000,
  /** Connecting plus authenticating may take this long before the attempt counts as failed. */
  handshakeTimeoutMs: 20_000,
  /** Periods of silence after which the connection is considered dead. */
  silentPeriods: 3,
});

/** Messages the client ignored: late (from a connection it already left) or out of protocol order. */
export interface SignallingIgnored {
  /** Messages from a connection the client had already dropped. */
  readonly late: number;
  /** Messages that made no sense in the state they arrived in (a challenge while online, ...). */
  readonly outOfOrder: number;
}

/**
 * Keeps a robot connected to svc-cloud's signalling endpoint until `stop()`.
 *
 * Every failure leads to another attempt: capped exponential backoff with full jitter (0.5 s
 * doubling to 30 s, reset after a connection that stayed online 60 s), or every 5 minutes when
 * the cloud denied the robot, with the remedy in the log. Nothing here throws at the caller for
 * a remote failure; watch `state` / `onStateChange`. The state moves only through one method,
 * which refuses a transition the life cycle does not have.
 */
export class SignallingClient {
  readonly #options: SignallingClientOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #backoff: Backoff;
  readonly #WebSocket: typeof WebSocket;
  readonly #redactedUrl: string;
  readonly #announcer: AnnounceBuilder;
  /** Sessions open on the robot, in the order they started. */
  readonly #sessions = new Map<string, SignallingSession>();
  #state: ConnectionState = { kind: 'idle' };
  #view: SignallingState = { kind: 'idle' };
  /** Sockets the client has stopped listening to. */
  readonly #detached = new WeakSet<WebSocket>();
  #late = 0;
  #outOfOrder = 0;
  #stopping: Promise<void> | undefined;

  /** @param options - Endpoint, identity, callbacks and injected time; see {@link SignallingClientOptions}. */
  constructor(options: SignallingClientOptions) {
    this.#options = options;
    this.#logger = options.logger;
    this.#clock = options.clock ?? systemClock;
    this.#backoff = new Backoff(RECONNECT_BACKOFF, options.random ?? Math.random);
    this.#WebSocket = options.WebSocketImpl ?? WebSocket;
    this.#redactedUrl = redactUrl(options.url);
    this.#announcer = new AnnounceBuilder(options.announce, options.logger);
  }

  /** The current state (`idle` before `start()`). */
  get state(): SignallingState {
    return this.#view;
  }

  /** Messages ignored so far, late or out of order. */
  get ignored(): SignallingIgnored {
    return { late: this.#late, outOfOrder: this.#outOfOrder };
  }

  /** The sessions open on the robot as the next `announce` will list them. */
  get sessions(): SignallingSession[] {
    return [...this.#sessions.values()];
  }

  /**
   * Starts connecting. Failures never throw: they show as `backoff` or `denied` states.
   *
   * @throws {TypeError} when called twice, or after `stop()`.
   */
  start(): void {
    if (this.#state.kind !== 'idle') {
      throw new TypeError(`SignallingClient.start() may be called once (the client is ${this.#state.kind})`);
    }
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
   *
   * @throws {TypeError} after `stop()`.
   */
  reannounce(): void {
    this.#refuseStopped('reannounce');
    if (this.#state.kind === 'online') this.#sendAnnounce(this.#state, false);
  }

  /**
   * Reports a session that began on the robot. Sent now when online; otherwise the next
   * `announce` lists it.
   *
   * @throws {TypeError} when the session breaks the schema (an empty id, a role that is not one),
   *   or after `stop()`.
   */
  sessionStarted(
    session: SignallingSession & { readonly path?: 'direct' | 'relay'; readonly backend?: SessionBackend },
  ): void {
    this.#refuseStopped('sessionStarted');
    const entry: SignallingSession = { session_id: session.session_id, role: session.role, sub: session.sub };
    const text = encodeSignalMessage({
      type: 'session-started',
      ...entry,
      ...(session.path === undefined ? {} : { path: session.path }),
      ...(session.backend === undefined ? {} : { backend: session.backend }),
    });
    this.#sessions.set(entry.session_id, entry);
    if (this.#state.kind === 'online') this.#sendText(this.#state.ws, text);
  }

  /** Tells a WebRTC session's pilot the answer, a candidate, or why not; dropped while offline. */
  rtc(message: RtcReply): void {
    this.#refuseStopped('rtc');
    if (this.#state.kind === 'online') this.#send(this.#state.ws, message);
  }

  /** Reports that a session's packets travel another way now (the pilot moved off the relay). */
  sessionPath(sessionId: string, path: 'direct' | 'relay'): void {
    this.#refuseStopped('sessionPath');
    if (this.#state.kind === 'online' && this.#sessions.has(sessionId)) {
      this.#send(this.#state.ws, { type: 'session-path', session_id: sessionId, path });
    }
  }

  /**
   * Reports a session that ended on the robot. Sent now when online; offline, the next
   * `announce` omits it. An id never reported through {@link sessionStarted} is ignored.
   *
   * @throws {TypeError} after `stop()`.
   */
  sessionEnded(sessionId: string): void {
    this.#refuseStopped('sessionEnded');
    const known = this.#sessions.delete(sessionId);
    if (this.#state.kind === 'online' && known) {
      this.#send(this.#state.ws, { type: 'session-ended', session_id: sessionId });
    }
  }

  #refuseStopped(method: string): void {
    if (this.#stopping !== undefined) {
      throw new TypeError(`SignallingClient.${method}() after stop(): the client no longer reports anything`);
    }
  }

  /**
   * The one place the state changes: checks the move ({@link SIGNALLING_MOVES}),
   * releases what the old state held and the new one does not (its timer, its socket's
   * listeners), and tells the daemon.
   *
   * @throws {TypeError} on a move the life cycle does not have (a bug in this class).
   */
  #transition(next: ConnectionState): void {
    const previous = this.#state;
    assertTransition('SignallingClient', SIGNALLING_MOVES, previous.kind, next.kind);
    this.#state = next;
    const timer = timerOf(previous);
    if (timer !== undefined && timer !== timerOf(next)) this.#clock.clearTimeout(timer);
    const ws = socketOf(previous);
    if (ws !== undefined && ws !== socketOf(next)) this.#detach(ws);
    switch (next.kind) {
      case 'idle':
      case 'connecting':
      case 'authenticating':
      case 'online':
      case 'backoff':
      case 'stopped':
        break;
      case 'denied':
        // The next attempt after an operator's fix starts from the shortest delay.
        this.#backoff.reset();
        break;
      default: {
        const unknown: never = next;
        throw new TypeError(`unknown signalling state ${String(unknown)}`);
      }
    }
    this.#view = publicState(next);
    const view = this.#view;
    safeCall(this.#logger, 'onStateChange', () => this.#options.onStateChange?.(view));
  }

  async #shutdown(): Promise<void> {
    const ws = socketOf(this.#state);
    this.#transition({ kind: 'stopped' });
    if (ws !== undefined && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(1000, 'robot stopping');
      });
    }
  }

  #connect(): void {
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
    const handshakeTimer = this.#clock.setTimeout(
      () => this.#handshakeTimedOut(ws),
      this.#options.handshakeTimeoutMs ?? SIGNALLING_TIMING.handshakeTimeoutMs,
    );
    this.#attach(ws);
    this.#transition({ kind: 'connecting', ws, handshakeTimer });
  }

  #attach(ws: WebSocket): void {
    ws.on('open', () => {
      const state = this.#state;
      if (socketOf(state) !== ws || state.kind !== 'connecting') return;
      this.#transition({ kind: 'authenticating', ws, handshakeTimer: state.handshakeTimer });
    });
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
      const state = this.#state;
      if (socketOf(state) !== ws) {
        this.#late++;
        return;
      }
      if (state.kind === 'online') state.lastHeardAt = this.#clock.now();
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
      if (socketOf(this.#state) !== ws) return;
      this.#logger.warn({ url: this.#redactedUrl }, `signalling connection error: ${describeError(err)}`);
    });
    ws.on('close', (code: number, reason: Buffer) => {
      if (socketOf(this.#state) !== ws) return;
      this.#connectionEnded(code, reason.toString('utf8'));
    });
  }

  /** Stops listening to a socket the client left; what it still delivers is counted as late. */
  #detach(ws: WebSocket): void {
    if (this.#detached.has(ws)) return;
    this.#detached.add(ws);
    ws.removeAllListeners();
    ws.on('error', () => {});
    ws.on('message', () => {
      this.#late++;
    });
  }

  #handshakeTimedOut(ws: WebSocket): void {
    const state = this.#state;
    if (socketOf(state) !== ws || state.kind === 'online') return;
    this.#logger.warn({ url: this.#redactedUrl }, 'signalling handshake timed out; reconnecting');
    this.#drop(ws, { reason: 'handshake timed out', dead: true });
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
        this.#answerChallenge(ws, message.nonce);
        return;
      case 'auth-ok':
        this.#authenticated(ws, message);
        return;
      case 'denied':
        this.#denied(ws, message);
        return;
      case 'heartbeat-ack':
        return;
      case 'session-open': {
        const { onSessionOpen } = this.#options;
        if (this.#expectOnline(message.type) && onSessionOpen !== undefined) {
          safeCall(this.#logger, 'onSessionOpen', () => onSessionOpen(message));
        }
        return;
      }
      case 'session-revoked': {
        const { onSessionRevoked } = this.#options;
        if (this.#expectOnline(message.type) && onSessionRevoked !== undefined) {
          safeCall(this.#logger, 'onSessionRevoked', () => onSessionRevoked(message));
        }
        return;
      }
      case 'session-role': {
        const { onSessionRole } = this.#options;
        if (this.#expectOnline(message.type) && onSessionRole !== undefined) {
          safeCall(this.#logger, 'onSessionRole', () => onSessionRole(message));
        }
        return;
      }
      case 'relay-open': {
        const { onRelayOpen } = this.#options;
        if (this.#expectOnline(message.type) && onRelayOpen !== undefined) {
          safeCall(this.#logger, 'onRelayOpen', () => onRelayOpen(message));
        }
        return;
      }
      case 'rtc-session': {
        const { onRtcSession } = this.#options;
        if (!this.#expectOnline(message.type)) return;
        if (onRtcSession === undefined) {
          // Not announced as a backend, so svc-cloud should not send this: say so to the pilot
          // rather than leave it waiting.
          this.rtc({
            type: 'rtc-failed',
            session_id: message.session_id,
            message: 'this robot does not serve sessions on WebRTC; connect with WebTransport',
          });
        } else safeCall(this.#logger, 'onRtcSession', () => onRtcSession(message));
        return;
      }
      case 'rtc-candidate': {
        const { onRtcCandidate } = this.#options;
        if (this.#expectOnline(message.type) && onRtcCandidate !== undefined) {
          safeCall(this.#logger, 'onRtcCandidate', () => onRtcCandidate(message));
        }
        return;
      }
      case 'error':
        this.#logger.warn(
          { code: message.code },
          `signalling: the cloud reported an error: ${redactText(message.message)}`,
        );
        return;
      case 'offer':
      case 'robot-offline':
      case 'driver':
      case 'control-request':
      case 'control-pending':
      case 'control-result':
      case 'relay-allocated':
      case 'relay-refused':
      case 'renewed':
      case 'renew-refused':
      case 'candidates':
      case 'rtc-answer':
      case 'rtc-refused':
        this.#logger.warn({ type: message.type }, 'signalling: skipped a pilot message sent to this robot');
        return;
      default: {
        const unexpected: never = message;
        this.#logger.warn({ message: String(unexpected) }, 'signalling: skipped an unknown message');
      }
    }
  }

  /** Counts and logs a message that makes no sense in the current state. */
  #skipOutOfOrder(what: string): void {
    this.#outOfOrder++;
    this.#logger.warn({ state: this.#state.kind }, `signalling: skipped ${what}`);
  }

  #answerChallenge(ws: WebSocket, nonce: string): void {
    if (this.#state.kind !== 'authenticating') {
      this.#skipOutOfOrder('a challenge that came out of order');
      return;
    }
    let sig: string;
    try {
      sig = base64url(this.#options.credential.sign(robotChallengePayload(nonce, this.#options.robotId)));
    } catch (err) {
      // The error of a signer may quote its input; name only its class.
      this.#logger.error({}, `cannot sign the signalling challenge with the robot key (${errorName(err)})`);
      this.#drop(ws, { reason: 'cannot sign the challenge' });
      return;
    }
    this.#send(ws, {
      type: 'auth',
      v: 2,
      robot_id: this.#options.robotId,
      public_key: this.#options.credential.publicKey,
      sig,
    });
  }

  #authenticated(ws: WebSocket, message: Extract<SignalServerMessage, { type: 'auth-ok' }>): void {
    if (this.#state.kind !== 'authenticating') {
      this.#skipOutOfOrder('an auth-ok that came out of order');
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
    const orgId = message.org_id ?? null;
    const now = this.#clock.now();
    this.#logger.info(
      { url: this.#redactedUrl, robot_id: this.#options.robotId, org_id: orgId },
      orgId === null
        ? 'signalling online (admitted by open dev enrolment: the robot belongs to no org)'
        : 'signalling online',
    );
    const online: Extract<ConnectionState, { kind: 'online' }> = {
      kind: 'online',
      ws,
      orgId,
      heartbeatMs: message.heartbeat_ms,
      onlineAt: now,
      lastHeardAt: now,
      heartbeatTimer: undefined,
      lastAnnounce: undefined,
    };
    this.#transition(online);
    this.#sendAnnounce(online, false);
    this.#scheduleHeartbeat(online);
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
    if (this.#state.kind === 'online') return true;
    this.#skipOutOfOrder(`a ${type} that came before auth-ok`);
    return false;
  }

  #scheduleHeartbeat(online: Extract<ConnectionState, { kind: 'online' }>): void {
    online.heartbeatTimer = this.#clock.setTimeout(() => {
      online.heartbeatTimer = undefined;
      if (this.#state !== online) return;
      const silentMs = this.#clock.now() - online.lastHeardAt;
      const limitMs = SIGNALLING_TIMING.silentPeriods * online.heartbeatMs;
      if (silentMs >= limitMs) {
        this.#logger.warn(
          { url: this.#redactedUrl, silent_ms: Math.round(silentMs) },
          'signalling: nothing heard from the cloud for three heartbeat periods; reconnecting',
        );
        this.#drop(online.ws, { reason: 'heartbeat timeout', dead: true });
        return;
      }
      this.#send(online.ws, { type: 'heartbeat' });
      // A change nobody re-announced (a new address from DHCP) goes out now.
      this.#sendAnnounce(online, true);
      this.#scheduleHeartbeat(online);
    }, online.heartbeatMs);
  }

  #sendAnnounce(online: Extract<ConnectionState, { kind: 'online' }>, onlyIfChanged: boolean): void {
    const built = this.#announcer.build(this.sessions, onlyIfChanged);
    if (built === undefined) return;
    if (onlyIfChanged && built.key === online.lastAnnounce) return;
    online.lastAnnounce = built.key;
    this.#sendText(online.ws, built.text);
  }

  #send(ws: WebSocket, message: SignalClientMessage): void {
    this.#sendText(ws, encodeSignalMessage(message));
  }

  #sendText(ws: WebSocket, text: string): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(text, (err) => {
      if (err) this.#logger.debug({}, `signalling send failed: ${describeError(err)}`);
    });
  }

  /** Ends the connection from this side (no close event will be handled) and schedules the next attempt. */
  #drop(ws: WebSocket, detail: { reason: string; denial?: DenialReason; dead?: boolean }): void {
    if (socketOf(this.#state) !== ws) return;
    this.#detach(ws);
    // A connection that went silent gets no closing handshake: its peer may never answer one.
    if (ws.readyState === WebSocket.OPEN && detail.dead !== true) ws.close(1000, 'reconnecting');
    else ws.terminate();
    this.#connectionEnded(undefined, detail.reason, detail.denial);
  }

  #connectionEnded(code: number | undefined, reasonText: string, denial?: DenialReason): void {
    const state = this.#state;
    const wasOnlineFor = state.kind === 'online' ? this.#clock.now() - state.onlineAt : 0;
    // A connection that never opened was already explained by its `error` event.
    const opened = state.kind !== 'connecting';
    if (wasOnlineFor >= SIGNALLING_TIMING.healthyAfterMs) this.#backoff.reset();
    const reason = reasonText === '' ? closeMeaning(code) : reasonText;
    if (code === SIGNAL_CLOSE.replaced) {
      this.#logger.warn(
        { robot_id: this.#options.robotId },
        `another connection for robot "${this.#options.robotId}" replaced this one (4409): two daemons share this robot id`,
      );
    } else if (code !== undefined && code !== SIGNAL_CLOSE.denied && (opened || code !== 1006)) {
      this.#logger.warn({ url: this.#redactedUrl, code, reason }, 'signalling connection closed');
    }
    const end = { reason, ...(code === undefined ? {} : { closeCode: code }) };
    if (denial !== undefined || code === SIGNAL_CLOSE.denied) {
      if (denial === undefined) {
        this.#logger.error({ robot_id: this.#options.robotId }, 'the cloud denied this robot (4403)');
      }
      const retryInMs = SIGNALLING_TIMING.deniedRetryMs;
      this.#logger.info({ retry_in_ms: retryInMs }, 'signalling: trying again in 5 minutes');
      this.#transition({
        kind: 'denied',
        ...end,
        ...(denial === undefined ? {} : { denial }),
        retryInMs,
        retryTimer: this.#retryTimer(retryInMs),
      });
      return;
    }
    this.#retry(end);
  }

  #retry(end: Omit<ConnectionEnd, 'denial'>): void {
    const retryInMs = this.#backoff.next();
    this.#transition({ kind: 'backoff', ...end, retryInMs, retryTimer: this.#retryTimer(retryInMs) });
  }

  #retryTimer(retryInMs: number): TimerHandle {
    return this.#clock.setTimeout(() => {
      const kind = this.#state.kind;
      if (kind === 'backoff' || kind === 'denied') this.#connect();
    }, retryInMs);
  }
}

function rawText(data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}
