import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryLogger } from '@svc/runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitAnnexB } from '../src/annexb.js';
import { isMediaError } from '../src/errors.js';
import { H264Depacketizer, type H264DepacketizerOptions } from '../src/h264/depacketizer.js';
import { h264CodecString, h264SliceHeader, h264SliceType } from '../src/h264/sps.js';
import type { AccessUnit, RtpPacket } from '../src/types.js';
import {
  annexB,
  decodeFrames,
  encodeTestStream,
  groupH264AccessUnits,
  h264Type,
  hex,
  joinAccessUnits,
  packetizeH264,
  probePictureTypes,
  probeProfileLevel,
  requireFfmpeg,
  rtp,
} from './support/rtp-builders.js';

// Real parameter sets of an x264 baseline stream (320x240): profile_idc 66, constraint flags
// 0xc0 (set0, set1), level_idc 13, seq_parameter_set_id 0; the SPS holds emulation prevention.
const SPS = hex('67 42c00d d9 0141fb0110000003001000000303c0f142a480');
const PPS = hex('68 cb83cb20'); // pic_parameter_set_id 0, seq_parameter_set_id 0
// The same SPS at level 3.0 (level_idc 0x1e), and another PPS with id 0: "new" in-band sets.
const SPS_LEVEL_30 = hex('67 42c01e d9 0141fb0110000003001000000303c0f142a480');
const PPS_NEW = hex('68 ce3c80');
// A PPS with pic_parameter_set_id 1 (ue '010'), seq_parameter_set_id 0.
const PPS_ID_1 = hex('68 5c80');
// SEI, recovery point (payload type 6, size 1).
const SEI = hex('06 06 01 c4 80');
// Access unit delimiter, primary_pic_type 7.
const AUD = hex('09 f0');
// IDR slice: header 0x65 (NRI 3, type 5); first_mb_in_slice 0 '1', slice_type 7 '0001000',
// pic_parameter_set_id 0 '1', then slice data.
const IDR = hex('65 88 84 21 a0 1f 2e 3d 4c 5b 6a 79 88 97 a6 b5 c4 d3 e2 f1 00 01 02 03 04 05 06 07 08 09');
// P slice: header 0x41 (NRI 2, type 1); first_mb_in_slice 0 '1', slice_type 5 '00110', pps 0 '1'.
const P_SLICE = hex('41 9a 22 33 44');
// Second P slice of a picture: first_mb_in_slice 10 '0001011', slice_type 5 '00110', pps 0 '1'.
const P_SLICE_MB10 = hex('41 16 68 55 66');
// B slice: header 0x01 (NRI 0, type 1); first_mb_in_slice 0 '1', slice_type 6 '00111', pps 0 '1'.
const B_SLICE = hex('01 9f 10 20');

const CODEC = 'avc1.42c00d';

function depacketizer(options: Partial<H264DepacketizerOptions> = {}): H264Depacketizer {
  return new H264Depacketizer({ codec: CODEC, ...options });
}

/** Feeds packets, all received at `atMs`; returns every access unit emitted. */
function feed(d: H264Depacketizer, packets: readonly RtpPacket[], atMs = 0): AccessUnit[] {
  return packets.flatMap((packet) => d.handlePacket(packet, atMs));
}

/** FU-A packets of `nal` cut into `count` fragments. */
function fuA(nal: Uint8Array, count: number): Uint8Array[] {
  const body = nal.subarray(1);
  const size = Math.ceil(body.length / count);
  return Array.from({ length: count }, (_, i) =>
    Uint8Array.from([
      (nal[0]! & 0xe0) | 28, // FU indicator: F and NRI of the NAL unit, type 28
      (i === 0 ? 0x80 : 0) | (i === count - 1 ? 0x40 : 0) | (nal[0]! & 0x1f), // FU header: S, E, R=0, type
      ...body.subarray(i * size, (i + 1) * size),
    ]),
  );
}

