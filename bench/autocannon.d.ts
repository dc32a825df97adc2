/**
 * The part of autocannon 8's programmatic API the benchmarks use (the package ships no types).
 * See its README: `autocannon(options)` without a callback returns a thenable tracker.
 */
declare module 'autocannon' {
  /** An hdr-histogram summary: mean, spread and percentiles. */
  export interface Histogram {
    readonly average: number;
    readonly mean: number;
    readonly stddev: number;
    readonly min: number;
    readonly max: number;
    readonly total: number;
    readonly p2_5: number;
    readonly p50: number;
    readonly p90: number;
    readonly p97_5: number;
    readonly p99: number;
  }

  export interface Options {
    readonly url: string;
    readonly connections?: number;
    /** Seconds. */
    readonly duration?: number;
    readonly pipelining?: number;
    /** Worker threads that fire the requests (0: this thread). */
    readonly workers?: number;
    readonly method?: string;
    readonly headers?: Readonly<Record<string, string>>;
    /** Request body, the same for every request. */
    readonly body?: string;
    readonly title?: string;
    /** Seconds without an answer before a request counts as a timeout. */
    readonly timeout?: number;
  }

  export interface Result {
    readonly title?: string;
    readonly url: string;
    /** Requests per second, sampled once a second. */
    readonly requests: Histogram;
    /** Milliseconds per request. */
    readonly latency: Histogram;
    readonly throughput: Histogram;
    /** Seconds. */
    readonly duration: number;
    readonly errors: number;
    readonly timeouts: number;
    readonly non2xx: number;
    readonly statusCodeStats: Readonly<Record<string, { readonly count: number }>>;
  }

  export interface Instance extends PromiseLike<Result> {
    stop(): void;
  }

  export default function autocannon(options: Options): Instance;
}
