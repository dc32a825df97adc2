import {
  assertTransition,
  Backoff,
  type BackoffPolicy,
  type Clock,
  CodedError,
  codedErrorGuard,
  type Logger,
  RECONNECT_BACKOFF,
  silentLogger,
  systemClock,
  type TimerHandle,
  type TransitionTable,
  TypedEmitter,
} from '@svc/runtime';
import {
  type ControlOutcome,
  encodeSignalMessage,
  parseSignalServerMessage,
  type RelayAllocationRefusal,
  type SessionBackend,
  SIGNAL_CLOSE,
  SIGNAL_SUBPROTOCOL,
  type SignalCandidate,
  type SignalChannel,
  type SignalClientMessage,
  type SignalPerson,
  type SignalServerMessage,
  WireError,
} from '@svc/wire';
import { tokenExpiryMs } from './refusal.js';
import type { RtcSignalling } from './rtc-transport.js';

/** What the signalling server answered a pilot's `connect`: how to reach the robot and as what. */
export interface RobotOffer {
  readonly sessionId: string;
  readonly robotId: string;
  readonly role: 'driver' | 'observer';
  /** `https://<address>:<port>/` for each candidate, in the robot's order. */
  readonly urls: readonly string[];
  readonly candidates: readonly SignalCandidate[];
  /** SHA-256 of the robot's certificates, hex: what `serverCertificateHashes` pins. */
  readonly certificateHashes: readonly string[];
  readonly channels: readonly SignalChannel[];
  readonly relay: boolean;
  /** When `relay`: the node whose relay serves this session, and the pilot's one-use token for it. */
  readonly relayGrant?: { readonly host: string; readonly token: string };
  /** The transports the robot serves sessions on (`quic` only from robots before WebRTC). */
  readonly backends?: readonly SessionBackend[];
  /** STUN and TURN servers for a WebRTC session, TURN credentials minted for this one. */
  readonly iceServers?: readonly RTCIceServer[];
}

