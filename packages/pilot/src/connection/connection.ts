import { qosProfile } from '@svc/qos';
import {
  assertTransition,
  Backoff,
  type Clock,
  consoleLogger,
  type Logger,
  systemClock,
  TypedEmitter,
} from '@svc/runtime';
import type { ControlChannel, ControlMessage, ControlRole } from '@svc/wire';
import {
  CANDIDATE_STAGGER_MS,
  type PilotPath,
  type CandidateRaceResult as RaceResult,
  RELAY_HEAD_START_MS,
  type RelayEntrant,
  raceCandidates,
} from './candidates.js';
import { ClockOffsetEstimator } from './clock-offset.js';
import { Link, type LinkListener } from './link.js';
import type { PathSwitch } from './options.js';
import {
  PILOT_RECONNECT_BACKOFF,
  type PilotChannelStats,
  type PilotConnectionEvents,
  type PilotConnectionStats,
  type PilotConnectOptions,
  type PilotSourceState,
  type QosProfileName,
  type RobotAddress,
  type TransportFactory,
} from './options.js';
import { type PilotRefusal, type PilotRefusalCode, refusalOfTokenError, tokenScope } from './refusal.js';
import { openRtcTransport, type RtcPilotTransport } from './rtc-transport.js';
import { type SendCommandOptions, Session, type Welcome } from './session.js';
import {
  type ControlRequest,
  type DriverSlot,
  type HandoverAvailability,
  isOfferError,
  type RequestOfferOptions,
  type RobotOffer,
  SignalSession,
  type SignalSessionOptions,
} from './signal-session.js';
import {
  type Attempt,
  attemptOf,
  CONNECTION_MOVES,
  type ConnectionState,
  linkOf,
  type PilotConnectionState,
  publicState,
  sessionOf,
} from './state.js';
import { SessionUpkeep } from './upkeep.js';

/** How long a WebRTC session may take to connect (ICE, DTLS, SCTP) before the attempt gives up, ms. */
const RTC_CONNECT_TIMEOUT_MS = 15_000;
/** How often a WebRTC session's path is read again (ICE may move it between TURN and direct), ms. */
const RTC_PATH_POLL_MS = 1_000;
/** The link's URL for a WebRTC session, for logs (it has no URL of its own). */
const RTC_URL = 'webrtc:';

/** Datagrams kept while `welcome` is on its way (a replay of about 1 MB, with parity). */
const MAX_EARLY_DATAGRAMS = 2048;
/** A session that was connected this long resets the backoff: its drop is news, not a pattern. */
const STABLE_SESSION_MS = 10_000;

/**
 * A pilot's session with one robot: an offer from svc-cloud's signalling (or one given), the
 * robot's candidates raced, WebTransport pinned to the robot's certificate hashes, the
 * control-stream handshake, one reassembler and player per video channel, clock-offset pings,
 * keyframe requests, and reconnection (with a fresh offer) after the robot restarts or the link
 * drops.
 *
 * Its life cycle is one {@link ConnectionState}; every change goes through one transition that
 * checks it against {@link CONNECTION_MOVES}. Network events that come for a state it has left (a
 * datagram, a control line or a transport's close after `close()` or after a reconnect) are
 * ignored and counted in {@link PilotConnectionStats.lateEvents}.
 */
