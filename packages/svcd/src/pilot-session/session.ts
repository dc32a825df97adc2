import type { AbrSample, QosProfile, QosProfileName } from '@svc/qos';
import { assertTransition, type Clock, type Logger, safeCall } from '@svc/runtime';
import type { Session, SessionCloseInfo } from '@svc/transport';
import {
  ControlLineReader,
  type ControlMessage,
  type ControlRole,
  type DeniedCode,
  encodeControlMessage,
  type PackedFrame,
  peekChannel,
  stampSenderTimestamp,
  WireError,
  wrapU32,
} from '@svc/wire';
import type { ChannelQos, SessionQosProbe } from '../channel-qos.js';
import { daemonClock } from '../clock.js';
import type { CommandChannel } from '../command-channel.js';
import type { SensorChannel } from '../sensor-channel.js';
import type {
  AcceptedGrant,
  AuthorizeSession,
  OpenSession,
  SessionGrant,
  SessionRegistry,
} from '../session-registry.js';
import type { VideoChannel, VideoSourceStatus } from '../video-channel.js';
import { driverWatchdog, type SessionCommandsOptions, sessionCommands } from './commands.js';
import { endMessage, welcomeFor } from './control.js';
import { HEARTBEAT_MS, PILOT_SILENCE_MS, silentFor } from './liveness.js';
import { MovableSession } from './movable.js';
import { PILOT_SESSION_MOVES, type PilotSessionState } from './state.js';
import { VideoSend } from './video-send.js';

/** How long the old transport still delivers what was in flight after a session moved off it, ms. */
export const MOVE_LINGER_MS = 1000;
/** A session whose token expired this long ago without a renewal ends, ms (clocks differ a little). */
export const EXPIRY_GRACE_MS = 5000;

/** A pilot's new transport for an open session, as `hello {move: true}` brings it. */
export interface SessionMove {
  readonly sessionId: string;
  readonly grant: AcceptedGrant;
  readonly transport: Session;
}
/** Options of {@link PilotSession}. */
export interface PilotSessionOptions {
  readonly session: Session;
  /** Video channels. */
  readonly channels: readonly VideoChannel[];
  /** Sensor channels: their messages go to the session once it is welcomed. */
  readonly sensors?: readonly SensorChannel[];
  /** Command channels: the session's commands reach their outputs when it drives. */
  readonly commands?: readonly CommandChannel[];
  /** The robot's sessions: limit, driver slot, token reuse and revocation. */
  readonly registry: SessionRegistry;
  /**
   * Checks the `hello` token (the pilot session token verifier). A rejected promise denies the
   * session.
   */
  readonly authorize: AuthorizeSession;
  /** The profile in force when the session opens; {@link PilotSession.profileChanged} moves it. */
  readonly profile: QosProfile;
  /** Each video channel's rate controller, by channel id: the session feeds its measurements. */
  readonly qos?: ReadonlyMap<number, ChannelQos>;
  readonly logger: Logger;
  /**
   * Time and timers: `now()` is the clock of the chunk sender timestamps and `pong.robot_time`
   * (default {@link daemonClock}); a test's fake clock also runs the paced send queue.
   */
  readonly clock?: Clock;
  /**
   * How long a session the robot ends (`denied`, or `bye` on revocation) stays open after the
   * reason was written, in ms (default 0: closed at once). A browser drops what it has not yet
   * read of a stream when the session closes, and the close travels on another stream than the
   * control line, so an immediate close can swallow the reason; the pilot closes the session
   * itself on reading it, this is the bound. Media and commands stop at once.
   */
  readonly closeGraceMs?: number;
  /**
   * A video channel needs a recovery point from the publisher: a session joined (`join`) or the
   * pilot sent `request-keyframe` (`pilot-request`). The caller rate-limits per channel.
   */
  readonly onRecoveryNeeded?: (channelId: number, reason: 'join' | 'pilot-request') => void;
  /** The pilot reported frames it gave up on a video channel (its `loss` line, frames lost > 0). */
  readonly onLossReported?: (channelId: number, framesLost: number, chunkLoss: number) => void;
  /**
   * The send path dropped a delta frame for backlog and stopped the channel's deltas until a
   * recovery point: the channel's recovery ladder should hear of it.
   */
  readonly onBacklogDrop?: (channelId: number) => void;
  /** The driver asked for another QoS profile (`set-qos`). */
  readonly onProfileRequest?: (profile: QosProfileName, sessionId: string) => void;
  /**
   * Heartbeat period, ms (default {@link HEARTBEAT_MS}); a pilot silent for `silenceMs` (default
   * {@link PILOT_SILENCE_MS}) is gone: its session ends.
   */
  readonly heartbeatMs?: number;
  readonly silenceMs?: number;
  /** `[agent] max_command_age_ms` (default 500): older commands are dropped and counted. */
  readonly maxCommandAgeMs?: number;
  /**
   * `[agent] command_timeout_ms`: with {@link PilotSessionOptions.onDriverIdle}, a driver that has
   * written no command for this long is reported (once per silence).
   */
  readonly commandTimeoutMs?: number;
  /** The driver has sent no command for `commandTimeoutMs` (publisher control's `driver-idle`). */
  readonly onDriverIdle?: (sessionId: string, idleMs: number) => void;
  /** The session ended (after its own cleanup), or handed its transport to another session. */
  readonly onClose?: () => void;
  /**
   * A `hello {move: true}` on this transport: the open session it names should take the
   * transport over ({@link PilotSession.moveTo}); `false` when there is no such session for this
   * person.
   */
  readonly adopt?: (move: SessionMove) => boolean;
}

