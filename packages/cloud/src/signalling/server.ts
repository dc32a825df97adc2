import { createPublicKey, type KeyObject, randomBytes, randomUUID, verify } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  encodeSignalMessage,
  isRobotAuth,
  MAX_SIGNAL_MESSAGE_BYTES,
  parseSignalClientMessage,
  ROBOT_ID_PATTERN,
  type RobotAuthMessage,
  robotChallengePayload,
  SIGNAL_CLOSE,
  SIGNAL_SUBPROTOCOL,
  type SignalClientMessage,
  type SignalServerMessage,
  WireError,
} from '@svc/wire';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { audit } from '../audit/index.js';
import { type CloudDb, robots } from '../db/index.js';
import { LastSeenWriter, RobotKeyLoader, type RobotKeyRow } from './batching.js';
import { type PilotLink, type PresenceView, RobotPresence, type SessionRecord } from './presence.js';

/** Path of the signalling WebSocket. */
export const SIGNAL_PATH = '/ws';

/** What a verified pilot session token says (the claims signalling uses). */
export interface VerifiedSessionToken {
  readonly sub: string;
  /** The robot the token is for. */
  readonly aud: string;
  readonly scope: 'drive' | 'observe';
  readonly jti: string;
  /** Expiry, seconds since the epoch. */
  readonly exp: number;
}

/**
 * Verifies a pilot session token (signature, issuer, expiry); throws when it does not verify. The
 * thrown error's message may reach the pilot when the error carries a string `code`, so it must
 * never contain the token.
 */
export type VerifySessionToken = (token: string) => Promise<VerifiedSessionToken>;

/** The log lines signalling writes (pino's logger fits). Fields never hold tokens, signatures or nonces. */
export interface SignallingLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Dependencies and tunables of {@link SignallingServer}. Times are ms unless named otherwise. */
export interface SignallingOptions {
  readonly db: CloudDb;
  readonly verifySessionToken: VerifySessionToken;
  /** `SVC_DEV_OPEN_ENROLMENT=1`: an unknown robot is recorded with its key and no org. */
  readonly devOpenEnrolment: boolean;
  readonly logger: SignallingLogger;
  /** The clock, ms since the epoch. Default `Date.now`. */
  readonly now?: () => number;
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
}

/** What the HTTP API needs of signalling: presence, and ending sessions. */
export interface SignallingHandle {
  /** The robot's presence while it is connected to this node; `undefined` when it is not. */
  presenceOf(robotId: string): PresenceView | undefined;
  /**
   * Ends a session now: the robot gets `session-revoked` (and refuses the token's `jti` until it
   * expires), the slot is freed. `false` when no such session is known on the robot.
   */
  revokeSession(robotId: string, sessionId: string, reason: string): boolean;
  /** The robot was deleted: its sessions are revoked and its connection denied (`robot-deleted`, 4403). */
  robotDeleted(robotId: string): void;
}

/** Counts for a health page or a benchmark. */
export interface SignallingStats {
  readonly connections: number;
  readonly robotsOnline: number;
  readonly pilots: number;
}

/** Where a connection is in its life; the order matters (`<= Authenticating` is before `auth-ok`). */
const State = { Challenged: 0, Authenticating: 1, Robot: 2, Pilot: 3, Closed: 4 } as const;
type State = (typeof State)[keyof typeof State];

interface PilotState {
  readonly robotId: string;
  readonly sub: string;
  readonly scope: 'drive' | 'observe';
  readonly jti: string;
  readonly exp: number;
  readonly sessions: Set<string>;
}

/** One WebSocket and the little that is kept about it. */
class Connection implements PilotLink {
  state: State = State.Challenged;
  nonce: string | undefined;
  /** Before authentication: when the `auth` deadline passes. */
  readonly deadline: number;
  lastHeard: number;
  tokens: number;
  refillAt: number;
  /** Start of the current run over the rate limit, or -1. */
  overSince = -1;
  lastRejectAt = 0;
  robot: RobotPresence | undefined;
  pilot: PilotState | undefined;

  constructor(
    readonly ws: WebSocket,
    now: number,
    authTimeoutMs: number,
    burst: number,
  ) {
    this.deadline = now + authTimeoutMs;
    this.lastHeard = now;
    this.tokens = burst;
    this.refillAt = now;
  }

