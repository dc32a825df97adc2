import { consoleLogger, type Logger, safeCall } from '@svc/runtime';
import type { AssembledFrame, FrameLoss } from '@svc/wire';
import {
  type DecodedFrameMeta,
  type KeyframeRequestReason,
  type LossPolicy,
  VideoChannelDecoder,
  type VideoChannelDecoderState,
} from './decoder.js';
import { clearVideoBadge, clearVideoMessage, showVideoBadge, showVideoMessage } from './message.js';
import { CanvasPresenter, type PaintReport, type RequestFrame } from './presenter.js';
import { VideoStats, type VideoStatsSnapshot } from './stats.js';

/** The badge on a replayed keyframe that is not the current picture. */
const NOT_LIVE_TEXT = 'Not live: the last keyframe the robot had; live video follows at the next one';

/** A painted frame with its send→paint latency, reported through {@link VideoChannelPlayerOptions.onPaint}. */
export interface PlayerPaintReport extends PaintReport<DecodedFrameMeta> {
  /** Send→paint latency, ms, with the current clock offset; `NaN` until the offset is known. */
  readonly latencyMs: number;
}

/** Construction options of a {@link VideoChannelPlayer}. */
export interface VideoChannelPlayerOptions {
  /** The video area; the player appends its canvas (and, when needed, a message) to it. */
  readonly container: HTMLElement;
  /** The channel's codec string, unchanged from the daemon's configuration. */
  readonly codec: string;
  /** Jitter buffer of the presenter, ms (the profile's pilot presentation delay); 0 paints at once. */
  readonly presentationDelayMs: number;
  /** After a lost frame: decode on, or freeze until a keyframe (the profile's loss behaviour). */
  readonly lossPolicy: LossPolicy;
  /** Ask the sender for a keyframe; the caller rate-limits and sends `request-keyframe`. */
  readonly onRequestKeyframe: (reason: KeyframeRequestReason) => void;
  /** Every decoder state change. */
  readonly onStateChange?: (state: VideoChannelDecoderState) => void;
  /** Every painted frame. */
  readonly onPaint?: (report: PlayerPaintReport) => void;
  /** Local clock minus the daemon's clock, ms (default 0); change it with {@link VideoChannelPlayer.setClockOffset}. */
  readonly clockOffsetMs?: number;
  /** The local clock, ms (default `performance.now()`); give the reassembler the same clock. */
  readonly now?: () => number;
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
    const now = options.now ?? (() => performance.now());
    const logger = options.logger ?? consoleLogger();
    this.#logger = logger;
    this.#container = options.container;
    this.#onStateChange = options.onStateChange;
    this.#onPaint = options.onPaint;
    this.#stats = new VideoStats({ now, clockOffsetMs: options.clockOffsetMs ?? 0 });
    this.#clockKnown = options.clockOffsetMs !== undefined;

    const canvas = options.container.ownerDocument.createElement('canvas');
    canvas.setAttribute('data-svc-video-canvas', '');
    Object.assign(canvas.style, { display: 'block', width: '100%', height: 'auto' });
    this.canvas = canvas;

    this.#presenter = new CanvasPresenter<DecodedFrameMeta>({
      canvas,
      presentationDelayMs: options.presentationDelayMs,
      now,
      stats: this.#stats,
      logger,
      ...(options.requestFrame !== undefined && { requestFrame: options.requestFrame }),
      onPaint: (report) => this.#painted(report),
    });
    this.#decoder = new VideoChannelDecoder({
      codec: options.codec,
      lossPolicy: options.lossPolicy,
      now,
      logger,
      stats: this.#stats,
      onFrame: (frame, meta) => {
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

  /** The profile changed: its presentation delay and loss behaviour from now on. */
  setQos(presentationDelayMs: number, lossPolicy: LossPolicy): void {
    this.#presenter.setPresentationDelay(presentationDelayMs);
    this.#decoder.setLossPolicy(lossPolicy);
  }

  /** The decoder's current state. */
  get state(): VideoChannelDecoderState {
    return this.#decoder.state;
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
    const listener = this.#onPaint;
    if (listener !== undefined) safeCall(this.#logger, 'onPaint', () => listener({ ...report, latencyMs }));
  }
}
