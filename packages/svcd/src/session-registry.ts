import { type Logger, safeCall, silentLogger, TypedEmitter } from '@svc/runtime';

/** A session's role: a `driver` may send commands; an `observer`'s commands are dropped. */
export type SessionRole = 'driver' | 'observer';

/**
 * What checking a `hello` decided. `ok: true` carries the verified pilot session token's claims
 * (`exp` in seconds since the epoch, as in the JWT); `sessionId` and `role` are set when the
 * signalling server announced the session, otherwise the daemon picks them. `ok: false` carries a
 * reason safe to show the pilot (never the token).
 */
export type SessionGrant =
  | {
      readonly ok: true;
      readonly sub: string;
      readonly scope: 'drive' | 'observe';
      readonly jti: string;
      readonly exp: number;
      readonly sessionId?: string;
      readonly role?: SessionRole;
    }
  | { readonly ok: false; readonly code: 'token-refused'; readonly reason: string };

/** A grant that admits a pilot. */
export type AcceptedGrant = Extract<SessionGrant, { ok: true }>;

/** What a pilot's `hello` offers for checking: its token and the session id from the signalling offer. */
export interface SessionHello {
  readonly token: string;
  readonly sessionId?: string;
}

/** Checks a pilot's `hello` (the token verifier, or the development stand-in). */
export type AuthorizeSession = (hello: SessionHello) => Promise<SessionGrant>;

/** One session the registry admitted. */
export interface OpenSession {
  readonly sessionId: string;
  readonly role: SessionRole;
  readonly sub: string;
  readonly scope: 'drive' | 'observe';
  readonly jti: string;
  /** Token expiry, seconds since the epoch. */
  readonly exp: number;
  /** Registry clock (ms) at admission. */
  readonly startedAtMs: number;
  /** How the session's packets travel: straight from the pilot, or through svc-cloud's relay. */
  readonly path: 'direct' | 'relay';
  /** What carries them: WebTransport over QUIC, or WebRTC data channels. */
  readonly backend: 'quic' | 'webrtc';
}

/** Stable codes of a refused admission. */
export type AdmissionRefusalCode = 'busy' | 'token-in-use' | 'token-revoked' | 'session-in-use';

/** The outcome of {@link SessionRegistry.admit}. */
export type Admission =
  | { readonly ok: true; readonly session: OpenSession }
  | { readonly ok: false; readonly code: AdmissionRefusalCode; readonly reason: string };

/** What {@link SessionRegistry.admit} needs besides the grant. */
export interface AdmitRequest {
  /** Id of the session: the signalling server's when it announced one, else the transport's. */
  readonly sessionId: string;
  readonly grant: AcceptedGrant;
  /** Ends the session with a reason the pilot may see; called when the session is revoked. */
  readonly close: (reason: string) => void;
  /** The session's role changed ({@link SessionRegistry.setRole}): it now drives or observes. */
  readonly roleChanged?: (session: OpenSession, reason: string) => void;
  /** How its packets travel (default `direct`). */
  readonly path?: 'direct' | 'relay';
  /** What carries them (default `quic`). */
  readonly backend?: 'quic' | 'webrtc';
}

/** A session started or ended; `sessions` is the count of open sessions after the change. */
export interface SessionEvent {
  readonly session: OpenSession;
  readonly sessions: number;
  /** Why it ended (`ended` events only). */
  readonly reason?: string;
}

/** A session's role changed mid-session (svc-cloud moved the driver slot). */
export interface RoleChangeEvent {
  /** The session with its new role. */
  readonly session: OpenSession;
  readonly previous: SessionRole;
  readonly reason: string;
}

/** Events of a {@link SessionRegistry}: a session started, ended, changed role or path. */
export type SessionRegistryEvents = {
  started: (event: SessionEvent) => void;
  ended: (event: SessionEvent) => void;
  role: (event: RoleChangeEvent) => void;
  /** A session's packets travel another way now (the pilot moved off the relay). */
  path: (session: OpenSession) => void;
};

