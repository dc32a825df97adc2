/**
 * A camera feed that stays up: an {@link RtspClient} restarted whenever the camera drops the
 * connection, restarts, or stops sending, with capped exponential backoff and full jitter.
 */
import { type Logger, redactText, redactUrl, silentLogger } from '@svc/runtime';
import { MediaError } from '../errors.js';
import type { SdpMedia } from '../sdp.js';
import { RtspClient, type RtspOptions } from './client.js';
import { backoffDelayMs, DEFAULT_BACKOFF, type Scheduler, systemScheduler } from './timing.js';

/** What an {@link RtspSource} is doing. */
export type RtspSourceState = 'connecting' | 'playing' | 'backoff' | 'stopped';

/** Extra information with a state change. */
export interface RtspSourceStateDetail {
  /** Why the source left `playing` or `connecting` (with `backoff`). */
  readonly error?: MediaError;
  /** When the next attempt starts (with `backoff`). */
  readonly retryInMs?: number;
}

/** Options of {@link RtspSource}. */
export interface RtspSourceOptions extends RtspOptions {
  /** The chosen stream, on every (re)connect before its first packet: reset the depacketiser. */
  readonly onDescription?: (media: SdpMedia) => void;
  /** Every RTP packet, raw. */
  readonly onRtp?: (packet: Uint8Array, receivedAtMs: number) => void;
  readonly onStateChange?: (state: RtspSourceState, detail?: RtspSourceStateDetail) => void;
  /** A playing session without RTP for this long is restarted. Default 5000 ms. */
  readonly stallTimeoutMs?: number;
  /** Ceiling of the first retry delay. Default 500 ms. */
  readonly backoffBaseMs?: number;
  /** Largest retry delay. Default 30 000 ms. */
  readonly backoffCapMs?: number;
  /** A session that delivered packets for this long resets the backoff. Default 10 000 ms. */
  readonly healthyAfterMs?: number;
  /** Uniform draw in [0, 1) for the jitter; `Math.random` by default. */
  readonly random?: () => number;
  /** Timers (retries, stall detection, and the client's); the process's by default. */
  readonly scheduler?: Scheduler;
  /** Monotonic clock in ms; `performance.now()` by default. */
  readonly now?: () => number;
}

/** Default of {@link RtspSourceOptions.stallTimeoutMs}. */
export const DEFAULT_STALL_TIMEOUT_MS = 5000;
/** Default of {@link RtspSourceOptions.healthyAfterMs}. */
export const DEFAULT_HEALTHY_AFTER_MS = 10_000;

/**
 * Keeps an RTSP camera feed running until `stop()`. Every failure, whatever its code (a camera
 * may come back, credentials may be fixed on the camera), leads to `backoff` and another attempt.
 */
export class RtspSource {
  readonly #options: RtspSourceOptions;
  readonly #logger: Logger;
  readonly #scheduler: Scheduler;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #stallTimeoutMs: number;

  #state: RtspSourceState | undefined;
  #client: RtspClient | undefined;
  /** Stopping of clients that failed, awaited before the next attempt and by `stop()`. */
  #retiring: Promise<void> = Promise.resolve();
  #attempt = 0;
  #retryTimer: unknown;
  #stallTimer: unknown;
  #firstPacketAt: number | undefined;
  #lastActivityAt = 0;
  #stopping: Promise<void> | undefined;

