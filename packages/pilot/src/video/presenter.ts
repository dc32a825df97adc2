import { consoleLogger, type Logger, safeCall } from '@svc/runtime';
import { VideoStats } from './stats.js';

/** What the presenter needs to know about a frame besides its pixels. */
export interface PresentMeta {
  /** Capture time, µs, monotonic (already unwrapped). */
  readonly captureTimestampUs: number;
}

/** One painted frame, reported through {@link CanvasPresenterOptions.onPaint}. */
export interface PaintReport<M extends PresentMeta = PresentMeta> {
  /** The meta the frame was presented with. */
  readonly meta: M;
  /** Local clock when the frame was drawn, ms. */
  readonly paintMs: number;
  /** When the frame was due, ms (equal to or before `paintMs`). */
  readonly dueMs: number;
  /** Whether it arrived after its due time. */
  readonly late: boolean;
}

/** Schedules a callback at the next paint opportunity (`requestAnimationFrame`'s shape). */
export type RequestFrame = (callback: (timeMs: number) => void) => void;

/** Construction options of a {@link CanvasPresenter}. */
export interface CanvasPresenterOptions<M extends PresentMeta = PresentMeta> {
  /** Where to paint. The presenter sizes it to the frames' display size. */
  readonly canvas: HTMLCanvasElement | OffscreenCanvas;
  /**
   * Jitter buffer, ms: each frame is painted this long after the arrival its capture time
   * predicts. 0 paints every frame as soon as it is decoded.
   */
  readonly presentationDelayMs: number;
  /**
   * Start at once (default true): the first frame after the start (or a {@link
   * CanvasPresenter.reset}) is painted as soon as it is decoded, and the delay is built up from
   * there by playing a quarter slower until it reaches `presentationDelayMs` (400 ms for 100 ms),
   * so the first picture does not wait for the jitter buffer. False holds the first frame the full
   * delay, like every other.
   */
  readonly rampDelay?: boolean;
  /** The local clock, ms (default `performance.now()`). */
  readonly now?: () => number;
  /** Paint scheduler (default `requestAnimationFrame`, or a 16 ms timer where there is none). */
  readonly requestFrame?: RequestFrame;
  /** Counters of painted, late, dropped and re-anchored frames go here (default: a private instance). */
  readonly stats?: VideoStats;
  /** Called after each paint. */
  readonly onPaint?: (report: PaintReport<M>) => void;
  /** Where a callback's exception and a canvas that cannot be painted are reported (default `consoleLogger()`). */
  readonly logger?: Logger;
  /**
   * A frame that arrives more than this much earlier than the clock mapping predicts moves the
   * mapping to it (default 50 ms), so a slow first frame does not add its delay to all others.
   */
  readonly maxDriftMs?: number;
  /** After this many consecutive late frames the mapping moves to the latest (default 10). */
  readonly maxLateStreak?: number;
  /**
   * Most frames waiting for their paint (default 16); beyond it the oldest is dropped. It bounds
   * the memory held when paints stop (a hidden page runs no animation frames).
   */
  readonly maxQueued?: number;
}

/** After a start the delay builds up at this share of real time (playback a quarter slower). */
const DELAY_RAMP_RATE = 0.25;

/** The subset of a `VideoFrame` the presenter uses, so tests can pass a stand-in. */
export type PresentableFrame = Pick<VideoFrame, 'displayWidth' | 'displayHeight' | 'close'> &
  CanvasImageSource;

interface Queued<M> {
  readonly frame: PresentableFrame;
  readonly meta: M;
  readonly captureUs: number;
  /** Moves when the mapping moves. */
  dueMs: number;
  readonly late: boolean;
}

type Context2D = CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D;

/**
 * Paints decoded frames on a canvas at `arrival-anchored` times: the first frame maps its capture
 * time to its arrival time, and every frame is painted at
 * `anchorLocal + (capture - anchorCapture) + presentationDelayMs`. So frames keep the spacing they
 * were captured with, and network jitter up to the delay is absorbed.
 *
 * - A frame already past its time when it arrives is painted at the next paint opportunity and
 *   counted `late`.
 * - When a newer frame is due, older unpainted ones are closed and counted `dropped`.
 * - The mapping moves (re-anchors) to a frame that arrives more than `maxDriftMs` earlier than it
 *   predicts, or after `maxLateStreak` consecutive late frames, so the delay stays bounded; frames
 *   still waiting move with it.
 * - With `presentationDelayMs` 0 there is no mapping: each frame is painted at the next paint
 *   opportunity, and a newer one supersedes it if it comes first.
 *
 * Every frame given to {@link CanvasPresenter.present} is closed exactly once: after its paint,
 * when dropped, or by {@link CanvasPresenter.close}.
 */
