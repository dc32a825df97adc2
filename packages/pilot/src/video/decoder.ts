import { consoleLogger, type Logger, safeCall } from '@svc/runtime';
import { type AssembledFrame, type FrameLoss, seqDiff16, seqDiff32 } from '@svc/wire';
import { codecFamily, explainUnsupported, type VideoCodecFamily } from './codec.js';
import { VideoStats } from './stats.js';

/**
 * Why a keyframe is asked for:
 * - `join`: decoding has not started and a delta frame arrived;
 * - `frame-lost`: the transport gave up a frame, so the reference chain is broken;
 * - `gop-gap`: a delta's GOP position skipped, so a frame never reached the pilot;
 * - `decoder-error`: the decoder failed and was reset;
 * - `backpressure`: the decoder fell behind and deltas were dropped.
 */
export type KeyframeRequestReason = 'join' | 'frame-lost' | 'gop-gap' | 'decoder-error' | 'backpressure';

/**
 * Why the decoder is skipping delta frames: a {@link KeyframeRequestReason}, `flush` (end of
 * stream), or `not-live` (the robot replayed its keyframe alone: the deltas after it refer to
 * frames this pilot never had, whatever the loss policy, until the IDR the join asked for).
 */
export type KeyframeWaitReason = KeyframeRequestReason | 'flush' | 'not-live';

/**
 * What to do after a lost frame: `continue` decodes on (artifacts until the next recovery point;
 * the `latency` and `balanced` profiles), `freeze` keeps the last picture until a keyframe.
 */
export type LossPolicy = 'continue' | 'freeze';

/** Life cycle of a {@link VideoChannelDecoder}. */
export type VideoChannelDecoderState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'starting' }
  | { readonly kind: 'waiting-keyframe'; readonly reason: KeyframeWaitReason }
  | { readonly kind: 'decoding' }
  | {
      readonly kind: 'unsupported';
      readonly codec: string;
      /** Why, as a clause a person can read. */
      readonly reason: string;
      /** The sentence to show over the video area. */
      readonly message: string;
    }
  | { readonly kind: 'closed' };

/** Facts about a decoded frame, passed with it to {@link VideoChannelDecoderOptions.onFrame}. */
export interface DecodedFrameMeta {
  readonly frameId: number;
  readonly keyframe: boolean;
  /** Capture time, µs, unwrapped from the 32-bit wire value into a monotonic number. */
  readonly captureTimestampUs: number;
  /** The daemon's send time, µs, 32 bits wrapping (as on the wire). */
  readonly senderTimestampUs: number;
  /**
   * Capture time on the robot's wall clock, µs, 32 bits wrapping (as on the wire,
   * `AssembledFrame.captureClockUs`); 0 when the robot did not know it.
   */
  readonly captureClockUs: number;
  /** Local clock (ms) when the frame became complete (`AssembledFrame.completedMs`). */
  readonly receivedMs: number;
  /** Local clock (ms) when `handleFrame` took it. */
  readonly submittedMs: number;
  /** Local clock (ms) when the decoder returned it. */
  readonly decodedMs: number;
  /**
   * Decoded only to reach the current picture: a frame of the robot's replay to a joining
   * session before its last one. It is not painted.
   */
  readonly replayed: boolean;
}

