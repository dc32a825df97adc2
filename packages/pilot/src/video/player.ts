import { type Clock, consoleLogger, type Logger, safeCall, systemClock } from '@svc/runtime';
import type { AssembledFrame, FrameLoss } from '@svc/wire';
import {
  type DecodedFrameMeta,
  type KeyframeRequestReason,
  type LossPolicy,
  VideoChannelDecoder,
  type VideoChannelDecoderState,
} from './decoder.js';
import type { JitterTuning } from './jitter.js';
import { clearVideoBadge, clearVideoMessage, showVideoBadge, showVideoMessage } from './message.js';
import { CanvasPresenter, type PaintReport, type RequestFrame } from './presenter.js';
import { type PictureState, StaleWatch } from './stale.js';
import { pictureAgeAtPaintMs, VideoStats, type VideoStatsSnapshot } from './stats.js';

/** The badge on a replayed keyframe that is not the current picture. */
const NOT_LIVE_TEXT = 'Not live: the last keyframe the robot had; live video follows at the next one';

/** A painted frame with its latency and age, reported through {@link VideoChannelPlayerOptions.onPaint}. */
export interface PlayerPaintReport extends PaintReport<DecodedFrameMeta> {
  /** Send→paint latency, ms, with the current clock offset; `NaN` until the offset is known. */
  readonly latencyMs: number;
  /**
   * Picture age at paint, ms: paint time minus the frame's capture time on the robot's clock, with
   * the current clock offset. `NaN` when the capture clock is 0 (unknown) or the offset is not known.
   */
  readonly pictureAgeMs: number;
}

/** Construction options of a {@link VideoChannelPlayer}. */
export interface VideoChannelPlayerOptions {
  /** The video area; the player appends its canvas (and, when needed, a message) to it. */
  readonly container: HTMLElement;
  /** The channel's codec string, unchanged from the daemon's configuration. */
  readonly codec: string;
  /**
   * Ceiling of the presenter's adaptive hold, ms (the profile's pilot presentation delay); 0 paints
   * each frame as soon as it is decoded.
   */
  readonly presentationDelayMs: number;
  /** Tuning of the adaptive hold (see {@link JitterTuning}). */
  readonly jitter?: JitterTuning;
  /** After a lost frame: decode on, or freeze until a keyframe (the profile's loss behaviour). */
  readonly lossPolicy: LossPolicy;
  /** Ask the sender for a keyframe; the caller rate-limits and sends `request-keyframe`. */
  readonly onRequestKeyframe: (reason: KeyframeRequestReason) => void;
  /** Every decoder state change. */
  readonly onStateChange?: (state: VideoChannelDecoderState) => void;
  /** Every painted frame. */
  readonly onPaint?: (report: PlayerPaintReport) => void;
  /**
   * Local clock minus the daemon's clock, ms; until it is given here or with
   * {@link VideoChannelPlayer.setClockOffset}, latency and picture age are `NaN`.
   */
  readonly clockOffsetMs?: number;
  /** Timers of the stale-picture watch, and the time when `now` is not given (default `systemClock`). */
  readonly clock?: Clock;
  /** The local clock, ms (default `clock.now()`); give the reassembler the same clock. */
  readonly now?: () => number;
  /**
   * The least time without a new picture that makes it stale, ms (default 300); the threshold is the
   * larger of this and 3 frame intervals.
   */
  readonly staleAfterMs?: number;
  /**
   * Each change between a live and a stale picture, with the age of the picture on screen (its
   * picture age when known, else the time since it was painted). A page shows a stale picture as
   * stale, never as live.
   */
  readonly onStaleChange?: (stale: boolean, ageMs: number) => void;
  /** Paint scheduler (default `requestAnimationFrame`). */
  readonly requestFrame?: RequestFrame;
  /** Where a callback's exception is reported (default `consoleLogger()`). */
  readonly logger?: Logger;
}

/**
 * One video channel on one page element: decoder, presenter, statistics and on-screen message
 * together. It creates a canvas in the container and paints the channel there; when the browser
 * cannot decode the codec it shows why over the video area instead.
 */
