import { WireError } from '../errors.js';

/**
 * Frame info: the first 6 bytes of a frame's data, so the first data chunk of block 0 begins with
 * them. Being part of the data, they are protected by the block's parity like the access unit.
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                 capture timestamp (µs, wrapping)              |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |        GOP position           |  access unit ...              |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 */
export const FRAME_INFO_BYTES = 6;

/** Per-frame facts carried with the first chunk. */
export interface FrameInfo {
  /** Capture time: the source's RTP clock converted to µs, 32 bits wrapping. */
  readonly captureTimestampUs: number;
  /** Frames since the last random access point (0 on a keyframe), saturating at 65535. */
  readonly gopPosition: number;
}

/** Encoder and decoder of {@link FrameInfo}. */
export const frameInfo = {
  /** Bytes the frame info occupies. */
  byteLength(): number {
    return FRAME_INFO_BYTES;
  },

  /** Writes `info` at `offset`; throws `TypeError` for out-of-range fields. */
  encodeInto(view: DataView, offset: number, info: FrameInfo): number {
    if (
      !Number.isInteger(info.captureTimestampUs) ||
      info.captureTimestampUs < 0 ||
      info.captureTimestampUs > 0xffff_ffff
    ) {
      throw new TypeError(`captureTimestampUs = ${info.captureTimestampUs} is outside 0..2^32-1`);
    }
    if (!Number.isInteger(info.gopPosition) || info.gopPosition < 0 || info.gopPosition > 0xffff) {
      throw new TypeError(`gopPosition = ${info.gopPosition} is outside 0..65535`);
    }
    view.setUint32(offset, info.captureTimestampUs);
    view.setUint16(offset + 4, info.gopPosition);
    return FRAME_INFO_BYTES;
  },

  /** Reads frame info at `offset`; throws {@link WireError} `frame-info-short` when it does not fit. */
  decode(view: DataView, offset = 0, end = view.byteLength): { value: FrameInfo; bytes: number } {
    if (end - offset < FRAME_INFO_BYTES) {
      throw new WireError(
        'frame-info-short',
        `frame of ${Math.max(end - offset, 0)} bytes cannot hold its ${FRAME_INFO_BYTES}-byte frame info`,
      );
    }
    return {
      value: { captureTimestampUs: view.getUint32(offset), gopPosition: view.getUint16(offset + 4) },
      bytes: FRAME_INFO_BYTES,
    };
  },
} as const;