  /** Whether the connection is closed or closing (read after an `await`, when it may have changed). */
  get closed(): boolean {
    return this.state === State.Closed;
  }

  forget(sessionId: string): void {
    this.pilot?.sessions.delete(sessionId);
  }
}

/**
 * Signalling v2 on `/ws` (`docs/protocol/signalling.md`): robots prove their Ed25519 key and
 * announce how to reach them, pilots present a session token and get offers; the server keeps each
 * robot's presence, its sessions and its driver slot.
 *
 * Built to hold tens of thousands of robots on one node: one sweep timer enforces every deadline
 * (no timer per connection), robot lookups and `last_seen_at` writes are batched, Ed25519 keys are
 * parsed once per robot.
 */
export class SignallingServer implements SignallingHandle {
  private readonly db: CloudDb;
  private readonly verifyToken: VerifySessionToken;
  private readonly devOpenEnrolment: boolean;
  private readonly log: SignallingLogger;
  private readonly now: () => number;
  private readonly heartbeatMs: number;
  private readonly authTimeoutMs: number;
  private readonly offerTimeoutMs: number;
  private readonly perMs: number;
  private readonly burst: number;
  private readonly rateCloseAfterMs: number;
  private readonly lastSeenFlushMs: number;
  private readonly lastSeenEveryMs: number;
  private readonly keyCacheSize: number;
  private readonly maxSessionsPerPilot: number;
  private readonly newSessionId: () => string;

  private readonly wss: WebSocketServer;
  private readonly keys: RobotKeyLoader;
  private readonly lastSeen: LastSeenWriter;
  private readonly connections = new Set<Connection>();
  private readonly robots = new Map<string, RobotPresence>();
  /** Parsed public keys by robot id, with the text they were parsed from; oldest first. */
  private readonly keyCache = new Map<string, { readonly text: string; readonly key: KeyObject }>();
  /** Revoked token ids and their expiry (seconds): refused until then. */
  private readonly revokedJtis = new Map<string, number>();
  private readonly sweepTimer: ReturnType<typeof setInterval>;
  private lastFlushAt: number;
  private closing = false;
  private drained: (() => void) | undefined;
  private attached:
    | { server: Server; listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void }
    | undefined;

