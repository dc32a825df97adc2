/**
 * A camera feed that stays up: an {@link RtspClient} restarted whenever the camera drops the
 * connection, restarts, or stops sending, with capped exponential backoff and full jitter.
 */
import {
  Backoff,
  type Clock,
  type Logger,
  RECONNECT_BACKOFF,
  redactText,
  redactUrl,
  safeCall,
  silentLogger,
  systemClock,
  type TimerHandle,
} from '@svc/runtime';
import { MediaError } from '../errors.js';
import type { SdpMedia } from '../sdp.js';
import { RtspClient, type RtspOptions } from './client.js';

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
  /** Every RTCP compound packet of the stream, raw (sender reports). */
  readonly onRtcp?: (packet: Uint8Array, receivedAtMs: number) => void;
  readonly onStateChange?: (state: RtspSourceState, detail?: RtspSourceStateDetail) => void;
  /** A playing session without RTP for this long is restarted. Default 5000 ms. */
  readonly stallTimeoutMs?: number;
  /** Ceiling of the first retry delay. Default 500 ms ({@link RECONNECT_BACKOFF}). */
  readonly backoffBaseMs?: number;
  /** Largest retry delay. Default 30 000 ms ({@link RECONNECT_BACKOFF}). */
  readonly backoffCapMs?: number;
  /** A session that delivered packets for this long resets the backoff. Default 10 000 ms. */
  readonly healthyAfterMs?: number;
  /** Uniform draw in [0, 1) for the jitter; `Math.random` by default. */
  readonly random?: () => number;
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
  readonly #clock: Clock;
  readonly #backoff: Backoff;
  readonly #stallTimeoutMs: number;

  #state: RtspSourceState | undefined;
  #client: RtspClient | undefined;
  /** Stopping of clients that failed, awaited before the next attempt and by `stop()`. */
  #retiring: Promise<void> = Promise.resolve();
  #retryTimer: TimerHandle | undefined;
  #stallTimer: TimerHandle | undefined;
  #firstPacketAt: number | undefined;
  #lastActivityAt = 0;
  #stopping: Promise<void> | undefined;

  /**
   * @param options - Camera, callbacks and policy; see {@link RtspSourceOptions}.
   * @throws TypeError when the backoff's base or cap is not a positive number, or cap < base.
   */
  constructor(options: RtspSourceOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? systemClock;
    this.#backoff = new Backoff(
      {
        baseMs: options.backoffBaseMs ?? RECONNECT_BACKOFF.baseMs,
        capMs: options.backoffCapMs ?? RECONNECT_BACKOFF.capMs,
      },
      options.random,
    );
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
      clock: this.#clock,
      ...(this.#options.transport === undefined ? {} : { transport: this.#options.transport }),
      ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
      ...(this.#options.userAgent === undefined ? {} : { userAgent: this.#options.userAgent }),
      ...(this.#options.timeoutMs === undefined ? {} : { timeoutMs: this.#options.timeoutMs }),
      onDescription: (media) => {
        if (this.#client === client)
          safeCall(this.#logger, 'onDescription', () => this.#options.onDescription?.(media));
      },
      onRtp: (packet, receivedAtMs) => this.#onPacket(client, packet, receivedAtMs),
      onRtcp: (packet, receivedAtMs) => {
        if (this.#client === client) this.#options.onRtcp?.(packet, receivedAtMs);
      },
      onError: (error) => this.#onFailure(client, error),
    });
    this.#client = client;
    client.start().then(
      () => {
        if (this.#client !== client) return;
        this.#lastActivityAt = this.#clock.now();
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

  /** Runs per packet: allocates nothing. */
  #onPacket(client: RtspClient, packet: Uint8Array, receivedAtMs: number): void {
    if (this.#client !== client) return;
    this.#lastActivityAt = receivedAtMs;
    this.#firstPacketAt ??= receivedAtMs;
    const onRtp = this.#options.onRtp;
    if (onRtp === undefined) return;
    // Not safeCall: a closure per packet is too much on this path.
    try {
      onRtp(packet, receivedAtMs);
    } catch (err) {
      this.#logger.error(
        { err, listener: 'onRtp' },
        'an RtspSource onRtp callback threw; the feed carries on',
      );
    }
  }

  /** Restarts the session when no packet came for the stall timeout. */
  #armStallCheck(delayMs: number): void {
    this.#stallTimer = this.#clock.setTimeout(() => {
      this.#stallTimer = undefined;
      const client = this.#client;
      if (client === undefined || this.#state !== 'playing') return;
      const idleMs = this.#clock.now() - this.#lastActivityAt;
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
    if (this.#firstPacketAt !== undefined && this.#clock.now() - this.#firstPacketAt >= healthyAfterMs)
      this.#backoff.reset();
    const retryInMs = this.#backoff.next();
    this.#logger.warn(
      { url: redactUrl(this.#options.url), code: error.code, retryInMs },
      `RTSP source will reconnect: ${error.message}`,
    );
    this.#retiring = Promise.all([this.#retiring, client.stop()]).then(() => undefined);
    this.#setState('backoff', { error, retryInMs });
    this.#retryTimer = this.#clock.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#retiring.then(
        () => this.#connect(),
        (err: unknown) =>
          this.#logger.error({ err }, `RTSP source could not retire a session: ${redactText(String(err))}`),
      );
    }, retryInMs);
  }

  #clearTimer(which: 'retry' | 'stall'): void {
    this.#clock.clearTimeout(which === 'retry' ? this.#retryTimer : this.#stallTimer);
    if (which === 'retry') this.#retryTimer = undefined;
    else this.#stallTimer = undefined;
  }

  #setState(state: RtspSourceState, detail?: RtspSourceStateDetail): void {
    if (this.#stopping !== undefined) return;
    this.#state = state;
    this.#emitState(state, detail);
  }

  #emitState(state: RtspSourceState, detail?: RtspSourceStateDetail): void {
    safeCall(this.#logger, 'onStateChange', () =>
      detail === undefined
        ? this.#options.onStateChange?.(state)
        : this.#options.onStateChange?.(state, detail),
    );
  }
}