/** The pilot's relay port for a session (`relay-allocated`). */
export interface RelayPort {
  /** `https://<host>:<port>/`: WebTransport through the relay to the robot, pinning its hashes. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
}

/** Why the relay could not be had: svc-cloud's refusal code, or `unreachable` (no signalling). */
export class RelayError extends CodedError<RelayAllocationRefusal | 'unreachable' | 'timeout'> {
  override readonly name = 'RelayError';
}

/** How long an answer to `relay-allocate` or `renew` may take, ms. */
export const SIGNAL_ANSWER_TIMEOUT_MS = 5000;
/** How long the robot's answer to a WebRTC offer may take (it gathers its candidates first), ms. */
export const RTC_ANSWER_TIMEOUT_MS = 10_000;

/** Why an offer could not be had ({@link SignalSession.offer}, `requestOffer`). */
export type OfferErrorCode =
  | 'bad-token'
  | 'forbidden'
  | 'robot-offline'
  | 'unreachable'
  | 'protocol'
  | 'timeout';

/** A failed offer; `code` says which, the message what to do. */
export class OfferError extends CodedError<OfferErrorCode> {
  override readonly name = 'OfferError';
}

/** Whether `err` is an {@link OfferError}, optionally with one `code`. */
export const isOfferError = codedErrorGuard(OfferError);

/** Options of `requestOffer` and of a {@link SignalSession}'s offer. */
export interface RequestOfferOptions {
  /** `wss://<host>/ws` of svc-cloud. */
  readonly signalUrl: string;
  /** A pilot session token for the robot (`POST /api/v1/session-tokens`). */
  readonly token: string;
  readonly robotId: string;
  /** Give up after this long (default 10 000 ms). */
  readonly timeoutMs?: number;
  /** WebSocket constructor (default the browser's). */
  readonly WebSocketImpl?: typeof WebSocket;
  /** Timers for the time limit (default `systemClock`). */
  readonly clock?: Clock;
}

/** `https://<address>:<port>/`, with IPv6 addresses in brackets. */
export function candidateUrl(candidate: SignalCandidate): string {
  return hostUrl(candidate.address, candidate.port);
}

/** `https://<host>:<port>/`, an IPv6 literal in brackets. */
export function hostUrl(host: string, port: number): string {
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}/`;
}

/** Default time limit of the offer, ms (as {@link RequestOfferOptions.timeoutMs}). */
export const OFFER_TIMEOUT_MS = 10_000;
/** The signalling connection is lost when nothing came from the server for this many heartbeat periods. */
export const SIGNAL_SILENCE_HEARTBEATS = 3;
/**
 * Delays between attempts to get the signalling connection back: full jitter from 0.5 s doubling
 * to 30 s, as the robot's (the direct session goes on meanwhile; only handover waits).
 */
export const SIGNAL_RECONNECT_BACKOFF: BackoffPolicy = RECONNECT_BACKOFF;

/** A person as svc-cloud names them to other pilots: the token's `sub` and a display name. */
export type SlotUser = SignalPerson;

/** Who holds a robot's driver slot. */
export interface DriverSlot {
  /** The driver's session. */
  readonly sessionId: string;
  /** Who drives (`name` is `null` when the service knows none). */
  readonly user: SlotUser;
  /** Whether the driver is this pilot's own session. */
  readonly self: boolean;
}

/** Someone asks the driver (this session) for the slot: answer with `answerControl`. */
export interface ControlRequest {
  readonly requestId: string;
  /** Who asks. */
  readonly user: SlotUser;
  /** How long the driver has to answer, ms, when the request arrived. */
  readonly expiresInMs: number;
}

/** This session's request waits for the driver's answer. */
export interface ControlPending {
  readonly requestId: string;
  /** Who is asked. */
  readonly driver: SlotUser;
  /** How long the driver has to answer, ms, when this notice arrived. */
  readonly expiresInMs: number;
}

/** How a control request ended, for this session (`control-result` in `docs/protocol/signalling.md`). */
export interface ControlResult {
  readonly requestId: string;
  readonly outcome: ControlOutcome;
  /** What happened and what to do, in the service's words. */
  readonly message: string;
}

/**
 * Why handover is not possible now:
 * - `no-signalling`: the session was made without a signalling connection (a given offer);
 * - `starting`: the offer is on its way;
 * - `signalling-lost`: the signalling connection dropped; the direct session goes on, and the
 *   connection is being made again;
 * - `not-attached`: the signalling connection is back and the session asked to be linked to it
 *   (`resume`); handover comes back with svc-cloud's answer (`driver`);
 * - `robot-offline`: the robot lost its connection to the cloud; its driver keeps driving, and the
 *   slot changes hands again once the robot is back;
 * - `token-expired`: the token expired or was revoked, so the signalling connection cannot be made
 *   again: handover is unavailable until the next session (with a new token);
 * - `closed`: the session ended.
 */
export type HandoverUnavailableReason =
  | 'no-signalling'
  | 'starting'
  | 'signalling-lost'
  | 'not-attached'
  | 'robot-offline'
  | 'token-expired'
  | 'closed';

/** Whether the driver slot can change hands from this session now, and if not, why. */
export type HandoverAvailability =
  | { readonly available: true }
  | {
      readonly available: false;
      readonly reason: HandoverUnavailableReason;
      /** What happened, for a person. */
      readonly message: string;
    };

/** What a {@link SignalSession} tells its listeners. */
export interface SignalSessionEvents {
  /** Whether handover is possible changed. */
  handover: (availability: HandoverAvailability) => void;
  /** Who drives changed (`null`: the slot is free). */
  driver: (driver: DriverSlot | null) => void;
  /** Someone asks this session, the driver, for the slot. */
  'control-request': (request: ControlRequest) => void;
  /** This session's request waits for the driver. */
  'control-pending': (pending: ControlPending) => void;
  /** A request this session made, or was asked, ended. */
  'control-result': (result: ControlResult) => void;
  /** The service refused a control message (`error`, for example an answer to an expired request). */
  'control-error': (message: string) => void;
  /** The robot announced other direct addresses or certificates (`candidates`). */
  candidates: (address: {
    readonly urls: readonly string[];
    readonly certificateHashes: readonly string[];
  }) => void;
}

/** Options of a {@link SignalSession}: those of {@link RequestOfferOptions}, and how it keeps going. */
export interface SignalSessionOptions extends RequestOfferOptions {
  /** Where it logs (default silent). */
  readonly logger?: Logger;
  /** A uniform draw in `[0, 1)` for the reconnection jitter (default `Math.random`). */
  readonly random?: () => number;
}

/**
 * The session's signalling connection, each variant holding what is valid in it:
 * `idle` → `offering` (challenge, `auth`, `connect`, waiting for the offer) → `open` (heartbeats;
 * the driver news and the control messages) → on a drop `waiting` (a backoff timer) → `resuming`
 * (a new connection, `auth` again with the same token, no new offer) → `open`. `closed` is final.
 */
type SignalState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'offering'; readonly socket: WebSocket; readonly timer: TimerHandle }
  | {
      readonly kind: 'open';
      readonly socket: WebSocket;
      readonly heartbeat: TimerHandle;
      /**
       * Whether svc-cloud links this session to this connection: true for the connection that
       * made the offer, and for a later one once a `driver` message says so.
       */
      attached: boolean;
    }
  | { readonly kind: 'waiting'; readonly timer: TimerHandle; readonly reason: string }
  | { readonly kind: 'resuming'; readonly socket: WebSocket }
  | { readonly kind: 'closed'; readonly reason: 'token-expired' | 'closed'; readonly message: string };

const SIGNAL_MOVES: TransitionTable<SignalState['kind']> = {
  idle: ['offering', 'closed'],
  // A failed offer ends the signalling session: the caller decides whether to ask again.
  offering: ['open', 'closed'],
  open: ['waiting', 'closed'],
  // A connection that cannot even be made waits again.
  waiting: ['resuming', 'waiting', 'closed'],
  resuming: ['open', 'waiting', 'closed'],
  closed: [],
};

type Socketed = Extract<SignalState, { socket: WebSocket }>;

/**
 * A pilot session's signalling connection to svc-cloud that stays open for the session's life
 * (`docs/protocol/signalling.md`): it asks for the offer ({@link offer}), then keeps the WebSocket
 * with a `heartbeat` every `auth-ok.heartbeat_ms`, hears who drives and the control messages, and
 * sends the driver-slot calls for its session. When the connection drops, the direct session with
 * the robot goes on: handover is unavailable meanwhile ({@link availability}), and the connection
 * is made again with backoff, answering the challenge with the same token and asking for no new
 * offer. A token that expired (or was revoked) ends it: handover is unavailable until the next
 * session.
 */
export class SignalSession {
  readonly #options: SignalSessionOptions;
  readonly #Impl: typeof WebSocket;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #backoff: Backoff;
  readonly #events: TypedEmitter<SignalSessionEvents>;
  #state: SignalState = { kind: 'idle' };
  #offer: Promise<RobotOffer> | undefined;
  #settleOffer: ((result: RobotOffer | OfferError) => void) | undefined;
  #sessionId: string | undefined;
  #heartbeatMs = 0;
  #scope: 'drive' | 'observe' | undefined;
  #lastHeardMs = 0;
  #robotOffline = false;
  #driver: DriverSlot | null | undefined;
  /** The request waiting for this session's answer, with its deadline on the clock. */
  #asked: (ControlRequest & { readonly deadlineMs: number }) | undefined;
  #announced: HandoverAvailability = { available: false, reason: 'starting', message: STARTING };
  #relayGrant: { readonly host: string; readonly token: string } | undefined;
  #relayWaiter: ((result: RelayPort | RelayError) => void) | undefined;
  #rtcWaiter: ((result: string | Error) => void) | undefined;
  readonly #rtcCandidateListeners = new Set<(candidate: string, mid: string) => void>();
  #renewWaiter: ((result: number | Error) => void) | undefined;

  constructor(options: SignalSessionOptions) {
    this.#options = options;
    this.#Impl = options.WebSocketImpl ?? WebSocket;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#backoff = new Backoff(SIGNAL_RECONNECT_BACKOFF, options.random ?? Math.random);
    this.#events = new TypedEmitter<SignalSessionEvents>(this.#logger);
  }

  /** Adds a listener; returns the function that removes it. A listener that throws is logged. */
  on<K extends keyof SignalSessionEvents>(event: K, listener: SignalSessionEvents[K]): () => void {
    return this.#events.on(event, listener);
  }

  /**
   * Opens the connection and asks for a session: resolves with the offer, and the connection
   * stays open. Rejects with an {@link OfferError} as {@link requestOffer} does (the signalling
   * session is then closed). Calling it again returns the same promise.
   */
  offer(): Promise<RobotOffer> {
    if (this.#offer !== undefined) return this.#offer;
    this.#offer = new Promise<RobotOffer>((resolve, reject) => {
      this.#settleOffer = (result) => {
        this.#settleOffer = undefined;
        if (result instanceof OfferError) reject(result);
        else resolve(result);
      };
    });
    if (this.#state.kind !== 'idle') {
      this.#settleOffer?.(new OfferError('unreachable', 'the signalling session was closed before it began'));
      return this.#offer;
    }
    const socket = this.#open();
    if (socket === undefined) return this.#offer;
    const timer = this.#clock.setTimeout(
      () =>
        this.#offerFailed(
          new OfferError('timeout', 'the signalling server did not answer in time; try again'),
        ),
      this.#options.timeoutMs ?? OFFER_TIMEOUT_MS,
    );
    this.#transition({ kind: 'offering', socket, timer });
    return this.#offer;
  }

  /** Whether the driver slot can change hands from this session now, and if not, why. */
  get availability(): HandoverAvailability {
    return this.#announced;
  }

  /** Who drives, as svc-cloud last said (`null`: nobody; `undefined`: not heard yet). */
  get driver(): DriverSlot | null | undefined {
    return this.#driver;
  }

  /** The request waiting for this session's answer, if one is (its `expiresInMs` counts down). */
  get asked(): ControlRequest | undefined {
    const asked = this.#asked;
    if (asked === undefined) return undefined;
    const left = asked.deadlineMs - this.#clock.now();
    if (left <= 0) return undefined;
    return { requestId: asked.requestId, user: asked.user, expiresInMs: left };
  }

  /** The scope of the token, as `auth-ok` said (`undefined` before). */
  get scope(): 'drive' | 'observe' | undefined {
    return this.#scope;
  }

  /**
   * Asks the driver for the slot (`request-control`). Returns `false`, sending nothing, when
   * handover is not available ({@link availability}).
   */
  requestControl(): boolean {
    return this.#sendFor((session_id) => ({ type: 'request-control', session_id }));
  }

  /**
   * Takes the slot over at once (`take-control`; svc-cloud allows it to an org admin or owner and
   * answers anyone else with a `denied` result). `false` when handover is not available.
   */
  takeControl(): boolean {
    return this.#sendFor((session_id) => ({ type: 'take-control', session_id }));
  }

  /** Gives the slot up (`release-control`). `false` when handover is not available. */
  releaseControl(): boolean {
    return this.#sendFor((session_id) => ({ type: 'release-control', session_id }));
  }

  /**
   * Answers the request waiting for this session (`answer-control`). Returns `false`, sending
   * nothing, when handover is not available or no request `requestId` waits (answered, expired or
   * ended).
   */
  answerControl(requestId: string, grant: boolean): boolean {
    if (this.asked?.requestId !== requestId) return false;
    if (!this.#sendFor(() => ({ type: 'answer-control', request_id: requestId, grant }))) return false;
    this.#asked = undefined;
    return true;
  }

  /**
   * Asks svc-cloud for this session's relay port with the offer's pilot token (`relay-allocate`).
   * Once per session: the token opens one allocation. Rejects with a {@link RelayError} saying why
   * there is none.
   */
  allocateRelay(): Promise<RelayPort> {
    const grant = this.#relayGrant;
    const state = this.#state;
    const sessionId = this.#sessionId;
    if (grant === undefined || sessionId === undefined) {
      return Promise.reject(new RelayError('not-allowed', 'the offer allows no relay for this session'));
    }
    if (state.kind !== 'open') {
      return Promise.reject(new RelayError('unreachable', 'the signalling connection is not open'));
    }
    this.#relayGrant = undefined;
    return new Promise<RelayPort>((resolve, reject) => {
      const timer = this.#clock.setTimeout(
        () =>
          this.#relayWaiter?.(
            new RelayError('timeout', 'svc-cloud did not answer the relay request in time'),
          ),
        SIGNAL_ANSWER_TIMEOUT_MS,
      );
      this.#relayWaiter = (result) => {
        this.#clock.clearTimeout(timer);
        this.#relayWaiter = undefined;
        if (result instanceof RelayError) reject(result);
        else resolve(result);
      };
      this.#send(state.socket, { type: 'relay-allocate', session_id: sessionId, token: grant.token });
    });
  }

  /**
   * The offer, answer and candidates of a WebRTC session for this session, over this connection
   * (`rtc-offer`, `rtc-answer`, `rtc-candidate`; `docs/protocol/webrtc.md`).
   */
  rtcSignalling(): RtcSignalling {
    return {
      exchange: (sdp) => {
        const state = this.#state;
        const sessionId = this.#sessionId;
        if (state.kind !== 'open' || sessionId === undefined) {
          return Promise.reject(new Error('the signalling connection is not open'));
        }
        this.#rtcWaiter?.(new Error('replaced by a newer WebRTC offer'));
        return new Promise<string>((resolve, reject) => {
          const timer = this.#clock.setTimeout(
            () => this.#rtcWaiter?.(new Error('the robot did not answer the WebRTC offer in time')),
            RTC_ANSWER_TIMEOUT_MS,
          );
          this.#rtcWaiter = (result) => {
            this.#clock.clearTimeout(timer);
            this.#rtcWaiter = undefined;
            if (result instanceof Error) reject(result);
            else resolve(result);
          };
          this.#send(state.socket, { type: 'rtc-offer', session_id: sessionId, sdp });
        });
      },
      sendCandidate: (candidate, mid) => {
        const state = this.#state;
        const sessionId = this.#sessionId;
        if (state.kind === 'open' && sessionId !== undefined) {
          this.#send(state.socket, { type: 'rtc-candidate', session_id: sessionId, candidate, mid });
        }
      },
      onCandidate: (listener) => {
        this.#rtcCandidateListeners.add(listener);
        return () => this.#rtcCandidateListeners.delete(listener);
      },
    };
  }

  /**
   * Renews the session with a fresh pilot session token (`renew`): svc-cloud keeps it, and its
   * relay, until the new token's expiry. Resolves with that expiry (seconds since the epoch).
   */
  renew(token: string): Promise<number> {
    const state = this.#state;
    const sessionId = this.#sessionId;
    if (state.kind !== 'open' || sessionId === undefined) {
      return Promise.reject(new Error('the signalling connection is not open'));
    }
    this.#renewWaiter?.(new Error('replaced by a newer renewal'));
    return new Promise<number>((resolve, reject) => {
      const timer = this.#clock.setTimeout(
        () => this.#renewWaiter?.(new Error('svc-cloud did not answer the renewal in time')),
        SIGNAL_ANSWER_TIMEOUT_MS,
      );
      this.#renewWaiter = (result) => {
        this.#clock.clearTimeout(timer);
        this.#renewWaiter = undefined;
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      this.#send(state.socket, { type: 'renew', session_id: sessionId, token });
    });
  }

  /** Closes the connection for good (the session ended). */
  close(): void {
    this.#relayWaiter?.(new RelayError('unreachable', 'the session ended'));
    this.#renewWaiter?.(new Error('the session ended'));
    if (this.#state.kind === 'closed') return;
    this.#transition({ kind: 'closed', reason: 'closed', message: 'the session ended' });
    this.#offerFailed(
      new OfferError('unreachable', 'the signalling session was closed before an offer came'),
    );
  }

  // -------------------------------------------------------------------------------------------

  #sendFor(message: (sessionId: string) => SignalClientMessage): boolean {
    const state = this.#state;
    const sessionId = this.#sessionId;
    if (!this.#announced.available || state.kind !== 'open' || sessionId === undefined) return false;
    state.socket.send(encodeSignalMessage(message(sessionId)));
    return true;
  }

  /** A new WebSocket with its handlers, or `undefined` when it could not even be made (then settled). */
  #open(): WebSocket | undefined {
    let socket: WebSocket;
    try {
      socket = new this.#Impl(this.#options.signalUrl, SIGNAL_SUBPROTOCOL);
    } catch (err) {
      const failure = new OfferError(
        'unreachable',
        `cannot open ${this.#options.signalUrl}: ${String(err)}`,
        {
          cause: err,
        },
      );
      if (this.#state.kind === 'idle') {
        this.#transition({ kind: 'closed', reason: 'closed', message: failure.message });
        this.#offerFailed(failure);
      } else this.#lost(failure.message);
      return undefined;
    }
    socket.onmessage = (event) => {
      if (this.#socketOf() !== socket || typeof event.data !== 'string') return;
      this.#lastHeardMs = this.#clock.now();
      const message = parseSignalServerMessage(event.data);
      if (message instanceof WireError) this.#malformed(message);
      else this.#onMessage(message);
    };
    socket.onclose = (event) => {
      if (this.#socketOf() === socket) this.#onClose(event.code);
    };
    // An error is always followed by a close; the close says what to do.
    socket.onerror = () => undefined;
    return socket;
  }

  #socketOf(): WebSocket | undefined {
    const state = this.#state;
    return 'socket' in state ? state.socket : undefined;
  }

  #send(socket: WebSocket, message: SignalClientMessage): void {
    socket.send(encodeSignalMessage(message));
  }

  #onMessage(message: SignalServerMessage): void {
    const state = this.#state as Socketed;
    switch (message.type) {
      case 'challenge':
        this.#send(state.socket, { type: 'auth', v: 2, token: this.#options.token });
        return;
      case 'auth-ok':
        this.#heartbeatMs = message.heartbeat_ms;
        this.#scope = message.scope;
        if (state.kind === 'offering')
          this.#send(state.socket, { type: 'connect', robot_id: this.#options.robotId });
        else if (state.kind === 'resuming') this.#resumed(state.socket);
        return;
      case 'offer':
        if (state.kind === 'offering') this.#offered(state, message);
        return;
      case 'robot-offline':
        if (state.kind === 'offering') {
          this.#offerFailed(
            new OfferError('robot-offline', `robot ${message.robot_id} is offline now; try again later`),
          );
          return;
        }
        // Unprompted: the robot lost the cloud; nothing changes hands until a `driver` says it is back.
        this.#robotOffline = true;
        this.#asked = undefined;
        this.#announce();
        return;
      case 'denied':
        if (state.kind === 'offering') {
          this.#offerFailed(
            new OfferError(message.reason === 'bad-token' ? 'bad-token' : 'forbidden', message.message),
          );
        } else if (message.reason === 'bad-token') this.#tokenExpired(message.message);
        return;
      case 'error':
        if (state.kind === 'offering') this.#offerFailed(new OfferError('protocol', message.message));
        else this.#events.safeEmit('control-error', message.message);
        return;
      case 'driver':
        this.#onDriver(message);
        return;
      case 'control-request': {
        if (message.session_id !== this.#sessionId) return;
        const request = {
          requestId: message.request_id,
          user: message.user,
          expiresInMs: message.expires_in_ms,
        };
        this.#asked = { ...request, deadlineMs: this.#clock.now() + message.expires_in_ms };
        this.#events.safeEmit('control-request', request);
        return;
      }
      case 'control-pending':
        if (message.session_id !== this.#sessionId) return;
        this.#events.safeEmit('control-pending', {
          requestId: message.request_id,
          driver: message.driver,
          expiresInMs: message.expires_in_ms,
        });
        return;
      case 'control-result':
        if (message.session_id !== this.#sessionId) return;
        if (this.#asked?.requestId === message.request_id) this.#asked = undefined;
        this.#events.safeEmit('control-result', {
          requestId: message.request_id,
          outcome: message.outcome,
          message: message.message,
        });
        return;
      case 'heartbeat-ack':
        return;
      case 'relay-allocated':
        if (message.session_id !== this.#sessionId) return;
        this.#relayWaiter?.({
          url: hostUrl(message.host, message.port),
          host: message.host,
          port: message.port,
        });
        return;
      case 'relay-refused':
        if (message.session_id !== this.#sessionId) return;
        this.#relayWaiter?.(new RelayError(message.code, message.message));
        return;
      case 'renewed':
        if (message.session_id === this.#sessionId) this.#renewWaiter?.(message.exp);
        return;
      case 'candidates':
        this.#events.safeEmit('candidates', {
          urls: message.candidates.map(candidateUrl),
          certificateHashes: message.cert_hashes,
        });
        return;
      case 'renew-refused':
        if (message.session_id === this.#sessionId) this.#renewWaiter?.(new Error(message.message));
        return;
      case 'session-open':
      case 'session-revoked':
      case 'session-role':
      case 'relay-open':
      case 'rtc-session':
        // Robot messages: a pilot has no use for them.
        return;
      case 'rtc-answer':
        if (message.session_id === this.#sessionId) this.#rtcWaiter?.(message.sdp);
        return;
      case 'rtc-refused':
        if (message.session_id === this.#sessionId) this.#rtcWaiter?.(new Error(message.message));
        return;
      case 'rtc-candidate':
        if (message.session_id !== this.#sessionId) return;
        for (const listener of this.#rtcCandidateListeners) listener(message.candidate, message.mid);
        return;
      default:
        message satisfies never;
    }
  }

  #offered(
    state: Extract<SignalState, { kind: 'offering' }>,
    message: Extract<SignalServerMessage, { type: 'offer' }>,
  ): void {
    this.#sessionId = message.session_id;
    this.#relayGrant = message.relay_grant;
    this.#transition({
      kind: 'open',
      socket: state.socket,
      heartbeat: this.#startHeartbeat(state.socket),
      attached: true,
    });
    this.#settleOffer?.({
      sessionId: message.session_id,
      robotId: message.robot_id,
      role: message.role,
      urls: message.candidates.map(candidateUrl),
      candidates: message.candidates,
      certificateHashes: message.cert_hashes,
      channels: message.channels,
      relay: message.relay,
      ...(message.relay_grant === undefined
        ? {}
        : { relayGrant: { host: message.relay_grant.host, token: message.relay_grant.token } }),
      ...(message.backends !== undefined && { backends: message.backends }),
      ...(message.ice_servers !== undefined && {
        iceServers: message.ice_servers.map((s) => ({
          urls: s.url,
          ...(s.username !== undefined && { username: s.username }),
          ...(s.credential !== undefined && { credential: s.credential }),
        })),
      }),
    });
  }

  #resumed(socket: WebSocket): void {
    this.#backoff.reset();
    // svc-cloud links a session to the connection that asked for it; a new connection hears of the
    // driver slot again only once it says so with a `driver` message.
    this.#transition({ kind: 'open', socket, heartbeat: this.#startHeartbeat(socket), attached: false });
    this.#logger.info({}, 'signalling connection back');
    // Link the session to this connection again: svc-cloud answers with `driver`.
    const sessionId = this.#sessionId;
    if (sessionId !== undefined) this.#send(socket, { type: 'resume', session_id: sessionId });
  }

  #onDriver(message: Extract<SignalServerMessage, { type: 'driver' }>): void {
    const state = this.#state;
    if (state.kind === 'open') state.attached = true;
    this.#robotOffline = false;
    const driver =
      message.session_id === null
        ? null
        : {
            sessionId: message.session_id,
            user: message.user ?? { id: 'unknown', name: null },
            self: message.session_id === this.#sessionId,
          };
    // A prompt for a slot this session no longer holds is over.
    if (driver?.self !== true) this.#asked = undefined;
    this.#driver = driver;
    this.#announce();
    this.#events.safeEmit('driver', driver);
  }

  #startHeartbeat(socket: WebSocket): TimerHandle {
    this.#lastHeardMs = this.#clock.now();
    return this.#clock.setInterval(() => {
      if (this.#clock.now() - this.#lastHeardMs >= SIGNAL_SILENCE_HEARTBEATS * this.#heartbeatMs) {
        this.#lost(
          `nothing heard from the signalling server for ${SIGNAL_SILENCE_HEARTBEATS} heartbeat periods`,
        );
        return;
      }
      this.#send(socket, { type: 'heartbeat', t: this.#clock.now() });
    }, this.#heartbeatMs);
  }

  #malformed(err: WireError): void {
    if (this.#state.kind === 'offering') {
      this.#offerFailed(
        new OfferError('protocol', `unexpected message from the signalling server: ${err.message}`),
      );
      return;
    }
    this.#logger.warn({ err }, 'malformed signalling message ignored');
  }

  #onClose(code: number): void {
    const state = this.#state;
    if (state.kind === 'offering') {
      this.#offerFailed(
        code === SIGNAL_CLOSE.unauthenticated
          ? new OfferError(
              'bad-token',
              'the pilot session token was refused (expired or not for this service); get a new one',
            )
          : new OfferError(
              'unreachable',
              `the signalling connection closed (${code}) before an offer arrived`,
            ),
      );
      return;
    }
    if (code === SIGNAL_CLOSE.unauthenticated) {
      this.#tokenExpired('the session token was refused');
      return;
    }
    if (code === SIGNAL_CLOSE.denied) {
      this.#transition({
        kind: 'closed',
        reason: 'closed',
        message:
          'svc-cloud refused the signalling connection; handover is unavailable until the next session',
      });
      return;
    }
    this.#lost(`the signalling connection closed (${code})`);
  }

  /** The connection dropped: the direct session goes on; the connection is made again after a backoff. */
  #lost(reason: string): void {
    const delayMs = this.#backoff.next();
    this.#logger.info(
      { reason, delayMs },
      'signalling connection lost; handover unavailable until it is back',
    );
    const waiting: SignalState = {
      kind: 'waiting',
      reason,
      timer: this.#clock.setTimeout(() => this.#resume(waiting), delayMs),
    };
    this.#transition(waiting);
  }

  #resume(from: SignalState): void {
    if (this.#state !== from) return;
    const exp = tokenExpiryMs(this.#options.token);
    if (exp !== undefined && exp <= this.#clock.wallNow()) {
      this.#tokenExpired('the session token has expired');
      return;
    }
    const socket = this.#open();
    if (socket !== undefined) this.#transition({ kind: 'resuming', socket });
  }

  #tokenExpired(why: string): void {
    if (this.#state.kind === 'closed') return;
    this.#transition({
      kind: 'closed',
      reason: 'token-expired',
      message: `${why}: the signalling connection cannot be made again, so handover is unavailable until the next session`,
    });
  }

  #offerFailed(err: OfferError): void {
    if (this.#settleOffer === undefined) return;
    if (this.#state.kind !== 'closed')
      this.#transition({ kind: 'closed', reason: 'closed', message: err.message });
    this.#settleOffer(err);
  }

  #transition(next: SignalState): void {
    const from = this.#state;
    assertTransition('SignalSession', SIGNAL_MOVES, from.kind, next.kind);
    // Exit actions: what `from` holds that `next` does not.
    switch (from.kind) {
      case 'offering':
        this.#clock.clearTimeout(from.timer);
        break;
      case 'open':
        this.#clock.clearInterval(from.heartbeat);
        break;
      case 'waiting':
        this.#clock.clearTimeout(from.timer);
        break;
      case 'idle':
      case 'resuming':
      case 'closed':
        break;
      default:
        from satisfies never;
    }
    const socket = 'socket' in from ? from.socket : undefined;
    if (socket !== undefined && socket !== ('socket' in next ? next.socket : undefined)) {
      socket.onmessage = null;
      socket.onclose = null;
      socket.close(1000);
    }
    this.#state = next;
    if (next.kind !== 'open') this.#asked = undefined;
    this.#announce();
  }

  /** Tells the listeners when whether handover is possible changed. */
  #announce(): void {
    const next = this.#availabilityNow();
    const before = this.#announced;
    if (
      before.available === next.available &&
      (before.available ||
        (!next.available && before.reason === next.reason && before.message === next.message))
    )
      return;
    this.#announced = next;
    this.#events.safeEmit('handover', next);
  }

  #availabilityNow(): HandoverAvailability {
    const state = this.#state;
    const no = (reason: HandoverUnavailableReason, message: string): HandoverAvailability => ({
      available: false,
      reason,
      message,
    });
    switch (state.kind) {
      case 'idle':
      case 'offering':
        return no('starting', STARTING);
      case 'open':
        if (!state.attached)
          return no(
            'not-attached',
            'the signalling connection is back; waiting for svc-cloud to link this session to it again',
          );
        if (this.#robotOffline)
          return no(
            'robot-offline',
            'the robot lost its connection to the cloud: the driver keeps driving, and the slot cannot change hands until the robot is back',
          );
        return { available: true };
      case 'waiting':
      case 'resuming':
        return no(
          'signalling-lost',
          'the connection to the cloud dropped: the session goes on, but handover is unavailable until it is back',
        );
      case 'closed':
        return no(state.reason, state.message);
      default:
        return state satisfies never;
    }
  }
}

const STARTING = 'the session is starting';
