import { VIDEO_CONFIG_REASONS, type VideoConfigMessage } from '@svc/wire';
import type { AbrDecision } from './abr.js';
import type { QosProfile } from './profiles.js';

/** Why a `video-config` is sent: `profile`, `pilot-request`, `abr-down` or `abr-up`. */
export type VideoConfigReason = (typeof VIDEO_CONFIG_REASONS)[number];

/** What {@link videoConfigFor} builds a `video-config` from. */
export interface VideoConfigInput {
  /** The channel id, 1..255. */
  readonly channel: number;
  readonly profile: QosProfile;
  /** The controller's decision (its request, range and frame-rate suggestion). */
  readonly decision: Pick<AbrDecision, 'bitrateKbps' | 'ceilingKbps' | 'floorKbps' | 'suggestedFps'>;
  /** `profile` at start, `pilot-request` on the driver's profile change, else the decision's `move`. */
  readonly reason: VideoConfigReason;
}

/**
 * The `video-config` datagram (specification section 6) for a channel under `profile` and the
 * controller's decision, ready for `encodePublisherControl`: `maxBitrateKbps` is the request, and
 * `latencyBudgetMs`, `maxGopMs` and `preferIntraRefresh` are the profile's. Throws `TypeError`
 * when the request lies outside the decision's floor and ceiling (the rules forbid sending it).
 */
export function videoConfigFor(input: VideoConfigInput): VideoConfigMessage {
  const { channel, profile, decision, reason } = input;
  if (!Number.isInteger(channel) || channel < 1 || channel > 255) {
    throw new TypeError(`video-config channel must be an integer in 1..255, got ${channel}`);
  }
  if (!VIDEO_CONFIG_REASONS.includes(reason)) {
    throw new TypeError(
      `video-config reason must be one of ${VIDEO_CONFIG_REASONS.join(', ')}, got ${reason}`,
    );
  }
  const { bitrateKbps, ceilingKbps, floorKbps, suggestedFps } = decision;
  if (!Number.isInteger(bitrateKbps) || bitrateKbps < floorKbps || bitrateKbps > ceilingKbps) {
    throw new TypeError(
      `video-config request ${bitrateKbps} kbit/s must be a whole number within the floor ${floorKbps} and the ceiling ${ceilingKbps}`,
    );
  }
  if (!Number.isInteger(suggestedFps) || suggestedFps < 0) {
    throw new TypeError(`video-config suggestedFps must be a whole number of 0 or more, got ${suggestedFps}`);
  }
  return {
    type: 'video-config',
    channel,
    profile: profile.name,
    maxBitrateKbps: bitrateKbps,
    latencyBudgetMs: profile.latencyBudgetMs,
    maxGopMs: profile.maxGopMs,
    preferIntraRefresh: profile.preferIntraRefresh,
    suggestedFps,
    reason,
  };
}