describe('H264Depacketizer: golden packets', () => {
  it('emits a single NAL unit packet with the marker at once, as one Annex B access unit', () => {
    const d = depacketizer();
    // Single NAL unit packet: the payload is the P slice NAL unit itself.
    const units = d.handlePacket(rtp(P_SLICE, { timestamp: 90_000, marker: true, sequenceNumber: 7 }), 12.5);
    expect(units).toEqual([
      {
        codec: CODEC,
        data: hex('00000001 41 9a 22 33 44'),
        rtpTimestamp: 90_000,
        captureTimeUs: 1_000_000,
        keyframe: false,
        receivedAtMs: 12.5,
        details: { nalTypes: [1], slices: 1, bSlice: false, inBandParameterSets: false },
      },
    ]);
    expect(d.stats).toMatchObject({ packets: 1, accessUnits: 1, keyframes: 0, droppedAccessUnits: 0 });
  });

  it('unpacks a STAP-A with three NAL units and marks the IDR access unit a keyframe', () => {
    const d = depacketizer();
    const stapA = Uint8Array.from([
      0x78, // STAP-A header: F=0, NRI=3, type 24
      0x00, // size of unit 1, high byte
      SPS.length, // size of unit 1, low byte
      ...SPS, // unit 1: SPS
      0x00,
      PPS.length, // size of unit 2
      ...PPS, // unit 2: PPS
      0x00,
      SEI.length, // size of unit 3
      ...SEI, // unit 3: SEI
    ]);
    expect(d.handlePacket(rtp(stapA, { timestamp: 3000 }), 1)).toEqual([]);
    const [au] = d.handlePacket(rtp(IDR, { timestamp: 3000, marker: true }), 2);
    expect(au?.data).toEqual(annexB([SPS, PPS, SEI, IDR]));
    expect(au?.keyframe).toBe(true);
    expect(au?.details).toEqual({
      nalTypes: [7, 8, 6, 5],
      slices: 1,
      bSlice: false,
      inBandParameterSets: true,
    });
    expect(d.stats.keyframes).toBe(1);
  });

  it('reassembles an FU-A split over three packets across the sequence number wrap', () => {
    const d = depacketizer({ parameterSets: [SPS, PPS] });
    const body = IDR.subarray(1);
    const fragments = [
      // FU indicator 0x7c: F=0, NRI=3, type 28; FU header 0x85: S=1, E=0, R=0, type 5
      { payload: [0x7c, 0x85, ...body.subarray(0, 10)], sequenceNumber: 65534, marker: false },
      // FU header 0x05: S=0, E=0, type 5
      { payload: [0x7c, 0x05, ...body.subarray(10, 20)], sequenceNumber: 65535, marker: false },
      // FU header 0x45: S=0, E=1, type 5; the last packet of the access unit carries the marker
      { payload: [0x7c, 0x45, ...body.subarray(20)], sequenceNumber: 0, marker: true },
    ];
    const results = fragments.map(({ payload, sequenceNumber, marker }) =>
      d.handlePacket(rtp(payload, { timestamp: 6000, sequenceNumber, marker }), 0),
    );
    expect(results[0]).toEqual([]);
    expect(results[1]).toEqual([]);
    // NAL header rebuilt as F | NRI from the indicator | type from the FU header = 0x65.
    expect(results[2]?.[0]?.data).toEqual(annexB([SPS, PPS, IDR]));
    expect(results[2]?.[0]?.details.nalTypes).toEqual([5]);
  });

  it('collects a multi-slice access unit and emits it on the second slice, which carries the marker', () => {
    const d = depacketizer();
    expect(d.handlePacket(rtp(P_SLICE, { timestamp: 9000 }), 1)).toEqual([]);
    const units = d.handlePacket(rtp(P_SLICE_MB10, { timestamp: 9000, marker: true }), 2);
    expect(units).toHaveLength(1);
    expect(units[0]?.data).toEqual(annexB([P_SLICE, P_SLICE_MB10]));
    expect(units[0]?.details.slices).toBe(2);
  });

  it('ends an access unit at a timestamp change when its marker never came', () => {
    const d = depacketizer();
    expect(d.handlePacket(rtp(P_SLICE, { timestamp: 0 }), 10)).toEqual([]);
    const units = d.handlePacket(rtp(B_SLICE, { timestamp: 3000, marker: true }), 20);
    expect(units.map((u) => [u.rtpTimestamp, u.receivedAtMs, u.details.bSlice])).toEqual([
      [0, 10, false], // completed by the timestamp change; received when its last packet came
      [3000, 20, true],
    ]);
  });

  it('lends access units in one reused buffer, yet two completed by one packet keep their own bytes', () => {
    const d = depacketizer({ lendAccessUnits: true });
    const [first] = d.handlePacket(rtp(IDR, { timestamp: 0, marker: true }), 0);
    expect(first?.data).toEqual(annexB([IDR]));
    const lent = first!.data.buffer;
    expect(d.handlePacket(rtp(P_SLICE, { timestamp: 3000 }), 1)).toEqual([]);
    const units = d.handlePacket(rtp(B_SLICE, { timestamp: 6000, marker: true }), 2);
    expect(units.map((u) => u.data)).toEqual([annexB([P_SLICE]), annexB([B_SLICE])]);
    expect(units[0]!.data.buffer).toBe(lent);
    // The second start code lands on bytes of the earlier, longer IDR access unit: it is written
    // whole, not left to a zeroed buffer.
    expect(d.handlePacket(rtp(P_SLICE, { timestamp: 9000 }), 3)).toEqual([]);
    const [next] = d.handlePacket(rtp(P_SLICE_MB10, { timestamp: 9000, marker: true }), 4);
    expect(next?.data).toEqual(annexB([P_SLICE, P_SLICE_MB10]));
    expect(next!.data.buffer).toBe(lent);
  });

  it('drops an access unit whose marker packet was lost and emits the next one', () => {
    const d = depacketizer();
    feed(d, [rtp(P_SLICE, { timestamp: 0, sequenceNumber: 10 })]);
    d.handleLoss(); // sequence number 11, the marker packet, never came
    const units = feed(d, [rtp(P_SLICE, { timestamp: 3000, sequenceNumber: 12, marker: true })]);
    expect(units.map((u) => u.rtpTimestamp)).toEqual([3000]);
    expect(d.stats.droppedAccessUnits).toBe(1);
  });

  it('drops an access unit that lost a fragment in the middle of an FU-A, then emits the next one', () => {
    const d = depacketizer({ parameterSets: [SPS, PPS] });
    const [first, , last] = fuA(IDR, 3);
    expect(feed(d, [rtp(first!, { timestamp: 0 })])).toEqual([]);
    d.handleLoss();
    expect(feed(d, [rtp(last!, { timestamp: 0, marker: true })])).toEqual([]);
    expect(d.stats.droppedAccessUnits).toBe(1);
    const next = feed(d, [rtp(P_SLICE, { timestamp: 3000, marker: true })]);
    expect(next.map((u) => u.data)).toEqual([annexB([P_SLICE])]);
  });

  it('after a loss between access units, emits the next one only if it starts at its first slice', () => {
    const d = depacketizer();
    feed(d, [rtp(P_SLICE, { timestamp: 0, marker: true })]);
    d.handleLoss(); // the first packet of the next access unit (its first slice) was lost
    expect(feed(d, [rtp(P_SLICE_MB10, { timestamp: 3000, marker: true })])).toEqual([]);
    expect(d.stats.droppedAccessUnits).toBe(1);
    d.handleLoss(); // a whole access unit was lost; the next one is complete
    expect(feed(d, [rtp(P_SLICE, { timestamp: 9000, marker: true })])).toHaveLength(1);
  });

  it('drops an access unit with a duplicated FU-A start', () => {
    const d = depacketizer();
    const [first, middle, last] = fuA(IDR, 3);
    const units = feed(d, [
      rtp(first!, { timestamp: 0 }),
      rtp(first!, { timestamp: 0 }),
      rtp(middle!, { timestamp: 0 }),
      rtp(last!, { timestamp: 0, marker: true }),
    ]);
    expect(units).toEqual([]);
    expect(d.stats.droppedAccessUnits).toBe(1);
    expect(d.stats.skipped.fragment).toBe(1);
  });

  it('drops an access unit whose FU-A start is missing even when no loss was reported', () => {
    const d = depacketizer();
    const [, middle, last] = fuA(IDR, 3);
    expect(feed(d, [rtp(middle!, { timestamp: 0 }), rtp(last!, { timestamp: 0, marker: true })])).toEqual([]);
    expect(d.stats.droppedAccessUnits).toBe(1);
  });

  it('skips FU-B, STAP-B, MTAP16 and MTAP24, counting each and warning once per kind', () => {
    const logger = memoryLogger();
    const d = depacketizer({ logger });
    const unsupported = [
      [0x19, 0x00, 0x01, 0x00, 0x02, 0x41, 0x9a], // STAP-B: type 25, DON, one unit
      [0x1a, 0x00, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00, 0x41, 0x9a], // MTAP16: type 26
      [0x1b, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x41, 0x9a], // MTAP24: type 27
      [0x1d, 0x85, 0x00, 0x01, 0x9a], // FU-B: type 29, FU header, DON
    ];
    for (let round = 0; round < 2; round++) {
      for (const [i, payload] of unsupported.entries()) {
        const timestamp = (round * 4 + i) * 3000;
        expect(feed(d, [rtp(payload, { timestamp }), rtp(P_SLICE, { timestamp, marker: true })])).toEqual([]);
      }
    }
    expect(d.stats.skipped).toMatchObject({ 'stap-b': 2, mtap16: 2, mtap24: 2, 'fu-b': 2 });
    expect(d.stats.droppedAccessUnits).toBe(8);
    expect(logger.records.filter((r) => r.level === 'warn').map((r) => r.fields.kind)).toEqual([
      'stap-b',
      'mtap16',
      'mtap24',
      'fu-b',
    ]);
  });

  it('ignores the undefined payload types 30 and 31 and still emits the access unit', () => {
    const d = depacketizer();
    const units = feed(d, [
      rtp([0x1e, 0x01], { timestamp: 0 }),
      rtp(P_SLICE, { timestamp: 0, marker: true }),
    ]);
    expect(units.map((u) => u.data)).toEqual([annexB([P_SLICE])]);
    expect(d.stats.skipped['unknown-type']).toBe(1);
  });

  it('prepends the parameter sets from the SDP to an IDR that lacks them, and only to keyframes', () => {
    const d = depacketizer({ parameterSets: [SPS, PPS] });
    const units = feed(d, [
      rtp(IDR, { timestamp: 0, marker: true }),
      rtp(P_SLICE, { timestamp: 3000, marker: true }),
    ]);
    expect(units.map((u) => u.data)).toEqual([annexB([SPS, PPS, IDR]), annexB([P_SLICE])]);
    // nalTypes and inBandParameterSets describe what came in the stream, not what was added.
    expect(units[0]?.details).toMatchObject({ nalTypes: [5], inBandParameterSets: false });
  });

  it('adds only the missing kinds, before the first NAL unit that must follow them', () => {
    const d = depacketizer({ parameterSets: [SPS, PPS] });
    const stapA = Uint8Array.from([0x78, 0x00, PPS_NEW.length, ...PPS_NEW, 0x00, SEI.length, ...SEI]);
    const [withPps, withSei] = feed(d, [
      rtp(stapA, { timestamp: 0 }),
      rtp(IDR, { timestamp: 0, marker: true }),
      rtp(SEI, { timestamp: 3000 }),
      rtp(IDR, { timestamp: 3000, marker: true }),
    ]);
    expect(withPps?.data).toEqual(annexB([SPS, PPS_NEW, SEI, IDR]));
    expect(withSei?.data).toEqual(annexB([SPS, PPS_NEW, SEI, IDR]));
  });

  it('replaces the cached parameter sets with in-band ones of the same id', () => {
    const d = depacketizer({ parameterSets: [SPS, PPS] });
    const stapA = Uint8Array.from([
      0x78,
      0x00,
      SPS_LEVEL_30.length,
      ...SPS_LEVEL_30,
      0x00,
      PPS_NEW.length,
      ...PPS_NEW,
    ]);
    const units = feed(d, [
      rtp(stapA, { timestamp: 0 }),
      rtp(IDR, { timestamp: 0, marker: true }),
      rtp(IDR, { timestamp: 3000, marker: true }),
    ]);
    expect(units.map((u) => u.data)).toEqual([
      annexB([SPS_LEVEL_30, PPS_NEW, IDR]),
      annexB([SPS_LEVEL_30, PPS_NEW, IDR]),
    ]);
  });

  it('keeps every picture parameter set id given in the SDP', () => {
    const d = depacketizer({ parameterSets: [SPS, PPS, PPS_ID_1] });
    const [au] = feed(d, [rtp(IDR, { timestamp: 0, marker: true })]);
    expect(au?.data).toEqual(annexB([SPS, PPS, PPS_ID_1, IDR]));
  });

  it('drops access unit delimiters and keeps SEI', () => {
    const d = depacketizer();
    const [au] = feed(d, [
      rtp(AUD, { timestamp: 0 }),
      rtp(SEI, { timestamp: 0 }),
      rtp(P_SLICE, { timestamp: 0, marker: true }),
    ]);
    expect(au?.data).toEqual(annexB([SEI, P_SLICE]));
    expect(au?.details.nalTypes).toEqual([6, 1]);
  });

  it('does not emit an access unit without a slice, but caches its parameter sets', () => {
    const d = depacketizer();
    const stapA = Uint8Array.from([0x78, 0x00, SPS.length, ...SPS, 0x00, PPS.length, ...PPS]);
    const units = feed(d, [
      rtp(stapA, { timestamp: 0, marker: true }),
      rtp(IDR, { timestamp: 3000, marker: true }),
    ]);
    expect(units.map((u) => u.data)).toEqual([annexB([SPS, PPS, IDR])]);
    expect(d.stats.skipped['no-slice']).toBe(1);
  });

  it('reset() drops the access unit in progress; reset(true) also forgets the parameter sets', () => {
    const logger = memoryLogger();
    const d = depacketizer({ parameterSets: [SPS, PPS], logger });
    const [first] = fuA(IDR, 2);
    feed(d, [rtp(first!, { timestamp: 0 })]);
    d.reset();
    const soft = feed(d, [rtp(IDR, { timestamp: 0, marker: true })]);
    expect(soft.map((u) => u.data)).toEqual([annexB([SPS, PPS, IDR])]);
    d.reset(true);
    const hard = feed(d, [rtp(IDR, { timestamp: 3000, marker: true })]);
    expect(hard.map((u) => u.data)).toEqual([annexB([IDR])]);
    expect(logger.records.filter((r) => r.level === 'warn').map((r) => r.message)).toContain(
      'keyframe without a parameter set, none cached',
    );
    expect(d.stats.droppedAccessUnits).toBe(0);
  });

  it.each([
    ['an empty payload', []],
    ['forbidden_zero_bit set', [0xc1, 0x9a]],
    ['NAL unit type 0', [0x60, 0x9a]],
    ['an empty STAP-A', [0x78]],
    ['a truncated STAP-A size field', [0x78, 0x00]],
    ['a STAP-A size beyond the payload', [0x78, 0x00, 0x09, 0x41, 0x9a]],
    ['a STAP-A unit of size 0', [0x78, 0x00, 0x00]],
    ['a STAP-A holding an FU-A', [0x78, 0x00, 0x02, 0x7c, 0x85]],
    ['an FU-A without FU header', [0x7c]],
    ['an FU-A of NAL unit type 24', [0x7c, 0x98, 0x00]],
  ])('skips %s as malformed and drops its access unit', (_name, payload) => {
    const d = depacketizer();
    const units = feed(d, [rtp(payload, { timestamp: 0 }), rtp(P_SLICE, { timestamp: 0, marker: true })]);
    expect(units).toEqual([]);
    expect(d.stats.skipped.malformed).toBe(1);
    expect(d.stats.droppedAccessUnits).toBe(1);
    expect(feed(d, [rtp(P_SLICE, { timestamp: 3000, marker: true })])).toHaveLength(1);
  });

  it('converts the RTP timestamp with the injected function', () => {
    const d = depacketizer({ toCaptureTimeUs: (ts) => ts * 10 + 5 });
    const [au] = feed(d, [rtp(P_SLICE, { timestamp: 4000, marker: true })]);
    expect(au?.captureTimeUs).toBe(40_005);
  });
});