/** Options of {@link SessionRegistry}. */
export interface SessionRegistryOptions {
  /** `[agent] max_sessions`. */
  readonly maxSessions: number;
  /** Clock in ms since the epoch (default `Date.now`); compared with token `exp` claims. */
  readonly now?: () => number;
  /**
   * How long a revoked `jti` is refused when its expiry is unknown (default 15 minutes: pilot
   * session tokens live a few minutes at most).
   */
  readonly revokedUnknownExpiryMs?: number;
  /** Where a listener that threw is reported (the registry carries on); default silent. */
  readonly logger?: Logger;
  /**
   * `[agent] driver_grace_ms`: how long the driver slot stays reserved for the same user (`sub`)
   * after the driver's session ends (default 0: freed at once).
   */
  readonly driverGraceMs?: number;
}

/** The driver slot kept for a user whose driving session ended (a reload, a short roam). */
export interface DriverReservation {
  /** The user it is kept for (the token's `sub`). */
  readonly sub: string;
  /** The session that held the slot. */
  readonly sessionId: string;
  /** Registry clock (ms) when the reservation lapses and the slot is free for anyone. */
  readonly untilMs: number;
}

interface Entry {
  /** Replaced (never changed in place) when the role changes. */
  session: OpenSession;
  readonly close: (reason: string) => void;
  readonly roleChanged: ((session: OpenSession, reason: string) => void) | undefined;
}

/**
 * Who is connected to this robot: enforces `max_sessions`, hands out the one driver slot, refuses
 * a token (`jti`) already in use or revoked, and reports sessions starting and ending. Pure: no
 * I/O, time injected.
 *
 * The driver slot goes to a `drive`-scoped session when it is free at admission; every other
 * session observes. When the signalling server announced `role: 'driver'` but the slot is held
 * locally by another live session, the newcomer observes: the robot enforces the slot.
 *
 * When the driver's session ends (not when it is revoked), the slot is reserved for the same user
 * for `driverGraceMs`: a `drive`-scoped session of that `sub` admitted inside the grace takes it
 * back (a reload, a short Wi-Fi roam); anyone else observes until the grace has passed, then the
 * slot is free for the next `drive`-scoped `hello`. The `ended` event is emitted at once either
 * way, so robot code parks its actuators. A free slot is deliberately not handed to an observer
 * already in its session: that pilot was told `observer` in `welcome` and has no message that
 * would promote it, and control must never pass to someone who did not ask for it at that moment.
 */
export class SessionRegistry {
  readonly maxSessions: number;
  readonly #now: () => number;
  readonly #revokedTtlMs: number;
  readonly #open = new Map<string, Entry>();
  /** Revoked `jti` → when (ms) it may be accepted again. */
  readonly #revoked = new Map<string, number>();
  readonly #events: TypedEmitter<SessionRegistryEvents>;
  readonly #logger: Logger;
  readonly #graceMs: number;
  #driver: string | undefined;
  #reservation: DriverReservation | undefined;

  constructor(options: SessionRegistryOptions) {
    if (!Number.isInteger(options.maxSessions) || options.maxSessions < 1) {
      throw new TypeError(`maxSessions must be an integer of at least 1, got ${options.maxSessions}`);
    }
    const graceMs = options.driverGraceMs ?? 0;
    if (!Number.isFinite(graceMs) || graceMs < 0) {
      throw new TypeError(`driverGraceMs must be a finite number of at least 0, got ${graceMs}`);
    }
    this.#graceMs = graceMs;
    this.maxSessions = options.maxSessions;
    this.#now = options.now ?? Date.now;
    this.#revokedTtlMs = options.revokedUnknownExpiryMs ?? 15 * 60_000;
    this.#logger = options.logger ?? silentLogger;
    this.#events = new TypedEmitter(options.logger);
  }

