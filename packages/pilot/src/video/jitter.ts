import { percentile, pruneBefore, sortedValues, type TimedSample } from './window.js';

/** Tuning of a {@link JitterEstimator}; each field has a default. */
export interface JitterTuning {
  /** How far back the estimate looks, ms (default 3000). */
  readonly windowMs?: number;
  /** The share of frames the hold must have ready by their due time, 0..1 (default 0.98). */
  readonly percentile?: number;
  /** Added to the hold for the paint loop's own slack, ms (default 2). */
  readonly marginMs?: number;
  /**
   * How fast the hold comes down once what it must cover has left the window, ms per second
   * (default 20): a hold raised by a hiccup is back within a few seconds, in steps too small to see.
   */
  readonly fallMsPerSecond?: number;
  /**
   * A frame this far off the earliest-arrival line, ms, later or earlier (default 1000), starts a
   * new line: the link stalled and released a backlog, or the source restarted its capture clock.
   * Holding every later frame for such a gap would only add latency that cannot buy smoothness.
   */
  readonly restartAfterMs?: number;
}

/** Construction options of a {@link JitterEstimator}. */
export interface JitterEstimatorOptions extends JitterTuning {
  /** The most the hold may be, ms: the profile's presentation delay. 0 holds nothing. */
  readonly ceilingMs: number;
}

/** What {@link JitterEstimator.handleArrival} learnt from one frame. */
export interface ArrivalVerdict {
  /** How much later than the earliest-arrival line the frame became whole, ms (0: on it or before). */
  readonly latenessMs: number;
  /**
   * The frame starts a new line (the first frame, or one more than `restartAfterMs` off the line):
   * it has no due time of its own and is shown at once.
   */
  readonly restarted: boolean;
  /** Whether this restart ended an earlier line (false for the first frame after a start or reset). */
  readonly reanchored: boolean;
}

/** Most samples kept per window, whatever the frame rate. */
const MAX_SAMPLES = 1024;

/**
 * An adaptive jitter buffer's target delay, in the spirit of WebRTC's: a pure function of what it
 * is told, with time passed in.
 *
 * Each frame's arrival (local ms, when it became whole) is set against its capture time (source µs,
 * monotonic). The earliest-arrival line is the smallest `arrival − capture` in the window: where a
 * frame lands when the link adds nothing. A frame's lateness is how far above that line it
 * arrived; its readiness is how far above the line it was ready to show (decoded): lateness and
 * decode time together, as the frame met them. Both are judged against the line as it stands;
 * when the earliest frame leaves the window and the line moves later, they and the hold are
 * re-based on it (a base delay that grew is not jitter). The hold is the chosen percentile of
 * readiness over the window plus a margin, capped at the ceiling: one percentile of the sum, so a
 * keyframe that is both late and slow to decode counts once, not in two separate percentiles. It
 * rises at once when it must, and comes down by at most `fallMsPerSecond` once what raised it has
 * left the window.
 *
 * A frame should be shown at `expectedArrivalMs(capture) + holdMs(now)`.
 */
export class JitterEstimator {
  readonly #windowMs: number;
  readonly #percentile: number;
  readonly #marginMs: number;
  readonly #fallMsPerSecond: number;
  readonly #restartAfterMs: number;
  #ceilingMs: number;
  /** Per frame, arrival minus capture time, ms: its place against the line. */
  readonly #offsets: TimedSample[] = [];
  readonly #lateness: TimedSample[] = [];
  readonly #readiness: TimedSample[] = [];
  /** Smallest `arrival − capture` in the window, ms; `undefined` before the first frame. */
  #lineOffsetMs: number | undefined;
  #latestArrivalMs = Number.NEGATIVE_INFINITY;
  #latestReadyMs = Number.NEGATIVE_INFINITY;
  #holdMs = 0;
  /** When {@link #holdMs} was last brought up to date, local ms. */
  #holdAtMs: number | undefined;
  #jitterMs: number | null = null;
  #readinessEstimateMs: number | null = null;
  #dirty = false;

