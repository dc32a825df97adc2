import { captureClockAgeMs, seqDiff32, wrapU32 } from '@svc/wire';
import { percentile, pruneBefore, sortedValues, type TimedSample } from './window.js';

/** Construction options of {@link VideoStats}. */
export interface VideoStatsOptions {
  /** The local clock in ms (default `performance.now()`); the same clock the paint times use. */
  readonly now?: () => number;
  /**
   * Local clock minus the daemon's clock, in ms (default 0). It maps the daemon's sender
   * timestamps onto the local clock for the send→paint latency. Update it with
   * {@link VideoStats.clockOffsetMs} whenever a better estimate is known.
   */
  readonly clockOffsetMs?: number;
  /** Window of the bitrate, ms (default 1000). */
  readonly bitrateWindowMs?: number;
  /** Window of the latency and picture age percentiles, ms (default 5000). */
  readonly latencyWindowMs?: number;
}

/** Last and mean of a duration, ms; `null` until the first sample. */
export interface DecodeTimeSnapshot {
  readonly lastMs: number | null;
  readonly meanMs: number | null;
}

/**
 * A duration per painted frame over the sliding window, ms (send→paint latency, picture age);
 * `null` until the first sample.
 */
export interface LatencySnapshot {
  readonly lastMs: number | null;
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
  /** Samples in the window. */
  readonly samples: number;
}

/** A plain JSON copy of the statistics of one video channel, taken by {@link VideoStats.snapshot}. */
export interface VideoStatsSnapshot {
  /** Whole frames handed to the player. */
  readonly framesReceived: number;
  /** Received frames that needed Reed-Solomon repair. */
  readonly framesRepaired: number;
  /** Frames the transport gave up (sum of `FrameLoss.count`). */
  readonly framesLost: number;
  /** Frames that came out of the decoder. */
  readonly decoded: number;
  /** Decoder failures (each one resets the decoder until the next keyframe). */
  readonly decodeErrors: number;
  /**
   * Frames discarded because the decoder or the presenter was behind (`skippedBehind` among them),
   * or that the browser's decoder gave no picture for (a delta whose reference was lost).
   */
  readonly dropped: number;
  /**
   * Frames passed over to catch up when the pipeline fell behind (a burst, a slow decode, CPU
   * contention, paints that stopped): deltas skipped to the next keyframe, decoded and not painted,
   * or overtaken by a newer frame before their paint. Only when the frames waiting span more than
   * the presentation delay (or, for skipping deltas, the decoder's queue outgrows a short stall): a
   * queue of two or three frames, the replay at join and the frames right after it cost none.
   * Latency never creeps: the newest decodable frame is shown instead.
   */
  readonly skippedBehind: number;
  /** Frames that arrived after their presentation time (painted at once). */
  readonly late: number;
  /** Frames drawn on the canvas. */
  readonly painted: number;
  /** Frames of the robot's replay at join decoded to reach the current picture, not painted. */
  readonly replayed: number;
  /** Delta frames skipped while waiting for a keyframe (at join, after an error or a loss). */
  readonly waitingForKeyframe: number;
  /** Keyframes asked of the sender. */
  readonly keyframeRequests: number;
  /** Times the presenter re-derived its capture→local clock mapping. */
  readonly reanchors: number;
  /** Bytes received in total. */
  readonly bytesReceived: number;
  /** Received bits per second over the bitrate window. */
  readonly bitrateBps: number;
  /** From `handleFrame` to the decoder's output. */
  readonly decodeTime: DecodeTimeSnapshot;
  /** From the daemon sending the frame to its paint. */
  readonly latency: LatencySnapshot;
  /**
   * Picture age: from the frame's capture (robot clock) to its paint, with the clock offset. Only
   * frames with a known capture clock, painted while the offset was known, count.
   */
  readonly pictureAge: LatencySnapshot;
  /** The presenter's current hold (adaptive jitter buffer), ms: 0 paints each frame as soon as it is decoded. */
  readonly holdMs: number;
  /** The presenter's arrival jitter estimate (high percentile of lateness), ms; `null` before the first frame. */
  readonly jitterMs: number | null;
  /** The clock offset the latency was computed with. */
  readonly clockOffsetMs: number;
}

/** Most latency (and picture age) samples kept, whatever the window. */
const MAX_LATENCY_SAMPLES = 2048;

