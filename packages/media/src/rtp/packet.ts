import { MediaError } from '../errors.js';
import type { RtpPacket } from '../types.js';

/**
 * RTP fixed header (RFC 3550 §5.1), then CSRCs, an optional extension and optional padding.
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |V=2|P|X|  CC   |M|     PT      |       sequence number         |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                           timestamp                           |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                             SSRC                              |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                  CSRC list (CC × 32 bits)                     |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * | extension profile (16)        | extension length (16, words)  |  if X
 * |                 extension data (length × 32 bits)             |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                 payload  ...  | padding ... | padding count   |  padding if P
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 */
export const RTP_HEADER_BYTES = 12;

/**
 * True for an RTCP packet sharing the port (RFC 5761 §4: packet types 192..223 in the second byte),
 * which is not media and is ignored.
 */
export function isRtcp(bytes: Uint8Array): boolean {
  const second = bytes[1];
  return bytes.length >= 2 && second !== undefined && second >= 192 && second <= 223;
}

/** Parses one RTP packet; throws `MediaError('malformed-rtp')` with the reason for bad input. */
export function parseRtpPacket(bytes: Uint8Array): RtpPacket {
  if (bytes.length < RTP_HEADER_BYTES) {
    throw malformed(`packet of ${bytes.length} bytes is shorter than the 12-byte RTP header`);
  }
  const b0 = bytes[0]!;
  const version = b0 >> 6;
  if (version !== 2) throw malformed(`RTP version ${version}, expected 2`);
  const csrcCount = b0 & 0x0f;
  let offset = RTP_HEADER_BYTES + csrcCount * 4;
  if (offset > bytes.length) throw malformed(`${csrcCount} CSRCs do not fit a ${bytes.length}-byte packet`);
  if ((b0 & 0x10) !== 0) {
    if (offset + 4 > bytes.length) throw malformed('header extension does not fit the packet');
    const words = (bytes[offset + 2]! << 8) | bytes[offset + 3]!;
    offset += 4 + words * 4;
    if (offset > bytes.length) throw malformed(`header extension of ${words} words does not fit the packet`);
  }
  let end = bytes.length;
  if ((b0 & 0x20) !== 0) {
    const padding = bytes[end - 1]!;
    if (padding === 0 || padding > end - offset)
      throw malformed(`padding of ${padding} bytes is impossible here`);
    end -= padding;
  }
  const b1 = bytes[1]!;
  return {
    marker: (b1 & 0x80) !== 0,
    payloadType: b1 & 0x7f,
    sequenceNumber: (bytes[2]! << 8) | bytes[3]!,
    timestamp: ((bytes[4]! << 24) | (bytes[5]! << 16) | (bytes[6]! << 8) | bytes[7]!) >>> 0,
    ssrc: ((bytes[8]! << 24) | (bytes[9]! << 16) | (bytes[10]! << 8) | bytes[11]!) >>> 0,
    payload: bytes.subarray(offset, end),
  };
}

function malformed(reason: string): MediaError {
  return new MediaError('malformed-rtp', `malformed RTP packet: ${reason}`);
}