describe('h264CodecString and slice headers', () => {
  it('gives avc1.PPCCLL in lower-case hex', () => {
    expect(h264CodecString(SPS)).toBe('avc1.42c00d');
    expect(h264CodecString(SPS_LEVEL_30)).toBe('avc1.42c01e');
  });

  it('refuses a NAL unit that is not an SPS, with a coded error', () => {
    for (const nal of [PPS, hex('67 42'), new Uint8Array(0)]) {
      let caught: unknown;
      try {
        h264CodecString(nal);
      } catch (err) {
        caught = err;
      }
      expect(isMediaError(caught, 'malformed-payload')).toBe(true);
    }
  });

  it('reads first_mb_in_slice and slice_type', () => {
    expect(h264SliceHeader(P_SLICE_MB10)).toEqual({ firstMbInSlice: 10, sliceType: 5 });
    expect(h264SliceType(IDR)).toBe(7);
    expect(h264SliceType(B_SLICE)).toBe(6);
    expect(h264SliceType(SPS)).toBeUndefined();
    expect(h264SliceType(hex('41 00'))).toBeUndefined(); // truncated Exp-Golomb code
  });
});

describe('H264Depacketizer with ffmpeg streams', () => {
  let dir = '';
  const FRAMES = 30;

  beforeAll(async () => {
    await requireFfmpeg();
    dir = await mkdtemp(join(tmpdir(), 'svc-h264-'));
    const x264 = ['-c:v', 'libx264', '-sc_threshold', '0'];
    await Promise.all([
      encodeTestStream(
        join(dir, 'baseline.h264'),
        FRAMES,
        [...x264, '-profile:v', 'baseline', '-g', '15'],
        'h264',
      ),
      encodeTestStream(join(dir, 'high-b.h264'), FRAMES, [...x264, '-profile:v', 'high', '-bf', '2'], 'h264'),
      encodeTestStream(
        join(dir, 'slices.h264'),
        FRAMES,
        [...x264, '-profile:v', 'baseline', '-x264-params', 'slices=4'],
        'h264',
      ),
    ]);
  });

  afterAll(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  async function sourceUnits(name: string): Promise<Uint8Array[][]> {
    return groupH264AccessUnits(splitAnnexB(await readFile(join(dir, name))));
  }

  /** Packetises `units`, depacketises them, and checks ffmpeg decodes the result like the source. */
  async function roundTrip(
    name: string,
    units: Uint8Array[][],
    options: Partial<H264DepacketizerOptions> = {},
  ): Promise<AccessUnit[]> {
    const d = depacketizer(options);
    const packets = packetizeH264(units, { firstSequenceNumber: 65_530, firstTimestamp: 2 ** 32 - 6000 });
    const out = packets.flatMap((p) => d.handlePacket(p, p.accessUnit));
    const outPath = join(dir, `${name}.out.h264`);
    await writeFile(outPath, joinAccessUnits(out));
    const [source, result] = await Promise.all([
      decodeFrames(join(dir, name), 'h264'),
      decodeFrames(outPath, 'h264'),
    ]);
    expect(result.errors).toBe('');
    expect(source.frameHashes).toHaveLength(FRAMES);
    expect(result.frameHashes).toEqual(source.frameHashes);
    expect(out).toHaveLength(units.length);
    expect(out.map((u) => u.details.nalTypes)).toEqual(
      units.map((nals) => nals.map(h264Type).filter((t) => !options.parameterSets || (t !== 7 && t !== 8))),
    );
    for (const au of out) expect(Array.from(au.data.subarray(0, 4))).toEqual([0, 0, 0, 1]);
    return out;
  }

  it('gives the baseline codec string matching ffprobe profile and level', async () => {
    const sps = (await sourceUnits('baseline.h264'))[0]!.find((nal) => h264Type(nal) === 7)!;
    const { profile, level } = await probeProfileLevel(join(dir, 'baseline.h264'));
    expect(profile).toBe('Constrained Baseline');
    const codec = h264CodecString(sps);
    expect(codec).toMatch(new RegExp(`^avc1\\.42[0-9a-f]{2}${level.toString(16).padStart(2, '0')}$`));
    // Constrained Baseline is profile 66 with constraint_set1_flag (0x40) set.
    expect(Number.parseInt(codec.slice(7, 9), 16) & 0x40).toBe(0x40);
  });

  it('gives the high profile codec string matching ffprobe profile and level', async () => {
    const sps = (await sourceUnits('high-b.h264'))[0]!.find((nal) => h264Type(nal) === 7)!;
    const { profile, level } = await probeProfileLevel(join(dir, 'high-b.h264'));
    expect(profile).toBe('High');
    expect(h264CodecString(sps)).toBe(`avc1.6400${level.toString(16).padStart(2, '0')}`);
  });

  it('round-trips baseline with keyframes where the IDRs are', async () => {
    const out = await roundTrip('baseline.h264', await sourceUnits('baseline.h264'));
    expect(out.flatMap((u, i) => (u.keyframe ? [i] : []))).toEqual([0, 15]);
    expect(out.some((u) => u.details.bSlice)).toBe(false);
  });

  it('round-trips baseline with the parameter sets only in the SDP', async () => {
    const units = await sourceUnits('baseline.h264');
    const parameterSets = units[0]!.filter((nal) => h264Type(nal) === 7 || h264Type(nal) === 8);
    const stripped = units.map((nals) => nals.filter((nal) => h264Type(nal) !== 7 && h264Type(nal) !== 8));
    const out = await roundTrip('baseline.h264', stripped, { parameterSets });
    expect(out.every((u) => !u.details.inBandParameterSets)).toBe(true);
  });

  it('round-trips high profile with B-frames and flags the access units with B slices', async () => {
    const out = await roundTrip('high-b.h264', await sourceUnits('high-b.h264'));
    const pictureTypes = await probePictureTypes(join(dir, 'high-b.h264'));
    const bFrames = pictureTypes.filter((type) => type === 'B').length;
    expect(bFrames).toBeGreaterThan(0);
    expect(out.filter((u) => u.details.bSlice)).toHaveLength(bFrames);
  });

  it('round-trips four slices per picture and counts them', async () => {
    const out = await roundTrip('slices.h264', await sourceUnits('slices.h264'));
    expect(out.map((u) => u.details.slices)).toEqual(out.map(() => 4));
  });
});
