/**
 * Whether a camera feed is usable, in words a person can act on: `live` while access units
 * arrive, `no-data` when the source is reachable (or its port listened on) but no access unit
 * came for a while, `offline` when it cannot be read at all.
 */
import {
  assertTransition,
  type Clock,
  type Logger,
  safeCall,
  silentLogger,
  type TimerHandle,
  type TransitionTable,
} from '@svc/runtime';
import type { MediaError } from './errors.js';

/** What a video source is doing, as the pilot is told (`source` control message). */
export type SourceState = 'live' | 'no-data' | 'offline';

/** A source's state, why (for `no-data` and `offline`), and since when. */
export interface SourceStatus {
  readonly state: SourceState;
  /** What is wrong and what to do, without credentials; absent while `live`. */
  readonly reason?: string;
  /** When the state (or its reason) began, wall-clock ms (the monitor clock's `wallNow`). */
  readonly sinceMs: number;
}

/** Options of {@link SourceMonitor}. */
export interface SourceMonitorOptions {
  /** `udp` for an `rtp://` input (a socket that listens), `rtsp` for a camera the daemon dials. */
  readonly kind: 'udp' | 'rtsp';
  /** Where the source is read, as reasons name it: `127.0.0.1:5004`, or the redacted RTSP URL. */
  readonly where: string;
  /** The channel's codec string, named when packets come but no picture does. */
  readonly codec: string;
  /** No access unit for this long means `no-data`. */
  readonly noDataAfterMs: number;
  readonly clock: Clock;
  /** Every change of state or reason. */
  readonly onChange?: (status: SourceStatus) => void;
  readonly logger?: Logger;
}

/** Where a monitor's state may go (a reason may also change within a state). */
const MOVES: TransitionTable<SourceState> = {
  live: ['no-data', 'offline'],
  'no-data': ['live', 'offline'],
  offline: ['live', 'no-data'],
};

/**
 * Tracks one source's {@link SourceStatus} from what the ingest sees: packets, access units, and
 * (RTSP) the session being up or failing. Time and its one timer come from the injected clock.
 * Per packet and per access unit it only stores a number.
 */
export class SourceMonitor {
  readonly #options: SourceMonitorOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #status: SourceStatus;
  /** When the source became readable (the socket bound, the RTSP session played), clock ms. */
  #reachableAt: number | undefined;
  #lastAccessUnitAt = Number.NEGATIVE_INFINITY;
  #lastPacketAt = Number.NEGATIVE_INFINITY;
  #timer: TimerHandle | undefined;
  #stopped = false;

