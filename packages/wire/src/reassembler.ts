import { FRAME_INFO_BYTES, frameInfo } from './chunk/frame-info.js';
import { CHUNK_HEADER_BYTES, type ChunkHeader, chunkHeader } from './chunk/header.js';
import { WireError } from './errors.js';
import { recoverData } from './fec/reed-solomon.js';
import { seqDiff16, seqDiff32, seqNext16 } from './seq.js';

/** A whole frame, repaired if it had to be. */
export interface AssembledFrame {
  readonly channel: number;
  readonly frameId: number;
  readonly keyframe: boolean;
  /** Capture time in µs (32 bits wrapping), from the frame info. */
  readonly captureTimestampUs: number;
  /** Frames since the last random access point, counted at the source. */
  readonly gopPosition: number;
  /** When the message was made on the sender's wall clock, µs (32 bits wrapping); 0: unknown. */
  readonly captureClockUs: number;
  /** The access unit (or message), frame info removed. */
  readonly data: Uint8Array;
  /** Data chunks rebuilt from parity (0 when nothing was lost). */
  readonly chunksRecovered: number;
  /** Earliest sender timestamp among the frame's datagrams, µs (32 bits wrapping). */
  readonly senderTimestampUs: number;
  /**
   * Latest sender timestamp among the datagrams received for the frame, µs (32 bits wrapping):
   * with a pacer that stamps at send time, when the datagram that completed the frame left.
   */
  readonly lastSenderTimestampUs: number;
  /** Local clock (ms) when the first datagram of the frame arrived. */
  readonly firstArrivalMs: number;
  /** Local clock (ms) when the frame became complete. */
  readonly completedMs: number;
}

/**
 * Why a frame was given up:
 * - `deadline`: incomplete when its deadline passed;
 * - `superseded`: incomplete when a newer frame was delivered (it could never be delivered after it);
 * - `missing`: no datagram of it arrived at all (a gap in frame ids);
 * - `overflow`: evicted because too many frames were incomplete at once;
 * - `corrupt`: its chunks disagreed or its content was malformed;
 * - `restart`: the sender restarted its frame numbering while it was incomplete.
 */
export type FrameLossReason = 'deadline' | 'superseded' | 'missing' | 'overflow' | 'corrupt' | 'restart';

/** Frames that will never be delivered, reported in frame-id order. */
export interface FrameLoss {
  readonly channel: number;
  /** First frame id of the run. */
  readonly frameId: number;
  /** Consecutive frame ids in the run (always 1 except for `missing`). */
  readonly count: number;
  /** Whether the frame was a keyframe; `undefined` when no datagram of it was seen. */
  readonly keyframe: boolean | undefined;
  readonly reason: FrameLossReason;
  /** Chunks that had arrived, over all blocks. */
  readonly chunksReceived: number;
}

/** Counters of a {@link Reassembler}; all monotonic. */
export interface ReassemblerStats {
  datagrams: number;
  /** Rejected with a {@link WireError} (malformed, wrong channel, inconsistent). */
  malformed: number;
  /** Same chunk twice. */
  duplicates: number;
  /** Chunks of a block or frame already complete (the unneeded parity of a clean block, mostly). */
  surplus: number;
  /** Datagrams of frames older than the newest delivered or given up: dropped. */
  stale: number;
  framesDelivered: number;
  /** Delivered frames that needed parity. */
  framesRepaired: number;
  /** Frames given up (sum of `count` over {@link FrameLoss} reports). */
  framesLost: number;
  /** Data chunks rebuilt from parity. */
  chunksRecovered: number;
  /**
   * Chunks (data and parity) of every block seen at least once: what the sender sent of them.
   * With `datagrams`, `duplicates` and `malformed` it gives the chunk loss on the path (a block
   * none of whose chunks arrived is not counted).
   */
  chunksExpected: number;
}

