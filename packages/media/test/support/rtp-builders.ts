/**
 * Test-only tools: build RTP packets by hand, cut Annex B elementary streams into NAL units and
 * access units, packetise them as an RTP sender would (RFC 6184 / RFC 7798), and make and check
 * small streams with ffmpeg.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { AccessUnit, RtpPacket } from '../../src/types.js';

const run = promisify(execFile);

/** Payload type and SSRC of every test packet. */
export const TEST_PAYLOAD_TYPE = 96;
export const TEST_SSRC = 0x1234_5678;

/** Fields of a hand-built packet; everything but the payload defaults. */
export interface PacketFields {
  readonly timestamp?: number;
  readonly marker?: boolean;
  readonly sequenceNumber?: number;
}

/** An {@link RtpPacket} with `payload` as given. */
export function rtp(payload: Uint8Array | readonly number[], fields: PacketFields = {}): RtpPacket {
  return {
    marker: fields.marker ?? false,
    payloadType: TEST_PAYLOAD_TYPE,
    sequenceNumber: fields.sequenceNumber ?? 0,
    timestamp: fields.timestamp ?? 0,
    ssrc: TEST_SSRC,
    payload: payload instanceof Uint8Array ? payload : Uint8Array.from(payload),
  };
}

/** Bytes from a hex string; spaces are ignored. */
export function hex(text: string): Uint8Array {
  const digits = text.replace(/\s+/g, '');
  const out = new Uint8Array(digits.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(digits.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** `parts` concatenated. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** NAL units joined with 4-byte start codes, as the depacketisers emit them. */
export function annexB(nals: readonly Uint8Array[]): Uint8Array {
  const startCode = Uint8Array.of(0, 0, 0, 1);
  return concat(nals.flatMap((nal) => [startCode, nal]));
}

/** H.264 NAL unit type. */
export function h264Type(nal: Uint8Array): number {
  return nal[0]! & 0x1f;
}

/** H.265 NAL unit type. */
export function h265Type(nal: Uint8Array): number {
  return (nal[0]! >>> 1) & 0x3f;
}

/**
 * Groups an H.264 stream's NAL units into access units (H.264 §7.4.1.2.3): a new one starts at an
 * SPS, PPS, SEI or AUD after a slice, or at a slice with first_mb_in_slice 0 (first bit 1) after
 * a slice. Enough for x264 output (no ASO, no redundant pictures).
 */
export function groupH264AccessUnits(nals: readonly Uint8Array[]): Uint8Array[][] {
  return groupAccessUnits(nals, (nal) => {
    const type = h264Type(nal);
    if (type === 1 || type === 5) return (nal[1]! & 0x80) !== 0 ? 'first-slice' : 'slice';
    return type >= 6 && type <= 9 ? 'prefix' : 'other';
  });
}

/**
 * Groups an H.265 stream's NAL units into access units (H.265 §7.4.2.4.4): a new one starts at a
 * VPS, SPS, PPS, AUD or prefix SEI after a slice, or at a slice segment with
 * first_slice_segment_in_pic_flag set after a slice.
 */
export function groupH265AccessUnits(nals: readonly Uint8Array[]): Uint8Array[][] {
  return groupAccessUnits(nals, (nal) => {
    const type = h265Type(nal);
    if (type <= 31) return (nal[2]! & 0x80) !== 0 ? 'first-slice' : 'slice';
    return (type >= 32 && type <= 35) || type === 39 ? 'prefix' : 'other';
  });
}

type NalPlace = 'first-slice' | 'slice' | 'prefix' | 'other';

function groupAccessUnits(nals: readonly Uint8Array[], place: (nal: Uint8Array) => NalPlace): Uint8Array[][] {
  const units: Uint8Array[][] = [];
  let current: Uint8Array[] = [];
  let sawSlice = false;
  for (const nal of nals) {
    const where = place(nal);
    if (sawSlice && (where === 'first-slice' || where === 'prefix')) {
      units.push(current);
      current = [];
      sawSlice = false;
    }
    current.push(nal);
    if (where === 'first-slice' || where === 'slice') sawSlice = true;
  }
  if (current.length > 0) units.push(current);
  return units;
}

/** How a test sender packetises. */
export interface PacketizeOptions {
  /** Largest RTP payload; bigger NAL units are fragmented. Default 1000. */
  readonly maxPayload?: number;
  /** Sequence number of the first packet (wraps at 65536). Default 0. */
  readonly firstSequenceNumber?: number;
  /** RTP timestamp of the first access unit; each next one is 3000 later. Default 0. */
  readonly firstTimestamp?: number;
  /** H.265 only: write DONL/DOND fields (sprop-max-don-diff > 0). */
  readonly donl?: boolean;
}

/** A packet as sent, with the index of the access unit it belongs to. */
export interface SentPacket extends RtpPacket {
  readonly accessUnit: number;
}

/**
 * Packetises H.264 access units like a simple RFC 6184 sender: consecutive SPS/PPS in one STAP-A,
 * other NAL units alone when they fit, FU-A when they do not; marker on each access unit's last packet.
 */
export function packetizeH264(units: readonly Uint8Array[][], options: PacketizeOptions = {}): SentPacket[] {
  return packetize(units, options, h264Framing);
}

/**
 * Packetises H.265 access units like a simple RFC 7798 sender: consecutive VPS/SPS/PPS in one AP,
 * other NAL units alone when they fit, FU when they do not; DONL/DOND when `donl`.
 */
export function packetizeH265(units: readonly Uint8Array[][], options: PacketizeOptions = {}): SentPacket[] {
  return packetize(units, options, h265Framing);
}

interface Framing {
  isParameterSet(nal: Uint8Array): boolean;
  single(nal: Uint8Array, don: number, donl: boolean): Uint8Array;
  aggregate(nals: readonly Uint8Array[], firstDon: number, donl: boolean): Uint8Array;
  fragments(nal: Uint8Array, maxPayload: number, don: number, donl: boolean): Uint8Array[];
}

const h264Framing: Framing = {
  isParameterSet: (nal) => h264Type(nal) === 7 || h264Type(nal) === 8,
  single: (nal) => nal,
  aggregate(nals) {
    // STAP-A header: F=0, NRI = highest NRI of the units, type 24
    let nri = 0;
    for (const nal of nals) nri = Math.max(nri, nal[0]! & 0x60);
    return concat([Uint8Array.of(nri | 24), ...nals.flatMap((nal) => [u16(nal.length), nal])]);
  },
  fragments(nal, maxPayload) {
    const body = nal.subarray(1);
    const room = maxPayload - 2;
    const out: Uint8Array[] = [];
    for (let offset = 0; offset < body.length; offset += room) {
      const start = offset === 0 ? 0x80 : 0;
      const end = offset + room >= body.length ? 0x40 : 0;
      const indicator = (nal[0]! & 0xe0) | 28;
      const header = start | end | h264Type(nal);
      out.push(concat([Uint8Array.of(indicator, header), body.subarray(offset, offset + room)]));
    }
    return out;
  },
};

const h265Framing: Framing = {
  isParameterSet: (nal) => h265Type(nal) >= 32 && h265Type(nal) <= 34,
  single: (nal, don, donl) => (donl ? concat([nal.subarray(0, 2), u16(don), nal.subarray(2)]) : nal),
  aggregate(nals, firstDon, donl) {
    // AP payload header: F=0, type 48, LayerId 0, TID = lowest TID of the units (all 1 here)
    const parts: Uint8Array[] = [Uint8Array.of(48 << 1, 1)];
    nals.forEach((nal, i) => {
      if (donl) parts.push(i === 0 ? u16(firstDon) : Uint8Array.of(0)); // DONL, then DOND = diff - 1
      parts.push(u16(nal.length), nal);
    });
    return concat(parts);
  },
  fragments(nal, maxPayload, don, donl) {
    const body = nal.subarray(2);
    const room = maxPayload - 3 - (donl ? 2 : 0);
    const out: Uint8Array[] = [];
    for (let offset = 0; offset < body.length; offset += room) {
      const start = offset === 0 ? 0x80 : 0;
      const end = offset + room >= body.length ? 0x40 : 0;
      const payloadHeader = Uint8Array.of((nal[0]! & 0x81) | (49 << 1), nal[1]!);
      const parts: Uint8Array[] = [payloadHeader, Uint8Array.of(start | end | h265Type(nal))];
      if (donl && start !== 0) parts.push(u16(don));
      parts.push(body.subarray(offset, offset + room));
      out.push(concat(parts));
    }
    return out;
  },
};

function packetize(
  units: readonly Uint8Array[][],
  options: PacketizeOptions,
  framing: Framing,
): SentPacket[] {
  const maxPayload = options.maxPayload ?? 1000;
  const donl = options.donl ?? false;
  let sequenceNumber = options.firstSequenceNumber ?? 0;
  let don = 0;
  const packets: SentPacket[] = [];
  units.forEach((nals, accessUnit) => {
    const timestamp = ((options.firstTimestamp ?? 0) + accessUnit * 3000) % 2 ** 32;
    const payloads: Uint8Array[] = [];
    for (let i = 0; i < nals.length; ) {
      const group: Uint8Array[] = [];
      while (i < nals.length && framing.isParameterSet(nals[i]!)) group.push(nals[i++]!);
      if (group.length > 1) {
        payloads.push(framing.aggregate(group, don, donl));
        don += group.length;
        continue;
      }
      const nal = group[0] ?? nals[i++]!;
      payloads.push(
        ...(nal.length + 2 <= maxPayload
          ? [framing.single(nal, don, donl)]
          : framing.fragments(nal, maxPayload, don, donl)),
      );
      don++;
    }
    payloads.forEach((payload, n) => {
      packets.push({
        ...rtp(payload, { timestamp, sequenceNumber, marker: n === payloads.length - 1 }),
        accessUnit,
      });
      sequenceNumber = (sequenceNumber + 1) & 0xffff;
    });
  });
  return packets;
}

function u16(value: number): Uint8Array {
  return Uint8Array.of((value >>> 8) & 0xff, value & 0xff);
}

/** The access units' data concatenated: the elementary stream a recorder would write. */
export function joinAccessUnits(units: readonly AccessUnit[]): Uint8Array {
  return concat(units.map((unit) => unit.data));
}

/** Runs ffmpeg with `args`; rejects with its stderr when it fails. */
export async function ffmpeg(args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return run('ffmpeg', ['-hide_banner', '-nostdin', ...args], { maxBuffer: 64 * 1024 * 1024 });
}

/** Throws a clear error when ffmpeg or ffprobe is not installed (they are test dependencies). */
export async function requireFfmpeg(): Promise<void> {
  try {
    await run('ffmpeg', ['-version']);
    await run('ffprobe', ['-version']);
  } catch (err) {
    throw new Error('ffmpeg and ffprobe must be on PATH for the media tests (apt-get install ffmpeg)', {
      cause: err,
    });
  }
}

/**
 * Encodes `frames` frames of the testsrc2 pattern at 320x240, 30 fps into `path` as a raw
 * elementary stream (`-f h264` or `-f hevc`), with the encoder arguments given.
 */
export async function encodeTestStream(
  path: string,
  frames: number,
  encoderArgs: readonly string[],
  format: 'h264' | 'hevc',
): Promise<void> {
  await ffmpeg([
    '-v',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=320x240:rate=30',
    '-frames:v',
    String(frames),
    ...encoderArgs,
    '-f',
    format,
    path,
  ]);
}

/** Decodes `path` with `ffmpeg -v error`; returns its stderr and the MD5 of every decoded frame. */
export async function decodeFrames(
  path: string,
  format: 'h264' | 'hevc',
): Promise<{ errors: string; frameHashes: string[] }> {
  const { stdout, stderr } = await ffmpeg(['-v', 'error', '-f', format, '-i', path, '-f', 'framemd5', '-']);
  const frameHashes = stdout
    .split('\n')
    .filter((line) => line.length > 0 && !line.startsWith('#'))
    .map((line) => line.split(',').at(-1)!.trim());
  return { errors: stderr, frameHashes };
}

/** ffprobe's profile name and level of the first video stream of `path`. */
export async function probeProfileLevel(path: string): Promise<{ profile: string; level: number }> {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-show_entries',
    'stream=profile,level',
    '-of',
    'json',
    path,
  ]);
  const stream = (JSON.parse(stdout) as { streams: { profile: string; level: number }[] }).streams[0];
  if (stream === undefined) throw new Error(`ffprobe found no video stream in ${path}`);
  return stream;
}

/** ffprobe's picture type (I, P, B) of every frame of `path`, in presentation order. */
export async function probePictureTypes(path: string): Promise<string[]> {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-show_entries',
    'frame=pict_type',
    '-of',
    'csv=p=0',
    path,
  ]);
  return stdout
    .split('\n')
    .map((line) => line.replace(/,.*$/, '').trim())
    .filter((line) => line.length > 0);
}