  constructor(options: SourceMonitorOptions) {
    if (!(options.noDataAfterMs > 0)) {
      throw new TypeError(`noDataAfterMs must be a positive number, got ${options.noDataAfterMs}`);
    }
    this.#options = options;
    this.#clock = options.clock;
    this.#logger = options.logger ?? silentLogger;
    this.#status = {
      state: 'no-data',
      reason: `waiting for the first picture from ${this.#describeWhere()}`,
      sinceMs: this.#clock.wallNow(),
    };
  }

  /** The current status. */
  get status(): SourceStatus {
    return this.#status;
  }

  /** The source can be read now: the `rtp://` socket listens, or the RTSP session plays. */
  handleReachable(): void {
    if (this.#stopped) return;
    this.#reachableAt = this.#clock.now();
    if (this.#status.state === 'offline') {
      this.#set('no-data', `connected to ${this.#describeWhere()}, waiting for the first picture`);
    }
    this.#arm(this.#options.noDataAfterMs);
  }

  /** One RTP packet arrived (per packet: stores the time only). */
  handlePacket(nowMs: number): void {
    this.#lastPacketAt = nowMs;
  }

  /** One whole access unit arrived. */
  handleAccessUnit(nowMs: number): void {
    this.#lastAccessUnitAt = nowMs;
    if (this.#status.state !== 'live' && !this.#stopped) {
      this.#set('live', undefined);
      this.#arm(this.#options.noDataAfterMs);
    }
  }

  /**
   * The RTSP session failed with `error`: `offline` with the reason, unless it was the session
   * stalling while it played (`stalled`), which is a source that sends nothing: `no-data`.
   */
  handleFailure(error: MediaError, stalled: boolean): void {
    if (this.#stopped) return;
    if (stalled) {
      this.#set('no-data', `${this.#noDataReason()}; reconnecting`);
      return;
    }
    this.#reachableAt = undefined;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#set('offline', offlineReason(this.#options, error));
  }

  /** The source was given up for good (another codec than configured): `offline` with `reason`. */
  handleFatal(reason: string): void {
    if (this.#stopped) return;
    this.#set('offline', reason);
    this.stop();
  }

  /** Stops the timer; the status stays as it was. */
  stop(): void {
    this.#stopped = true;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Checks for silence `delayMs` from now (one timer at a time). */
  #arm(delayMs: number): void {
    if (this.#timer !== undefined || this.#stopped) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#check();
    }, delayMs);
  }

  #check(): void {
    if (this.#reachableAt === undefined || this.#stopped) return;
    const limit = this.#options.noDataAfterMs;
    const now = this.#clock.now();
    const since = Math.max(this.#lastAccessUnitAt, this.#reachableAt);
    const idle = now - since;
    if (idle < limit) {
      this.#arm(limit - idle);
      return;
    }
    const reason = this.#noDataReason();
    if (this.#status.state !== 'no-data' || this.#status.reason !== reason) this.#set('no-data', reason);
    // While nothing comes, look again: the reason may change (packets start, but no picture).
    this.#arm(limit);
  }

  /** Why no picture comes, from what does arrive. */
  #noDataReason(): string {
    const { kind, where, codec } = this.#options;
    const limit = formatSeconds(this.#options.noDataAfterMs);
    const packets = this.#clock.now() - this.#lastPacketAt < this.#options.noDataAfterMs;
    if (packets) {
      return (
        `RTP packets arrive from ${this.#describeWhere()} but no whole picture for over ${limit}: ` +
        `check that the camera sends ${codec} as configured (codec and payload type)`
      );
    }
    return kind === 'udp'
      ? `no RTP packets on udp ${where} for over ${limit}: check that the camera is running and sends to this port`
      : `no video from RTSP ${where} for over ${limit}: check that the camera is running`;
  }

  #describeWhere(): string {
    return this.#options.kind === 'udp' ? `udp ${this.#options.where}` : `RTSP ${this.#options.where}`;
  }

  #set(state: SourceState, reason: string | undefined): void {
    const current = this.#status;
    if (current.state === state && current.reason === reason) return;
    if (current.state !== state) assertTransition('SourceMonitor', MOVES, current.state, state);
    this.#status = {
      state,
      ...(reason !== undefined && { reason }),
      sinceMs: this.#clock.wallNow(),
    };
    const where = this.#describeWhere();
    if (state === 'live') this.#logger.info({ where, state }, 'camera status: live');
    else this.#logger.warn({ where, state, reason }, `camera status: ${state}`);
    const status = this.#status;
    safeCall(this.#logger, 'onSourceStatus', () => this.#options.onChange?.(status));
  }
}

/** Seconds for people: `1 s`, `1.5 s`. */
function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** The common system errors of a connection, in words. */
const SYSTEM_ERRORS: readonly (readonly [RegExp, string])[] = [
  [/\bconnect ECONNREFUSED\b.*$/, 'connection refused'],
  [/\bEHOSTUNREACH\b.*$/, 'host unreachable'],
  [/\bENETUNREACH\b.*$/, 'network unreachable'],
  [/\bETIMEDOUT\b.*$/, 'connection timed out'],
  [/\bENOTFOUND\b.*$/, 'no such host'],
  [/\bECONNRESET\b.*$/, 'connection reset'],
];

/** Why an RTSP camera cannot be read, and what to do, from the error that says so. */
function offlineReason(options: SourceMonitorOptions, error: MediaError): string {
  let detail = error.message;
  for (const [pattern, words] of SYSTEM_ERRORS) detail = detail.replace(pattern, words);
  const what = `RTSP ${options.where}`;
  switch (error.code) {
    case 'unreachable':
      return `${what} unreachable: ${detail}; check the camera's address and that it is on`;
    case 'unauthorized':
      return `${what} refused the login: ${detail}; check SVC_RTSP_USER and SVC_RTSP_PASSWORD`;
    case 'not-found':
      return `${what} has no such stream: ${detail}; check the path in the channel's input`;
    case 'timeout':
      return `${what} did not answer: ${detail}`;
    case 'codec-mismatch':
      return detail;
    case 'rtsp-status':
    case 'malformed-rtsp':
    case 'malformed-sdp':
    case 'malformed-rtp':
    case 'malformed-rtcp':
    case 'malformed-payload':
    case 'bad-url':
    case 'bad-codec':
    case 'mjpeg-over-rtp':
    case 'closed':
      return `${what} cannot be read: ${detail}`;
    default: {
      const never: never = error.code;
      return `${what} cannot be read: ${String(never)}`;
    }
  }
}
