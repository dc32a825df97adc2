import type {
  SessionBackend,
  SessionPath,
  SignalCandidate,
  SignalChannel,
  SignalServerMessage,
} from '@svc/wire';

/** Role of a session on a robot. */
export type SessionRole = 'driver' | 'observer';

/** One session the server knows of on a robot: offered by it, or reported by the robot. */
export interface SessionRecord {
  readonly sessionId: string;
  role: SessionRole;
  /** Who the session is for (the token's `sub`). */
  sub: string;
  /** The token's id, when the server offered the session (a session the robot reports has none). */
  readonly jti: string | undefined;
  /** The token's expiry, seconds since the epoch, when known (a `renew` moves it). */
  exp: number | undefined;
  /** When the server offered it, monotonic ms; `undefined` for a session the robot reported first. */
  readonly offeredAt: number | undefined;
  /** The token's `act` (an API key's own user id), when the server offered the session and it had one. */
  readonly act: string | undefined;
  /** Whether the robot has reported it running. */
  started: boolean;
  /** The pilot connection that asked for it, while that connection is open. */
  pilot: PilotLink | undefined;
  /** When the driver last refused a control request of this session (monotonic ms), if ever. */
  refusedAt: number | undefined;
  /** How its packets travel, as the robot reports it (`direct` until it says otherwise). */
  path: SessionPath;
  /** What carries them, as the robot reports it (`quic` until it says otherwise). */
  backend: SessionBackend;
}

/** The pilot connection a session was offered to: told about the slot, and when the session is gone. */
export interface PilotLink {
  forget(sessionId: string): void;
  send(message: SignalServerMessage): void;
}

/**
 * A handover request waiting for the driver's answer. It is valid only while `driver` still holds
 * the slot and `requester` is still a session of the robot; the control layer checks that after
 * every change and cancels it otherwise.
 */
export interface ControlRequest {
  readonly requestId: string;
  /** The asking session. */
  readonly requester: string;
  /** The driver's session, the one asked. */
  readonly driver: string;
  /** When it times out, monotonic ms. */
  readonly deadline: number;
}

/** The robot's connection, as presence holds it: messages to the robot, and closing it. */
export interface RobotLink {
  send(message: SignalServerMessage): void;
  /** Closes the connection; `false` when it was closed already. */
  close(code: number, reason: string): boolean;
  /** Sends `denied` and closes. */
  deny(
    reason: Extract<SignalServerMessage, { type: 'denied' }>['reason'],
    message: string,
    code: number,
  ): void;
}

/** What a robot last announced: how to reach it and what it serves. */
export interface Announcement {
  readonly candidates: readonly SignalCandidate[];
  readonly certHashes: readonly string[];
  readonly channels: readonly SignalChannel[];
  readonly maxSessions: number;
  readonly relay: boolean;
  /** How long the robot keeps the driver slot for the same user after the driver's session ends, ms. */
  readonly driverGraceMs: number;
  /** The transports it serves sessions on. */
  readonly backends: readonly SessionBackend[];
}

/** The driver slot kept for the last driver's user while the robot's reload grace lasts. */
export interface SlotReservation {
  /** The user it is kept for (the token's `sub`). */
  readonly sub: string;
  /** Until when, on the signalling clock (`clock.now()`), ms. */
  readonly untilMs: number;
}

/** A session as presence shows it. */
export interface SessionView {
  readonly sessionId: string;
  readonly role: SessionRole;
  /** The token's `sub` (shown to the robot's admins only). */
  readonly sub: string;
  /** `true` once the robot reported it running; `false` while offered and not yet started. */
  readonly started: boolean;
  /** How its packets travel: `direct`, or through svc-cloud's `relay` (a TURN server's, on WebRTC). */
  readonly path: SessionPath;
  /** What carries them: WebTransport over QUIC, or WebRTC data channels. */
  readonly backend: SessionBackend;
}

/** A robot's presence as the API shows it. */
export interface PresenceView {
  readonly online: boolean;
  /** Last time the robot was heard from, as far as this node knows; `null` when never. */
  readonly lastSeenAt: Date | null;
  readonly channels: readonly SignalChannel[];
  readonly candidates: readonly SignalCandidate[];
  readonly relay: boolean;
  /** The transports the robot serves (empty while offline). */
  readonly backends: readonly SessionBackend[];
  readonly sessions: readonly SessionView[];
}

/**
 * The presence of one connected robot and its sessions, with the driver slot. It exists while the
 * robot is connected; the registry drops it at disconnect (which releases every session and the
 * slot), so memory follows the robots online, not the fleet.
 */
