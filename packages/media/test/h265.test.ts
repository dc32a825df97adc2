import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryLogger } from '@svc/runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitAnnexB } from '../src/annexb.js';
import { isMediaError } from '../src/errors.js';
import { H265Depacketizer, type H265DepacketizerOptions } from '../src/h265/depacketizer.js';
import { h265CodecString, h265ParameterSetId, h265SliceType, parseH265Pps } from '../src/h265/sps.js';
import type { AccessUnit, RtpPacket } from '../src/types.js';
import {
  addEmulationPrevention,
  annexB,
  BitWriter,
  concat,
  decodeFrames,
  encodeTestStream,
  groupH265AccessUnits,
  h265Type,
  hex,
  joinAccessUnits,
  packetizeH265,
  probePictureTypes,
  probeProfileLevel,
  requireFfmpeg,
  rtp,
} from './support/rtp-builders.js';

// Real parameter sets of an x265 Main profile stream (320x240): general_profile_idc 1,
// compatibility flags 1 and 2, progressive and frame-only constraint flags, level_idc 60; ids 0.
// Each holds emulation prevention bytes in its profile_tier_level.
const VPS = hex('4001 0c01ffff01600000030090000003000003003c928090');
const SPS = hex('4201 0101600000030090000003000003003ca00a080f16592a4932bc05a020000003002000000303c1');
const PPS = hex('4401 c172b46240'); // pps id 0, sps id 0, num_extra_slice_header_bits 0
// The same SPS at level 3.1 (level_idc 93 = 0x5d): an in-band replacement.
const SPS_LEVEL_31 = hex(
  '4201 0101600000030090000003000003005da00a080f16592a4932bc05a020000003002000000303c1',
);
// A PPS with num_extra_slice_header_bits 2: pps id '1', sps id '1', 0, 0, '010', stop bit.
const PPS_EXTRA_BITS = hex('4401 c580');
// Prefix SEI (type 39) and access unit delimiter (type 35, pic_type 2).
const SEI = hex('4e01 0601c480');
const AUD = hex('4601 50');

/** A slice segment NAL unit: 2-byte header (type, LayerId 0, TID 1) then the given bytes. */
function slice(type: number, ...rest: number[]): Uint8Array {
  return Uint8Array.from([type << 1, 0x01, ...rest]);
}

// Slice headers (PPS with no extra bits): first_slice_segment_in_pic_flag 1, then for IRAP
// no_output_of_prior_pics_flag 0, slice_pic_parameter_set_id 0 '1', slice_type ue:
// '1' B, '010' P, '011' I. 0xac = 1 0 1 011 (IRAP, I); 0xd0 = 1 1 010 (P); 0xe0 = 1 1 1 (B).
const IDR_W_RADL = slice(19, 0xac, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc);
const CRA = slice(21, 0xac, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0);
const TRAIL_R_P = slice(1, 0xd0, 0x01);
const TRAIL_R_B = slice(1, 0xe0, 0x02);
// A second slice segment of a picture: first_slice_segment_in_pic_flag 0.
const TRAIL_R_SECOND = slice(1, 0x40, 0x03);
// B slice under PPS_EXTRA_BITS: 1 first, '1' pps 0, '00' reserved flags, '1' B = 1100 1000.
const TRAIL_R_B_EXTRA = slice(1, 0xc8, 0x04);

const CODEC = 'hev1.1.6.L60.90';

function depacketizer(options: Partial<H265DepacketizerOptions> = {}): H265Depacketizer {
  return new H265Depacketizer({ codec: CODEC, ...options });
}

function feed(d: H265Depacketizer, packets: readonly RtpPacket[], atMs = 0): AccessUnit[] {
  return packets.flatMap((packet) => d.handlePacket(packet, atMs));
}

/** AP payload (no DON fields) holding `nals`. */
function ap(...nals: Uint8Array[]): Uint8Array {
  // payload header: F=0, type 48, LayerId 0, TID 1; then per unit a 16-bit size and the unit
  return concat([
    hex('6001'),
    ...nals.flatMap((nal) => [Uint8Array.of(nal.length >> 8, nal.length & 0xff), nal]),
  ]);
}