/**
 * Counters and sliding-window measurements of one video channel. The decoder, the presenter and
 * the player feed it; {@link VideoStats.snapshot} gives a JSON object for `pilot-stats` and UIs.
 * Time is injected, so the windows are testable without waiting.
 */
export class VideoStats {
  /**
   * Local clock minus the daemon's clock, ms. Only latency samples recorded after a change use the
   * new value.
   */
  clockOffsetMs: number;
  readonly #now: () => number;
  readonly #bitrateWindowMs: number;
  readonly #latencyWindowMs: number;
  #framesReceived = 0;
  #framesRepaired = 0;
  #framesLost = 0;
  #decoded = 0;
  #decodeErrors = 0;
  #dropped = 0;
  #skippedBehind = 0;
  #late = 0;
  #painted = 0;
  #replayed = 0;
  #waitingForKeyframe = 0;
  #keyframeRequests = 0;
  #reanchors = 0;
  #bytesReceived = 0;
  #decodeLastMs: number | null = null;
  #decodeTotalMs = 0;
  #latencyLastMs: number | null = null;
  #pictureAgeLastMs: number | null = null;
  #holdMs = 0;
  #jitterMs: number | null = null;
  readonly #received: TimedSample[] = [];
  readonly #latencies: TimedSample[] = [];
  readonly #pictureAges: TimedSample[] = [];

  constructor(options: VideoStatsOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.clockOffsetMs = options.clockOffsetMs ?? 0;
    this.#bitrateWindowMs = positive('bitrateWindowMs', options.bitrateWindowMs ?? 1000);
    this.#latencyWindowMs = positive('latencyWindowMs', options.latencyWindowMs ?? 5000);
  }

  /** Counts one whole frame of `bytes` bytes; `repaired` when parity rebuilt part of it. */
  recordReceived(bytes: number, repaired: boolean): void {
    this.#framesReceived++;
    if (repaired) this.#framesRepaired++;
    this.#bytesReceived += bytes;
    this.#received.push({ atMs: this.#now(), value: bytes });
  }

  /** Counts `count` frames the transport gave up. */
  recordLost(count: number): void {
    this.#framesLost += count;
  }

  /** Counts one decoded frame that took `decodeMs` from submission to output. */
  recordDecoded(decodeMs: number): void {
    this.#decoded++;
    this.#decodeLastMs = decodeMs;
    this.#decodeTotalMs += decodeMs;
  }

  /** Counts one decoder failure. */
  recordDecodeError(): void {
    this.#decodeErrors++;
  }

  /** Counts `count` frames discarded (see {@link VideoStatsSnapshot.dropped}). */
  recordDropped(count = 1): void {
    this.#dropped += count;
  }

  /**
   * Counts `count` frames passed over to catch up (see {@link VideoStatsSnapshot.skippedBehind});
   * they count as `dropped` too.
   */
  recordSkippedBehind(count = 1): void {
    this.#skippedBehind += count;
    this.#dropped += count;
  }

  /** Sets the presenter's current hold and jitter estimate, ms. */
  recordHold(holdMs: number, jitterMs: number | null): void {
    this.#holdMs = holdMs;
    this.#jitterMs = jitterMs;
  }

  /** Counts one frame that missed its presentation time. */
  recordLate(): void {
    this.#late++;
  }

  /** Counts one replayed frame decoded and not painted (see {@link VideoStatsSnapshot.replayed}). */
  recordReplayed(): void {
    this.#replayed++;
  }

  /** Counts one delta frame skipped while waiting for a keyframe. */
  recordWaitingForKeyframe(): void {
    this.#waitingForKeyframe++;
  }

  /** Counts one keyframe request. */
  recordKeyframeRequest(): void {
    this.#keyframeRequests++;
  }

  /** Counts one re-anchoring of the presenter's clock mapping. */
  recordReanchor(): void {
    this.#reanchors++;
  }

  /** Counts one painted frame. */
  recordPainted(): void {
    this.#painted++;
  }