/** Construction options of a {@link Reassembler}. */
export interface ReassemblerOptions {
  /** The channel this reassembler serves; datagrams of any other are refused. */
  readonly channel: number;
  /** Called with every whole frame, in frame-id order. */
  readonly onFrame: (frame: AssembledFrame) => void;
  /** Called for every frame given up, in frame-id order. */
  readonly onFrameLost?: (loss: FrameLoss) => void;
  /** An incomplete frame is given up this long after its first datagram (default 250 ms). */
  readonly frameDeadlineMs?: number;
  /** Most incomplete frames held at once; the oldest is given up beyond it (default 32). */
  readonly maxPendingFrames?: number;
  /** Most bytes one frame may occupy (default 8 MiB). */
  readonly maxFrameBytes?: number;
  /**
   * After this long without delivering or giving up a frame, the next frame is taken as the newest
   * whatever its id (default 1000 ms): guards 16-bit wrap ambiguity and sender restarts.
   */
  readonly idleResetMs?: number;
}

/** A frame id this far behind the newest accounted one means the sender restarted. */
const RESTART_DISTANCE = 1024;

class PendingBlock {
  readonly dataCount: number;
  readonly parityCount: number;
  readonly lastDataLength: number;
  readonly endOfFrame: boolean;
  /** Length of every chunk but the last data chunk; 0 until one such chunk arrived. */
  symbolSize: number;
  readonly chunks: (Uint8Array | undefined)[];
  received = 0;
  /** The data chunks, once complete. */
  data: Uint8Array[] | undefined;

  constructor(h: ChunkHeader) {
    this.dataCount = h.dataCount;
    this.parityCount = h.parityCount;
    this.lastDataLength = h.lastDataLength;
    this.endOfFrame = h.endOfFrame;
    this.symbolSize = h.dataCount === 1 ? h.lastDataLength : 0;
    this.chunks = new Array<Uint8Array | undefined>(h.dataCount + h.parityCount);
  }
}

class PendingFrame {
  readonly frameId: number;
  readonly keyframe: boolean;
  readonly firstArrivalMs: number;
  readonly deadlineMs: number;
  readonly blocks = new Map<number, PendingBlock>();
  /** Index of the last block, once a chunk flagged end-of-frame arrived. */
  lastBlock = -1;
  blocksDone = 0;
  bytes = 0;
  received = 0;
  recovered = 0;
  /** Given up as untrustworthy; reported `corrupt` when its turn comes. */
  corrupt = false;
  senderTimestampUs: number;
  lastSenderTimestampUs: number;

  constructor(h: ChunkHeader, nowMs: number, deadlineMs: number) {
    this.frameId = h.frameId;
    this.keyframe = h.keyframe;
    this.firstArrivalMs = nowMs;
    this.deadlineMs = nowMs + deadlineMs;
    this.senderTimestampUs = h.senderTimestampUs;
    this.lastSenderTimestampUs = h.senderTimestampUs;
  }
}

/**
 * Turns chunk datagrams of one channel, in any order, duplicated or lost, back into whole frames.
 * Every frame id is accounted for exactly once, in order: delivered through `onFrame`, or given up
 * through `onFrameLost`. A frame is never handed over half. Time is injected (`nowMs` arguments),
 * so the rules are testable without sleeping.
 *
 * The reassembler keeps references to the datagrams it is given; callers must not reuse them.
 */
export class Reassembler {
  readonly channel: number;
  readonly stats: ReassemblerStats = {
    datagrams: 0,
    malformed: 0,
    duplicates: 0,
    surplus: 0,
    stale: 0,
    framesDelivered: 0,
    framesRepaired: 0,
    framesLost: 0,
    chunksRecovered: 0,
    chunksExpected: 0,
  };
  readonly #onFrame: (frame: AssembledFrame) => void;
  readonly #onFrameLost: (loss: FrameLoss) => void;
  readonly #deadlineMs: number;
  readonly #maxPending: number;
  readonly #maxFrameBytes: number;
  readonly #idleResetMs: number;
  readonly #pending = new Map<number, PendingFrame>();
  /** Newest frame id delivered or given up; every older id has been accounted for. */
  #accounted: number | undefined;
  #accountedAtMs = 0;
  /** Whether the frame `#accounted` names was delivered (rather than given up). */
  #accountedDelivered = false;

