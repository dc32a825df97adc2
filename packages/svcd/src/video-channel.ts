import { type AccessUnit, type Logger, redactUrl, VideoIngest } from '@svc/media';
import { channelBitrateRange, type QosProfile } from '@svc/qos';
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

/** Frames replayed to a joining session: see {@link VideoChannel.catchUp}. */
export interface CatchUp {
  /** The latest keyframe and, when `live`, every frame after it, packed, in order. */
  readonly frames: readonly PackedFrame[];
  /** Frame id of the last of them: the current picture when `live`. */
  readonly lastFrameId: number;
  /** False when only the keyframe comes: the frames after it exceeded the bound. */
  readonly live: boolean;
}

/** An access unit kept for replay. */
interface KeptUnit {
  readonly data: Uint8Array;
  readonly keyframe: boolean;
  readonly captureTimestampUs: number;
  readonly gopPosition: number;
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
  /** The latest keyframe and the frames after it, while they fit in {@link #keptLimit} bytes. */
  #kept: KeptUnit[] = [];
  #keptBytes = 0;
  /** Frames after the kept keyframe were left out: a replay can only be the keyframe. */
  #keptOverflow = false;
  readonly #keptLimit: number;

  constructor(config: VideoChannelConfig, profile: QosProfile, logger: Logger) {
    this.config = config;
    this.#profile = profile;
    this.#logger = logger;
    this.#keptLimit = catchUpLimitBytes(profile, config.max_bitrate_kbps);
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

  /** Called at every keyframe from the source (a recovery point for the publisher-control ladder). */
  onKeyframe: (() => void) | undefined;

  /** Uses another profile's parity from the next frame on. */
  setProfile(profile: QosProfile): void {
    this.#profile = profile;
  }

  /**
   * The frames a joining session gets at once, so its first painted picture is the current one
   * without waiting for the source's next keyframe: the latest keyframe and the frames after it,
   * packed with frame ids just before the live stream's next one (the session's reassembler sees
   * them, then the live frames, in order). `undefined` before the first keyframe.
   */
  catchUp(): CatchUp | undefined {
    const units = this.#keptOverflow ? this.#kept.slice(0, 1) : this.#kept;
    if (units.length === 0) return undefined;
    const packer = new FramePacker({
      channel: this.config.id,
      firstFrameId: (this.#packer.nextFrameId - units.length + 0x10000) & 0xffff,
    });
    const senderTimestampUs = wrapU32(daemonClockMs() * 1000);
    const frames = units.map((unit) =>
      packer.pack(
        {
          data: unit.data,
          keyframe: unit.keyframe,
          captureTimestampUs: unit.captureTimestampUs,
          gopPosition: unit.gopPosition,
          parity: unit.keyframe ? this.#profile.parity.key : this.#profile.parity.delta,
        },
        senderTimestampUs,
      ),
    );
    return {
      frames,
      lastFrameId: (this.#packer.nextFrameId - 1 + 0x10000) & 0xffff,
      live: !this.#keptOverflow,
    };
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
      this.onKeyframe?.();
    } else {
      this.#gopPosition = Math.min(this.#gopPosition + 1, 0xffff);
    }
    this.#measure(au.data.byteLength, au.receivedAtMs);
    const unit: KeptUnit = {
      data: au.data,
      keyframe: au.keyframe,
      captureTimestampUs: wrapU32(au.captureTimeUs),
      gopPosition: this.#gopPosition,
    };
    this.#keep(unit);
    // Nobody watching: nothing to pack (a replay takes the ids just before the next live frame's).
    if (this.#subscribers.size === 0) return;
    this.#sizeDatagrams();
    const parity = au.keyframe ? this.#profile.parity.key : this.#profile.parity.delta;
    const packed = this.#packer.pack({ ...unit, parity }, wrapU32(daemonClockMs() * 1000));
    for (const subscriber of this.#subscribers) subscriber.handleFrame(packed, au.keyframe);
  }

  /** Keeps `unit` for replay: a keyframe starts over; later frames while they fit the bound. */
  #keep(unit: KeptUnit): void {
    if (unit.keyframe) {
      this.#kept = [unit];
      this.#keptBytes = unit.data.byteLength;
      this.#keptOverflow = false;
      return;
    }
    if (this.#kept.length === 0 || this.#keptOverflow) return;
    if (this.#keptBytes + unit.data.byteLength > this.#keptLimit) {
      // Only the keyframe can still be replayed; free the rest.
      this.#keptOverflow = true;
      this.#kept = this.#kept.slice(0, 1);
      this.#keptBytes = this.#kept[0]!.data.byteLength;
      return;
    }
    this.#kept.push(unit);
    this.#keptBytes += unit.data.byteLength;
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

/** A replay never exceeds what fits a session's send queue with room to spare. */
const CATCH_UP_MAX_BYTES = 900 * 1024;

/**
 * Most bytes replayed to a joining session: two seconds at the channel's ceiling (the profile's,
 * lowered by `max_bitrate_kbps`), at most {@link CATCH_UP_MAX_BYTES}. Beyond that the replay would
 * hold the live picture back longer than waiting for a recovery point.
 */
export function catchUpLimitBytes(profile: QosProfile, maxBitrateKbps: number | undefined): number {
  const { ceilingKbps } = channelBitrateRange(profile, maxBitrateKbps);
  return Math.min(CATCH_UP_MAX_BYTES, (ceilingKbps * 1000 * 2) / 8);
}
