/**
 * The robot-to-browser clock offset, NTP-style: each `ping`/`pong` is a sample (the pilot's send
 * and receive times around the robot's reading); the offset comes from the sample with the lowest
 * round trip among the last few, whose midpoint assumption is the least wrong (a queue on either
 * leg skews a sample by up to half its extra delay).
 */

/** Samples kept: the best of about the last eight seconds, once the first burst is over. */
export const CLOCK_OFFSET_SAMPLES = 8;

/** One `ping`/`pong` exchange. */
export interface ClockSample {
  /** Pilot clock when the `ping` left, ms. */
  readonly sentMs: number;
  /** Robot clock in the `pong` (`robot_time`), ms. */
  readonly robotMs: number;
  /** Pilot clock when the `pong` arrived, ms. */
  readonly receivedMs: number;
}

/** What the estimator knows now. */
export interface ClockOffsetEstimate {
  /** Local clock minus the robot's, ms, from the sample with the lowest round trip. */
  readonly offsetMs: number;
  /** That sample's round trip, ms. */
  readonly bestRttMs: number;
  /** The latest sample's round trip, ms (what the link does now). */
  readonly latestRttMs: number;
}

/**
 * Keeps the last {@link CLOCK_OFFSET_SAMPLES} samples and estimates the offset from the one with
 * the lowest round trip. Pure: times come in with the samples.
 */
export class ClockOffsetEstimator {
  readonly #capacity: number;
  #samples: { readonly offsetMs: number; readonly rttMs: number }[] = [];

  constructor(capacity = CLOCK_OFFSET_SAMPLES) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new TypeError(`ClockOffsetEstimator keeps at least 1 sample, got ${capacity}`);
    }
    this.#capacity = capacity;
  }

  /** Samples held now. */
  get size(): number {
    return this.#samples.length;
  }

  /**
   * Adds one exchange. One whose times are not finite or run backwards (received before sent) is
   * ignored and `false` returned.
   */
  add(sample: ClockSample): boolean {
    const { sentMs, robotMs, receivedMs } = sample;
    if (![sentMs, robotMs, receivedMs].every(Number.isFinite) || receivedMs < sentMs) return false;
    const rttMs = receivedMs - sentMs;
    this.#samples.push({ offsetMs: sentMs + rttMs / 2 - robotMs, rttMs });
    if (this.#samples.length > this.#capacity) this.#samples.shift();
    return true;
  }

  /** The estimate, or `undefined` before the first sample. */
  estimate(): ClockOffsetEstimate | undefined {
    const latest = this.#samples.at(-1);
    if (latest === undefined) return undefined;
    let best = latest;
    for (const sample of this.#samples) if (sample.rttMs < best.rttMs) best = sample;
    return { offsetMs: best.offsetMs, bestRttMs: best.rttMs, latestRttMs: latest.rttMs };
  }

  /** Forgets every sample (a new session, perhaps a restarted robot). */
  reset(): void {
    this.#samples = [];
  }
}