  /** Open sessions. */
  get size(): number {
    return this.#open.size;
  }

  /** The session holding the driver slot, if any. */
  get driver(): OpenSession | undefined {
    return this.#driver === undefined ? undefined : this.#open.get(this.#driver)?.session;
  }

  /** The driver slot's reservation for the last driver's user, while its grace lasts. */
  get driverReservation(): DriverReservation | undefined {
    const reservation = this.#reservation;
    if (reservation !== undefined && reservation.untilMs <= this.#now()) this.#reservation = undefined;
    return this.#reservation;
  }

  /** Every open session, in admission order. */
  sessions(): OpenSession[] {
    return [...this.#open.values()].map((e) => e.session);
  }

  /** The open session `sessionId`, if any. */
  get(sessionId: string): OpenSession | undefined {
    return this.#open.get(sessionId)?.session;
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on<E extends keyof SessionRegistryEvents>(event: E, listener: SessionRegistryEvents[E]): () => void {
    return this.#events.on(event, listener);
  }

  /**
   * Admits a session whose token was accepted, deciding its role; emits `started`. A refusal names
   * the reason for the pilot's `denied`; the caller closes the session.
   */
  admit(request: AdmitRequest): Admission {
    const { grant, sessionId } = request;
    this.#pruneRevoked();
    if (this.#revoked.has(grant.jti)) return refuse('token-revoked', 'token revoked');
    for (const entry of this.#open.values()) {
      if (entry.session.jti === grant.jti) return refuse('token-in-use', 'token already in use');
    }
    if (this.#open.has(sessionId)) return refuse('session-in-use', `session ${sessionId} is already open`);
    if (this.#open.size >= this.maxSessions) {
      return refuse(
        'busy',
        `robot busy: ${this.#open.size} of ${this.maxSessions} sessions in use (max_sessions)`,
      );
    }
    const wantsToDrive = grant.scope === 'drive' && grant.role !== 'observer';
    const reservation = this.driverReservation;
    const slotFree =
      this.#driver === undefined && (reservation === undefined || reservation.sub === grant.sub);
    const role: SessionRole = wantsToDrive && slotFree ? 'driver' : 'observer';
    const session: OpenSession = Object.freeze({
      sessionId,
      role,
      sub: grant.sub,
      scope: grant.scope,
      jti: grant.jti,
      exp: grant.exp,
      startedAtMs: this.#now(),
      path: request.path ?? 'direct',
      backend: request.backend ?? 'quic',
    });
    this.#open.set(sessionId, { session, close: request.close, roleChanged: request.roleChanged });
    if (role === 'driver') {
      this.#driver = sessionId;
      this.#reservation = undefined;
    }
    this.#events.safeEmit('started', { session, sessions: this.#open.size });
    return { ok: true, session };
  }

  /**
   * The session ended (the pilot left, the transport dropped, the daemon closed it). Frees its
   * driver slot, reserved for the same user for the driver grace, and emits `ended`. Returns
   * `false` for a session that is not open (already ended or revoked), so callers need not track
   * that.
   */
  end(sessionId: string, reason = 'closed'): boolean {
    return this.#end(sessionId, reason, true);
  }

  /**
   * Closes one session (the signalling server revoked it). A revoked driver's slot is freed with
   * no grace: the service took it away. Returns whether it was open.
   */
  revoke(sessionId: string, reason = 'session revoked'): boolean {
    const entry = this.#open.get(sessionId);
    if (entry === undefined) return false;
    this.#end(sessionId, reason, false);
    entry.close(reason);
    return true;
  }

  #end(sessionId: string, reason: string, grace: boolean): boolean {
    const entry = this.#open.get(sessionId);
    if (entry === undefined) return false;
    this.#open.delete(sessionId);
    if (this.#driver === sessionId) {
      this.#driver = undefined;
      this.#reservation =
        grace && this.#graceMs > 0
          ? Object.freeze({ sub: entry.session.sub, sessionId, untilMs: this.#now() + this.#graceMs })
          : undefined;
    }
    this.#events.safeEmit('ended', { session: entry.session, sessions: this.#open.size, reason });
    return true;
  }

  /**
   * svc-cloud moved the driver slot (`session-role`: a handover, a takeover, a release): the
   * session drives or observes from now on. Making one session the driver makes any other driver
   * an observer first (one driver, whatever order the messages came in) and ends a reload grace
   * (svc-cloud's assignment wins). Only a `drive`-scoped session may drive. Emits `role` and tells
   * the session. Returns `false`, changing nothing, for a session that is not open or an
   * `observe` token asked to drive.
   */
  setRole(sessionId: string, role: SessionRole, reason = 'svc-cloud moved the driver slot'): boolean {
    const entry = this.#open.get(sessionId);
    if (entry === undefined) return false;
    if (entry.session.role === role) return true;
    if (role === 'driver') {
      if (entry.session.scope !== 'drive') return false;
      const current = this.#driver;
      if (current !== undefined && current !== sessionId) this.#changeRole(current, 'observer', reason);
      this.#reservation = undefined;
    }
    this.#changeRole(sessionId, role, reason);
    return true;
  }

  /** The session moved to another transport, which carries its packets `path`. */
  setPath(sessionId: string, path: 'direct' | 'relay'): boolean {
    const entry = this.#open.get(sessionId);
    if (entry === undefined) return false;
    if (entry.session.path === path) return true;
    entry.session = Object.freeze({ ...entry.session, path });
    this.#events.safeEmit('path', entry.session);
    return true;
  }

  /**
   * The pilot renewed the session with a fresh token (checked by the caller: same person, same
   * robot): it lives until `exp` (seconds since the epoch), and the new token counts as its own.
   */
  renew(sessionId: string, jti: string, exp: number): OpenSession | undefined {
    const entry = this.#open.get(sessionId);
    if (entry === undefined) return undefined;
    if (exp > entry.session.exp) entry.session = Object.freeze({ ...entry.session, exp, jti });
    return entry.session;
  }

  #changeRole(sessionId: string, role: SessionRole, reason: string): void {
    const entry = this.#open.get(sessionId)!;
    const previous = entry.session.role;
    entry.session = Object.freeze({ ...entry.session, role });
    if (role === 'driver') this.#driver = sessionId;
    else if (this.#driver === sessionId) this.#driver = undefined;
    this.#events.safeEmit('role', { session: entry.session, previous, reason });
    const listener = entry.roleChanged;
    const session = entry.session;
    if (listener !== undefined) safeCall(this.#logger, 'roleChanged', () => listener(session, reason));
  }

  /**
   * Revokes a token: closes every session opened with it and refuses it until it expires (`exp`
   * in seconds; taken from an open session when not given, else a default). Returns the number
   * of sessions closed.
   */
  revokeJti(jti: string, exp?: number, reason = 'token revoked'): number {
    const holders = [...this.#open.values()].filter((e) => e.session.jti === jti);
    const expiry = exp ?? holders[0]?.session.exp;
    const untilMs = expiry === undefined ? this.#now() + this.#revokedTtlMs : expiry * 1000;
    this.#revoked.set(jti, Math.max(untilMs, this.#revoked.get(jti) ?? 0));
    for (const entry of holders) this.revoke(entry.session.sessionId, reason);
    return holders.length;
  }

  /** Whether `jti` is refused now. */
  isRevoked(jti: string): boolean {
    this.#pruneRevoked();
    return this.#revoked.has(jti);
  }

  #pruneRevoked(): void {
    const now = this.#now();
    for (const [jti, untilMs] of this.#revoked) if (untilMs <= now) this.#revoked.delete(jti);
  }
}

function refuse(code: AdmissionRefusalCode, reason: string): Admission {
  return { ok: false, code, reason };
}
