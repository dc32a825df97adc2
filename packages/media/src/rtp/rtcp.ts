import { MediaError } from '../errors.js';

/**
 * RTCP (RFC 3550 §6): one datagram holds a compound packet, several RTCP packets back to back,
 * each with this common header; `length` counts 32-bit words less one, header and padding
 * included. Only the padding of the last packet may be non-zero (§6.4.1, the P bit).
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |V=2|P|   RC    |      PT       |             length            |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 *
 * The sender report (PT 200, §6.4.1) is the one read here: it ties the sender's RTP clock to its
 * wall clock.
 *
 * ```text
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |V=2|P|   RC    |   PT=SR=200   |             length            |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                         SSRC of sender                        |
 * +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
 * |              NTP timestamp, most significant word             |  seconds since 1900
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |             NTP timestamp, least significant word             |  fraction (1/2^32 s)
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                         RTP timestamp                         |  the same instant
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                     sender's packet count                     |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                      sender's octet count                     |
 * +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
 * |                 report blocks (RC × 24 bytes)                 |
 * +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
 * |                  profile-specific extensions                  |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 */
export const RTCP_HEADER_BYTES = 4;

/** Packet type of a sender report. */
export const RTCP_SENDER_REPORT = 200;

/** Bytes of an SR up to its report blocks: header, SSRC and the 20-byte sender info. */
const SENDER_REPORT_BYTES = 28;
/** Bytes of one reception report block. */
const REPORT_BLOCK_BYTES = 24;
/** Seconds from the NTP epoch (1900-01-01) to the Unix epoch (1970-01-01). */
const NTP_UNIX_OFFSET_S = 2_208_988_800;

/** One RTCP sender report: the instant `rtpTimestamp` on the sender's wall clock. */
export interface SenderReport {
  readonly ssrc: number;
  /** The NTP timestamp as Unix milliseconds (fraction kept). */
  readonly wallMs: number;
  /** The RTP timestamp of the same instant (32 bits). */
  readonly rtpTimestamp: number;
  readonly packetCount: number;
  readonly octetCount: number;
}

/** What one compound packet held. */
export interface RtcpCompound {
  /** RTCP packets in the datagram, of every type. */
  readonly packets: number;
  /** Its sender reports, in order. */
  readonly senderReports: readonly SenderReport[];
}

/**
 * A 64-bit NTP timestamp as Unix milliseconds. Seconds below 2^31 are taken to be in NTP era 1
 * (after 2036-02-07), as RFC 4330 §3 advises, so the mapping keeps working past the era's end.
 */
export function ntpToUnixMs(seconds: number, fraction: number): number {
  const era = seconds < 0x8000_0000 ? 0x1_0000_0000 : 0;
  return (seconds + era - NTP_UNIX_OFFSET_S) * 1000 + (fraction / 0x1_0000_0000) * 1000;
}

/**
 * Parses a compound RTCP packet (a datagram on the RTCP port, an interleaved RTCP frame, or RTCP
 * multiplexed on the RTP port) and returns its sender reports; other packet types are walked over.
 *
 * @throws MediaError `malformed-rtcp` naming what is wrong: too short for a header, version
 *   other than 2, a length that overruns the datagram or leaves bytes over, padding that is
 *   impossible or not on the last packet, a sender report too short for its report blocks.
 */
export function parseRtcpCompound(bytes: Uint8Array): RtcpCompound {
  if (bytes.length < RTCP_HEADER_BYTES) {
    throw malformed(`datagram of ${bytes.length} bytes is shorter than the 4-byte RTCP header`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const senderReports: SenderReport[] = [];
  let packets = 0;
  let offset = 0;
  while (offset < bytes.length) {
    if (bytes.length - offset < RTCP_HEADER_BYTES) {
      throw malformed(`${bytes.length - offset} bytes left after packet ${packets}, too few for a header`);
    }
    const b0 = view.getUint8(offset);
    const version = b0 >> 6;
    if (version !== 2) throw malformed(`packet ${packets}: version ${version}, expected 2`);
    const type = view.getUint8(offset + 1);
    const size = (view.getUint16(offset + 2) + 1) * 4;
    if (size > bytes.length - offset) {
      throw malformed(
        `packet ${packets} (type ${type}) says ${size} bytes, ${bytes.length - offset} are left`,
      );
    }
    let end = offset + size;
    if ((b0 & 0x20) !== 0) {
      if (end !== bytes.length) throw malformed(`packet ${packets} is padded but not the last one`);
      const padding = view.getUint8(end - 1);
      if (padding === 0 || padding > size - RTCP_HEADER_BYTES) {
        throw malformed(`packet ${packets}: padding of ${padding} bytes is impossible in ${size}`);
      }
      end -= padding;
    }
    if (type === RTCP_SENDER_REPORT) {
      const blocks = b0 & 0x1f;
      const needed = SENDER_REPORT_BYTES + blocks * REPORT_BLOCK_BYTES;
      if (end - offset < needed) {
        throw malformed(
          `sender report of ${end - offset} bytes is shorter than the ${needed} its ${blocks} report blocks need`,
        );
      }
      senderReports.push({
        ssrc: view.getUint32(offset + 4),
        wallMs: ntpToUnixMs(view.getUint32(offset + 8), view.getUint32(offset + 12)),
        rtpTimestamp: view.getUint32(offset + 16),
        packetCount: view.getUint32(offset + 20),
        octetCount: view.getUint32(offset + 24),
      });
    }
    packets++;
    offset += size;
  }
  return { packets, senderReports };
}

function malformed(reason: string): MediaError {
  return new MediaError('malformed-rtcp', `malformed RTCP: ${reason}`);
}
