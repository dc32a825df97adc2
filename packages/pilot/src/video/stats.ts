import { seqDiff32, wrapU32 } from '@svc/wire';

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
  /** Window of the latency percentiles, ms (default 5000). */
  readonly latencyWindowMs?: number;
}

/** Last and mean of a duration, ms; `null` until the first sample. */
export interface DecodeTimeSnapshot {
  readonly lastMs: number | null;
  readonly meanMs: number | null;
}

/** Send→paint latency over the sliding window, ms; `null` until the first painted frame. */
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
  /** Frames discarded because the decoder or the presenter was behind. */
  readonly dropped: number;
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
  /** The clock offset the latency was computed with. */
  readonly clockOffsetMs: number;
}

interface Sample {
  readonly atMs: number;
  readonly value: number;
}

/** Most latency samples kept, whatever the window. */
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
  readonly #received: Sample[] = [];
  readonly #latencies: Sample[] = [];

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

  /** Counts `count` frames discarded because the decoder or the presenter was behind. */
  recordDropped(count = 1): void {
    this.#dropped += count;
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

  /** A plain JSON copy of the current values. */
  snapshot(): VideoStatsSnapshot {
    const nowMs = this.#now();
    prune(this.#received, nowMs - this.#bitrateWindowMs);
    prune(this.#latencies, nowMs - this.#latencyWindowMs);
    let windowBytes = 0;
    for (const s of this.#received) windowBytes += s.value;
    const sorted = this.#latencies.map((s) => s.value).sort((a, b) => a - b);
    return {
      framesReceived: this.#framesReceived,
      framesRepaired: this.#framesRepaired,
      framesLost: this.#framesLost,
      decoded: this.#decoded,
      decodeErrors: this.#decodeErrors,
      dropped: this.#dropped,
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

/** Nearest-rank percentile of an ascending list; `null` when it is empty. */
function percentile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? null;
}

/** Removes the samples taken before `fromMs` (they are in time order). */
function prune(samples: Sample[], fromMs: number): void {
  let drop = 0;
  while (drop < samples.length && samples[drop]!.atMs < fromMs) drop++;
  if (drop > 0) samples.splice(0, drop);
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0))
    throw new TypeError(`${name} must be a positive number, got ${value}`);
  return value;
}
