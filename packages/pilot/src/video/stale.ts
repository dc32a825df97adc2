import {
  assertTransition,
  type Clock,
  consoleLogger,
  type Logger,
  safeCall,
  type TimerHandle,
  type TransitionTable,
} from '@svc/runtime';

/** The part of a {@link Clock} the watch uses: the time and an interval timer. */
export type StaleWatchClock = Pick<Clock, 'now' | 'setInterval' | 'clearInterval'>;

/**
 * What is on screen, as far as freshness goes:
 * - `no-picture`: nothing painted yet ("waiting for video"), never called stale;
 * - `live`: a new frame was painted within the stale threshold;
 * - `stale`: nothing new was painted for longer than the threshold: the picture on screen is old
 *   and must not be taken for live.
 */
export type PictureState =
  | { readonly kind: 'no-picture' }
  | {
      readonly kind: 'live' | 'stale';
      /** Local clock when the picture on screen was painted, ms. */
      readonly paintedMs: number;
      /** Its picture age at that paint, ms; `NaN` when unknown (no capture clock or no clock offset). */
      readonly ageAtPaintMs: number;
    };

/** The kinds of {@link PictureState}. */
export type PictureStateKind = PictureState['kind'];

const TRANSITIONS: TransitionTable<PictureStateKind> = {
  'no-picture': ['live'],
  live: ['live', 'stale'],
  stale: ['live'],
};

/** Construction options of a {@link StaleWatch}. */
export interface StaleWatchOptions {
  /** Time and the check timer. */
  readonly clock: StaleWatchClock;
  /**
   * The least time without a new picture that makes it stale, ms (default 300); the threshold is the
   * larger of this and 3 frame intervals.
   */
  readonly staleAfterMs?: number;
  /** How often the watch checks between paints, ms (default 50). */
  readonly checkIntervalMs?: number;
  /**
   * Each change between live and stale, with the picture's age (see {@link StaleWatch.ageMs}). Not
   * called for the first picture (from `no-picture` to `live`).
   */
  readonly onStaleChange?: (stale: boolean, ageMs: number) => void;
  /** Where a callback's exception is reported (default `consoleLogger()`). */
  readonly logger?: Logger;
}

/** Default of {@link StaleWatchOptions.staleAfterMs}. */
export const DEFAULT_STALE_AFTER_MS = 300;
/** Frame intervals without a new picture that make it stale (when longer than `staleAfterMs`). */
const STALE_FRAME_INTERVALS = 3;
/** Capture-time steps the frame interval is the median of. */
const INTERVAL_SAMPLES = 15;

/**
 * Watches that the picture on screen is fresh. It is told each decoded frame's capture time (for
 * the frame interval) and each paint of a new frame; on a timer of the injected clock, and at each
 * paint, it decides whether the picture is `stale`: nothing new painted for longer than the larger
 * of 3 frame intervals and `staleAfterMs`. Before the first paint the state is `no-picture`, not
 * stale.
 */
export class StaleWatch {
  readonly #clock: StaleWatchClock;
  readonly #staleAfterMs: number;
  readonly #checkIntervalMs: number;
  readonly #onStaleChange: StaleWatchOptions['onStaleChange'];
  readonly #logger: Logger;
  #state: PictureState = { kind: 'no-picture' };
  #timer: TimerHandle | undefined;
  #lastCaptureUs: number | undefined;
  /** Recent capture-time steps between consecutive frames, ms. */
  readonly #steps: number[] = [];
  #closed = false;

