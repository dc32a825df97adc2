import type { BackoffPolicy, Clock, Logger } from '@svc/runtime';
import type { AssembledFrame, ControlMessage, ControlRole, ControlSourceState, Reassembler } from '@svc/wire';
import type { JitterTuning } from '../video/jitter.js';
import type { PlayerPaintReport } from '../video/player.js';
import type { VideoStatsSnapshot } from '../video/stats.js';
import type { PilotRefusal } from './refusal.js';
import type {
  ControlPending,
  ControlRequest,
  ControlResult,
  DriverSlot,
  HandoverAvailability,
  RequestOfferOptions,
  RobotOffer,
  SignalSession,
  SignalSessionOptions,
} from './signal-session.js';
import type { PilotConnectionState } from './state.js';

/** A pilot session token, or a function that gets a current one (called before every attempt). */
export type PilotToken = string | (() => string | Promise<string>);

/**
 * How to reach a robot as an offer gives it: candidate URLs in the robot's order of preference,
 * its certificate hashes, and the session id the signalling server assigned.
 */
export interface RobotAddress {
  /** `https://<address>:<quic_port>/` per candidate. */
  readonly urls: readonly string[];
  /** SHA-256 of the robot's certificates, hex (what `serverCertificateHashes` pins). */
  readonly certificateHashes: readonly string[];
  /** Session id from the offer, sent in `hello` (the robot matches it with the server's notice). */
  readonly sessionId?: string;
}

/** Where the robot's address comes from. */
export type RobotAddressSource =
  | {
      /** `wss://<host>/ws` of svc-cloud: an offer is asked for before every attempt. */
      readonly signalUrl: string;
      readonly robotId: string;
    }
  | {
      /** An offer received earlier (for example while svc-cloud is unreachable): used as it is. */
      readonly offer: RobotAddress;
    };

/** The robot's QoS profiles, as the control stream names them. */
export type QosProfileName = Extract<ControlMessage, { type: 'set-qos' }>['profile'];

/** What the robot last said of a video channel's camera (`PilotConnection.source`). */
export interface PilotSourceState {
  readonly state: ControlSourceState;
  readonly reason: string | undefined;
}

/** What the `picture` event says of a video channel's picture. */
export interface PilotPictureState {
  readonly kind: 'waiting' | 'live' | 'stale';
  /** Age of the picture on screen, ms (`NaN` while waiting, or when its capture time is unknown). */
  readonly ageMs: number;
}

/** What a {@link PilotConnection} tells its listeners (`connection.on(event, listener)`). */
export interface PilotConnectionEvents {
  /**
   * The connection's state changed, or the same state has news (`detail`: why, or the session
   * id). `refusal` comes with `denied` (why, as a stable code), and with `connected` when a
   * `drive` session was admitted as an observer because someone else drives (`driver-slot-held`).
   */
  state: (state: PilotConnectionState, detail?: string, refusal?: PilotRefusal) => void;
  /** svc-cloud made an offer (once per attempt). */
  offer: (offer: RobotOffer) => void;
  /** A whole frame, as the reassembler hands it over (before decoding). */
  frame: (channel: number, frame: AssembledFrame) => void;
  /** A frame was painted. */
  paint: (channel: number, report: PlayerPaintReport) => void;
  /**
   * A video channel's picture changed between `waiting` (nothing painted yet), `live` and `stale`
   * (nothing new painted for longer than max(3 frame intervals, 300 ms)); `ageMs` is the age of
   * the picture on screen at that moment (`NaN` when unknown). While a channel is stale the
   * driver's commands are held (`holdCommandsWhileStale`).
   */
  picture: (channel: number, state: PilotPictureState) => void;
  /** A sensor message, whole (one UDP datagram the robot received), with its channel's id and name. */
  sensor: (channel: number, bytes: Uint8Array, name: string) => void;
  /**
   * What the robot says of a video channel's camera (`source` on the control stream): `live`,
   * `no-data` (reachable but sending nothing) or `offline` (cannot be read), with its reason.
   */
  source: (channel: number, state: ControlSourceState, reason: string | undefined) => void;
  /**
   * The robot changed this session's role mid-session (`role` on the control stream): svc-cloud
   * moved the driver slot (a handover, a takeover, a release). From now on commands are sent only
   * as `driver`. A `state` event (`connected`, with the change as detail) follows.
   */
  role: (role: ControlRole, reason: string | undefined) => void;
  /** The session's packets travel another way now (it moved from the relay to a direct path). */
  path: (path: 'direct' | 'relay') => void;
  /** Who drives changed, as svc-cloud says (`null`: nobody; `self`: this session). */
  driver: (driver: DriverSlot | null) => void;
  /**
   * Someone asks this session, the driver, for the slot: answer with
   * `answerControl(request.requestId, grant)` within `request.expiresInMs`.
   */
  'control-request': (request: ControlRequest) => void;
  /** This session's request (`requestControl`) waits for the driver's answer. */
  'control-pending': (pending: ControlPending) => void;
  /**
   * A request this session made or was asked ended: `granted`, `refused`, `timeout`,
   * `cancelled`, `taken` or `denied`, with the service's words of what happened and what to do.
   */
  'control-result': (result: ControlResult) => void;
  /** svc-cloud refused a control message outright (`error`), in its words. */
  'control-error': (message: string) => void;
  /** Whether the driver slot can change hands from this session changed (`PilotConnection.handover`). */
  handover: (availability: HandoverAvailability) => void;
}