  constructor(options: SignallingOptions) {
    this.db = options.db;
    this.verifyToken = options.verifySessionToken;
    this.devOpenEnrolment = options.devOpenEnrolment;
    this.log = options.logger;
    this.now = options.now ?? Date.now;
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
    this.authTimeoutMs = options.authTimeoutMs ?? 10_000;
    this.offerTimeoutMs = options.offerTimeoutMs ?? 30_000;
    this.perMs = (options.ratePerSecond ?? 20) / 1000;
    this.burst = options.rateBurst ?? 40;
    this.rateCloseAfterMs = options.rateCloseAfterMs ?? 10_000;
    this.lastSeenFlushMs = options.lastSeenFlushMs ?? 5000;
    this.lastSeenEveryMs = options.lastSeenEveryMs ?? 60_000;
    this.keyCacheSize = options.keyCacheSize ?? 100_000;
    this.maxSessionsPerPilot = options.maxSessionsPerPilot ?? 8;
    this.newSessionId = options.newSessionId ?? randomUUID;
    this.lastFlushAt = this.now();

    this.wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      maxPayload: options.maxPayload ?? MAX_SIGNAL_MESSAGE_BYTES,
      perMessageDeflate: false,
      handleProtocols: (protocols) => (protocols.has(SIGNAL_SUBPROTOCOL) ? SIGNAL_SUBPROTOCOL : false),
    });
    this.keys = new RobotKeyLoader({
      db: this.db,
      ...(options.keyBatchWindowMs === undefined ? {} : { windowMs: options.keyBatchWindowMs }),
      ...(options.keyBatchMax === undefined ? {} : { maxBatch: options.keyBatchMax }),
    });
    this.lastSeen = new LastSeenWriter({
      db: this.db,
      onError: (err, count) =>
        this.log.warn(
          { err: describeError(err), robots: count },
          'could not write last_seen_at; will try again',
        ),
    });
    this.sweepTimer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 1000);
    this.sweepTimer.unref();
  }

  // -------------------------------------------------------------------------------------------
  // HTTP side

  /**
   * Serves `/ws` on `server`'s `upgrade` event. Other paths are left to other listeners; when
   * there are none they get 404.
   */
  attach(server: Server): void {
    if (this.attached !== undefined) throw new TypeError('SignallingServer.attach: already attached');
    const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === SIGNAL_PATH) this.handleUpgrade(req, socket, head);
      else if (server.listenerCount('upgrade') === 1) refuse(socket, 404, `no WebSocket endpoint at ${path}`);
    };
    server.on('upgrade', listener);
    this.attached = { server, listener };
  }

  /** Takes over one upgrade request for `/ws`: refused (426) without the `svc-signal.v2` subprotocol. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.closing) {
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
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws));
    } finally {
      socket.uncork();
    }
  }

  /**
   * Closes every connection with 1001 (going away), waits for them to end (at most `graceMs`,
   * then drops the rest), writes the last `last_seen_at` times and stops the timer.
   */
  async close(graceMs = 2000): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.sweepTimer);
    if (this.attached !== undefined) {
      this.attached.server.off('upgrade', this.attached.listener);
      this.attached = undefined;
    }
    const now = this.now();
    for (const presence of this.robots.values()) this.lastSeen.queue(presence.robotId, presence.lastHeardAt);
    if (this.connections.size > 0) {
      const drained = new Promise<void>((resolve) => {
        this.drained = resolve;
      });
      for (const conn of this.connections) conn.ws.close(1001, 'server shutting down');
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      for (const conn of this.connections) conn.ws.terminate();
    }
    this.keys.close();
    await this.lastSeen.flush();
    this.wss.close();
    this.log.debug({ at: now }, 'signalling closed');
  }

  // -------------------------------------------------------------------------------------------
  // The API's view

  /** See {@link SignallingHandle.presenceOf}. */
  presenceOf(robotId: string): PresenceView | undefined {
    return this.robots.get(robotId)?.view();
  }

  /** See {@link SignallingHandle.revokeSession}. */
  revokeSession(robotId: string, sessionId: string, reason: string): boolean {
    const presence = this.robots.get(robotId);
    const record = presence?.end(sessionId);
    if (presence === undefined || record === undefined) return false;
    this.revoke(presence, record, reason);
    this.log.info({ robotId, sessionId, reason }, 'session revoked');
    return true;
  }

  /** See {@link SignallingHandle.robotDeleted}. */
  robotDeleted(robotId: string): void {
    this.keyCache.delete(robotId);
    const presence = this.robots.get(robotId);
    if (presence === undefined) return;
    for (const record of [...presence.sessions()]) {
      presence.end(record.sessionId);
      this.revoke(presence, record, 'robot-deleted');
    }
    const conn = presence.connection as Connection;
    this.dropRobot(conn);
    this.deny(
      conn,
      'robot-deleted',
      `robot ${robotId} was deleted in the console; enrol it again with a new enrolment token (svcd --config <path> enrol --token <T>)`,
      SIGNAL_CLOSE.denied,
    );
  }

  /** How many connections, robots online and pilots this node holds. */
  stats(): SignallingStats {
    let pilots = 0;
    for (const conn of this.connections) if (conn.state === State.Pilot) pilots++;
    return { connections: this.connections.size, robotsOnline: this.robots.size, pilots };
  }

  /** Writes the queued `last_seen_at` times now (the sweep does it every few seconds). */
  flushLastSeen(): Promise<void> {
    this.lastFlushAt = this.now();
    return this.lastSeen.flush();
  }

  /**
   * Enforces every deadline at the current time: `auth` not in time and silence for three
   * heartbeat periods (4408), offers not started in time (slot freed), expired revocations, and the
   * periodic `last_seen_at` write. The timer calls it; tests with their own clock call it too.
   */
  sweep(): void {
    const now = this.now();
    const silentAfter = 3 * this.heartbeatMs;
    for (const conn of this.connections) {
      if (conn.state === State.Closed) continue;
      if (conn.state <= State.Authenticating) {
        if (now >= conn.deadline) {
          this.log.debug({}, 'no auth in time');
          this.closeWith(conn, SIGNAL_CLOSE.timeout, 'no auth within the deadline');
        }
        continue;
      }
      if (now - conn.lastHeard >= silentAfter) {
        this.log.debug({ robotId: conn.robot?.robotId }, 'connection silent for three heartbeat periods');
        this.closeWith(conn, SIGNAL_CLOSE.timeout, 'nothing heard for three heartbeat periods');
        continue;
      }
      const presence = conn.robot;
      if (presence === undefined) continue;
      if (presence.lastHeardAt - presence.lastWrittenAt >= this.lastSeenEveryMs) {
        presence.lastWrittenAt = presence.lastHeardAt;
        this.lastSeen.queue(presence.robotId, presence.lastHeardAt);
      }
      if (presence.sessionCount > 0) {
        for (const record of [...presence.sessions()]) {
          if (
            !record.started &&
            record.offeredAt !== undefined &&
            now - record.offeredAt >= this.offerTimeoutMs
          ) {
            presence.end(record.sessionId);
            this.log.debug({ robotId: presence.robotId, sessionId: record.sessionId }, 'offer never started');
          }
        }
      }
    }
    for (const [jti, exp] of this.revokedJtis) if (exp * 1000 <= now) this.revokedJtis.delete(jti);
    if (now - this.lastFlushAt >= this.lastSeenFlushMs && this.lastSeen.size > 0) {
      this.lastFlushAt = now;
      void this.lastSeen.flush();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Connections

  private onConnection(ws: WebSocket): void {
    const now = this.now();
    const conn = new Connection(ws, now, this.authTimeoutMs, this.burst);
    if (this.closing) {
      ws.close(1001, 'server shutting down');
      return;
    }
    this.connections.add(conn);
    ws.on('message', (data, isBinary) => this.onMessage(conn, data, isBinary));
    ws.on('close', () => this.onClose(conn));
    ws.on('error', (err) => this.log.debug({ err: describeError(err) }, 'signalling socket error'));
    conn.nonce = randomBytes(32).toString('base64url');
    this.sendRaw(conn, `{"type":"challenge","v":2,"nonce":"${conn.nonce}"}`);
  }

  private onClose(conn: Connection): void {
    if (conn.state !== State.Closed && conn.robot !== undefined) this.dropRobot(conn);
    conn.state = State.Closed;
    conn.nonce = undefined;
    if (conn.pilot !== undefined) {
      // The pilot's sessions live on (its WebTransport session does not need this socket); they
      // only lose their way back to it.
      const presence = this.robots.get(conn.pilot.robotId);
      for (const id of conn.pilot.sessions) {
        const record = presence?.session(id);
        if (record !== undefined && record.pilot === conn) record.pilot = undefined;
      }
    }
    this.connections.delete(conn);
    if (this.connections.size === 0) this.drained?.();
  }

  /** The robot of `conn` goes offline (if it still is this connection's): sessions and slot released. */
  private dropRobot(conn: Connection): void {
    const presence = conn.robot;
    if (presence === undefined) return;
    conn.robot = undefined;
    if (this.robots.get(presence.robotId) !== presence) return;
    this.robots.delete(presence.robotId);
    this.lastSeen.queue(presence.robotId, presence.lastHeardAt);
    for (const record of [...presence.sessions()]) presence.end(record.sessionId);
    this.log.debug({ robotId: presence.robotId }, 'robot offline');
  }

  private onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    if (conn.state === State.Closed) return;
    const now = this.now();
    conn.lastHeard = now;
    if (conn.robot !== undefined) conn.robot.lastHeardAt = now;
    if (!this.admit(conn, now)) return;
    const preAuth = conn.state <= State.Authenticating;
    if (isBinary) {
      this.badMessage(conn, preAuth, 'binary messages are not part of signalling; send JSON text');
      return;
    }
    const message = parseText(data);
    if (message instanceof WireError) {
      this.badMessage(conn, preAuth, message.message);
      return;
    }
    switch (conn.state) {
      case State.Challenged:
        if (message.type !== 'auth') {
          this.badMessage(conn, true, `expected "auth" after the challenge, got "${message.type}"`);
          return;
        }
        if (isRobotAuth(message)) void this.authRobot(conn, message).catch((err) => this.failed(conn, err));
        else void this.authPilot(conn, message.token).catch((err) => this.failed(conn, err));
        return;
      case State.Authenticating:
        this.badMessage(conn, true, `"${message.type}" before "auth-ok": wait for the answer to "auth"`);
        return;
      case State.Robot:
        this.onRobotMessage(conn, conn.robot, message);
        return;
      case State.Pilot:
        this.onPilotMessage(conn, conn.pilot, message, now);
        return;
      default:
        return;
    }
  }

  /** Token bucket: `false` when the message is dropped (answered `rate-limited`, or the connection closed). */
  private admit(conn: Connection, now: number): boolean {
    const elapsed = now - conn.refillAt;
    if (elapsed > 0) {
      conn.tokens = Math.min(this.burst, conn.tokens + elapsed * this.perMs);
      conn.refillAt = now;
    }
    // A run over the limit ends after a second without a dropped message.
    const inRun = conn.overSince >= 0 && now - conn.lastRejectAt < 1000;
    if (conn.tokens >= 1) {
      conn.tokens -= 1;
      if (!inRun) conn.overSince = -1;
      return true;
    }
    if (!inRun) conn.overSince = now;
    conn.lastRejectAt = now;
    if (now - conn.overSince >= this.rateCloseAfterMs) {
      this.log.info(
        { robotId: conn.robot?.robotId, pilotFor: conn.pilot?.robotId },
        'connection over the rate limit for too long',
      );
      this.closeWith(conn, SIGNAL_CLOSE.rateLimited, 'over the rate limit for too long');
      return false;
    }
    this.send(conn, {
      type: 'error',
      code: 'rate-limited',
      message: `more than ${Math.round(this.perMs * 1000)} messages a second (bursts of ${this.burst}): this one was dropped; slow down or the connection is closed`,
    });
    return false;
  }

  private badMessage(conn: Connection, preAuth: boolean, why: string): void {
    if (preAuth) {
      this.log.debug({}, 'protocol error before authentication');
      this.closeWith(conn, SIGNAL_CLOSE.protocolError, truncate(why, 120));
    } else {
      this.send(conn, { type: 'error', code: 'bad-message', message: truncate(why, 500) });
    }
  }

  private notAllowed(conn: Connection, why: string): void {
    this.send(conn, { type: 'error', code: 'not-allowed', message: truncate(why, 500) });
  }

  private failed(conn: Connection, err: unknown): void {
    this.log.error({ err: describeError(err) }, 'signalling authentication failed');
    this.closeWith(conn, 1011, 'the server failed; reconnect with backoff');
  }

  // -------------------------------------------------------------------------------------------
  // Robots

  private async authRobot(conn: Connection, message: RobotAuthMessage): Promise<void> {
    conn.state = State.Authenticating;
    const nonce = conn.nonce ?? '';
    conn.nonce = undefined;
    const robotId = message.robot_id;
    const key = this.parseKey(robotId, message.public_key);
    const signature = Buffer.from(message.sig, 'base64url');
    if (
      key === undefined ||
      !(await verifySignature(robotChallengePayload(nonce, robotId), key, signature))
    ) {
      if (conn.closed) return;
      this.log.info({ robotId, reason: 'bad-signature' }, 'robot denied');
      this.deny(
        conn,
        'bad-signature',
        `the signature does not verify with the public key sent; sign "svc-signal-v2:<nonce>:${robotId}" with the seed at credential_path`,
        SIGNAL_CLOSE.unauthenticated,
      );
      return;
    }
    let row: RobotKeyRow | undefined;
    try {
      row = await this.keys.load(robotId);
    } catch (err) {
      this.log.error({ err: describeError(err), robotId }, 'cannot look the robot up');
      this.closeWith(conn, 1011, 'the server cannot reach its database; reconnect with backoff');
      return;
    }
    if (row === undefined && this.devOpenEnrolment) {
      row = await this.admitOpen(robotId, message.public_key);
    }
    if (conn.closed) return;
    if (row === undefined) {
      this.log.info({ robotId, reason: 'unknown-robot' }, 'robot denied');
      this.deny(
        conn,
        'unknown-robot',
        `robot ${robotId} is not enrolled: redeem an enrolment token (svcd --config <path> enrol --token <T>); an admin creates one in the console (Fleet, Create enrolment token)`,
        SIGNAL_CLOSE.denied,
      );
      return;
    }
    if (!sameKey(row.publicKey, message.public_key)) {
      this.log.info({ robotId, reason: 'key-mismatch' }, 'robot denied');
      this.deny(
        conn,
        'key-mismatch',
        `robot ${robotId} is enrolled with another key: delete the robot in the console and enrol again`,
        SIGNAL_CLOSE.denied,
      );
      return;
    }
    this.cacheKey(robotId, message.public_key, key);
    this.robotOnline(conn, row);
  }

  /** Open dev enrolment: records an unknown robot with its key and no org (trust on first use). */
  private async admitOpen(robotId: string, publicKey: string): Promise<RobotKeyRow | undefined> {
    const inserted = await this.db.transaction(async (tx) => {
      const [row] = await tx
        .insert(robots)
        .values({ robotId, orgId: null, publicKey, createdAt: new Date(this.now()) })
        .onConflictDoNothing({ target: robots.robotId })
        .returning({ robotId: robots.robotId, orgId: robots.orgId, publicKey: robots.publicKey });
      if (row !== undefined) {
        await audit(tx, {
          orgId: null,
          actor: { kind: 'robot', id: robotId },
          action: 'robot.admit',
          targetKind: 'robot',
          targetId: robotId,
          detail: { via: 'SVC_DEV_OPEN_ENROLMENT' },
        });
      }
      return row;
    });
    if (inserted !== undefined) {
      this.log.warn({ robotId }, 'unknown robot admitted without an org (open dev enrolment)');
      return inserted;
    }
    // Another connection of the same id won the insert: its key is the one kept.
    return this.keys.load(robotId);
  }

  private robotOnline(conn: Connection, row: RobotKeyRow): void {
    const now = this.now();
    const presence = new RobotPresence(row.robotId, row.orgId, conn, now);
    const previous = this.robots.get(row.robotId);
    if (previous !== undefined) {
      const old = previous.connection as Connection;
      presence.adopt(previous);
      old.robot = undefined;
      this.closeWith(old, SIGNAL_CLOSE.replaced, 'replaced by a newer connection of the same robot');
      this.log.info({ robotId: row.robotId }, 'robot connection replaced by a newer one');
    }
    this.robots.set(row.robotId, presence);
    conn.robot = presence;
    conn.state = State.Robot;
    presence.lastWrittenAt = now;
    this.lastSeen.queue(row.robotId, now);
    this.send(conn, {
      type: 'auth-ok',
      role: 'robot',
      robot_id: row.robotId,
      org_id: row.orgId,
      heartbeat_ms: this.heartbeatMs,
    });
    this.log.debug({ robotId: row.robotId }, 'robot online');
  }

  private onRobotMessage(
    conn: Connection,
    presence: RobotPresence | undefined,
    message: SignalClientMessage,
  ): void {
    if (presence === undefined) return;
    switch (message.type) {
      case 'heartbeat':
        this.heartbeatAck(conn, message.t);
        return;
      case 'announce':
        presence.announcement = {
          candidates: message.candidates,
          certHashes: message.cert_hashes,
          channels: message.channels,
          maxSessions: message.max_sessions,
          relay: message.relay,
        };
        presence.replaceSessions(message.sessions);
        return;
      case 'session-started':
        presence.started(message.session_id, message.role, message.sub);
        return;
      case 'session-ended':
        presence.end(message.session_id);
        return;
      case 'auth':
        this.notAllowed(conn, 'already authenticated');
        return;
      case 'connect':
      case 'leave':
        this.notAllowed(conn, `"${message.type}" is a pilot message`);
        return;
      default:
        message satisfies never;
    }
  }

  private revoke(presence: RobotPresence, record: SessionRecord, reason: string): void {
    if (record.jti !== undefined) {
      this.revokedJtis.set(record.jti, record.exp ?? Math.ceil(this.now() / 1000) + 900);
    }
    this.send(presence.connection as Connection, {
      type: 'session-revoked',
      session_id: record.sessionId,
      ...(record.jti === undefined ? {} : { jti: record.jti }),
      reason,
    });
  }

  private parseKey(robotId: string, text: string): KeyObject | undefined {
    const cached = this.keyCache.get(robotId);
    if (cached !== undefined && cached.text === text) return cached.key;
    try {
      return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: text }, format: 'jwk' });
    } catch {
      return undefined;
    }
  }

  private cacheKey(robotId: string, text: string, key: KeyObject): void {
    const cached = this.keyCache.get(robotId);
    if (cached !== undefined) {
      if (cached.text === text) return;
      this.keyCache.delete(robotId);
    }
    this.keyCache.set(robotId, { text, key });
    if (this.keyCache.size > this.keyCacheSize) {
      const oldest = this.keyCache.keys().next();
      if (oldest.done !== true) this.keyCache.delete(oldest.value);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Pilots

  private async authPilot(conn: Connection, token: string): Promise<void> {
    conn.state = State.Authenticating;
    conn.nonce = undefined;
    let claims: VerifiedSessionToken;
    try {
      claims = await this.verifyToken(token);
    } catch (err) {
      if (conn.closed) return;
      this.log.info({ reason: 'bad-token', why: tokenProblem(err) }, 'pilot denied');
      this.deny(
        conn,
        'bad-token',
        `the session token does not verify (${tokenProblem(err)}); get a new one (POST /api/v1/session-tokens)`,
        SIGNAL_CLOSE.unauthenticated,
      );
      return;
    }
    if (conn.closed) return;
    const problem = !ROBOT_ID_PATTERN.test(claims.aud)
      ? 'its audience is not a robot id'
      : this.revokedJtis.has(claims.jti)
        ? 'it was revoked'
        : claims.exp * 1000 <= this.now()
          ? 'it has expired'
          : undefined;
    if (problem !== undefined) {
      this.log.info({ reason: 'bad-token', why: problem }, 'pilot denied');
      this.deny(
        conn,
        'bad-token',
        `the session token is not usable: ${problem}`,
        SIGNAL_CLOSE.unauthenticated,
      );
      return;
    }
    conn.pilot = {
      robotId: claims.aud,
      sub: claims.sub,
      scope: claims.scope,
      jti: claims.jti,
      exp: claims.exp,
      sessions: new Set(),
    };
    conn.state = State.Pilot;
    this.send(conn, {
      type: 'auth-ok',
      role: 'pilot',
      robot_id: claims.aud,
      scope: claims.scope,
      heartbeat_ms: this.heartbeatMs,
    });
  }

  private onPilotMessage(
    conn: Connection,
    pilot: PilotState | undefined,
    message: SignalClientMessage,
    now: number,
  ): void {
    if (pilot === undefined) return;
    switch (message.type) {
      case 'heartbeat':
        this.heartbeatAck(conn, message.t);
        return;
      case 'connect':
        this.connect(conn, pilot, message.robot_id, now);
        return;
      case 'leave': {
        if (!pilot.sessions.has(message.session_id)) {
          this.notAllowed(conn, `no session ${message.session_id} was offered on this connection`);
          return;
        }
        pilot.sessions.delete(message.session_id);
        this.robots.get(pilot.robotId)?.end(message.session_id);
        return;
      }
      case 'auth':
        this.notAllowed(conn, 'already authenticated');
        return;
      case 'announce':
      case 'session-started':
      case 'session-ended':
        this.notAllowed(conn, `"${message.type}" is a robot message`);
        return;
      default:
        message satisfies never;
    }
  }

  private connect(conn: Connection, pilot: PilotState, robotId: string, now: number): void {
    if (robotId !== pilot.robotId) {
      this.send(conn, {
        type: 'denied',
        reason: 'forbidden',
        robot_id: robotId,
        message: `this session token is for robot ${pilot.robotId}, not ${robotId}; get a token for ${robotId}`,
      });
      return;
    }
    if (pilot.exp * 1000 <= now || this.revokedJtis.has(pilot.jti)) {
      const why = pilot.exp * 1000 <= now ? 'it has expired' : 'it was revoked';
      this.deny(
        conn,
        'bad-token',
        `the session token is not usable: ${why}; get a new one`,
        SIGNAL_CLOSE.unauthenticated,
      );
      return;
    }
    const presence = this.robots.get(robotId);
    const announced = presence?.announcement;
    if (presence === undefined || announced === undefined) {
      this.send(conn, { type: 'robot-offline', robot_id: robotId });
      return;
    }
    if (pilot.sessions.size >= this.maxSessionsPerPilot) {
      this.notAllowed(conn, `this connection already holds ${pilot.sessions.size} sessions; leave one first`);
      return;
    }
    const sessionId = this.newSessionId();
    const record = presence.offer(sessionId, pilot.scope, pilot, conn, now);
    pilot.sessions.add(sessionId);
    this.send(presence.connection as Connection, {
      type: 'session-open',
      session_id: sessionId,
      role: record.role,
      sub: pilot.sub,
      scope: pilot.scope,
      jti: pilot.jti,
      exp: pilot.exp,
    });
    this.send(conn, {
      type: 'offer',
      session_id: sessionId,
      robot_id: robotId,
      role: record.role,
      candidates: [...announced.candidates],
      cert_hashes: [...announced.certHashes],
      channels: [...announced.channels],
      relay: announced.relay,
    });
    this.log.debug({ robotId, sessionId, role: record.role }, 'session offered');
  }

  // -------------------------------------------------------------------------------------------
  // Sending

  private heartbeatAck(conn: Connection, t: number | undefined): void {
    this.sendRaw(
      conn,
      t === undefined ? '{"type":"heartbeat-ack"}' : `{"type":"heartbeat-ack","t":${JSON.stringify(t)}}`,
    );
  }

  private send(conn: Connection, message: SignalServerMessage): void {
    this.sendRaw(conn, encodeSignalMessage(message));
  }

  private sendRaw(conn: Connection, text: string): void {
    if (conn.state === State.Closed || conn.ws.readyState !== conn.ws.OPEN) return;
    conn.ws.send(text);
  }

  private deny(conn: Connection, reason: SignalServerDenial, message: string, code: number): void {
    this.send(conn, { type: 'denied', reason, message: truncate(message, 512) });
    this.closeWith(conn, code, reason);
  }

  private closeWith(conn: Connection, code: number, reason: string): void {
    if (conn.state === State.Closed) return;
    if (conn.robot !== undefined) this.dropRobot(conn);
    conn.state = State.Closed;
    conn.nonce = undefined;
    conn.ws.close(code, truncate(reason, 120));
  }
}

type SignalServerDenial = Extract<SignalServerMessage, { type: 'denied' }>['reason'];

function parseText(data: RawData): SignalClientMessage | WireError {
  const text = Array.isArray(data)
    ? Buffer.concat(data).toString('utf8')
    : Buffer.isBuffer(data)
      ? data.toString('utf8')
      : Buffer.from(data).toString('utf8');
  return parseSignalClientMessageCached(text);
}

const HEARTBEAT: SignalClientMessage = { type: 'heartbeat' };

/** Parses a client message; the bare heartbeat, by far the commonest, skips the schema. */
function parseSignalClientMessageCached(text: string): SignalClientMessage | WireError {
  if (text === '{"type":"heartbeat"}') return HEARTBEAT;
  return parseSignalClientMessage(text);
}

/**
 * Ed25519 verification on libuv's thread pool (the callback form of `crypto.verify`), so a
 * reconnect storm's signatures are checked on every core, not on the event loop alone.
 */
function verifySignature(payload: Uint8Array, key: KeyObject, signature: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    verify(null, payload, key, signature, (err, ok) => resolve(err === null && ok));
  });
}

/** Whether two base64url keys are the same bytes (a stored key may carry padding). */
function sameKey(stored: string, presented: string): boolean {
  if (stored === presented) return true;
  return Buffer.from(stored, 'base64url').equals(Buffer.from(presented, 'base64url'));
}

/** Why a token was refused, safe to show: a coded error's code and message, else a generic word. */
function tokenProblem(err: unknown): string {
  if (err instanceof Error && typeof (err as { code?: unknown }).code === 'string') {
    return truncate(`${(err as unknown as { code: string }).code}: ${err.message}`, 200);
  }
  return 'signature, issuer or expiry';
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function truncate(text: string, max: number): string {
  // Close reasons are limited to 123 bytes of UTF-8; messages to 512 characters.
  if (Buffer.byteLength(text) <= max) return text;
  let out = text.slice(0, max - 1);
  while (Buffer.byteLength(out) > max - 3) out = out.slice(0, -1);
  return `${out}…`;
}

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