export class CanvasPresenter<M extends PresentMeta = PresentMeta> {
  /** Counters this presenter updates. */
  readonly stats: VideoStats;
  readonly #canvas: HTMLCanvasElement | OffscreenCanvas;
  #delayMs: number;
  readonly #rampDelay: boolean;
  /** When the delay started building up from 0 (local ms); `undefined` once it is whole. */
  #rampFrom: number | undefined;
  readonly #now: () => number;
  readonly #requestFrame: RequestFrame;
  readonly #onPaint: ((report: PaintReport<M>) => void) | undefined;
  readonly #logger: Logger;
  readonly #maxDriftMs: number;
  readonly #maxLateStreak: number;
  readonly #maxQueued: number;
  readonly #queue: Queued<M>[] = [];
  readonly #drainWaiters: (() => void)[] = [];
  #context: Context2D | undefined;
  #anchor: { readonly localMs: number; readonly captureUs: number } | undefined;
  #lateStreak = 0;
  #paintScheduled = false;
  #width = 0;
  #height = 0;
  #closed = false;

  constructor(options: CanvasPresenterOptions<M>) {
    const delay = options.presentationDelayMs;
    if (!(Number.isFinite(delay) && delay >= 0)) {
      throw new TypeError(`presentationDelayMs must be a number ≥ 0, got ${delay}`);
    }
    this.#canvas = options.canvas;
    this.#delayMs = delay;
    this.#rampDelay = options.rampDelay ?? true;
    this.#now = options.now ?? (() => performance.now());
    this.#requestFrame = options.requestFrame ?? defaultRequestFrame();
    this.stats = options.stats ?? new VideoStats({ now: this.#now });
    this.#onPaint = options.onPaint;
    this.#logger = options.logger ?? consoleLogger();
    this.#maxDriftMs = options.maxDriftMs ?? 50;
    this.#maxLateStreak = options.maxLateStreak ?? 10;
    this.#maxQueued = options.maxQueued ?? 16;
    if (!(this.#maxDriftMs > 0)) throw new TypeError(`maxDriftMs must be > 0, got ${this.#maxDriftMs}`);
    for (const [name, value] of [
      ['maxLateStreak', this.#maxLateStreak],
      ['maxQueued', this.#maxQueued],
    ] as const) {
      if (!(Number.isInteger(value) && value >= 1))
        throw new TypeError(`${name} must be an integer ≥ 1, got ${value}`);
    }
  }

  /** Frames waiting for their paint. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * Takes one decoded frame (ownership passes to the presenter) and schedules its paint.
   *
   * @param frame - The decoded frame; closed by the presenter.
   * @param meta - Its capture time (µs, monotonic) and whatever the caller wants back in `onPaint`.
   */
  present(frame: PresentableFrame, meta: M): void {
    if (this.#closed) {
      frame.close();
      return;
    }
    const nowMs = this.#now();
    const capture = meta.captureTimestampUs;
    let dueMs = nowMs;
    let late = false;
    if (this.#delayMs > 0) {
      if (this.#anchor === undefined) {
        this.#reanchor(nowMs, capture, false);
        if (this.#rampDelay) this.#rampFrom = nowMs;
      }
      // How much later than the mapping predicts this frame arrived (negative: earlier).
      const lagMs = nowMs - this.#predictedArrival(capture);
      if (lagMs < -this.#maxDriftMs) {
        this.#reanchor(nowMs, capture, true);
      } else if (lagMs > this.#delayMs) {
        late = true;
        this.stats.recordLate();
        this.#lateStreak++;
        if (this.#lateStreak >= this.#maxLateStreak) this.#reanchor(nowMs, capture, true);
      } else {
        this.#lateStreak = 0;
      }
      dueMs = this.#predictedArrival(capture) + this.#appliedDelay(nowMs);
    }
    this.#queue.push({ frame, meta, captureUs: capture, dueMs, late });
    while (this.#queue.length > this.#maxQueued) {
      this.#queue.shift()!.frame.close();
      this.stats.recordDropped();
    }
    this.#schedule();
  }

  /** Resolves when no frame is waiting for its paint (at once when none is). */
  drain(): Promise<void> {
    if (this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /**
   * Forgets the clock mapping; the next frame anchors a new one. Call it when the source restarts
   * its capture clock.
   */
  reset(): void {
    this.#anchor = undefined;
    this.#lateStreak = 0;
  }

  /**
   * Another presentation delay from the next frame on (the profile changed); the clock mapping
   * starts over.
   */
  setPresentationDelay(delayMs: number): void {
    if (!(Number.isFinite(delayMs) && delayMs >= 0)) {
      throw new TypeError(`presentationDelayMs must be a number ≥ 0, got ${delayMs}`);
    }
    this.#delayMs = delayMs;
    this.reset();
  }

  /** Closes every waiting frame and stops painting. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const q of this.#queue.splice(0)) q.frame.close();
    this.#settleDrain();
  }

  /**
   * Maps `captureUs` to `localMs` from now on. Frames still waiting move with the mapping, so they
   * keep their spacing and order instead of being overtaken.
   */
  #reanchor(localMs: number, captureUs: number, counted: boolean): void {
    this.#anchor = { localMs, captureUs };
    this.#lateStreak = 0;
    if (counted) this.stats.recordReanchor();
    const delay = this.#appliedDelay(localMs);
    for (const q of this.#queue) q.dueMs = this.#predictedArrival(q.captureUs) + delay;
  }

  /** The delay in force at `nowMs`: building up at a quarter of real time after a start, then whole. */
  #appliedDelay(nowMs: number): number {
    if (this.#rampFrom === undefined) return this.#delayMs;
    const built = (nowMs - this.#rampFrom) * DELAY_RAMP_RATE;
    if (built < this.#delayMs) return built;
    this.#rampFrom = undefined;
    return this.#delayMs;
  }

  /** Local time at which the mapping expects a frame captured at `captureUs` to arrive. */
  #predictedArrival(captureUs: number): number {
    const anchor = this.#anchor!;
    return anchor.localMs + (captureUs - anchor.captureUs) / 1000;
  }

  #schedule(): void {
    if (this.#paintScheduled || this.#closed || this.#queue.length === 0) return;
    this.#paintScheduled = true;
    this.#requestFrame(() => {
      this.#paintScheduled = false;
      this.#paintDue();
    });
  }

  /** Paints the newest frame that is due, closing the older ones it supersedes. */
  #paintDue(): void {
    if (this.#closed) return;
    const nowMs = this.#now();
    let newest = -1;
    for (let i = 0; i < this.#queue.length; i++) {
      if (this.#queue[i]!.dueMs <= nowMs) newest = i;
    }
    if (newest >= 0) {
      const taken = this.#queue.splice(0, newest + 1);
      const shown = taken.pop()!;
      for (const q of taken) {
        q.frame.close();
        this.stats.recordDropped();
      }
      try {
        this.#paint(shown, nowMs);
      } catch (err) {
        // A canvas that cannot be drawn on (no 2D context) must not stop the paint loop silently.
        this.#logger.error({ err }, 'a frame could not be painted');
      }
    }
    if (this.#queue.length > 0) this.#schedule();
    else this.#settleDrain();
  }

  #paint(q: Queued<M>, nowMs: number): void {
    const { frame } = q;
    try {
      const ctx = this.#context2d();
      if (frame.displayWidth !== this.#width || frame.displayHeight !== this.#height) {
        this.#width = frame.displayWidth;
        this.#height = frame.displayHeight;
        this.#canvas.width = this.#width;
        this.#canvas.height = this.#height;
      }
      ctx.drawImage(frame, 0, 0, this.#canvas.width, this.#canvas.height);
    } finally {
      frame.close();
    }
    this.stats.recordPainted();
    const listener = this.#onPaint;
    if (listener !== undefined)
      safeCall(this.#logger, 'onPaint', () =>
        listener({ meta: q.meta, paintMs: nowMs, dueMs: q.dueMs, late: q.late }),
      );
  }

  #context2d(): Context2D {
    if (this.#context !== undefined) return this.#context;
    // `getContext` has different overloads on the two canvas types; both return a 2D context here.
    const ctx = (this.#canvas as HTMLCanvasElement).getContext('2d') as Context2D | null;
    if (ctx === null) throw new TypeError('the canvas has no 2D context (it already has another kind)');
    this.#context = ctx;
    return ctx;
  }

  #settleDrain(): void {
    for (const resolve of this.#drainWaiters.splice(0)) resolve();
  }
}

function defaultRequestFrame(): RequestFrame {
  if (typeof requestAnimationFrame === 'function') return (cb) => requestAnimationFrame(cb);
  return (cb) => setTimeout(() => cb(performance.now()), 16);
}