/** Inserts emulation prevention bytes into an RBSP as an encoder does (H.264 §7.4.1, H.265 §7.4.2). */
export function addEmulationPrevention(rbsp: Uint8Array): Uint8Array {
  const out: number[] = [];
  let zeros = 0;
  for (const byte of rbsp) {
    if (zeros >= 2 && byte <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(byte);
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return Uint8Array.from(out);
}

/** Writes bits most significant first, for building syntax structures in tests. */
export class BitWriter {
  private readonly bits: number[] = [];

  /** `value` in `n` bits. */
  u(n: number, value: number): this {
    for (let i = n - 1; i >= 0; i--) this.bits.push(Math.floor(value / 2 ** i) % 2);
    return this;
  }

  /** Unsigned Exp-Golomb. */
  ue(value: number): this {
    const code = value + 1;
    const length = Math.floor(Math.log2(code));
    return this.u(length, 0).u(length + 1, code);
  }

  /** Signed Exp-Golomb. */
  se(value: number): this {
    return this.ue(value > 0 ? 2 * value - 1 : -2 * value);
  }

  /** The bits so far, padded with zero bits to a whole byte. */
  bytes(): Uint8Array {
    const out = new Uint8Array(Math.ceil(this.bits.length / 8));
    this.bits.forEach((bit, i) => {
      out[i >>> 3]! |= bit << (7 - (i & 7));
    });
    return out;
  }
}

export { seededRandom } from '@svc/wire/sim';
