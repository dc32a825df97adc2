import type { TimerHandle, TransitionTable } from '@svc/runtime';
import type { Link } from './link.js';
import type { RobotAddress } from './options.js';
import type { PilotRefusalCode } from './refusal.js';
import type { Session } from './session.js';
import type { SignalSession } from './signal-session.js';

/**
 * Where a {@link PilotConnection} is, as pages see it: `idle` until `connect()`, `connecting` on
 * the first attempt, `connected` from the robot's `welcome` with every decoder started,
 * `reconnecting` from a drop until the next `welcome`, and the two ends: `closed` (by the page, or
 * a drop with reconnection off) and `denied` (the token, the service or the robot refused: retrying
 * cannot help; `PilotConnection.refusal` says which, with a stable code).
 */
export type PilotConnectionState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'denied' | 'closed';

/** One attempt to reach the robot; the identity that tells a current event from a late one. */
export interface Attempt {
  /** 1 for the first attempt since `connect()`. */
  readonly number: number;
  /**
   * The signalling session that made this attempt's offer, kept open for the session's life
   * (driver news and handover); closed when the attempt ends.
   */
  signalling?: SignalSession;
}

/**
 * The connection's life cycle, each variant holding only what is valid in it. One attempt goes
 * `offering` (token and address) → `dialing` (the candidate race) → `handshaking` (`hello` sent,
 * datagrams held until `welcome`) → `starting` (`welcome` handled, decoders checking their codec)
 * → `connected`. A drop leads to `reconnecting` (a timer to the next attempt) or, with
 * reconnection off, to `closed`.
 */
export type ConnectionState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'offering'; readonly attempt: Attempt }
  | {
      readonly kind: 'dialing';
      readonly attempt: Attempt;
      readonly address: RobotAddress;
      /** Aborts the candidate race (every candidate still trying is closed). */
      readonly race: AbortController;
    }
  | {
      readonly kind: 'handshaking';
      readonly attempt: Attempt;
      readonly link: Link;
      /** Datagrams that came before `welcome` (the robot's replay follows it closely). */
      readonly early: Uint8Array[];
    }
  | { readonly kind: 'starting'; readonly attempt: Attempt; readonly link: Link; readonly session: Session }
  | {
      readonly kind: 'connected';
      readonly attempt: Attempt;
      readonly link: Link;
      readonly session: Session;
      /** Clock time of the transition, to tell a session that held from one that did not. */
      readonly sinceMs: number;
    }
  | {
      readonly kind: 'reconnecting';
      /** The number the next attempt will have. */
      readonly nextAttempt: number;
      readonly delayMs: number;
      /** Why the last attempt or session ended. */
      readonly reason: string;
      readonly timer: TimerHandle;
    }
  | { readonly kind: 'closed'; readonly reason: string }
  | {
      readonly kind: 'denied';
      /** What happened and what to do. */
      readonly reason: string;
      /** Which refusal: pages map it to their words. */
      readonly code: PilotRefusalCode;
    };

/** The names of {@link ConnectionState}'s variants. */
export type ConnectionStateKind = ConnectionState['kind'];

/**
 * The connection's life cycle, the one table of its moves: where each state may go. `closed` and
 * `denied` are final; a step of an attempt may always fail into `reconnecting`, `closed` or
 * (where the robot or the token can refuse) `denied`.
 */
export const CONNECTION_MOVES: TransitionTable<ConnectionStateKind> = {
  idle: ['offering', 'closed'],
  offering: ['dialing', 'reconnecting', 'closed', 'denied'],
  // Nothing refuses during the race: a refusal comes with the offer or on the control stream.
  dialing: ['handshaking', 'reconnecting', 'closed'],
  handshaking: ['starting', 'reconnecting', 'closed', 'denied'],
  // A session that moves from the relay to a direct path stays where it is, on another link.
  starting: ['starting', 'connected', 'reconnecting', 'closed', 'denied'],
  connected: ['connected', 'reconnecting', 'closed', 'denied'],
  reconnecting: ['offering', 'closed'],
  closed: [],
  denied: [],
};

/** The name pages see for a state. */
export function publicState(state: ConnectionState): PilotConnectionState {
  switch (state.kind) {
    case 'idle':
    case 'connected':
    case 'reconnecting':
    case 'closed':
    case 'denied':
      return state.kind;
    case 'offering':
    case 'dialing':
    case 'handshaking':
    case 'starting':
      return state.attempt.number === 1 ? 'connecting' : 'reconnecting';
    default:
      return state satisfies never;
  }
}

/** The attempt a state belongs to, if it belongs to one. */
export function attemptOf(state: ConnectionState): Attempt | undefined {
  // Structural: every variant that holds one names it `attempt`.
  return 'attempt' in state ? state.attempt : undefined;
}

/** The transport link a state holds, if any. */
export function linkOf(state: ConnectionState): Link | undefined {
  // Structural: every variant that holds one names it `link`.
  return 'link' in state ? state.link : undefined;
}

/** The session (channels, players, timers) a state holds, if any. */
export function sessionOf(state: ConnectionState): Session | undefined {
  // Structural: every variant that holds one names it `session`.
  return 'session' in state ? state.session : undefined;
}
