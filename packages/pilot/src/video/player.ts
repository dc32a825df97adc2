import type { AssembledFrame, FrameLoss } from '@svc/wire';
import { reportListenerError } from '../listener.js';
import {
  type DecodedFrameMeta,
  type KeyframeRequestReason,
  type LossPolicy,
  VideoChannelDecoder,
  type VideoChannelDecoderState,
} from './decoder.js';
import { clearVideoMessage, showVideoMessage } from './message.js';
import { CanvasPresenter, type PaintReport, type RequestFrame } from './presenter.js';
import { VideoStats, type VideoStatsSnapshot } from './stats.js';

/** A painted frame with its send→paint latency, reported through {@link VideoChannelPlayerOptions.onPaint}. */
export interface PlayerPaintReport extends PaintReport<DecodedFrameMeta> {
  /** Send→paint latency, ms, with the current clock offset. */
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
  #showingMessage = false;

  constructor(options: VideoChannelPlayerOptions) {
    const now = options.now ?? (() => performance.now());
    this.#container = options.container;
    this.#onStateChange = options.onStateChange;
    this.#onPaint = options.onPaint;
    this.#stats = new VideoStats({ now, clockOffsetMs: options.clockOffsetMs ?? 0 });

    const canvas = options.container.ownerDocument.createElement('canvas');
    canvas.setAttribute('data-svc-video-canvas', '');
    Object.assign(canvas.style, { display: 'block', width: '100%', height: 'auto' });
    this.canvas = canvas;

    this.#presenter = new CanvasPresenter<DecodedFrameMeta>({
      canvas,
      presentationDelayMs: options.presentationDelayMs,
      now,
      stats: this.#stats,
      ...(options.requestFrame !== undefined && { requestFrame: options.requestFrame }),
      onPaint: (report) => this.#painted(report),
    });
    this.#decoder = new VideoChannelDecoder({
      codec: options.codec,
      lossPolicy: options.lossPolicy,
      now,
      stats: this.#stats,
      onFrame: (frame, meta) => this.#presenter.present(frame, meta),
      onRequestKeyframe: options.onRequestKeyframe,
      onStateChange: (state) => this.#stateChanged(state),
    });
    options.container.append(canvas);
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
    this.#showingMessage = false;
  }

  #stateChanged(state: VideoChannelDecoderState): void {
    if (state.kind === 'unsupported') {
      showVideoMessage(this.#container, state.message);
      this.#showingMessage = true;
    } else if (this.#showingMessage && state.kind !== 'closed') {
      clearVideoMessage(this.#container);
      this.#showingMessage = false;
    }
    if (this.#onStateChange === undefined) return;
    try {
      this.#onStateChange(state);
    } catch (err) {
      reportListenerError(err);
    }
  }

  #painted(report: PaintReport<DecodedFrameMeta>): void {
    const latencyMs = this.#stats.recordLatency(report.paintMs, report.meta.senderTimestampUs);
    this.#onPaint?.({ ...report, latencyMs });
  }
}
