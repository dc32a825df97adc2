/**
 * The daemon's clock for chunk sender timestamps and `pong.robot_time`: wall-clock milliseconds
 * with sub-millisecond resolution (`performance.timeOrigin + performance.now()`). Monotonic within
 * a run; on one machine it is the same clock a browser reads the same way, so loopback
 * measurements need no offset estimate.
 */
export function daemonClockMs(): number {
  return performance.timeOrigin + performance.now();
}