/** Construction options of a {@link VideoChannelDecoder}. */
export interface VideoChannelDecoderOptions {
  /** The channel's codec string, unchanged from the daemon's configuration. */
  readonly codec: string;
  /** Each decoded frame; the callee owns it and must `close()` it. */
  readonly onFrame: (frame: VideoFrame, meta: DecodedFrameMeta) => void;
  /** Ask the sender for a keyframe (the caller rate-limits and sends `request-keyframe`). */
  readonly onRequestKeyframe: (reason: KeyframeRequestReason) => void;
  /** Every state change. */
  readonly onStateChange?: (state: VideoChannelDecoderState) => void;
  /** After a lost frame: decode on, or freeze until a keyframe. */
  readonly lossPolicy: LossPolicy;
  /** The local clock, ms (default `performance.now()`). */
  readonly now?: () => number;
  /** Where a callback's exception is reported (default `consoleLogger()`). */
  readonly logger?: Logger;
  /** Counters go here (default: a private instance). */
  readonly stats?: VideoStats;
  /**
   * Deltas are dropped while more than this many chunks wait in the decoder (default 3) and they
   * span more than {@link FALLING_BEHIND_MS} of video, once it has caught up after its start;
   * before that, more than {@link STARTUP_DECODE_QUEUE}. Even decoding is then behind: the rest of
   * the GOP is skipped and a keyframe asked for. A decoder that stalls for a moment on a loaded
   * machine (a few chunks waiting, then decoded at once) is not behind: passing over its late
   * outputs ({@link catchUpAfterMs}) is enough, and costs no GOP.
   */
  readonly maxDecodeQueue?: number;
  /**
   * A frame that comes out of the decoder while chunks captured more than this many ms after it are
   * still in it (default 100; the player gives the profile's presentation delay, the ceiling of the
   * hold) is decoded and not handed over: the decoder is truly behind and a newer frame is the one
   * to show (counted `skippedBehind`). A queue within it (two or three frames on a slow machine) is
   * normal and every frame of it is handed over. Applies once the decoder has caught up after its
   * start (see {@link VideoChannelDecoder.catchUp}) and shown its first picture.
   */
  readonly catchUpAfterMs?: number;
}

/** Default of {@link VideoChannelDecoderOptions.catchUpAfterMs}: the `balanced` profile's ceiling. */
const DEFAULT_CATCH_UP_AFTER_MS = 100;

/**
 * Chunks that may wait in a decoder that has not caught up yet (a second of video at 30 fps): its
 * start (configuration, the first decodes, the robot's replay at join, the live frames that come
 * meanwhile) is not falling behind. Dropping deltas then would freeze the picture until the next
 * keyframe, up to a whole GOP with a publisher that does not answer requests.
 */
const STARTUP_DECODE_QUEUE = 30;

/**
 * How much video the chunks waiting in the decoder must span, ms, besides being more than
 * `maxDecodeQueue`, for decoding to count as behind (about ten frames at 30 fps): a stall shorter
 * than this, common on a loaded machine, drains by itself.
 */
const FALLING_BEHIND_MS = 300;

/** Decoder failures in a row, with no picture between them, after which the codec counts as unsupported. */
const MAX_CONSECUTIVE_FAILURES = 3;

/** Meta of submitted chunks kept for their output; beyond it the oldest is forgotten. */
const MAX_PENDING_META = 512;
/** Frames held while the codec check runs (a joining session's replay arrives meanwhile). */
const MAX_EARLY_FRAMES = 512;

/** The GOP position saturates at this value on the wire. */
const GOP_POSITION_MAX = 0xffff;

type PendingMeta = Omit<DecodedFrameMeta, 'decodedMs'>;

/**
 * Decodes the whole access units of one video channel into `VideoFrame`s: through WebCodecs
 * `VideoDecoder` for H.264 and H.265 (Annex B input, so no `description`), through
 * `createImageBitmap` for Motion JPEG (every frame is a keyframe).
 *
 * Nothing is decoded before the first keyframe. A decoder error resets the decoder and waits for
 * the next keyframe; a lost frame or a gap in GOP positions asks for a keyframe and, with
 * `lossPolicy: 'freeze'`, stops decoding deltas until it comes. The caller feeds it through
 * {@link VideoChannelDecoder.handleFrame} and {@link VideoChannelDecoder.handleLoss}.
 */
