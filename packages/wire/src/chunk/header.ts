import { WireError } from '../errors.js';
import { MAX_BLOCK_CHUNKS } from '../fec/reed-solomon.js';

/**
 * Chunk header, version 1: the first 14 bytes of every video, sensor and command datagram.
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  ver  |K|E|0 0|    channel    |           frame id            |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  block index  |  chunk index  | data count k  |parity count m |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |    last data chunk length     |    sender timestamp (µs)  ... |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  ... sender timestamp         |  payload ...                  |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 *
 * All fields big-endian. K: the frame is a keyframe (random access point). E: this chunk belongs to
 * the frame's last block. Chunk index < k is data chunk `index`; index k + j is parity chunk j. Every
 * chunk of a block carries the block's k, m and the true length of its last data chunk. The
 * document `docs/protocol/chunks.md` is the contract.
 */
export const CHUNK_HEADER_BYTES = 14;

/** The header version this build writes and reads. */
export const WIRE_VERSION = 2;

const FLAG_KEYFRAME = 0x08;
const FLAG_END_OF_FRAME = 0x04;
const FLAG_RESERVED = 0x03;

/** Decoded fields of a chunk header. */
export interface ChunkHeader {
  /** Channel id, 1..255. */
  readonly channel: number;
  /** Per-channel frame id, 16 bits, wrapping. */
  readonly frameId: number;
  /** Index of the block within its frame, 0..255. */
  readonly blockIndex: number;
  /** Index of the chunk within its block: data chunks first, then parity. */
  readonly chunkIndex: number;
  /** Data chunks in the block (k, at least 1). */
  readonly dataCount: number;
  /** Parity chunks in the block (m). */
  readonly parityCount: number;
  /** The frame is a random access point. */
  readonly keyframe: boolean;
  /** The block is the frame's last. */
  readonly endOfFrame: boolean;
  /** True length of the block's last data chunk (the others have the block's symbol size). */
  readonly lastDataLength: number;
  /** Sender's clock when the datagram left, µs, 32 bits wrapping. */
  readonly senderTimestampUs: number;
}

/** Encoder and decoder of {@link ChunkHeader}, following the wire type shape of the project. */
export const chunkHeader = {
  /** Bytes the header occupies. */
  byteLength(): number {
    return CHUNK_HEADER_BYTES;
  },

  /**
   * Writes `h` at `offset`. Throws `TypeError` when a field is out of range: the sender must never
   * produce a header the receiver would reject.
   */
  encodeInto(view: DataView, offset: number, h: ChunkHeader): number {
    checkHeaderFields(h);
    if (offset < 0 || offset + CHUNK_HEADER_BYTES > view.byteLength) {
      throw new TypeError(`chunk header needs ${CHUNK_HEADER_BYTES} bytes at offset ${offset}`);
    }
    const flags = (h.keyframe ? FLAG_KEYFRAME : 0) | (h.endOfFrame ? FLAG_END_OF_FRAME : 0);
    view.setUint8(offset, (WIRE_VERSION << 4) | flags);
    view.setUint8(offset + 1, h.channel);
    view.setUint16(offset + 2, h.frameId);
    view.setUint8(offset + 4, h.blockIndex);
    view.setUint8(offset + 5, h.chunkIndex);
    view.setUint8(offset + 6, h.dataCount);
    view.setUint8(offset + 7, h.parityCount);
    view.setUint16(offset + 8, h.lastDataLength);
    view.setUint32(offset + 10, h.senderTimestampUs);
    return CHUNK_HEADER_BYTES;
  },

  /**
   * Reads a header at `offset` of a datagram that ends at `end` (default: the view's end) and checks
   * it against the payload that follows. Throws {@link WireError} for every malformed input.
   */
  decode(view: DataView, offset = 0, end = view.byteLength): { value: ChunkHeader; bytes: number } {
    const available = end - offset;
    if (available < CHUNK_HEADER_BYTES) {
      throw new WireError(
        'short-datagram',
        `datagram of ${Math.max(available, 0)} bytes is shorter than the ${CHUNK_HEADER_BYTES}-byte chunk header`,
      );
    }
    const first = view.getUint8(offset);
    const version = first >> 4;
    if (version !== WIRE_VERSION) {
      throw new WireError(
        'unknown-version',
        `chunk header version ${version} is not supported (this build speaks ${WIRE_VERSION})`,
      );
    }
    if ((first & FLAG_RESERVED) !== 0) {
      throw new WireError(
        'reserved-bits',
        `reserved header bits set: 0x${(first & FLAG_RESERVED).toString(16)}`,
      );
    }
    const value: ChunkHeader = {
      channel: view.getUint8(offset + 1),
      frameId: view.getUint16(offset + 2),
      blockIndex: view.getUint8(offset + 4),
      chunkIndex: view.getUint8(offset + 5),
      dataCount: view.getUint8(offset + 6),
      parityCount: view.getUint8(offset + 7),
      keyframe: (first & FLAG_KEYFRAME) !== 0,
      endOfFrame: (first & FLAG_END_OF_FRAME) !== 0,
      lastDataLength: view.getUint16(offset + 8),
      senderTimestampUs: view.getUint32(offset + 10),
    };
    checkDecodedHeader(value, available - CHUNK_HEADER_BYTES);
    return { value, bytes: CHUNK_HEADER_BYTES };
  },
} as const;