/** Session-wide datagram counters, reported in `agent-stats` under channel key `"0"`. */
export interface PilotSessionDatagramStats {
  /** Datagrams shorter than a chunk header or otherwise unreadable. */
  datagrams_malformed: number;
  /** Datagrams on a channel id that is not a command channel of this robot. */
  datagrams_unknown_channel: number;
  /** Datagrams that arrived before the session was welcomed. */
  datagrams_before_welcome: number;
  /** Sensor datagrams the transport refused (its queue was full). */
  sensor_datagrams_refused: number;
  /**
   * Events that came after the session stopped taking them, ignored: datagrams and control
   * messages while closing or after close, a token check that finished after the session ended.
   */
  late_events: number;
}

/**
 * The robot's side of one pilot session: the control-stream handshake (`hello` checked by the
 * injected `authorize`, then admitted by the {@link SessionRegistry}, which decides the role),
 * then every video channel's frames through a paced send queue, starting at the next keyframe;
 * sensor messages as they come; the session's command datagrams reassembled, checked (age, order)
 * and, for a driver, written to the command outputs; `ping`/`pong` for the pilot's clock offset
 * and `agent-stats` once a second.
 *
 * Liveness (docs/safety.md): the robot sends `heartbeat` every `heartbeatMs`; any control line or
 * datagram from the pilot is a sign of life; a session silent for `silenceMs` is ended at once
 * (its registry entry first, so publisher control says `ended`), as is one whose pilot says `bye`.
 * A heartbeat tick that comes late (the daemon's process stalled) gives no verdict: the pilot's
 * lines may be waiting to be read; the next tick decides.
 *
 * Its life cycle is one {@link PilotSessionState}, changed in one method. Events the network
 * delivers late (after the robot ended the session, or after close) are ignored and counted in
 * `late_events`; calls that make no sense in the current state throw a `TypeError`.
 *
 * Sensor datagrams go straight to `sendDatagram`, not through the paced queue: they are small and
 * must not wait behind a keyframe, and the queue never tears a video frame whatever else is sent
 * (its frames stay whole and in order; other channels' datagrams between them are reassembled
 * separately). A sensor datagram the transport refuses is counted; parity covers a single loss.
 */