export class PilotConnection {
  readonly #options: PilotConnectOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #logger: Logger;
  readonly #createTransport: TransportFactory;
  /** Where offers come from: a signalling session kept open per attempt, or a one-shot offer. */
  readonly #offerSource:
    | { readonly kind: 'session'; readonly open: (options: SignalSessionOptions) => SignalSession }
    | { readonly kind: 'once'; readonly request: (options: RequestOfferOptions) => Promise<RobotOffer> };
  readonly #events: TypedEmitter<PilotConnectionEvents>;
  readonly #backoff: Backoff;
  #state: ConnectionState = { kind: 'idle' };
  /** Whether handover is possible, as last told (`handover` event). */
  #handover: HandoverAvailability;
  /** The state name pages last heard: a transition within an attempt, without news, stays quiet. */
  #announced: PilotConnectionState = 'idle';
  #offer: RobotOffer | undefined;
  /** The robot's QoS profile, from `welcome` and each `qos` since. */
  #profile: QosProfileName | undefined;
  /** An observer's own choice of presentation (`setQos` while observing), kept across sessions. */
  #presentation: QosProfileName | undefined;
  #sessions = 0;
  /** The latest round trip, and the clock offset of the best recent exchange. */
  #rttMs: number | undefined;
  #clockOffsetMs: number | undefined;
  readonly #clockSamples = new ClockOffsetEstimator();
  /** Why commands are held, while they are. */
  #commandHold: string | undefined;
  /** The `scope` of the token sent in the current attempt's `hello`, when it could be read. */
  #helloScope: 'drive' | 'observe' | undefined;
  /** Whether a session was ever connected: an offline robot is a refusal only before that. */
  #everConnected = false;
  /**
   * Set while the robot has been offline since the start (no session yet) and the connection asks
   * again after each backoff: `refusal` says so meanwhile, so the wait is never silent.
   */
  #offline: PilotRefusal | undefined;
  /** Removes the `pagehide` listener. */
  #unlistenPage: (() => void) | undefined;
  #malformed = 0;
  #late = 0;
  /** Channel statistics of ended sessions (a later session's replace them). */
  #lastStats: Record<string, PilotChannelStats> = {};
  #robotStats: Record<string, Record<string, number | string>> = {};
  readonly #linkListener: LinkListener = {
    datagram: (link, bytes) => this.#onDatagram(link, bytes),
    control: (link, message) => this.#onControl(link, message),
    ended: (link, reason) => this.#onLinkEnded(link, reason),
  };

  /**
   * A connection in state `idle`: nothing happens until {@link connect}. The `on*` options are
   * added as listeners first, so they hear every event.
   */
  constructor(options: PilotConnectOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#logger = options.logger ?? consoleLogger();
    this.#createTransport =
      options.createTransport ?? ((url, transportOptions) => new WebTransport(url, transportOptions));
    this.#offerSource =
      options.requestOffer !== undefined
        ? { kind: 'once', request: options.requestOffer }
        : { kind: 'session', open: options.openSignalling ?? ((o) => new SignalSession(o)) };
    this.#events = new TypedEmitter<PilotConnectionEvents>(this.#logger);
    this.#backoff = new Backoff(PILOT_RECONNECT_BACKOFF, this.#random);
    this.#handover = this.#handoverNow();
    if (options.onState !== undefined) this.#events.on('state', options.onState);
    if (options.onOffer !== undefined) this.#events.on('offer', options.onOffer);
    if (options.onFrame !== undefined) this.#events.on('frame', options.onFrame);
    if (options.onPaint !== undefined) this.#events.on('paint', options.onPaint);
    if (options.onSensor !== undefined) this.#events.on('sensor', options.onSensor);
    if (options.onPicture !== undefined) this.#events.on('picture', options.onPicture);
    if (options.onRole !== undefined) this.#events.on('role', options.onRole);
    if (options.onDriver !== undefined) this.#events.on('driver', options.onDriver);
  }

  /** Makes a connection and connects it: `new PilotConnection(options).connect()`. */
  static connect(options: PilotConnectOptions): PilotConnection {
    return new PilotConnection(options).connect();
  }

  /**
   * Starts connecting, and keeps the connection up (reconnecting after drops, unless the options
   * say not to) until {@link close}.
   *
   * @throws {TypeError} when called a second time: a connection connects once; make a new one.
   */
  connect(): this {
    if (this.#state.kind !== 'idle') {
      throw new TypeError(
        `connect() was called on a connection that is ${this.state} already; a PilotConnection connects once, make a new one`,
      );
    }
    this.#listenForPageHide();
    this.#beginAttempt(1);
    return this;
  }

  /** Adds a listener; returns the function that removes it. A listener that throws is logged. */
  on<K extends keyof PilotConnectionEvents>(event: K, listener: PilotConnectionEvents[K]): () => void {
    return this.#events.on(event, listener);
  }

  /** Removes a listener added with {@link on}. */
  off<K extends keyof PilotConnectionEvents>(event: K, listener: PilotConnectionEvents[K]): void {
    this.#events.off(event, listener);
  }

  /** Where the connection is. */
  get state(): PilotConnectionState {
    return publicState(this.#state);
  }

  /** The path's changes in this connection's life. */
  readonly #pathSwitches: PathSwitch[] = [];
  /** The current session's move off the relay and token renewal. */
  #upkeep: SessionUpkeep | undefined;
  /** The token of the current attempt (`hello`). */
  #sessionToken: string | undefined;

  /**
   * How the session's packets travel now: `direct` to the robot, or through svc-cloud's `relay`;
   * `undefined` before a transport answered.
   */
  get path(): PilotPath | undefined {
    const state = this.#state;
    return 'link' in state ? state.link.path : undefined;
  }

  /** The transport the session runs on, while it has one. */
  get backend(): 'webtransport' | 'webrtc' | undefined {
    const state = this.#state;
    if (!('link' in state)) return undefined;
    return state.link.url === RTC_URL ? 'webrtc' : 'webtransport';
  }

  /** The latest offer from svc-cloud (`undefined` with a given offer, or before the first). */
  get offer(): RobotOffer | undefined {
    return this.#offer;
  }

  /** This session's role from `welcome` (`undefined` without a session). */
  get role(): ControlRole | undefined {
    return sessionOf(this.#state)?.role;
  }

  /**
   * What the robot last said of a video channel's camera in this session (`source`), or
   * `undefined` before it said anything: for a view that attaches after the message came.
   */
  source(channel: number): PilotSourceState | undefined {
    return sessionOf(this.#state)?.sources.get(channel);
  }

  /**
   * Why the pilot does not have what it asked for, with a stable code for the page's words: the
   * refusal that ended the connection (`denied`), or, while connected, `driver-slot-held` when it
   * asked to drive (a `drive`-scoped token) and was admitted as an observer because someone else
   * drives. `undefined` otherwise.
   */
  get refusal(): PilotRefusal | undefined {
    const state = this.#state;
    if (state.kind === 'denied') return { code: state.code, message: state.reason };
    if (state.kind !== 'connected' && this.#offline !== undefined) return this.#offline;
    const session = sessionOf(state);
    const scope = this.#helloScope ?? this.#signalling()?.scope;
    if (session === undefined || session.role !== 'observer' || scope !== 'drive') return undefined;
    return {
      code: 'driver-slot-held',
      message:
        'someone else is driving this robot: you are watching as an observer; ask the driver for control, or drive once they leave and you connect again',
    };
  }

  /**
   * Who holds the robot's driver slot, as svc-cloud last said over this session's signalling
   * connection: `{sessionId, user: {id, name}, self}` (`self`: this session drives), `null` when
   * nobody drives, `undefined` when not known (no signalling connection, or not heard yet).
   */
  get driver(): DriverSlot | null | undefined {
    return this.#signalling()?.driver;
  }

  /**
   * Whether the driver slot can change hands from this session now, and if not, why (the
   * `handover` event tells each change). Handover needs the session connected through `signalUrl`
   * with its signalling connection up and the robot connected to the cloud.
   */
  get handover(): HandoverAvailability {
    return this.#handover;
  }

  /**
   * The request for the slot waiting for this session's answer (this session drives), with the
   * time left to answer, or `undefined`.
   */
  get controlRequest(): ControlRequest | undefined {
    return this.#signalling()?.asked;
  }

  /**
   * Asks the driver for the slot (`request-control`): the driver is prompted and answers;
   * `control-pending` then `control-result` tell how it goes, and on a grant the robot makes this
   * session the driver (`role`). Returns `false`, sending nothing, unless this session is connected
   * and observes with a `drive` token and handover is available ({@link handover}).
   */
  requestControl(): boolean {
    const signalling = this.#signallingFor('observer');
    return signalling?.scope === 'drive' && signalling.requestControl();
  }

  /**
   * Takes the slot over at once (`take-control`): svc-cloud allows it to an org admin or owner
   * signed in as a user with a `drive` token, and answers anyone else with a `control-result`
   * `denied` that says why. Returns `false`, sending nothing, on the same conditions as
   * {@link requestControl}.
   */
  takeControl(): boolean {
    const signalling = this.#signallingFor('observer');
    return signalling?.scope === 'drive' && signalling.takeControl();
  }

  /**
   * Answers the request for the slot waiting for this session (`control-request`): `grant` hands
   * the slot over (this session then observes), otherwise the asker is refused. Returns `false`,
   * sending nothing, unless this session drives, handover is available and request `requestId`
   * still waits.
   */
  answerControl(requestId: string, grant: boolean): boolean {
    return this.#signallingFor('driver')?.answerControl(requestId, grant) ?? false;
  }

  /**
   * Gives the driver slot up (`release-control`): a waiting asker gets it, else it is free; this
   * session then observes. Returns `false`, sending nothing, unless this session drives and
   * handover is available.
   */
  releaseControl(): boolean {
    return this.#signallingFor('driver')?.releaseControl() ?? false;
  }

  /** The signalling session of the connected attempt when this session has `role`. */
  #signallingFor(role: ControlRole): SignalSession | undefined {
    const state = this.#state;
    if (state.kind !== 'connected' || state.session.role !== role) return undefined;
    return state.attempt.signalling;
  }

  /** The current attempt's signalling session, if it has one. */
  #signalling(): SignalSession | undefined {
    return attemptOf(this.#state)?.signalling;
  }

  /**
   * The robot's clock now (ms), from the local clock and the measured offset; `undefined` until
   * the offset is known (the first `pong` of the session).
   */
  robotClockMs(): number | undefined {
    return this.#clockOffsetMs === undefined ? undefined : this.#clock.now() - this.#clockOffsetMs;
  }

  /**
   * Holds the driver's commands while `reason` is set (a stale picture: nobody should drive blind),
   * and lets them go again with `undefined`. While held, {@link sendCommand} sends nothing and
   * returns `false`, except with `always` (the stop and dead-man zero commands).
   */
  holdCommands(reason: string | undefined): void {
    if (reason === this.#commandHold) return;
    this.#commandHold = reason;
    this.#logger.info({ reason }, reason === undefined ? 'commands released' : 'commands held');
  }

  /** The channels the robot announced in `welcome` (empty without a session). */
  get channels(): readonly ControlChannel[] {
    return sessionOf(this.#state)?.channels ?? [];
  }

  /**
   * Sends one command on a command channel (by name or id) as datagrams: one frame, one parity
   * chunk per block, so one lost datagram is repaired; a newer command supersedes an older one
   * still in flight. Its frame info carries its send time on the robot's clock and its frame id
   * is its sequence number (+1 per command on the channel): the robot drops commands older than
   * its `max_command_age_ms` and any not newer than the last it wrote (`docs/safety.md`).
   *
   * Returns `false`, sending nothing, while the connection is on its way (`connecting`,
   * `reconnecting`), when this session observes (the robot would drop it), before the clock
   * offset is known (the first `pong`, a round trip after `welcome`: the robot could not judge the
   * command's age), and while commands are held ({@link holdCommands}) unless `options.always`.
   *
   * @throws {TypeError} before `connect()` and after the connection ended (`closed`, `denied`),
   *   for a channel that is not a command channel of the robot, or for a payload over
   *   {@link MAX_COMMAND_BYTES}.
   */
  sendCommand(
    channel: string | number,
    payload: string | Uint8Array,
    options: SendCommandOptions = {},
  ): boolean {
    const state = this.#connectedFor('sendCommand()', 'there is no session to send on');
    if (state === undefined) return false;
    return state.session.sendCommand(channel, payload, options) === true;
  }

  /**
   * Chooses a QoS profile. The driver's choice goes to the robot (`set-qos`) and sets the
   * channel's profile (encoder request, FEC, ABR) for every session. An observer's choice changes
   * only its own presentation (the hold's ceiling and the loss behaviour of that profile), kept
   * until it chooses again, whatever the driver picks. Returns `false`, doing nothing, while the
   * connection is on its way.
   *
   * @throws {TypeError} before `connect()` and after the connection ended (`closed`, `denied`).
   */
  setQos(profile: QosProfileName): boolean {
    const state = this.#connectedFor('setQos()', 'there is no session to ask');
    if (state === undefined) return false;
    if (state.session.role === 'driver') {
      state.link.send({ type: 'set-qos', profile });
      return true;
    }
    this.#presentation = profile;
    state.session.applyQos(profile, qosProfile(profile).presentationDelayMs);
    return true;
  }

  /** The observer's own presentation profile (`setQos` while observing), if it chose one. */
  get presentation(): QosProfileName | undefined {
    return this.#presentation;
  }

  /**
   * The connected state for a call that needs a session, `undefined` while the connection is on
   * its way (the call does nothing and says so with `false`).
   *
   * @throws {TypeError} before `connect()` and after the connection ended: the caller's mistake.
   */
  #connectedFor(call: string, why: string): Extract<ConnectionState, { kind: 'connected' }> | undefined {
    const state = this.#state;
    switch (state.kind) {
      case 'idle':
      case 'closed':
      case 'denied':
        throw new TypeError(`${call} on a connection that is ${state.kind}: ${why}`);
      case 'offering':
      case 'dialing':
      case 'handshaking':
      case 'starting':
      case 'reconnecting':
        return undefined;
      case 'connected':
        return state;
      default:
        return state satisfies never;
    }
  }

  /** A snapshot of the connection's and every channel's statistics. */
  stats(): PilotConnectionStats {
    const hold = this.#commandHold ?? sessionOf(this.#state)?.staleHold();
    return {
      state: this.state,
      sessions: this.#sessions,
      rttMs: this.#rttMs,
      clockOffsetMs: this.#clockOffsetMs,
      ...(hold !== undefined && { commandHold: hold }),
      malformedDatagrams: this.#malformed,
      lateEvents: this.#late,
      channels: { ...this.#lastStats, ...sessionOf(this.#state)?.stats() },
      robot: this.#robotStats,
      ...(this.#profile !== undefined && { profile: this.#profile }),
      ...(this.path !== undefined && { path: this.path }),
      ...(this.backend !== undefined && { backend: this.backend }),
      pathSwitches: this.#pathSwitches,
    };
  }

  /**
   * Ends the session (telling the robot `bye`, with `reason` when given) and stops reconnecting.
   * Closing a connection that has ended already (`closed` or `denied`) does nothing.
   */
  close(reason?: string): void {
    const state = this.#state;
    switch (state.kind) {
      case 'closed':
      case 'denied':
        return;
      case 'handshaking':
      case 'starting':
      case 'connected':
        state.link.send(reason === undefined ? { type: 'bye' } : { type: 'bye', reason });
        break;
      case 'idle':
      case 'offering':
      case 'dialing':
      case 'reconnecting':
        break;
      default:
        state satisfies never;
    }
    this.#transition({ kind: 'closed', reason: reason ?? 'closed by the page' });
  }

  /**
   * With `closeOnPageHide` (the default) and a page to listen to: on `pagehide` the session ends
   * at once, `bye` `page closed` then the transport's close, so the robot does not wait for the
   * heartbeat to miss the pilot.
   */
  #listenForPageHide(): void {
    if (this.#options.closeOnPageHide === false) return;
    const target =
      this.#options.pageEvents ??
      (typeof (globalThis as Partial<EventTarget>).addEventListener === 'function'
        ? (globalThis as unknown as EventTarget)
        : undefined);
    if (target === undefined) return;
    const onPageHide = () => this.close('page closed');
    target.addEventListener('pagehide', onPageHide);
    this.#unlistenPage = () => target.removeEventListener('pagehide', onPageHide);
  }

  /**
   * The one place the state changes: checks the transition, releases what the old state held and
   * the new one does not, and tells the listeners when the name pages see changes or has news.
   *
   * @throws {TypeError} on a move {@link CONNECTION_MOVES} does not have (a bug in this class).
   */
  #transition(next: ConnectionState): void {
    const from = this.#state;
    assertTransition('PilotConnection', CONNECTION_MOVES, from.kind, next.kind);
    this.#release(from, next);
    this.#state = next;
    if (next.kind === 'closed' || next.kind === 'denied') {
      this.#unlistenPage?.();
      this.#unlistenPage = undefined;
    }
    const name = publicState(next);
    const detail = this.#detail(next);
    this.#logger.debug({ from: from.kind, to: next.kind, detail }, 'pilot connection state');
    if (name !== this.#announced || detail !== undefined) this.#emitState(name, detail);
    this.#announceHandover();
  }

  #emitState(name: PilotConnectionState, detail: string | undefined): void {
    this.#announced = name;
    const refusal = this.refusal;
    if (refusal === undefined) this.#events.safeEmit('state', name, detail);
    else this.#events.safeEmit('state', name, detail, refusal);
  }

  /** Whether handover is possible now: the connected session's signalling says. */
  #handoverNow(): HandoverAvailability {
    if (this.#offerSource.kind === 'once' || 'offer' in this.#options) {
      return {
        available: false,
        reason: 'no-signalling',
        message: 'this session was made without a signalling connection to the cloud, which carries handover',
      };
    }
    const state = this.#state;
    if (state.kind === 'connected' && state.attempt.signalling !== undefined)
      return state.attempt.signalling.availability;
    if (state.kind === 'closed' || state.kind === 'denied')
      return { available: false, reason: 'closed', message: 'the session ended' };
    return { available: false, reason: 'starting', message: 'the session is not connected' };
  }

  /** Tells the `handover` listeners when whether handover is possible changed. */
  #announceHandover(): void {
    const next = this.#handoverNow();
    const before = this.#handover;
    if (
      before.available === next.available &&
      (next.available || (!before.available && before.message === next.message))
    )
      return;
    this.#handover = next;
    this.#events.safeEmit('handover', next);
  }

  /** Exit actions: whatever `from` holds that `next` does not is closed or cancelled. */
  #release(from: ConnectionState, next: ConnectionState): void {
    const attempt = attemptOf(from);
    if (attempt !== undefined && attempt !== attemptOf(next)) attempt.signalling?.close();
    switch (from.kind) {
      case 'idle':
      case 'offering':
      case 'closed':
      case 'denied':
        return;
      case 'dialing':
        from.race.abort();
        return;
      case 'reconnecting':
        this.#clock.clearTimeout(from.timer);
        return;
      case 'handshaking':
      case 'starting':
      case 'connected': {
        const session = sessionOf(from);
        if (session !== undefined && session !== sessionOf(next)) {
          this.#lastStats = { ...this.#lastStats, ...session.close() };
          this.#upkeep?.close();
          this.#upkeep = undefined;
        }
        // A link the session moved off lingers in the upkeep for what is in flight.
        if (from.link !== linkOf(next) && !(this.#upkeep?.owns(from.link) ?? false))
          from.link.close(closeInfo(next));
        return;
      }
      default:
        from satisfies never;
    }
  }

  /** What the `state` event says with the name, if anything. */
  #detail(state: ConnectionState): string | undefined {
    switch (state.kind) {
      case 'idle':
      case 'dialing':
      case 'handshaking':
      case 'starting':
        return undefined;
      case 'offering':
        return 'signalUrl' in this.#options ? 'asking for an offer' : undefined;
      case 'connected':
        return state.session.id;
      case 'reconnecting':
        return `${state.reason}; retrying in ${Math.round(state.delayMs)} ms`;
      case 'closed':
      case 'denied':
        return state.reason;
      default:
        return state satisfies never;
    }
  }

  #beginAttempt(number: number): void {
    const attempt: Attempt = { number };
    this.#transition({ kind: 'offering', attempt });
    this.#runAttempt(attempt).catch((err: unknown) => this.#attemptFailed(attempt, err));
  }

  /**
   * One attempt, from the token (asked for once per attempt) to `hello`; what follows comes from
   * the link.
   */
  async #runAttempt(attempt: Attempt): Promise<void> {
    let token: string;
    try {
      token = await this.#token();
    } catch (err) {
      this.#tokenFailed(attempt, err);
      return;
    }
    if (!this.#holds(attempt, 'offering')) return this.#ignoreLate('a token arrived');
    this.#sessionToken = token;
    const address = await this.#address(attempt, token);
    if (address === undefined) return;
    const backend = this.#backendFor(attempt);
    if (typeof backend !== 'string') {
      this.#drop(backend.why);
      return;
    }
    const race = new AbortController();
    this.#transition({ kind: 'dialing', attempt, address, race });
    let raced =
      backend === 'webrtc'
        ? await this.#dialRtc(attempt, race.signal)
        : await this.#race(attempt, address, race.signal);
    if (!raced.ok && backend === 'webtransport' && this.#rtcFallback(attempt)) {
      // Reachable only through ICE (and TURN): neither the robot's QUIC addresses nor the relay answered.
      this.#logger.info({ reason: raced.reason }, 'no QUIC path to the robot answered; trying WebRTC');
      const quicReason = raced.reason;
      const rtc = await this.#dialRtc(attempt, race.signal);
      raced = rtc.ok ? rtc : { ok: false, reason: `${quicReason}; then ${rtc.reason}` };
    }
    if (!this.#holds(attempt, 'dialing')) {
      // A race called off by leaving `dialing` closed its candidates itself.
      if (!raced.ok) return;
      raced.transport.close({ closeCode: 0, reason: 'pilot closed' });
      this.#ignoreLate('a candidate answered');
      return;
    }
    if (!raced.ok) {
      this.#drop(raced.reason);
      return;
    }
    const link = await Link.open(raced.url, raced.transport, this.#logger, raced.path);
    if (!this.#holds(attempt, 'dialing')) {
      link.close({ closeCode: 0, reason: 'pilot closed' });
      this.#ignoreLate('a control stream opened');
      return;
    }
    if (raced.url === RTC_URL) this.#followRtcPath(link, raced.transport as RtcPilotTransport);
    this.#transition({ kind: 'handshaking', attempt, link, early: [] });
    this.#helloScope = tokenScope(token);
    link.send({
      type: 'hello',
      v: 1,
      token,
      ...(address.sessionId !== undefined && { session_id: address.sessionId }),
    });
    link.start(this.#linkListener);
  }

  /**
   * Keeps a WebRTC link's path true while it is the connection's: ICE may start on a TURN pair and
   * move to a direct one (or back), under the same transport.
   */
  #followRtcPath(link: Link, transport: RtcPilotTransport): void {
    const check = async () => {
      const state = this.#state;
      if (link.closed || !('link' in state) || state.link !== link) return;
      const path = await transport.path().catch(() => link.path);
      if (path !== link.path) {
        link.setPath(path);
        this.#logger.info({ path }, 'the WebRTC session moved (ICE selected another candidate pair)');
        this.#events.safeEmit('path', path);
      }
      this.#clock.setTimeout(() => void check(), RTC_PATH_POLL_MS);
    };
    this.#clock.setTimeout(() => void check(), RTC_PATH_POLL_MS);
  }

  /** The robot's candidates (and the relay) raced over WebTransport. */
  #race(attempt: Attempt, address: RobotAddress, signal: AbortSignal): Promise<RaceResult> {
    const relay = this.#relayEntrant(attempt);
    return raceCandidates({
      // `relay: 'only'`: the robot's own addresses are never dialled.
      address: this.#relayOnly ? { ...address, urls: [] } : address,
      staggerMs: this.#options.candidateStaggerMs ?? CANDIDATE_STAGGER_MS,
      clock: this.#clock,
      createTransport: this.#createTransport,
      signal,
      ...(relay === undefined ? {} : { relay }),
    });
  }

  /**
   * A WebRTC session to the robot (`docs/protocol/webrtc.md`): the offer, answer and candidates
   * over this attempt's signalling, the STUN and TURN servers from the offer.
   */
  async #dialRtc(attempt: Attempt, signal: AbortSignal): Promise<RaceResult> {
    let transport: RtcPilotTransport;
    try {
      transport = openRtcTransport({
        signalling: attempt.signalling!.rtcSignalling(),
        iceServers: this.#offer?.iceServers ?? [],
      });
    } catch (err) {
      return { ok: false, reason: `WebRTC: ${err instanceof Error ? err.message : String(err)}` };
    }
    const giveUp = (reason: string) => transport.close({ closeCode: 0, reason });
    // Called off while dialling only: once it answered, the session is the connection's.
    const calledOff = () => giveUp('pilot closed');
    signal.addEventListener('abort', calledOff, { once: true });
    const timer = this.#clock.setTimeout(
      () =>
        giveUp(
          `no WebRTC connection within ${RTC_CONNECT_TIMEOUT_MS / 1000} s (ICE found no path to the robot)`,
        ),
      RTC_CONNECT_TIMEOUT_MS,
    );
    try {
      await transport.ready;
      // Through a TURN server the session is relayed, and says so wherever its path shows.
      const path = await transport.path().catch(() => 'direct' as const);
      return { ok: true, url: RTC_URL, transport, path };
    } catch (err) {
      return { ok: false, reason: `WebRTC: ${err instanceof Error ? err.message : String(err)}` };
    } finally {
      signal.removeEventListener('abort', calledOff);
      this.#clock.clearTimeout(timer);
    }
  }

  /**
   * Whether an attempt whose WebTransport race failed may try WebRTC: with `backend: 'auto'` (and
   * not `relay: 'only'`), when the robot serves it, the attempt has signalling for it, and the
   * attempt still dials.
   */
  #rtcFallback(attempt: Attempt): boolean {
    return (
      (this.#options.backend ?? 'auto') === 'auto' &&
      !this.#relayOnly &&
      this.#offer?.backends?.includes('webrtc') === true &&
      attempt.signalling !== undefined &&
      this.#holds(attempt, 'dialing')
    );
  }

  /**
   * The transport of this attempt: `options.backend`, or by default WebTransport where the browser
   * has it and the robot serves QUIC, else WebRTC where the robot serves it; why not, when neither.
   */
  #backendFor(attempt: Attempt): 'webtransport' | 'webrtc' | { readonly why: string } {
    const offer = this.#offer;
    const robot = offer?.robotId ?? 'the robot';
    const backends = offer?.backends ?? ['quic'];
    const rtc = backends.includes('webrtc') && attempt.signalling !== undefined;
    const webTransport =
      this.#options.createTransport !== undefined || typeof globalThis.WebTransport === 'function';
    const wanted = this.#options.backend ?? 'auto';
    if (wanted === 'webrtc') {
      return rtc
        ? 'webrtc'
        : {
            why: `robot ${robot} does not serve sessions on WebRTC, and this pilot asked for WebRTC only (backend: 'webrtc')`,
          };
    }
    if (wanted === 'webtransport' || (webTransport && backends.includes('quic'))) {
      return webTransport
        ? 'webtransport'
        : {
            why: "this browser has no WebTransport, and this pilot asked for it only (backend: 'webtransport')",
          };
    }
    if (rtc) return 'webrtc';
    return {
      why: webTransport
        ? `robot ${robot} serves no transport this pilot can use`
        : `this browser has no WebTransport, and robot ${robot} does not serve sessions on WebRTC; use a browser with WebTransport (Chromium 97 or later) or update the robot's svcd`,
    };
  }

  /**
   * The relay for this attempt's race, when the offer allows one: its port is asked for at once
   * (so the allocation is ready when the direct candidates' head start is over), and dialled only
   * if they did not answer by then.
   */
  #relayEntrant(attempt: Attempt): RelayEntrant | undefined {
    const signalling = attempt.signalling;
    if (signalling === undefined || this.#offer?.relay !== true || this.#options.relay === false)
      return undefined;
    const url = signalling.allocateRelay().then((port) => port.url);
    url.catch(() => undefined);
    const headStartMs = this.#relayOnly ? 0 : (this.#options.relayHeadStartMs ?? RELAY_HEAD_START_MS);
    return { url, headStartMs };
  }

  /** The pilot asked for the relay and nothing else (`relay: 'only'`). */
  get #relayOnly(): boolean {
    return this.#options.relay === 'only';
  }

  /**
   * The robot's address: the given offer, or a new one from svc-cloud for this attempt;
   * `undefined` when the attempt ended meanwhile or the offer names no address.
   */
  async #address(attempt: Attempt, token: string): Promise<RobotAddress | undefined> {
    const options = this.#options;
    if ('offer' in options) return options.offer;
    const asked = { signalUrl: options.signalUrl, robotId: options.robotId, token, clock: this.#clock };
    const source = this.#offerSource;
    let offer: RobotOffer;
    if (source.kind === 'once') offer = await source.request(asked);
    else {
      const signalling = source.open({ ...asked, logger: this.#logger, random: this.#random });
      attempt.signalling = signalling;
      this.#follow(attempt, signalling);
      offer = await signalling.offer();
    }
    if (!this.#holds(attempt, 'offering')) return this.#ignoreLate('an offer arrived');
    this.#offer = offer;
    this.#events.safeEmit('offer', offer);
    if (this.#relayOnly && !offer.relay) {
      this.#drop(
        `robot ${offer.robotId} does not allow the cloud relay (relay = false in its [agent] configuration), and this pilot uses the relay only (relay: 'only')`,
      );
      return undefined;
    }
    // A WebRTC robot needs no announced address: ICE finds its own through signalling.
    if (offer.urls.length > 0 || offer.relay || offer.backends?.includes('webrtc') === true) return offer;
    this.#drop(
      `robot ${offer.robotId} announced no address it can be reached at, does not serve WebRTC, and does not allow the cloud relay (relay = false)`,
    );
    return undefined;
  }

  /** Passes the signalling session's news on while `attempt` is the connection's. */
  #follow(attempt: Attempt, signalling: SignalSession): void {
    const current = () => attemptOf(this.#state) === attempt;
    signalling.on('handover', () => {
      if (current()) this.#announceHandover();
    });
    signalling.on('driver', (driver) => {
      if (current()) this.#events.safeEmit('driver', driver);
    });
    signalling.on('control-request', (request) => {
      if (current()) this.#events.safeEmit('control-request', request);
    });
    signalling.on('control-pending', (pending) => {
      if (current()) this.#events.safeEmit('control-pending', pending);
    });
    signalling.on('control-result', (result) => {
      if (current()) this.#events.safeEmit('control-result', result);
    });
    signalling.on('control-error', (message) => {
      if (current()) this.#events.safeEmit('control-error', message);
    });
    signalling.on('candidates', ({ urls, certificateHashes }) => {
      if (current() && !this.#relayOnly) this.#upkeep?.directAddresses(urls, certificateHashes);
    });
  }

  async #token(): Promise<string> {
    const token = this.#options.token;
    return typeof token === 'string' ? token : await token();
  }

  /** Whether the state is still `kind` of this attempt (not closed or replaced meanwhile). */
  #holds(attempt: Attempt, kind: ConnectionState['kind']): boolean {
    return this.#state.kind === kind && attemptOf(this.#state) === attempt;
  }

  /**
   * The token source failed: a 4xx answer but 429 is final (`denied` with its code); anything else
   * (the network, 5xx, 429, an error without a status) is retried with backoff, and the state's
   * detail says so.
   */
  #tokenFailed(attempt: Attempt, err: unknown): void {
    if (!this.#holds(attempt, 'offering')) {
      this.#ignoreLate('a token request failed');
      return;
    }
    const refusal = refusalOfTokenError(err);
    if (refusal !== undefined) {
      this.#deny(refusal.code, refusal.message);
      return;
    }
    this.#drop(`cannot get a session token: ${err instanceof Error ? err.message : String(err)}`);
  }

  #attemptFailed(attempt: Attempt, err: unknown): void {
    if (attemptOf(this.#state) !== attempt) {
      this.#ignoreLate('an attempt failed');
      return;
    }
    // A refused token or a missing grant stays refused. An offline robot before any session is a
    // refusal that passes: asked for again after each backoff, with `refusal` saying so meanwhile
    // (final only without reconnecting); after a session it is probably restarting, and is waited
    // for. A network problem passes.
    if (isOfferError(err, 'bad-token')) this.#deny('token-refused', err.message);
    else if (isOfferError(err, 'forbidden')) this.#deny('forbidden', err.message);
    else if (isOfferError(err, 'robot-offline') && !this.#everConnected) {
      if (this.#options.reconnect === false) this.#deny('robot-offline', err.message);
      else {
        this.#offline = { code: 'robot-offline', message: err.message };
        this.#drop(err.message);
      }
    } else this.#drop(err instanceof Error ? err.message : String(err));
  }

  #deny(code: PilotRefusalCode, reason: string): void {
    this.#transition({ kind: 'denied', reason, code });
  }

  /** The attempt or session ended: try again after a backoff, or close when told not to. */
  #drop(reason: string): void {
    const from = this.#state;
    const attempt = attemptOf(from);
    if (attempt === undefined) throw new TypeError(`PilotConnection cannot drop from ${from.kind}`);
    if (this.#options.reconnect === false) {
      this.#transition({ kind: 'closed', reason });
      return;
    }
    if (from.kind === 'connected' && this.#clock.now() - from.sinceMs >= STABLE_SESSION_MS)
      this.#backoff.reset();
    const delayMs = this.#backoff.next();
    this.#logger.info({ reason, delayMs }, 'pilot connection lost; reconnecting');
    const reconnecting: ConnectionState = {
      kind: 'reconnecting',
      nextAttempt: attempt.number + 1,
      delayMs,
      reason,
      timer: this.#clock.setTimeout(() => this.#retry(reconnecting), delayMs),
    };
    this.#transition(reconnecting);
  }

  #retry(from: ConnectionState): void {
    if (this.#state !== from || from.kind !== 'reconnecting') {
      this.#ignoreLate('a retry timer fired');
      return;
    }
    this.#beginAttempt(from.nextAttempt);
  }

  #onDatagram(link: Link, bytes: Uint8Array): void {
    const state = this.#state;
    if (linkOf(state) !== link && !(this.#upkeep?.owns(link) ?? false)) {
      this.#ignoreLate('a datagram');
      return;
    }
    const session = sessionOf(state);
    if (session !== undefined) this.#feed(session, bytes);
    else if (state.kind === 'handshaking' && state.early.length < MAX_EARLY_DATAGRAMS)
      state.early.push(bytes);
  }

  #feed(session: Session, bytes: Uint8Array): void {
    if (session.handleDatagram(bytes) === 'malformed') this.#malformed++;
  }

  #onControl(link: Link, message: ControlMessage): void {
    const state = this.#state;
    if (linkOf(state) !== link && this.#upkeep?.owns(link) === true) {
      this.#upkeep.control(link, message);
      return;
    }
    if (linkOf(state) !== link) {
      this.#ignoreLate(`a ${message.type} message`);
      return;
    }
    sessionOf(state)?.heardRobot();
    switch (message.type) {
      case 'welcome':
        if (state.kind === 'handshaking') this.#welcome(state, message);
        else this.#ignoreLate('a second welcome');
        return;
      case 'denied':
        // A token the robot refused is the pilot's to renew; any other refusal is the robot's.
        this.#deny(
          message.code === 'token-refused' || message.code === 'token-revoked'
            ? 'token-refused'
            : 'robot-denied',
          message.reason,
        );
        return;
      case 'bye':
        // The robot ends the session (revoked, or shutting down): reconnect if we should.
        this.#drop(message.reason ?? 'the robot ended the session');
        return;
      case 'agent-stats':
        this.#robotStats = message.channels;
        return;
      case 'qos':
        // The driver changed the profile: every pilot of the robot follows it.
        this.#profile = message.profile;
        if (this.#presentation !== undefined && sessionOf(state)?.role !== 'driver') return;
        sessionOf(state)?.applyQos(message.profile, message.presentation_delay_ms);
        return;
      case 'pong': {
        this.#clockSamples.add({
          sentMs: message.t,
          robotMs: message.robot_time,
          receivedMs: this.#clock.now(),
        });
        const estimate = this.#clockSamples.estimate();
        if (estimate === undefined) return;
        this.#rttMs = estimate.latestRttMs;
        if (estimate.offsetMs === this.#clockOffsetMs) return;
        this.#clockOffsetMs = estimate.offsetMs;
        sessionOf(state)?.setClockOffset(estimate.offsetMs);
        return;
      }
      case 'source': {
        const session = sessionOf(state);
        if (session === undefined) return;
        session.sources.set(message.channel, { state: message.state, reason: message.reason });
        this.#events.safeEmit('source', message.channel, message.state, message.reason);
        return;
      }
      case 'role':
        this.#roleChanged(state, message.role, message.reason);
        return;
      case 'heartbeat':
        // Liveness: echoed at once from the reader, whatever timers a background tab throttles.
        link.send({ type: 'heartbeat', seq: message.seq });
        return;
      case 'renewed':
        this.#upkeep?.renewed(message.exp);
        return;
      case 'moved':
        // Answered on the link that asked for the move (the upkeep's), not on this one.
        return;
      case 'hello':
      case 'ping':
      case 'request-keyframe':
      case 'loss':
      case 'set-qos':
      case 'pilot-stats':
      case 'renew':
        // The pilot's own messages: a robot has no reason to send them.
        return;
      default:
        message satisfies never;
    }
  }

  /**
   * svc-cloud moved the driver slot and the robot applied it (`role`): from now on this session's
   * commands are sent only if it drives. The page hears a `role` event and, when connected, a
   * `state` event whose detail says so.
   */
  #roleChanged(state: ConnectionState, role: ControlRole, reason: string | undefined): void {
    const session = sessionOf(state);
    if (session === undefined || session.role === role) return;
    session.setRole(role);
    this.#logger.info({ role, reason }, "the robot changed this session's role");
    this.#events.safeEmit('role', role, reason);
    if (state.kind === 'connected')
      this.#emitState(
        'connected',
        `now ${role === 'driver' ? 'driving' : 'observing'}${reason === undefined ? '' : `: ${reason}`}`,
      );
  }

  #welcome(from: Extract<ConnectionState, { kind: 'handshaking' }>, welcome: Welcome): void {
    this.#sessions++;
    this.#profile = welcome.qos.profile;
    // A new session may be with a restarted robot: its clock is measured afresh.
    this.#clockSamples.reset();
    this.#clockOffsetMs = undefined;
    const session: Session = new Session({
      welcome,
      link: from.link,
      container: this.#options.container,
      presentationDelayMs: this.#options.presentationDelayMs,
      jitter: this.#options.jitter,
      clockOffsetMs: undefined,
      robotClockMs: () => this.robotClockMs(),
      commandHold: () => this.#commandHold,
      holdCommandsWhileStale: this.#options.holdCommandsWhileStale ?? true,
      onRobotSilent: (reason) => {
        if (sessionOf(this.#state) === session) this.#drop(reason);
        else this.#ignoreLate('a silence check');
      },
      clock: this.#clock,
      random: this.#random,
      events: this.#events,
      logger: this.#logger,
    });
    this.#transition({ kind: 'starting', attempt: from.attempt, link: from.link, session });
    this.#startUpkeep(from.attempt, from.link, session);
    const started = session.start();
    // The clock offset at once, not after the first ping interval: the replay paints early.
    from.link.send({ type: 'ping', t: this.#clock.now() });
    // Every reassembler exists and every decoder is starting: what came early goes in, in order.
    for (const datagram of from.early) this.#feed(session, datagram);
    started.then(
      () => this.#started(session),
      (err: unknown) => this.#attemptFailed(from.attempt, err),
    );
  }

  /** Starts the session's upkeep: the move off the relay, and token renewal. */
  #startUpkeep(attempt: Attempt, link: Link, session: Session): void {
    const offer = this.#offer;
    const token = this.#options.token;
    this.#upkeep = new SessionUpkeep({
      clock: this.#clock,
      logger: this.#logger,
      createTransport: this.#createTransport,
      direct:
        offer === undefined || this.#relayOnly
          ? { urls: [], certificateHashes: [] }
          : { urls: offer.urls, certificateHashes: offer.certificateHashes, sessionId: offer.sessionId },
      sessionId: offer?.sessionId ?? session.id,
      link,
      session,
      listener: this.#linkListener,
      token: this.#sessionToken ?? '',
      ...(typeof token === 'function' && { freshToken: async () => await token() }),
      ...(attempt.signalling !== undefined && { signalling: attempt.signalling }),
      onMoved: (next) => this.#moved(session, next),
      onSwitched: (change) => {
        this.#pathSwitches.push(change);
        this.#logger.info({ ...change }, 'path switch complete');
      },
    });
    this.#upkeep.start();
  }

  /** The session moved to `link` (off the relay): the state keeps everything but the link. */
  #moved(session: Session, link: Link): void {
    const state = this.#state;
    if ((state.kind !== 'starting' && state.kind !== 'connected') || state.session !== session) {
      link.close({ closeCode: 0, reason: 'pilot closed' });
      this.#ignoreLate('a path move');
      return;
    }
    this.#transition({ ...state, link });
    this.#events.safeEmit('path', link.path);
  }

  #started(session: Session): void {
    const state = this.#state;
    if (state.kind !== 'starting' || state.session !== session) {
      this.#ignoreLate('the decoders started');
      return;
    }
    const { attempt, link } = state;
    this.#everConnected = true;
    this.#offline = undefined;
    // An observer keeps the presentation it chose in an earlier session.
    const own = this.#presentation;
    if (own !== undefined && session.role !== 'driver') {
      session.applyQos(own, qosProfile(own).presentationDelayMs);
    }
    this.#transition({ kind: 'connected', attempt, link, session, sinceMs: this.#clock.now() });
  }

  #onLinkEnded(link: Link, reason: string): void {
    if (linkOf(this.#state) !== link && this.#upkeep?.owns(link) === true) {
      this.#upkeep.ended(link, reason);
      return;
    }
    if (linkOf(this.#state) !== link) {
      this.#ignoreLate('a transport closed');
      return;
    }
    this.#drop(reason);
  }

  /** Counts an event for a state the connection has left; returns `undefined` for `return`. */
  #ignoreLate(what: string): undefined {
    this.#late++;
    this.#logger.debug({ state: this.#state.kind, event: what }, 'a late event was ignored');
    return undefined;
  }
}

/** How the transport is closed on the way to `next`. */
function closeInfo(next: ConnectionState): WebTransportCloseInfo {
  switch (next.kind) {
    case 'denied':
      return { closeCode: 1, reason: 'denied' };
    case 'closed':
      return { closeCode: 0, reason: 'pilot closed' };
    case 'reconnecting':
      return { closeCode: 0, reason: 'reconnecting' };
    case 'idle':
    case 'offering':
    case 'dialing':
    case 'handshaking':
    case 'starting':
    case 'connected':
      return { closeCode: 0, reason: 'pilot closed' };
    default:
      return next satisfies never;
  }
}