  constructor(options: ReassemblerOptions) {
    if (!Number.isInteger(options.channel) || options.channel < 1 || options.channel > 255) {
      throw new TypeError(`channel must be an integer in 1..255, got ${options.channel}`);
    }
    this.channel = options.channel;
    this.#onFrame = options.onFrame;
    this.#onFrameLost = options.onFrameLost ?? (() => {});
    this.#deadlineMs = positive('frameDeadlineMs', options.frameDeadlineMs ?? 250);
    this.#maxPending = positive('maxPendingFrames', options.maxPendingFrames ?? 32);
    this.#maxFrameBytes = positive('maxFrameBytes', options.maxFrameBytes ?? 8 * 1024 * 1024);
    this.#idleResetMs = positive('idleResetMs', options.idleResetMs ?? 1000);
  }

  /** Frames currently incomplete. */
  get pendingFrames(): number {
    return this.#pending.size;
  }

  /**
   * Takes one datagram received at `nowMs`. Throws {@link WireError} for a malformed or inconsistent
   * datagram (counted in `stats.malformed`); the reassembler's state is unharmed by it.
   */
  handleDatagram(datagram: Uint8Array, nowMs: number): void {
    this.stats.datagrams++;
    this.handleTick(nowMs);
    let header: ChunkHeader;
    try {
      header = chunkHeader.decode(
        new DataView(datagram.buffer, datagram.byteOffset, datagram.byteLength),
      ).value;
      if (header.channel !== this.channel) {
        throw new WireError(
          'bad-channel',
          `datagram of channel ${header.channel} given to the reassembler of channel ${this.channel}`,
        );
      }
    } catch (err) {
      if (err instanceof WireError) this.stats.malformed++;
      throw err;
    }
    this.#accept(header, datagram.subarray(CHUNK_HEADER_BYTES), nowMs);
  }

  /** Gives up frames whose deadline has passed. Call it on a timer when datagrams stop coming. */
  handleTick(nowMs: number): void {
    for (const frame of this.#pending.values()) {
      if (frame.deadlineMs <= nowMs) this.#expire(frame, nowMs);
    }
  }

  /** The earliest time (ms) at which {@link handleTick} has work, if any frame is pending. */
  nextDeadlineMs(): number | undefined {
    let next: number | undefined;
    for (const frame of this.#pending.values()) {
      if (next === undefined || frame.deadlineMs < next) next = frame.deadlineMs;
    }
    return next;
  }

