import { describe, expect, it } from 'vitest';
import { Backoff, type BackoffPolicy, backoffDelayMs, RECONNECT_BACKOFF, retry } from '../src/index.js';
import { FakeClock, flushMicrotasks } from '../src/testing/index.js';

/** A seeded uniform draw in `[0, 1)` (xorshift32), so a spread can be checked without flakiness. */
function xorshift(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 2 ** 32;
  };
}

/** The value below which `fraction` of the sorted `values` lie. */
function quantile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

const policy: BackoffPolicy = { baseMs: 100, capMs: 3_000 };
const almostOne = () => 1 - 2 ** -40;

describe('backoffDelayMs', () => {
  it('keeps every delay in [0, min(cap, base * 2^attempt))', () => {
    const random = xorshift(7);
    const outside: string[] = [];
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** attempt);
      for (let draw = 0; draw < 500; draw++) {
        const delayMs = backoffDelayMs(attempt, random, policy);
        if (!(Number.isInteger(delayMs) && delayMs >= 0 && delayMs < ceiling)) {
          outside.push(`attempt ${attempt}: ${delayMs}`);
        }
      }
    }
    expect(outside).toEqual([]);
  });

  it('keeps the first retry below the base, and takes the extremes of the draw at their ends', () => {
    expect(backoffDelayMs(0, almostOne, policy)).toBe(99);
    expect(backoffDelayMs(0, () => 0, policy)).toBe(0);
    // A draw outside [0, 1) (a broken random source) still lands inside the range.
    expect(backoffDelayMs(0, () => 1, policy)).toBe(99);
    expect(backoffDelayMs(0, () => 7, policy)).toBe(99);
    expect(backoffDelayMs(0, () => -3, policy)).toBe(0);
  });

  it('doubles the ceiling per attempt, reaches the cap and stays there', () => {
    const ceilings = Array.from(
      { length: 10 },
      (_, attempt) => backoffDelayMs(attempt, almostOne, policy) + 1,
    );
    expect(ceilings).toEqual([100, 200, 400, 800, 1_600, 3_000, 3_000, 3_000, 3_000, 3_000]);
    // Far past the point where base * 2^attempt stops being a finite number.
    expect(backoffDelayMs(5_000, almostOne, policy)).toBe(2_999);
    expect(backoffDelayMs(Number.MAX_SAFE_INTEGER, almostOne, policy)).toBe(2_999);
  });

  it('reads a negative or fractional attempt as the whole attempt below it, at least 0', () => {
    expect(backoffDelayMs(-4, almostOne, policy)).toBe(99);
    expect(backoffDelayMs(1.9, almostOne, policy)).toBe(199);
  });

  it('spreads the delays of many draws evenly over the range (full jitter)', () => {
    const random = xorshift(2026);
    const ceiling = 1_600;
    const delays = Array.from({ length: 8_000 }, () => backoffDelayMs(4, random, policy)).sort(
      (a, b) => a - b,
    );
    // Quartiles of a uniform draw in [0, 1600): 400, 800, 1200, each within 3 % of the range.
    expect(quantile(delays, 0.25)).toBeGreaterThan(ceiling * 0.22);
    expect(quantile(delays, 0.25)).toBeLessThan(ceiling * 0.28);
    expect(quantile(delays, 0.5)).toBeGreaterThan(ceiling * 0.47);
    expect(quantile(delays, 0.5)).toBeLessThan(ceiling * 0.53);
    expect(quantile(delays, 0.75)).toBeGreaterThan(ceiling * 0.72);
    expect(quantile(delays, 0.75)).toBeLessThan(ceiling * 0.78);
    // Both ends of the range are reached: no floor, no lockstep.
    expect(delays[0]).toBeLessThan(ceiling * 0.01);
    expect(delays.at(-1)).toBeGreaterThan(ceiling * 0.99);
    expect(new Set(delays).size).toBeGreaterThan(1_000);
  });

  it.each([
    ['a zero base', { baseMs: 0, capMs: 100 }],
    ['a negative base', { baseMs: -1, capMs: 100 }],
    ['a base that is not a number', { baseMs: Number.NaN, capMs: 100 }],
    ['an infinite cap', { baseMs: 100, capMs: Number.POSITIVE_INFINITY }],
    ['a cap below the base', { baseMs: 100, capMs: 99 }],
  ])('refuses %s with a TypeError', (_, bad) => {
    expect(() => backoffDelayMs(0, Math.random, bad)).toThrow(TypeError);
    expect(() => new Backoff(bad)).toThrow(TypeError);
    expect(() => new Backoff(bad)).toThrow(/baseMs/);
  });

  it('accepts a cap equal to the base (a constant ceiling)', () => {
    expect(backoffDelayMs(9, almostOne, { baseMs: 250, capMs: 250 })).toBe(249);
  });
});

describe('Backoff', () => {
  it('counts attempts, grows the ceiling, and starts over after reset', () => {
    const backoff = new Backoff(policy, almostOne);
    expect(backoff.attempt).toBe(0);
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([99, 199, 399]);
    expect(backoff.attempt).toBe(3);
    backoff.reset();
    expect(backoff.attempt).toBe(0);
    expect(backoff.next()).toBe(99);
    expect(backoff.attempt).toBe(1);
  });

  it('reconnects from 500 ms up to 30 s by default', () => {
    expect(RECONNECT_BACKOFF).toEqual({ baseMs: 500, capMs: 30_000 });
    expect(Object.isFrozen(RECONNECT_BACKOFF)).toBe(true);
    const backoff = new Backoff(undefined, almostOne);
    const delays = Array.from({ length: 10 }, () => backoff.next());
    expect(delays[0]).toBe(499);
    expect(delays.at(-1)).toBe(29_999);
    expect(Math.max(...delays)).toBeLessThan(30_000);
  });
});

