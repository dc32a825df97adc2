import { type Clock, systemClock, type TimerHandle } from '@svc/runtime';

/** Options of {@link PacedSendQueue}. */
export interface PacedSendQueueOptions {
  /** Hands one datagram to the transport; `false` when the transport cannot take it now. */
  readonly send: (datagram: Uint8Array) => boolean;
  /** Pacing rate in bits per second. */
  readonly rateBps: number;
  /**
   * Most bytes sent back to back (the token bucket's depth; default 16 KiB). The depth is never
   * less than one timer tick of the pacing rate, or timers could not keep that rate.
   */
  readonly burstBytes?: number;
  /** Granularity of the timer in ms (default 1: Node's timers fire on whole milliseconds). */
  readonly timerTickMs?: number;
  /** A frame that would take the queue past this many bytes is refused whole (default 1 MiB). */
  readonly maxQueuedBytes?: number;
  /** Time and timers (default the process's, `systemClock`). */
  readonly clock?: Clock;
}

/** How full the queue is. */
export interface QueueOccupancy {
  readonly datagrams: number;
  readonly bytes: number;
  readonly frames: number;
}

/** Counters of a {@link PacedSendQueue}. */
export interface SendQueueStats {
  sentDatagrams: number;
  sentBytes: number;
  /** Frames refused whole because the queue was full. */
  refusedFrames: number;
  /** Queued frames dropped whole by {@link PacedSendQueue.dropQueued}. */
  droppedFrames: number;
  /** Times the transport was not ready and the queue waited. */
  transportBusy: number;
}

interface QueuedFrame {
  readonly datagrams: Uint8Array[];
  readonly keyframe: boolean;
  /** Index of the next datagram to send. */
  next: number;
}

const DEFAULT_BURST_BYTES = 16 * 1024;
const DEFAULT_MAX_QUEUED_BYTES = 1024 * 1024;
/** How long to wait before retrying a transport that refused a datagram. */
const BUSY_RETRY_MS = 1;

/**
 * The datagram send queue of one session: frames go in whole, datagrams come out paced by a token
 * bucket so a large keyframe leaves at the pacing rate instead of as one burst. Occupancy is
 * readable for admission control. A frame is never torn: it is refused or dropped whole, and a
 * frame that has started leaving is always finished; a transport that is momentarily full is
 * retried, not skipped.
 */
export class PacedSendQueue {
  readonly stats: SendQueueStats = {
    sentDatagrams: 0,
    sentBytes: 0,
    refusedFrames: 0,
    droppedFrames: 0,
    transportBusy: 0,
  };
  readonly #send: (datagram: Uint8Array) => boolean;
  readonly #minBurstBytes: number;
  readonly #tickMs: number;
  #burstBytes: number;
  readonly #maxQueuedBytes: number;
  readonly #clock: Clock;
  readonly #frames: QueuedFrame[] = [];
  #rateBytesPerMs: number;
  #tokens: number;
  #refilledAt: number;
  #queuedBytes = 0;
  #queuedDatagrams = 0;
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(options: PacedSendQueueOptions) {
    this.#send = options.send;
    this.#minBurstBytes = options.burstBytes ?? DEFAULT_BURST_BYTES;
    this.#tickMs = options.timerTickMs ?? 1;
    if (!(this.#tickMs > 0 && Number.isFinite(this.#tickMs)))
      throw new TypeError(`timerTickMs must be a positive number of ms, got ${this.#tickMs}`);
    this.#maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    this.#clock = options.clock ?? systemClock;
    this.#rateBytesPerMs = checkRate(options.rateBps);
    this.#burstBytes = Math.max(this.#minBurstBytes, this.#rateBytesPerMs * this.#tickMs);
    this.#tokens = this.#burstBytes;
    this.#refilledAt = this.#clock.now();
  }

  /** Bytes, datagrams and frames waiting. */
  get occupancy(): QueueOccupancy {
    return { datagrams: this.#queuedDatagrams, bytes: this.#queuedBytes, frames: this.#frames.length };
  }

  /** Changes the pacing rate (bits per second) from now on. */
  setRate(rateBps: number): void {
    this.#refill();
    this.#rateBytesPerMs = checkRate(rateBps);
    this.#burstBytes = Math.max(this.#minBurstBytes, this.#rateBytesPerMs * this.#tickMs);
  }

  /** The pacing rate in force, bits per second. */
  get rateBps(): number {
    return this.#rateBytesPerMs * 8000;
  }

  /**
   * Queues one frame's datagrams. Returns `false`, and counts the frame in `refusedFrames`, when
   * the whole frame does not fit; nothing of it is queued then.
   */
  enqueueFrame(datagrams: readonly Uint8Array[], keyframe: boolean): boolean {
    if (this.#closed) return false;
    const bytes = datagrams.reduce((n, d) => n + d.byteLength, 0);
    if (this.#queuedBytes + bytes > this.#maxQueuedBytes) {
      this.stats.refusedFrames++;
      return false;
    }
    this.#frames.push({ datagrams: [...datagrams], keyframe, next: 0 });
    this.#queuedBytes += bytes;
    this.#queuedDatagrams += datagrams.length;
    this.#pump();
    return true;
  }

  /**
   * Drops queued frames that have not started leaving, whole, and returns how many; with
   * `deltasOnly`, keyframes stay. For a sender that must shed backlog.
   */
  dropQueued(deltasOnly: boolean): number {
    let dropped = 0;
    for (let i = this.#frames.length - 1; i >= 0; i--) {
      const frame = this.#frames[i]!;
      if (frame.next > 0 || (deltasOnly && frame.keyframe)) continue;
      this.#frames.splice(i, 1);
      this.#forget(frame.datagrams, 0);
      dropped++;
    }
    this.stats.droppedFrames += dropped;
    return dropped;
  }

  /** Stops sending and forgets everything queued. */
  close(): void {
    this.#closed = true;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#frames.length = 0;
    this.#queuedBytes = 0;
    this.#queuedDatagrams = 0;
  }

  #pump(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#refill();
    while (this.#frames.length > 0) {
      const frame = this.#frames[0]!;
      const datagram = frame.datagrams[frame.next]!;
      if (this.#tokens < datagram.byteLength) {
        const waitMs = (datagram.byteLength - this.#tokens) / this.#rateBytesPerMs;
        this.#wait(Math.max(waitMs, 0.05));
        return;
      }
      if (!this.#send(datagram)) {
        this.stats.transportBusy++;
        this.#wait(BUSY_RETRY_MS);
        return;
      }
      this.#tokens -= datagram.byteLength;
      this.stats.sentDatagrams++;
      this.stats.sentBytes += datagram.byteLength;
      this.#queuedBytes -= datagram.byteLength;
      this.#queuedDatagrams--;
      frame.next++;
      if (frame.next === frame.datagrams.length) this.#frames.shift();
    }
  }

  #wait(ms: number): void {
    this.#timer = this.#clock.setTimeout(this.#onTimer, ms);
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#pump();
  };

  #refill(): void {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burstBytes, this.#tokens + (now - this.#refilledAt) * this.#rateBytesPerMs);
    this.#refilledAt = now;
  }

  #forget(datagrams: readonly Uint8Array[], from: number): void {
    for (let i = from; i < datagrams.length; i++) {
      this.#queuedBytes -= datagrams[i]!.byteLength;
      this.#queuedDatagrams--;
    }
  }
}

function checkRate(rateBps: number): number {
  if (!(rateBps > 0) || !Number.isFinite(rateBps))
    throw new TypeError(`pacing rate must be a positive number of bits/s, got ${rateBps}`);
  return rateBps / 8 / 1000;
}
