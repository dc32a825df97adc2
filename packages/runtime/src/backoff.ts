import { type Clock, delay, systemClock } from './clock.js';

/** Parameters of {@link backoffDelayMs}. */
export interface BackoffPolicy {
  /** Ceiling of the first retry's delay. */
  readonly baseMs: number;
  /** No ceiling grows beyond this. */
  readonly capMs: number;
}

/** Reconnection policy of the daemon and the pilot: 500 ms doubling up to 30 s. */
export const RECONNECT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 500, capMs: 30_000 });

/**
 * Delay before retry number `attempt` (0 for the first): "full jitter", a uniform draw in
 * `[0, min(cap, base * 2^attempt))`, so many clients that lost the same server do not come back
 * in lockstep.
 *
 * @param random - A uniform draw in `[0, 1)`, like `Math.random`.
 * @throws {TypeError} when the policy's numbers are not positive and finite, or cap < base.
 */
export function backoffDelayMs(attempt: number, random: () => number, policy: BackoffPolicy): number {
  checkPolicy(policy);
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), 40);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  const draw = Math.min(Math.max(random(), 0), 1);
  return Math.min(Math.floor(draw * ceiling), Math.max(0, ceiling - 1));
}

function checkPolicy(policy: BackoffPolicy): void {
  const { baseMs, capMs } = policy;
  if (!(Number.isFinite(baseMs) && baseMs > 0 && Number.isFinite(capMs) && capMs >= baseMs)) {
    throw new TypeError(`backoff needs 0 < baseMs <= capMs, finite; got baseMs ${baseMs}, capMs ${capMs}`);
  }
}

/**
 * The attempt counter of a reconnecting client: {@link Backoff.next} gives the next delay and
 * counts the attempt, {@link Backoff.reset} starts over after a connection that held.
 */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #random: () => number;
  #attempt = 0;

  constructor(policy: BackoffPolicy = RECONNECT_BACKOFF, random: () => number = Math.random) {
    checkPolicy(policy);
    this.#policy = policy;
    this.#random = random;
  }

  /** Retries counted since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The delay before the next attempt; counts it. */
  next(): number {
    return backoffDelayMs(this.#attempt++, this.#random, this.#policy);
  }

  /** Starts over from the first delay. */
  reset(): void {
    this.#attempt = 0;
  }
}

/** Options of {@link retry}. */
export interface RetryOptions {
  /** Delays between attempts. Default {@link RECONNECT_BACKOFF}. */
  readonly policy?: BackoffPolicy;
  /** Attempts in all, the first included. Default 3. */
  readonly attempts?: number;
  /** Whether a failure is worth another attempt (default: every failure is). */
  readonly retryable?: (error: unknown) => boolean;
  /** Called before each wait, e.g. to log it. */
  readonly onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** Stops waiting and rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  readonly clock?: Clock;
  readonly random?: () => number;
}

/**
 * Calls `operation` until it resolves, at most `attempts` times, waiting a full-jitter backoff
 * between attempts. Rejects with the last error when attempts run out or the error is not
 * retryable, and with the signal's reason when aborted.
 *
 * @throws {TypeError} when `attempts` is not a whole number of at least 1.
 */
export async function retry<T>(
  operation: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 3;
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new TypeError(`retry needs attempts >= 1, got ${attempts}`);
  }
  const backoff = new Backoff(options.policy, options.random);
  const clock = options.clock ?? systemClock;
  for (let attempt = 0; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await operation(attempt);
    } catch (error) {
      if (attempt + 1 >= attempts || options.retryable?.(error) === false) throw error;
      const waitMs = backoff.next();
      options.onRetry?.(error, attempt, waitMs);
      await delay(clock, waitMs, options.signal);
    }
  }
}
