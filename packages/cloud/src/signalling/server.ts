import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  type Clock,
  type Logger,
  silentLogger,
  systemClock,
  type TimerHandle,
  TypedEmitter,
} from '@svc/runtime';
import {
  isRobotAuth,
  MAX_SIGNAL_MESSAGE_BYTES,
  parseSignalClientMessage,
  SIGNAL_CLOSE,
  SIGNAL_SUBPROTOCOL,
  type SignalClientMessage,
  WireError,
} from '@svc/wire';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { AuditBatcher } from '../audit/index.js';
import type { CloudDb } from '../db/index.js';
import { type PortRange, type RelayAllocationView, RelayServer } from '../relay/index.js';
import { DenialWriter, LastSeenWriter, RobotKeyLoader } from './batching.js';
import { type OpenState, type RatePolicy, SignalConnection, truncate } from './connection.js';
import { CONTROL_REFUSAL_COOLDOWN_MS, CONTROL_REQUEST_TIMEOUT_MS, DriverControl } from './control.js';
import type { SignallingHub } from './hub.js';
import { PeopleDirectory } from './people.js';
import { PilotHandlers, type VerifySessionToken } from './pilot-handlers.js';
import type { PresenceView, RobotPresence, SessionRecord } from './presence.js';
import { RobotHandlers } from './robot-handlers.js';
import { type IceConfig, RtcSignalling } from './rtc.js';

/** Path of the signalling WebSocket. */
export const SIGNAL_PATH = '/ws';

/** Dependencies and tunables of {@link SignallingServer}. Times are ms unless named otherwise. */
export interface SignallingOptions {
  readonly db: CloudDb;
  readonly verifySessionToken: VerifySessionToken;
  /** `SVC_DEV_OPEN_ENROLMENT=1`: an unknown robot is recorded with its key and no org. */
  readonly devOpenEnrolment: boolean;
  /** Where signalling logs (as `component: signalling`). Fields never hold tokens, signatures or nonces. Default: nothing. */
  readonly logger?: Logger;
  /**
   * Time and timers of every deadline (auth, silence, offers, rate limit, `last_seen_at` writes,
   * the shutdown grace). Default {@link systemClock}. The robot lookups' batching window is not a
   * deadline and stays on real time (see {@link RobotKeyLoader}).
   */
  readonly clock?: Clock;
  /** Heartbeat period told to clients in `auth-ok`. Default 15 000. */
  readonly heartbeatMs?: number;
  /** Time allowed between the challenge and a decided `auth`. Default 10 000. */
  readonly authTimeoutMs?: number;
  /** Period of the one timer that enforces every deadline. Default 1000. */
  readonly sweepIntervalMs?: number;
  /** How long an offered session may go without `session-started` before its slot is freed. Default 30 000. */
  readonly offerTimeoutMs?: number;
  /** Messages a second per connection. Default 20. */
  readonly ratePerSecond?: number;
  /** Burst per connection. Default 40. */
  readonly rateBurst?: number;
  /** How long a connection may stay over the rate before it is closed (4429). Default 10 000. */
  readonly rateCloseAfterMs?: number;
  /** Largest message, bytes. Default {@link MAX_SIGNAL_MESSAGE_BYTES}. */
  readonly maxPayload?: number;
  /** Period of the batched `last_seen_at` write. Default 5000. */
  readonly lastSeenFlushMs?: number;
  /** A connected robot's `last_seen_at` is written at most this often. Default 60 000. */
  readonly lastSeenEveryMs?: number;
  /** Robot lookups are collected at most this long into one query (see {@link RobotKeyLoader}). Default 50. */
  readonly keyBatchWindowMs?: number;
  /** Most robots in one lookup query. Default 500. */
  readonly keyBatchMax?: number;
  /** Parsed Ed25519 keys kept. Default 100 000. */
  readonly keyCacheSize?: number;
  /** Sessions one pilot connection may hold at once. Default 8. */
  readonly maxSessionsPerPilot?: number;
  /** New session ids. Default `randomUUID`. */
  readonly newSessionId?: () => string;
  /** How long a driver has to answer a control request. Default {@link CONTROL_REQUEST_TIMEOUT_MS}. */
  readonly controlRequestTimeoutMs?: number;
  /** How long a session refused by the driver waits before asking again. Default {@link CONTROL_REFUSAL_COOLDOWN_MS}. */
  readonly controlRefusalCooldownMs?: number;
  /**
   * How long the sessions of a robot that lost its connection are remembered (with the pilot
   * holding each), so that handover works again when it returns. Default 600 000.
   */
  readonly offlineSessionsKeptMs?: number;
  /**
   * The relay of last resort on this node (`docs/protocol/relay.md`): the address parties reach
   * it at, the address its ports bind, and the port range. Absent: no relay here, and offers say
   * `relay: false`.
   */
  readonly relay?: {
    readonly publicHost: string;
    readonly bindHost: string;
    readonly ports?: PortRange;
  };
  /** STUN and TURN servers for WebRTC sessions (`docs/protocol/webrtc.md`; default none). */
  readonly ice?: IceConfig;
}