/** An operation that fails `failures` times, then resolves with `'done'`. */
function flaky(failures: number): { operation: (attempt: number) => Promise<string>; calls: number[] } {
  const calls: number[] = [];
  return {
    calls,
    operation: async (attempt) => {
      calls.push(attempt);
      if (calls.length <= failures) throw new Error(`failure ${calls.length}`);
      return 'done';
    },
  };
}

/** The promise's outcome, without leaving a rejection unhandled while fake time moves. */
function settle<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

describe('retry', () => {
  it('succeeds after failures, waiting exactly the delays it announced through onRetry', async () => {
    const clock = new FakeClock();
    const { operation, calls } = flaky(2);
    const announced: { message: string; attempt: number; delayMs: number }[] = [];
    const outcome = settle(
      retry(operation, {
        clock,
        policy,
        attempts: 5,
        random: xorshift(11),
        onRetry: (error, attempt, delayMs) =>
          announced.push({ message: (error as Error).message, attempt, delayMs }),
      }),
    );
    await flushMicrotasks();
    expect(calls).toEqual([0]);
    expect(announced).toHaveLength(1);

    for (const [index, expectedCalls] of [
      [0, [0, 1]],
      [1, [0, 1, 2]],
    ] as const) {
      const { delayMs } = announced[index]!;
      expect(clock.pendingTimers).toBe(1);
      // Not a millisecond early ...
      if (delayMs > 0) {
        await clock.advanceAsync(delayMs - 1);
        expect(calls).toHaveLength(index + 1);
      }
      // ... and at the announced time.
      await clock.advanceAsync(delayMs > 0 ? 1 : 0);
      expect(calls).toEqual(expectedCalls);
    }

    expect(await outcome).toEqual({ value: 'done' });
    expect(announced.map(({ message, attempt }) => [message, attempt])).toEqual([
      ['failure 1', 0],
      ['failure 2', 1],
    ]);
    expect(announced[0]!.delayMs).toBeLessThan(100);
    expect(announced[1]!.delayMs).toBeLessThan(200);
    expect(clock.pendingTimers).toBe(0);
  });

  it('gives up after `attempts` with the last error', async () => {
    const clock = new FakeClock();
    const { operation, calls } = flaky(Number.POSITIVE_INFINITY);
    let retries = 0;
    const outcome = settle(
      retry(operation, {
        clock,
        policy,
        attempts: 4,
        onRetry: () => {
          retries += 1;
        },
      }),
    );
    await clock.advanceAsync(10_000);
    const result = await outcome;
    expect(result).toEqual({ error: expect.objectContaining({ message: 'failure 4' }) });
    expect(calls).toEqual([0, 1, 2, 3]);
    expect(retries).toBe(3);
    expect(clock.pendingTimers).toBe(0);
  });

  it('tries three times by default', async () => {
    const clock = new FakeClock();
    const { operation, calls } = flaky(Number.POSITIVE_INFINITY);
    const outcome = settle(retry(operation, { clock }));
    await clock.advanceAsync(60_000);
    expect(await outcome).toEqual({ error: expect.objectContaining({ message: 'failure 3' }) });
    expect(calls).toEqual([0, 1, 2]);
  });

  it('stops at once at an error that is not retryable', async () => {
    class Refused extends Error {}
    const clock = new FakeClock();
    const refusal = new Refused('the server said no');
    let calls = 0;
    let retries = 0;
    const outcome = settle(
      retry(
        async () => {
          calls += 1;
          throw refusal;
        },
        {
          clock,
          attempts: 5,
          retryable: (error) => !(error instanceof Refused),
          onRetry: () => {
            retries += 1;
          },
        },
      ),
    );
    await flushMicrotasks();
    expect(await outcome).toEqual({ error: refusal });
    expect(calls).toBe(1);
    expect(retries).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects with the abort reason when aborted mid-wait, and clears its timer', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const { operation, calls } = flaky(Number.POSITIVE_INFINITY);
    const outcome = settle(retry(operation, { clock, attempts: 5, signal: controller.signal }));
    await flushMicrotasks();
    expect(calls).toEqual([0]);
    expect(clock.pendingTimers).toBe(1);

    const reason = new Error('shutting down');
    controller.abort(reason);
    expect(await outcome).toEqual({ error: reason });
    expect(clock.pendingTimers).toBe(0);
    await clock.advanceAsync(60_000);
    expect(calls).toEqual([0]);
  });

  it('does not start when the signal is already aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('too late');
    controller.abort(reason);
    let calls = 0;
    const outcome = await settle(
      retry(
        async () => {
          calls += 1;
        },
        { clock: new FakeClock(), signal: controller.signal },
      ),
    );
    expect(outcome).toEqual({ error: reason });
    expect(calls).toBe(0);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses attempts = %s with a TypeError', async (attempts) => {
    await expect(retry(async () => 'never', { attempts })).rejects.toThrow(TypeError);
  });
});