  constructor(options: JitterEstimatorOptions) {
    this.#ceilingMs = checkCeiling(options.ceilingMs);
    this.#windowMs = positive('windowMs', options.windowMs ?? 3000);
    this.#percentile = options.percentile ?? 0.98;
    if (!(this.#percentile > 0 && this.#percentile <= 1))
      throw new TypeError(`percentile must be in (0, 1], got ${this.#percentile}`);
    this.#marginMs = nonNegative('marginMs', options.marginMs ?? 2);
    this.#fallMsPerSecond = positive('fallMsPerSecond', options.fallMsPerSecond ?? 20);
    this.#restartAfterMs = positive('restartAfterMs', options.restartAfterMs ?? 1000);
  }

  /** The ceiling of the hold, ms. */
  get ceilingMs(): number {
    return this.#ceilingMs;
  }

  /** The chosen percentile of lateness over the window, ms; `null` before the first frame. */
  get jitterMs(): number | null {
    this.#refresh();
    return this.#jitterMs;
  }

  /**
   * The chosen percentile of readiness over the window (how far above the line frames were ready
   * to show), ms; `null` before the first sample.
   */
  get readinessMs(): number | null {
    this.#refresh();
    return this.#readinessEstimateMs;
  }

  /**
   * Takes one frame's arrival.
   *
   * @param arrivalMs - Local clock when the frame became whole, ms.
   * @param captureUs - Its capture time on the source's clock, µs, monotonic (unwrapped).
   */
  handleArrival(arrivalMs: number, captureUs: number): ArrivalVerdict {
    const offsetMs = arrivalMs - captureUs / 1000;
    const line = this.#lineOffsetMs;
    if (line === undefined || Math.abs(offsetMs - line) > this.#restartAfterMs) {
      // Readiness stays: how far above its line a frame is ready describes the link and the
      // decoder, whichever line it was measured against.
      this.#offsets.length = 0;
      this.#lateness.length = 0;
      this.#latestArrivalMs = arrivalMs;
      this.#offsets.push({ atMs: arrivalMs, value: offsetMs });
      this.#lateness.push({ atMs: arrivalMs, value: 0 });
      this.#lineOffsetMs = offsetMs;
      this.#dirty = true;
      return { latenessMs: 0, restarted: true, reanchored: line !== undefined };
    }
    // Lateness is judged against the line as it stands when the frame arrives: a frame that sets a
    // new, earlier line is on time, and the frames before it keep the lateness they had.
    const latenessMs = Math.max(0, offsetMs - line);
    this.#latestArrivalMs = Math.max(this.#latestArrivalMs, arrivalMs);
    this.#offsets.push({ atMs: arrivalMs, value: offsetMs });
    this.#lateness.push({ atMs: arrivalMs, value: latenessMs });
    const from = this.#latestArrivalMs - this.#windowMs;
    pruneBefore(this.#offsets, from);
    pruneBefore(this.#lateness, from);
    trim(this.#offsets);
    trim(this.#lateness);
    let min = Number.POSITIVE_INFINITY;
    for (const o of this.#offsets) min = Math.min(min, o.value);
    if (min > line) this.#lineRose(min - line);
    this.#lineOffsetMs = min;
    this.#dirty = true;
    return { latenessMs, restarted: false, reanchored: false };
  }

  /**
   * Takes the moment one frame was ready to show (decoded), after its {@link handleArrival}.
   * Ignored before the first frame.
   *
   * @param readyMs - Local clock when it was ready, ms.
   * @param captureUs - Its capture time, µs, as given to {@link handleArrival}.
   */
  handleReady(readyMs: number, captureUs: number): void {
    const line = this.#lineOffsetMs;
    if (line === undefined) return;
    this.#latestReadyMs = Math.max(this.#latestReadyMs, readyMs);
    this.#readiness.push({ atMs: readyMs, value: Math.max(0, readyMs - captureUs / 1000 - line) });
    pruneBefore(this.#readiness, this.#latestReadyMs - this.#windowMs);
    trim(this.#readiness);
    this.#dirty = true;
  }

  /**
   * Local time at which a frame captured at `captureUs` arrives when the link adds nothing, ms;
   * `undefined` before the first frame (and after {@link reset}).
   */
  expectedArrivalMs(captureUs: number): number | undefined {
    const line = this.#lineOffsetMs;
    return line === undefined ? undefined : captureUs / 1000 + line;
  }

  /**
   * The hold in force at `nowMs`, ms: up to date with every sample so far, never above the
   * ceiling. Rises at once; falls by at most `fallMsPerSecond` per second since the last call.
   */
  holdMs(nowMs: number): number {
    this.#refresh();
    const needed = Math.min(
      this.#ceilingMs,
      this.#readinessEstimateMs === null
        ? 0
        : this.#readinessEstimateMs + (this.#ceilingMs > 0 ? this.#marginMs : 0),
    );
    const since = this.#holdAtMs === undefined ? 0 : Math.max(0, nowMs - this.#holdAtMs);
    if (needed >= this.#holdMs) this.#holdMs = needed;
    else this.#holdMs = Math.max(needed, this.#holdMs - (this.#fallMsPerSecond * since) / 1000);
    this.#holdMs = Math.min(this.#holdMs, this.#ceilingMs);
    this.#holdAtMs = Math.max(nowMs, this.#holdAtMs ?? nowMs);
    return this.#holdMs;
  }

  /** Another ceiling from now on (the profile changed); a hold above it comes down to it at once. */
  setCeiling(ceilingMs: number): void {
    this.#ceilingMs = checkCeiling(ceilingMs);
    this.#holdMs = Math.min(this.#holdMs, this.#ceilingMs);
  }

  /**
   * Forgets the line (the source restarted its capture clock): the next frame starts a new one. The
   * hold and the readiness samples stay, as they describe the link and the decoder.
   */
  reset(): void {
    this.#lineOffsetMs = undefined;
    this.#offsets.length = 0;
    this.#lateness.length = 0;
    this.#latestArrivalMs = Number.NEGATIVE_INFINITY;
    this.#dirty = true;
  }

  /**
   * The earliest frame left the window and the line moved `deltaMs` later (the link's base delay
   * grew, or drifted): lateness so far and the hold are re-based on the new line, so due times stay
   * where they were instead of adding the step on top of the hold.
   */
  #lineRose(deltaMs: number): void {
    for (const samples of [this.#lateness, this.#readiness]) {
      for (let i = 0; i < samples.length; i++) {
        const sample = samples[i]!;
        samples[i] = { atMs: sample.atMs, value: Math.max(0, sample.value - deltaMs) };
      }
    }
    this.#holdMs = Math.max(0, this.#holdMs - deltaMs);
  }

  #refresh(): void {
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#jitterMs = percentile(sortedValues(this.#lateness), this.#percentile);
    this.#readinessEstimateMs = percentile(sortedValues(this.#readiness), this.#percentile);
  }
}

function trim(samples: TimedSample[]): void {
  if (samples.length > MAX_SAMPLES) samples.splice(0, samples.length - MAX_SAMPLES);
}

function checkCeiling(ms: number): number {
  if (!(Number.isFinite(ms) && ms >= 0))
    throw new TypeError(`the hold's ceiling (presentationDelayMs) must be a number ≥ 0, got ${ms}`);
  return ms;
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0))
    throw new TypeError(`${name} must be a number > 0, got ${value}`);
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!(Number.isFinite(value) && value >= 0))
    throw new TypeError(`${name} must be a number ≥ 0, got ${value}`);
  return value;
}
