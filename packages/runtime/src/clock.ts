/**
 * Time as an injected dependency: every state machine takes a {@link Clock} instead of calling
 * `performance.now()`, `Date.now()` or the global timers, so its tests run on fake time
 * (`FakeClock` from `@svc/runtime/testing`) without sleeping.
 */

/** An opaque timer handle, only ever handed back to the clock that made it. */
export type TimerHandle = { readonly timer: unique symbol };

/** Time and timers. */
export interface Clock {
  /** Monotonic milliseconds (`performance.now()`): for durations and deadlines. */
  now(): number;
  /** Wall-clock milliseconds since the epoch (`Date.now()`): for token expiry and timestamps people read. */
  wallNow(): number;
  /** Calls `callback` once after `delayMs`. */
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  /** Cancels a timeout; `undefined` or a handle that already fired is fine. */
  clearTimeout(handle: TimerHandle | undefined): void;
  /** Calls `callback` every `periodMs`. */
  setInterval(callback: () => void, periodMs: number): TimerHandle;
  /** Cancels an interval; `undefined` is fine. */
  clearInterval(handle: TimerHandle | undefined): void;
}

type NativeHandle = ReturnType<typeof globalThis.setTimeout>;

/**
 * The process's own time and timers. In Node its timers do not keep the process alive on their
 * own (`unref`): whatever owns a timer also owns a socket or a promise that does.
 */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout: (callback: () => void, delayMs: number): TimerHandle =>
    unref(globalThis.setTimeout(callback, delayMs)),
  clearTimeout: (handle: TimerHandle | undefined): void => {
    if (handle !== undefined) globalThis.clearTimeout(handle as unknown as NativeHandle);
  },
  setInterval: (callback: () => void, periodMs: number): TimerHandle =>
    unref(globalThis.setInterval(callback, periodMs)),
  clearInterval: (handle: TimerHandle | undefined): void => {
    if (handle !== undefined) globalThis.clearInterval(handle as unknown as NativeHandle);
  },
});

function unref(handle: NativeHandle): TimerHandle {
  // Node's Timeout has unref(); the browser's number does not.
  (handle as { unref?: () => void }).unref?.();
  return handle as unknown as TimerHandle;
}

/**
 * A promise that resolves after `delayMs` on `clock`, or rejects with the signal's reason when
 * `signal` aborts first (the timer is then cleared).
 */
export function delay(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
