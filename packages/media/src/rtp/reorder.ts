import { seqDiff16, seqNext16 } from '@svc/wire';
import type { RtpPacket } from '../types.js';

/** Where the reorder buffer sends its output. */
export interface ReorderSink {
  /** The next packet in sequence order. */
  onPacket(packet: RtpPacket, receivedAtMs: number): void;
  /** `count` packets before the next one will never come. */
  onLoss(count: number): void;
  /** A new stream began (SSRC change or a sequence jump no reordering explains): reset state. */
  onRestart(reason: 'ssrc' | 'sequence'): void;
}

/** Construction options of a {@link ReorderBuffer}. */
export interface ReorderOptions {
  /** Most packets held while waiting for a missing one (default 64). */
  readonly capacity?: number;
  /** Longest a packet waits for a missing predecessor (default 20 ms). */
  readonly maxDelayMs?: number;
}

/** Counters of a {@link ReorderBuffer}. */
export interface ReorderStats {
  received: number;
  duplicates: number;
  /** Packets that waited for a missing predecessor before release. */
  reordered: number;
  /** Packets declared lost. */
  lost: number;
  /** Packets that arrived after their gap was declared lost: too late to use. */
  late: number;
  restarts: number;
}

/** A sequence jump this large (either way) is a new stream, not loss or reordering. */
const RESTART_JUMP = 3000;

/** How far back released sequence numbers are remembered, to tell duplicates from late packets. */
const RELEASED_WINDOW = RESTART_JUMP;

interface Held {
  readonly packet: RtpPacket;
  readonly receivedAtMs: number;
}

/**
 * Puts RTP packets of one stream back in sequence order (wrap-aware), removes duplicates and
 * counts losses. In-order packets pass straight through; after a gap, later packets wait until
 * the missing one arrives, the buffer fills, or `maxDelayMs` passes (call {@link handleTick}), and
 * then the gap is declared lost. Time is injected. A packet is used during `handlePacket` only
 * (held ones are copied), so the caller may reuse its memory.
 */
export class ReorderBuffer {
  readonly stats: ReorderStats = { received: 0, duplicates: 0, reordered: 0, lost: 0, late: 0, restarts: 0 };
  readonly #sink: ReorderSink;
  readonly #capacity: number;
  readonly #maxDelayMs: number;
  #ssrc: number | undefined;
  /** Sequence number the next released packet must have. */
  #expected: number | undefined;
  /** Held packets by sequence number. */
  readonly #held = new Map<number, Held>();
  #oldestHeldAtMs = 0;
  /** 1 for the sequence numbers released within the last {@link RELEASED_WINDOW}. */
  readonly #released = new Uint8Array(65536);

  constructor(sink: ReorderSink, options: ReorderOptions = {}) {
    this.#sink = sink;
    this.#capacity = options.capacity ?? 64;
    this.#maxDelayMs = options.maxDelayMs ?? 20;
    if (!Number.isInteger(this.#capacity) || this.#capacity < 1) throw new TypeError('capacity must be >= 1');
    if (!(this.#maxDelayMs >= 0)) throw new TypeError('maxDelayMs must be >= 0');
  }

  /** Packets waiting for a missing predecessor. */
  get held(): number {
    return this.#held.size;
  }

  /** When {@link handleTick} next has work, if anything is held. */
  nextDeadlineMs(): number | undefined {
    return this.#held.size > 0 ? this.#oldestHeldAtMs + this.#maxDelayMs : undefined;
  }

  /** Takes one packet received at `nowMs`. */
  handlePacket(packet: RtpPacket, nowMs: number): void {
    this.stats.received++;
    if (this.#ssrc !== packet.ssrc || this.#expected === undefined) {
      if (this.#ssrc !== undefined) this.#restart('ssrc');
      this.#ssrc = packet.ssrc;
      this.#release(packet, nowMs);
      return;
    }
    const ahead = seqDiff16(packet.sequenceNumber, this.#expected);
    if (ahead === 0) {
      this.#release(packet, nowMs);
      this.#drain();
    } else if (ahead > 0 && ahead < RESTART_JUMP) {
      if (this.#held.has(packet.sequenceNumber)) {
        this.stats.duplicates++;
        return;
      }
      if (this.#held.size === 0) this.#oldestHeldAtMs = nowMs;
      // The caller may reuse the packet's memory once this returns: a held packet keeps a copy.
      this.#held.set(packet.sequenceNumber, {
        packet: { ...packet, payload: packet.payload.slice() },
        receivedAtMs: nowMs,
      });
      if (this.#held.size > this.#capacity) this.#skipGap();
    } else if (ahead < 0 && ahead > -RESTART_JUMP) {
      // Already released (a duplicate) or given up on (late): either way unusable now.
      if (this.#released[packet.sequenceNumber] === 1) this.stats.duplicates++;
      else this.stats.late++;
    } else {
      this.#restart('sequence');
      this.#release(packet, nowMs);
    }
  }

  /** Declares the oldest gap lost when its packets have waited `maxDelayMs`. */
  handleTick(nowMs: number): void {
    while (this.#held.size > 0 && nowMs >= this.#oldestHeldAtMs + this.#maxDelayMs) this.#skipGap();
  }

  #release(packet: RtpPacket, receivedAtMs: number): void {
    this.#released[packet.sequenceNumber] = 1;
    this.#released[(packet.sequenceNumber - RELEASED_WINDOW) & 0xffff] = 0;
    this.#expected = seqNext16(packet.sequenceNumber);
    this.#sink.onPacket(packet, receivedAtMs);
  }

  /** Releases held packets that are now in order. */
  #drain(): void {
    let next = this.#expected === undefined ? undefined : this.#held.get(this.#expected);
    while (next !== undefined) {
      this.#held.delete(next.packet.sequenceNumber);
      this.stats.reordered++;
      this.#release(next.packet, next.receivedAtMs);
      next = this.#held.get(this.#expected!);
    }
    if (this.#held.size > 0)
      this.#oldestHeldAtMs = Math.min(...[...this.#held.values()].map((h) => h.receivedAtMs));
  }

  /** Gives up on the packets missing before the earliest held one. */
  #skipGap(): void {
    let earliest: number | undefined;
    for (const seq of this.#held.keys()) {
      if (earliest === undefined || seqDiff16(seq, earliest) < 0) earliest = seq;
    }
    if (earliest === undefined || this.#expected === undefined) return;
    const missing = seqDiff16(earliest, this.#expected);
    this.stats.lost += missing;
    this.#sink.onLoss(missing);
    this.#expected = earliest;
    this.#drain();
  }

  #restart(reason: 'ssrc' | 'sequence'): void {
    this.stats.restarts++;
    this.#held.clear();
    this.#released.fill(0);
    this.#expected = undefined;
    this.#sink.onRestart(reason);
  }
}
