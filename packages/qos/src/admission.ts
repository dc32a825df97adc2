import { checkNow } from './clock.js';
import type { QosProfile } from './profiles.js';
import { channelBitrateRange, checkFps } from './range.js';

/** What the send path does with a frame. */
export type AdmissionVerdict = 'send' | 'drop';

/** The part of a frame admission looks at. */
export interface FrameToAdmit {
  readonly keyframe: boolean;
  /** Size of the frame, bytes. */
  readonly bytes: number;
}

/** Construction options of a {@link DeltaAdmission}. */
export interface DeltaAdmissionOptions {
  readonly profile: QosProfile;
  /** The channel's frame rate. */
  readonly fps: number;
  /** The channel's `max_bitrate_kbps` (0 or absent: none); it lowers the ceiling and so the threshold. */
  readonly maxBitrateKbps?: number;
}

/** Counters of a {@link DeltaAdmission}. */
export interface DeltaAdmissionStats {
  /** Frames admitted (keyframes included). */
  readonly sent: number;
  /** Delta frames dropped because the backlog exceeded the threshold (each starts a wait). */
  readonly backlogDrops: number;
  /** Delta frames dropped while waiting for a recovery point. */
  readonly waitDrops: number;
  /** Waits ended by a keyframe. */
  readonly waitsEndedByKeyframe: number;
  /** Waits ended by `recoveryGraceMs` expiring. */
  readonly waitsEndedByGrace: number;
  /** Keyframes sent although the backlog exceeded the threshold. */
  readonly keyframesOverThreshold: number;
}

/**
 * Admission of frames into one session's send path for one channel (specification section 3,
 * "Delta frames"): a delta frame is dropped when the backlog exceeds the profile's threshold
 * (`backlogFrames` frames at the ceiling and the channel's frame rate) instead of being queued
 * behind it; after such a drop delta frames stop, since they would not decode, until a keyframe
 * is admitted or `recoveryGraceMs` has passed. A keyframe is never dropped for backlog. Pure:
 * every call takes `now` (ms, never going back).
 */
export class DeltaAdmission {
  /** Backlog above which a delta frame is dropped, bytes. */
  readonly thresholdBytes: number;
  readonly recoveryGraceMs: number;
  #waitingSince: number | undefined;
  #waitStarted = false;
  #lastNow: number | undefined;
  #stats = {
    sent: 0,
    backlogDrops: 0,
    waitDrops: 0,
    waitsEndedByKeyframe: 0,
    waitsEndedByGrace: 0,
    keyframesOverThreshold: 0,
  };

  constructor(options: DeltaAdmissionOptions) {
    const fps = checkFps(options.fps);
    const { ceilingKbps } = channelBitrateRange(options.profile, options.maxBitrateKbps);
    this.thresholdBytes = (options.profile.backlogFrames * ceilingKbps * 1000) / 8 / fps;
    this.recoveryGraceMs = options.profile.recoveryGraceMs;
  }

  /** Delta frames are stopped, waiting for a recovery point (as of the last {@link admit}). */
  get waiting(): boolean {
    return this.#waitingSince !== undefined;
  }

  /**
   * The last {@link admit} dropped a delta frame for backlog and so started a wait: the caller
   * should tell the recovery ladder (`handleLoss`) so a recovery point is asked for.
   */
  get waitStarted(): boolean {
    return this.#waitStarted;
  }

  /** Counters since construction. */
  get stats(): DeltaAdmissionStats {
    return { ...this.#stats };
  }

  /**
   * Whether `frame` goes out, given `backlogBytes` already queued for the session's transport at
   * `now`. Throws `TypeError` for a size or backlog that is not a finite number of zero or more.
   */
  admit(frame: FrameToAdmit, backlogBytes: number, now: number): AdmissionVerdict {
    checkNow(now, this.#lastNow);
    this.#lastNow = now;
    if (!Number.isFinite(frame.bytes) || frame.bytes < 0) {
      throw new TypeError(`frame bytes must be a finite number of 0 or more, got ${frame.bytes}`);
    }
    if (!Number.isFinite(backlogBytes) || backlogBytes < 0) {
      throw new TypeError(`backlogBytes must be a finite number of 0 or more, got ${backlogBytes}`);
    }
    this.#waitStarted = false;
    const over = backlogBytes > this.thresholdBytes;
    if (frame.keyframe) {
      if (this.#waitingSince !== undefined) {
        this.#waitingSince = undefined;
        this.#stats.waitsEndedByKeyframe++;
      }
      if (over) this.#stats.keyframesOverThreshold++;
      this.#stats.sent++;
      return 'send';
    }
    if (this.#waitingSince !== undefined) {
      if (now - this.#waitingSince < this.recoveryGraceMs) {
        this.#stats.waitDrops++;
        return 'drop';
      }
      this.#waitingSince = undefined;
      this.#stats.waitsEndedByGrace++;
    }
    if (over) {
      this.#waitingSince = now;
      this.#waitStarted = true;
      this.#stats.backlogDrops++;
      return 'drop';
    }
    this.#stats.sent++;
    return 'send';
  }
}
