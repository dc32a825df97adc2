import type { Clock, Logger } from '@svc/runtime';
import type { RelayServer } from '../relay/index.js';
import type { LastSeenWriter } from './batching.js';
import { type SignalConnection, truncate } from './connection.js';
import type { RobotPresence } from './presence.js';
import type { RtcSignalling } from './rtc.js';

/** What the signalling server and its robot and pilot handlers share. */
export interface SignallingHub {
  readonly log: Logger;
  /** Deadlines on `now()`, token expiry and `last_seen_at` on `wallNow()`. */
  readonly clock: Clock;
  /** Heartbeat period told to clients in `auth-ok`, ms. */
  readonly heartbeatMs: number;
  /** The robots online on this node, by id. */
  readonly robots: Map<string, RobotPresence>;
  /**
   * Robots that lost their connection with sessions open, by id, with when (monotonic ms): their
   * sessions (and which pilot holds each) are taken back when the robot returns, for a while.
   */
  readonly parked: Map<string, { readonly presence: RobotPresence; readonly since: number }>;
  /** Revoked token ids and their expiry (seconds since the epoch): refused until then. */
  readonly revokedJtis: Map<string, number>;
  readonly lastSeen: LastSeenWriter;
  /** This node's relay of last resort; `undefined` when relaying is off here. */
  readonly relay: RelayServer | undefined;
  /** Signalling of WebRTC sessions: offers, answers, candidates, and the STUN and TURN servers. */
  readonly rtc: RtcSignalling;
  /** Told after each change of a robot's presence (the API's live fleet view listens). */
  readonly presenceChanged: (presence: RobotPresence) => void;
}

/** Answers a heartbeat, echoing its `t`. */
export function heartbeatAck(conn: SignalConnection, t: number | undefined): void {
  conn.sendRaw(
    t === undefined ? '{"type":"heartbeat-ack"}' : `{"type":"heartbeat-ack","t":${JSON.stringify(t)}}`,
  );
}

/** Answers a message the connection's role may not send (`error` `not-allowed`; the connection stays). */
export function notAllowed(conn: SignalConnection, why: string): void {
  conn.send({ type: 'error', code: 'not-allowed', message: truncate(why, 500) });
}
