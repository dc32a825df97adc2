/**
 * Time as an injected dependency of the RTSP client and source, and the pure arithmetic of
 * their timers (keep-alive period, reconnection backoff), so tests run them without sleeping.
 */

/** A `setTimeout`-like timer service. Handles are opaque. */
export interface Scheduler {
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process's own timers. */
export const systemScheduler: Scheduler = Object.freeze({
  setTimeout: (callback: () => void, delayMs: number): unknown => setTimeout(callback, delayMs),
  clearTimeout: (handle: unknown): void => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/** Session timeout assumed when the server names none (RFC 2326 §12.37). */
export const DEFAULT_SESSION_TIMEOUT_S = 60;

/** Keep-alives are never sent more often than this, whatever the server claims. */
const MIN_KEEP_ALIVE_MS = 1000;

/** Longest session timeout honoured (a day); beyond it timers would overflow. */
const MAX_SESSION_TIMEOUT_S = 86_400;

/**
 * How long to wait between keep-alives for a session that times out after `timeoutS` seconds:
 * half the timeout, so one lost or slow keep-alive does not end the session. At least 1 s.
 */
export function keepAliveIntervalMs(timeoutS: number): number {
  const seconds =
    Number.isFinite(timeoutS) && timeoutS > 0
      ? Math.min(timeoutS, MAX_SESSION_TIMEOUT_S)
      : DEFAULT_SESSION_TIMEOUT_S;
  return Math.max(MIN_KEEP_ALIVE_MS, Math.floor((seconds * 1000) / 2));
}

/** Parameters of {@link backoffDelayMs}. */
export interface BackoffPolicy {
  /** Ceiling of the first retry. */
  readonly baseMs: number;
  /** No ceiling grows beyond this. */
  readonly capMs: number;
}

/** Reconnection backoff of `RtspSource`: 500 ms doubling up to 30 s. */
export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 500, capMs: 30_000 });

/**
 * Delay before retry number `attempt` (0 for the first): "full jitter", a uniform draw in
 * `[0, min(cap, base * 2^attempt))`, so many robots that lost the same camera do not reconnect
 * in lockstep.
 *
 * @param random - A uniform draw in `[0, 1)`, like `Math.random`.
 */
export function backoffDelayMs(
  attempt: number,
  random: () => number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
): number {
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), 40);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  const draw = Math.min(Math.max(random(), 0), 1);
  return Math.min(Math.floor(draw * ceiling), Math.max(0, ceiling - 1));
}
