import {
  type AbrAgentStats,
  AbrController,
  type AbrDecision,
  type AbrSample,
  abrAgentStats,
  LayerSelector,
  type QosProfile,
  videoConfigFor,
} from '@svc/qos';
import type { Logger } from '@svc/runtime';
import type { ControlRole, PublisherControlMessage } from '@svc/wire';
import type { VideoChannel } from './video-channel.js';

/** One watching session as the rate controller of a channel sees it. */
export interface SessionQosProbe {
  /** The session's role: a driver's link governs the channel's request. */
  readonly role: ControlRole;
  /** The session's measurements for the channel since the previous call, at `now` (ms). */
  qosSample(channelId: number, now: number): AbrSample;
}

/** Options of {@link ChannelQos}. */
export interface ChannelQosOptions {
  readonly channel: VideoChannel;
  /** The profile at start (`[agent] qos_profile`). */
  readonly profile: QosProfile;
  /** Sends one publisher-control datagram, best effort; absent without `[publisher_control]`. */
  readonly send?: (message: PublisherControlMessage) => void;
  readonly logger: Logger;
  /** Monotonic clock, ms (default `performance.now`); `tick` gets the same clock. */
  readonly now?: () => number;
}

/**
 * The closed loop of one video channel: an {@link AbrController} fed once a second with the
 * measurements of the sessions watching it. Its parity goes to the channel's packer at once; its
 * request reaches the publisher as a `video-config` (`profile` at start, `pilot-request` when the
 * driver changes the profile, `abr-down`/`abr-up` when the controller moves).
 *
 * The publisher has one encoder for every pilot, so one sample decides per period: the driver's
 * when a driver watches (the picture the robot is driven by must stay live; an observer on a worse
 * link loses frames to admission instead of degrading it), otherwise the most troubled observer's.
 * Without a session the controller is not fed and keeps its request.
 *
 * On a channel with simulcast layers the request also picks the layer to forward (a
 * {@link LayerSelector}: down at once, up after sustained headroom), switched at that layer's next
 * keyframe.
 */
export class ChannelQos {
  readonly channel: VideoChannel;
  readonly #options: ChannelQosOptions;
  readonly #probes = new Set<SessionQosProbe>();
  #profile: QosProfile;
  #abr: AbrController;
  readonly #layers: LayerSelector | undefined;
  readonly #now: () => number;

  constructor(options: ChannelQosOptions) {
    this.#options = options;
    this.channel = options.channel;
    this.#profile = options.profile;
    this.#now = options.now ?? (() => performance.now());
    this.#abr = this.#controller(options.profile);
    this.channel.setParity(this.#abr.decision.parity);
    const { layers } = this.channel;
    if (layers.length > 0) {
      this.#layers = new LayerSelector({ layers });
      this.#chooseLayer(this.#now());
    }
  }

  /** The profile in force. */
  get profile(): QosProfile {
    return this.#profile;
  }

  /** The latest decision. */
  get decision(): AbrDecision {
    return this.#abr.decision;
  }

  /** The `abr_*` fields of `agent-stats`. */
  agentStats(): AbrAgentStats {
    return abrAgentStats(this.#abr.decision);
  }

  /** Sends the start `video-config` (reason `profile`). */
  announce(): void {
    this.#videoConfig('profile');
  }

  /** A session starts watching; returns the function that stops it. */
  attach(probe: SessionQosProbe): () => void {
    this.#probes.add(probe);
    return () => this.#probes.delete(probe);
  }

  /** One period (about a second) at `now` (ms, monotonic). */
  tick(now: number): void {
    const samples = [...this.#probes].map((probe) => ({
      role: probe.role,
      sample: probe.qosSample(this.channel.config.id, now),
    }));
    if (samples.length === 0) return;
    const drivers = samples.filter((s) => s.role === 'driver');
    const sample = worst((drivers.length > 0 ? drivers : samples).map((s) => s.sample));
    const before = this.#abr.decision;
    const decision = this.#abr.handleTick(now, sample);
    this.channel.setParity(decision.parity);
    this.#chooseLayer(now);
    if (decision.move !== null) {
      this.#options.logger.info(
        {
          channel: this.channel.config.name,
          from_kbps: before.bitrateKbps,
          to_kbps: decision.bitrateKbps,
          fec_delta: decision.parity.delta.rate,
          reason: decision.reason,
          suggested_fps: decision.suggestedFps,
        },
        decision.move === 'abr-down' ? 'video request lowered' : 'video request raised',
      );
      this.#videoConfig(decision.move);
    }
  }

  /**
   * The driver chose another profile: a controller in its range, starting from the current
   * request where the new range allows, the profile's parity, and a `video-config` (`pilot-request`).
   */
  setProfile(profile: QosProfile): void {
    if (profile.name === this.#profile.name) return;
    const current = this.#abr.decision.bitrateKbps;
    this.#profile = profile;
    this.#abr = this.#controller(profile, current);
    this.channel.setProfile(profile);
    this.channel.setParity(this.#abr.decision.parity);
    this.#videoConfig('pilot-request');
    this.#chooseLayer(this.#now());
  }

  /** The layer the request allows; a change of layer is asked of the channel. */
  #chooseLayer(now: number): void {
    if (this.#layers === undefined) return;
    const index = this.#layers.handleBitrate(now, this.#abr.decision.bitrateKbps);
    const target = this.channel.targetLayerIndex;
    if (index === target) return;
    this.channel.requestLayer(index, index < target ? 'down' : 'up');
  }

  #controller(profile: QosProfile, startKbps?: number): AbrController {
    const { fps, max_bitrate_kbps } = this.channel.config;
    return new AbrController({
      profile,
      fps,
      maxBitrateKbps: max_bitrate_kbps,
      ...(startKbps !== undefined && { startKbps }),
    });
  }

  #videoConfig(reason: 'profile' | 'pilot-request' | 'abr-down' | 'abr-up'): void {
    this.#options.send?.(
      videoConfigFor({
        channel: this.channel.config.id,
        profile: this.#profile,
        decision: this.#abr.decision,
        reason,
      }),
    );
  }
}

/**
 * The sample of the most troubled session: the most frames dropped for backlog, then the most
 * frames it could not repair, then the highest loss, then the longest queueing delay.
 */
function worst(samples: readonly AbrSample[]): AbrSample {
  let chosen = samples[0]!;
  for (const sample of samples.slice(1)) if (moreTroubled(sample, chosen)) chosen = sample;
  return chosen;
}

function moreTroubled(a: AbrSample, b: AbrSample): boolean {
  const ka = trouble(a);
  const kb = trouble(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! > kb[i]!;
  return false;
}

function trouble(s: AbrSample): number[] {
  const loss = Math.max(s.packetsSent > 0 ? s.packetsLost / s.packetsSent : 0, s.pilotChunkLoss);
  const queueing = s.smoothedRttMs - (s.minRttMs ?? s.smoothedRttMs);
  return [s.backlogDrops, s.unrecoveredFrames, loss, queueing];
}