describe('H265Depacketizer: golden packets', () => {
  it('emits a single NAL unit packet with the marker; TRAIL_R is not a keyframe', () => {
    const d = depacketizer();
    const units = d.handlePacket(rtp(TRAIL_R_P, { timestamp: 180_000, marker: true }), 3);
    expect(units).toEqual([
      {
        codec: CODEC,
        data: hex('00000001 0201 d001'),
        rtpTimestamp: 180_000,
        captureTimeUs: 2_000_000,
        keyframe: false,
        receivedAtMs: 3,
        details: { nalTypes: [1], slices: 1, bSlice: false, inBandParameterSets: false },
      },
    ]);
  });

  it('unpacks an AP with VPS, SPS and PPS in front of an IDR keyframe', () => {
    const d = depacketizer();
    const payload = Uint8Array.from([
      0x60, // payload header byte 0: F=0, type 48 (AP), LayerId high bit 0
      0x01, // payload header byte 1: LayerId low bits 0, TID 1
      0x00,
      VPS.length, // size of unit 1
      ...VPS,
      0x00,
      SPS.length, // size of unit 2
      ...SPS,
      0x00,
      PPS.length, // size of unit 3
      ...PPS,
    ]);
    const units = feed(d, [rtp(payload, { timestamp: 0 }), rtp(IDR_W_RADL, { timestamp: 0, marker: true })]);
    expect(units.map((u) => u.data)).toEqual([annexB([VPS, SPS, PPS, IDR_W_RADL])]);
    expect(units[0]?.keyframe).toBe(true);
    expect(units[0]?.details).toEqual({
      nalTypes: [32, 33, 34, 19],
      slices: 1,
      bSlice: false,
      inBandParameterSets: true,
    });
  });

  it('reassembles an FU over three packets across the sequence number wrap', () => {
    const d = depacketizer();
    const body = CRA.subarray(2);
    const packets = [
      // payload header 0x62 0x01: F=0, type 49 (FU), LayerId 0, TID 1; FU header 0x95: S=1, E=0, type 21
      rtp([0x62, 0x01, 0x95, ...body.subarray(0, 5)], { timestamp: 0, sequenceNumber: 65534 }),
      // FU header 0x15: S=0, E=0, type 21
      rtp([0x62, 0x01, 0x15, ...body.subarray(5, 10)], { timestamp: 0, sequenceNumber: 65535 }),
      // FU header 0x55: S=0, E=1, type 21; marker: last packet of the access unit
      rtp([0x62, 0x01, 0x55, ...body.subarray(10)], { timestamp: 0, sequenceNumber: 0, marker: true }),
    ];
    const results = packets.map((p) => d.handlePacket(p, 0));
    expect(results.slice(0, 2)).toEqual([[], []]);
    // NAL header rebuilt: F and LayerId/TID from the payload header, type 21 from the FU header.
    expect(results[2]?.map((u) => u.data)).toEqual([annexB([CRA])]);
    expect(results[2]?.[0]?.keyframe).toBe(true);
  });

  it.each([
    ['BLA_W_LP', 16, true],
    ['BLA_N_LP', 18, true],
    ['IDR_W_RADL', 19, true],
    ['IDR_N_LP', 20, true],
    ['CRA_NUT', 21, true],
    ['TRAIL_N', 0, false],
    ['TRAIL_R', 1, false],
    ['RASL_R', 9, false],
  ])('%s (type %i) is a keyframe: %s', (_name, type, keyframe) => {
    const d = depacketizer();
    const [au] = feed(d, [rtp(slice(type, 0xac, 0x01), { timestamp: 0, marker: true })]);
    expect(au?.keyframe).toBe(keyframe);
    expect(d.stats.keyframes).toBe(keyframe ? 1 : 0);
  });

  it('reads DONL in single NAL unit packets, DONL and DOND in APs and DONL in the first FU', () => {
    const d = depacketizer({ donlPresent: true });
    const body = CRA.subarray(2);
    const packets = [
      // AP: payload header, DONL 0x0007, size, VPS, DOND 0, size, SPS, DOND 0, size, PPS
      rtp(
        concat([
          hex('6001'),
          hex('0007'),
          Uint8Array.of(0, VPS.length),
          VPS,
          hex('00'),
          Uint8Array.of(0, SPS.length),
          SPS,
          hex('00'),
          Uint8Array.of(0, PPS.length),
          PPS,
        ]),
        { timestamp: 0 },
      ),
      // single NAL unit packet: NAL header of the SEI, DONL 0x000a, rest of the SEI
      rtp(concat([SEI.subarray(0, 2), hex('000a'), SEI.subarray(2)]), { timestamp: 0 }),
      // FU start: payload header, FU header S=1 type 21, DONL 0x000b, first fragment
      rtp(concat([hex('6201 95 000b'), body.subarray(0, 6)]), { timestamp: 0 }),
      // FU end: no DONL when S=0
      rtp(concat([hex('6201 55'), body.subarray(6)]), { timestamp: 0, marker: true }),
      // single NAL unit packet of the next access unit
      rtp(concat([TRAIL_R_P.subarray(0, 2), hex('000c'), TRAIL_R_P.subarray(2)]), {
        timestamp: 3000,
        marker: true,
      }),
    ];
    expect(feed(d, packets).map((u) => u.data)).toEqual([
      annexB([VPS, SPS, PPS, SEI, CRA]),
      annexB([TRAIL_R_P]),
    ]);
  });

  it('skips PACI with a counted warning and drops its access unit', () => {
    const logger = memoryLogger();
    const d = depacketizer({ logger });
    // PACI: payload header type 50 (0x64 0x01), then PHES fields and a payload
    for (const timestamp of [0, 3000]) {
      feed(d, [rtp(hex('6401 0000 0201 d0'), { timestamp }), rtp(TRAIL_R_P, { timestamp, marker: true })]);
    }
    expect(d.stats.skipped.paci).toBe(2);
    expect(d.stats.droppedAccessUnits).toBe(2);
    expect(logger.records.filter((r) => r.level === 'warn').map((r) => String(r.fields.kind))).toEqual([
      'paci',
    ]);
  });

  it('prepends VPS, SPS and PPS from the SDP, in that order, to a CRA that lacks them', () => {
    const d = depacketizer({ parameterSets: [PPS, SPS, VPS] });
    const units = feed(d, [
      rtp(SEI, { timestamp: 0 }),
      rtp(CRA, { timestamp: 0, marker: true }),
      rtp(TRAIL_R_P, { timestamp: 3000, marker: true }),
    ]);
    expect(units.map((u) => u.data)).toEqual([annexB([VPS, SPS, PPS, SEI, CRA]), annexB([TRAIL_R_P])]);
  });

  it('adds only the missing kinds around in-band ones: VPS before the SPS, PPS after it', () => {
    const d = depacketizer({ parameterSets: [VPS, SPS, PPS] });
    const [au] = feed(d, [
      rtp(SPS_LEVEL_31, { timestamp: 0 }),
      rtp(IDR_W_RADL, { timestamp: 0, marker: true }),
    ]);
    expect(au?.data).toEqual(annexB([VPS, SPS_LEVEL_31, PPS, IDR_W_RADL]));
    expect(au?.details.nalTypes).toEqual([33, 19]);
  });

  it('replaces the cached SPS with an in-band one of the same id', () => {
    const d = depacketizer({ parameterSets: [VPS, SPS, PPS] });
    const units = feed(d, [
      rtp(ap(SPS_LEVEL_31), { timestamp: 0 }),
      rtp(CRA, { timestamp: 0, marker: true }),
      rtp(CRA, { timestamp: 3000, marker: true }),
    ]);
    expect(units[1]?.data).toEqual(annexB([VPS, SPS_LEVEL_31, PPS, CRA]));
  });

  it('drops the access unit delimiter', () => {
    const d = depacketizer();
    const [au] = feed(d, [rtp(AUD, { timestamp: 0 }), rtp(TRAIL_R_P, { timestamp: 0, marker: true })]);
    expect(au?.data).toEqual(annexB([TRAIL_R_P]));
    expect(au?.details.nalTypes).toEqual([1]);
  });

  it('counts slice segments and ends the access unit at a timestamp change', () => {
    const d = depacketizer();
    const units = feed(d, [
      rtp(TRAIL_R_P, { timestamp: 0 }),
      rtp(TRAIL_R_SECOND, { timestamp: 0 }),
      rtp(TRAIL_R_P, { timestamp: 3000, marker: true }),
    ]);
    expect(units.map((u) => [u.rtpTimestamp, u.details.slices])).toEqual([
      [0, 2],
      [3000, 1],
    ]);
  });

  it('drops an access unit that lost part of an FU, then emits the next one', () => {
    const d = depacketizer();
    const body = CRA.subarray(2);
    feed(d, [rtp(concat([hex('6201 95'), body.subarray(0, 4)]), { timestamp: 0 })]);
    d.handleLoss();
    expect(
      feed(d, [rtp(concat([hex('6201 55'), body.subarray(8)]), { timestamp: 0, marker: true })]),
    ).toEqual([]);
    expect(d.stats.droppedAccessUnits).toBe(1);
    expect(feed(d, [rtp(TRAIL_R_P, { timestamp: 3000, marker: true })])).toHaveLength(1);
  });

  it('after a loss between access units, drops the next one if its first slice segment is missing', () => {
    const d = depacketizer();
    feed(d, [rtp(TRAIL_R_P, { timestamp: 0, marker: true })]);
    d.handleLoss();
    expect(feed(d, [rtp(TRAIL_R_SECOND, { timestamp: 3000, marker: true })])).toEqual([]);
    expect(d.stats.droppedAccessUnits).toBe(1);
  });

  it('reads slice_type after the PPS num_extra_slice_header_bits to find B slices', () => {
    const plain = depacketizer({ parameterSets: [PPS] });
    expect(feed(plain, [rtp(TRAIL_R_B, { timestamp: 0, marker: true })])[0]?.details.bSlice).toBe(true);
    expect(feed(plain, [rtp(TRAIL_R_P, { timestamp: 3000, marker: true })])[0]?.details.bSlice).toBe(false);
    const extra = depacketizer({ parameterSets: [PPS_EXTRA_BITS] });
    expect(feed(extra, [rtp(TRAIL_R_B_EXTRA, { timestamp: 0, marker: true })])[0]?.details.bSlice).toBe(true);
    // Read without the two reserved bits, the same slice does not say B.
    expect(feed(plain, [rtp(TRAIL_R_B_EXTRA, { timestamp: 6000, marker: true })])[0]?.details.bSlice).toBe(
      false,
    );
  });

  it.each([
    ['an empty payload', [], false],
    ['a 1-byte payload', [0x02], false],
    ['forbidden_zero_bit set', [0x82, 0x01, 0xd0], false],
    ['TID 0', [0x02, 0x00, 0xd0], false],
    ['an empty AP', [0x60, 0x01], false],
    ['a truncated AP size field', [0x60, 0x01, 0x00], false],
    ['an AP size beyond the payload', [0x60, 0x01, 0x00, 0x09, 0x02, 0x01], false],
    ['an AP unit of size 0', [0x60, 0x01, 0x00, 0x00], false],
    ['an AP holding an FU', [0x60, 0x01, 0x00, 0x03, 0x62, 0x01, 0x95], false],
    ['an FU without FU header', [0x62, 0x01], false],
    ['an FU of type 48', [0x62, 0x01, 0xb0, 0x00], false],
    ['an FU start without DONL', [0x62, 0x01, 0x95, 0x00], true],
    ['a single NAL unit packet without DONL', [0x02, 0x01, 0x00], true],
  ])('skips %s as malformed and drops its access unit', (_name, payload, donlPresent) => {
    const d = depacketizer({ donlPresent });
    const last = donlPresent
      ? concat([TRAIL_R_P.subarray(0, 2), hex('0000'), TRAIL_R_P.subarray(2)])
      : TRAIL_R_P;
    expect(feed(d, [rtp(payload, { timestamp: 0 }), rtp(last, { timestamp: 0, marker: true })])).toEqual([]);
    expect(d.stats.skipped.malformed).toBe(1);
    expect(d.stats.droppedAccessUnits).toBe(1);
  });

  it('reset(true) forgets the parameter sets and the PPS slice header fields', () => {
    const d = depacketizer({ parameterSets: [VPS, SPS, PPS_EXTRA_BITS] });
    d.reset(true);
    const units = feed(d, [
      rtp(CRA, { timestamp: 0, marker: true }),
      rtp(TRAIL_R_B_EXTRA, { timestamp: 3000, marker: true }),
    ]);
    expect(units.map((u) => u.data)).toEqual([annexB([CRA]), annexB([TRAIL_R_B_EXTRA])]);
    expect(units[1]?.details.bSlice).toBe(false);
  });
});

