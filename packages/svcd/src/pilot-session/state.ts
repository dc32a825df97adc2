/**
 * The life cycle of a pilot session on the robot as one discriminated union: each variant carries
 * only what is valid in it (the admitted session and its subscriptions while active, the close
 * timer while closing).
 */
import type { TimerHandle, TransitionTable } from '@svc/runtime';
import type { CommandInbox, CommandWatchdog } from '../command-channel.js';
import type { AcceptedGrant, OpenSession } from '../session-registry.js';
import type { Liveness } from './liveness.js';
import type { VideoSend } from './video-send.js';

/**
 * Where a pilot session is.
 *
 * - `awaiting-hello`: the transport session is open, the pilot has not said `hello`;
 * - `authorizing`: `hello` arrived, its token is being checked;
 * - `active`: welcomed: media, sensors and commands flow, `agent-stats` once a second;
 * - `closing`: the robot ended it (`denied`; `bye` on revocation or to a pilot silent too long; the
 *   pilot's own `bye`) and waits out the grace that lets the pilot read why (none when nobody
 *   would read it); media, commands and the heartbeat have stopped, the registry entry has ended;
 * - `closed`: the transport session ended;
 * - `moved`: this transport was a new path for another open session (`hello {move: true}`), which
 *   took it over; this object has nothing more to do.
 */
export type PilotSessionState =
  | { readonly kind: 'awaiting-hello' }
  | { readonly kind: 'authorizing' }
  | {
      readonly kind: 'active';
      /** The session as the registry admitted it (role, id); replaced when svc-cloud moves the slot. */
      open: OpenSession;
      /** The token's claims. */
      readonly grant: AcceptedGrant;
      readonly video: VideoSend;
      /** This session's command reassembly, by command channel id (each follows the role). */
      readonly inboxes: ReadonlyMap<number, CommandInbox>;
      /** Undoes every subscription (video, sensors, rate controllers). */
      readonly unsubscribe: (() => void)[];
      readonly statsTimer: TimerHandle;
      /** The heartbeat the robot sends, and when the pilot was last heard. */
      readonly liveness: Liveness;
      /**
       * Reports a driver that sends no commands (only a driver, on a robot with command channels);
       * started or stopped when the role changes.
       */
      watchdog: CommandWatchdog | undefined;
    }
  | {
      readonly kind: 'closing';
      /** The admitted session, when the robot ended one it had welcomed. */
      readonly open: OpenSession | undefined;
      /** Why the robot ended it (the registry's `ended` reason). */
      readonly reason: string;
      /** Closes the transport session when the grace is over (none without a grace). */
      readonly closeTimer: TimerHandle | undefined;
    }
  | { readonly kind: 'closed'; readonly reason: string }
  | { readonly kind: 'moved'; readonly sessionId: string };

/**
 * The life cycle's moves: where each state may go. `closing` follows a refusal (`denied`), a
 * revocation, a silent pilot or the pilot's `bye`; every state but `closed` ends when the
 * transport session closes.
 */
export const PILOT_SESSION_MOVES: TransitionTable<PilotSessionState['kind']> = {
  'awaiting-hello': ['authorizing', 'closing', 'closed'],
  authorizing: ['active', 'moved', 'closing', 'closed'],
  active: ['closing', 'closed'],
  closing: ['closed'],
  closed: [],
  moved: [],
};
