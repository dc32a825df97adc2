import { type AccessUnit, type CaptureTime, type SourceState, VideoIngest } from '@svc/media';
import { channelBitrateRange, type QosProfile } from '@svc/qos';
import { type Logger, redactUrl, safeCall } from '@svc/runtime';
import {
  CHUNK_HEADER_BYTES,
  captureClockFromMs,
  DEFAULT_MAX_DATAGRAM_BYTES,
  FramePacker,
  type PackedFrame,
  type ParityPolicy,
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
  /** When it was captured, on the daemon clock: see `FrameToPack.captureClockUs`. */
  readonly captureClockUs: number;
  readonly gopPosition: number;
}

/**
 * Whether a video channel's camera is usable (the `source` control message): `live` while
 * pictures arrive, `no-data` when its port is listened on or its RTSP session plays but no picture
 * came for the larger of 1 s and three frame intervals (a wrong port, a stopped camera),
 * `offline` when the daemon cannot read it (RTSP refused, unreachable, closed, login refused).
 */
export interface VideoSourceStatus {
  readonly state: SourceState;
  /** What is wrong and what to do, for a person; no credentials. Absent while `live`. */
  readonly reason?: string;
  /** When this state (or reason) began, daemon clock ms (`daemonClockMs`). */
  readonly sinceMs: number;
}

/** The shortest silence that makes a source `no-data`, ms (spec: max(1000 ms, 3 frame intervals)). */
const MIN_NO_DATA_MS = 1000;

/** Counters of one simulcast layer of a {@link VideoChannel}. */
export interface VideoLayerStats {
  readonly name: string;
  accessUnits: number;
  keyframes: number;
  bytesIn: number;
  /** The layer's input bitrate over the last second, bits/s (measured whether forwarded or not). */
  bitrateBps: number;
}

/** Counters of a {@link VideoChannel}. */
export interface VideoChannelStats {
  /** Access units taken in, from every input (all layers). */
  accessUnits: number;
  keyframes: number;
  bytesIn: number;
  /** Input bitrate over the last second, bits/s: the forwarded layer's. */
  bitrateBps: number;
  /** Each layer's counters in declared order; empty without `[[channel.layer]]`. */
  readonly layers: readonly VideoLayerStats[];
}

/** A simulcast layer as the channel's API shows it: `[[channel.layer]]` `name`, `min_bitrate_kbps`. */
export interface VideoLayer {
  readonly name: string;
  /** The bitrate above which the layer may be used, kbit/s. */
  readonly minBitrateKbps: number;
}

/** Direction of a layer switch: the `layer` publisher-control datagram's `reason`. */
export type LayerSwitchReason = 'up' | 'down';

/** One input of a channel: the channel's `input`, or one `[[channel.layer]]`. */
interface Source {
  readonly name: string;
  readonly input: string;
  readonly stats: VideoLayerStats;
  ingest: VideoIngest | undefined;
  gopPosition: number;
  /**
   * Added to this input's capture times (µs) while it is forwarded, so the channel's capture
   * timeline runs on across a switch instead of jumping to another encoder's RTP clock.
   */
  captureOffsetUs: number;
  windowStart: number;
  windowBytes: number;
}

/**
 * One configured video channel: its ingest, a packer on the channel's wire id, and the sessions
 * watching it. Each access unit is packed once (parity from the rate controller) and handed to every
 * subscriber; the video is never decoded.
 *
 * With `[[channel.layer]]` (simulcast) every layer is ingested and exactly one is forwarded: the
 * others' frames are counted and dropped, never packed. A switch ({@link VideoChannel.requestLayer})
 * takes effect at the target layer's next keyframe (spec section 6, rule 7); frame ids, GOP
 * positions and capture times run on as one stream, so a pilot sees a keyframe, not a gap.
 */
export class VideoChannel {
  readonly config: VideoChannelConfig;
  readonly stats: VideoChannelStats;
  #packer: FramePacker;
  readonly #subscribers = new Set<FrameSubscriber>();
  readonly #logger: Logger;
  /** Parity of delta frames and keyframes: the profile's, then the rate controller's. */
  #parity: { readonly delta: ParityPolicy; readonly key: ParityPolicy };
  /** The inputs: one per layer, or the channel's single input. */
  readonly #sources: readonly Source[];
  readonly #layers: readonly VideoLayer[];
  /** Index of the source forwarded now; `undefined` until a layer's first keyframe. */
  #forwarded: number | undefined;
  /** Index of the source asked for: forwarded from its next keyframe on. */
  #target: number;
  /** Capture time (µs, on the channel's timeline) and arrival (ms) of the last forwarded frame. */
  #lastForwarded: { readonly captureUs: number; readonly atMs: number } | undefined;
  /** The latest keyframe and the frames after it, while they fit in {@link #keptLimit} bytes. */
  #kept: KeptUnit[] = [];
  #keptBytes = 0;
  /**
   * The bytes of the kept units, back to back from the keyframe: the ingest lends each access
   * unit only while it is handled, and one buffer reused from keyframe to keyframe keeps them
   * without an allocation per frame. Allocated at the first keyframe.
   */
  #keptMemory: Uint8Array | undefined;
  /** Frames after the kept keyframe were left out: a replay can only be the keyframe. */
  #keptOverflow = false;
  #keptLimit: number;
  #sourceStatus: VideoSourceStatus;
  readonly #sourceListeners = new Set<(status: VideoSourceStatus) => void>();

