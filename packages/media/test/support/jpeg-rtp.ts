import type { RtpPacket } from '../../src/types.js';

/** RTP packets for the payloads of one frame: consecutive sequence numbers, marker on the last. */
export function framePackets(
  payloads: readonly Uint8Array[],
  timestamp: number,
  firstSequenceNumber = 0,
): RtpPacket[] {
  return payloads.map((payload, i) => ({
    marker: i === payloads.length - 1,
    payloadType: 26,
    sequenceNumber: (firstSequenceNumber + i) & 0xffff,
    timestamp,
    ssrc: 0x1234_5678,
    payload,
  }));
}

/** A copy of `packet` with another payload (and optionally other fields). */
export function withPayload(
  packet: RtpPacket,
  payload: Uint8Array,
  changes: Partial<RtpPacket> = {},
): RtpPacket {
  return { ...packet, ...changes, payload };
}
