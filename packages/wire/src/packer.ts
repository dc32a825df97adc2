import { FRAME_INFO_BYTES, frameInfo } from './chunk/frame-info.js';
import { CHUNK_HEADER_BYTES, chunkHeader } from './chunk/header.js';
import { encodeParity, MAX_BLOCK_CHUNKS } from './fec/reed-solomon.js';
import { type ParityPolicy, parityCountFor } from './parity.js';
import { seqNext16 } from './seq.js';

/** Datagram size the packer aims for by default: fits the 1200 bytes every QUIC path must carry. */
export const DEFAULT_MAX_DATAGRAM_BYTES = 1200;

/**
 * Default cap on data chunks per block. One block is the strongest code for a given overhead (any
 * `m` losses are repaired), so a frame is split only above this size, which bounds the GF work per
 * byte; blocks of a split frame are interleaved.
 */
export const DEFAULT_MAX_BLOCK_DATA = 64;

/** Most blocks one frame may have (the block index is one byte). */
const MAX_BLOCKS = 256;

/** Construction options of a {@link FramePacker}. */
export interface PackerOptions {
  /** Channel id written into every datagram, 1..255. */
  readonly channel: number;
  /** Largest datagram produced, header included (default {@link DEFAULT_MAX_DATAGRAM_BYTES}). */
  readonly maxDatagramBytes?: number;
  /** Most data chunks in one block (default {@link DEFAULT_MAX_BLOCK_DATA}). */
  readonly maxBlockData?: number;
  /** Id of the first frame (default 0); a daemon passes a random one so a restart is not mistaken for old frames. */
  readonly firstFrameId?: number;
}

/** One access unit (or sensor/command message) to send. */
export interface FrameToPack {
  /** The bytes: an Annex B access unit, a JPEG, or a message. */
  readonly data: Uint8Array;
  /** The frame is a random access point. */
  readonly keyframe: boolean;
  /** Capture time in µs (wrapped to 32 bits by the caller with `wrapU32`). */
  readonly captureTimestampUs: number;
  /** Frames since the last random access point, counted at the source (0 on a keyframe). */
  readonly gopPosition: number;
  /**
   * When the message was made on the sender's wall clock, µs, wrapped to 32 bits (default 0:
   * unknown); see {@link FrameInfo.captureClockUs}. Never 0 for a known time: use
   * `captureClockFromMs`.
   */
  readonly captureClockUs?: number;
  /** FEC for this frame. */
  readonly parity: ParityPolicy;
}

/** The datagrams of one frame, in send order. */
export interface PackedFrame {
  readonly frameId: number;
  /** Datagrams in send order: blocks interleaved, data before parity. */
  readonly datagrams: Uint8Array[];
  readonly blocks: number;
  readonly dataChunks: number;
  readonly parityChunks: number;
  /** Payload bytes of the parity chunks. */
  readonly parityBytes: number;
  /** Sum of the datagram sizes. */
  readonly bytes: number;
}

interface BlockLayout {
  readonly firstChunk: number;
  readonly dataCount: number;
  readonly parityCount: number;
  readonly lastDataLength: number;
  readonly symbolSize: number;
}

/**
 * Splits frames into chunk datagrams with Reed-Solomon parity, one packer per channel. It numbers
 * frames itself (16-bit wrapping ids). Stateless apart from the frame counter.
 */
export class FramePacker {
  readonly channel: number;
  readonly maxDatagramBytes: number;
  readonly maxBlockData: number;
  #nextFrameId: number;

  constructor(options: PackerOptions) {
    const {
      channel,
      maxDatagramBytes = DEFAULT_MAX_DATAGRAM_BYTES,
      maxBlockData = DEFAULT_MAX_BLOCK_DATA,
    } = options;
    if (!Number.isInteger(channel) || channel < 1 || channel > 255) {
      throw new TypeError(`channel must be an integer in 1..255, got ${channel}`);
    }
    if (
      !Number.isInteger(maxDatagramBytes) ||
      maxDatagramBytes <= CHUNK_HEADER_BYTES ||
      maxDatagramBytes > 0xffff
    ) {
      throw new TypeError(
        `maxDatagramBytes must be an integer in ${CHUNK_HEADER_BYTES + 1}..65535, got ${maxDatagramBytes}`,
      );
    }
    if (!Number.isInteger(maxBlockData) || maxBlockData < 1 || maxBlockData > MAX_BLOCK_CHUNKS - 1) {
      throw new TypeError(
        `maxBlockData must be an integer in 1..${MAX_BLOCK_CHUNKS - 1}, got ${maxBlockData}`,
      );
    }
    const first = options.firstFrameId ?? 0;
    if (!Number.isInteger(first) || first < 0 || first > 0xffff) {
      throw new TypeError(`firstFrameId must be an integer in 0..65535, got ${first}`);
    }
    this.channel = channel;
    this.maxDatagramBytes = maxDatagramBytes;
    this.maxBlockData = maxBlockData;
    this.#nextFrameId = first;
  }

  /** Id the next packed frame will get. */
  get nextFrameId(): number {
    return this.#nextFrameId;
  }

  /** Largest frame (bytes of `data`) this packer accepts. */
  get maxFrameBytes(): number {
    return MAX_BLOCKS * this.maxBlockData * (this.maxDatagramBytes - CHUNK_HEADER_BYTES) - FRAME_INFO_BYTES;
  }