describe('h265CodecString, parameter sets and slice headers', () => {
  it('gives the Annex E codec string of a real x265 SPS', () => {
    expect(h265CodecString(SPS, 'hev1')).toBe('hev1.1.6.L60.90');
    expect(h265CodecString(SPS_LEVEL_31, 'hvc1')).toBe('hvc1.1.6.L93.90');
  });

  it('handles profile space, high tier, sub-layers and several constraint bytes', () => {
    const rbsp = new BitWriter()
      .u(4, 0) // sps_video_parameter_set_id
      .u(3, 2) // sps_max_sub_layers_minus1: three sub-layers
      .u(1, 1) // sps_temporal_id_nesting_flag
      .u(2, 1) // general_profile_space 1: letter A
      .u(1, 1) // general_tier_flag: High
      .u(5, 4) // general_profile_idc 4
      .u(32, 0x0800_0000) // compatibility flag 4 only (bit 31 - 4)
      .u(8, 0x98) // constraint byte 1
      .u(8, 0x01) // constraint byte 2
      .u(32, 0) // constraint bytes 3..6: zero, left out of the string
      .u(8, 153) // general_level_idc
      .u(2, 0b10) // sub-layer 0: profile present, level absent
      .u(2, 0b01) // sub-layer 1: profile absent, level present
      .u(12, 0) // reserved_zero_2bits for sub-layers 2..7
      .u(32, 0xffff_ffff) // sub-layer 0 profile fields, 88 bits
      .u(32, 0xffff_ffff)
      .u(24, 0xff_ffff)
      .u(8, 120) // sub-layer 1 level
      .ue(3) // sps_seq_parameter_set_id
      .u(1, 1) // stop bit
      .bytes();
    const sps = concat([hex('4201'), addEmulationPrevention(rbsp)]);
    expect(h265CodecString(sps, 'hvc1')).toBe('hvc1.A4.10.H153.98.1');
    expect(h265ParameterSetId(sps)).toBe(3);
  });

  it('refuses what is not an SPS with a coded error, and a bad sample entry with TypeError', () => {
    for (const nal of [PPS, hex('4201 01'), new Uint8Array(0)]) {
      let caught: unknown;
      try {
        h265CodecString(nal, 'hev1');
      } catch (err) {
        caught = err;
      }
      expect(isMediaError(caught, 'malformed-payload')).toBe(true);
    }
    expect(() => h265CodecString(SPS, 'avc1' as 'hev1')).toThrow(TypeError);
  });

  it('parses the PPS fields slice headers depend on', () => {
    expect(parseH265Pps(PPS_EXTRA_BITS)).toEqual({
      ppsId: 0,
      spsId: 0,
      dependentSliceSegmentsEnabled: false,
      outputFlagPresent: false,
      numExtraSliceHeaderBits: 2,
    });
    expect([h265ParameterSetId(VPS), h265ParameterSetId(SPS), h265ParameterSetId(PPS)]).toEqual([0, 0, 0]);
  });

  it('reads slice_type of first slice segments only', () => {
    const ppsById = new Map([[0, parseH265Pps(PPS)]]);
    expect(h265SliceType(IDR_W_RADL, ppsById)).toBe(2);
    expect(h265SliceType(TRAIL_R_P, ppsById)).toBe(1);
    expect(h265SliceType(TRAIL_R_B, ppsById)).toBe(0);
    expect(h265SliceType(TRAIL_R_SECOND, ppsById)).toBeUndefined();
    expect(h265SliceType(TRAIL_R_P, new Map())).toBeUndefined();
    expect(h265SliceType(slice(1, 0x80), ppsById)).toBeUndefined(); // truncated
  });
});

