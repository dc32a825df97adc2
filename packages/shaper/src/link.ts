/**
 * One direction of an impaired link as a pure state machine: time comes in as an argument, the
 * randomness from an injected generator, so the same inputs always give the same outputs.
 *
 * A datagram offered to the link goes through, in this order:
 *
 * 1. three random draws, always, whatever happens next (burst state, independent loss, jitter),
 *    so the n-th datagram meets the same draws whatever the timing, the queue or the options;
 * 2. burst loss (Gilbert-Elliott: the state moves, then the datagram is lost in the bad state);
 * 3. independent loss;
 * 4. the queue: tail drop when the bytes waiting for the link, plus this datagram, would exceed
 *    `queueBytes` (only with a rate limit; an unlimited link never queues);
 * 5. the link: serialisation at `rateKbps` on a virtual clock, one datagram after another (a
 *    datagram starts when the previous one has finished, however late the caller looks);
 * 6. delay plus jitter after serialisation; without `reorder` a datagram is never released
 *    before the one ahead of it.
 */
import type { ResolvedImpairment } from './options.js';
import type { Random } from './random.js';

/** Why the link dropped a datagram. */
export type DropCause = 'random' | 'burst' | 'queue';

/** Counters and state of one direction. */
export interface LinkStats {
  /** Datagrams offered to the link. */
  readonly datagramsIn: number;
  /** Bytes offered (UDP payload). */
  readonly bytesIn: number;
  /** Datagrams released after serialisation and delay. */
  readonly forwarded: number;
  /** Bytes released. */
  readonly bytesForwarded: number;
  /** Datagrams dropped, by cause. */
  readonly dropped: { readonly random: number; readonly burst: number; readonly queue: number };
  /** Bytes waiting for the link or being serialised now. */
  readonly queuedBytes: number;
  /** Datagrams accepted and not yet released (queued or in the delay line). */
  readonly inFlight: number;
}

interface Queued<T> {
  readonly item: T;
  readonly bytes: number;
  readonly arrival: number;
  readonly jitterDraw: number;
  /** When its serialisation ends on the virtual link clock; NaN until it starts. */
  end: number;
}

interface Delayed<T> {
  readonly item: T;
  readonly bytes: number;
  readonly due: number;
  readonly seq: number;
}

/** A direction of the link between offer and release; see the module comment for the model. */
export class ImpairedLink<T> {
  #impairment: ResolvedImpairment;
  readonly #random: Random;
  #bad = false;
  #queue: (Queued<T> | undefined)[] = [];
  #head = 0;
  #queuedBytes = 0;
  #linkFreeAt = Number.NEGATIVE_INFINITY;
  readonly #delayed = new MinHeap<Delayed<T>>((a, b) => a.due - b.due || a.seq - b.seq);
  #lastDue = Number.NEGATIVE_INFINITY;
  #seq = 0;
  #datagramsIn = 0;
  #bytesIn = 0;
  #forwarded = 0;
  #bytesForwarded = 0;
  readonly #dropped = { random: 0, burst: 0, queue: 0 };

  constructor(impairment: ResolvedImpairment, random: Random) {
    this.#impairment = impairment;
    this.#random = random;
  }

  /** The impairment in force. */
  get impairment(): ResolvedImpairment {
    return this.#impairment;
  }

  /**
   * Changes the impairment from now on: datagrams already serialised keep their times, the one
   * being serialised finishes at the old rate, those still queued go at the new rate; the burst
   * state and the random sequence carry on.
   */
  setImpairment(impairment: ResolvedImpairment): void {
    this.#impairment = impairment;
  }