/**
 * The part of a browser `WebTransport` the connection uses, so tests can drive it with a fake
 * ({@link PilotConnectionDependencies.createTransport}).
 */
export interface PilotTransport {
  readonly ready: Promise<unknown>;
  readonly closed: Promise<WebTransportCloseInfo>;
  readonly datagrams: {
    readonly readable: ReadableStream<Uint8Array>;
    readonly writable: WritableStream<Uint8Array>;
    readonly maxDatagramSize: number;
  };
  createBidirectionalStream(): Promise<{
    readonly readable: ReadableStream<Uint8Array>;
    readonly writable: WritableStream<Uint8Array>;
  }>;
  close(info?: WebTransportCloseInfo): void;
}

/** Opens a transport to one candidate URL (the browser's `new WebTransport(url, options)` by default). */
export type TransportFactory = (url: string, options: WebTransportOptions) => PilotTransport;

/**
 * What a {@link PilotConnection} takes from outside instead of reaching for globals: time,
 * randomness, logging, the transport and the offer. Every one has a browser default; tests pass
 * fakes to drive the connection without a browser or a network.
 */
export interface PilotConnectionDependencies {
  /** Time and timers (default `systemClock`). */
  readonly clock?: Clock;
  /** A uniform draw in `[0, 1)` for backoff jitter and command frame ids (default `Math.random`). */
  readonly random?: () => number;
  /** Where the connection logs (default `consoleLogger()`). */
  readonly logger?: Logger;
  /** Opens WebTransport to a candidate (default the browser's `WebTransport`). */
  readonly createTransport?: TransportFactory;
  /**
   * Opens the signalling session of an attempt (default a {@link SignalSession}): it asks for the
   * offer and stays open for the session's life, for the driver news and handover.
   */
  readonly openSignalling?: (options: SignalSessionOptions) => SignalSession;
  /**
   * A one-shot offer source instead (for example `requestOffer`): the connection then has no
   * signalling session, hears nothing of the driver slot, and cannot hand it over.
   */
  readonly requestOffer?: (options: RequestOfferOptions) => Promise<RobotOffer>;
  /**
   * Where `pagehide` is listened for (default `globalThis` when it has `addEventListener`, as a
   * browser window does; none otherwise).
   */
  readonly pageEvents?: Pick<EventTarget, 'addEventListener' | 'removeEventListener'>;
}