export class VideoChannelDecoder {
  /** The codec string, unchanged. */
  readonly codec: string;
  /** Counters this decoder updates. */
  readonly stats: VideoStats;
  readonly #family: VideoCodecFamily | undefined;
  readonly #onFrame: VideoChannelDecoderOptions['onFrame'];
  readonly #onRequestKeyframe: VideoChannelDecoderOptions['onRequestKeyframe'];
  readonly #onStateChange: VideoChannelDecoderOptions['onStateChange'];
  #lossPolicy: LossPolicy;
  readonly #now: () => number;
  readonly #logger: Logger;
  readonly #maxDecodeQueue: number;
  #catchUpAfterUs: number;
  #state: VideoChannelDecoderState = { kind: 'idle' };
  #decoder: VideoDecoder | undefined;
  /** Set while deltas are skipped; `undefined` while decoding. */
  #waitReason: KeyframeWaitReason | undefined = 'join';
  #joinRequested = false;
  #consecutiveFailures = 0;
  #lastFailure = '';
  #captureRaw: number | undefined;
  #captureUs = 0;
  #previousGopPosition: number | undefined;
  /** A loss was reported since the last frame, which explains a GOP gap. */
  #lossSinceFrame = false;
  /**
   * Chunks submitted to the current decoder and not output yet, by capture time (µs, unwrapped),
   * in submission order.
   */
  readonly #pendingMeta = new Map<number, PendingMeta[]>();
  /** Chunks in {@link #pendingMeta}. */
  #pendingCount = 0;
  /** Capture time of the newest chunk submitted to the current decoder, µs (unwrapped). */
  #newestSubmittedUs = Number.NEGATIVE_INFINITY;
  #jpegChain: Promise<void> = Promise.resolve();
  #jpegPending = 0;
  /** Frames that arrived during the codec check, handled once it is done. */
  #early: AssembledFrame[] = [];
  /** Last frame id of the robot's replay still to come (decode through, never drop). */
  #replayUntil: number | undefined;
  /** False: the replay is the keyframe alone, and the deltas after it cannot be decoded. */
  #replayLive = true;
  /** Replay chunks in the decoder: they do not count as the decoder falling behind. */
  #replayInFlight = 0;
  /**
   * The current decoder has caught up once since its start: a frame came out with the replay
   * decoded and no newer chunk waiting behind it. From then on {@link #maxDecodeQueue} applies
   * (before that {@link STARTUP_DECODE_QUEUE}) and frames may be passed over to catch up; the
   * replay and the live frames that queued behind it while it decoded are all handed over.
   */
  #decoderRunning = false;
  /** The current decoder has handed a frame over: from then on a frame may be passed over to catch up. */
  #decoderShown = false;