export class RobotPresence {
  readonly robotId: string;
  readonly orgId: string | null;
  /** The robot's connection. */
  readonly connection: RobotLink;
  announcement: Announcement | undefined = undefined;
  /** Last time anything was heard from the robot, ms since the epoch. */
  lastHeardAt: number;
  /** Last time `last_seen_at` was queued for writing for this robot, ms since the epoch (0: never). */
  lastWrittenAt = 0;
  /** The session holding the driver slot, if any. */
  driver: string | undefined = undefined;
  /** The handover request waiting for the driver's answer (one at a time), if any. */
  request: ControlRequest | undefined = undefined;
  /**
   * Set when the driver's session ended (not released, not revoked) on a robot with a reload
   * grace: the robot keeps the slot for that user until then, so the cloud hands it to nobody else.
   */
  reservation: SlotReservation | undefined = undefined;
  /** Allocated with the first session: most robots have none most of the time. */
  private sessionMap: Map<string, SessionRecord> | undefined = undefined;
  /** Told after each change of what {@link RobotPresence.view} shows (the fleet's live view listens). */
  private readonly onChange: (presence: RobotPresence) => void;

  /**
   * @param now - When the robot was last heard, ms since the epoch (`last_seen_at` is written from it).
   * @param onChange - Called after each change of its sessions, driver or announcement.
   */
  constructor(
    robotId: string,
    orgId: string | null,
    connection: RobotLink,
    now: number,
    onChange: (presence: RobotPresence) => void = () => undefined,
  ) {
    this.robotId = robotId;
    this.orgId = orgId;
    this.connection = connection;
    this.lastHeardAt = now;
    this.onChange = onChange;
  }

  /** Records what the robot announced (how to reach it, what it serves). */
  announce(announcement: Announcement): void {
    this.announcement = announcement;
    this.onChange(this);
  }

  /** Tells the listener that what {@link RobotPresence.view} shows may have changed. */
  changed(): void {
    this.onChange(this);
  }

  /** The sessions the server knows on this robot. */
  sessions(): IterableIterator<SessionRecord> {
    return (this.sessionMap ?? EMPTY).values();
  }

  /** Number of sessions known. */
  get sessionCount(): number {
    return this.sessionMap?.size ?? 0;
  }

  /** The session `sessionId`, if known. */
  session(sessionId: string): SessionRecord | undefined {
    return this.sessionMap?.get(sessionId);
  }

  /**
   * Offers a new session: `driver` when the scope is `drive` and the slot is free (the slot is then
   * held for it), else `observer`.
   *
   * @param now - When it is offered, monotonic ms (the offer's deadline is counted from it).
   */
  offer(
    sessionId: string,
    scope: 'drive' | 'observe',
    claims: { sub: string; jti: string; exp: number; act?: string | undefined },
    pilot: PilotLink,
    now: number,
  ): SessionRecord {
    // A slot kept for another user's reload is not free: the robot would admit an observer.
    const kept =
      this.reservation !== undefined && this.reservation.untilMs > now ? this.reservation : undefined;
    const free = this.driver === undefined && (kept === undefined || kept.sub === claims.sub);
    const role: SessionRole = scope === 'drive' && free ? 'driver' : 'observer';
    if (role === 'driver') this.driver = sessionId;
    const record: SessionRecord = {
      sessionId,
      role,
      sub: claims.sub,
      jti: claims.jti,
      exp: claims.exp,
      offeredAt: now,
      act: claims.act,
      started: false,
      pilot,
      refusedAt: undefined,
      path: 'direct',
      backend: 'quic',
    };
    this.map().set(sessionId, record);
    this.onChange(this);
    return record;
  }

  /**
   * The robot reports a session running (`session-started`, or in `announce`). The robot enforces
   * the slot itself, so its word is taken: a driver it reports holds the slot. Returns whether the
   * session just acquired the slot (it was not a running driver before).
   */
  started(
    sessionId: string,
    role: SessionRole,
    sub: string,
    path?: SessionPath,
    backend?: SessionBackend,
  ): boolean {
    let record = this.sessionMap?.get(sessionId);
    if (record === undefined) {
      record = {
        sessionId,
        role,
        sub,
        jti: undefined,
        exp: undefined,
        offeredAt: undefined,
        act: undefined,
        started: true,
        pilot: undefined,
        refusedAt: undefined,
        path: path ?? 'direct',
        backend: backend ?? 'quic',
      };
      this.map().set(sessionId, record);
      if (role === 'driver') this.driver = sessionId;
      this.onChange(this);
      return role === 'driver';
    }
    const acquired = role === 'driver' && !(record.started && record.role === 'driver');
    record.started = true;
    record.role = role;
    record.sub = sub;
    if (path !== undefined) record.path = path;
    if (backend !== undefined) record.backend = backend;
    if (role === 'driver') this.driver = sessionId;
    else if (this.driver === sessionId) this.driver = undefined;
    this.onChange(this);
    return acquired;
  }

