import { type Clock, systemClock } from '@svc/runtime';

/**
 * The daemon's clock for chunk sender timestamps and `pong.robot_time`: wall-clock milliseconds
 * with sub-millisecond resolution (`performance.timeOrigin + performance.now()`). Monotonic within
 * a run; on one machine it is the same clock a browser reads the same way, so loopback
 * measurements need no offset estimate.
 */
export function daemonClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The process's time and timers with {@link daemonClockMs} as `now()`: what a pilot session runs
 * on (its timestamps are the pilot's clock reference).
 */
export const daemonClock: Clock = Object.freeze({ ...systemClock, now: daemonClockMs });
