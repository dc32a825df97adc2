import type { SessionBackend, SessionPath, SignalClientMessage, SignalServerMessage } from '@svc/wire';
import type { AuditEntry } from '../audit/index.js';
import type { PilotState, SignalConnection } from './connection.js';
import { notAllowed, type SignallingHub } from './hub.js';
import { actorOfSub, type PeopleDirectory, type SignalPerson, subjectOf } from './people.js';
import type { PilotLink, RobotPresence, SessionRecord, SlotReservation } from './presence.js';

/** How long the driver has to answer a `control-request` before it times out, ms (option `controlRequestTimeoutMs`). */
export const CONTROL_REQUEST_TIMEOUT_MS = 10_000;

/**
 * How long a session whose request the driver refused must wait before it asks again, ms (option
 * `controlRefusalCooldownMs`): a refused pilot cannot keep the driver's screen full of prompts.
 */
export const CONTROL_REFUSAL_COOLDOWN_MS = 10_000;

/** The audit actions of the driver slot, written to the robot's org log (target: the robot). */
export const DRIVER_SLOT_AUDIT = {
  /** A session became the driver: reported started as driver, or given a free slot. Actor: its user. */
  acquire: 'driver-slot.acquire',
  /** The driver's session ended, left, was revoked, or gave the slot up. Actor: its user. */
  release: 'driver-slot.release',
  /** The driver granted a request. Actor: the driver who granted; detail: from, to. */
  handover: 'driver-slot.handover',
  /** An org admin or owner took the slot. Actor: the taker; detail: from. */
  takeover: 'driver-slot.takeover',
  /** The driver refused a request. Actor: the driver who refused; detail: the requester. */
  refuse: 'driver-slot.refuse',
  /** The driver did not answer a request in time. Actor: the requester; detail: the driver. */
  timeout: 'driver-slot.timeout',
} as const;

/** Why a driver's session stopped holding the slot, in the `release` entry's `how`. */
export type ReleaseHow = 'released' | 'ended' | 'left' | 'revoked' | 'offer-timeout';

/** How a control request ended (`control-result`'s `outcome`). */
export type ControlOutcome = Extract<SignalServerMessage, { type: 'control-result' }>['outcome'];

/** The pilot messages of the driver slot. */
export type ControlMessage = Extract<
  SignalClientMessage,
  { type: 'request-control' | 'answer-control' | 'take-control' | 'release-control' }
>;

/** Options of {@link DriverControl}. */
export interface DriverControlOptions {
  readonly people: PeopleDirectory;
  /** Queues an audit entry (the server's batcher). */
  readonly audit: (entry: AuditEntry) => void;
  /** Default {@link CONTROL_REQUEST_TIMEOUT_MS}. */
  readonly requestTimeoutMs?: number;
  /** Default {@link CONTROL_REFUSAL_COOLDOWN_MS}. */
  readonly refusalCooldownMs?: number;
  readonly newRequestId: () => string;
}

/**
 * The driver slot of each robot as the cloud assigns it (spec section 1; `docs/protocol/signalling.md`,
 * "The driver slot"): handover requests and answers, takeover by an org admin, release, and the
 * `driver` message every pilot of the robot gets when the driver changes. The robot enforces the
 * assignment it is told (`session-role`). Every change goes through here, so that a waiting
 * request that no longer makes sense is cancelled and the pilots hear of the new driver, whatever
 * caused the change.
 */
export class DriverControl {
  readonly #hub: SignallingHub;
  readonly #people: PeopleDirectory;
  readonly #audit: (entry: AuditEntry) => void;
  readonly #timeoutMs: number;
  readonly #cooldownMs: number;
  readonly #newRequestId: () => string;

  constructor(hub: SignallingHub, options: DriverControlOptions) {
    this.#hub = hub;
    this.#people = options.people;
    this.#audit = options.audit;
    this.#timeoutMs = options.requestTimeoutMs ?? CONTROL_REQUEST_TIMEOUT_MS;
    this.#cooldownMs = options.refusalCooldownMs ?? CONTROL_REFUSAL_COOLDOWN_MS;
    this.#newRequestId = options.newRequestId;
  }

  // -------------------------------------------------------------------------------------------
  // Pilot messages

