import { createHmac } from 'node:crypto';
import type { SignalClientMessage, SignalServerMessage } from '@svc/wire';
import { type PilotState, type SignalConnection, truncate } from './connection.js';
import { notAllowed, type SignallingHub } from './hub.js';
import type { Announcement, RobotPresence, SessionRecord } from './presence.js';

/**
 * STUN and TURN servers svc-cloud hands the two sides of a WebRTC session. TURN credentials are
 * minted per session and party in the TURN REST API's form, which coturn checks with its
 * `use-auth-secret` and `static-auth-secret`: the user name is `<expiry>:<who>`, the password the
 * base64 HMAC-SHA1 of the user name under the shared secret. No static password reaches a browser.
 */
export interface IceConfig {
  /** `stun:host:port` URLs. */
  readonly stunUrls: readonly string[];
  readonly turn?: {
    /** `turn:host:port?transport=udp|tcp` and `turns:host:443` URLs of one TURN service. */
    readonly urls: readonly string[];
    /** coturn's `static-auth-secret`. */
    readonly secret: string;
    /** How long minted credentials stay good, s. */
    readonly ttlSeconds: number;
  };
}

type IceServer = { url: string; username?: string; credential?: string };

/** The STUN and TURN servers for one party of one session, TURN credentials minted for it. */
export function iceServersFor(
  config: IceConfig,
  sessionId: string,
  party: 'pilot' | 'robot',
  nowSeconds: number,
): IceServer[] {
  const servers: IceServer[] = config.stunUrls.map((url) => ({ url }));
  const turn = config.turn;
  if (turn !== undefined) {
    const username = `${Math.floor(nowSeconds) + turn.ttlSeconds}:${party}.${sessionId}`;
    const credential = createHmac('sha1', turn.secret).update(username).digest('base64');
    for (const url of turn.urls) servers.push({ url, username, credential });
  }
  return servers;
}

/** SDP offers a pilot may send for one session (a retry after an ICE failure, not a flood). */
const MAX_OFFERS = 4;
/** Candidates each side may trickle for one session. */
const MAX_CANDIDATES = 64;

interface Counts {
  offers: number;
  fromPilot: number;
  fromRobot: number;
}

/**
 * Signalling of WebRTC sessions (`docs/protocol/webrtc.md`): a pilot's SDP offer for one of its
 * sessions goes to the robot with the robot's STUN and TURN servers; the robot's answer and each
 * side's candidates go to the other. Only the session's own pilot connection and robot take part,
 * only for a robot that announced the `webrtc` backend, and each session gets a bounded number of
 * offers and candidates.
 */
export class RtcSignalling {
  readonly #hub: Pick<SignallingHub, 'log' | 'clock' | 'robots'>;
  readonly #ice: IceConfig;
  readonly #counts = new WeakMap<SessionRecord, Counts>();

  constructor(hub: Pick<SignallingHub, 'log' | 'clock' | 'robots'>, ice: IceConfig) {
    this.#hub = hub;
    this.#ice = ice;
  }

  /** What an `offer` adds for a robot that serves WebRTC: its backends and the pilot's servers. */
  offerFields(
    announcement: Announcement,
    sessionId: string,
  ): Pick<Extract<SignalServerMessage, { type: 'offer' }>, 'backends' | 'ice_servers'> {
    if (!announcement.backends.includes('webrtc')) return {};
    return {
      backends: [...announcement.backends],
      ice_servers: iceServersFor(this.#ice, sessionId, 'pilot', this.#hub.clock.wallNow() / 1000),
    };
  }

  /** `rtc-offer` or `rtc-candidate` from a pilot. */
  fromPilot(
    conn: SignalConnection,
    state: PilotState,
    message: Extract<SignalClientMessage, { type: 'rtc-offer' | 'rtc-candidate' }>,
  ): void {
    const sessionId = message.session_id;
    const robotId = state.claims.robotId;
    const presence = this.#hub.robots.get(robotId);
    const record = presence?.session(sessionId);
    const refuse = (code: 'not-allowed' | 'gone', why: string) =>
      conn.send({ type: 'rtc-refused', session_id: sessionId, code, message: truncate(why, 500) });
    if (!state.sessions.has(sessionId) || record === undefined || presence === undefined) {
      refuse('gone', `no session ${sessionId} of this connection is open on robot ${robotId}`);
      return;
    }
    if (presence.announcement?.backends.includes('webrtc') !== true) {
      refuse('not-allowed', `robot ${robotId} does not serve sessions on WebRTC; connect with WebTransport`);
      return;
    }
    const counts = this.#countsOf(record);
    if (message.type === 'rtc-offer') {
      if (++counts.offers > MAX_OFFERS) {
        refuse(
          'not-allowed',
          `more than ${MAX_OFFERS} WebRTC offers for session ${sessionId}; start a new session`,
        );
        return;
      }
      presence.connection.send({
        type: 'rtc-session',
        session_id: sessionId,
        sdp: message.sdp,
        ice_servers: iceServersFor(this.#ice, sessionId, 'robot', this.#hub.clock.wallNow() / 1000),
      });
      return;
    }
    if (++counts.fromPilot > MAX_CANDIDATES) {
      if (counts.fromPilot === MAX_CANDIDATES + 1)
        notAllowed(
          conn,
          `more than ${MAX_CANDIDATES} ICE candidates for session ${sessionId}; the rest are dropped`,
        );
      return;
    }
    presence.connection.send(message);
  }

  /** `rtc-answer`, `rtc-candidate` or `rtc-failed` from a robot. */
  fromRobot(
    conn: SignalConnection,
    presence: RobotPresence,
    message: Extract<SignalClientMessage, { type: 'rtc-answer' | 'rtc-candidate' | 'rtc-failed' }>,
  ): void {
    const record = presence.session(message.session_id);
    if (record === undefined) {
      notAllowed(conn, `no session ${message.session_id} is open on this robot`);
      return;
    }
    const pilot = record.pilot;
    if (pilot === undefined) return; // The pilot's signalling is gone; its session ends with it.
    switch (message.type) {
      case 'rtc-answer':
        pilot.send(message);
        return;
      case 'rtc-candidate': {
        const counts = this.#countsOf(record);
        if (++counts.fromRobot > MAX_CANDIDATES) return;
        pilot.send(message);
        return;
      }
      case 'rtc-failed':
        this.#hub.log.info(
          { robotId: presence.robotId, sessionId: message.session_id },
          'robot refused a WebRTC offer',
        );
        pilot.send({
          type: 'rtc-refused',
          session_id: message.session_id,
          code: 'robot-failed',
          message: truncate(`the robot could not answer: ${message.message}`, 500),
        });
        return;
      default:
        message satisfies never;
    }
  }

  #countsOf(record: SessionRecord): Counts {
    let counts = this.#counts.get(record);
    if (counts === undefined) {
      counts = { offers: 0, fromPilot: 0, fromRobot: 0 };
      this.#counts.set(record, counts);
    }
    return counts;
  }
}
