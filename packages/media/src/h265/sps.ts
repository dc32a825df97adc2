/**
 * The few H.265 (ITU-T H.265) syntax elements the ingest reads: profile, tier and level of a
 * sequence parameter set, parameter set ids, the PPS fields the slice header depends on, and the
 * start of a slice segment header.
 */
import { BitReader, removeEmulationPrevention } from '../bits.js';
import { isMediaError, MediaError } from '../errors.js';

/** H.265 NAL unit types (H.265 Table 7-1) this package names. */
export const H265NalType = {
  /** First type of the IRAP range 16..23: BLA_W_LP, then BLA, IDR and CRA (21) types. */
  blaWLp: 16,
  /** Last type of the IRAP range (22 and 23 are reserved IRAP types). */
  irapLast: 23,
  /** Last VCL type; 0..31 are coded slice segments. */
  vclLast: 31,
  vps: 32,
  sps: 33,
  pps: 34,
  accessUnitDelimiter: 35,
} as const;

/** H.265 slice_type values (H.265 Table 7-7). */
export const H265SliceType = { b: 0, p: 1, i: 2 } as const;

/** Highest `vps_video_parameter_set_id` and `sps_seq_parameter_set_id` (4-bit / 0..15). */
const MAX_VPS_SPS_ID = 15;
/** Highest `pps_pic_parameter_set_id` (H.265 §7.4.3.3.1). */
const MAX_PPS_ID = 63;
/** Highest `sps_max_sub_layers_minus1`. */
const MAX_SUB_LAYERS_MINUS1 = 6;
/** Bytes of a NAL unit read for the PPS or slice header fields parsed here. */
const HEADER_PREFIX = 24;
/** Bits of a sub-layer's profile fields in profile_tier_level (H.265 §7.3.3): 2+1+5+32+4+43+1. */
const SUB_LAYER_PROFILE_BITS = 88;

/** The general profile, tier and level of an H.265 sequence parameter set (H.265 §7.3.3). */
export interface H265ProfileTierLevel {
  /** general_profile_space, 0..3. */
  readonly profileSpace: number;
  /** general_tier_flag: false Main tier, true High tier. */
  readonly highTier: boolean;
  /** general_profile_idc (1 Main, 2 Main 10, 3 Main Still Picture, 4 range extensions, ...). */
  readonly profileIdc: number;
  /** general_profile_compatibility_flag[0..31], flag j in bit 31 - j (as coded). */
  readonly compatibilityFlags: number;
  /** The 6 bytes starting with general_progressive_source_flag (48 constraint bits). */
  readonly constraintBytes: Uint8Array;
  /** general_level_idc: 30 × the level number (93 = level 3.1). */
  readonly levelIdc: number;
}

/** The start of an H.265 sequence parameter set. */
export interface H265SequenceParameterSetStart extends H265ProfileTierLevel {
  readonly vpsId: number;
  readonly maxSubLayersMinus1: number;
  readonly spsId: number;
}

/**
 * Parses an H.265 SPS (2-byte NAL unit header included) up to `sps_seq_parameter_set_id`.
 *
 * @throws MediaError `malformed-payload` when `nal` is not an SPS of the base layer or is truncated.
 */
export function parseH265SpsStart(nal: Uint8Array): H265SequenceParameterSetStart {
  if (nalType(nal) !== H265NalType.sps || nal.length < 3 || layerId(nal) !== 0) {
    throw new MediaError('malformed-payload', 'not an H.265 base-layer sequence parameter set');
  }
  const reader = new BitReader(removeEmulationPrevention(nal.subarray(2)));
  const vpsId = reader.u(4);
  const maxSubLayersMinus1 = reader.u(3);
  if (maxSubLayersMinus1 > MAX_SUB_LAYERS_MINUS1) {
    throw new MediaError('malformed-payload', 'H.265 SPS: sps_max_sub_layers_minus1 above 6');
  }
  reader.skip(1); // sps_temporal_id_nesting_flag
  const profileSpace = reader.u(2);
  const highTier = reader.bit() === 1;
  const profileIdc = reader.u(5);
  const compatibilityFlags = reader.u(32);
  const constraintBytes = new Uint8Array(6);
  for (let i = 0; i < constraintBytes.length; i++) constraintBytes[i] = reader.u(8);
  const levelIdc = reader.u(8);
  skipSubLayerProfileTierLevel(reader, maxSubLayersMinus1);
  const spsId = reader.ue();
  if (spsId > MAX_VPS_SPS_ID) throw new MediaError('malformed-payload', 'H.265 SPS: id above 15');
  return {
    vpsId,
    maxSubLayersMinus1,
    spsId,
    profileSpace,
    highTier,
    profileIdc,
    compatibilityFlags,
    constraintBytes,
    levelIdc,
  };
}

