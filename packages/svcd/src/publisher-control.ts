import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from '@svc/media';
import type { QosProfile } from '@svc/qos';
import { encodePublisherControl, type PublisherControlMessage, type VideoConfigMessage } from '@svc/wire';
import { drainSends } from './command-channel.js';
import type { UdpAddress, VideoChannelConfig } from './config.js';
import { ChannelError } from './sensor-channel.js';
import type { SessionEvent, SessionRegistry } from './session-registry.js';

/** Send errors are logged at most this often. */
const SEND_ERROR_LOG_INTERVAL_MS = 60_000;

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
 * The `video-config` a channel gets under `profile`: the profile's ceiling, or the channel's
 * `max_bitrate_kbps` when that is set and lower (the encoder cannot do more), and the profile's
 * latency budget, GOP bound and refresh preference. `suggestedFps` is 0: no frame-rate request.
 */
export function videoConfigFor(
  channel: VideoChannelConfig,
  profile: QosProfile,
  reason: VideoConfigMessage['reason'],
): VideoConfigMessage {
  const ceiling =
    channel.max_bitrate_kbps > 0
      ? Math.min(profile.ceilingKbps, channel.max_bitrate_kbps)
      : profile.ceilingKbps;
  return {
    type: 'video-config',
    channel: channel.id,
    profile: profile.name,
    maxBitrateKbps: ceiling,
    latencyBudgetMs: profile.latencyBudgetMs,
    maxGopMs: profile.maxGopMs,
    preferIntraRefresh: profile.preferIntraRefresh,
    suggestedFps: 0,
    reason,
  };
}

/**
 * The `[publisher_control]` channel: one UDP socket sending one JSON object per datagram to the
 * publisher, fire and forget (specification section 6). Nothing is ever thrown at the caller for
 * a failed send: errors are counted and logged at most once a minute.
 */
export class PublisherControl {
  readonly address: UdpAddress;
  readonly stats: PublisherControlStats = { sent: 0, sendErrors: 0 };
  readonly #socket: Socket;
  readonly #logger: Logger;
  readonly #now: () => number;
  #lastErrorLogMs = Number.NEGATIVE_INFINITY;
  #closed = false;
  /** Sends not yet completed, and who waits for them to drain. */
  #inFlight = 0;
  #drained: (() => void) | undefined;

  private constructor(options: PublisherControlOptions, socket: Socket) {
    this.address = options.address;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#socket = socket;
    socket.on('error', (err) => this.#failed(err));
  }

  /** Opens the sending socket. Rejects with {@link ChannelError} when no socket can be bound. */
  static async open(options: PublisherControlOptions): Promise<PublisherControl> {
    const socket = createSocket(options.address.host.includes(':') ? 'udp6' : 'udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(0, () => {
          socket.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      socket.close();
      throw new ChannelError(
        'bind-failed',
        `publisher control: cannot open a UDP socket to send to ${options.address.host}:${options.address.port}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    socket.unref();
    options.logger.info({ to: `${options.address.host}:${options.address.port}` }, 'publisher control ready');
    return new PublisherControl(options, socket);
  }

  /** Sends one datagram, best effort. */
  send(message: PublisherControlMessage): void {
    if (this.#closed) return;
    const bytes = encodePublisherControl(message);
    this.#inFlight++;
    try {
      this.#socket.send(bytes, this.address.port, this.address.host, (err) => {
        if (err) this.#failed(err);
        else this.stats.sent++;
        this.#settled();
      });
    } catch (err) {
      this.#failed(err as Error);
      this.#settled();
    }
  }

  /** Sends every video channel's `video-config` with reason `profile` (at start). */
  announceVideoChannels(channels: readonly VideoChannelConfig[], profile: QosProfile): void {
    for (const channel of channels) this.send(videoConfigFor(channel, profile, 'profile'));
  }

  /** Sends a `session` datagram at every session start and end; returns the unsubscribe function. */
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
    return () => {
      offStarted();
      offEnded();
    };
  }

  /** Closes the socket; later sends are ignored. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await drainSends(this.#inFlight, (resolve) => {
      this.#drained = resolve;
    });
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }

  #settled(): void {
    if (--this.#inFlight === 0) this.#drained?.();
  }

  #failed(err: Error): void {
    this.stats.sendErrors++;
    const now = this.#now();
    if (now - this.#lastErrorLogMs < SEND_ERROR_LOG_INTERVAL_MS) return;
    this.#lastErrorLogMs = now;
    this.#logger.warn(
      { to: `${this.address.host}:${this.address.port}`, err: err.message, errors: this.stats.sendErrors },
      'cannot send a publisher-control datagram (logged at most once a minute)',
    );
  }
}