  /**
   * Packs one frame. `senderTimestampUs` is written into every datagram; a pacer that sends later
   * rewrites it with `stampSenderTimestamp`.
   */
  pack(frame: FrameToPack, senderTimestampUs: number): PackedFrame {
    if (frame.data.byteLength > this.maxFrameBytes) {
      throw new TypeError(
        `frame of ${frame.data.byteLength} bytes exceeds the packer's ${this.maxFrameBytes}`,
      );
    }
    const frameId = this.#nextFrameId;
    const totalLength = FRAME_INFO_BYTES + frame.data.byteLength;
    const layouts = this.#layout(totalLength, frame.parity);

    const parityChunks = layouts.reduce((n, b) => n + b.parityCount, 0);
    const dataChunks = layouts.reduce((n, b) => n + b.dataCount, 0);
    const parityBytes = layouts.reduce((n, b) => n + b.parityCount * b.symbolSize, 0);
    const bytes = totalLength + parityBytes + (dataChunks + parityChunks) * CHUNK_HEADER_BYTES;

    const buffer = new Uint8Array(bytes);
    const view = new DataView(buffer.buffer);
    const info = new Uint8Array(FRAME_INFO_BYTES);
    frameInfo.encodeInto(new DataView(info.buffer), 0, frame);

    // Lay datagrams out block by block; the send order interleaves them afterwards.
    const perBlock: Uint8Array[][] = [];
    let offset = 0;
    const symbolBase = layouts[0]!.symbolSize;
    layouts.forEach((block, blockIndex) => {
      const datagrams: Uint8Array[] = [];
      const endOfFrame = blockIndex === layouts.length - 1;
      for (let i = 0; i < block.dataCount + block.parityCount; i++) {
        const isData = i < block.dataCount;
        const payloadLength = i === block.dataCount - 1 ? block.lastDataLength : block.symbolSize;
        chunkHeader.encodeInto(view, offset, {
          channel: this.channel,
          frameId,
          blockIndex,
          chunkIndex: i,
          dataCount: block.dataCount,
          parityCount: block.parityCount,
          keyframe: frame.keyframe,
          endOfFrame,
          lastDataLength: block.lastDataLength,
          senderTimestampUs: senderTimestampUs >>> 0,
        });
        const payload = buffer.subarray(
          offset + CHUNK_HEADER_BYTES,
          offset + CHUNK_HEADER_BYTES + payloadLength,
        );
        if (isData) {
          copyFrameBytes(payload, (block.firstChunk + i) * symbolBase, info, frame.data);
        }
        datagrams.push(buffer.subarray(offset, offset + CHUNK_HEADER_BYTES + payloadLength));
        offset += CHUNK_HEADER_BYTES + payloadLength;
      }
      if (block.parityCount > 0) {
        const data = datagrams.slice(0, block.dataCount).map((d) => d.subarray(CHUNK_HEADER_BYTES));
        const parity = datagrams.slice(block.dataCount).map((d) => d.subarray(CHUNK_HEADER_BYTES));
        encodeParity(data, block.parityCount, block.symbolSize, parity);
      }
      perBlock.push(datagrams);
    });

    this.#nextFrameId = seqNext16(frameId);
    return {
      frameId,
      datagrams: interleave(perBlock),
      blocks: layouts.length,
      dataChunks,
      parityChunks,
      parityBytes,
      bytes,
    };
  }

  /**
   * Chunks of equal size (the smallest that keeps the chunk count), so parity is no larger than it
   * must be; only the frame's last chunk is shorter. Blocks share the chunks out evenly.
   */
  #layout(totalLength: number, parity: ParityPolicy): BlockLayout[] {
    const maxPayload = this.maxDatagramBytes - CHUNK_HEADER_BYTES;
    const chunksAtMax = Math.ceil(totalLength / maxPayload);
    const symbolSize = Math.ceil(totalLength / chunksAtMax);
    const chunkCount = Math.ceil(totalLength / symbolSize);
    const lastChunkLength = totalLength - (chunkCount - 1) * symbolSize;
    const blockCount = Math.ceil(chunkCount / this.maxBlockData);
    const base = Math.floor(chunkCount / blockCount);
    const larger = chunkCount % blockCount;

    const layouts: BlockLayout[] = [];
    let firstChunk = 0;
    for (let b = 0; b < blockCount; b++) {
      const dataCount = base + (b < larger ? 1 : 0);
      const final = b === blockCount - 1;
      const lastDataLength = final ? lastChunkLength : symbolSize;
      layouts.push({
        firstChunk,
        dataCount,
        parityCount: parityCountFor(dataCount, parity),
        lastDataLength,
        symbolSize: dataCount === 1 ? lastDataLength : symbolSize,
      });
      firstChunk += dataCount;
    }
    return layouts;
  }
}

/** Copies bytes [start, start + out.length) of the virtual frame `info ‖ data` into `out`. */
function copyFrameBytes(out: Uint8Array, start: number, info: Uint8Array, data: Uint8Array): void {
  let written = 0;
  if (start < info.byteLength) {
    const head = info.subarray(start, Math.min(info.byteLength, start + out.byteLength));
    out.set(head, 0);
    written = head.byteLength;
  }
  if (written < out.byteLength) {
    const from = start + written - info.byteLength;
    out.set(data.subarray(from, from + out.byteLength - written), written);
  }
}

/**
 * Round-robin over blocks by chunk index, so consecutive datagrams belong to different blocks and a
 * burst of losses is shared out instead of landing on one block. Low indexes (data) leave before
 * high ones (parity), so a frame on a clean link completes as soon as its data is in.
 */
function interleave(perBlock: Uint8Array[][]): Uint8Array[] {
  if (perBlock.length === 1) return perBlock[0]!;
  const out: Uint8Array[] = [];
  const longest = Math.max(...perBlock.map((b) => b.length));
  for (let i = 0; i < longest; i++) {
    for (const block of perBlock) {
      const d = block[i];
      if (d !== undefined) out.push(d);
    }
  }
  return out;
}
