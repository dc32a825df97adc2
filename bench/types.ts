/** One measured figure of a benchmark suite. */
export interface BenchResult {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly better: 'lower' | 'higher';
  /** Parameters of this measurement (block shape, loss model, ...). */
  readonly params?: Record<string, unknown>;
}

/** A benchmark suite: `bench/suites/<name>.ts` exports `suite`. */
export interface BenchSuite {
  readonly description: string;
  /** Parameters common to the suite, recorded with the results. */
  readonly parameters: Record<string, unknown>;
  /** Runs the measurements, reporting each as soon as it is known. */
  run(report: (result: BenchResult) => void): Promise<void> | void;
}