  constructor(options: StaleWatchOptions) {
    this.#clock = options.clock;
    this.#staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
    if (!(Number.isFinite(this.#staleAfterMs) && this.#staleAfterMs > 0))
      throw new TypeError(`staleAfterMs must be a number of ms > 0, got ${this.#staleAfterMs}`);
    this.#checkIntervalMs = options.checkIntervalMs ?? 50;
    if (!(Number.isFinite(this.#checkIntervalMs) && this.#checkIntervalMs > 0))
      throw new TypeError(`checkIntervalMs must be a number of ms > 0, got ${this.#checkIntervalMs}`);
    this.#onStaleChange = options.onStaleChange;
    this.#logger = options.logger ?? consoleLogger();
  }

  /** The current state. */
  get state(): PictureState {
    return this.#state;
  }

  /** Whether the picture on screen is stale (false before the first picture). */
  get stale(): boolean {
    return this.#state.kind === 'stale';
  }

  /** The frame interval from recent capture times, ms; `undefined` before two frames. */
  get frameIntervalMs(): number | undefined {
    if (this.#steps.length === 0) return undefined;
    const sorted = [...this.#steps].sort((a, b) => a - b);
    return sorted[sorted.length >> 1];
  }

  /** How long without a new picture makes it stale, ms: the larger of 3 frame intervals and `staleAfterMs`. */
  get thresholdMs(): number {
    return Math.max(STALE_FRAME_INTERVALS * (this.frameIntervalMs ?? 0), this.#staleAfterMs);
  }

  /** Time since the picture on screen was painted, ms; `NaN` before the first picture. */
  get sincePaintMs(): number {
    const state = this.#state;
    return state.kind === 'no-picture' ? Number.NaN : this.#clock.now() - state.paintedMs;
  }

  /**
   * Age of the picture on screen now, ms: its age at paint plus the time since; growing while
   * nothing new comes. `NaN` before the first picture, or when its capture time is unknown.
   */
  get pictureAgeMs(): number {
    const state = this.#state;
    return state.kind === 'no-picture' ? Number.NaN : state.ageAtPaintMs + this.sincePaintMs;
  }

  /**
   * The age to show a person: {@link pictureAgeMs} when it is known, else {@link sincePaintMs} (a
   * lower bound of it). `NaN` before the first picture.
   */
  get ageMs(): number {
    const age = this.pictureAgeMs;
    return Number.isNaN(age) ? this.sincePaintMs : age;
  }

  /** A frame came out of the decoder, captured at `captureUs` (µs, monotonic): it measures the frame interval. */
  handleFrame(captureUs: number): void {
    const previous = this.#lastCaptureUs;
    this.#lastCaptureUs = captureUs;
    if (previous === undefined) return;
    const stepMs = (captureUs - previous) / 1000;
    // A step back, or one of several seconds, is a source restart or a pause, not the frame rate.
    if (!(stepMs > 0 && stepMs < 10_000)) return;
    this.#steps.push(stepMs);
    if (this.#steps.length > INTERVAL_SAMPLES) this.#steps.shift();
  }

  /**
   * A new frame was painted.
   *
   * @param paintMs - Local clock at the paint, ms.
   * @param ageAtPaintMs - Its picture age at the paint, ms; `NaN` when unknown.
   */
  handlePaint(paintMs: number, ageAtPaintMs: number): void {
    if (this.#closed) return;
    const wasStale = this.#state.kind === 'stale';
    this.#move({ kind: 'live', paintedMs: paintMs, ageAtPaintMs });
    if (this.#timer === undefined)
      this.#timer = this.#clock.setInterval(() => this.check(), this.#checkIntervalMs);
    if (wasStale) this.#notify(false);
  }

  /** Checks the picture against the threshold now (the timer calls it; a caller may too). */
  check(): void {
    const state = this.#state;
    if (this.#closed || state.kind !== 'live') return;
    if (this.#clock.now() - state.paintedMs <= this.thresholdMs) return;
    this.#move({ ...state, kind: 'stale' });
    this.#notify(true);
  }

  /** Stops the timer; no further change is reported. */
  close(): void {
    this.#closed = true;
    this.#clock.clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #move(next: PictureState): void {
    assertTransition('StaleWatch', TRANSITIONS, this.#state.kind, next.kind);
    this.#state = next;
  }

  #notify(stale: boolean): void {
    const listener = this.#onStaleChange;
    if (listener === undefined) return;
    const ageMs = this.ageMs;
    safeCall(this.#logger, 'onStaleChange', () => listener(stale, ageMs));
  }
}