/**
 * A change signalling tells the API's live fleet view about:
 * - `presence`: what {@link SignallingHandle.presenceOf} shows of the robot may have changed (it
 *   came online or went offline, announced, a session or the driver changed, or its last-seen
 *   time moved by a minute); `lastSeenAt` is when it was last heard, ms since the epoch.
 * - `record`: the robots' rows changed (a denial remembered or cleared): read them again.
 */
export type RobotChange =
  | { readonly kind: 'presence'; readonly robotId: string; readonly lastSeenAt: number }
  | { readonly kind: 'record'; readonly robotIds: readonly string[] };

/** What the HTTP API needs of signalling: presence, and ending sessions. */
export interface SignallingHandle {
  /** Calls `listener` after each {@link RobotChange}; returns the function that stops it. */
  onRobotChange(listener: (change: RobotChange) => void): () => void;
  /** The robot's presence while it is connected to this node; `undefined` when it is not. */
  presenceOf(robotId: string): PresenceView | undefined;
  /**
   * Ends a session now: the robot gets `session-revoked` (and refuses the token's `jti` until it
   * expires), the slot is freed. `false` when no such session is known on the robot.
   */
  revokeSession(robotId: string, sessionId: string, reason: string): boolean;
  /** The robot was deleted: its sessions are revoked and its connection denied (`robot-deleted`, 4403). */
  robotDeleted(robotId: string): void;
  /** Writes the driver-slot audit entries still batched (the audit log's reader calls it first). */
  flushAudit(): Promise<void>;
}

/** Counts for a health page or a benchmark. */
export interface SignallingStats {
  readonly connections: number;
  readonly robotsOnline: number;
  readonly pilots: number;
  /** Messages that arrived after their connection was closed (after a denial, a timeout, a replacement), ignored. */
  readonly lateMessages: number;
}

/**
 * Signalling v2 on `/ws` (`docs/protocol/signalling.md`): robots prove their Ed25519 key and
 * announce how to reach them, pilots present a session token and get offers; the server keeps each
 * robot's presence, its sessions and its driver slot.
 *
 * Each connection is a {@link SignalConnection} whose state is one of `challenged`,
 * `authenticating`, `robot`, `pilot` and `closed`; this class routes messages by that state, and
 * the robot and pilot handlers answer them.
 *
 * Built to hold tens of thousands of robots on one node: one sweep timer enforces every deadline
 * (no timer per connection), robot lookups and `last_seen_at` writes are batched, Ed25519 keys are
 * parsed once per robot.
 */
export class SignallingServer implements SignallingHandle {
  readonly #hub: SignallingHub;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #authTimeoutMs: number;
  readonly #offerTimeoutMs: number;
  readonly #offlineKeptMs: number;
  readonly #rate: RatePolicy;
  readonly #lastSeenFlushMs: number;
  readonly #lastSeenEveryMs: number;
  readonly #wss: WebSocketServer;
  readonly #keys: RobotKeyLoader;
  readonly #lastSeen: LastSeenWriter;
  readonly #robotSide: RobotHandlers;
  readonly #pilotSide: PilotHandlers;
  readonly #control: DriverControl;
  readonly #audit: AuditBatcher;
  readonly #denials: DenialWriter;
  readonly #changes: TypedEmitter<{ change: (change: RobotChange) => void }>;
  readonly #connections = new Set<SignalConnection>();
  readonly #robots = new Map<string, RobotPresence>();
  readonly #parked: SignallingHub['parked'] = new Map();
  readonly #revokedJtis = new Map<string, number>();
  readonly #sweepTimer: TimerHandle;
  readonly #relay: RelayServer | undefined;
  #lastFlushAt: number;
  #lateMessages = 0;
  #closing = false;
  #drained: (() => void) | undefined;
  #attached:
    | { server: Server; listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void }
    | undefined;

