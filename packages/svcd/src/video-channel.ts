import { type AccessUnit, type Logger, redactUrl, VideoIngest } from '@svc/media';
import type { QosProfile } from '@svc/qos';
import {
  CHUNK_HEADER_BYTES,
  DEFAULT_MAX_DATAGRAM_BYTES,
  FramePacker,
  type PackedFrame,
  wrapU32,
} from '@svc/wire';
import { daemonClockMs } from './clock.js';
import type { VideoChannelConfig } from './config.js';

/** Something that takes each packed frame of a channel (one per pilot session). */
export interface FrameSubscriber {
  /** One packed frame; `keyframe` lets a subscriber start at a random access point. */
  handleFrame(frame: PackedFrame, keyframe: boolean): void;
  /**
   * Largest datagram the subscriber's transport carries now. Frames are packed once for every
   * subscriber, in datagrams as large as the smallest of these allows (fewer datagrams per frame
   * means less work per frame at both ends); without it, the packer's default size.
   */
  maxDatagramBytes?(): number;
}

/** Counters of a {@link VideoChannel}. */
export interface VideoChannelStats {
  accessUnits: number;
  keyframes: number;
  bytesIn: number;
  /** Input bitrate over the last second, bits/s. */
  bitrateBps: number;
}

/**
 * One configured video channel: its ingest, a packer on the channel's wire id, and the sessions
 * watching it. Each access unit is packed once (parity from the QoS profile) and handed to every
 * subscriber; the video is never decoded.
 */
export class VideoChannel {
  readonly config: VideoChannelConfig;
  readonly stats: VideoChannelStats = { accessUnits: 0, keyframes: 0, bytesIn: 0, bitrateBps: 0 };
  #packer: FramePacker;
  readonly #subscribers = new Set<FrameSubscriber>();
  readonly #logger: Logger;
  #profile: QosProfile;
  #ingest: VideoIngest | undefined;
  #gopPosition = 0;
  #windowStart = 0;
  #windowBytes = 0;

  constructor(config: VideoChannelConfig, profile: QosProfile, logger: Logger) {
    this.config = config;
    this.#profile = profile;
    this.#logger = logger;
    this.#packer = new FramePacker({ channel: config.id, firstFrameId: Math.floor(Math.random() * 0x10000) });
  }

  /** Starts the ingest; rejects for an input that cannot be opened. */
  async start(env: Readonly<Record<string, string | undefined>>): Promise<void> {
    this.#ingest = await VideoIngest.start({
      input: this.config.input,
      codec: this.config.codec,
      env,
      logger: this.#logger,
      onAccessUnit: (au) => this.#accessUnit(au),
      onStateChange: (state, detail) =>
        this.#logger.info(
          { channel: this.config.name, state, error: detail?.error?.message },
          'video source state',
        ),
      onError: (err) => this.#logger.error({ channel: this.config.name, code: err.code }, err.message),
    });
    this.#logger.info(
      { channel: this.config.name, input: redactUrl(this.config.input), codec: this.config.codec },
      'video channel started',
    );
  }

  /** Uses another profile's parity from the next frame on. */
  setProfile(profile: QosProfile): void {
    this.#profile = profile;
  }

  subscribe(subscriber: FrameSubscriber): () => void {
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }

  async stop(): Promise<void> {
    this.#subscribers.clear();
    await this.#ingest?.stop();
  }

  #accessUnit(au: AccessUnit): void {
    this.stats.accessUnits++;
    this.stats.bytesIn += au.data.byteLength;
    if (au.keyframe) {
      this.stats.keyframes++;
      this.#gopPosition = 0;
    } else {
      this.#gopPosition = Math.min(this.#gopPosition + 1, 0xffff);
    }
    this.#measure(au.data.byteLength, au.receivedAtMs);
    if (this.#subscribers.size === 0) return;
    this.#sizeDatagrams();
    const parity = au.keyframe ? this.#profile.parity.key : this.#profile.parity.delta;
    const packed = this.#packer.pack(
      {
        data: au.data,
        keyframe: au.keyframe,
        captureTimestampUs: wrapU32(au.captureTimeUs),
        gopPosition: this.#gopPosition,
        parity,
      },
      wrapU32(daemonClockMs() * 1000),
    );
    for (const subscriber of this.#subscribers) subscriber.handleFrame(packed, au.keyframe);
  }

  /** Packs in datagrams that every subscriber's transport carries, keeping the frame id sequence. */
  #sizeDatagrams(): void {
    let size = Number.POSITIVE_INFINITY;
    for (const subscriber of this.#subscribers) {
      const max = subscriber.maxDatagramBytes?.() ?? DEFAULT_MAX_DATAGRAM_BYTES;
      // A transport not ready yet (0) does not shrink the datagrams of the others.
      if (max > CHUNK_HEADER_BYTES) size = Math.min(size, max);
    }
    if (!Number.isFinite(size)) size = DEFAULT_MAX_DATAGRAM_BYTES;
    size = Math.min(size, 0xffff);
    if (size === this.#packer.maxDatagramBytes) return;
    this.#packer = new FramePacker({
      channel: this.config.id,
      maxDatagramBytes: size,
      firstFrameId: this.#packer.nextFrameId,
    });
  }

  #measure(bytes: number, nowMs: number): void {
    this.#windowBytes += bytes;
    const elapsed = nowMs - this.#windowStart;
    if (elapsed >= 1000) {
      this.stats.bitrateBps = (this.#windowBytes * 8 * 1000) / elapsed;
      this.#windowStart = nowMs;
      this.#windowBytes = 0;
    }
  }
}
