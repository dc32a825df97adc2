/**
 * Whether a welcomed pilot is still there: the robot's heartbeat period, the silence after which
 * the pilot is gone, and the verdict taken at each heartbeat tick (`docs/safety.md`).
 */
import type { TimerHandle } from '@svc/runtime';

/**
 * How often the robot sends `heartbeat` to a welcomed session (announced in `welcome.heartbeat_ms`).
 * 300 ms leaves two echoes inside {@link PILOT_SILENCE_MS}. At 200 ms a video channel on a link
 * capped below its rate, with a publisher that ignores every request, delivered measurably fewer
 * frames (the `abr` test's deaf-publisher case: 17 against more than 20 painted in 8 s); the
 * cause is not understood yet (ADR 0018).
 */
export const HEARTBEAT_MS = 300;
/** A welcomed session the pilot has been silent in for longer than this is ended. */
export const PILOT_SILENCE_MS = 600;

/** The liveness watch of an active session (mutable: it changes with every heartbeat). */
export interface Liveness {
  readonly timer: TimerHandle;
  /** The next heartbeat's `seq`. */
  seq: number;
  /** Session clock when the pilot was last heard: any control line or datagram. */
  lastHeardMs: number;
  /** Session clock of the last heartbeat tick, to tell a stalled process from a silent pilot. */
  lastTickMs: number;
  /** Whether the last tick came late (more than two periods after the one before). */
  lastTickLate: boolean;
}

/**
 * The verdict of one heartbeat tick at `nowMs`: how long the pilot has been silent when that is
 * over `silenceMs` (it is gone), else `undefined`. One late tick (more than two periods after
 * the last: the process stalled) gives no verdict, since the pilot's lines may be waiting to be
 * read; late ticks in a row (a process that stays overloaded) decide all the same.
 */
export function silentFor(
  liveness: Liveness,
  nowMs: number,
  heartbeatMs: number,
  silenceMs: number,
): number | undefined {
  const late = nowMs - liveness.lastTickMs > 2 * heartbeatMs;
  const wait = late && !liveness.lastTickLate;
  liveness.lastTickMs = nowMs;
  liveness.lastTickLate = late;
  const silentMs = nowMs - liveness.lastHeardMs;
  return !wait && silentMs > silenceMs ? silentMs : undefined;
}
