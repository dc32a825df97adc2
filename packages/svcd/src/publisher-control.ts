import { channelBitrateRange, type QosProfile, videoConfigFor as videoConfigFrom } from '@svc/qos';
import type { Logger } from '@svc/runtime';
import { encodePublisherControl, type PublisherControlMessage, type VideoConfigMessage } from '@svc/wire';
import type { UdpAddress, VideoChannelConfig } from './config.js';
import type { SessionEvent, SessionRegistry } from './session-registry.js';
import { UdpSender } from './udp-sender.js';

/** Options of {@link PublisherControl.open}. */
export interface PublisherControlOptions {
  /** `[publisher_control] udp`. */
  readonly address: UdpAddress;
  readonly logger: Logger;
  /** Clock in ms for the log rate limit (default `Date.now`). */
  readonly now?: () => number;
}

/** Counters of a {@link PublisherControl}. */
export interface PublisherControlStats {
  sent: number;
  sendErrors: number;
}

/**
 * The `video-config` a channel gets at start under `profile`: its ceiling (the profile's, or the
 * channel's `max_bitrate_kbps` when that is set and lower), the profile's latency budget, GOP
 * bound and refresh preference, no frame-rate request.
 */
export function videoConfigFor(
  channel: VideoChannelConfig,
  profile: QosProfile,
  reason: VideoConfigMessage['reason'],
): VideoConfigMessage {
  const range = channelBitrateRange(profile, channel.max_bitrate_kbps);
  return videoConfigFrom({
    channel: channel.id,
    profile,
    decision: { ...range, bitrateKbps: range.ceilingKbps, suggestedFps: 0 },
    reason,
  });
}

/**
 * The `[publisher_control]` channel: one UDP socket sending one JSON object per datagram to the
 * publisher, fire and forget (specification section 6). Nothing is ever thrown at the caller for
 * a failed send: errors are counted and logged at most once a minute.
 */
export class PublisherControl {
  readonly address: UdpAddress;
  readonly #sender: UdpSender;

  private constructor(address: UdpAddress, sender: UdpSender) {
    this.address = address;
    this.#sender = sender;
  }

  /** Opens the sending socket. Rejects with `ChannelError` `bind-failed` when none can be bound. */
  static async open(options: PublisherControlOptions): Promise<PublisherControl> {
    const sender = await UdpSender.open({
      address: options.address,
      logger: options.logger,
      what: 'publisher control',
      ...(options.now !== undefined && { now: options.now }),
    });
    options.logger.info({ to: `${options.address.host}:${options.address.port}` }, 'publisher control ready');
    return new PublisherControl(options.address, sender);
  }

  /** Datagrams sent and send errors. */
  get stats(): PublisherControlStats {
    return { ...this.#sender.stats };
  }

  /** Sends one datagram, best effort. */
  send(message: PublisherControlMessage): void {
    this.#sender.send(encodePublisherControl(message));
  }

  /** Sends every video channel's `video-config` with reason `profile` (at start). */
  announceVideoChannels(channels: readonly VideoChannelConfig[], profile: QosProfile): void {
    for (const channel of channels) this.send(videoConfigFor(channel, profile, 'profile'));
  }

  /**
   * Sends a `session` datagram at every session start and end, and when svc-cloud moves the driver
   * slot (`role`: the session's new role); returns the unsubscribe function.
   */
  followSessions(registry: SessionRegistry): () => void {
    const datagram = (state: 'started' | 'ended') => (event: SessionEvent) =>
      this.send({
        type: 'session',
        state,
        session_id: event.session.sessionId,
        role: event.session.role,
        sessions: event.sessions,
      });
    const offStarted = registry.on('started', datagram('started'));
    const offEnded = registry.on('ended', datagram('ended'));
    const offRole = registry.on('role', ({ session }) =>
      this.send({
        type: 'session',
        state: 'role',
        session_id: session.sessionId,
        role: session.role,
        sessions: registry.size,
      }),
    );
    return () => {
      offStarted();
      offEnded();
      offRole();
    };
  }

  /** Lets the datagrams in flight go out, then closes the socket; later sends are ignored. */
  close(): Promise<void> {
    return this.#sender.close();
  }
}