describe('H265Depacketizer with ffmpeg streams', () => {
  let dir = '';
  const FRAMES = 60;

  beforeAll(async () => {
    await requireFfmpeg();
    dir = await mkdtemp(join(tmpdir(), 'svc-h265-'));
    const x265 = (params: string) => [
      '-c:v',
      'libx265',
      '-x265-params',
      `${params}:scenecut=0:log-level=error`,
    ];
    await Promise.all([
      encodeTestStream(join(dir, 'cra.hevc'), FRAMES, x265('keyint=30:bframes=0:open-gop=1'), 'hevc'),
      encodeTestStream(join(dir, 'idr.hevc'), FRAMES, x265('keyint=30:bframes=0:open-gop=0'), 'hevc'),
      encodeTestStream(join(dir, 'b.hevc'), 30, x265('keyint=30:bframes=3'), 'hevc'),
    ]);
  });

  afterAll(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  async function sourceUnits(name: string): Promise<Uint8Array[][]> {
    return groupH265AccessUnits(splitAnnexB(await readFile(join(dir, name))));
  }

  const isParameterSet = (nal: Uint8Array) => h265Type(nal) >= 32 && h265Type(nal) <= 34;

  async function roundTrip(
    name: string,
    units: Uint8Array[][],
    options: Partial<H265DepacketizerOptions> = {},
  ): Promise<AccessUnit[]> {
    const d = depacketizer(options);
    const packets = packetizeH265(units, {
      firstSequenceNumber: 65_500,
      donl: options.donlPresent ?? false,
    });
    const out = packets.flatMap((p) => d.handlePacket(p, p.accessUnit));
    const outPath = join(dir, `${name}.out.hevc`);
    await writeFile(outPath, joinAccessUnits(out));
    const [source, result] = await Promise.all([
      decodeFrames(join(dir, name), 'hevc'),
      decodeFrames(outPath, 'hevc'),
    ]);
    expect(result.errors).toBe('');
    expect(source.frameHashes.length).toBeGreaterThan(0);
    expect(result.frameHashes).toEqual(source.frameHashes);
    expect(out).toHaveLength(units.length);
    return out;
  }

  it('gives the codec string matching ffprobe profile and level', async () => {
    const sps = (await sourceUnits('cra.hevc'))[0]!.find((nal) => h265Type(nal) === 33)!;
    const { profile, level } = await probeProfileLevel(join(dir, 'cra.hevc'));
    expect(profile).toBe('Main');
    // Main (1) is compatible with Main and Main 10 (flags 1, 2: reversed 0x6); progressive and
    // frame-only source (constraint byte 0x90).
    expect(h265CodecString(sps, 'hev1')).toBe(`hev1.1.6.L${level}.90`);
  });

  it('round-trips an open-GOP stream and finds the CRA keyframes', async () => {
    const out = await roundTrip('cra.hevc', await sourceUnits('cra.hevc'));
    expect(out.flatMap((u, i) => (u.keyframe ? [i] : []))).toEqual([0, 30]);
    expect(out[30]?.details.nalTypes).toContain(21);
  });

  it('round-trips a closed-GOP stream and finds the IDR keyframes', async () => {
    const out = await roundTrip('idr.hevc', await sourceUnits('idr.hevc'));
    expect(out.flatMap((u, i) => (u.keyframe ? [i] : []))).toEqual([0, 30]);
    expect(out[30]?.details.nalTypes.some((t) => t === 19 || t === 20)).toBe(true);
  });

  it('round-trips with DONL fields', async () => {
    await roundTrip('cra.hevc', await sourceUnits('cra.hevc'), { donlPresent: true });
  });

  it('round-trips with the parameter sets only in the SDP', async () => {
    const units = await sourceUnits('cra.hevc');
    const parameterSets = units[0]!.filter(isParameterSet);
    const out = await roundTrip(
      'cra.hevc',
      units.map((nals) => nals.filter((nal) => !isParameterSet(nal))),
      { parameterSets },
    );
    expect(out.some((u) => u.details.inBandParameterSets)).toBe(false);
  });

  it('flags the access units with B slices', async () => {
    const out = await roundTrip('b.hevc', await sourceUnits('b.hevc'));
    const bFrames = (await probePictureTypes(join(dir, 'b.hevc'))).filter((t) => t === 'B').length;
    expect(bFrames).toBeGreaterThan(0);
    expect(out.filter((u) => u.details.bSlice)).toHaveLength(bFrames);
  });
});
