/**
 * The few H.264 (ITU-T H.264) syntax elements the ingest reads: the profile and level of a
 * sequence parameter set, parameter set ids, and the start of a slice header.
 */
import { BitReader, removeEmulationPrevention } from '../bits.js';
import { isMediaError, MediaError } from '../errors.js';

/** H.264 NAL unit types (H.264 Table 7-1) this package names. */
export const H264NalType = {
  nonIdrSlice: 1,
  idrSlice: 5,
  sps: 7,
  pps: 8,
  accessUnitDelimiter: 9,
} as const;

/** Bytes of a slice NAL read for its header: enough for the fields parsed here at any picture size. */
const SLICE_HEADER_PREFIX = 32;
/** Highest `seq_parameter_set_id` (H.264 §7.4.2.1.1). */
const MAX_SPS_ID = 31;
/** Highest `pic_parameter_set_id` (H.264 §7.4.2.2). */
const MAX_PPS_ID = 255;

/**
 * The RFC 6381 / WebCodecs codec string `avc1.PPCCLL` of a sequence parameter set: hex of
 * profile_idc, of the constraint-flags byte and of level_idc, lower case.
 *
 * @param sps - the SPS NAL unit with its 1-byte header, without a start code.
 * @throws MediaError `malformed-payload` when `sps` is not an SPS or is too short.
 */
export function h264CodecString(sps: Uint8Array): string {
  if (sps.length < 4 || ((sps[0] ?? 0) & 0x1f) !== H264NalType.sps) {
    throw new MediaError('malformed-payload', 'not an H.264 sequence parameter set');
  }
  const rbsp = removeEmulationPrevention(sps.subarray(1, 8));
  if (rbsp.length < 3) throw new MediaError('malformed-payload', 'H.264 sequence parameter set too short');
  return `avc1.${hex2(rbsp[0]!)}${hex2(rbsp[1]!)}${hex2(rbsp[2]!)}`;
}

/** The start of an H.264 slice header (H.264 §7.3.3). */
export interface H264SliceHeader {
  /** Address of the first macroblock; 0 for the first slice of a picture (without ASO). */
  readonly firstMbInSlice: number;
  /** slice_type, 0..9 (P, B, I, SP, SI; 5..9 mean every slice of the picture has that type). */
  readonly sliceType: number;
}

/**
 * Reads first_mb_in_slice and slice_type from a coded slice NAL unit (types 1 and 5, header
 * included). Returns `undefined` for any other NAL type and for a header that does not parse.
 */
export function h264SliceHeader(nal: Uint8Array): H264SliceHeader | undefined {
  const type = (nal[0] ?? 0) & 0x1f;
  if (type !== H264NalType.nonIdrSlice && type !== H264NalType.idrSlice) return undefined;
  try {
    const reader = new BitReader(removeEmulationPrevention(nal.subarray(1, 1 + SLICE_HEADER_PREFIX)));
    const firstMbInSlice = reader.ue();
    const sliceType = reader.ue();
    return sliceType <= 9 ? { firstMbInSlice, sliceType } : undefined;
  } catch (err) {
    if (isMediaError(err, 'malformed-payload')) return undefined;
    throw err;
  }
}

/** slice_type (0..9) of a coded slice NAL unit, or `undefined` (see {@link h264SliceHeader}). */
export function h264SliceType(nal: Uint8Array): number | undefined {
  return h264SliceHeader(nal)?.sliceType;
}

/** True for an H.264 slice_type that means B (1 and 6). */
export function isH264BSliceType(sliceType: number): boolean {
  return sliceType % 5 === 1;
}

/**
 * The id of an SPS (`seq_parameter_set_id`) or PPS (`pic_parameter_set_id`) NAL unit, header
 * included; `undefined` for other NAL types or when it does not parse. Parameter sets are cached
 * by id because a stream may use several at once.
 */
export function h264ParameterSetId(nal: Uint8Array): number | undefined {
  const type = (nal[0] ?? 0) & 0x1f;
  if (type !== H264NalType.sps && type !== H264NalType.pps) return undefined;
  try {
    const reader = new BitReader(removeEmulationPrevention(nal.subarray(1, 16)));
    if (type === H264NalType.sps) {
      reader.skip(24); // profile_idc, constraint flags, level_idc
      const id = reader.ue();
      return id <= MAX_SPS_ID ? id : undefined;
    }
    const id = reader.ue();
    return id <= MAX_PPS_ID ? id : undefined;
  } catch (err) {
    if (isMediaError(err, 'malformed-payload')) return undefined;
    throw err;
  }
}

function hex2(byte: number): string {
  return byte.toString(16).padStart(2, '0');
}
