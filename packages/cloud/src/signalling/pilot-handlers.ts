import { QOS_PROFILES } from '@svc/qos';
import { ROBOT_ID_PATTERN, SIGNAL_CLOSE, type SignalClientMessage } from '@svc/wire';
import { type PilotState, type SignalConnection, truncate } from './connection.js';
import type { DriverControl } from './control.js';
import { heartbeatAck, notAllowed, type SignallingHub } from './hub.js';

/** What a verified pilot session token says (the claims signalling uses). */
export interface VerifiedSessionToken {
  readonly sub: string;
  /** The robot the token is for. */
  readonly aud: string;
  readonly scope: 'drive' | 'observe';
  readonly jti: string;
  /** Expiry, seconds since the epoch. */
  readonly exp: number;
  /** For an API key's token, the customer's own user id it named (shown to other pilots as the name). */
  readonly act?: string | undefined;
}

/**
 * Verifies a pilot session token (signature, issuer, expiry); throws when it does not verify. The
 * thrown error's message may reach the pilot when the error carries a string `code`, so it must
 * never contain the token.
 */
export type VerifySessionToken = (token: string) => Promise<VerifiedSessionToken>;

/** Options of {@link PilotHandlers}. */
export interface PilotHandlersOptions {
  readonly verifySessionToken: VerifySessionToken;
  /** Sessions one pilot connection may hold at once. */
  readonly maxSessionsPerPilot: number;
  /** New session ids. */
  readonly newSessionId: () => string;
  /** The driver slot: handover, takeover, release, and who drives. */
  readonly control: DriverControl;
}

/**
 * The pilot side of signalling: a pilot presents a session token for one robot, then asks for
 * sessions on it (`connect`, answered with an `offer` while the robot sends `session-open`) and
 * leaves them. A pilot connection that stays open hears who drives (`driver`) and may ask for,
 * answer, take and release the driver slot (see {@link DriverControl}).
 */
export class PilotHandlers {
  readonly #hub: SignallingHub;
  readonly #verify: VerifySessionToken;
  readonly #maxSessions: number;
  readonly #newSessionId: () => string;
  readonly #control: DriverControl;

  constructor(hub: SignallingHub, options: PilotHandlersOptions) {
    this.#hub = hub;
    this.#control = options.control;
    this.#verify = options.verifySessionToken;
    this.#maxSessions = options.maxSessionsPerPilot;
    this.#newSessionId = options.newSessionId;
  }

  /**
   * Checks a pilot's `auth`: the token verifies, is for a robot id, is neither revoked nor
   * expired. On success `auth-ok`; otherwise `denied` `bad-token` and the connection closes. An
   * answer that comes after the connection closed is dropped.
   *
   * @throws {TypeError} unless `conn` is `challenged`.
   */
  async authenticate(conn: SignalConnection, token: string): Promise<void> {
    conn.beginAuth('pilot');
    let claims: VerifiedSessionToken;
    try {
      claims = await this.#verify(token);
    } catch (err) {
      if (conn.isClosed) return;
      const why = tokenProblem(err);
      this.#hub.log.info({ reason: 'bad-token', why }, 'pilot denied');
      conn.deny(
        'bad-token',
        `the session token does not verify (${why}); get a new one (POST /api/v1/session-tokens)`,
        SIGNAL_CLOSE.unauthenticated,
      );
      return;
    }
    if (conn.isClosed) return;
    const problem = !ROBOT_ID_PATTERN.test(claims.aud)
      ? 'its audience is not a robot id'
      : this.#hub.revokedJtis.has(claims.jti)
        ? 'it was revoked'
        : claims.exp * 1000 <= this.#hub.clock.wallNow()
          ? 'it has expired'
          : undefined;
    if (problem !== undefined) {
      this.#hub.log.info({ reason: 'bad-token', why: problem }, 'pilot denied');
      conn.deny('bad-token', `the session token is not usable: ${problem}`, SIGNAL_CLOSE.unauthenticated);
      return;
    }
    conn.admitPilot({
      robotId: claims.aud,
      sub: claims.sub,
      scope: claims.scope,
      jti: claims.jti,
      exp: claims.exp,
      ...(claims.act === undefined ? {} : { act: claims.act }),
    });
    conn.send({
      type: 'auth-ok',
      role: 'pilot',
      robot_id: claims.aud,
      scope: claims.scope,
      heartbeat_ms: this.#hub.heartbeatMs,
    });
  }