/** Options of a {@link PilotConnection}. */
export type PilotConnectOptions = RobotAddressSource &
  PilotConnectionDependencies & {
    /** Pilot session token for signalling and `hello` (`POST /api/v1/session-tokens`). */
    readonly token: PilotToken;
    /** Where the channels' videos go: one child element per video channel. */
    readonly container: HTMLElement;
    /** Overrides the profile's presentation delay (0 paints as soon as decoded). */
    readonly presentationDelayMs?: number;
    /** Tuning of the adaptive hold under the presentation delay (`docs/pilot.md`); defaults suit most links. */
    readonly jitter?: JitterTuning;
    /** Reconnect after the session drops (default true), with backoff and a fresh offer. */
    readonly reconnect?: boolean;
    /** How long to wait for a candidate before also trying the next one (default 250 ms). */
    readonly candidateStaggerMs?: number;
    /**
     * How long the direct candidates go first before the relay is dialled too, ms (default
     * {@link RELAY_HEAD_START_MS}). The relay is used only when the offer allows it.
     */
    readonly relayHeadStartMs?: number;
    /**
     * The cloud relay: `true` (the default) as the last resort, after the direct candidates' head
     * start; `false` never, even when the robot allows it; `'only'` always, never dialling the
     * robot's own addresses nor moving to them mid-session, so the robot's network never learns
     * the pilot's address (WebRTC's `iceTransportPolicy: 'relay'`). With `'only'` a robot that
     * does not allow the relay cannot be reached.
     */
    readonly relay?: boolean | 'only';
    /**
     * The transport (`docs/protocol/webrtc.md`): `auto` (the default) takes WebTransport where the
     * browser has it and the robot serves QUIC, else WebRTC data channels when the robot serves
     * them; `webtransport` or `webrtc` takes only that one.
     */
    readonly backend?: 'auto' | 'webtransport' | 'webrtc';
    /**
     * On `pagehide` (the tab closes, reloads or navigates away), tell the robot `bye` with reason
     * `page closed` and close the transport at once, so the robot ends the session (and parks
     * its actuators) without waiting for the heartbeat (default true).
     */
    readonly closeOnPageHide?: boolean;
    /** A `state` listener added before the connection starts. */
    readonly onState?: PilotConnectionEvents['state'];
    /** An `offer` listener added before the connection starts. */
    readonly onOffer?: PilotConnectionEvents['offer'];
    /** A `frame` listener added before the connection starts. */
    readonly onFrame?: PilotConnectionEvents['frame'];
    /** A `paint` listener added before the connection starts. */
    readonly onPaint?: PilotConnectionEvents['paint'];
    /** A `sensor` listener added before the connection starts. */
    readonly onSensor?: PilotConnectionEvents['sensor'];
    /** A `picture` listener added before the connection starts. */
    readonly onPicture?: PilotConnectionEvents['picture'];
    /** A `role` listener added before the connection starts. */
    readonly onRole?: PilotConnectionEvents['role'];
    /** A `driver` listener added before the connection starts. */
    readonly onDriver?: PilotConnectionEvents['driver'];
    /**
     * Hold the driver's commands while any video channel's picture is stale (default true): nobody
     * drives blind. The stop and dead-man commands (`always`) still go out.
     */
    readonly holdCommandsWhileStale?: boolean;
  };

/**
 * Reconnection delays of the pilot: full jitter from 250 ms doubling up to 5 s, quicker than the
 * daemon's, because a person is waiting for the picture to come back.
 */
export const PILOT_RECONNECT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 250, capMs: 5000 });

/** One channel's statistics: the player's and its reassembler's. */
export type PilotChannelStats = VideoStatsSnapshot & { reassembler: Reassembler['stats'] };

/** Statistics of the whole connection. */
export interface PilotConnectionStats {
  readonly state: PilotConnectionState;
  readonly sessions: number;
  /** The latest `ping` round trip, ms. */
  readonly rttMs: number | undefined;
  /**
   * Local clock minus the robot's, ms: from the exchange with the lowest round trip of the last
   * eight (`undefined` until the first `pong` of the session).
   */
  readonly clockOffsetMs: number | undefined;
  /** Why commands are held now ({@link PilotConnection.holdCommands}), if they are. */
  readonly commandHold?: string;
  readonly malformedDatagrams: number;
  /**
   * Network events that came for a state the connection had left (a datagram, a control line, a
   * transport's close, an offer or a candidate after `close()` or after a reconnect replaced the
   * transport): ignored, and counted here.
   */
  readonly lateEvents: number;
  readonly channels: Record<string, PilotChannelStats>;
  /** The robot's latest `agent-stats`, per channel id. */
  readonly robot: Record<string, Record<string, number | string>>;
  /** The robot's QoS profile (the driver may change it: {@link PilotConnection.setQos}). */
  readonly profile?: QosProfileName;
  /** How the session's packets travel now: `direct`, or through svc-cloud's `relay`. */
  readonly path?: 'direct' | 'relay';
  /** The transport the session runs on (`docs/protocol/webrtc.md`). */
  readonly backend?: 'webtransport' | 'webrtc';
  /** The path's changes during this session, oldest first (a move from the relay to a direct path). */
  readonly pathSwitches: readonly PathSwitch[];
}

/** One change of a session's path. */
export interface PathSwitch {
  readonly from: 'direct' | 'relay';
  readonly to: 'direct' | 'relay';
  /** Clock time of the switch, ms. */
  readonly atMs: number;
  /** Frames the switch cost (given up across it); 0 when the reassembler carried on without a gap. */
  readonly framesLost: number;
}
