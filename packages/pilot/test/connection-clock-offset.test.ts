/** The NTP-style clock-offset estimate: the best of the last eight exchanges. */
import { describe, expect, it } from 'vitest';
import { ClockOffsetEstimator } from '../src/index.js';

/** An exchange with a robot whose clock is `offset` behind, `up` and `down` ms each way. */
const exchange = (sentMs: number, up: number, down: number, offsetMs = 250) => ({
  sentMs,
  robotMs: sentMs + up - offsetMs,
  receivedMs: sentMs + up + down,
});

describe('ClockOffsetEstimator', () => {
  it('has no estimate before the first exchange', () => {
    expect(new ClockOffsetEstimator().estimate()).toBeUndefined();
  });

  it('takes the offset of the exchange with the lowest round trip: a queue on one leg skews the others', () => {
    const clock = new ClockOffsetEstimator();
    clock.add(exchange(0, 40, 2)); // queued on the way up: offset off by 19 ms
    clock.add(exchange(1000, 1, 1)); // clean: exact
    clock.add(exchange(2000, 2, 30)); // queued on the way down
    expect(clock.estimate()).toEqual({ offsetMs: 250, bestRttMs: 2, latestRttMs: 32 });
  });

  it('forgets exchanges older than the last eight', () => {
    const clock = new ClockOffsetEstimator();
    clock.add(exchange(0, 1, 1, 100));
    for (let i = 1; i <= 7; i++) clock.add(exchange(i * 1000, 5, 5, 250));
    expect(clock.estimate()?.offsetMs).toBe(100);
    clock.add(exchange(8000, 5, 5, 250));
    expect(clock.size).toBe(8);
    expect(clock.estimate()).toEqual({ offsetMs: 250, bestRttMs: 10, latestRttMs: 10 });
  });

  it('ignores an exchange whose times are not finite or run backwards', () => {
    const clock = new ClockOffsetEstimator();
    expect(clock.add({ sentMs: 10, robotMs: 0, receivedMs: 5 })).toBe(false);
    expect(clock.add({ sentMs: 0, robotMs: Number.NaN, receivedMs: 5 })).toBe(false);
    expect(clock.estimate()).toBeUndefined();
  });

  it('starts over after reset, and refuses a capacity below one', () => {
    const clock = new ClockOffsetEstimator();
    clock.add(exchange(0, 1, 1));
    clock.reset();
    expect(clock.estimate()).toBeUndefined();
    expect(() => new ClockOffsetEstimator(0)).toThrow(/at least 1 sample, got 0/);
  });
});
