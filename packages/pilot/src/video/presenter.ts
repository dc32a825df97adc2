import { consoleLogger, type Logger, safeCall } from '@svc/runtime';
import { JitterEstimator, type JitterTuning } from './jitter.js';
import { VideoStats } from './stats.js';

/** What the presenter needs to know about a frame besides its pixels. */
export interface PresentMeta {
  /** Capture time, µs, monotonic (already unwrapped). */
  readonly captureTimestampUs: number;
  /**
   * Local clock (ms) when the frame became whole, before decoding (default: when it is presented).
   * The hold is measured from here, so it covers decode time as well as arrival jitter.
   */
  readonly receivedMs?: number;
}

/** One painted frame, reported through {@link CanvasPresenterOptions.onPaint}. */
export interface PaintReport<M extends PresentMeta = PresentMeta> {
  /** The meta the frame was presented with. */
  readonly meta: M;
  /** Local clock when the frame was drawn, ms. */
  readonly paintMs: number;
  /**
   * When the frame was due, ms. A frame goes out at the paint opportunity nearest its due time, so
   * `paintMs` may be up to half a paint interval before it.
   */
  readonly dueMs: number;
  /** Whether it was ready only after its due time (it was then painted at once). */
  readonly late: boolean;
  /** The hold its due time was set with, ms (0 for a frame shown at once, such as the first). */
  readonly holdMs: number;
}

/** Schedules a callback at the next paint opportunity (`requestAnimationFrame`'s shape). */
export type RequestFrame = (callback: (timeMs: number) => void) => void;

/** Construction options of a {@link CanvasPresenter}. */
export interface CanvasPresenterOptions<M extends PresentMeta = PresentMeta> {
  /** Where to paint. The presenter sizes it to the frames' display size. */
  readonly canvas: HTMLCanvasElement | OffscreenCanvas;
  /**
   * The most a frame is held for smoothness, ms (the profile's presentation delay): the ceiling of
   * the adaptive hold. 0 paints every frame as soon as it is decoded.
   */
  readonly presentationDelayMs: number;
  /** Tuning of the adaptive hold (window, percentile, margin, how fast it falls). */
  readonly jitter?: JitterTuning;
  /** The local clock, ms (default `performance.now()`). */
  readonly now?: () => number;
  /** Paint scheduler (default `requestAnimationFrame`, or a 16 ms timer where there is none). */
  readonly requestFrame?: RequestFrame;
  /** Counters of painted, late, dropped and re-anchored frames, and the hold, go here (default: a private instance). */
  readonly stats?: VideoStats;
  /** Called after each paint. */
  readonly onPaint?: (report: PaintReport<M>) => void;
  /** Where a callback's exception and a canvas that cannot be painted are reported (default `consoleLogger()`). */
  readonly logger?: Logger;
  /**
   * Most frames waiting for their paint (default 16); beyond it the oldest is closed (counted
   * `skippedBehind`). It bounds the memory held when paints stop (a hidden page runs no animation
   * frames) or a burst comes faster than paints.
   */
  readonly maxQueued?: number;
}

/** The subset of a `VideoFrame` the presenter uses, so tests can pass a stand-in. */
export type PresentableFrame = Pick<VideoFrame, 'displayWidth' | 'displayHeight' | 'close'> &
  CanvasImageSource;

/**
 * Longest a start's backlog is played out rather than skipped, ms: after the first frame of a start
 * (the replay at join: its last frame, and the live frames that queued behind it while it decoded),
 * every frame is painted in turn, one per paint, until none waits (or this long has passed).
 */
const START_PLAYOUT_MS = 1000;

/**
 * For this long after a start the hold learns nothing: the replay at join, the frames queued
 * behind it on the wire and in the decoder, and a new connection's first round trips are late for
 * reasons the link will not repeat. A hold learnt from them would sit at the ceiling and take
 * seconds to come down.
 */
const WARM_UP_MS = 1000;

/** The display's paint interval assumed until paints have measured it, ms (60 Hz). */
const DEFAULT_PAINT_INTERVAL_MS = 1000 / 60;
/** Paint intervals outside this range (ms) are gaps between paints, not the display's rate. */
const PAINT_INTERVAL_RANGE_MS = [4, 40] as const;

interface Queued<M> {
  readonly frame: PresentableFrame;
  readonly meta: M;
  readonly dueMs: number;
  readonly late: boolean;
  readonly holdMs: number;
}

type Context2D = CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D;

