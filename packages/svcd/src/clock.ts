import { type Clock, systemClock } from '@svc/runtime';

/** The environment variable of {@link testClockOffsetFromEnv}. */
export const TEST_CLOCK_OFFSET_ENV = 'SVC_TEST_CLOCK_OFFSET_MS';

/** Added to every reading of {@link daemonClockMs}: 0 unless a test set it. */
let testOffsetMs = 0;

/**
 * The daemon's clock for chunk sender timestamps, capture clocks and `pong.robot_time`:
 * wall-clock milliseconds with sub-millisecond resolution (`performance.timeOrigin +
 * performance.now()`), plus the test-only offset ({@link setTestClockOffsetMs}). Monotonic within
 * a run; on one machine it is the same clock a browser reads the same way, so loopback
 * measurements need no offset estimate (the pilot still measures one).
 */
export function daemonClockMs(): number {
  return performance.timeOrigin + performance.now() + testOffsetMs;
}

/**
 * The process's time and timers with {@link daemonClockMs} as `now()`: what a pilot session runs
 * on (its timestamps are the pilot's clock reference).
 */
export const daemonClock: Clock = Object.freeze({ ...systemClock, now: daemonClockMs });

/**
 * Shifts {@link daemonClockMs} by `offsetMs` for the rest of the process: a robot whose clock is
 * that far off the browser's, for tests and benchmarks of the clock-offset estimate. Never for
 * production.
 *
 * @throws {TypeError} when `offsetMs` is not an integer.
 */
export function setTestClockOffsetMs(offsetMs: number): void {
  if (!Number.isSafeInteger(offsetMs)) {
    throw new TypeError(`the test clock offset must be an integer number of ms, got ${offsetMs}`);
  }
  testOffsetMs = offsetMs;
}

/** What {@link testClockOffsetFromEnv} found. */
export type TestClockOffset =
  | { readonly ok: true; readonly offsetMs: number | undefined }
  | { readonly ok: false; readonly message: string };

/**
 * Reads `SVC_TEST_CLOCK_OFFSET_MS` (an integer number of ms, may be negative): `offsetMs` is
 * `undefined` when it is unset or empty; anything else that is not an integer is refused with a
 * message that names the variable, the value and what is expected.
 */
export function testClockOffsetFromEnv(env: Readonly<Record<string, string | undefined>>): TestClockOffset {
  const raw = env[TEST_CLOCK_OFFSET_ENV];
  if (raw === undefined || raw.trim() === '') return { ok: true, offsetMs: undefined };
  const value = raw.trim();
  const offsetMs = Number(value);
  if (!/^[+-]?\d+$/.test(value) || !Number.isSafeInteger(offsetMs)) {
    return {
      ok: false,
      message: `${TEST_CLOCK_OFFSET_ENV} = ${JSON.stringify(raw)}: expected an integer number of milliseconds such as 250 or -250 (a test-only shift of the robot's clock); unset it to run normally`,
    };
  }
  return { ok: true, offsetMs };
}