  constructor(options: SignallingOptions) {
    this.#log = (options.logger ?? silentLogger).child({ component: 'signalling' });
    this.#clock = options.clock ?? systemClock;
    this.#authTimeoutMs = options.authTimeoutMs ?? 10_000;
    this.#offerTimeoutMs = options.offerTimeoutMs ?? 30_000;
    this.#offlineKeptMs = options.offlineSessionsKeptMs ?? 600_000;
    this.#rate = {
      perSecond: options.ratePerSecond ?? 20,
      burst: options.rateBurst ?? 40,
      closeAfterMs: options.rateCloseAfterMs ?? 10_000,
    };
    this.#lastSeenFlushMs = options.lastSeenFlushMs ?? 5000;
    this.#lastSeenEveryMs = options.lastSeenEveryMs ?? 60_000;
    this.#lastFlushAt = this.#clock.now();

    this.#wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      maxPayload: options.maxPayload ?? MAX_SIGNAL_MESSAGE_BYTES,
      perMessageDeflate: false,
      handleProtocols: (protocols) => (protocols.has(SIGNAL_SUBPROTOCOL) ? SIGNAL_SUBPROTOCOL : false),
    });
    this.#keys = new RobotKeyLoader({
      db: options.db,
      ...(options.keyBatchWindowMs === undefined ? {} : { windowMs: options.keyBatchWindowMs }),
      ...(options.keyBatchMax === undefined ? {} : { maxBatch: options.keyBatchMax }),
    });
    this.#lastSeen = new LastSeenWriter({
      db: options.db,
      onError: (err, count) =>
        this.#log.warn({ err, robots: count }, 'could not write last_seen_at; will try again'),
    });
    this.#changes = new TypedEmitter(this.#log);
    this.#denials = new DenialWriter({
      db: options.db,
      onError: (err, count) =>
        this.#log.warn({ err, robots: count }, 'could not remember robot denials; will try again'),
      onWritten: (robotIds) => this.#changes.safeEmit('change', { kind: 'record', robotIds }),
    });
    this.#relay =
      options.relay === undefined
        ? undefined
        : new RelayServer({
            ...options.relay,
            clock: this.#clock,
            logger: (options.logger ?? silentLogger).child({ component: 'relay' }),
            isSessionLive: (robotId, sessionId) =>
              (this.#robots.get(robotId)?.session(sessionId) ??
                this.#parked.get(robotId)?.presence.session(sessionId)) !== undefined,
          });
    this.#hub = {
      log: this.#log,
      clock: this.#clock,
      relay: this.#relay,
      rtc: new RtcSignalling(
        { log: this.#log, clock: this.#clock, robots: this.#robots },
        options.ice ?? { stunUrls: [] },
      ),
      heartbeatMs: options.heartbeatMs ?? 15_000,
      robots: this.#robots,
      parked: this.#parked,
      revokedJtis: this.#revokedJtis,
      lastSeen: this.#lastSeen,
      presenceChanged: (presence) => {
        // Only the robot's registered presence speaks for it (not one replaced or parked).
        if (this.#robots.get(presence.robotId) !== presence) return;
        this.#changes.safeEmit('change', {
          kind: 'presence',
          robotId: presence.robotId,
          lastSeenAt: presence.lastHeardAt,
        });
      },
    };
    this.#audit = new AuditBatcher({
      db: options.db,
      log: this.#log,
      now: () => new Date(this.#clock.wallNow()),
    });
    this.#control = new DriverControl(this.#hub, {
      people: new PeopleDirectory({ db: options.db, now: () => this.#clock.now() }),
      audit: (entry) => this.#audit.enqueue(entry),
      requestTimeoutMs: options.controlRequestTimeoutMs ?? CONTROL_REQUEST_TIMEOUT_MS,
      refusalCooldownMs: options.controlRefusalCooldownMs ?? CONTROL_REFUSAL_COOLDOWN_MS,
      newRequestId: randomUUID,
    });
    this.#robotSide = new RobotHandlers(this.#hub, {
      control: this.#control,
      db: options.db,
      keys: this.#keys,
      denials: this.#denials,
      devOpenEnrolment: options.devOpenEnrolment,
      keyCacheSize: options.keyCacheSize ?? 100_000,
    });
    this.#pilotSide = new PilotHandlers(this.#hub, {
      control: this.#control,
      verifySessionToken: options.verifySessionToken,
      maxSessionsPerPilot: options.maxSessionsPerPilot ?? 8,
      newSessionId: options.newSessionId ?? randomUUID,
    });
    this.#sweepTimer = this.#clock.setInterval(() => this.sweep(), options.sweepIntervalMs ?? 1000);
  }

  // -------------------------------------------------------------------------------------------
  // HTTP side

  /**
   * Serves `/ws` on `server`'s `upgrade` event. Other paths are left to other listeners; when
   * there are none they get 404.
   *
   * @throws {TypeError} when already attached.
   */
  attach(server: Server): void {
    if (this.#attached !== undefined) throw new TypeError('SignallingServer.attach: already attached');
    const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === SIGNAL_PATH) this.handleUpgrade(req, socket, head);
      else if (server.listenerCount('upgrade') === 1) refuse(socket, 404, `no WebSocket endpoint at ${path}`);
    };
    server.on('upgrade', listener);
    this.#attached = { server, listener };
  }

  /** Takes over one upgrade request for `/ws`: refused (426) without the `svc-signal.v2` subprotocol. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.#closing) {
      refuse(socket, 503, 'the server is shutting down; reconnect with backoff');
      return;
    }
    const offered = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim());
    if (!offered.includes(SIGNAL_SUBPROTOCOL)) {
      refuse(
        socket,
        426,
        `this server speaks signalling ${SIGNAL_SUBPROTOCOL} only: name it in Sec-WebSocket-Protocol (an older client must be upgraded)`,
        { Upgrade: 'websocket', 'Sec-WebSocket-Protocol': SIGNAL_SUBPROTOCOL },
      );
      return;
    }
    socket.on('error', () => undefined);
    // The 101 answer and the challenge leave in one write: one system call, one segment and one
    // wake-up of the client instead of two each, for every robot of a reconnect storm.
    socket.cork();
    try {
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#onConnection(ws));
    } finally {
      socket.uncork();
    }
  }

  /**
   * Closes every connection with 1001 (going away), waits for them to end (at most `graceMs`,
   * then drops the rest), writes the last `last_seen_at` times and stops the timer.
   */
  async close(graceMs = 2000): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#clock.clearInterval(this.#sweepTimer);
    if (this.#attached !== undefined) {
      this.#attached.server.off('upgrade', this.#attached.listener);
      this.#attached = undefined;
    }
    for (const presence of this.#robots.values())
      this.#lastSeen.queue(presence.robotId, presence.lastHeardAt);
    if (this.#connections.size > 0) {
      let timer: TimerHandle | undefined;
      await new Promise<void>((resolve) => {
        this.#drained = resolve;
        timer = this.#clock.setTimeout(resolve, graceMs);
        for (const conn of this.#connections) conn.close(1001, 'server shutting down');
      });
      this.#clock.clearTimeout(timer);
      for (const conn of this.#connections) conn.socket.terminate();
    }
    this.#keys.close();
    await this.#relay?.close();
    await this.#lastSeen.flush();
    await this.#denials.close();
    await this.#audit.close();
    this.#wss.close();
    this.#log.debug('signalling closed');
  }

  // -------------------------------------------------------------------------------------------
  // The API's view

  /** See {@link SignallingHandle.onRobotChange}. */
  onRobotChange(listener: (change: RobotChange) => void): () => void {
    return this.#changes.on('change', listener);
  }

  /** See {@link SignallingHandle.presenceOf}. */
  presenceOf(robotId: string): PresenceView | undefined {
    return this.#robots.get(robotId)?.view();
  }

  /** See {@link SignallingHandle.revokeSession}. */
  revokeSession(robotId: string, sessionId: string, reason: string): boolean {
    const presence = this.#robots.get(robotId);
    const record = presence === undefined ? undefined : this.#control.ended(presence, sessionId, 'revoked');
    if (presence === undefined || record === undefined) return false;
    this.#revoke(presence, record, reason);
    this.#log.info({ robotId, sessionId, reason }, 'session revoked');
    return true;
  }

  /** See {@link SignallingHandle.robotDeleted}. */
  robotDeleted(robotId: string): void {
    this.#robotSide.forgetKey(robotId);
    const parked = this.#parked.get(robotId);
    this.#parked.delete(robotId);
    if (parked !== undefined)
      for (const record of [...parked.presence.sessions()]) parked.presence.end(record.sessionId);
    const presence = this.#robots.get(robotId);
    if (presence === undefined) return;
    for (const record of [...presence.sessions()]) {
      presence.end(record.sessionId);
      this.#revoke(presence, record, 'robot-deleted');
    }
    presence.connection.deny(
      'robot-deleted',
      `robot ${robotId} was deleted in the console; enrol it again with a new enrolment token (svcd --config <path> enrol --token <T>)`,
      SIGNAL_CLOSE.denied,
    );
  }

  /** The relay's allocations open on this node (none without a relay). */
  relayAllocations(): RelayAllocationView[] {
    return this.#relay?.list() ?? [];
  }

  /** How many connections, robots online and pilots this node holds, and the late messages it ignored. */
  stats(): SignallingStats {
    let pilots = 0;
    for (const conn of this.#connections) if (conn.state.kind === 'pilot') pilots++;
    return {
      connections: this.#connections.size,
      robotsOnline: this.#robots.size,
      pilots,
      lateMessages: this.#lateMessages,
    };
  }

  /**
   * Writes the driver slot's queued audit entries now (they are written within 100 ms anyway):
   * a reader of the audit log through this node calls it first.
   */
  async flushAudit(): Promise<void> {
    await this.#denials.flush();
    await this.#audit.flush();
  }

  /**
   * Writes the denials and clearings of robots' last denial queued now (they are written within
   * 100 ms anyway).
   */
  flushDenials(): Promise<void> {
    return this.#denials.flush();
  }

  /** Writes the queued `last_seen_at` times now (the sweep does it every few seconds). */
  flushLastSeen(): Promise<void> {
    this.#lastFlushAt = this.#clock.now();
    return this.#lastSeen.flush();
  }

  /**
   * Enforces every deadline at the clock's current time: `auth` not in time and silence for three
   * heartbeat periods (4408), offers not started in time (slot freed), control requests not
   * answered in time, the sessions of robots offline for too long, expired revocations, and the
   * periodic `last_seen_at` write. The timer calls it; tests may call it too.
   */
  sweep(): void {
    const now = this.#clock.now();
    const silentAfter = 3 * this.#hub.heartbeatMs;
    for (const conn of this.#connections) {
      const state = conn.state;
      switch (state.kind) {
        case 'closed':
          continue;
        case 'challenged':
        case 'authenticating':
          if (now >= state.deadline) {
            this.#log.debug('no auth in time');
            conn.close(SIGNAL_CLOSE.timeout, 'no auth within the deadline');
          }
          continue;
        case 'robot':
        case 'pilot':
          if (now - conn.lastHeard >= silentAfter) {
            this.#log.debug(
              { robotId: state.kind === 'robot' ? state.presence.robotId : undefined },
              'connection silent for three heartbeat periods',
            );
            conn.close(SIGNAL_CLOSE.timeout, 'nothing heard for three heartbeat periods');
          } else if (state.kind === 'robot') {
            this.#sweepRobot(state.presence, now);
          }
          continue;
        default:
          state satisfies never;
      }
    }
    for (const [robotId, parked] of this.#parked) {
      if (now - parked.since < this.#offlineKeptMs) continue;
      this.#parked.delete(robotId);
      for (const record of [...parked.presence.sessions()]) parked.presence.end(record.sessionId);
    }
    const wallNow = this.#clock.wallNow();
    for (const [jti, exp] of this.#revokedJtis) if (exp * 1000 <= wallNow) this.#revokedJtis.delete(jti);
    if (now - this.#lastFlushAt >= this.#lastSeenFlushMs && this.#lastSeen.size > 0) {
      this.#lastFlushAt = now;
      void this.#lastSeen.flush();
    }
  }

  /** A robot's periodic work: its `last_seen_at`, a control request's deadline, and offers that never started. */
  #sweepRobot(presence: RobotPresence, now: number): void {
    if (presence.lastHeardAt - presence.lastWrittenAt >= this.#lastSeenEveryMs) {
      presence.lastWrittenAt = presence.lastHeardAt;
      this.#lastSeen.queue(presence.robotId, presence.lastHeardAt);
      // The fleet's view of the robot's last-seen time moves as often as the database's.
      presence.changed();
    }
    if (presence.sessionCount === 0) return;
    this.#control.sweep(presence, now);
    for (const record of [...presence.sessions()]) {
      if (
        !record.started &&
        record.offeredAt !== undefined &&
        now - record.offeredAt >= this.#offerTimeoutMs
      ) {
        this.#control.ended(presence, record.sessionId, 'offer-timeout');
        this.#log.debug({ robotId: presence.robotId, sessionId: record.sessionId }, 'offer never started');
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Connections

  #onConnection(ws: WebSocket): void {
    if (this.#closing) {
      ws.close(1001, 'server shutting down');
      return;
    }
    const nonce = randomBytes(32).toString('base64url');
    const conn = new SignalConnection(ws, {
      nonce,
      now: this.#clock.now(),
      authTimeoutMs: this.#authTimeoutMs,
      rate: this.#rate,
      onClosed: (closed, from) => this.#released(closed, from),
    });
    this.#connections.add(conn);
    ws.on('message', (data, isBinary) => this.#onMessage(conn, data, isBinary));
    ws.on('close', (code) => this.#onSocketClose(conn, code));
    ws.on('error', (err) => this.#log.debug({ err }, 'signalling socket error'));
    conn.sendRaw(`{"type":"challenge","v":2,"nonce":"${nonce}"}`);
  }

  #onSocketClose(conn: SignalConnection, code: number): void {
    conn.ended(code);
    this.#connections.delete(conn);
    if (this.#connections.size === 0) this.#drained?.();
  }

  /** A connection left `from` for `closed`: what it held is released. */
  #released(conn: SignalConnection, from: OpenState): void {
    switch (from.kind) {
      case 'challenged':
      case 'authenticating':
        return;
      case 'robot':
        this.#dropRobot(from.presence);
        return;
      case 'pilot': {
        // The pilot's sessions live on (its WebTransport session does not need this socket); they
        // only lose their way back to it, and a control request it was part of ends.
        const online = this.#robots.get(from.claims.robotId);
        if (online !== undefined) this.#control.pilotGone(online, from.sessions);
        const presence = online ?? this.#parked.get(from.claims.robotId)?.presence;
        for (const id of from.sessions) {
          const record = presence?.session(id);
          if (record !== undefined && record.pilot === conn) record.pilot = undefined;
        }
        return;
      }
      default:
        from satisfies never;
    }
  }

  /**
   * The robot goes offline (if `presence` is still its registered one). Its sessions may live on
   * (a pilot's direct session does not need the cloud): they are parked, with the pilot holding
   * each, until the robot comes back and announces which it kept, or for `offlineSessionsKeptMs`.
   */
  #dropRobot(presence: RobotPresence): void {
    if (this.#robots.get(presence.robotId) !== presence) return;
    this.#robots.delete(presence.robotId);
    this.#lastSeen.queue(presence.robotId, presence.lastHeardAt);
    this.#changes.safeEmit('change', {
      kind: 'presence',
      robotId: presence.robotId,
      lastSeenAt: presence.lastHeardAt,
    });
    this.#control.robotOffline(presence);
    if (presence.sessionCount > 0) this.#parked.set(presence.robotId, { presence, since: this.#clock.now() });
    this.#log.debug({ robotId: presence.robotId }, 'robot offline');
  }

  #onMessage(conn: SignalConnection, data: RawData, isBinary: boolean): void {
    const state = conn.state;
    if (state.kind === 'closed') {
      this.#lateMessages++;
      return;
    }
    const now = this.#clock.now();
    conn.lastHeard = now;
    if (state.kind === 'robot') state.presence.lastHeardAt = this.#clock.wallNow();
    if (!this.#admit(conn, now)) return;
    const preAuth = state.kind === 'challenged' || state.kind === 'authenticating';
    if (isBinary) {
      this.#badMessage(conn, preAuth, 'binary messages are not part of signalling; send JSON text');
      return;
    }
    const message = parseText(data);
    if (message instanceof WireError) {
      this.#badMessage(conn, preAuth, message.message);
      return;
    }
    switch (state.kind) {
      case 'challenged':
        if (message.type !== 'auth') {
          this.#badMessage(conn, true, `expected "auth" after the challenge, got "${message.type}"`);
          return;
        }
        if (isRobotAuth(message)) {
          this.#robotSide.authenticate(conn, message).catch((err: unknown) => this.#failed(conn, err));
        } else {
          this.#pilotSide.authenticate(conn, message.token).catch((err: unknown) => this.#failed(conn, err));
        }
        return;
      case 'authenticating':
        this.#badMessage(conn, true, `"${message.type}" before "auth-ok": wait for the answer to "auth"`);
        return;
      case 'robot':
        this.#robotSide.onMessage(conn, state.presence, message);
        return;
      case 'pilot':
        this.#pilotSide.onMessage(conn, state, message, now);
        return;
      default:
        state satisfies never;
    }
  }

  /** The rate limit: `false` when the message is dropped (answered `rate-limited`, or the connection closed). */
  #admit(conn: SignalConnection, now: number): boolean {
    const verdict = conn.rate.take(now);
    switch (verdict) {
      case 'admitted':
        return true;
      case 'dropped':
        conn.send({
          type: 'error',
          code: 'rate-limited',
          message: `more than ${this.#rate.perSecond} messages a second (bursts of ${this.#rate.burst}): this one was dropped; slow down or the connection is closed`,
        });
        return false;
      case 'over-too-long': {
        const state = conn.state;
        this.#log.info(
          {
            robotId: state.kind === 'robot' ? state.presence.robotId : undefined,
            pilotFor: state.kind === 'pilot' ? state.claims.robotId : undefined,
          },
          'connection over the rate limit for too long',
        );
        conn.close(SIGNAL_CLOSE.rateLimited, 'over the rate limit for too long');
        return false;
      }
      default:
        return verdict satisfies never;
    }
  }

  #badMessage(conn: SignalConnection, preAuth: boolean, why: string): void {
    if (preAuth) {
      this.#log.debug('protocol error before authentication');
      conn.close(SIGNAL_CLOSE.protocolError, why);
    } else {
      conn.send({ type: 'error', code: 'bad-message', message: truncate(why, 500) });
    }
  }

  #failed(conn: SignalConnection, err: unknown): void {
    this.#log.error({ err }, 'signalling authentication failed');
    conn.close(1011, 'the server failed; reconnect with backoff');
  }

  #revoke(presence: RobotPresence, record: SessionRecord, reason: string): void {
    if (record.jti !== undefined) {
      this.#revokedJtis.set(record.jti, record.exp ?? Math.ceil(this.#clock.wallNow() / 1000) + 900);
    }
    presence.connection.send({
      type: 'session-revoked',
      session_id: record.sessionId,
      ...(record.jti === undefined ? {} : { jti: record.jti }),
      reason,
    });
  }
}

function parseText(data: RawData): SignalClientMessage | WireError {
  const text = Array.isArray(data)
    ? Buffer.concat(data).toString('utf8')
    : Buffer.isBuffer(data)
      ? data.toString('utf8')
      : Buffer.from(data).toString('utf8');
  // The bare heartbeat, by far the commonest message, skips the schema.
  if (text === '{"type":"heartbeat"}') return HEARTBEAT;
  return parseSignalClientMessage(text);
}

const HEARTBEAT: SignalClientMessage = { type: 'heartbeat' };

/** Answers an upgrade request with a plain HTTP error and closes the socket. */
function refuse(socket: Duplex, status: number, message: string, headers: Record<string, string> = {}): void {
  const reason = { 404: 'Not Found', 426: 'Upgrade Required', 503: 'Service Unavailable' }[status] ?? 'Error';
  const body = `${message}\n`;
  const lines = [
    `HTTP/1.1 ${status} ${reason}`,
    'Connection: close',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.on('error', () => undefined);
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