  /**
   * Gives the slot to `sessionId` (a handover, a takeover, a release or a request on a free slot):
   * it becomes the driver, the one before it an observer. Returns the session that lost the slot.
   *
   * @throws {TypeError} when `sessionId` is not a session of this robot.
   */
  assign(sessionId: string): SessionRecord | undefined {
    const record = this.sessionMap?.get(sessionId);
    if (record === undefined) throw new TypeError(`RobotPresence.assign: no session ${sessionId}`);
    const previous = this.driver === undefined ? undefined : this.sessionMap?.get(this.driver);
    if (previous !== undefined && previous !== record) previous.role = 'observer';
    record.role = 'driver';
    this.driver = sessionId;
    this.onChange(this);
    return previous === record ? undefined : previous;
  }

  /** The driver gives the slot up: its session stays, as an observer. */
  release(): SessionRecord | undefined {
    const record = this.driver === undefined ? undefined : this.sessionMap?.get(this.driver);
    if (record !== undefined) record.role = 'observer';
    this.driver = undefined;
    this.onChange(this);
    return record;
  }

  /** Forgets a session and frees the slot if it held it. Returns the record, if it was known. */
  end(sessionId: string): SessionRecord | undefined {
    const record = this.sessionMap?.get(sessionId);
    if (record === undefined) return undefined;
    this.sessionMap?.delete(sessionId);
    if (this.driver === sessionId) this.driver = undefined;
    record.pilot?.forget(sessionId);
    this.onChange(this);
    return record;
  }

  /**
   * Takes over the sessions of the connection this one replaces (the robot kept them), or of the
   * robot's last connection when it comes back after losing the cloud (`withAnnouncement: false`:
   * how to reach it is told again in its `announce`).
   */
  adopt(previous: RobotPresence, withAnnouncement = true): void {
    this.sessionMap = previous.sessionMap;
    this.driver = previous.driver;
    this.request = previous.request;
    if (withAnnouncement) this.announcement = previous.announcement;
    previous.sessionMap = undefined;
    previous.driver = undefined;
    previous.request = undefined;
    this.onChange(this);
  }

  /**
   * Replaces the sessions with those the robot says are open (its `announce` after a reconnect).
   * A session it keeps keeps its record (its pilot, its token); offers it has not seen start stay.
   * Returns the running sessions it no longer has, and those that acquired the slot.
   */
  replaceSessions(open: readonly { session_id: string; role: SessionRole; sub: string }[]): {
    ended: SessionRecord[];
    acquired: SessionRecord[];
  } {
    const before = this.sessionMap ?? EMPTY;
    const kept = new Set(open.map((s) => s.session_id));
    const ended: SessionRecord[] = [];
    const next = new Map<string, SessionRecord>();
    this.driver = undefined;
    for (const s of before.values()) {
      if (s.started && !kept.has(s.sessionId)) {
        ended.push(s);
        s.pilot?.forget(s.sessionId);
      } else if (!s.started) {
        // Offers not yet started stay: the robot cannot know them until the pilot says hello.
        next.set(s.sessionId, s);
        if (s.role === 'driver') this.driver = s.sessionId;
      } else {
        next.set(s.sessionId, s);
      }
    }
    this.sessionMap = next;
    const acquired: SessionRecord[] = [];
    for (const s of open) {
      if (this.started(s.session_id, s.role, s.sub)) acquired.push(this.sessionMap.get(s.session_id)!);
    }
    // A kept session the robot now reports as an observer is not the driver any more; one it no
    // longer reports as driver either.
    if (this.driver !== undefined && this.sessionMap.get(this.driver)?.role !== 'driver')
      this.driver = undefined;
    this.onChange(this);
    return { ended, acquired };
  }

  /** The presence as the API shows it. */
  view(): PresenceView {
    const a = this.announcement;
    return {
      online: true,
      lastSeenAt: new Date(this.lastHeardAt),
      channels: a?.channels ?? [],
      candidates: a?.candidates ?? [],
      relay: a?.relay ?? false,
      backends: a?.backends ?? [],
      sessions: [...this.sessions()].map((s) => ({
        sessionId: s.sessionId,
        role: s.role,
        sub: s.sub,
        started: s.started,
        path: s.path,
        backend: s.backend,
      })),
    };
  }

  private map(): Map<string, SessionRecord> {
    this.sessionMap ??= new Map();
    return this.sessionMap;
  }
}

const EMPTY: ReadonlyMap<string, SessionRecord> = new Map();

/** The presence of an offline robot: what the API shows when no connection holds it. */
export function offlineView(lastSeenAt: Date | null): PresenceView {
  return {
    online: false,
    lastSeenAt,
    channels: [],
    candidates: [],
    relay: false,
    backends: [],
    sessions: [],
  };
}