  #accept(h: ChunkHeader, payload: Uint8Array, nowMs: number): void {
    if (this.#accounted !== undefined) {
      if (nowMs - this.#accountedAtMs > this.#idleResetMs) {
        this.#accounted = undefined;
      } else {
        const behind = seqDiff16(h.frameId, this.#accounted);
        if (behind <= -RESTART_DISTANCE) {
          this.#restart(nowMs);
        } else if (behind === 0 && this.#accountedDelivered) {
          this.stats.surplus++; // the newest frame is complete: this is its unneeded parity
          return;
        } else if (behind <= 0) {
          this.stats.stale++;
          return;
        }
      }
    }
    const frame = this.#pendingFrame(h, nowMs);
    if (frame.corrupt) {
      this.stats.stale++;
      return;
    }
    const block = this.#pendingBlock(frame, h);
    if (block.data !== undefined) {
      this.stats.surplus++;
      return;
    }
    this.#checkSymbolSize(block, h, payload.byteLength);
    if (block.chunks[h.chunkIndex] !== undefined) {
      this.stats.duplicates++;
      return;
    }
    frame.bytes += payload.byteLength;
    if (frame.bytes > this.#maxFrameBytes) {
      frame.corrupt = true;
      this.#release(frame);
      throw this.#malformed(
        new WireError(
          'frame-too-large',
          `frame ${h.frameId} exceeds ${this.#maxFrameBytes} bytes; dropping it`,
        ),
      );
    }
    block.chunks[h.chunkIndex] = payload;
    block.received++;
    frame.received++;
    if (seqDiff32(h.senderTimestampUs, frame.senderTimestampUs) < 0)
      frame.senderTimestampUs = h.senderTimestampUs;
    if (seqDiff32(h.senderTimestampUs, frame.lastSenderTimestampUs) > 0)
      frame.lastSenderTimestampUs = h.senderTimestampUs;
    if (block.received >= block.dataCount) this.#completeBlock(frame, block);
    if (frame.lastBlock >= 0 && frame.blocksDone === frame.lastBlock + 1) this.#deliver(frame, nowMs);
  }

  #pendingFrame(h: ChunkHeader, nowMs: number): PendingFrame {
    const frame = this.#pending.get(h.frameId);
    if (frame !== undefined) {
      if (frame.keyframe !== h.keyframe)
        throw this.#malformed(mismatch(h, 'keyframe flag differs from the frame'));
      return frame;
    }
    if (this.#pending.size >= this.#maxPending) {
      const oldest = this.#oldestPending()!;
      this.#accountThrough(oldest.frameId, 'overflow', nowMs);
      this.#report(oldest, 'overflow');
    }
    const created = new PendingFrame(h, nowMs, this.#deadlineMs);
    this.#pending.set(h.frameId, created);
    return created;
  }

  #pendingBlock(frame: PendingFrame, h: ChunkHeader): PendingBlock {
    const block = frame.blocks.get(h.blockIndex);
    if (block !== undefined) {
      if (
        block.dataCount !== h.dataCount ||
        block.parityCount !== h.parityCount ||
        block.lastDataLength !== h.lastDataLength ||
        block.endOfFrame !== h.endOfFrame
      ) {
        throw this.#malformed(mismatch(h, 'counts or lengths differ from earlier chunks of the block'));
      }
      return block;
    }
    if (frame.lastBlock >= 0 && h.blockIndex > frame.lastBlock) {
      throw this.#malformed(mismatch(h, `block beyond the frame's last block ${frame.lastBlock}`));
    }
    if (h.endOfFrame) {
      for (const index of frame.blocks.keys()) {
        if (index > h.blockIndex) throw this.#malformed(mismatch(h, `end of frame before block ${index}`));
      }
      frame.lastBlock = h.blockIndex;
    }
    const created = new PendingBlock(h);
    frame.blocks.set(h.blockIndex, created);
    this.stats.chunksExpected += h.dataCount + h.parityCount;
    return created;
  }

  #checkSymbolSize(block: PendingBlock, h: ChunkHeader, length: number): void {
    if (h.chunkIndex === h.dataCount - 1) return; // its length was checked against the header
    if (block.symbolSize === 0) {
      block.symbolSize = length;
    } else if (block.symbolSize !== length) {
      throw this.#malformed(
        mismatch(h, `chunk of ${length} bytes in a block of ${block.symbolSize}-byte chunks`),
      );
    }
  }

  #completeBlock(frame: PendingFrame, block: PendingBlock): void {
    const k = block.dataCount;
    let missing = 0;
    for (let i = 0; i < k; i++) if (block.chunks[i] === undefined) missing++;
    if (missing === 0) {
      block.data = block.chunks.slice(0, k) as Uint8Array[];
    } else {
      const data = recoverData(block.chunks, k, block.parityCount, block.symbolSize);
      data[k - 1] = data[k - 1]!.subarray(0, block.lastDataLength);
      block.data = data;
      frame.recovered += missing;
    }
    block.chunks.length = 0;
    frame.blocksDone++;
  }

  #deliver(frame: PendingFrame, nowMs: number): void {
    let total = 0;
    for (let b = 0; b <= frame.lastBlock; b++) {
      for (const chunk of frame.blocks.get(b)!.data!) total += chunk.byteLength;
    }
    const whole = new Uint8Array(total);
    let offset = 0;
    for (let b = 0; b <= frame.lastBlock; b++) {
      for (const chunk of frame.blocks.get(b)!.data!) {
        whole.set(chunk, offset);
        offset += chunk.byteLength;
      }
    }
    this.#accountThrough(frame.frameId, 'superseded', nowMs);
    if (total < FRAME_INFO_BYTES) {
      this.#report(frame, 'corrupt');
      throw this.#malformed(
        new WireError(
          'frame-info-short',
          `frame ${frame.frameId} has ${total} bytes, too few for its frame info`,
        ),
      );
    }
    const info = frameInfo.decode(new DataView(whole.buffer)).value;
    this.#accountedDelivered = true;
    this.stats.framesDelivered++;
    if (frame.recovered > 0) {
      this.stats.framesRepaired++;
      this.stats.chunksRecovered += frame.recovered;
    }
    this.#onFrame({
      channel: this.channel,
      frameId: frame.frameId,
      keyframe: frame.keyframe,
      captureTimestampUs: info.captureTimestampUs,
      gopPosition: info.gopPosition,
      captureClockUs: info.captureClockUs,
      data: whole.subarray(FRAME_INFO_BYTES),
      chunksRecovered: frame.recovered,
      senderTimestampUs: frame.senderTimestampUs,
      lastSenderTimestampUs: frame.lastSenderTimestampUs,
      firstArrivalMs: frame.firstArrivalMs,
      completedMs: nowMs,
    });
  }

  /**
   * Accounts for every frame id before `frameId` (older pending frames are given up with
   * `reason`, unseen ids reported `missing`) and takes `frameId` out of the pending set; the caller
   * reports `frameId` itself.
   */
  #accountThrough(frameId: number, reason: FrameLossReason, nowMs: number): void {
    const older = [...this.#pending.values()]
      .filter((f) => seqDiff16(f.frameId, frameId) < 0)
      .sort((a, b) => seqDiff16(a.frameId, b.frameId));
    let next = this.#accounted === undefined ? undefined : seqNext16(this.#accounted);
    for (const frame of older) {
      if (next !== undefined && next !== frame.frameId) this.#reportGap(next, frame.frameId);
      this.#pending.delete(frame.frameId);
      this.#report(frame, frame.corrupt ? 'corrupt' : reason);
      next = seqNext16(frame.frameId);
    }
    if (next !== undefined && next !== frameId) this.#reportGap(next, frameId);
    this.#pending.delete(frameId);
    this.#accounted = frameId;
    this.#accountedAtMs = nowMs;
    this.#accountedDelivered = false;
  }

  /** Gives up a frame at its deadline, with everything older. */
  #expire(frame: PendingFrame, nowMs: number): void {
    this.#accountThrough(frame.frameId, 'deadline', nowMs);
    this.#report(frame, frame.corrupt ? 'corrupt' : 'deadline');
  }

  #report(frame: PendingFrame, reason: FrameLossReason): void {
    this.stats.framesLost++;
    this.#onFrameLost({
      channel: this.channel,
      frameId: frame.frameId,
      count: 1,
      keyframe: frame.keyframe,
      reason,
      chunksReceived: frame.received,
    });
  }

  #reportGap(from: number, to: number): void {
    const count = (to - from) & 0xffff;
    this.stats.framesLost += count;
    this.#onFrameLost({
      channel: this.channel,
      frameId: from,
      count,
      keyframe: undefined,
      reason: 'missing',
      chunksReceived: 0,
    });
  }

  #restart(nowMs: number): void {
    const frames = [...this.#pending.values()].sort((a, b) => seqDiff16(a.frameId, b.frameId));
    this.#pending.clear();
    for (const frame of frames) this.#report(frame, 'restart');
    this.#accounted = undefined;
    this.#accountedAtMs = nowMs;
  }

  #oldestPending(): PendingFrame | undefined {
    let oldest: PendingFrame | undefined;
    for (const frame of this.#pending.values()) {
      if (oldest === undefined || seqDiff16(frame.frameId, oldest.frameId) < 0) oldest = frame;
    }
    return oldest;
  }

  /** Drops the chunks a doomed frame holds; it stays pending so it is reported in order. */
  #release(frame: PendingFrame): void {
    frame.blocks.clear();
    frame.bytes = 0;
  }

  #malformed(err: WireError): WireError {
    this.stats.malformed++;
    return err;
  }
}

function mismatch(h: ChunkHeader, what: string): WireError {
  return new WireError(
    'chunk-mismatch',
    `channel ${h.channel} frame ${h.frameId} block ${h.blockIndex} chunk ${h.chunkIndex}: ${what}`,
  );
}

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value))
    throw new TypeError(`${name} must be a positive number, got ${value}`);
  return value;
}