  constructor(options: VideoChannelDecoderOptions) {
    if (options.lossPolicy !== 'continue' && options.lossPolicy !== 'freeze') {
      throw new TypeError(`lossPolicy must be 'continue' or 'freeze', got ${String(options.lossPolicy)}`);
    }
    const maxQueue = options.maxDecodeQueue ?? 3;
    if (!(Number.isInteger(maxQueue) && maxQueue >= 1)) {
      throw new TypeError(`maxDecodeQueue must be an integer ≥ 1, got ${maxQueue}`);
    }
    this.codec = options.codec;
    this.#family = codecFamily(options.codec);
    this.#onFrame = options.onFrame;
    this.#onRequestKeyframe = options.onRequestKeyframe;
    this.#onStateChange = options.onStateChange;
    this.#lossPolicy = options.lossPolicy;
    this.#now = options.now ?? (() => performance.now());
    this.#logger = options.logger ?? consoleLogger();
    this.stats = options.stats ?? new VideoStats({ now: this.#now });
    this.#maxDecodeQueue = maxQueue;
    this.#catchUpAfterUs = catchUpAfterUs(options.catchUpAfterMs ?? DEFAULT_CATCH_UP_AFTER_MS);
  }

  /** The loss behaviour of another profile, from the next loss on. */
  setLossPolicy(policy: LossPolicy): void {
    if (policy !== 'continue' && policy !== 'freeze') {
      throw new TypeError(`lossPolicy must be 'continue' or 'freeze', got ${String(policy)}`);
    }
    this.#lossPolicy = policy;
  }

  /**
   * Another catch-up threshold (see {@link VideoChannelDecoderOptions.catchUpAfterMs}) from the next
   * output on: the profile changed its presentation delay.
   */
  setCatchUpAfter(ms: number): void {
    this.#catchUpAfterUs = catchUpAfterUs(ms);
  }

  /** The current state. */
  get state(): VideoChannelDecoderState {
    return this.#state;
  }

  /**
   * Checks that this browser can decode the codec and prepares the decoder. Resolves with the
   * resulting state: `waiting-keyframe` when ready, `unsupported` (with a reason to show) when not.
   *
   * @throws TypeError when called twice.
   */
  async start(): Promise<VideoChannelDecoderState> {
    if (this.#state.kind !== 'idle') throw new TypeError(`start() called in state ${this.#state.kind}`);
    this.#setState({ kind: 'starting' });
    const problem = await this.#checkSupport();
    // `close()` may have run while the check was pending.
    if (this.#isClosed()) return this.#state;
    const early = this.#early.splice(0);
    if (problem !== undefined) {
      this.#setState({ kind: 'unsupported', codec: this.codec, ...problem });
    } else {
      this.#enterWait('join');
      for (const frame of early) this.handleFrame(frame);
    }
    return this.#state;
  }

  /**
   * The robot replays the frames up to `lastFrameId` to this joining session (its latest keyframe
   * and what followed): they are all decoded, none dropped for backpressure, and all but the last
   * are marked {@link DecodedFrameMeta.replayed} so only the current picture is painted.
   */
  catchUp(lastFrameId: number, live = true): void {
    if (!Number.isInteger(lastFrameId) || lastFrameId < 0 || lastFrameId > 0xffff)
      throw new TypeError(`lastFrameId must be a frame id 0..65535, got ${lastFrameId}`);
    this.#replayUntil = lastFrameId;
    this.#replayLive = live;
  }

  /** Takes one whole frame from the reassembler, in frame-id order. */
  handleFrame(frame: AssembledFrame): void {
    if (this.#state.kind === 'starting' && this.#early.length < MAX_EARLY_FRAMES) {
      this.#early.push(frame);
      return;
    }
    const submittedMs = this.#now();
    const replay = this.#replayUntil === undefined ? undefined : seqDiff16(frame.frameId, this.#replayUntil);
    if (replay !== undefined && replay >= 0) this.#replayUntil = undefined;
    this.stats.recordReceived(frame.data.byteLength, frame.chunksRecovered > 0);
    const captureTimestampUs = this.#unwrapCapture(frame.captureTimestampUs);
    const keyframe = frame.keyframe || this.#family === 'mjpeg';
    const gap = this.#gopGap(frame, keyframe);
    const explained = this.#lossSinceFrame;
    this.#lossSinceFrame = false;

    const kind = this.#state.kind;
    if (kind === 'starting') {
      this.stats.recordWaitingForKeyframe();
      return;
    }
    if (kind !== 'waiting-keyframe' && kind !== 'decoding') return;

    // After a keyframe-alone replay the GOP position jumps by design; the join asked for the IDR.
    if (gap && !explained && this.#family !== 'mjpeg' && this.#waitReason !== 'not-live')
      this.#chainBroken('gop-gap');
    if (this.#waitReason !== undefined) {
      if (!keyframe) {
        this.#skipWhileWaiting(this.#waitReason);
        return;
      }
      this.#waitReason = undefined;
      this.#setState({ kind: 'decoding' });
    }
    const meta: PendingMeta = {
      frameId: frame.frameId,
      keyframe,
      captureTimestampUs,
      senderTimestampUs: frame.senderTimestampUs,
      captureClockUs: frame.captureClockUs,
      receivedMs: frame.completedMs,
      submittedMs,
      replayed: replay !== undefined && replay < 0,
    };
    if (this.#family === 'mjpeg') this.#decodeJpeg(frame.data, meta);
    else this.#decodeChunk(frame.data, meta, replay !== undefined && replay <= 0);
    if (replay === 0 && !this.#replayLive && this.#family !== 'mjpeg' && this.#state.kind === 'decoding')
      this.#enterWait('not-live');
  }

  /** Takes one loss report from the reassembler. */
  handleLoss(loss: FrameLoss): void {
    this.stats.recordLost(loss.count);
    this.#lossSinceFrame = true;
    const kind = this.#state.kind;
    if (this.#family === 'mjpeg' || (kind !== 'waiting-keyframe' && kind !== 'decoding')) return;
    this.#chainBroken('frame-lost');
  }

  /**
   * Waits until every frame handed in so far has been decoded (or failed). For the end of a
   * stream: afterwards the decoder needs a keyframe again, as WebCodecs requires after a flush.
   */
  async flush(): Promise<void> {
    if (this.#family === 'mjpeg') {
      await this.#jpegChain;
      return;
    }
    const decoder = this.#decoder;
    if (decoder === undefined || decoder.state !== 'configured') return;
    try {
      await decoder.flush();
    } catch {
      // A failing flush is a decoder error; the decoder's error callback has already handled it.
      return;
    }
    if (decoder === this.#decoder && this.#state.kind === 'decoding') this.#enterWait('flush');
  }

  /** Releases the decoder and frames waiting for it. Further input is ignored. */
  close(): void {
    if (this.#state.kind === 'closed') return;
    this.#closeDecoder();
    this.#early = [];
    this.#setState({ kind: 'closed' });
  }

  async #checkSupport(): Promise<{ reason: string; message: string } | undefined> {
    switch (this.#family) {
      case undefined:
        return explainUnsupported(this.codec, 'unknown-codec');
      case 'mjpeg':
        if (typeof createImageBitmap !== 'function' || typeof VideoFrame !== 'function') {
          return explainUnsupported(this.codec, 'webcodecs');
        }
        return undefined;
      case 'h264':
      case 'h265': {
        if (typeof VideoDecoder !== 'function' || typeof EncodedVideoChunk !== 'function') {
          return explainUnsupported(this.codec, 'webcodecs');
        }
        try {
          const support = await VideoDecoder.isConfigSupported(this.#config());
          return support.supported === true ? undefined : explainUnsupported(this.codec, 'decoder');
        } catch (err) {
          return explainUnsupported(this.codec, 'malformed', errorText(err));
        }
      }
      default: {
        const unreachable: never = this.#family;
        throw new TypeError(`unknown codec family ${String(unreachable)}`);
      }
    }
  }

  #isClosed(): boolean {
    return this.#state.kind === 'closed';
  }

  #config(): VideoDecoderConfig {
    return { codec: this.codec, optimizeForLatency: true };
  }

  /** Unwraps the 32-bit wrapping capture time into a monotonic µs count. */
  #unwrapCapture(raw: number): number {
    if (this.#captureRaw !== undefined) this.#captureUs += seqDiff32(raw, this.#captureRaw);
    else this.#captureUs = raw;
    this.#captureRaw = raw;
    return this.#captureUs;
  }

  /** Whether a delta's GOP position is not the previous one plus one. */
  #gopGap(frame: AssembledFrame, keyframe: boolean): boolean {
    const previous = this.#previousGopPosition;
    this.#previousGopPosition = frame.gopPosition;
    if (keyframe || previous === undefined) return false;
    return frame.gopPosition !== Math.min(previous + 1, GOP_POSITION_MAX);
  }

  /** A frame is missing from the reference chain. */
  #chainBroken(reason: 'frame-lost' | 'gop-gap'): void {
    this.#requestKeyframe(reason);
    if (this.#lossPolicy === 'freeze' && this.#waitReason === undefined) this.#enterWait(reason);
  }

  #skipWhileWaiting(reason: KeyframeWaitReason): void {
    if (reason === 'backpressure') this.stats.recordSkippedBehind();
    else this.stats.recordWaitingForKeyframe();
    if (reason === 'join' && !this.#joinRequested) {
      this.#joinRequested = true;
      this.#requestKeyframe('join');
    }
  }

  #decodeChunk(data: Uint8Array, meta: PendingMeta, replay: boolean): void {
    const decoder = this.#decoder ?? this.#openDecoder();
    const limit = this.#decoderRunning
      ? this.#maxDecodeQueue
      : Math.max(this.#maxDecodeQueue, STARTUP_DECODE_QUEUE);
    if (replay) this.#replayInFlight++;
    else if (
      !meta.keyframe &&
      decoder.decodeQueueSize - this.#replayInFlight > limit &&
      meta.captureTimestampUs - this.#oldestWaitingLiveUs(meta.captureTimestampUs) > FALLING_BEHIND_MS * 1000
    ) {
      this.stats.recordSkippedBehind();
      this.#enterWait('backpressure');
      this.#requestKeyframe('backpressure');
      return;
    }
    this.#rememberMeta(meta);
    this.#newestSubmittedUs = Math.max(this.#newestSubmittedUs, meta.captureTimestampUs);
    try {
      decoder.decode(
        new EncodedVideoChunk({
          type: meta.keyframe ? 'key' : 'delta',
          timestamp: meta.captureTimestampUs,
          data,
        }),
      );
    } catch (err) {
      this.#fail(decoder, err);
    }
  }

  /**
   * Capture time of the oldest live (not replayed) chunk still waiting in the decoder, µs; `fallback`
   * when none waits.
   */
  #oldestWaitingLiveUs(fallback: number): number {
    for (const [capture, metas] of this.#pendingMeta) if (metas.some((m) => !m.replayed)) return capture;
    return fallback;
  }

  #openDecoder(): VideoDecoder {
    const decoder: VideoDecoder = new VideoDecoder({
      output: (frame) => this.#output(decoder, frame),
      error: (err) => this.#fail(decoder, err),
    });
    this.#decoder = decoder;
    this.#decoderRunning = false;
    this.#decoderShown = false;
    decoder.configure(this.#config());
    return decoder;
  }

  #closeDecoder(): void {
    this.#replayInFlight = 0;
    this.#pendingMeta.clear();
    this.#pendingCount = 0;
    this.#newestSubmittedUs = Number.NEGATIVE_INFINITY;
    const decoder = this.#decoder;
    this.#decoder = undefined;
    if (decoder !== undefined && decoder.state !== 'closed') decoder.close();
  }

  #output(decoder: VideoDecoder, frame: VideoFrame): void {
    if (decoder !== this.#decoder || this.#state.kind === 'closed') {
      frame.close();
      return;
    }
    // Outputs come in submission order: the replay's first.
    if (this.#replayInFlight > 0) this.#replayInFlight--;
    const pending = this.#takeMeta(frame.timestamp);
    if (pending === undefined) {
      // Output the decoder made up (no chunk of ours has this timestamp): nothing to present it with.
      frame.close();
      this.stats.recordDropped();
      return;
    }
    this.#consecutiveFailures = 0;
    const behindUs = this.#pendingCount > 0 ? this.#newestSubmittedUs - pending.captureTimestampUs : 0;
    const wasRunning = this.#decoderRunning;
    // Started: the replay decoded and the live frames that queued behind it (its start) caught up
    // with, so nothing newer waits.
    if (this.#replayInFlight === 0 && this.#pendingCount === 0) this.#decoderRunning = true;
    if (wasRunning && this.#decoderShown && !pending.replayed && behindUs > this.#catchUpAfterUs) {
      // Frames captured more than the ceiling later are already decoding: this one would be
      // replaced before anyone saw it. (Never the first picture of a decoder, shown at once, nor
      // the start: the replay and what queued behind it.)
      frame.close();
      this.stats.recordDecoded(this.#now() - pending.submittedMs);
      this.stats.recordSkippedBehind();
      return;
    }
    this.#emit(frame, pending);
  }

  #emit(frame: VideoFrame, pending: PendingMeta): void {
    if (this.#state.kind === 'closed') {
      frame.close();
      return;
    }
    const decodedMs = this.#now();
    this.stats.recordDecoded(decodedMs - pending.submittedMs);
    if (!pending.replayed) this.#decoderShown = true;
    safeCall(this.#logger, 'onFrame', () => this.#onFrame(frame, { ...pending, decodedMs }));
  }

  /** The decoder failed: drop it, wait for a keyframe on a fresh one, and ask for that keyframe. */
  #fail(decoder: VideoDecoder, err: unknown): void {
    if (decoder !== this.#decoder || this.#state.kind === 'closed') return;
    this.stats.recordDecodeError();
    this.#closeDecoder();
    this.#consecutiveFailures++;
    this.#lastFailure = errorText(err);
    if (this.#consecutiveFailures >= MAX_CONSECUTIVE_FAILURES) {
      this.#setState({
        kind: 'unsupported',
        codec: this.codec,
        ...explainUnsupported(this.codec, 'failing', this.#lastFailure),
      });
      return;
    }
    this.#enterWait('decoder-error');
    this.#requestKeyframe('decoder-error');
  }

  #rememberMeta(meta: PendingMeta): void {
    const list = this.#pendingMeta.get(meta.captureTimestampUs);
    if (list !== undefined) list.push(meta);
    else this.#pendingMeta.set(meta.captureTimestampUs, [meta]);
    this.#pendingCount++;
    if (this.#pendingMeta.size > MAX_PENDING_META) {
      const oldest = this.#pendingMeta.entries().next();
      if (oldest.done !== true) {
        this.#pendingMeta.delete(oldest.value[0]);
        this.#pendingCount -= oldest.value[1].length;
      }
    }
  }

  /**
   * The meta of the chunk whose picture came out with `timestampUs`. Outputs come in capture order,
   * so chunks captured before it that are still waiting will never come out (the decoder gave no
   * picture for them, such as a delta whose reference was lost): they are forgotten and counted
   * `dropped`, or they would look like a queue the decoder is behind on.
   */
  #takeMeta(timestampUs: number): PendingMeta | undefined {
    const list = this.#pendingMeta.get(timestampUs);
    if (list === undefined) return undefined;
    for (const [capture, older] of this.#pendingMeta) {
      if (capture >= timestampUs) continue;
      this.#pendingMeta.delete(capture);
      this.#pendingCount -= older.length;
      this.stats.recordDropped(older.length);
    }
    const meta = list.shift();
    if (list.length === 0) this.#pendingMeta.delete(timestampUs);
    if (meta !== undefined) this.#pendingCount--;
    return meta;
  }

  #decodeJpeg(data: Uint8Array, meta: PendingMeta): void {
    if (this.#jpegPending >= this.#maxDecodeQueue) {
      this.stats.recordSkippedBehind();
      return;
    }
    this.#jpegPending++;
    this.#jpegChain = this.#jpegChain
      .then(() => this.#decodeOneJpeg(data, meta))
      .finally(() => {
        this.#jpegPending--;
      });
  }

  /** Decodes one JPEG to a bitmap and wraps it as a `VideoFrame`. Never rejects. */
  async #decodeOneJpeg(data: Uint8Array, meta: PendingMeta): Promise<void> {
    let frame: VideoFrame;
    try {
      // The reassembler's buffers are plain ArrayBuffers; the cast only narrows the type.
      const blob = new Blob([data as Uint8Array<ArrayBuffer>], { type: 'image/jpeg' });
      const bitmap = await createImageBitmap(blob);
      try {
        if (this.#state.kind === 'closed') return;
        frame = new VideoFrame(bitmap, { timestamp: meta.captureTimestampUs });
      } finally {
        bitmap.close();
      }
    } catch {
      // A JPEG that does not decode spoils only itself: the next frame is independent.
      if (this.#state.kind !== 'closed') this.stats.recordDecodeError();
      return;
    }
    this.#emit(frame, meta);
  }

  #enterWait(reason: KeyframeWaitReason): void {
    this.#waitReason = reason;
    if (reason === 'join') this.#joinRequested = false;
    this.#setState({ kind: 'waiting-keyframe', reason });
  }

  #requestKeyframe(reason: KeyframeRequestReason): void {
    this.stats.recordKeyframeRequest();
    safeCall(this.#logger, 'onRequestKeyframe', () => this.#onRequestKeyframe(reason));
  }

  #setState(state: VideoChannelDecoderState): void {
    this.#state = state;
    const listener = this.#onStateChange;
    if (listener !== undefined) safeCall(this.#logger, 'onStateChange', () => listener(state));
  }
}

function catchUpAfterUs(ms: number): number {
  if (!(Number.isFinite(ms) && ms >= 0))
    throw new TypeError(`catchUpAfterMs must be a number of ms ≥ 0, got ${ms}`);
  return ms * 1000;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
