import type { Clock, TimerHandle } from '../clock.js';

interface FakeTimer {
  readonly id: number;
  dueMs: number;
  /** When it was set, or last rescheduled (an interval): orders timers due at the same time. */
  order: number;
  readonly periodMs: number | undefined;
  readonly callback: () => void;
}

/**
 * A {@link Clock} whose time moves only when a test says so. Timers fire in due order (ties in
 * the order they were set) during {@link FakeClock.advance}; timers set by a callback fire in the
 * same advance when they fall due within it.
 */
export class FakeClock implements Clock {
  #nowMs: number;
  #wallOffsetMs: number;
  #nextId = 1;
  #nextOrder = 0;
  readonly #timers = new Map<number, FakeTimer>();

  /**
   * @param startMs - The monotonic time at start.
   * @param wallStartMs - The wall-clock time at start (default 2026-01-01T00:00:00Z).
   */
  constructor(startMs = 0, wallStartMs = Date.UTC(2026, 0, 1)) {
    this.#nowMs = startMs;
    this.#wallOffsetMs = wallStartMs - startMs;
  }

  now(): number {
    return this.#nowMs;
  }

  wallNow(): number {
    return this.#nowMs + this.#wallOffsetMs;
  }

  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    return this.#add(callback, delayMs, undefined);
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle !== undefined) this.#timers.delete(handle as unknown as number);
  }

  setInterval(callback: () => void, periodMs: number): TimerHandle {
    return this.#add(callback, periodMs, Math.max(1, periodMs));
  }

  clearInterval(handle: TimerHandle | undefined): void {
    this.clearTimeout(handle);
  }

  /** Timers still to fire. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** When the next timer is due, or `undefined` with none. */
  nextDueMs(): number | undefined {
    return this.#next()?.dueMs;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way.
   *
   * @throws {TypeError} when `ms` is negative or not finite.
   */
  advance(ms: number): void {
    this.advanceTo(this.#nowMs + checkDuration(ms));
  }

  /**
   * Moves time forward to `targetMs`, firing every timer that falls due on the way.
   *
   * @throws {TypeError} when `targetMs` is before now, or not finite.
   */
  advanceTo(targetMs: number): void {
    if (!(Number.isFinite(targetMs) && targetMs >= this.#nowMs)) {
      throw new TypeError(`fake time cannot go back from ${this.#nowMs} to ${targetMs}`);
    }
    for (let timer = this.#next(); timer !== undefined && timer.dueMs <= targetMs; timer = this.#next()) {
      this.#fire(timer);
    }
    this.#nowMs = targetMs;
  }

  /**
   * Like {@link advance}, letting promise callbacks run after each timer, for code that awaits
   * between timers (a retry loop, a reconnect).
   *
   * @throws {TypeError} (as a rejection) when `ms` is negative or not finite.
   */
  async advanceAsync(ms: number): Promise<void> {
    const targetMs = this.#nowMs + checkDuration(ms);
    await flushMicrotasks();
    for (let timer = this.#next(); timer !== undefined && timer.dueMs <= targetMs; timer = this.#next()) {
      this.#fire(timer);
      await flushMicrotasks();
    }
    this.#nowMs = targetMs;
  }

  /** Moves the wall clock alone (a system clock step), leaving monotonic time and timers as they are. */
  stepWallClock(ms: number): void {
    this.#wallOffsetMs += ms;
  }

  #add(callback: () => void, delayMs: number, periodMs: number | undefined): TimerHandle {
    const id = this.#nextId++;
    const wait = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
    this.#timers.set(id, { id, dueMs: this.#nowMs + wait, order: this.#nextOrder++, periodMs, callback });
    return id as unknown as TimerHandle;
  }

  #next(): FakeTimer | undefined {
    let next: FakeTimer | undefined;
    for (const timer of this.#timers.values()) {
      if (
        next === undefined ||
        timer.dueMs < next.dueMs ||
        (timer.dueMs === next.dueMs && timer.order < next.order)
      ) {
        next = timer;
      }
    }
    return next;
  }

  #fire(timer: FakeTimer): void {
    this.#nowMs = timer.dueMs;
    if (timer.periodMs === undefined) this.#timers.delete(timer.id);
    else {
      timer.dueMs += timer.periodMs;
      timer.order = this.#nextOrder++;
    }
    timer.callback();
  }
}

function checkDuration(ms: number): number {
  if (!(Number.isFinite(ms) && ms >= 0)) {
    throw new TypeError(`fake time moves forward by a finite duration >= 0 ms, got ${ms}`);
  }
  return ms;
}

/** Lets every queued promise callback run (a few rounds, for chains of awaits). */
export async function flushMicrotasks(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}
