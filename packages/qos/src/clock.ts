/**
 * Checks a caller's `now` (ms): finite and never earlier than the previous one. Throws
 * `TypeError` otherwise, since the rules measure holds and graces on that one clock.
 */
export function checkNow(now: number, previous: number | undefined): void {
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new TypeError(`now must be a time in ms from one monotonic clock, got ${now}`);
  }
  if (previous !== undefined && now < previous) {
    throw new TypeError(`now went back from ${previous} to ${now}: pass one monotonic clock`);
  }
}
