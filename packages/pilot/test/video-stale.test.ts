import { FakeClock } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import { StaleWatch, type StaleWatchOptions } from '../src/video/stale.js';

function watch(options: Partial<StaleWatchOptions> = {}) {
  const clock = new FakeClock(1000);
  const changes: [boolean, number][] = [];
  const w = new StaleWatch({ clock, onStaleChange: (stale, age) => changes.push([stale, age]), ...options });
  /** Frame i of a source at `intervalMs`, decoded and painted now, `ageAtPaint` ms old. */
  const paint = (i: number, intervalMs: number, ageAtPaint = Number.NaN): void => {
    w.handleFrame(i * intervalMs * 1000);
    w.handlePaint(clock.now(), ageAtPaint);
  };
  return { clock, changes, w, paint };
}

describe('StaleWatch', () => {
  it('says "no picture" before the first paint, however long that takes, never stale', () => {
    const t = watch();
    t.clock.advance(10_000);
    expect(t.w.state).toEqual({ kind: 'no-picture' });
    expect(t.w.stale).toBe(false);
    expect(t.w.pictureAgeMs).toBeNaN();
    expect(t.changes).toEqual([]);
    // Nothing runs on the clock until there is a picture to watch.
    expect(t.clock.pendingTimers).toBe(0);
  });

  it('turns stale after 300 ms without a new picture at 30 fps, with an age that keeps growing, and live again on the next paint', () => {
    const t = watch();
    for (let i = 0; i < 10; i++) {
      t.paint(i, 33.3, 40);
      t.clock.advance(33.3);
    }
    expect(t.w.state.kind).toBe('live');
    expect(t.w.thresholdMs).toBe(300);
    // The camera stops: the last picture (40 ms old at its paint) stays on screen.
    const lastPaint = t.clock.now() - 33.3;
    t.clock.advanceTo(lastPaint + 300);
    expect(t.w.stale).toBe(false);
    t.clock.advanceTo(lastPaint + 351);
    expect(t.w.stale).toBe(true);
    expect(t.changes).toHaveLength(1);
    const [stale, age] = t.changes[0]!;
    expect(stale).toBe(true);
    // Found on the 50 ms check after the threshold: 40 ms at paint plus 300-350 ms since.
    expect(age).toBeGreaterThan(340);
    expect(age).toBeLessThanOrEqual(391);
    const ageThen = t.w.pictureAgeMs;
    t.clock.advance(1000);
    expect(t.w.pictureAgeMs).toBeCloseTo(ageThen + 1000, 6);
    expect(t.changes).toHaveLength(1);
    // The camera is back: fresh on the very paint, with the new picture's age.
    t.paint(100, 33.3, 35);
    expect(t.w.state).toMatchObject({ kind: 'live', ageAtPaintMs: 35 });
    expect(t.changes.at(-1)).toEqual([false, 35]);
  });

  it('waits 3 frame intervals when that is longer than staleAfterMs (a 5 fps camera)', () => {
    const t = watch();
    for (let i = 0; i < 5; i++) {
      t.paint(i, 200);
      t.clock.advance(200);
    }
    expect(t.w.frameIntervalMs).toBe(200);
    expect(t.w.thresholdMs).toBe(600);
    // 400 ms since the last paint: a normal gap of two frames at 5 fps, not stale.
    t.clock.advance(200);
    expect(t.w.stale).toBe(false);
    t.clock.advance(250);
    expect(t.w.stale).toBe(true);
  });

  it('without a capture clock, reports the time since the paint as the age', () => {
    const t = watch({ staleAfterMs: 500 });
    t.paint(0, 33);
    t.clock.advance(600);
    expect(t.w.stale).toBe(true);
    expect(t.w.pictureAgeMs).toBeNaN();
    // Painted at 1000, checked every 50 ms: 500 ms is not yet more than the threshold, 550 is.
    expect(t.changes).toEqual([[true, 550]]);
    expect(t.w.sincePaintMs).toBe(600);
  });

  it('stops its timer on close and reports nothing after', () => {
    const t = watch();
    t.paint(0, 33);
    expect(t.clock.pendingTimers).toBe(1);
    t.w.close();
    expect(t.clock.pendingTimers).toBe(0);
    t.clock.advance(5000);
    expect(t.changes).toEqual([]);
  });

  it('rejects a threshold that is not a positive number of ms', () => {
    expect(() => watch({ staleAfterMs: 0 })).toThrow(/staleAfterMs/);
    expect(() => watch({ checkIntervalMs: Number.NaN })).toThrow(/checkIntervalMs/);
  });
});