  /**
   * Records the send→paint latency of one painted frame.
   *
   * @param paintMs - Local clock when the frame was drawn.
   * @param senderTimestampUs - The daemon's send time (µs, 32 bits wrapping).
   * @returns The latency in ms.
   */
  recordLatency(paintMs: number, senderTimestampUs: number): number {
    const latencyMs = sendToPaintMs(paintMs, senderTimestampUs, this.clockOffsetMs);
    this.#latencyLastMs = latencyMs;
    this.#latencies.push({ atMs: paintMs, value: latencyMs });
    if (this.#latencies.length > MAX_LATENCY_SAMPLES) this.#latencies.shift();
    return latencyMs;
  }

  /**
   * Records the picture age of one painted frame (see {@link pictureAgeAtPaintMs}); a `NaN` age
   * (capture clock or offset unknown) is not recorded.
   */
  recordPictureAge(paintMs: number, ageMs: number): void {
    if (Number.isNaN(ageMs)) return;
    this.#pictureAgeLastMs = ageMs;
    this.#pictureAges.push({ atMs: paintMs, value: ageMs });
    if (this.#pictureAges.length > MAX_LATENCY_SAMPLES) this.#pictureAges.shift();
  }

  /** A plain JSON copy of the current values. */
  snapshot(): VideoStatsSnapshot {
    const nowMs = this.#now();
    pruneBefore(this.#received, nowMs - this.#bitrateWindowMs);
    pruneBefore(this.#latencies, nowMs - this.#latencyWindowMs);
    pruneBefore(this.#pictureAges, nowMs - this.#latencyWindowMs);
    let windowBytes = 0;
    for (const s of this.#received) windowBytes += s.value;
    const sorted = sortedValues(this.#latencies);
    const ages = sortedValues(this.#pictureAges);
    return {
      framesReceived: this.#framesReceived,
      framesRepaired: this.#framesRepaired,
      framesLost: this.#framesLost,
      decoded: this.#decoded,
      decodeErrors: this.#decodeErrors,
      dropped: this.#dropped,
      skippedBehind: this.#skippedBehind,
      replayed: this.#replayed,
      late: this.#late,
      painted: this.#painted,
      waitingForKeyframe: this.#waitingForKeyframe,
      keyframeRequests: this.#keyframeRequests,
      reanchors: this.#reanchors,
      bytesReceived: this.#bytesReceived,
      bitrateBps: (windowBytes * 8 * 1000) / this.#bitrateWindowMs,
      decodeTime: {
        lastMs: this.#decodeLastMs,
        meanMs: this.#decoded > 0 ? this.#decodeTotalMs / this.#decoded : null,
      },
      latency: {
        lastMs: this.#latencyLastMs,
        p50Ms: percentile(sorted, 0.5),
        p95Ms: percentile(sorted, 0.95),
        samples: sorted.length,
      },
      pictureAge: {
        lastMs: this.#pictureAgeLastMs,
        p50Ms: percentile(ages, 0.5),
        p95Ms: percentile(ages, 0.95),
        samples: ages.length,
      },
      holdMs: this.#holdMs,
      jitterMs: this.#jitterMs,
      clockOffsetMs: this.clockOffsetMs,
    };
  }
}

/**
 * Send→paint latency in ms. The daemon's time at paint is `paintMs - clockOffsetMs`; it is
 * compared with the 32-bit wrapping sender timestamp wrap-aware, so the result is right across the
 * wrap (every 71.6 minutes) as long as the true latency is under 35 minutes.
 *
 * @param paintMs - Local clock at paint, ms.
 * @param senderTimestampUs - The daemon's send time, µs, 32 bits wrapping.
 * @param clockOffsetMs - Local clock minus the daemon's clock, ms.
 */
export function sendToPaintMs(paintMs: number, senderTimestampUs: number, clockOffsetMs: number): number {
  const daemonNowUs = wrapU32(Math.round((paintMs - clockOffsetMs) * 1000));
  return seqDiff32(daemonNowUs, senderTimestampUs) / 1000;
}

/**
 * Picture age at paint, ms: how long before the paint the frame was captured, on the robot's clock
 * (the robot's time at paint is `paintMs - clockOffsetMs`). `NaN` when the capture clock is 0
 * (unknown) or the offset is not known yet. Right across the 32-bit wrap of the capture clock.
 *
 * @param paintMs - Local clock at paint, ms.
 * @param captureClockUs - The frame's capture time on the robot's wall clock, µs, 32 bits wrapping; 0 unknown.
 * @param clockOffsetMs - Local clock minus the robot's clock, ms; `undefined` when not known.
 */
export function pictureAgeAtPaintMs(
  paintMs: number,
  captureClockUs: number,
  clockOffsetMs: number | undefined,
): number {
  if (clockOffsetMs === undefined) return Number.NaN;
  return captureClockAgeMs(captureClockUs, paintMs - clockOffsetMs) ?? Number.NaN;
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0))
    throw new TypeError(`${name} must be a positive number, got ${value}`);
  return value;
}
