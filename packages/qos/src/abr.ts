import type { ParityPolicy } from '@svc/wire';
import { checkNow } from './clock.js';
import { parityKbpsFor } from './parity-budget.js';
import { PARITY_FLOOR, type QosProfile } from './profiles.js';
import { channelBitrateRange, checkFps } from './range.js';

/** The controller's reasons, as `abr_reason` reports them (specification section 3). */
export const ABR_REASONS = [
  'steady',
  'loss',
  'latency',
  'backlog',
  'residual',
  'recover',
  'fec-down',
] as const;

/** Why the controller decided what it did in a period: one of {@link ABR_REASONS}. */
export type AbrReason = (typeof ABR_REASONS)[number];

/** A decision that should reach the publisher as a `video-config` with this `reason`. */
export type AbrMove = 'abr-down' | 'abr-up';

/**
 * The numbers behind the controller, chosen where the specification is silent; the reasoning is
 * in `docs/adr/0009-qos-controllers.md`. Rates are fractions, times milliseconds.
 */
export const ABR_TUNING = Object.freeze({
  /** Loss at or above this (QUIC packets or pilot chunks) is a loss period: parity covers it, no step up. */
  lossThreshold: 0.02,
  /** Loss above this is congestion as well: the total steps down by `1 - loss / 2`. */
  heavyLoss: 0.1,
  /** Delta parity needed for a loss `p` is `p × lossParityGain`, rounded up to a multiple of `parityStep`. */
  lossParityGain: 4,
  /** Granularity of the delta parity rate. */
  parityStep: 0.05,
  /** Highest delta parity rate; keyframes get the profile's key:delta ratio of it, at most 1. */
  maxDeltaParity: 0.5,
  /** Frames the pilot could not repair raise the delta rate by this and the per-block floor by one. */
  residualParityStep: 0.1,
  /** Highest parity chunks per block the controller asks for. */
  maxParityPerBlock: PARITY_FLOOR + 2,
  /** `fec-down` lowers the delta rate by this and the per-block floor by one. */
  fecDownStep: 0.1,
  /**
   * Clean time before the request may step up (`recover`); time without need and without
   * congestion before each parity step down (`fec-down`); how long a congestion episode lasts
   * after its last signal.
   */
  holdMs: 3000,
  /** Once the link has been clean for `holdMs`, the request steps up at most this often. */
  upIntervalMs: 1000,
  /** A `recover` step multiplies video plus parity by this. */
  upFactor: 1.1,
  /**
   * After backlog or queueing delay at a total, `recover` steps stop at this share of it for
   * `limitMemoryMs`: the link showed where it fills, so the request settles just below instead
   * of climbing into the same queue again (a sawtooth). Then it may probe past it.
   */
  limitMargin: 0.9,
  limitMemoryMs: 30_000,
  /** Queueing delay (smoothed minus minimum RTT) above `max(latencyBudgetMs, minRtt) / 2` steps down by this. */
  latencyFactor: 0.85,
  /** Frames dropped for backlog step down by this. */
  backlogFactor: 0.7,
  /** On latency or backlog, video plus parity is also held to this share of the delivery rate. */
  deliveryShare: 0.9,
  /** One period never cuts video plus parity below this share of what it was. */
  maxCut: 0.5,
  /** Without `minRttMs` in the samples, the minimum RTT is the lowest smoothed RTT over this window. */
  minRttWindowMs: 10_000,
});

/**
 * One period's measurements (about a second), all deltas over the same period, read on one clock.
 * Every value is a finite number, zero or more.
 */
export interface AbrSample {
  /** Smoothed RTT of the path, ms (0 when unknown, e.g. on loopback). */
  readonly smoothedRttMs: number;
  /**
   * Minimum RTT of the path, ms. When absent the controller uses the lowest smoothed RTT of the
   * last {@link ABR_TUNING}`.minRttWindowMs` (quiche exposes no minimum RTT).
   */
  readonly minRttMs?: number;
  /**
   * Delivery rate available to this channel, kbit/s (0 when unknown). With several video channels
   * on one path the caller passes each its share.
   */
  readonly deliveryRateKbps: number;
  /** QUIC packets sent in the period. */
  readonly packetsSent: number;
  /** QUIC packets declared lost in the period. */
  readonly packetsLost: number;
  /** Delta frames the send path dropped for backlog in the period. */
  readonly backlogDrops: number;
  /** The pilot's reported chunk loss over the period, a fraction in [0, 1] (0 without a report). */
  readonly pilotChunkLoss: number;
  /** Frames the pilot reported it could not repair in the period. */
  readonly unrecoveredFrames: number;
}