/**
 * Paints decoded frames on a canvas with an adaptive hold (a jitter buffer): each frame is due at
 * the time the earliest-arrival line predicts for its capture time plus the hold, which a
 * {@link JitterEstimator} sets from the recent arrival jitter and decode times, never above
 * `presentationDelayMs`. Frames keep the spacing they were captured with, with no more delay than
 * the link's measured jitter needs (a few ms on a calm link).
 *
 * - The first frame after a start (or a {@link CanvasPresenter.reset}) is painted at once: the first
 *   picture never waits for the buffer.
 * - Every frame that arrives in time is painted: a frame ready only after its due time is painted
 *   at the next paint opportunity (counted `late`), and when several are due they go out oldest
 *   first, one per paint, so a late paint opportunity or a few frames decoded together cost none.
 * - Latency never creeps: when the frames due span more than `presentationDelayMs` (the pipeline
 *   is truly behind: CPU contention, a burst, a stall) only the newest is painted; the others (and
 *   any beyond `maxQueued`) are closed and counted `skippedBehind`. A frame far off the line (a
 *   stalled link releasing a backlog, a restarted source clock) starts a new line (counted in
 *   `reanchors`) instead of holding every later frame.
 * - A start's backlog (after the first frame of a start or a {@link CanvasPresenter.reset}: the
 *   replay at join and the live frames that queued behind it while it decoded) is played out, one
 *   frame per paint, for up to a second; the hold learns nothing in a start's first second.
 * - With `presentationDelayMs` 0 each frame is painted at the next paint opportunity, and a newer
 *   one supersedes it if it comes first.
 *
 * Every frame given to {@link CanvasPresenter.present} is closed exactly once: after its paint,
 * when dropped, or by {@link CanvasPresenter.close}.
 */
export class CanvasPresenter<M extends PresentMeta = PresentMeta> {
  /** Counters this presenter updates. */
  readonly stats: VideoStats;
  readonly #canvas: HTMLCanvasElement | OffscreenCanvas;
  readonly #jitter: JitterEstimator;
  readonly #now: () => number;
  readonly #requestFrame: RequestFrame;
  readonly #onPaint: ((report: PaintReport<M>) => void) | undefined;
  readonly #logger: Logger;
  readonly #maxQueued: number;
  readonly #queue: Queued<M>[] = [];
  readonly #drainWaiters: (() => void)[] = [];
  /**
   * Set from the first frame of a start (not of a re-anchoring) until a paint leaves no frame due:
   * the backlog of the start is played out, not skipped, and its waits are not taken for decode
   * time. The local ms when it ends at the latest.
   */
  #startUntilMs: number | undefined;
  /** Until when (local ms) the hold learns nothing after a start; see {@link WARM_UP_MS}. */
  #warmUntilMs = Number.NEGATIVE_INFINITY;
  #context: Context2D | undefined;
  #paintScheduled = false;
  /** The display's paint interval, ms, measured between consecutive paint opportunities. */
  #paintIntervalMs = DEFAULT_PAINT_INTERVAL_MS;
  /**
   * When the last paint opportunity ran, local ms, if it asked for the next one at once (frames
   * were still waiting): the time to that next one is then exactly one paint interval.
   */
  #chainedFromMs: number | undefined;
  #width = 0;
  #height = 0;
  #closed = false;