  constructor(config: VideoChannelConfig, profile: QosProfile, logger: Logger) {
    this.config = config;
    this.#parity = profile.parity;
    this.#logger = logger;
    this.#keptLimit = catchUpLimitBytes(profile, config.max_bitrate_kbps);
    this.#packer = new FramePacker({ channel: config.id, firstFrameId: Math.floor(Math.random() * 0x10000) });
    const source = (name: string, input: string): Source => ({
      name,
      input,
      stats: { name, accessUnits: 0, keyframes: 0, bytesIn: 0, bitrateBps: 0 },
      ingest: undefined,
      gopPosition: 0,
      captureOffsetUs: 0,
      windowStart: 0,
      windowBytes: 0,
    });
    if (config.layer.length > 0) {
      this.#sources = config.layer.map((layer) => source(layer.name, layer.input));
      this.#layers = Object.freeze(
        config.layer.map((layer) =>
          Object.freeze({ name: layer.name, minBitrateKbps: layer.min_bitrate_kbps }),
        ),
      );
      // The highest layer until told otherwise; the first layer with a keyframe is shown meanwhile.
      this.#target = this.#sources.length - 1;
      this.#forwarded = undefined;
    } else {
      if (config.input === undefined)
        throw new TypeError(`video channel "${config.name}" has neither input nor [[channel.layer]]`);
      this.#sources = [source(config.name, config.input)];
      this.#layers = Object.freeze([]);
      this.#target = 0;
      this.#forwarded = 0;
    }
    this.stats = {
      accessUnits: 0,
      keyframes: 0,
      bytesIn: 0,
      bitrateBps: 0,
      layers: config.layer.length > 0 ? this.#sources.map((s) => s.stats) : [],
    };
    this.#sourceStatus = {
      state: 'no-data',
      reason: `video channel "${config.name}" has not started`,
      sinceMs: daemonClockMs(),
    };
  }

  /**
   * Whether the camera is usable now, and if not why (of the layer forwarded, or about to be, on a
   * channel with simulcast layers).
   */
  get sourceStatus(): VideoSourceStatus {
    return this.#sourceStatus;
  }

  /**
   * Calls `listener` at every change of {@link VideoChannel.sourceStatus} (state or reason); what
   * it throws is logged. Returns the function that removes it.
   */
  onSourceStatus(listener: (status: VideoSourceStatus) => void): () => void {
    this.#sourceListeners.add(listener);
    return () => this.#sourceListeners.delete(listener);
  }

  /** Starts every input's ingest; rejects (with all of them stopped) for an input that cannot be opened. */
  async start(env: Readonly<Record<string, string | undefined>>): Promise<void> {
    const layered = this.#layers.length > 0;
    try {
      for (const [index, source] of this.#sources.entries()) {
        const where = layered
          ? { channel: this.config.name, layer: source.name }
          : { channel: this.config.name };
        source.ingest = await VideoIngest.start({
          input: source.input,
          codec: this.config.codec,
          env,
          logger: this.#logger,
          // Each access unit is packed (copied) and kept (copied) before the callback returns.
          lendAccessUnits: true,
          noDataAfterMs: Math.max(MIN_NO_DATA_MS, 3000 / this.config.fps),
          onAccessUnit: (au, capture) => this.#accessUnit(index, au, capture),
          onSourceStatus: () => this.#sourceChanged(),
          onStateChange: (state, detail) =>
            this.#logger.info({ ...where, state, error: detail?.error?.message }, 'video source state'),
          onError: (err) => this.#logger.error({ ...where, code: err.code }, err.message),
        });
      }
    } catch (err) {
      await Promise.all(this.#sources.map((source) => source.ingest?.stop()));
      throw err;
    }
    this.#sourceChanged();
    this.#logger.info(
      {
        channel: this.config.name,
        codec: this.config.codec,
        ...(layered
          ? { layers: this.#sources.map((s) => `${s.name} <- ${redactUrl(s.input)}`) }
          : { input: redactUrl(this.#sources[0]!.input) }),
      },
      'video channel started',
    );
  }

  /** The simulcast layers in declared order, lowest first; empty without `[[channel.layer]]`. */
  get layers(): readonly VideoLayer[] {
    return this.#layers;
  }

  /**
   * Index of the layer forwarded now (0 without layers). Before any layer's first keyframe
   * nothing is forwarded yet: then the target, {@link VideoChannel.targetLayerIndex}.
   */
  get layerIndex(): number {
    return this.#forwarded ?? this.#target;
  }

  /**
   * Index of the layer asked for (0 without layers): the same as {@link VideoChannel.layerIndex}
   * unless a switch waits for this layer's next keyframe. The highest layer at start.
   */
  get targetLayerIndex(): number {
    return this.#target;
  }

  /**
   * Forwards layer `index` (declared order) from its next keyframe on; until then the current
   * layer goes on. `reason` is the direction the caller decided (`up` or `down`), passed on to
   * {@link VideoChannel.onLayerRequest}, which runs once per change of target (so the publisher
   * can force an IDR on that layer). Asking for the forwarded layer cancels a pending switch.
   *
   * @throws TypeError on a channel without layers, or for an index that is not one of its layers.
   */
  requestLayer(index: number, reason: LayerSwitchReason): void {
    const count = this.#layers.length;
    if (count === 0)
      throw new TypeError(`video channel "${this.config.name}" has no [[channel.layer]] to switch between`);
    if (!Number.isInteger(index) || index < 0 || index >= count)
      throw new TypeError(
        `layer index must be an integer in 0..${count - 1} on video channel "${this.config.name}", got ${index}`,
      );
    if (reason !== 'up' && reason !== 'down')
      throw new TypeError(`reason must be 'up' or 'down', got ${String(reason)}`);
    if (index === this.#target) return;
    this.#target = index;
    this.#notify('onLayerRequest', () => this.onLayerRequest?.(index, this.#layers[index]!.name, reason));
  }

  /**
   * The target layer changed ({@link VideoChannel.requestLayer}): the daemon sends the `layer`
   * publisher-control datagram. Also when a request returns to the forwarded layer (a cancelled
   * switch), so the publisher's idea of the relayed layer stays right.
   */
  onLayerRequest: ((index: number, name: string, reason: LayerSwitchReason) => void) | undefined;

  /** The forwarded layer changed (at the target layer's keyframe); not called for the first one. */
  onLayerSwitched: ((index: number, name: string) => void) | undefined;

  /**
   * Called at every keyframe forwarded (a recovery point for the publisher-control ladder); the
   * keyframes of layers not forwarded do not count.
   */
  onKeyframe: (() => void) | undefined;

  /** Another profile from the next frame on: its clean-link parity and its replay bound. */
  setProfile(profile: QosProfile): void {
    this.#parity = profile.parity;
    this.#keptLimit = catchUpLimitBytes(profile, this.config.max_bitrate_kbps);
  }

  /** Uses this parity (the rate controller's choice) from the next frame on. */
  setParity(parity: { readonly delta: ParityPolicy; readonly key: ParityPolicy }): void {
    this.#parity = parity;
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
          captureClockUs: unit.captureClockUs,
          gopPosition: unit.gopPosition,
          parity: unit.keyframe ? this.#parity.key : this.#parity.delta,
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
    this.#sourceListeners.clear();
    await Promise.all(this.#sources.map((source) => source.ingest?.stop()));
  }

  /**
   * A source's status changed, or another source is forwarded: the channel's status follows the
   * source forwarded (or, before the first, the one asked for), its time on the daemon clock.
   */
  #sourceChanged(): void {
    const status = this.#sources[this.#forwarded ?? this.#target]?.ingest?.sourceStatus;
    if (status === undefined) return;
    const current = this.#sourceStatus;
    if (current.state === status.state && current.reason === status.reason) return;
    this.#sourceStatus = {
      state: status.state,
      ...(status.reason !== undefined && { reason: status.reason }),
      sinceMs: status.sinceMs + wallToDaemonMs(),
    };
    const next = this.#sourceStatus;
    for (const listener of this.#sourceListeners) this.#notify('onSourceStatus', () => listener(next));
  }

  #accessUnit(index: number, au: AccessUnit, capture: CaptureTime): void {
    const source = this.#sources[index]!;
    const bytes = au.data.byteLength;
    for (const stats of [this.stats, source.stats]) {
      stats.accessUnits++;
      stats.bytesIn += bytes;
      if (au.keyframe) stats.keyframes++;
    }
    source.gopPosition = au.keyframe ? 0 : Math.min(source.gopPosition + 1, 0xffff);
    this.#measure(source, bytes, au.receivedAtMs);
    if (au.keyframe && index !== this.#forwarded && (index === this.#target || this.#forwarded === undefined))
      this.#switchTo(index, au);
    // Another layer's frame: counted above, never packed.
    if (index !== this.#forwarded) return;
    this.stats.bitrateBps = source.stats.bitrateBps;
    if (au.keyframe) this.onKeyframe?.();
    const captureUs = au.captureTimeUs + source.captureOffsetUs;
    this.#lastForwarded = { captureUs, atMs: au.receivedAtMs };
    const captureTimestampUs = wrapU32(captureUs);
    // The camera's wall clock is taken to be the robot's: its time moves to the daemon clock.
    const captureClockUs = captureClockFromMs(capture.wallMs + wallToDaemonMs());
    const { gopPosition } = source;
    this.#keep(au.data, au.keyframe, captureTimestampUs, captureClockUs, gopPosition);
    // Nobody watching: nothing to pack (a replay takes the ids just before the next live frame's).
    if (this.#subscribers.size === 0) return;
    this.#sizeDatagrams();
    const parity = au.keyframe ? this.#parity.key : this.#parity.delta;
    const packed = this.#packer.pack(
      { data: au.data, keyframe: au.keyframe, captureTimestampUs, captureClockUs, gopPosition, parity },
      wrapU32(daemonClockMs() * 1000),
    );
    for (const subscriber of this.#subscribers) subscriber.handleFrame(packed, au.keyframe);
  }

  /**
   * Forwards source `index` from its keyframe `au` on. Its capture times are shifted to continue
   * the channel's timeline: the keyframe is stamped as long after the last forwarded frame as it
   * arrived after it (each encoder has its own RTP clock; a jump would upset the pilot's pacing).
   */
  #switchTo(index: number, au: AccessUnit): void {
    const from = this.#forwarded;
    const source = this.#sources[index]!;
    const last = this.#lastForwarded;
    if (last !== undefined) {
      const elapsedUs = Math.max(1, Math.round((au.receivedAtMs - last.atMs) * 1000));
      source.captureOffsetUs = last.captureUs + elapsedUs - au.captureTimeUs;
    }
    this.#forwarded = index;
    this.#sourceChanged();
    if (from === undefined) {
      this.#logger.info(
        { channel: this.config.name, layer: index, name: source.name },
        'simulcast layer forwarded first (its keyframe came first)',
      );
      return;
    }
    this.#notify('onLayerSwitched', () => this.onLayerSwitched?.(index, source.name));
  }

  /** Runs a listener; what it throws is logged, never thrown into the ingest or the caller. */
  #notify(what: string, listener: () => void): void {
    safeCall(this.#logger.child({ channel: this.config.name }), what, listener);
  }

  /**
   * Keeps a copy of an access unit for replay: a keyframe starts over; later frames while they
   * fit the bound.
   */
  #keep(
    data: Uint8Array,
    keyframe: boolean,
    captureTimestampUs: number,
    captureClockUs: number,
    gopPosition: number,
  ): void {
    if (keyframe) {
      this.#kept = [
        { data: this.#copyKept(data, 0), keyframe, captureTimestampUs, captureClockUs, gopPosition },
      ];
      this.#keptBytes = data.byteLength;
      this.#keptOverflow = false;
      return;
    }
    if (this.#kept.length === 0 || this.#keptOverflow) return;
    if (this.#keptBytes + data.byteLength > this.#keptLimit) {
      // Only the keyframe can still be replayed.
      this.#keptOverflow = true;
      this.#kept.length = 1;
      this.#keptBytes = this.#kept[0]!.data.byteLength;
      return;
    }
    const copy = this.#copyKept(data, this.#keptBytes);
    this.#kept.push({ data: copy, keyframe, captureTimestampUs, captureClockUs, gopPosition });
    this.#keptBytes += data.byteLength;
  }

  /**
   * Copies `data` to `offset` of the kept memory. Frames after the keyframe fit by the bound; a
   * keyframe larger than the bound gets memory of its size.
   */
  #copyKept(data: Uint8Array, offset: number): Uint8Array {
    const end = offset + data.byteLength;
    if (this.#keptMemory === undefined || end > this.#keptMemory.byteLength) {
      this.#keptMemory = new Uint8Array(Math.max(end, this.#keptLimit));
    }
    const copy = this.#keptMemory.subarray(offset, end);
    copy.set(data);
    return copy;
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

  /** The input bitrate of `source` over about a second. */
  #measure(source: Source, bytes: number, nowMs: number): void {
    source.windowBytes += bytes;
    const elapsed = nowMs - source.windowStart;
    if (elapsed >= 1000) {
      source.stats.bitrateBps = (source.windowBytes * 8 * 1000) / elapsed;
      source.windowStart = nowMs;
      source.windowBytes = 0;
    }
  }
}

/**
 * What to add to a wall-clock time (`Date.now()`, the camera's clock as sender reports give it)
 * to have it on the daemon clock ({@link daemonClockMs}, which may run off the wall clock in
 * tests).
 */
function wallToDaemonMs(): number {
  return daemonClockMs() - Date.now();
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