/** Skips the sub-layer part of profile_tier_level(1, maxSubLayersMinus1). */
function skipSubLayerProfileTierLevel(reader: BitReader, maxSubLayersMinus1: number): void {
  let profilePresent = 0;
  let levelPresent = 0;
  for (let i = 0; i < maxSubLayersMinus1; i++) {
    profilePresent |= reader.bit() << i;
    levelPresent |= reader.bit() << i;
  }
  if (maxSubLayersMinus1 > 0) reader.skip(2 * (8 - maxSubLayersMinus1)); // reserved_zero_2bits
  for (let i = 0; i < maxSubLayersMinus1; i++) {
    if ((profilePresent >>> i) & 1) reader.skip(SUB_LAYER_PROFILE_BITS);
    if ((levelPresent >>> i) & 1) reader.skip(8);
  }
}

const PROFILE_SPACE_LETTERS = ['', 'A', 'B', 'C'] as const;

/**
 * The codec string of an H.265 stream per ISO/IEC 14496-15 Annex E (RFC 6381, WebCodecs), e.g.
 * `hev1.1.6.L93.B0`: sample entry; profile space letter and profile_idc; the compatibility flags
 * bit-reversed in hex; tier letter and level_idc; the constraint bytes in hex, trailing zero bytes
 * left out.
 *
 * @param sps - the SPS NAL unit with its 2-byte header, without a start code.
 * @param sampleEntry - `hev1` (parameter sets may be in band, as from RTP) or `hvc1`.
 * @throws MediaError `malformed-payload` when `sps` does not parse.
 */
export function h265CodecString(sps: Uint8Array, sampleEntry: 'hev1' | 'hvc1'): string {
  if (sampleEntry !== 'hev1' && sampleEntry !== 'hvc1') {
    throw new TypeError(`h265CodecString: sampleEntry must be 'hev1' or 'hvc1', got ${String(sampleEntry)}`);
  }
  const ptl = parseH265SpsStart(sps);
  let last = ptl.constraintBytes.length;
  while (last > 0 && ptl.constraintBytes[last - 1] === 0) last--;
  let constraints = '';
  for (let i = 0; i < last; i++) constraints += `.${hex(ptl.constraintBytes[i]!)}`;
  return (
    `${sampleEntry}.${PROFILE_SPACE_LETTERS[ptl.profileSpace]}${ptl.profileIdc}` +
    `.${hex(reverseBits32(ptl.compatibilityFlags))}` +
    `.${ptl.highTier ? 'H' : 'L'}${ptl.levelIdc}${constraints}`
  );
}

/** The fields of an H.265 PPS that slice segment headers depend on (H.265 §7.3.2.3.1). */
export interface H265PictureParameterSet {
  readonly ppsId: number;
  readonly spsId: number;
  readonly dependentSliceSegmentsEnabled: boolean;
  readonly outputFlagPresent: boolean;
  /** num_extra_slice_header_bits, 0..7: slice_reserved_flag bits before slice_type. */
  readonly numExtraSliceHeaderBits: number;
}

/**
 * Parses the start of an H.265 PPS (2-byte NAL unit header included).
 *
 * @throws MediaError `malformed-payload` when `nal` is not a PPS or is truncated.
 */