  /** A message of an authenticated pilot; `now` is when it came (monotonic ms). */
  onMessage(conn: SignalConnection, state: PilotState, message: SignalClientMessage, now: number): void {
    switch (message.type) {
      case 'heartbeat':
        heartbeatAck(conn, message.t);
        return;
      case 'connect':
        this.#connect(conn, state, message.robot_id, now);
        return;
      case 'leave': {
        if (!state.sessions.has(message.session_id)) {
          notAllowed(conn, `no session ${message.session_id} was offered on this connection`);
          return;
        }
        state.sessions.delete(message.session_id);
        const presence = this.#hub.robots.get(state.claims.robotId);
        if (presence !== undefined) this.#control.ended(presence, message.session_id, 'left');
        else this.#hub.parked.get(state.claims.robotId)?.presence.end(message.session_id);
        return;
      }
      case 'request-control':
      case 'answer-control':
      case 'take-control':
      case 'release-control':
        this.#control.onMessage(conn, state, message, now);
        return;
      case 'resume':
        this.#resume(conn, state, message.session_id);
        return;
      case 'relay-allocate':
        void this.#allocateRelay(conn, state, message.session_id, message.token).catch((err: unknown) =>
          this.#hub.log.error({ err: String(err) }, 'relay allocation failed'),
        );
        return;
      case 'renew':
        void this.#renew(conn, state, message.session_id, message.token).catch((err: unknown) =>
          this.#hub.log.error({ err: String(err) }, 'session renewal failed'),
        );
        return;
      case 'rtc-offer':
      case 'rtc-candidate':
        this.#hub.rtc.fromPilot(conn, state, message);
        return;
      case 'auth':
        notAllowed(conn, 'already authenticated');
        return;
      case 'announce':
      case 'session-started':
      case 'session-ended':
      case 'session-path':
      case 'rtc-answer':
      case 'rtc-failed':
        notAllowed(conn, `"${message.type}" is a robot message`);
        return;
      default:
        message satisfies never;
    }
  }

  /**
   * `resume`: a pilot's signalling connection came back; its session (offered to the same token)
   * is linked to this connection, which hears who drives again and may ask for the slot.
   */
  #resume(conn: SignalConnection, state: PilotState, sessionId: string): void {
    const robotId = state.claims.robotId;
    const presence = this.#hub.robots.get(robotId) ?? this.#hub.parked.get(robotId)?.presence;
    const record = presence?.session(sessionId);
    if (presence === undefined || record === undefined || record.jti !== state.claims.jti) {
      notAllowed(conn, `no session ${sessionId} of this token on robot ${robotId}; connect for a new one`);
      return;
    }
    if (state.sessions.size >= this.#maxSessions && !state.sessions.has(sessionId)) {
      notAllowed(conn, `this connection already holds ${state.sessions.size} sessions; leave one first`);
      return;
    }
    record.pilot = conn;
    state.sessions.add(sessionId);
    if (this.#hub.robots.get(robotId) === presence) this.#control.offered(presence, presence.driver, conn);
    else conn.send({ type: 'robot-offline', robot_id: robotId });
    this.#hub.log.debug({ robotId, sessionId }, 'pilot resumed its session on a new signalling connection');
  }

  /**
   * `relay-allocate`: the pilot's relay port for one of its sessions, the token being the offer's
   * pilot token for that session. The robot hears `relay-open` (its own token) first, so its
   * attach is under way when the pilot's first packet arrives.
   */
  async #allocateRelay(
    conn: SignalConnection,
    state: PilotState,
    sessionId: string,
    token: string,
  ): Promise<void> {
    const refuse = (code: Parameters<typeof relayRefused>[1], message: string) =>
      conn.send(relayRefused(sessionId, code, message));
    const relay = this.#hub.relay;
    const robotId = state.claims.robotId;
    const presence = this.#hub.robots.get(robotId);
    const record = presence?.session(sessionId);
    if (relay === undefined) {
      refuse('not-allowed', 'this svc-cloud node does not relay (SVC_RELAY=off)');
      return;
    }
    if (!state.sessions.has(sessionId) || presence === undefined || record === undefined) {
      refuse('not-allowed', `no session ${sessionId} of this connection is open on robot ${robotId}`);
      return;
    }
    if (presence.announcement?.relay !== true) {
      refuse(
        'not-allowed',
        `robot ${robotId} does not allow relaying (relay = false in its [agent] configuration)`,
      );
      return;
    }
    const videoChannels = presence.announcement.channels.filter((c) => c.kind === 'video').length;
    const result = await relay.allocate(token, {
      sessionId,
      robotId,
      expiresAt: (record.exp ?? state.claims.exp) * 1000,
      rate: { toPilot: relayRateToPilot(videoChannels), toRobot: RELAY_RATE_TO_ROBOT },
    });
    if (!result.ok) {
      this.#hub.log.info({ robotId, sessionId, code: result.code }, 'relay allocation refused');
      refuse(result.code, result.message);
      return;
    }
    const live = this.#hub.robots.get(robotId);
    if (conn.isClosed || live?.session(sessionId) === undefined) {
      await relay.release(sessionId, 'the session ended while its relay was opened');
      if (!conn.isClosed) refuse('gone', 'the session ended while its relay was opened');
      return;
    }
    live.connection.send({
      type: 'relay-open',
      session_id: sessionId,
      host: result.host,
      port: result.robotPort,
      token: result.robotToken,
    });
    conn.send({
      type: 'relay-allocated',
      session_id: sessionId,
      host: result.host,
      port: result.pilotPort,
      expires_in_ms: result.expiresInMs,
    });
  }

  /**
   * `renew`: a fresh pilot session token for the same robot and person keeps the session (and its
   * relay) beyond the old token's expiry. The robot gets the token over the control stream from
   * the pilot itself and checks it there; this is the cloud's side.
   */
  async #renew(conn: SignalConnection, state: PilotState, sessionId: string, token: string): Promise<void> {
    const robotId = state.claims.robotId;
    const refuse = (message: string) =>
      conn.send({ type: 'renew-refused', session_id: sessionId, message: truncate(message, 500) });
    let claims: VerifiedSessionToken;
    try {
      claims = await this.#verify(token);
    } catch (err) {
      if (!conn.isClosed)
        refuse(
          `the new token does not verify (${tokenProblem(err)}); the session ends when the old one expires`,
        );
      return;
    }
    if (conn.isClosed) return;
    const record =
      this.#hub.robots.get(robotId)?.session(sessionId) ??
      this.#hub.parked.get(robotId)?.presence.session(sessionId);
    if (!state.sessions.has(sessionId) || record === undefined) {
      refuse(`no session ${sessionId} of this connection is open on robot ${robotId}`);
      return;
    }
    const problem =
      claims.aud !== robotId
        ? `the new token is for robot ${claims.aud}, not ${robotId}`
        : claims.sub !== record.sub
          ? 'the new token is for another person'
          : this.#hub.revokedJtis.has(claims.jti) ||
              (record.jti !== undefined && this.#hub.revokedJtis.has(record.jti))
            ? 'the token or the session was revoked'
            : claims.exp * 1000 <= this.#hub.clock.wallNow()
              ? 'the new token has expired already'
              : undefined;
    if (problem !== undefined) {
      refuse(problem);
      return;
    }
    record.exp = Math.max(record.exp ?? 0, claims.exp);
    this.#hub.relay?.renew(sessionId, record.exp * 1000);
    conn.send({ type: 'renewed', session_id: sessionId, exp: record.exp });
  }

  /** `connect`: an offer for a session on the token's robot, and `session-open` to the robot. */
  #connect(conn: SignalConnection, state: PilotState, robotId: string, now: number): void {
    const { claims } = state;
    if (robotId !== claims.robotId) {
      conn.send({
        type: 'denied',
        reason: 'forbidden',
        robot_id: robotId,
        message: `this session token is for robot ${claims.robotId}, not ${robotId}; get a token for ${robotId}`,
      });
      return;
    }
    const expired = claims.exp * 1000 <= this.#hub.clock.wallNow();
    if (expired || this.#hub.revokedJtis.has(claims.jti)) {
      const why = expired ? 'it has expired' : 'it was revoked';
      conn.deny(
        'bad-token',
        `the session token is not usable: ${why}; get a new one`,
        SIGNAL_CLOSE.unauthenticated,
      );
      return;
    }
    const presence = this.#hub.robots.get(robotId);
    const announced = presence?.announcement;
    if (presence === undefined || announced === undefined) {
      conn.send({ type: 'robot-offline', robot_id: robotId });
      return;
    }
    if (state.sessions.size >= this.#maxSessions) {
      notAllowed(conn, `this connection already holds ${state.sessions.size} sessions; leave one first`);
      return;
    }
    const sessionId = this.#newSessionId();
    const driverBefore = presence.driver;
    const record = presence.offer(sessionId, claims.scope, claims, conn, now);
    state.sessions.add(sessionId);
    presence.connection.send({
      type: 'session-open',
      session_id: sessionId,
      role: record.role,
      sub: claims.sub,
      scope: claims.scope,
      jti: claims.jti,
      exp: claims.exp,
    });
    const relay = announced.relay ? this.#hub.relay : undefined;
    const grant = relay?.grant(sessionId, robotId, claims.exp * 1000);
    conn.send({
      type: 'offer',
      session_id: sessionId,
      robot_id: robotId,
      role: record.role,
      candidates: [...announced.candidates],
      cert_hashes: [...announced.certHashes],
      channels: [...announced.channels],
      relay: grant !== undefined,
      ...(grant === undefined
        ? {}
        : { relay_grant: { host: grant.host, token: grant.token, expires_in_ms: grant.expiresInMs } }),
      ...this.#hub.rtc.offerFields(announced, sessionId),
    });
    this.#control.offered(presence, driverBefore, conn);
    this.#hub.log.debug({ robotId, sessionId, role: record.role }, 'session offered');
  }
}

/**
 * Bytes a second a relayed session may carry from the robot: every video channel at the highest
 * profile's ceiling, twice over (parity, QUIC and a keyframe's burst), plus room for sensors.
 */
export function relayRateToPilot(videoChannels: number): number {
  const ceilingKbps = Math.max(...Object.values(QOS_PROFILES).map((p) => p.ceilingKbps));
  return Math.max(1, videoChannels) * ceilingKbps * 125 * 2 + 256 * 1024;
}

/** Bytes a second a relayed session may carry from the pilot: acknowledgements, control and commands. */
export const RELAY_RATE_TO_ROBOT = 256 * 1024;

function relayRefused(
  sessionId: string,
  code: Extract<import('@svc/wire').SignalServerMessage, { type: 'relay-refused' }>['code'],
  message: string,
) {
  return { type: 'relay-refused', session_id: sessionId, code, message: truncate(message, 500) } as const;
}

/** Why a token was refused, safe to show: a coded error's code and message, else a generic word. */
function tokenProblem(err: unknown): string {
  if (err instanceof Error && typeof (err as { code?: unknown }).code === 'string') {
    return truncate(`${(err as Error & { code: string }).code}: ${err.message}`, 200);
  }
  return 'signature, issuer or expiry';
}
