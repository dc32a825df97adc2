import { describe, expect, it } from 'vitest';
import { delay, systemClock } from '../src/index.js';
import { FakeClock, flushMicrotasks } from '../src/testing/index.js';

describe('FakeClock', () => {
  it('fires due timers in due order, each at its own time', () => {
    const clock = new FakeClock(1_000);
    const fired: string[] = [];
    const note = (name: string) => () => fired.push(`${name}@${clock.now()}`);
    clock.setTimeout(note('c'), 30);
    clock.setTimeout(note('a'), 10);
    clock.setTimeout(note('b'), 20);
    clock.setTimeout(note('late'), 31);
    expect(clock.pendingTimers).toBe(4);
    expect(clock.nextDueMs()).toBe(1_010);

    clock.advance(30);
    expect(fired).toEqual(['a@1010', 'b@1020', 'c@1030']);
    expect(clock.now()).toBe(1_030);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(1);
    expect(fired.at(-1)).toBe('late@1031');
    expect(clock.nextDueMs()).toBeUndefined();
  });

  it('fires timers due at the same time in the order they were set', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    for (const name of ['first', 'second', 'third']) clock.setTimeout(() => fired.push(name), 5);
    clock.advance(5);
    expect(fired).toEqual(['first', 'second', 'third']);
  });

  it('orders a repeating interval among timers due at the same time by when it was rescheduled', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const interval = clock.setInterval(() => fired.push(`tick@${clock.now()}`), 10);
    // Set at 0 for 20: before the interval's second tick was scheduled (at 10).
    clock.setTimeout(() => fired.push('timeout@20'), 20);
    clock.advance(20);
    expect(fired).toEqual(['tick@10', 'timeout@20', 'tick@20']);
    clock.clearInterval(interval);
  });

  it('repeats an interval until it is cleared', () => {
    const clock = new FakeClock();
    const ticks: number[] = [];
    const handle = clock.setInterval(() => ticks.push(clock.now()), 10);
    clock.advance(35);
    expect(ticks).toEqual([10, 20, 30]);
    expect(clock.pendingTimers).toBe(1);
    clock.clearInterval(handle);
    clock.advance(100);
    expect(ticks).toEqual([10, 20, 30]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('repeats an interval of 0 ms once per millisecond instead of looping forever', () => {
    const clock = new FakeClock();
    let ticks = 0;
    clock.setInterval(() => {
      ticks += 1;
    }, 0);
    clock.advance(3);
    expect(ticks).toBe(4);
  });

  it('fires timers set by a callback within the same advance when they fall due in it', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    clock.setTimeout(() => {
      fired.push(`outer@${clock.now()}`);
      clock.setTimeout(() => fired.push(`inner@${clock.now()}`), 5);
      clock.setTimeout(() => fired.push(`now@${clock.now()}`), 0);
      clock.setTimeout(() => fired.push(`beyond@${clock.now()}`), 50);
    }, 10);
    clock.advance(20);
    expect(fired).toEqual(['outer@10', 'now@10', 'inner@15']);
    expect(clock.now()).toBe(20);
    expect(clock.nextDueMs()).toBe(60);
    clock.advance(40);
    expect(fired.at(-1)).toBe('beyond@60');
  });

  it('clearTimeout cancels a timer, even from a callback due at the same time; odd handles are fine', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const cancelled = clock.setTimeout(() => fired.push('cancelled'), 10);
    clock.clearTimeout(cancelled);
    let second: ReturnType<FakeClock['setTimeout']> | undefined;
    clock.setTimeout(() => {
      fired.push('first');
      clock.clearTimeout(second);
    }, 20);
    second = clock.setTimeout(() => fired.push('second'), 20);
    const done = clock.setTimeout(() => fired.push('done'), 1);
    clock.advance(30);
    expect(fired).toEqual(['done', 'first']);
    expect(() => {
      clock.clearTimeout(undefined);
      clock.clearTimeout(done);
      clock.clearInterval(undefined);
    }).not.toThrow();
    expect(clock.pendingTimers).toBe(0);
  });

  it('fires a timer with a negative or non-finite delay on the next advance, as 0 ms', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('negative'), -5);
    clock.setTimeout(() => fired.push('nan'), Number.NaN);
    clock.advance(0);
    expect(fired).toEqual(['negative', 'nan']);
  });

  it('refuses to go back in time, or by a duration that is not a finite number', async () => {
    const clock = new FakeClock(100);
    expect(() => clock.advanceTo(99)).toThrow(TypeError);
    expect(() => clock.advance(-1)).toThrow(TypeError);
    expect(() => clock.advance(Number.NaN)).toThrow(TypeError);
    expect(() => clock.advance(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    await expect(clock.advanceAsync(-1)).rejects.toThrow(TypeError);
    await expect(clock.advanceAsync(Number.NaN)).rejects.toThrow(TypeError);
    expect(clock.now()).toBe(100);
    clock.advanceTo(100);
    expect(clock.now()).toBe(100);
  });

  it('keeps wall time and monotonic time apart, and steps the wall clock alone', () => {
    const wallStart = Date.UTC(2030, 5, 1, 12);
    const clock = new FakeClock(5_000, wallStart);
    expect(clock.now()).toBe(5_000);
    expect(clock.wallNow()).toBe(wallStart);
    let fired = 0;
    clock.setTimeout(() => {
      fired += 1;
    }, 1_000);

    clock.advance(500);
    expect([clock.now(), clock.wallNow()]).toEqual([5_500, wallStart + 500]);
    // An NTP correction an hour back: durations and timers do not notice.
    clock.stepWallClock(-3_600_000);
    expect([clock.now(), clock.wallNow()]).toEqual([5_500, wallStart + 500 - 3_600_000]);
    expect(fired).toBe(0);
    clock.advance(500);
    expect(fired).toBe(1);
    expect(clock.wallNow()).toBe(wallStart + 1_000 - 3_600_000);
  });

  it('starts the wall clock at 2026-01-01 by default', () => {
    expect(new FakeClock().wallNow()).toBe(Date.UTC(2026, 0, 1));
    expect(new FakeClock(42).wallNow()).toBe(Date.UTC(2026, 0, 1));
  });

  it('advanceAsync lets code that awaits between timers run', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const laps: number[] = [];
    const loop = (async () => {
      for (;;) {
        await delay(clock, 10, controller.signal);
        laps.push(clock.now());
      }
    })().catch(() => undefined);
    await clock.advanceAsync(35);
    expect(laps).toEqual([10, 20, 30]);
    expect(clock.now()).toBe(35);
    controller.abort();
    await loop;
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('delay', () => {
  it('resolves after the delay on the given clock, not before', async () => {
    const clock = new FakeClock();
    let resolved = false;
    const waiting = delay(clock, 100).then(() => {
      resolved = true;
    });
    await clock.advanceAsync(99);
    expect(resolved).toBe(false);
    await clock.advanceAsync(1);
    await waiting;
    expect(resolved).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects with the signal reason when aborted, and clears its timer', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const waiting = delay(clock, 100, controller.signal).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await flushMicrotasks();
    expect(clock.pendingTimers).toBe(1);
    const reason = new Error('closed');
    controller.abort(reason);
    expect(await waiting).toBe(reason);
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects with an AbortError when aborted without a reason', async () => {
    const controller = new AbortController();
    const waiting = delay(new FakeClock(), 100, controller.signal);
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('rejects at once, without a timer, when the signal is already aborted', async () => {
    const clock = new FakeClock();
    const reason = new Error('already');
    await expect(delay(clock, 100, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(clock.pendingTimers).toBe(0);
  });

  it('stops listening to the signal once it resolved', async () => {
    class CountingClock extends FakeClock {
      cleared = 0;
      override clearTimeout(handle: Parameters<FakeClock['clearTimeout']>[0]): void {
        this.cleared += 1;
        super.clearTimeout(handle);
      }
    }
    const clock = new CountingClock();
    const controller = new AbortController();
    const waiting = delay(clock, 10, controller.signal);
    clock.advance(10);
    await expect(waiting).resolves.toBeUndefined();
    controller.abort(new Error('late'));
    expect(clock.cleared).toBe(0);
  });
});

describe('systemClock', () => {
  it('runs a real timeout and a real interval, and gives numbers for both times', async () => {
    expect(Object.isFrozen(systemClock)).toBe(true);
    expect(typeof systemClock.now()).toBe('number');
    expect(Number.isInteger(systemClock.wallNow())).toBe(true);
    await delay(systemClock, 1);
    let ticks = 0;
    await new Promise<void>((resolve) => {
      const handle = systemClock.setInterval(() => {
        ticks += 1;
        if (ticks === 2) {
          systemClock.clearInterval(handle);
          resolve();
        }
      }, 1);
    });
    expect(ticks).toBe(2);
    let fired = false;
    const cancelled = systemClock.setTimeout(() => {
      fired = true;
    }, 1);
    systemClock.clearTimeout(cancelled);
    systemClock.clearTimeout(undefined);
    systemClock.clearInterval(undefined);
    await delay(systemClock, 5);
    expect(fired).toBe(false);
  });
});