export class VideoChannelPlayer {
  /** The canvas the video is painted on (a child of the container). */
  readonly canvas: HTMLCanvasElement;
  readonly #container: HTMLElement;
  readonly #stats: VideoStats;
  readonly #decoder: VideoChannelDecoder;
  readonly #presenter: CanvasPresenter<DecodedFrameMeta>;
  readonly #watch: StaleWatch;
  readonly #onStateChange: VideoChannelPlayerOptions['onStateChange'];
  readonly #onPaint: VideoChannelPlayerOptions['onPaint'];
  readonly #logger: Logger;
  #showingMessage = false;
  /** Whether the daemon's clock offset is known (latency is meaningless before). */
  #clockKnown: boolean;
  /** The replayed keyframe that is not live (painted with a badge), until a later frame is painted. */
  #staleFrameId: number | undefined;
  #showingBadge = false;

  constructor(options: VideoChannelPlayerOptions) {
    const clock = options.clock ?? systemClock;
    const now = options.now ?? (() => clock.now());
    const logger = options.logger ?? consoleLogger();
    this.#logger = logger;
    this.#container = options.container;
    this.#onStateChange = options.onStateChange;
    this.#onPaint = options.onPaint;
    this.#stats = new VideoStats({ now, clockOffsetMs: options.clockOffsetMs ?? 0 });
    this.#clockKnown = options.clockOffsetMs !== undefined;

    this.#watch = new StaleWatch({
      clock: {
        now,
        setInterval: (callback, periodMs) => clock.setInterval(callback, periodMs),
        clearInterval: (handle) => clock.clearInterval(handle),
      },
      logger,
      ...(options.staleAfterMs !== undefined && { staleAfterMs: options.staleAfterMs }),
      ...(options.onStaleChange !== undefined && { onStaleChange: options.onStaleChange }),
    });

    const canvas = options.container.ownerDocument.createElement('canvas');
    canvas.setAttribute('data-svc-video-canvas', '');
    Object.assign(canvas.style, { display: 'block', width: '100%', height: 'auto' });
    this.canvas = canvas;

    this.#presenter = new CanvasPresenter<DecodedFrameMeta>({
      canvas,
      presentationDelayMs: options.presentationDelayMs,
      ...(options.jitter !== undefined && { jitter: options.jitter }),
      now,
      stats: this.#stats,
      logger,
      ...(options.requestFrame !== undefined && { requestFrame: options.requestFrame }),
      onPaint: (report) => this.#painted(report),
    });
    this.#decoder = new VideoChannelDecoder({
      codec: options.codec,
      lossPolicy: options.lossPolicy,
      // Frames further behind than the hold may ever be are passed over: the same ceiling.
      catchUpAfterMs: options.presentationDelayMs,
      now,
      logger,
      stats: this.#stats,
      onFrame: (frame, meta) => {
        this.#watch.handleFrame(meta.captureTimestampUs);
        if (meta.replayed) {
          frame.close();
          this.#stats.recordReplayed();
          return;
        }
        this.#presenter.present(frame, meta);
      },
      onRequestKeyframe: options.onRequestKeyframe,
      onStateChange: (state) => this.#stateChanged(state),
    });
    options.container.append(canvas);
  }

  /**
   * The profile changed: its presentation delay (the ceiling of the adaptive hold) and loss
   * behaviour from now on.
   */
  setQos(presentationDelayMs: number, lossPolicy: LossPolicy): void {
    this.#presenter.setPresentationDelay(presentationDelayMs);
    this.#decoder.setCatchUpAfter(presentationDelayMs);
    this.#decoder.setLossPolicy(lossPolicy);
  }

  /** The decoder's current state. */
  get state(): VideoChannelDecoderState {
    return this.#decoder.state;
  }

  /**
   * Freshness of the picture on screen: `no-picture` before the first paint ("waiting for video"),
   * `live`, or `stale` (nothing new painted for longer than the stale threshold).
   */
  get picture(): PictureState {
    return this.#watch.state;
  }

  /** Whether the picture on screen is stale (false before the first picture). */
  get stale(): boolean {
    return this.#watch.stale;
  }

  /**
   * Age of the picture on screen now, ms, growing while nothing new is painted; `NaN` before the
   * first picture, or when its capture time or the clock offset is unknown.
   */
  get pictureAgeMs(): number {
    return this.#watch.pictureAgeMs;
  }

  /** The presenter's current hold, ms (at most the presentation delay). */
  get holdMs(): number {
    return this.#presenter.holdMs;
  }

  /**
   * Checks the codec and gets ready for the first keyframe. Resolves with the state; when it is
   * `unsupported`, the message is already on screen.
   */
  start(): Promise<VideoChannelDecoderState> {
    return this.#decoder.start();
  }

  /**
   * The robot replays its latest keyframe and the frames after it up to `lastFrameId` to this
   * joining session: they are decoded and only the last is painted, so the first picture is the
   * current one. Without `live` the replay was the keyframe alone (what followed it was more
   * than the robot replays): it is painted with a "not live" badge until a later frame is.
   */
  catchUp(lastFrameId: number, live: boolean): void {
    this.#decoder.catchUp(lastFrameId, live);
    this.#staleFrameId = live ? undefined : lastFrameId;
  }

  /** Takes one whole frame from the reassembler. */
  handleFrame(frame: AssembledFrame): void {
    this.#decoder.handleFrame(frame);
  }

  /** Takes one loss report from the reassembler. */
  handleLoss(loss: FrameLoss): void {
    this.#decoder.handleLoss(loss);
  }

  /** Sets local clock minus the daemon's clock, ms, for the latencies measured from now on. */
  setClockOffset(clockOffsetMs: number): void {
    if (!Number.isFinite(clockOffsetMs))
      throw new TypeError(`clockOffsetMs must be finite, got ${clockOffsetMs}`);
    this.#stats.clockOffsetMs = clockOffsetMs;
    this.#clockKnown = true;
  }

  /** The channel's statistics as a plain JSON object. */
  stats(): VideoStatsSnapshot {
    return this.#stats.snapshot();
  }

  /**
   * Resolves once every frame handed in has been decoded and painted (or dropped). For the end of
   * a stream: afterwards decoding resumes only at a keyframe.
   */
  async flush(): Promise<void> {
    await this.#decoder.flush();
    await this.#presenter.drain();
  }

  /** Stops decoding and painting, releases every frame, and removes the canvas and any message. */
  close(): void {
    this.#watch.close();
    this.#decoder.close();
    this.#presenter.close();
    this.canvas.remove();
    if (this.#showingMessage) clearVideoMessage(this.#container);
    if (this.#showingBadge) clearVideoBadge(this.#container);
    this.#showingMessage = false;
    this.#showingBadge = false;
  }

  #stateChanged(state: VideoChannelDecoderState): void {
    if (state.kind === 'unsupported') {
      showVideoMessage(this.#container, state.message);
      this.#showingMessage = true;
    } else if (this.#showingMessage && state.kind !== 'closed') {
      clearVideoMessage(this.#container);
      this.#showingMessage = false;
    }
    const listener = this.#onStateChange;
    if (listener !== undefined) safeCall(this.#logger, 'onStateChange', () => listener(state));
  }

  #painted(report: PaintReport<DecodedFrameMeta>): void {
    if (this.#staleFrameId !== undefined) {
      if (report.meta.frameId === this.#staleFrameId) {
        showVideoBadge(this.#container, NOT_LIVE_TEXT);
        this.#showingBadge = true;
      } else {
        this.#staleFrameId = undefined;
        clearVideoBadge(this.#container);
        this.#showingBadge = false;
      }
    }
    const latencyMs = this.#clockKnown
      ? this.#stats.recordLatency(report.paintMs, report.meta.senderTimestampUs)
      : Number.NaN;
    const pictureAgeMs = pictureAgeAtPaintMs(
      report.paintMs,
      report.meta.captureClockUs,
      this.#clockKnown ? this.#stats.clockOffsetMs : undefined,
    );
    this.#stats.recordPictureAge(report.paintMs, pictureAgeMs);
    this.#watch.handlePaint(report.paintMs, pictureAgeMs);
    const listener = this.#onPaint;
    if (listener !== undefined)
      safeCall(this.#logger, 'onPaint', () => listener({ ...report, latencyMs, pictureAgeMs }));
  }
}