  /**
   * Offers a datagram of `bytes` bytes arriving at `now` (ms); returns why it was dropped, or
   * `undefined` when the link accepted it (it comes out of {@link release} later).
   */
  offer(item: T, bytes: number, now: number): DropCause | undefined {
    const burstDraw = this.#random();
    const lossDraw = this.#random();
    const jitterDraw = this.#random();
    this.#datagramsIn++;
    this.#bytesIn += bytes;
    const imp = this.#impairment;
    if (this.#stepBurst(burstDraw)) return this.#drop('burst');
    if (lossDraw < imp.loss) return this.#drop('random');
    this.#serve(now);
    if (imp.rateKbps > 0 && this.#queuedBytes + bytes > imp.queueBytes) return this.#drop('queue');
    this.#queue.push({ item, bytes, arrival: now, jitterDraw, end: Number.NaN });
    this.#queuedBytes += bytes;
    this.#serve(now);
    return undefined;
  }

  /** Every datagram due at `now` (ms), in release order. */
  release(now: number): T[] {
    this.#serve(now);
    const out: T[] = [];
    for (
      let next = this.#delayed.peek();
      next !== undefined && next.due <= now;
      next = this.#delayed.peek()
    ) {
      this.#delayed.pop();
      this.#forwarded++;
      this.#bytesForwarded += next.bytes;
      out.push(next.item);
    }
    return out;
  }

  /** When the next datagram is due or finishes serialisation (ms), or `undefined` when idle. */
  nextWakeAt(): number | undefined {
    const head = this.#queue[this.#head];
    const due = this.#delayed.peek()?.due;
    if (head === undefined) return due;
    return due === undefined ? head.end : Math.min(due, head.end);
  }

  /** Counters, and the queue as of `now` (ms). */
  stats(now: number): LinkStats {
    this.#serve(now);
    return {
      datagramsIn: this.#datagramsIn,
      bytesIn: this.#bytesIn,
      forwarded: this.#forwarded,
      bytesForwarded: this.#bytesForwarded,
      dropped: { ...this.#dropped },
      queuedBytes: this.#queuedBytes,
      inFlight: this.#queue.length - this.#head + this.#delayed.size,
    };
  }

  /** Forgets every datagram not yet released (the shaper is closing). */
  clear(): void {
    this.#queue = [];
    this.#head = 0;
    this.#queuedBytes = 0;
    this.#delayed.clear();
  }

  /** One Gilbert-Elliott step: move between the states, then lose the datagram if bad. */
  #stepBurst(draw: number): boolean {
    const { rate, meanBurst } = this.#impairment.burstLoss;
    if (rate <= 0) {
      this.#bad = false;
      return false;
    }
    const leaveBad = 1 / meanBurst;
    const enterBad = (rate * leaveBad) / (1 - rate);
    this.#bad = this.#bad ? draw >= leaveBad : draw < enterBad;
    return this.#bad;
  }

  #drop(cause: DropCause): DropCause {
    this.#dropped[cause]++;
    return cause;
  }

  /** Moves every datagram whose serialisation has ended by `now` into the delay line. */
  #serve(now: number): void {
    for (;;) {
      const head = this.#queue[this.#head];
      if (head === undefined) break;
      if (Number.isNaN(head.end)) {
        const rate = this.#impairment.rateKbps;
        head.end = Math.max(this.#linkFreeAt, head.arrival) + (rate > 0 ? (head.bytes * 8) / rate : 0);
      }
      if (head.end > now) break;
      this.#queue[this.#head++] = undefined;
      this.#queuedBytes -= head.bytes;
      this.#linkFreeAt = head.end;
      this.#delay(head);
    }
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  #delay(sent: Queued<T>): void {
    const { delayMs, jitterMs, reorder } = this.#impairment;
    const delay = Math.max(0, delayMs + (2 * sent.jitterDraw - 1) * jitterMs);
    let due = sent.end + delay;
    if (!reorder) due = Math.max(due, this.#lastDue);
    this.#lastDue = Math.max(this.#lastDue, due);
    this.#delayed.push({ item: sent.item, bytes: sent.bytes, due, seq: this.#seq++ });
  }
}

/** A binary min-heap. */
class MinHeap<V> {
  readonly #items: V[] = [];
  readonly #less: (a: V, b: V) => number;

  constructor(compare: (a: V, b: V) => number) {
    this.#less = compare;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): V | undefined {
    return this.#items[0];
  }

  push(value: V): void {
    const items = this.#items;
    items.push(value);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#less(items[i]!, items[parent]!) >= 0) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): V | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < items.length && this.#less(items[left]!, items[smallest]!) < 0) smallest = left;
      if (right < items.length && this.#less(items[right]!, items[smallest]!) < 0) smallest = right;
      if (smallest === i) break;
      [items[i], items[smallest]] = [items[smallest]!, items[i]!];
      i = smallest;
    }
    return top;
  }

  clear(): void {
    this.#items.length = 0;
  }
}
