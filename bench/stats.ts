/** The `q` quantile (0..1) of ascending `sorted` values; NaN when there are none. */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