  /** A pilot's `request-control`, `answer-control`, `take-control` or `release-control`. */
  onMessage(conn: SignalConnection, state: PilotState, message: ControlMessage, now: number): void {
    switch (message.type) {
      case 'request-control':
        this.#request(conn, state, message.session_id, now);
        return;
      case 'answer-control':
        this.#answer(conn, state, message.request_id, message.grant, now);
        return;
      case 'take-control':
        this.#take(conn, state, message.session_id).catch((err: unknown) => {
          this.#hub.log.error({ err }, 'take-control failed');
          this.#result(conn, this.#newRequestId(), message.session_id, 'denied', SERVER_FAILED);
        });
        return;
      case 'release-control':
        this.#release(conn, state, message.session_id);
        return;
      default:
        message satisfies never;
    }
  }

  #request(conn: SignalConnection, state: PilotState, sessionId: string, now: number): void {
    const found = this.#ownSession(conn, state, sessionId);
    if (found === undefined) return;
    const { presence, record } = found;
    const deny = (why: string) => this.#result(conn, this.#newRequestId(), sessionId, 'denied', why);
    const refusal = this.#cannotDrive(state, presence, record);
    if (refusal !== undefined) {
      deny(refusal);
      return;
    }
    const kept = this.#keptFor(presence, now);
    if (presence.driver === undefined && kept !== undefined && kept.sub !== record.sub) {
      deny(
        `the last driver's session ended and the robot keeps the slot for them for ${Math.ceil((kept.untilMs - now) / 1000)} s more, in case they come back (a reload, a short drop); ask again then`,
      );
      return;
    }
    if (presence.driver === undefined) {
      const requestId = this.#newRequestId();
      this.#give(presence, record, { how: 'request' });
      this.#result(conn, requestId, sessionId, 'granted', 'the driver slot was free: you drive now');
      this.#broadcast(presence);
      return;
    }
    const pending = presence.request;
    if (pending !== undefined) {
      const left = Math.ceil((pending.deadline - now) / 1000);
      deny(
        pending.requester === sessionId
          ? 'your request is already waiting for the driver to answer'
          : `another pilot's request is waiting for the driver to answer; ask again in ${left} s`,
      );
      return;
    }
    if (record.refusedAt !== undefined && now - record.refusedAt < this.#cooldownMs) {
      const wait = Math.ceil((record.refusedAt + this.#cooldownMs - now) / 1000);
      deny(`the driver refused your last request; you may ask again in ${wait} s`);
      return;
    }
    const driver = presence.session(presence.driver);
    if (driver?.pilot === undefined) {
      deny(
        "the driver's page is not connected to the cloud, so they cannot be asked; ask them directly, or an org admin or owner can take over",
      );
      return;
    }
    const request = {
      requestId: this.#newRequestId(),
      requester: sessionId,
      driver: driver.sessionId,
      deadline: now + this.#timeoutMs,
    };
    presence.request = request;
    // The request holds from now; the two messages go once both people are known.
    Promise.all([this.#people.person(record.sub, record.act), this.#people.person(driver.sub, driver.act)])
      .then(([asker, asked]) => {
        if (presence.request !== request) return;
        const expires = Math.max(0, Math.ceil(request.deadline - this.#hub.clock.now()));
        driver.pilot?.send({
          type: 'control-request',
          request_id: request.requestId,
          session_id: driver.sessionId,
          user: asker,
          expires_in_ms: expires,
        });
        conn.send({
          type: 'control-pending',
          request_id: request.requestId,
          session_id: sessionId,
          driver: asked,
          expires_in_ms: expires,
        });
      })
      .catch((err: unknown) => {
        this.#hub.log.error({ err }, 'control request: cannot read who is asking');
        if (presence.request !== request) return;
        presence.request = undefined;
        this.#result(conn, request.requestId, sessionId, 'denied', SERVER_FAILED);
      });
  }

  #answer(conn: SignalConnection, state: PilotState, requestId: string, grant: boolean, now: number): void {
    const presence = this.#hub.robots.get(state.claims.robotId);
    const request = presence?.request;
    if (presence === undefined || request?.requestId !== requestId || !state.sessions.has(request.driver)) {
      notAllowed(
        conn,
        `no control request ${requestId} is waiting for your answer (it was answered, timed out or cancelled)`,
      );
      return;
    }
    presence.request = undefined;
    const requester = presence.session(request.requester);
    const driver = presence.session(request.driver);
    if (requester === undefined || driver === undefined) return; // #settle keeps both present
    if (!grant) {
      requester.refusedAt = now;
      this.#tell(
        requester,
        request.requestId,
        'refused',
        `the driver refused; you may ask again in ${Math.ceil(this.#cooldownMs / 1000)} s`,
      );
      this.#write(presence, DRIVER_SLOT_AUDIT.refuse, driver, {
        session_id: driver.sessionId,
        request_id: request.requestId,
        requester: requester.sub,
        requester_session_id: requester.sessionId,
      });
      return;
    }
    this.#give(presence, requester, { how: 'handover', from: driver, requestId: request.requestId });
    this.#tell(requester, request.requestId, 'granted', 'the driver handed you the slot: you drive now');
    this.#broadcast(presence);
  }

  async #take(conn: SignalConnection, state: PilotState, sessionId: string): Promise<void> {
    const first = this.#ownSession(conn, state, sessionId);
    if (first === undefined) return;
    const requestId = this.#newRequestId();
    const deny = (why: string) => this.#result(conn, requestId, sessionId, 'denied', why);
    const refusal = this.#cannotDrive(state, first.presence, first.record);
    if (refusal !== undefined) {
      deny(refusal);
      return;
    }
    const orgId = first.presence.orgId;
    if (orgId === null) {
      deny(
        `robot ${first.presence.robotId} belongs to no org (open dev enrolment), so nobody may take over; ask the driver (request-control)`,
      );
      return;
    }
    const subject = subjectOf(state.claims.sub);
    if (subject.kind !== 'user') {
      deny(
        'taking over needs an org admin or owner signed in as a user, and this token was not minted for a signed-in user; ask the driver (request-control)',
      );
      return;
    }
    const role = await this.#people.roleIn(state.claims.sub, orgId);
    if (conn.isClosed) return;
    // The world may have moved while the role was read: look again.
    const found = this.#ownSession(conn, state, sessionId);
    if (found === undefined) return;
    const { presence, record } = found;
    if (role !== 'admin' && role !== 'owner') {
      this.#hub.log.info(
        { robotId: presence.robotId, role: role ?? 'none' },
        'takeover refused: not an admin',
      );
      deny(
        `taking over needs the admin or owner role in the robot's org, and you are ${role === undefined ? 'not a member' : role === 'operator' ? 'an operator' : `a ${role}`}; ask the driver (request-control)`,
      );
      return;
    }
    const again = this.#cannotDrive(state, presence, record);
    if (again !== undefined) {
      deny(again);
      return;
    }
    const pending = presence.request;
    presence.request = undefined;
    const from = presence.driver === undefined ? undefined : presence.session(presence.driver);
    if (from === undefined) {
      this.#give(presence, record, { how: 'take' });
      this.#result(conn, requestId, sessionId, 'granted', 'the driver slot was free: you drive now');
    } else {
      this.#give(presence, record, { how: 'takeover', from, requestId });
      this.#result(conn, requestId, sessionId, 'taken', 'you took the driver slot over: you drive now');
      this.#tell(
        from,
        requestId,
        'taken',
        'an org admin took the driver slot over: you observe now, and your commands are no longer applied',
      );
    }
    if (pending !== undefined) {
      // The driver's prompt closes; the asker (unless it is the taker) learns its request ended.
      const asked = presence.session(pending.driver);
      if (asked !== undefined) {
        this.#tell(
          asked,
          pending.requestId,
          'taken',
          'an org admin took the driver slot over; the request ended',
        );
      }
      const asker = pending.requester === sessionId ? undefined : presence.session(pending.requester);
      if (asker !== undefined) {
        this.#tell(
          asker,
          pending.requestId,
          'taken',
          'an org admin took the driver slot over; your request ended',
        );
      }
    }
    this.#broadcast(presence);
  }

  #release(conn: SignalConnection, state: PilotState, sessionId: string): void {
    const presence = this.#hub.robots.get(state.claims.robotId);
    if (presence === undefined) {
      notAllowed(
        conn,
        `robot ${state.claims.robotId} is not connected to the cloud, which cannot tell it; close the session to stop driving`,
      );
      return;
    }
    if (!state.sessions.has(sessionId) || presence.driver !== sessionId) {
      notAllowed(conn, `session ${sessionId} of this connection does not hold the driver slot`);
      return;
    }
    const pending = presence.request;
    presence.request = undefined;
    const released = presence.release();
    if (released === undefined) return;
    presence.connection.send({ type: 'session-role', session_id: sessionId, role: 'observer' });
    this.#write(presence, DRIVER_SLOT_AUDIT.release, released, { session_id: sessionId, how: 'released' });
    // Someone was asking: the slot goes to them.
    const asker = pending === undefined ? undefined : presence.session(pending.requester);
    if (pending !== undefined && asker !== undefined) {
      this.#give(presence, asker, { how: 'request' });
      this.#tell(asker, pending.requestId, 'granted', 'the driver released the slot to you: you drive now');
    }
    this.#broadcast(presence);
  }

  // -------------------------------------------------------------------------------------------
  // Changes from the robot, the offers and the connections

  /**
   * A session was offered on `presence` (and may hold the slot now): every pilot of the robot
   * hears of the driver if it changed, else the new pilot alone.
   */
  offered(presence: RobotPresence, driverBefore: string | undefined, pilot: PilotLink): void {
    if (presence.driver !== driverBefore) this.#broadcast(presence);
    else this.#broadcast(presence, pilot);
  }

  /** The robot reports a session running (`session-started`). */
  started(
    presence: RobotPresence,
    sessionId: string,
    role: 'driver' | 'observer',
    sub: string,
    path?: SessionPath,
    backend?: SessionBackend,
  ): void {
    const before = presence.driver;
    const pathBefore = presence.session(sessionId)?.path;
    if (presence.started(sessionId, role, sub, path, backend)) {
      presence.reservation = undefined;
      const record = presence.session(sessionId);
      if (record !== undefined)
        this.#write(presence, DRIVER_SLOT_AUDIT.acquire, record, { session_id: sessionId, how: 'started' });
    }
    const record = presence.session(sessionId);
    if (record !== undefined && path === 'relay' && pathBefore !== 'relay') {
      this.#write(presence, SESSION_PATH_AUDIT, record, { session_id: sessionId, path });
    }
    this.#settle(presence, before);
  }

  /** The robot reports that a session's packets travel another way now (`session-path`). */
  pathChanged(presence: RobotPresence, sessionId: string, path: SessionPath): void {
    const record = presence.session(sessionId);
    if (record === undefined || record.path === path) return;
    record.path = path;
    this.#write(presence, SESSION_PATH_AUDIT, record, { session_id: sessionId, path });
    presence.changed();
  }

  /** A session is gone (`session-ended`, `leave`, a revocation, an offer never started). */
  ended(presence: RobotPresence, sessionId: string, how: ReleaseHow): SessionRecord | undefined {
    const before = presence.driver;
    const record = presence.end(sessionId);
    if (record !== undefined && before === sessionId && record.started) {
      this.#write(presence, DRIVER_SLOT_AUDIT.release, record, { session_id: sessionId, how });
      if (how === 'ended' || how === 'left') this.#reserve(presence, record);
    }
    this.#settle(presence, before);
    return record;
  }

  /** The robot's `announce`: its sessions replace the server's; every pilot hears of the driver. */
  announced(
    presence: RobotPresence,
    sessions: readonly { session_id: string; role: 'driver' | 'observer'; sub: string }[],
  ): void {
    const before = presence.driver;
    const { ended, acquired } = presence.replaceSessions(sessions);
    for (const record of ended) {
      if (record.role === 'driver') {
        this.#write(presence, DRIVER_SLOT_AUDIT.release, record, {
          session_id: record.sessionId,
          how: 'ended',
        });
        this.#reserve(presence, record);
      }
    }
    for (const record of acquired) {
      this.#write(presence, DRIVER_SLOT_AUDIT.acquire, record, {
        session_id: record.sessionId,
        how: 'started',
      });
    }
    this.#settle(presence, before, true);
  }

  /**
   * The robot lost its connection to the cloud: a waiting request is cancelled, and every pilot of
   * the robot is told (`robot-offline`). The sessions are the robot's business meanwhile.
   */
  robotOffline(presence: RobotPresence): void {
    const request = presence.request;
    if (request !== undefined) {
      presence.request = undefined;
      this.#cancel(
        presence,
        request,
        'the robot lost its connection to the cloud; ask again once it is back',
      );
    }
    const message: SignalServerMessage = { type: 'robot-offline', robot_id: presence.robotId };
    for (const pilot of pilotsOf(presence)) pilot.send(message);
  }

  /** A pilot's connection closed: a request it asked, or was asked, is cancelled. */
  pilotGone(presence: RobotPresence, sessions: ReadonlySet<string>): void {
    const request = presence.request;
    if (request === undefined) return;
    if (!sessions.has(request.requester) && !sessions.has(request.driver)) return;
    presence.request = undefined;
    this.#cancel(
      presence,
      request,
      sessions.has(request.driver)
        ? "the driver's page left the cloud before answering"
        : 'the pilot who asked left the cloud',
    );
  }

  /** Times out a request the driver did not answer by its deadline. */
  sweep(presence: RobotPresence, now: number): void {
    const request = presence.request;
    if (request === undefined || now < request.deadline) return;
    presence.request = undefined;
    const requester = presence.session(request.requester);
    const driver = presence.session(request.driver);
    if (requester === undefined || driver === undefined) return;
    const seconds = Math.round(this.#timeoutMs / 1000);
    this.#tell(
      requester,
      request.requestId,
      'timeout',
      `the driver did not answer within ${seconds} s; ask again, or an org admin or owner can take over`,
    );
    this.#tell(
      driver,
      request.requestId,
      'timeout',
      `you did not answer within ${seconds} s; the request ended`,
    );
    this.#write(presence, DRIVER_SLOT_AUDIT.timeout, requester, {
      session_id: requester.sessionId,
      request_id: request.requestId,
      driver: driver.sub,
      driver_session_id: driver.sessionId,
    });
  }

  // -------------------------------------------------------------------------------------------
  // Helpers

  /** The robot's presence and the session `sessionId` of this connection; answers and returns nothing when there is none. */
  #ownSession(
    conn: SignalConnection,
    state: PilotState,
    sessionId: string,
  ): { presence: RobotPresence; record: SessionRecord } | undefined {
    const presence = this.#hub.robots.get(state.claims.robotId);
    if (presence === undefined) {
      this.#result(
        conn,
        this.#newRequestId(),
        sessionId,
        'denied',
        `robot ${state.claims.robotId} is not connected to the cloud now: the slot cannot change hands until it is back (its driver keeps driving)`,
      );
      return undefined;
    }
    const record = state.sessions.has(sessionId) ? presence.session(sessionId) : undefined;
    if (record === undefined) {
      notAllowed(conn, `no session ${sessionId} of robot ${presence.robotId} is held by this connection`);
      return undefined;
    }
    return { presence, record };
  }

  /** Why this session may not ask for or take the slot, or `undefined` when it may. */
  #cannotDrive(state: PilotState, presence: RobotPresence, record: SessionRecord): string | undefined {
    if (state.claims.scope !== 'drive') {
      return 'your session token only allows observing; get a token with scope "drive" (POST /api/v1/session-tokens)';
    }
    if (presence.driver === record.sessionId) return 'this session already holds the driver slot';
    if (!record.started) return 'this session has not started on the robot yet; connect to the robot first';
    return undefined;
  }

  /**
   * Gives the slot to `record`: the robot hears `session-role` (the one losing it first, so the
   * robot never has two drivers), and the audit log the acquisition, handover or takeover.
   */
  #give(
    presence: RobotPresence,
    record: SessionRecord,
    how:
      | { readonly how: 'request' | 'take' }
      | { readonly how: 'handover' | 'takeover'; readonly from: SessionRecord; readonly requestId: string },
  ): void {
    const from = presence.assign(record.sessionId);
    // The cloud's assignment ends a reload grace, on the robot as here.
    presence.reservation = undefined;
    if (from !== undefined) {
      presence.connection.send({ type: 'session-role', session_id: from.sessionId, role: 'observer' });
    }
    presence.connection.send({ type: 'session-role', session_id: record.sessionId, role: 'driver' });
    switch (how.how) {
      case 'request':
      case 'take':
        this.#write(presence, DRIVER_SLOT_AUDIT.acquire, record, {
          session_id: record.sessionId,
          how: how.how,
        });
        return;
      case 'handover':
        this.#write(presence, DRIVER_SLOT_AUDIT.handover, how.from, {
          request_id: how.requestId,
          from: how.from.sub,
          from_session_id: how.from.sessionId,
          to: record.sub,
          to_session_id: record.sessionId,
        });
        return;
      case 'takeover':
        this.#write(presence, DRIVER_SLOT_AUDIT.takeover, record, {
          session_id: record.sessionId,
          from: how.from.sub,
          from_session_id: how.from.sessionId,
        });
        return;
      default:
        how satisfies never;
    }
  }

  /**
   * After a change: a waiting request whose driver no longer drives, or whose requester is gone,
   * is cancelled; the pilots hear of a new driver (or in any case with `always`).
   */
  #settle(presence: RobotPresence, driverBefore: string | undefined, always = false): void {
    const request = presence.request;
    if (request !== undefined) {
      const kept = this.#keptFor(presence, this.#hub.clock.now());
      const why =
        presence.driver !== request.driver
          ? presence.driver === undefined
            ? kept === undefined
              ? 'the driver left and the slot is free: ask again to drive'
              : `the driver left; the robot keeps the slot for them for ${Math.ceil((kept.untilMs - this.#hub.clock.now()) / 1000)} s in case they come back: ask again then`
            : 'the driver changed before answering; ask again'
          : presence.session(request.requester) === undefined
            ? 'the pilot who asked left'
            : undefined;
      if (why !== undefined) {
        presence.request = undefined;
        this.#cancel(presence, request, why);
      }
    }
    if (always || presence.driver !== driverBefore) this.#broadcast(presence);
  }

  /**
   * The driver's session ended on a robot with a reload grace (`announce`'s `driver_grace_ms`):
   * like the robot, the cloud keeps the slot for the same user until the grace is over.
   */
  #reserve(presence: RobotPresence, record: SessionRecord): void {
    const graceMs = presence.announcement?.driverGraceMs ?? 0;
    if (graceMs > 0) presence.reservation = { sub: record.sub, untilMs: this.#hub.clock.now() + graceMs };
  }

  /** The reservation in force at `now`, if any (an expired one is forgotten). */
  #keptFor(presence: RobotPresence, now: number): SlotReservation | undefined {
    const kept = presence.reservation;
    if (kept === undefined) return undefined;
    if (kept.untilMs > now) return kept;
    presence.reservation = undefined;
    return undefined;
  }

  #cancel(presence: RobotPresence, request: NonNullable<RobotPresence['request']>, why: string): void {
    for (const id of [request.requester, request.driver]) {
      const record = presence.session(id);
      if (record !== undefined) this.#tell(record, request.requestId, 'cancelled', why);
    }
  }

  /** `driver` to every pilot of the robot, or to `only`. */
  #broadcast(presence: RobotPresence, only?: PilotLink): void {
    const driverId = presence.driver;
    const record = driverId === undefined ? undefined : presence.session(driverId);
    const send = (user: SignalPerson | null) => {
      const message: SignalServerMessage = {
        type: 'driver',
        robot_id: presence.robotId,
        session_id: record === undefined ? null : record.sessionId,
        user,
      };
      for (const pilot of only === undefined ? pilotsOf(presence) : [only]) pilot.send(message);
    };
    if (record === undefined) {
      send(null);
      return;
    }
    const known = this.#people.known(record.sub, record.act);
    if (known !== undefined) {
      send(known);
      return;
    }
    this.#people
      .person(record.sub, record.act)
      .then((person) => {
        // A newer change has told the pilots already.
        if (this.#hub.robots.get(presence.robotId) !== presence || presence.driver !== driverId) return;
        send(person);
      })
      .catch((err: unknown) => {
        this.#hub.log.warn({ err }, "cannot read the driver's name; the pilots are told without it");
        if (presence.driver === driverId) send({ id: record.sub, name: null });
      });
  }

  /** `control-result` to the pilot of `record`, if it is connected. */
  #tell(record: SessionRecord, requestId: string, outcome: ControlOutcome, message: string): void {
    record.pilot?.send({
      type: 'control-result',
      request_id: requestId,
      session_id: record.sessionId,
      outcome,
      message,
    });
  }

  #result(
    conn: SignalConnection,
    requestId: string,
    sessionId: string,
    outcome: ControlOutcome,
    message: string,
  ): void {
    conn.send({ type: 'control-result', request_id: requestId, session_id: sessionId, outcome, message });
  }

  /** An entry in the robot's org log (none for a robot without org), the actor being `record`'s user. */
  #write(
    presence: RobotPresence,
    action: string,
    record: SessionRecord,
    detail: Record<string, unknown>,
  ): void {
    if (presence.orgId === null) return;
    this.#audit({
      orgId: presence.orgId,
      actor: actorOfSub(record.sub),
      action,
      targetKind: 'robot',
      targetId: presence.robotId,
      detail: { sub: record.sub, ...(record.act === undefined ? {} : { subject: record.act }), ...detail },
      at: new Date(this.#hub.clock.wallNow()),
    });
  }
}

/** Audit action of a session that runs through the relay, or moved from it to a direct path. */
export const SESSION_PATH_AUDIT = 'session.path';

const SERVER_FAILED = 'the server could not decide (it is logged); try again';

/** The distinct pilot connections holding a session on the robot. */
function pilotsOf(presence: RobotPresence): Set<PilotLink> {
  const pilots = new Set<PilotLink>();
  for (const record of presence.sessions()) if (record.pilot !== undefined) pilots.add(record.pilot);
  return pilots;
}
