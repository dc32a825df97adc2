/**
 * The sending half of H.264 over RTP, as much as the demo robot's camera needs: an Annex B clip cut
 * into access units, each NAL unit put into RTP payloads (RFC 6184, non-interleaved mode: a single
 * NAL unit packet when it fits, FU-A fragments when it does not), and the RTP fixed header.
 * `@svc/media` has only the receiving half (it never sends); its depacketiser reads these packets
 * back in the tests.
 *
 * @packageDocumentation
 */
import { h264CodecString, splitAnnexB } from '@svc/media';
import { DemoError } from './errors.js';

/** H.264 NAL unit types used here (H.264 table 7-1, RFC 6184 table 3). */
export const H264_NAL = {
  nonIdrSlice: 1,
  idrSlice: 5,
  sei: 6,
  sps: 7,
  pps: 8,
  accessUnitDelimiter: 9,
  fuA: 28,
} as const;

/** One access unit of a clip: its NAL units without start codes, in decoding order. */
export interface ClipFrame {
  readonly nals: readonly Uint8Array[];
  /** Holds an IDR slice: a decoder can start here. */
  readonly keyframe: boolean;
}

/** An H.264 elementary stream cut into access units, ready to loop. */
export interface H264Clip {
  readonly frames: readonly ClipFrame[];
  /** The WebCodecs codec string its SPS implies, e.g. `avc1.42c01e`. */
  readonly codec: string;
}

/** The type of an H.264 NAL unit (its header's low five bits). */
export function nalType(nal: Uint8Array): number {
  return (nal[0] ?? 0) & 0x1f;
}

/**
 * Cuts an Annex B H.264 stream into access units (H.264 §7.4.1.2.3): a new one starts at an AUD,
 * SEI, SPS or PPS after a slice, or at a slice whose first_mb_in_slice is 0 (its first bit, 1 in
 * ue(v)) after a slice. Enough for an encoder's output without arbitrary slice order.
 *
 * To loop, the clip must start with its SPS, PPS and an IDR, so every pass of the loop is a stream a
 * decoder can join at its first frame.
 *
 * @throws {DemoError} `bad-clip` when the bytes hold no access unit, or do not start that way.
 */
export function parseH264Clip(bytes: Uint8Array): H264Clip {
  const frames: ClipFrame[] = [];
  let current: Uint8Array[] = [];
  let sawSlice = false;
  const finish = () => {
    if (current.length === 0) return;
    frames.push({ nals: current, keyframe: current.some((nal) => nalType(nal) === H264_NAL.idrSlice) });
    current = [];
    sawSlice = false;
  };
  for (const nal of splitAnnexB(bytes)) {
    const type = nalType(nal);
    const slice = type === H264_NAL.nonIdrSlice || type === H264_NAL.idrSlice;
    const firstSlice = slice && nal.length > 1 && ((nal[1] ?? 0) & 0x80) !== 0;
    const prefix = type >= H264_NAL.sei && type <= H264_NAL.accessUnitDelimiter;
    if (sawSlice && (firstSlice || prefix)) finish();
    current.push(nal);
    if (slice) sawSlice = true;
  }
  finish();
  const first = frames[0];
  const sps = first?.nals.find((nal) => nalType(nal) === H264_NAL.sps);
  if (first === undefined || sps === undefined || !first.nals.some((n) => nalType(n) === H264_NAL.pps)) {
    throw new DemoError('bad-clip', 'the clip must start with an SPS and a PPS (x264: repeat-headers=1)');
  }
  if (!first.keyframe) throw new DemoError('bad-clip', 'the clip must start with an IDR frame');
  let codec: string;
  try {
    codec = h264CodecString(sps);
  } catch (cause) {
    throw new DemoError('bad-clip', "the clip's SPS cannot be read", { cause });
  }
  return { frames, codec };
}

/**
 * The RTP payloads of one NAL unit (RFC 6184 §5.6 and §5.8): the NAL unit itself when it fits in
 * `maxPayload` bytes, else FU-A fragments of at most `maxPayload` bytes each:
 *
 * ```text
 *  FU indicator         FU header
 * +---------------+    +---------------+
 * |0|1|2|3|4|5|6|7|    |0|1|2|3|4|5|6|7|
 * +-+-+-+-+-+-+-+-+    +-+-+-+-+-+-+-+-+
 * |F|NRI|  Type=28|    |S|E|R|  Type   |   then a piece of the NAL unit without its header byte
 * +---------------+    +---------------+
 * ```
 *
 * F and NRI are the NAL unit's; S marks the first fragment, E the last; Type is the NAL unit's.
 *
 * @throws {TypeError} for an empty NAL unit or a `maxPayload` below 3 (a fragment holds a byte).
 */
export function h264Payloads(nal: Uint8Array, maxPayload: number): Uint8Array[] {
  if (nal.length === 0) throw new TypeError('h264Payloads: empty NAL unit');
  if (!Number.isInteger(maxPayload) || maxPayload < 3)
    throw new TypeError(`h264Payloads: maxPayload must be an integer of at least 3, got ${maxPayload}`);
  if (nal.length <= maxPayload) return [nal];
  const header = nal[0]!;
  const indicator = (header & 0xe0) | H264_NAL.fuA;
  const body = nal.subarray(1);
  const room = maxPayload - 2;
  const payloads: Uint8Array[] = [];
  for (let offset = 0; offset < body.length; offset += room) {
    const piece = body.subarray(offset, offset + room);
    const start = offset === 0 ? 0x80 : 0;
    const end = offset + room >= body.length ? 0x40 : 0;
    const payload = new Uint8Array(2 + piece.length);
    payload[0] = indicator;
    payload[1] = start | end | (header & 0x1f);
    payload.set(piece, 2);
    payloads.push(payload);
  }
  return payloads;
}

/** The fields of an RTP fixed header this sender writes (no CSRC, no extension, no padding). */
export interface RtpHeaderFields {
  readonly marker: boolean;
  /** 0..127. */
  readonly payloadType: number;
  /** 16 bits. */
  readonly sequenceNumber: number;
  /** 32 bits, in the payload format's clock (90 kHz for video). */
  readonly timestamp: number;
  /** 32 bits. */
  readonly ssrc: number;
}

/** Bytes of the RTP fixed header. */
export const RTP_FIXED_HEADER_BYTES = 12;

/**
 * One RTP packet (RFC 3550 §5.1): the fixed header, then `payload`.
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
 * ```
 *
 * @throws {TypeError} when a field is out of its range.
 */
export function rtpPacket(fields: RtpHeaderFields, payload: Uint8Array): Uint8Array {
  const { payloadType, sequenceNumber, timestamp, ssrc } = fields;
  checkField('payloadType', payloadType, 0x7f);
  checkField('sequenceNumber', sequenceNumber, 0xffff);
  checkField('timestamp', timestamp, 0xffff_ffff);
  checkField('ssrc', ssrc, 0xffff_ffff);
  const packet = new Uint8Array(RTP_FIXED_HEADER_BYTES + payload.length);
  const view = new DataView(packet.buffer);
  view.setUint8(0, 0x80); // V=2, P=0, X=0, CC=0
  view.setUint8(1, (fields.marker ? 0x80 : 0) | payloadType);
  view.setUint16(2, sequenceNumber);
  view.setUint32(4, timestamp);
  view.setUint32(8, ssrc);
  packet.set(payload, RTP_FIXED_HEADER_BYTES);
  return packet;
}

function checkField(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max)
    throw new TypeError(`rtpPacket: ${name} must be an integer in 0..${max}, got ${value}`);
}