export class PilotSession implements SessionQosProbe {
  readonly #options: PilotSessionOptions;
  readonly #session: MovableSession;
  readonly #clock: Clock;
  #reader = new ControlLineReader();
  readonly #datagramStats: PilotSessionDatagramStats = {
    datagrams_malformed: 0,
    datagrams_unknown_channel: 0,
    datagrams_before_welcome: 0,
    sensor_datagrams_refused: 0,
    late_events: 0,
  };
  #state: PilotSessionState = { kind: 'awaiting-hello' };
  #profile: QosProfile;

  constructor(options: PilotSessionOptions) {
    this.#options = options;
    this.#clock = options.clock ?? daemonClock;
    this.#session = new MovableSession(options.session, this.#clock);
    this.#profile = options.profile;
    this.#session.setHandlers({
      onControlData: (bytes) => this.#control(bytes),
      onDatagram: (datagram) => this.#datagram(datagram),
      onClose: (info) => this.#closed(info),
    });
  }

  /** Where the session is in its life cycle. */
  get state(): PilotSessionState['kind'] {
    return this.#state.kind;
  }

  /** The session as the registry admitted it (role, id); `undefined` until welcomed. */
  get admitted(): OpenSession | undefined {
    const state = this.#state;
    return state.kind === 'active' || state.kind === 'closing' ? state.open : undefined;
  }

  /** The session's role (an observer until admitted). */
  get role(): ControlRole {
    return this.admitted?.role ?? 'observer';
  }

  /** Events ignored because they came after the session stopped taking them. */
  get lateEvents(): number {
    return this.#datagramStats.late_events;
  }

  /**
   * The driver changed the profile: this session's admission follows it and the pilot hears of it.
   *
   * @throws {TypeError} when the session is closed.
   */
  profileChanged(profile: QosProfile): void {
    const state = this.#state;
    if (state.kind === 'closed') {
      throw new TypeError(`PilotSession.profileChanged: session ${this.#session.id} is closed`);
    }
    this.#profile = profile;
    if (state.kind !== 'active') return;
    state.video.setProfile(profile);
    this.#send({ type: 'qos', profile: profile.name, presentation_delay_ms: profile.presentationDelayMs });
  }

  /**
   * This session's measurements of `channelId` since the previous call (for the channel's rate
   * controller): the path's RTT and delivery rate (shared evenly between the video channels),
   * QUIC packets sent and lost, frames dropped for backlog, and the pilot's `loss` reports (net
   * of the frames this session dropped itself).
   *
   * The RTT is the lowest smoothed RTT seen over the period (it is read with every pacing update,
   * about ten times a second): a standing queue keeps it high all period, while the queue a
   * keyframe makes for a moment does not count as congestion.
   *
   * @throws {TypeError} when the session is not active (a rate controller samples only the
   *   sessions attached to it, which are the active ones).
   */
  qosSample(channelId: number, now: number): AbrSample {
    const state = this.#state;
    if (state.kind !== 'active') {
      throw new TypeError(`PilotSession.qosSample: session ${this.#session.id} is ${state.kind}, not active`);
    }
    return state.video.qosSample(channelId, now);
  }

  /** Counters per command channel id, plus the session-wide ones under `0`. */
  commandStats(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = { '0': { ...this.#datagramStats } };
    const state = this.#state;
    if (state.kind === 'active') {
      for (const [id, inbox] of state.inboxes) out[String(id)] = { ...inbox.stats };
    }
    return out;
  }

  /**
   * The one place the state changes: checks the move ({@link PILOT_SESSION_MOVES}),
   * releases what the old state held and the new one does not (subscriptions, timers, the send
   * queue, the registry's entry), and logs the move.
   *
   * @throws {TypeError} on a move the life cycle does not have (a bug in this class).
   */
  #transition(next: PilotSessionState): void {
    const previous = this.#state;
    assertTransition('PilotSession', PILOT_SESSION_MOVES, previous.kind, next.kind);
    this.#state = next;
    if (previous.kind === 'active') {
      this.#clock.clearInterval(previous.statsTimer);
      for (const unsubscribe of previous.unsubscribe.splice(0)) unsubscribe();
      previous.video.close();
      this.#clock.clearInterval(previous.liveness.timer);
      previous.watchdog?.stop();
    } else if (previous.kind === 'closing') {
      this.#clock.clearTimeout(previous.closeTimer);
    }
    switch (next.kind) {
      case 'awaiting-hello':
      case 'authorizing':
      case 'active':
      case 'moved':
        return;
      case 'closing':
        // The session is over for the robot now (publisher control says `ended`), whatever the
        // grace that lets the pilot read why.
        if (next.open !== undefined) this.#options.registry.end(next.open.sessionId, next.reason);
        return;
      case 'closed': {
        const open = previous.kind === 'active' || previous.kind === 'closing' ? previous.open : undefined;
        if (open !== undefined) this.#options.registry.end(open.sessionId, next.reason || 'closed');
        return;
      }
      default: {
        const unknown: never = next;
        throw new TypeError(`unknown pilot session state ${String(unknown)}`);
      }
    }
  }

  /**
   * Takes over `transport`, a new path of this session's pilot (it sent `hello {move: true}` on it
   * with a token for the same person): everything goes out there from now on, the old transport
   * lingers {@link MOVE_LINGER_MS} for what is in flight, the pilot hears `moved`, and svc-cloud
   * hears the new path. `false` when this session is not active or is another person's.
   */
  moveTo(transport: Session, grant: AcceptedGrant): boolean {
    const state = this.#state;
    if (state.kind !== 'active' || grant.sub !== state.open.sub) return false;
    const from = this.#session.kind;
    this.#session.moveTo(transport, MOVE_LINGER_MS);
    // A line cut in two by the move cannot be completed from the new stream.
    this.#reader = new ControlLineReader();
    state.liveness.lastHeardMs = this.#clock.now();
    const { registry, logger } = this.#options;
    const renewed = registry.renew(state.open.sessionId, grant.jti, grant.exp);
    registry.setPath(state.open.sessionId, transport.kind);
    state.open = registry.get(state.open.sessionId) ?? renewed ?? state.open;
    this.#send({ type: 'moved', path: transport.kind });
    logger.info(
      {
        session: this.#session.id,
        session_id: state.open.sessionId,
        from,
        to: transport.kind,
        remote: transport.remoteAddress,
      },
      'pilot session moved to a new path',
    );
    return true;
  }

  /** The transport session ended: whatever the state, the session is over. */
  #closed(info: SessionCloseInfo): void {
    if (this.#state.kind === 'closed' || this.#state.kind === 'moved') return;
    this.#transition({ kind: 'closed', reason: info.reason });
    const { onClose } = this.#options;
    if (onClose !== undefined) safeCall(this.#options.logger, 'onClose', onClose);
    this.#options.logger.info(
      { session: this.#session.id, code: info.code, reason: info.reason, by: info.by },
      'pilot session ended',
    );
  }

  #control(bytes: Uint8Array): void {
    const state = this.#state;
    if (state.kind === 'closing' || state.kind === 'closed') {
      this.#datagramStats.late_events++;
      return;
    }
    if (state.kind === 'active') state.liveness.lastHeardMs = this.#clock.now();
    for (const message of this.#reader.push(bytes)) {
      if (message instanceof WireError) {
        this.#options.logger.warn({ session: this.#session.id, code: message.code }, message.message);
        continue;
      }
      this.#handle(message);
    }
  }

  /**
   * The active state, for an event from the network: `early` before the welcome (the caller
   * says what happens then), `late` once closing (counted here: an earlier message of the same
   * read, or a datagram in flight, outlived the session).
   */
  #activeForNetwork(): Extract<PilotSessionState, { kind: 'active' }> | 'early' | 'late' {
    const state = this.#state;
    switch (state.kind) {
      case 'awaiting-hello':
      case 'authorizing':
        return 'early';
      case 'closing':
      case 'closed':
      case 'moved':
        this.#datagramStats.late_events++;
        return 'late';
      case 'active':
        return state;
      default: {
        const unknown: never = state;
        throw new TypeError(`unknown pilot session state ${String(unknown)}`);
      }
    }
  }

  #handle(message: ControlMessage): void {
    const state = this.#activeForNetwork();
    if (state === 'late') return;
    if (state === 'early') {
      if (message.type === 'hello') {
        // A second hello (while its token is checked) is ignored.
        if (this.#state.kind === 'awaiting-hello') this.#hello(message);
        return;
      }
      this.#options.logger.warn(
        { session: this.#session.id, type: message.type },
        'control message before the session was welcomed; ignored',
      );
      return;
    }
    switch (message.type) {
      case 'hello':
        return;
      case 'ping':
        this.#send({ type: 'pong', t: message.t, robot_time: this.#clock.now() });
        return;
      case 'request-keyframe':
        this.#options.logger.debug(
          { session: this.#session.id, channel: message.channel },
          'pilot asked for a keyframe',
        );
        if (this.#isVideoChannel(message.channel)) this.#recoveryNeeded(message.channel, 'pilot-request');
        return;
      case 'loss': {
        const framesLost = state.video.lossReported(message.channel, message.frames_lost, message.chunk_loss);
        const { onLossReported } = this.#options;
        if (framesLost > 0 && onLossReported !== undefined && this.#isVideoChannel(message.channel)) {
          safeCall(this.#options.logger, 'onLossReported', () =>
            onLossReported(message.channel, framesLost, message.chunk_loss),
          );
        }
        return;
      }
      case 'set-qos':
        this.#setQos(state.open, message.profile);
        return;
      case 'bye': {
        // Ended for the robot at once (publisher control says `ended`), then the transport.
        const reason = message.reason === undefined ? 'pilot said bye' : `pilot said bye: ${message.reason}`;
        this.#options.logger.info({ session: this.#session.id, reason }, 'the pilot left');
        this.#endWith(undefined, 0, reason, 0);
        return;
      }
      case 'heartbeat':
        return; // the echo: its arrival was the sign of life
      case 'renew':
        this.#renew(state.open, message.token);
        return;
      default:
        return; // pilot-stats: informative; the pilot's `loss` lines carry what the loop needs
    }
  }

  #isVideoChannel(channelId: number): boolean {
    return this.#options.channels.some((c) => c.config.id === channelId);
  }

  #setQos(open: OpenSession, profile: QosProfileName): void {
    if (open.role !== 'driver') {
      this.#options.logger.warn(
        { session: this.#session.id, profile },
        'an observer asked for another QoS profile; only the driver may change it',
      );
      return;
    }
    if (profile === this.#profile.name) return;
    this.#options.logger.info(
      { session: this.#session.id, from: this.#profile.name, to: profile },
      'the driver changed the QoS profile',
    );
    const { onProfileRequest } = this.#options;
    if (onProfileRequest !== undefined) {
      safeCall(this.#options.logger, 'onProfileRequest', () => onProfileRequest(profile, open.sessionId));
    }
  }

  #hello(hello: Extract<ControlMessage, { type: 'hello' }>): void {
    this.#transition({ kind: 'authorizing' });
    const move = hello.move === true ? hello.session_id : undefined;
    const request =
      hello.session_id === undefined || move !== undefined
        ? { token: hello.token }
        : { token: hello.token, sessionId: hello.session_id };
    let pending: Promise<SessionGrant>;
    try {
      pending = this.#options.authorize(request);
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      (grant) => (move === undefined ? this.#admit(grant) : this.#adopted(grant, move)),
      (err: unknown) => {
        if (this.#lateAuthorization()) return;
        // The message of a verifier's error may quote what it was given: log only its kind.
        this.#options.logger.error(
          { session: this.#session.id, err: err instanceof Error ? err.name : typeof err },
          'checking the pilot session token failed',
        );
        this.#deny('the robot could not check the token; try again', 'check-failed');
      },
    );
  }

  /** True (and counted) when the token check finished after the session stopped waiting for it. */
  #lateAuthorization(): boolean {
    if (this.#state.kind === 'authorizing' && !this.#session.closed) return false;
    this.#datagramStats.late_events++;
    return true;
  }

  #admit(grant: SessionGrant): void {
    if (this.#lateAuthorization()) return;
    if (!grant.ok) {
      this.#deny(grant.reason, grant.code);
      return;
    }
    const sessionId = grant.sessionId ?? this.#session.id;
    const admission = this.#options.registry.admit({
      sessionId,
      grant,
      close: (reason) => this.#revoked(reason),
      roleChanged: (open, reason) => this.#roleChanged(open, reason),
      path: this.#session.kind,
      backend: this.#session.backend,
    });
    if (!admission.ok) {
      this.#deny(admission.reason, admission.code);
      return;
    }
    this.#welcome(admission.session, grant);
  }

  /** `hello {move: true}` checked: the open session `sessionId` takes this transport over. */
  #adopted(grant: SessionGrant, sessionId: string): void {
    if (this.#lateAuthorization()) return;
    if (!grant.ok) {
      this.#deny(grant.reason, grant.code);
      return;
    }
    const adopt = this.#options.adopt;
    const transport = this.#session.current;
    if (adopt === undefined || !adopt({ sessionId, grant, transport })) {
      this.#deny(`no open session ${sessionId} of this person to move here`, 'session-in-use');
      return;
    }
    this.#transition({ kind: 'moved', sessionId });
    const { onClose } = this.#options;
    if (onClose !== undefined) safeCall(this.#options.logger, 'onClose', onClose);
  }

  /** `renew`: a fresh token for the same person keeps the session past the old one's expiry. */
  #renew(open: OpenSession, token: string): void {
    let pending: Promise<SessionGrant>;
    try {
      pending = this.#options.authorize({ token });
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      (grant) => {
        const state = this.#state;
        if (state.kind !== 'active') return;
        if (!grant.ok || grant.sub !== open.sub) {
          this.#options.logger.warn(
            { session: this.#session.id, reason: grant.ok ? 'another person' : grant.reason },
            'a renewal token was refused; the session ends when its token expires',
          );
          return;
        }
        const renewed = this.#options.registry.renew(open.sessionId, grant.jti, grant.exp);
        if (renewed !== undefined) state.open = renewed;
        this.#send({ type: 'renewed', exp: state.open.exp });
        this.#options.logger.info(
          { session: this.#session.id, session_id: open.sessionId, exp: state.open.exp },
          'session token renewed',
        );
      },
      (err: unknown) =>
        this.#options.logger.error(
          { session: this.#session.id, err: err instanceof Error ? err.name : typeof err },
          'checking a renewal token failed',
        ),
    );
  }

  #deny(reason: string, code: DeniedCode): void {
    if (this.#session.closed) return;
    this.#options.logger.info({ session: this.#session.id, reason, code }, 'pilot session denied');
    this.#endWith(endMessage('denied', reason, code), 1, 'denied', this.#options.closeGraceMs ?? 0);
  }

  #revoked(reason: string): void {
    if (this.#session.closed) return;
    this.#options.logger.info({ session: this.#session.id, reason }, 'pilot session revoked');
    this.#endWith(endMessage('bye', reason), 0, reason, this.#options.closeGraceMs ?? 0);
  }

  /**
   * Ends the session for the robot now: writes why (when there is someone to read it), stops
   * media, commands and the heartbeat, ends the registry's entry, and closes the transport after
   * `graceMs` (at once with 0).
   */
  #endWith(message: ControlMessage | undefined, code: number, reason: string, graceMs: number): void {
    const state = this.#state;
    if (state.kind === 'closing' || state.kind === 'closed') return;
    if (message !== undefined) this.#send(message);
    const closeTimer =
      graceMs > 0 ? this.#clock.setTimeout(() => this.#session.close(code, reason), graceMs) : undefined;
    this.#transition({
      kind: 'closing',
      open: state.kind === 'active' ? state.open : undefined,
      reason,
      closeTimer,
    });
    if (closeTimer === undefined) this.#session.close(code, reason);
  }

  /**
   * Every heartbeat period: ends a session the pilot has been silent in for too long, else sends
   * the next `heartbeat`.
   */
  #heartbeat(): void {
    const state = this.#state;
    if (state.kind !== 'active') return;
    const { liveness } = state;
    const silenceMs = this.#options.silenceMs ?? PILOT_SILENCE_MS;
    const heartbeatMs = this.#options.heartbeatMs ?? HEARTBEAT_MS;
    const silentMs = silentFor(liveness, this.#clock.now(), heartbeatMs, silenceMs);
    if (this.#clock.wallNow() > state.open.exp * 1000 + EXPIRY_GRACE_MS) {
      const reason = 'the session token expired and the pilot did not renew it; connect again';
      this.#options.logger.info({ session: this.#session.id, session_id: state.open.sessionId }, reason);
      this.#endWith(endMessage('bye', reason), 0, reason, this.#options.closeGraceMs ?? 0);
      return;
    }
    if (silentMs !== undefined) {
      const reason = `pilot silent for ${silenceMs} ms`;
      this.#options.logger.info(
        { session: this.#session.id, session_id: state.open.sessionId, silentMs: Math.round(silentMs) },
        'the pilot went silent; ending its session',
      );
      this.#endWith(endMessage('bye', reason), 0, reason, 0);
      return;
    }
    // A WebRTC session's path follows the candidate pair ICE selected, which may change.
    this.#options.registry.setPath(state.open.sessionId, this.#session.kind);
    this.#send({ type: 'heartbeat', seq: liveness.seq++ });
  }

  #welcome(open: OpenSession, grant: AcceptedGrant): void {
    const { sensors = [], commands = [], channels, qos, logger } = this.#options;
    const welcome = welcomeFor(
      open,
      this.#profile,
      channels,
      sensors,
      commands,
      this.#options.heartbeatMs ?? HEARTBEAT_MS,
    );
    this.#send(welcome.message);
    logger.info(
      {
        session: this.#session.id,
        session_id: open.sessionId,
        role: open.role,
        sub: grant.sub,
        scope: grant.scope,
      },
      'pilot session welcomed',
    );
    const { inboxes, watchdog } = sessionCommands(this.#commandOptions(open));
    const now = this.#clock.now();
    const video = new VideoSend({
      session: this.#session,
      channels,
      profile: this.#profile,
      clock: this.#clock,
      onBacklogDrop: (channelId) => this.#backlogDrop(channelId),
    });
    const active: Extract<PilotSessionState, { kind: 'active' }> = {
      kind: 'active',
      open,
      grant,
      video,
      inboxes,
      unsubscribe: [],
      statsTimer: this.#clock.setInterval(() => this.#stats(), 1000),
      liveness: {
        timer: this.#clock.setInterval(() => this.#heartbeat(), this.#options.heartbeatMs ?? HEARTBEAT_MS),
        seq: 0,
        lastHeardMs: now,
        lastTickMs: now,
        lastTickLate: false,
      },
      watchdog,
    };
    this.#transition(active);
    for (const { channel, catchUp } of welcome.replays) {
      active.unsubscribe.push(channel.subscribe(video.subscriber(channel, catchUp?.frames)));
      const channelQos = qos?.get(channel.config.id);
      if (channelQos !== undefined) active.unsubscribe.push(channelQos.attach(this));
      // The publisher is asked for a recovery point as well: the replay shows the current picture,
      // an IDR makes this session's stream independent of the replay (and is the only way to a
      // live picture when the replay was the keyframe alone, or when there was none).
      this.#recoveryNeeded(channel.config.id, 'join');
      // What the robot knows of the camera, now and at every change: the page names a camera
      // that is offline or sends nothing instead of showing a black or frozen canvas as live.
      this.#sendSource(channel.config.id, channel.sourceStatus);
      active.unsubscribe.push(
        channel.onSourceStatus((status) => this.#sendSource(channel.config.id, status)),
      );
    }
    for (const sensor of sensors) {
      active.unsubscribe.push(sensor.subscribe({ handleSensorFrame: (frame) => this.#sendDirect(frame) }));
    }
  }

  #sendSource(channelId: number, status: VideoSourceStatus): void {
    if (this.#state.kind !== 'active') return;
    this.#send({
      type: 'source',
      channel: channelId,
      state: status.state,
      ...(status.reason !== undefined && { reason: status.reason.slice(0, 512) }),
    });
  }

  /** What the session's command side is built from, for the role of `open`. */
  #commandOptions(open: OpenSession): SessionCommandsOptions {
    return {
      open,
      commands: this.#options.commands ?? [],
      clock: this.#clock,
      logger: this.#options.logger,
      transportId: this.#session.id,
      maxCommandAgeMs: this.#options.maxCommandAgeMs,
      commandTimeoutMs: this.#options.commandTimeoutMs,
      onDriverIdle: this.#options.onDriverIdle,
      onWritten: () => {
        if (this.#state.kind === 'active') this.#state.watchdog?.commandWritten();
      },
    };
  }

  /**
   * svc-cloud moved the driver slot: from now on this session's commands are written (driver) or
   * dropped (observer), counters and command order carried on, and the pilot hears of it with
   * `role`.
   */
  #roleChanged(open: OpenSession, reason: string): void {
    const state = this.#state;
    if (state.kind !== 'active') {
      this.#datagramStats.late_events++;
      return;
    }
    state.open = open;
    for (const inbox of state.inboxes.values()) inbox.role = open.role;
    state.watchdog?.stop();
    state.watchdog = driverWatchdog(this.#commandOptions(open));
    this.#options.logger.info(
      { session: this.#session.id, session_id: open.sessionId, role: open.role, reason },
      'the session changed role',
    );
    this.#send({ type: 'role', role: open.role, reason: reason.slice(0, 256) });
  }

  #recoveryNeeded(channelId: number, reason: 'join' | 'pilot-request'): void {
    const { onRecoveryNeeded } = this.#options;
    if (onRecoveryNeeded !== undefined) {
      safeCall(this.#options.logger, 'onRecoveryNeeded', () => onRecoveryNeeded(channelId, reason));
    }
  }

  #backlogDrop(channelId: number): void {
    const { onBacklogDrop } = this.#options;
    if (onBacklogDrop !== undefined) {
      safeCall(this.#options.logger, 'onBacklogDrop', () => onBacklogDrop(channelId));
    }
  }

  /** A sensor frame: its datagrams leave now, each stamped with its send time. */
  #sendDirect(frame: PackedFrame): void {
    for (const datagram of frame.datagrams) {
      stampSenderTimestamp(datagram, wrapU32(this.#clock.now() * 1000));
      if (!this.#session.sendDatagram(datagram)) this.#datagramStats.sensor_datagrams_refused++;
    }
  }

  #datagram(datagram: Uint8Array): void {
    const state = this.#activeForNetwork();
    if (state === 'late') return;
    if (state === 'early') {
      this.#datagramStats.datagrams_before_welcome++;
      return;
    }
    state.liveness.lastHeardMs = this.#clock.now();
    const channel = peekChannel(datagram);
    if (channel === undefined) {
      this.#datagramStats.datagrams_malformed++;
      return;
    }
    const inbox = state.inboxes.get(channel);
    if (inbox === undefined) {
      this.#datagramStats.datagrams_unknown_channel++;
      return;
    }
    inbox.handleDatagram(datagram, this.#clock.now());
  }

  #stats(): void {
    const state = this.#state;
    if (state.kind !== 'active') return;
    const channels: Record<string, Record<string, number | string>> = state.video.agentStats(
      this.#options.qos,
    );
    Object.assign(channels, this.commandStats());
    // How the session's packets reach the robot, as the robot sees it.
    channels['0'] = { ...channels['0'], path: this.#session.kind };
    this.#send({ type: 'agent-stats', channels });
  }

  #send(message: ControlMessage): void {
    this.#session.writeControl(encodeControlMessage(message));
  }
}
