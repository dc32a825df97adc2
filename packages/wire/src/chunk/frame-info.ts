import { WireError } from '../errors.js';
import { seqDiff32, wrapU32 } from '../seq.js';

/**
 * Frame info: the first 10 bytes of a frame's data, so the first data chunk of block 0 begins with
 * them. Being part of the data, they are protected by the block's parity like the access unit.
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                 capture timestamp (µs, wrapping)              |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |        GOP position           |  capture clock (µs, wrapping) |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  ... capture clock            |  message ...                  |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 */
export const FRAME_INFO_BYTES = 10;

/** Per-frame facts carried with the first chunk. */
export interface FrameInfo {
  /** Capture time: the source's RTP clock converted to µs, 32 bits wrapping. */
  readonly captureTimestampUs: number;
  /** Frames since the last random access point (0 on a keyframe), saturating at 65535. */
  readonly gopPosition: number;
  /**
   * When the message was made, on the sender's wall clock (the clock of the chunk sender
   * timestamps), µs, 32 bits wrapping; `0` when the sender does not know (encoders never write 0
   * for a known time). Video: the capture time the source's RTCP sender reports map its RTP time
   * to, else the access unit's arrival at the daemon. Sensor: the datagram's arrival at the daemon.
   * Command: the pilot's send time converted to the robot's clock.
   */
  readonly captureClockUs: number;
}

/** Frame info to encode: {@link FrameInfo} with the capture clock optional (default 0, unknown). */
export type FrameInfoInput = Omit<FrameInfo, 'captureClockUs'> & { readonly captureClockUs?: number };

/** Encoder and decoder of {@link FrameInfo}. */
export const frameInfo = {
  /** Bytes the frame info occupies. */
  byteLength(): number {
    return FRAME_INFO_BYTES;
  },

  /** Writes `info` at `offset`; throws `TypeError` for out-of-range fields. */
  encodeInto(view: DataView, offset: number, info: FrameInfoInput): number {
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
    const clock = info.captureClockUs ?? 0;
    if (!Number.isInteger(clock) || clock < 0 || clock > 0xffff_ffff) {
      throw new TypeError(`captureClockUs = ${clock} is outside 0..2^32-1`);
    }
    view.setUint32(offset, info.captureTimestampUs);
    view.setUint16(offset + 4, info.gopPosition);
    view.setUint32(offset + 6, clock);
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
      value: {
        captureTimestampUs: view.getUint32(offset),
        gopPosition: view.getUint16(offset + 4),
        captureClockUs: view.getUint32(offset + 6),
      },
      bytes: FRAME_INFO_BYTES,
    };
  },
} as const;

/**
 * A wall-clock time (ms, the sender's clock) as a frame info capture clock: µs wrapped to 32 bits,
 * never 0 (which means unknown; a time that wraps to exactly 0 is written as 1 µs later).
 */
export function captureClockFromMs(ms: number): number {
  if (!Number.isFinite(ms)) throw new TypeError(`capture clock time must be finite, got ${ms}`);
  return wrapU32(Math.round(ms * 1000)) || 1;
}

/**
 * How long before `nowMs` (the same clock) a capture clock value was taken, ms; negative when it
 * lies ahead of `nowMs`. `undefined` for 0 (unknown). Unambiguous within ±35 minutes (the 32-bit
 * µs wrap).
 */
export function captureClockAgeMs(captureClockUs: number, nowMs: number): number | undefined {
  if (captureClockUs === 0) return undefined;
  return seqDiff32(wrapU32(Math.round(nowMs * 1000)), captureClockUs) / 1000;
}
