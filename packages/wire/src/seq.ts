/**
 * Wrap-aware comparisons for the wrapping counters of the wire format (RFC 1982 serial-number
 * arithmetic). Raw `<` on a 16-bit frame id or a 32-bit timestamp is wrong at the wrap.
 */

/** Signed distance `a - b` between two 16-bit counters, in [-32768, 32767]. */
export function seqDiff16(a: number, b: number): number {
  const d = (a - b) & 0xffff;
  return d >= 0x8000 ? d - 0x10000 : d;
}

/** True when 16-bit counter `a` comes before `b`. */
export function seqLess16(a: number, b: number): boolean {
  return seqDiff16(a, b) < 0;
}

/** The 16-bit counter that follows `a`. */
export function seqNext16(a: number): number {
  return (a + 1) & 0xffff;
}

/** Signed distance `a - b` between two 32-bit wrapping counters (µs timestamps), in [-2^31, 2^31). */
export function seqDiff32(a: number, b: number): number {
  return (a - b) | 0;
}

/** Reduces a (possibly negative or large) integer count of µs to the 32-bit wrapping wire value. */
export function wrapU32(value: number): number {
  const r = Math.trunc(value) % 0x1_0000_0000;
  return r < 0 ? r + 0x1_0000_0000 : r;
}