/** Reads only the channel id of a datagram, for routing before a full decode. */
export function peekChannel(datagram: Uint8Array): number | undefined {
  return datagram.byteLength >= CHUNK_HEADER_BYTES ? datagram[1] : undefined;
}

/**
 * Rewrites the sender timestamp of an encoded datagram in place, for a pacer that sends a datagram
 * later than it was packed.
 */
export function stampSenderTimestamp(datagram: Uint8Array, senderTimestampUs: number): void {
  if (datagram.byteLength < CHUNK_HEADER_BYTES) {
    throw new TypeError('not a chunk datagram: shorter than the chunk header');
  }
  // Big-endian u32 at offset 10, written byte by byte: this runs once per datagram sent.
  const t = senderTimestampUs >>> 0;
  datagram[10] = t >>> 24;
  datagram[11] = (t >>> 16) & 0xff;
  datagram[12] = (t >>> 8) & 0xff;
  datagram[13] = t & 0xff;
}

function checkDecodedHeader(h: ChunkHeader, payloadLength: number): void {
  const where = `channel ${h.channel} frame ${h.frameId} block ${h.blockIndex} chunk ${h.chunkIndex}`;
  if (h.channel === 0) {
    throw new WireError('bad-channel', `channel id 0 is reserved (${where})`);
  }
  if (h.dataCount === 0) {
    if (h.parityCount > 0) {
      throw new WireError(
        'parity-without-data',
        `block announces ${h.parityCount} parity chunks and no data (${where})`,
      );
    }
    throw new WireError('counts-out-of-range', `block announces no data chunks (${where})`);
  }
  if (h.dataCount + h.parityCount > MAX_BLOCK_CHUNKS) {
    throw new WireError(
      'counts-out-of-range',
      `block of ${h.dataCount} data + ${h.parityCount} parity chunks exceeds ${MAX_BLOCK_CHUNKS} (${where})`,
    );
  }
  if (h.chunkIndex >= h.dataCount + h.parityCount) {
    throw new WireError(
      'counts-out-of-range',
      `chunk index ${h.chunkIndex} outside a block of ${h.dataCount + h.parityCount} chunks (${where})`,
    );
  }
  if (h.lastDataLength === 0) {
    throw new WireError('length-out-of-range', `last data chunk length 0 (${where})`);
  }
  if (h.chunkIndex === h.dataCount - 1) {
    if (payloadLength !== h.lastDataLength) {
      throw new WireError(
        'length-out-of-range',
        `last data chunk claims ${h.lastDataLength} bytes but the datagram carries ${payloadLength} (${where})`,
      );
    }
  } else if (payloadLength < h.lastDataLength) {
    throw new WireError(
      'length-out-of-range',
      `chunk of ${payloadLength} bytes is shorter than the block's last data chunk of ${h.lastDataLength} (${where})`,
    );
  }
}

function checkHeaderFields(h: ChunkHeader): void {
  checkInt('channel', h.channel, 1, 255);
  checkInt('frameId', h.frameId, 0, 0xffff);
  checkInt('blockIndex', h.blockIndex, 0, 255);
  checkInt('dataCount', h.dataCount, 1, MAX_BLOCK_CHUNKS);
  checkInt('parityCount', h.parityCount, 0, MAX_BLOCK_CHUNKS - h.dataCount);
  checkInt('chunkIndex', h.chunkIndex, 0, h.dataCount + h.parityCount - 1);
  checkInt('lastDataLength', h.lastDataLength, 1, 0xffff);
  checkInt('senderTimestampUs', h.senderTimestampUs, 0, 0xffff_ffff);
}

function checkInt(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`chunk header field ${name} = ${value} is outside ${min}..${max}`);
  }
}
