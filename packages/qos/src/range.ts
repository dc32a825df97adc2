import type { QosProfile } from './profiles.js';

/** The bitrate range one video channel's controller works in, kbit/s. */
export interface BitrateRange {
  /** The profile's ceiling, or the channel's `max_bitrate_kbps` when that is set and lower. */
  readonly ceilingKbps: number;
  /** A quarter of the ceiling, rounded up: no request goes below it (specification section 8). */
  readonly floorKbps: number;
}

/**
 * The range of a channel under `profile`. `maxBitrateKbps` is the channel's `max_bitrate_kbps`:
 * `0` or `undefined` means the encoder follows any request; a value at or above the profile
 * ceiling changes nothing. Throws `TypeError` for a negative or fractional value.
 */
export function channelBitrateRange(profile: QosProfile, maxBitrateKbps?: number): BitrateRange {
  const cap = maxBitrateKbps ?? 0;
  if (!Number.isInteger(cap) || cap < 0) {
    throw new TypeError(
      `max_bitrate_kbps must be a whole number of kbit/s, 0 for no limit; got ${maxBitrateKbps}`,
    );
  }
  const ceilingKbps = cap > 0 ? Math.min(profile.ceilingKbps, cap) : profile.ceilingKbps;
  return { ceilingKbps, floorKbps: Math.ceil(ceilingKbps / 4) };
}

/** Throws `TypeError` unless `fps` is a whole frame rate of at least 1. */
export function checkFps(fps: number): number {
  if (!Number.isInteger(fps) || fps < 1) {
    throw new TypeError(`fps must be a whole frame rate of at least 1, got ${fps}`);
  }
  return fps;
}