export function parseH265Pps(nal: Uint8Array): H265PictureParameterSet {
  if (nalType(nal) !== H265NalType.pps || nal.length < 3) {
    throw new MediaError('malformed-payload', 'not an H.265 picture parameter set');
  }
  const reader = new BitReader(removeEmulationPrevention(nal.subarray(2, 2 + HEADER_PREFIX)));
  const ppsId = reader.ue();
  const spsId = reader.ue();
  if (ppsId > MAX_PPS_ID || spsId > MAX_VPS_SPS_ID) {
    throw new MediaError('malformed-payload', 'H.265 PPS: parameter set id out of range');
  }
  const dependentSliceSegmentsEnabled = reader.bit() === 1;
  const outputFlagPresent = reader.bit() === 1;
  const numExtraSliceHeaderBits = reader.u(3);
  return { ppsId, spsId, dependentSliceSegmentsEnabled, outputFlagPresent, numExtraSliceHeaderBits };
}

/**
 * The id of an H.265 VPS, SPS or PPS NAL unit (header included); `undefined` for other NAL types
 * and when it does not parse.
 */
export function h265ParameterSetId(nal: Uint8Array): number | undefined {
  try {
    switch (nalType(nal)) {
      case H265NalType.vps:
        return nal.length >= 3 ? nal[2]! >>> 4 : undefined;
      case H265NalType.sps:
        return parseH265SpsStart(nal).spsId;
      case H265NalType.pps:
        return parseH265Pps(nal).ppsId;
      default:
        return undefined;
    }
  } catch (err) {
    if (isMediaError(err, 'malformed-payload')) return undefined;
    throw err;
  }
}

/** first_slice_segment_in_pic_flag of a coded slice segment NAL unit (types 0..31). */
export function isFirstSliceSegmentInPicture(nal: Uint8Array): boolean {
  return nal.length > 2 && nalType(nal) <= H265NalType.vclLast && ((nal[2] ?? 0) & 0x80) !== 0;
}

/**
 * slice_type (0 B, 1 P, 2 I) of the first slice segment of a picture, read with the
 * num_extra_slice_header_bits of the PPS it names. Returns `undefined` for a slice segment that is
 * not the first of its picture (reading those needs the SPS picture size), for an unknown PPS, and
 * for a header that does not parse.
 *
 * @param nal - a coded slice segment NAL unit (types 0..31), header included.
 * @param ppsById - the known picture parameter sets by id.
 */
export function h265SliceType(
  nal: Uint8Array,
  ppsById: ReadonlyMap<number, H265PictureParameterSet>,
): number | undefined {
  const type = nalType(nal);
  if (type > H265NalType.vclLast || !isFirstSliceSegmentInPicture(nal)) return undefined;
  try {
    const reader = new BitReader(removeEmulationPrevention(nal.subarray(2, 2 + HEADER_PREFIX)));
    reader.skip(1); // first_slice_segment_in_pic_flag, 1 here
    if (type >= H265NalType.blaWLp && type <= H265NalType.irapLast) reader.skip(1); // no_output_of_prior_pics_flag
    const pps = ppsById.get(reader.ue());
    if (pps === undefined) return undefined;
    reader.skip(pps.numExtraSliceHeaderBits); // slice_reserved_flag[i]
    const sliceType = reader.ue();
    return sliceType <= H265SliceType.i ? sliceType : undefined;
  } catch (err) {
    if (isMediaError(err, 'malformed-payload')) return undefined;
    throw err;
  }
}

function nalType(nal: Uint8Array): number {
  return ((nal[0] ?? 0xff) >>> 1) & 0x3f;
}

function layerId(nal: Uint8Array): number {
  return (((nal[0] ?? 0) & 1) << 5) | ((nal[1] ?? 0) >>> 3);
}

function reverseBits32(value: number): number {
  let reversed = 0;
  for (let i = 0; i < 32; i++) reversed = reversed * 2 + ((value >>> i) & 1);
  return reversed;
}

function hex(value: number): string {
  return value.toString(16).toUpperCase();
}