  /** @param options - Camera, callbacks and policy; see {@link RtspSourceOptions}. */
  constructor(options: RtspSourceOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#scheduler = options.scheduler ?? systemScheduler;
    this.#now = options.now ?? (() => performance.now());
    this.#random = options.random ?? Math.random;
    this.#stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  }

  /** The current state; undefined before `start()`. */
  get state(): RtspSourceState | undefined {
    return this.#state;
  }

  /**
   * Starts connecting. Failures never reject: they show as `backoff` state changes.
   *
   * @throws TypeError when called twice.
   */
  start(): void {
    if (this.#state !== undefined) throw new TypeError('RtspSource.start() may be called once');
    this.#connect();
  }

  /** Stops retrying, tears the session down, and resolves once everything is closed. */
  stop(): Promise<void> {
    this.#stopping ??= this.#shutdown();
    return this.#stopping;
  }

  async #shutdown(): Promise<void> {
    this.#clearTimer('retry');
    this.#clearTimer('stall');
    const client = this.#client;
    this.#client = undefined;
    this.#state = 'stopped';
    await Promise.all([client?.stop(), this.#retiring]);
    this.#emitState('stopped');
  }

  #connect(): void {
    if (this.#stopping !== undefined) return;
    this.#firstPacketAt = undefined;
    this.#setState('connecting');
    const client: RtspClient = new RtspClient({
      url: this.#options.url,
      scheduler: this.#scheduler,
      now: this.#now,
      ...(this.#options.transport === undefined ? {} : { transport: this.#options.transport }),
      ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
      ...(this.#options.userAgent === undefined ? {} : { userAgent: this.#options.userAgent }),
      ...(this.#options.timeoutMs === undefined ? {} : { timeoutMs: this.#options.timeoutMs }),
      onDescription: (media) => {
        if (this.#client === client)
          this.#safeCall('onDescription', () => this.#options.onDescription?.(media));
      },
      onRtp: (packet, receivedAtMs) => this.#onPacket(client, packet, receivedAtMs),
      onError: (error) => this.#onFailure(client, error),
    });
    this.#client = client;
    client.start().then(
      () => {
        if (this.#client !== client) return;
        this.#lastActivityAt = this.#now();
        this.#setState('playing');
        this.#armStallCheck(this.#stallTimeoutMs);
      },
      (err: unknown) => {
        const error =
          err instanceof MediaError
            ? err
            : new MediaError('malformed-rtsp', redactText(String(err)), { cause: err });
        this.#onFailure(client, error);
      },
    );
  }

  #onPacket(client: RtspClient, packet: Uint8Array, receivedAtMs: number): void {
    if (this.#client !== client) return;
    this.#lastActivityAt = this.#now();
    this.#firstPacketAt ??= this.#lastActivityAt;
    this.#safeCall('onRtp', () => this.#options.onRtp?.(packet, receivedAtMs));
  }

  /** Restarts the session when no packet came for the stall timeout. */
  #armStallCheck(delayMs: number): void {
    this.#stallTimer = this.#scheduler.setTimeout(() => {
      this.#stallTimer = undefined;
      const client = this.#client;
      if (client === undefined || this.#state !== 'playing') return;
      const idleMs = this.#now() - this.#lastActivityAt;
      if (idleMs >= this.#stallTimeoutMs) {
        this.#onFailure(
          client,
          new MediaError(
            'timeout',
            `no RTP from ${redactUrl(this.#options.url)} for ${Math.round(idleMs)} ms`,
          ),
        );
      } else {
        this.#armStallCheck(this.#stallTimeoutMs - idleMs);
      }
    }, delayMs);
  }

  /** A session ended: retire its client and schedule the next attempt. */
  #onFailure(client: RtspClient, error: MediaError): void {
    if (this.#client !== client || this.#stopping !== undefined) return;
    this.#client = undefined;
    this.#clearTimer('stall');
    const healthyAfterMs = this.#options.healthyAfterMs ?? DEFAULT_HEALTHY_AFTER_MS;
    if (this.#firstPacketAt !== undefined && this.#now() - this.#firstPacketAt >= healthyAfterMs)
      this.#attempt = 0;
    const retryInMs = backoffDelayMs(this.#attempt, this.#random, {
      baseMs: this.#options.backoffBaseMs ?? DEFAULT_BACKOFF.baseMs,
      capMs: this.#options.backoffCapMs ?? DEFAULT_BACKOFF.capMs,
    });
    this.#attempt++;
    this.#logger.warn(
      { url: redactUrl(this.#options.url), code: error.code, retryInMs },
      `RTSP source will reconnect: ${error.message}`,
    );
    this.#retiring = Promise.all([this.#retiring, client.stop()]).then(() => undefined);
    this.#setState('backoff', { error, retryInMs });
    this.#retryTimer = this.#scheduler.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#retiring.then(
        () => this.#connect(),
        (err: unknown) =>
          this.#logger.error({}, `RTSP source could not retire a session: ${redactText(String(err))}`),
      );
    }, retryInMs);
  }

  #clearTimer(which: 'retry' | 'stall'): void {
    const handle = which === 'retry' ? this.#retryTimer : this.#stallTimer;
    if (handle !== undefined) this.#scheduler.clearTimeout(handle);
    if (which === 'retry') this.#retryTimer = undefined;
    else this.#stallTimer = undefined;
  }

  #setState(state: RtspSourceState, detail?: RtspSourceStateDetail): void {
    if (this.#stopping !== undefined) return;
    this.#state = state;
    this.#emitState(state, detail);
  }

  #emitState(state: RtspSourceState, detail?: RtspSourceStateDetail): void {
    this.#safeCall('onStateChange', () =>
      detail === undefined
        ? this.#options.onStateChange?.(state)
        : this.#options.onStateChange?.(state, detail),
    );
  }

  /** Calls back into the user's code; an exception there is logged, never lost or fatal. */
  #safeCall(name: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.#logger.error({ callback: name }, `RtspSource ${name} callback threw: ${redactText(String(err))}`);
    }
  }
}
