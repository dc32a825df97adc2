/**
 * Samples of a measurement over a sliding time window, oldest first, with the nearest-rank
 * percentile the statistics and the jitter estimator both use.
 */

/** One measurement and when it was taken (local ms). */
export interface TimedSample {
  readonly atMs: number;
  readonly value: number;
}

/** Nearest-rank percentile (`q` in 0..1) of an ascending list; `null` when it is empty. */
export function percentile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? null;
}

/** The values of `samples`, ascending. */
export function sortedValues(samples: readonly TimedSample[]): number[] {
  return samples.map((s) => s.value).sort((a, b) => a - b);
}

/** Removes the samples taken before `fromMs` (they are in time order). */
export function pruneBefore(samples: TimedSample[], fromMs: number): void {
  let drop = 0;
  while (drop < samples.length && samples[drop]!.atMs < fromMs) drop++;
  if (drop > 0) samples.splice(0, drop);
}