  constructor(options: CanvasPresenterOptions<M>) {
    this.#jitter = new JitterEstimator({ ...options.jitter, ceilingMs: options.presentationDelayMs });
    this.#canvas = options.canvas;
    this.#now = options.now ?? (() => performance.now());
    this.#requestFrame = options.requestFrame ?? defaultRequestFrame();
    this.stats = options.stats ?? new VideoStats({ now: this.#now });
    this.#onPaint = options.onPaint;
    this.#logger = options.logger ?? consoleLogger();
    this.#maxQueued = options.maxQueued ?? 16;
    if (!(Number.isInteger(this.#maxQueued) && this.#maxQueued >= 1))
      throw new TypeError(`maxQueued must be an integer ≥ 1, got ${this.#maxQueued}`);
  }

  /** The hold in force now, ms (the adaptive jitter buffer's target, at most `presentationDelayMs`). */
  get holdMs(): number {
    return this.#jitter.holdMs(this.#now());
  }

  /** The arrival jitter estimate, ms (high percentile of lateness); `null` before the first frame. */
  get jitterMs(): number | null {
    return this.#jitter.jitterMs;
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
    const arrivalMs = Math.min(meta.receivedMs ?? nowMs, nowMs);
    const verdict = this.#jitter.handleArrival(arrivalMs, capture);
    if (verdict.restarted && !verdict.reanchored) {
      this.#startUntilMs = nowMs + START_PLAYOUT_MS;
      this.#warmUntilMs = nowMs + WARM_UP_MS;
    } else if (this.#startUntilMs !== undefined && nowMs > this.#startUntilMs) this.#startUntilMs = undefined;
    if (verdict.reanchored && this.#jitter.ceilingMs > 0) this.stats.recordReanchor();
    // The frame is judged by the schedule in force when it came, before it teaches the hold: one
    // that forces the hold up is late (the gap before it grew); the frames after it wait longer.
    const holdMs = this.#jitter.holdMs(nowMs);
    if (nowMs >= this.#warmUntilMs) this.#jitter.handleReady(nowMs, capture);
    this.stats.recordHold(holdMs, this.#jitter.jitterMs);
    let dueMs = nowMs;
    let late = false;
    let heldMs = 0;
    if (holdMs > 0 && !verdict.restarted) {
      dueMs = this.#jitter.expectedArrivalMs(capture)! + holdMs;
      heldMs = holdMs;
      if (dueMs < nowMs) {
        late = true;
        this.stats.recordLate();
      }
    }
    this.#queue.push({ frame, meta, dueMs, late, holdMs: heldMs });
    while (this.#queue.length > this.#maxQueued) {
      this.#queue.shift()!.frame.close();
      this.stats.recordSkippedBehind();
    }
    this.#schedule();
  }

  /** Resolves when no frame is waiting for its paint (at once when none is). */
  drain(): Promise<void> {
    if (this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /**
   * Forgets the clock mapping; the next frame is shown at once and starts a new one. Call it when
   * the source restarts its capture clock. The hold stays: it describes the link.
   */
  reset(): void {
    this.#jitter.reset();
  }

  /**
   * Another ceiling for the hold from the next frame on (the profile changed its presentation
   * delay); a hold above it comes down to it at once.
   */
  setPresentationDelay(delayMs: number): void {
    this.#jitter.setCeiling(delayMs);
  }

  /** Closes every waiting frame and stops painting. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const q of this.#queue.splice(0)) q.frame.close();
    this.#settleDrain();
  }

  #schedule(): void {
    if (this.#paintScheduled || this.#closed || this.#queue.length === 0) return;
    this.#paintScheduled = true;
    this.#requestFrame(() => {
      this.#paintScheduled = false;
      this.#measurePaintInterval();
      this.#paintDue();
    });
  }

  /**
   * Paints the oldest frame that is due, so a paint opportunity that came late or a few frames
   * decoded together cost no frame: they go out one per paint (twice the frame rate on a 60 Hz
   * display for 30 fps video) until none waits. Only when the frames due span more than the
   * ceiling is the pipeline truly behind: then the newest due frame is painted and the older ones
   * are closed (counted `skippedBehind`). A start's backlog is played out (see {@link #startUntilMs}).
   */
  #paintDue(): void {
    if (this.#closed) return;
    const nowMs = this.#now();
    if (this.#startUntilMs !== undefined && nowMs > this.#startUntilMs) this.#startUntilMs = undefined;
    // A frame goes out at the paint opportunity nearest its due time: one due before the next
    // opportunity's midpoint would otherwise wait a whole interval longer than it should.
    const dueBy = nowMs + this.#paintIntervalMs / 2;
    let newest = -1;
    for (let i = 0; i < this.#queue.length; i++) {
      if (this.#queue[i]!.dueMs <= dueBy) newest = i;
    }
    if (newest >= 0) {
      const spanMs =
        (this.#queue[newest]!.meta.captureTimestampUs - this.#queue[0]!.meta.captureTimestampUs) / 1000;
      const behind = this.#startUntilMs === undefined && spanMs > this.#jitter.ceilingMs;
      const taken = this.#queue.splice(0, behind ? newest + 1 : 1);
      const shown = taken.pop()!;
      for (const q of taken) {
        q.frame.close();
        this.stats.recordSkippedBehind();
      }
      try {
        this.#paint(shown, nowMs);
      } catch (err) {
        // A canvas that cannot be drawn on (no 2D context) must not stop the paint loop silently.
        this.#logger.error({ err }, 'a frame could not be painted');
      }
      // The start's backlog is played out once nothing more is due.
      if (
        this.#startUntilMs !== undefined &&
        !(this.#queue[0] !== undefined && this.#queue[0].dueMs <= dueBy)
      )
        this.#startUntilMs = undefined;
    }
    if (this.#queue.length > 0) {
      this.#chainedFromMs = nowMs;
      this.#schedule();
    } else this.#settleDrain();
  }

  /**
   * Takes the time from the last paint opportunity into the display's interval, when that one
   * asked for this one at once (otherwise the time between them includes a wait for a frame).
   */
  #measurePaintInterval(): void {
    const nowMs = this.#now();
    const from = this.#chainedFromMs;
    this.#chainedFromMs = undefined;
    if (from === undefined) return;
    const interval = nowMs - from;
    if (interval < PAINT_INTERVAL_RANGE_MS[0] || interval > PAINT_INTERVAL_RANGE_MS[1]) return;
    this.#paintIntervalMs += (interval - this.#paintIntervalMs) / 8;
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
        listener({ meta: q.meta, paintMs: nowMs, dueMs: q.dueMs, late: q.late, holdMs: q.holdMs }),
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