/** FEC for delta frames and keyframes, as the packer takes it. */
export interface AbrParity {
  readonly delta: ParityPolicy;
  readonly key: ParityPolicy;
}

/** What the controller wants for the next period. */
export interface AbrDecision {
  /** The video request (`video-config.maxBitrateKbps`), kbit/s, within floor and ceiling. */
  readonly bitrateKbps: number;
  /** The channel's ceiling: the profile's, lowered by `max_bitrate_kbps`. */
  readonly ceilingKbps: number;
  /** A quarter of the ceiling. */
  readonly floorKbps: number;
  /** FEC to apply from now on; `minPerBlock` is never below {@link PARITY_FLOOR}. */
  readonly parity: AbrParity;
  /** Estimated parity bitrate of delta frames at the request (payload bytes), kbit/s. */
  readonly parityKbps: number;
  readonly reason: AbrReason;
  /** Frame rate to ask for; non-zero only while the request is at the floor and the link congested. */
  readonly suggestedFps: number;
  /** Whether a `video-config` should go out now, and with which reason; `null` when nothing moved. */
  readonly move: AbrMove | null;
}

/** Construction options of an {@link AbrController}. */
export interface AbrOptions {
  readonly profile: QosProfile;
  /** The channel's frame rate. */
  readonly fps: number;
  /** The channel's `max_bitrate_kbps`: 0 or absent means none. */
  readonly maxBitrateKbps?: number;
  /**
   * First request, kbit/s (clamped into the range); default the highest that fits the ceiling
   * with the profile's clean-link parity. A profile change can carry the current request over.
   */
  readonly startKbps?: number;
}

/** Parity level: delta rate in whole percent and chunks per block. */
interface Level {
  readonly pct: number;
  readonly min: number;
}

const CACHED_LEVELS = 16;

/**
 * The adaptive bitrate controller of one video channel: fed once a second with the path's and
 * the pilot's measurements, it decides the video request, the FEC on delta and key frames, and
 * whether the publisher should hear about it. Pure: time arrives as `now` (ms, never going back).
 *
 * Video plus parity stays inside the ceiling; the request steps down at once on backlog, queueing
 * delay or heavy loss, and up by small steps (one a second at most) only after
 * {@link ABR_TUNING}`.holdMs` of clean link,
 * so it does not flap. Transitions: `docs/adr/0009-qos-controllers.md`.
 */
export class AbrController {
  readonly profile: QosProfile;
  readonly fps: number;
  readonly ceilingKbps: number;
  readonly floorKbps: number;
  readonly #base: Level;
  readonly #keyRatio: number;
  #level: Level;
  #decision: AbrDecision;
  #lastNow: number | undefined;
  /** Last period that was not clean (any signal, or queueing delay in the hold zone). */
  #lastUncleanAt = Number.NEGATIVE_INFINITY;
  /** Last period with a congestion signal (backlog, latency, heavy loss). */
  #lastCongestedAt = Number.NEGATIVE_INFINITY;
  #lastUpAt = Number.NEGATIVE_INFINITY;
  /** Last period in which the current parity was needed. */
  #parityNeededAt = Number.NEGATIVE_INFINITY;
  /** Video plus parity when the last backlog or queueing-delay episode began, and when. */
  #limit: { total: number; at: number } | undefined;
  /** The previous period had backlog or queueing delay. */
  #queuedBefore = false;
  readonly #rttWindow: { at: number; rtt: number }[] = [];
  readonly #totals = new Map<string, Float64Array>();

  constructor(options: AbrOptions) {
    this.profile = options.profile;
    this.fps = checkFps(options.fps);
    const range = channelBitrateRange(options.profile, options.maxBitrateKbps);
    this.ceilingKbps = range.ceilingKbps;
    this.floorKbps = range.floorKbps;
    const { delta, key } = options.profile.parity;
    this.#base = { pct: Math.round(delta.rate * 100), min: Math.max(PARITY_FLOOR, delta.minPerBlock) };
    this.#keyRatio = delta.rate > 0 ? key.rate / delta.rate : 1;
    this.#level = this.#squeeze(this.#base, this.ceilingKbps);
    let start = this.#fit(this.ceilingKbps, this.#level);
    if (options.startKbps !== undefined) {
      if (!Number.isFinite(options.startKbps) || options.startKbps < 0) {
        throw new TypeError(`startKbps must be a bitrate in kbit/s, got ${options.startKbps}`);
      }
      start = Math.min(this.ceilingKbps, Math.max(this.floorKbps, Math.round(options.startKbps)));
      while (start > this.floorKbps && this.#total(start, this.#level) > this.ceilingKbps) start--;
    }
    this.#decision = this.#decide(start, 'steady', 0, null);
  }

  /** The latest decision (before the first period: the start request, `steady`). */
  get decision(): AbrDecision {
    return this.#decision;
  }

  /**
   * One period's measurements at `now` (ms): returns the decision for the next period. Throws
   * `TypeError` for a value that is not a finite number of zero or more, a loss fraction above 1,
   * or a `now` earlier than the previous one.
   */
  handleTick(now: number, sample: AbrSample): AbrDecision {
    checkSample(now, sample, this.#lastNow);
    if (this.#lastNow === undefined) this.#lastUncleanAt = now;
    this.#lastNow = now;
    const t = ABR_TUNING;
    const prev = this.#decision;
    const prevTotal = this.#total(prev.bitrateKbps, this.#level);

    // Signals of the period.
    const quicLoss = sample.packetsSent > 0 ? Math.min(1, sample.packetsLost / sample.packetsSent) : 0;
    const loss = Math.max(quicLoss, sample.pilotChunkLoss);
    const minRtt = this.#minRtt(now, sample);
    const queueing = Math.max(0, sample.smoothedRttMs - minRtt);
    const latencyLimit = Math.max(this.profile.latencyBudgetMs, minRtt) / 2;
    const backlog = sample.backlogDrops > 0;
    const latency = queueing > latencyLimit;
    const heavyLoss = loss > t.heavyLoss;
    const lossy = loss >= t.lossThreshold;
    const residual = sample.unrecoveredFrames > 0;
    const congested = backlog || latency || heavyLoss;
    const clean = !congested && !lossy && !residual && queueing <= latencyLimit / 2;
    if (congested) this.#lastCongestedAt = now;
    if (!clean) this.#lastUncleanAt = now;

    // Parity: up at once to what the loss needs, down one step per hold once it is no longer needed.
    const need = this.#parityNeed(loss, residual);
    let level = this.#level;
    let fecDown = false;
    if (need.pct > level.pct || need.min > level.min) {
      level = { pct: Math.max(need.pct, level.pct), min: Math.max(need.min, level.min) };
      this.#parityNeededAt = now;
    } else if (need.pct === level.pct && need.min === level.min) {
      this.#parityNeededAt = now;
    } else if (now - this.#lastCongestedAt >= t.holdMs && now - this.#parityNeededAt >= t.holdMs) {
      level = {
        pct: Math.max(need.pct, level.pct - Math.round(t.fecDownStep * 100)),
        min: Math.max(need.min, level.min - 1),
      };
      this.#parityNeededAt = now;
      fecDown = true;
    }
    level = this.#squeeze(level, this.ceilingKbps);
    // Parity still above what the link needs gives its bytes back to video first (`fec-down`);
    // only then may the total grow (`recover`).
    const parityToGiveBack = level.pct > need.pct || level.min > need.min;

    // The video request under that parity.
    let bitrate: number;
    let stepped: 'recover' | null = null;
    if (congested) {
      // The total at which the path filled: the first period of an episode, before its own cuts.
      if ((backlog || latency) && !this.#queuedBefore) this.#limit = { total: prevTotal, at: now };
      let target = prevTotal;
      if (backlog) target = Math.min(target, prevTotal * t.backlogFactor);
      if (latency) target = Math.min(target, prevTotal * t.latencyFactor);
      if (heavyLoss) target = Math.min(target, prevTotal * (1 - loss / 2));
      if ((backlog || latency) && sample.deliveryRateKbps > 0) {
        target = Math.min(target, sample.deliveryRateKbps * t.deliveryShare);
      }
      target = Math.max(target, prevTotal * t.maxCut);
      // Parity gives way when even the floor with it would not fit: more bytes feed the congestion.
      level = this.#squeeze(level, target);
      bitrate = Math.min(prev.bitrateKbps, this.#fit(target, level));
    } else if (fecDown) {
      bitrate = Math.max(prev.bitrateKbps, this.#fit(prevTotal, level));
      this.#lastUpAt = now;
    } else if (
      clean &&
      !parityToGiveBack &&
      now - this.#lastUncleanAt >= t.holdMs &&
      now - this.#lastUpAt >= t.upIntervalMs
    ) {
      let target = prevTotal * t.upFactor;
      if (this.#limit !== undefined && now - this.#limit.at < t.limitMemoryMs) {
        target = Math.min(target, this.#limit.total * t.limitMargin);
      }
      bitrate = Math.max(prev.bitrateKbps, this.#fit(target, level));
      if (bitrate > prev.bitrateKbps) {
        stepped = 'recover';
        this.#lastUpAt = now;
      }
    } else {
      bitrate = Math.min(prev.bitrateKbps, this.#fit(prevTotal, level));
    }
    this.#level = level;
    this.#queuedBefore = backlog || latency;

    // A lower frame rate only at the floor, while the congestion episode lasts.
    const episode = now - this.#lastCongestedAt < t.holdMs;
    const atFloor = bitrate === this.floorKbps;
    const suggestedFps =
      atFloor && episode && (prev.suggestedFps > 0 || (prev.bitrateKbps === this.floorKbps && congested))
        ? Math.max(1, Math.floor(this.fps / 2))
        : 0;

    let reason: AbrReason = 'steady';
    if (backlog) reason = 'backlog';
    else if (latency) reason = 'latency';
    else if (heavyLoss) reason = 'loss';
    else if (residual) reason = 'residual';
    else if (fecDown) reason = 'fec-down';
    else if (lossy) reason = 'loss';
    else if (stepped !== null) reason = stepped;

    let move: AbrMove | null = null;
    if (bitrate < prev.bitrateKbps) move = 'abr-down';
    else if (bitrate > prev.bitrateKbps) move = 'abr-up';
    else if (suggestedFps > 0 && prev.suggestedFps === 0) move = 'abr-down';
    else if (suggestedFps === 0 && prev.suggestedFps > 0) move = 'abr-up';

    this.#decision = this.#decide(bitrate, reason, suggestedFps, move);
    return this.#decision;
  }

  #decide(bitrate: number, reason: AbrReason, suggestedFps: number, move: AbrMove | null): AbrDecision {
    const parity = this.#parity(this.#level);
    return Object.freeze({
      bitrateKbps: bitrate,
      ceilingKbps: this.ceilingKbps,
      floorKbps: this.floorKbps,
      parity,
      parityKbps: Math.round(parityKbpsFor(bitrate, this.fps, parity.delta)),
      reason,
      suggestedFps,
      move,
    });
  }

  #parity(level: Level): AbrParity {
    const keyPct = Math.min(100, Math.round(level.pct * this.#keyRatio));
    return Object.freeze({
      delta: Object.freeze({ rate: level.pct / 100, minPerBlock: level.min }),
      key: Object.freeze({ rate: keyPct / 100, minPerBlock: level.min }),
    });
  }

  /** Parity a loss `loss` needs, plus a step above the current one when frames went unrepaired. */
  #parityNeed(loss: number, residual: boolean): Level {
    const t = ABR_TUNING;
    const step = Math.round(t.parityStep * 100);
    const max = Math.round(t.maxDeltaParity * 100);
    const byLoss = Math.ceil((loss * t.lossParityGain * 100 - 1e-9) / step) * step;
    let pct = Math.min(max, Math.max(this.#base.pct, byLoss));
    let min = this.#base.min;
    if (residual) {
      pct = Math.min(max, Math.max(pct, this.#level.pct + Math.round(t.residualParityStep * 100)));
      min = Math.min(t.maxParityPerBlock, Math.max(min, this.#level.min + 1));
    }
    return { pct, min };
  }

  /**
   * `level`, lowered until the floor request plus its parity fits `budget` (never below the
   * profile's clean-link parity: on a ceiling that small the floor wins, see the ADR).
   */
  #squeeze(level: Level, budget: number): Level {
    let { pct, min } = level;
    const step = Math.round(ABR_TUNING.parityStep * 100);
    while (this.#total(this.floorKbps, { pct, min }) > budget) {
      if (pct > this.#base.pct) pct = Math.max(this.#base.pct, pct - step);
      else if (min > this.#base.min) min--;
      else break;
    }
    return { pct, min };
  }

  /** The highest request whose video plus parity fits `budget` and the ceiling; the floor when none does. */
  #fit(budget: number, level: Level): number {
    const limit = Math.min(budget, this.ceilingKbps);
    for (let v = Math.min(this.ceilingKbps, Math.floor(limit)); v > this.floorKbps; v--) {
      if (this.#total(v, level) <= limit) return v;
    }
    return this.floorKbps;
  }

  /** Video plus parity of a whole request of the range under `level`, remembered per level. */
  #total(videoKbps: number, level: Level): number {
    const key = `${level.pct}/${level.min}`;
    let totals = this.#totals.get(key);
    if (totals === undefined) {
      if (this.#totals.size >= CACHED_LEVELS) this.#totals.clear();
      totals = new Float64Array(this.ceilingKbps - this.floorKbps + 1).fill(Number.NaN);
      this.#totals.set(key, totals);
    }
    const i = videoKbps - this.floorKbps;
    let value = totals[i]!;
    if (Number.isNaN(value)) {
      const policy = { rate: level.pct / 100, minPerBlock: level.min };
      value = videoKbps + parityKbpsFor(videoKbps, this.fps, policy);
      totals[i] = value;
    }
    return value;
  }

  #minRtt(now: number, sample: AbrSample): number {
    if (sample.minRttMs !== undefined) return sample.minRttMs;
    // A monotonic queue: the front is the lowest smoothed RTT of the window.
    const window = this.#rttWindow;
    while (window.length > 0 && window[window.length - 1]!.rtt >= sample.smoothedRttMs) window.pop();
    window.push({ at: now, rtt: sample.smoothedRttMs });
    while (window[0]!.at <= now - ABR_TUNING.minRttWindowMs) window.shift();
    return window[0]!.rtt;
  }
}

function checkSample(now: number, sample: AbrSample, lastNow: number | undefined): void {
  checkNow(now, lastNow);
  const fields = [
    'smoothedRttMs',
    'deliveryRateKbps',
    'packetsSent',
    'packetsLost',
    'backlogDrops',
    'pilotChunkLoss',
    'unrecoveredFrames',
  ] as const;
  for (const field of fields) checkMeasure(field, sample[field]);
  if (sample.minRttMs !== undefined) checkMeasure('minRttMs', sample.minRttMs);
  if (sample.pilotChunkLoss > 1) {
    throw new TypeError(`pilotChunkLoss is a fraction in [0, 1], got ${sample.pilotChunkLoss}`);
  }
}

function checkMeasure(field: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`ABR sample field ${field} must be a finite number of 0 or more, got ${value}`);
  }
}

/** The `abr_*` fields of `agent-stats` (specification section 6) for one channel's decision. */
export interface AbrAgentStats {
  readonly abr_bitrate_kbps: number;
  readonly abr_ceiling_kbps: number;
  /** Delta-frame parity rate, a fraction. */
  readonly abr_fec_delta: number;
  /** Keyframe parity rate, a fraction. */
  readonly abr_fec_key: number;
  readonly abr_reason: AbrReason;
}

/** The `agent-stats` fields of a decision. */
export function abrAgentStats(decision: AbrDecision): AbrAgentStats {
  return {
    abr_bitrate_kbps: decision.bitrateKbps,
    abr_ceiling_kbps: decision.ceilingKbps,
    abr_fec_delta: decision.parity.delta.rate,
    abr_fec_key: decision.parity.key.rate,
    abr_reason: decision.reason,
  };
}
