/** H.265 over RTP (RFC 7798, single RTP stream) to whole access units in Annex B. */
import { isMediaError } from '../errors.js';
import {
  type NalCodecDescription,
  type NalDepacketizerOptions,
  NalRole,
  NalUnitDepacketizer,
  nalRoleTable,
  ParameterSetKind,
  SliceFlag,
} from '../nal-depacketizer.js';
import {
  H265NalType,
  type H265PictureParameterSet,
  H265SliceType,
  h265ParameterSetId,
  h265SliceType,
  isFirstSliceSegmentInPicture,
  parseH265Pps,
} from './sps.js';

/** RTP payload structure types of RFC 7798 (§4.4) beyond the NAL unit types 0..47. */
export const H265PayloadType = {
  aggregationPacket: 48,
  fragmentationUnit: 49,
  paci: 50,
} as const;

/** Options of {@link H265Depacketizer}. */
export interface H265DepacketizerOptions extends NalDepacketizerOptions {
  /**
   * Payloads carry decoding order numbers (DONL/DOND fields, RFC 7798 §4.4): true when the SDP's
   * `sprop-max-don-diff` is greater than 0.
   */
  readonly donlPresent?: boolean;
}

const PAYLOAD_HEADER_SIZE = 2;
const DONL_SIZE = 2;
const DOND_SIZE = 1;
const SIZE_FIELD = 2;
const FU_HEADER_SIZE = 1;

const H265_DESCRIPTION: NalCodecDescription = {
  name: 'H.265',
  roles: nalRoleTable(64, [
    [[0, H265NalType.vclLast], NalRole.slice],
    [[H265NalType.blaWLp, H265NalType.irapLast], NalRole.randomAccessSlice],
    [H265NalType.vps, NalRole.videoParameterSet],
    [H265NalType.sps, NalRole.sequenceParameterSet],
    [H265NalType.pps, NalRole.pictureParameterSet],
    [H265NalType.accessUnitDelimiter, NalRole.delimiter],
  ]),
  requiredParameterSets: 0b111,
  aggregationType: H265PayloadType.aggregationPacket,
  fragmentationType: H265PayloadType.fragmentationUnit,
  unsupportedTypes: new Map([[H265PayloadType.paci, 'paci']]),
};

/**
 * H.265 RTP depacketiser (RFC 7798, one RTP stream). Emits access units in Annex B; a keyframe is
 * one with an IRAP picture (NAL unit types 16..23: BLA, IDR and CRA).
 *
 * Every payload starts with a 2-byte header shaped like the NAL unit header; its type selects the
 * structure. DONL/DOND fields are present only when `donlPresent` (sprop-max-don-diff > 0).
 *
 * ```
 * NAL unit header / payload header, two bytes:
 *   | F (1) | Type (6) | LayerId (6) | TID (3) |   F must be 0; TID (temporal id + 1) must not be 0
 *   Type 0..47 NAL unit, 48 AP, 49 FU, 50 PACI (not supported here)
 *
 * Single NAL unit packet (Type 0..47):
 *   | header (2) | DONL (2, if present) | rest of the NAL unit ...                      |
 *   The NAL unit is the header followed by the rest (DONL is not part of it).
 *
 * Aggregation packet, AP (Type 48): several NAL units of one access unit.
 *   | payload header (2) | DONL (2, if present) | size (2) | NAL unit 1 |
 *   | DOND (1, if present) | size (2) | NAL unit 2 | ...     sizes are big-endian
 *
 * Fragmentation unit, FU (Type 49): one fragment of a NAL unit.
 *   | payload header (2) | FU header (1) | DONL (2, if present and S) | fragment ...      |
 *   FU header: | S (1) | E (1) | FuType (6) |   S first fragment, E last one
 *   The NAL unit header is rebuilt from the payload header with Type replaced by FuType.
 * ```
 */
export class H265Depacketizer extends NalUnitDepacketizer {
  private readonly donlPresent: boolean;
  /** Picture parameter sets by id, for reading slice headers. */
  private readonly pictureParameterSets = new Map<number, H265PictureParameterSet>();

  constructor(options: H265DepacketizerOptions) {
    super(options, H265_DESCRIPTION);
    this.donlPresent = options.donlPresent ?? false;
    this.seedParameterSets(options.parameterSets ?? []);
  }

  /** Drops the access unit in progress; `hard` also forgets cached parameter sets. */
  override reset(hard = false): void {
    super.reset(hard);
    if (hard) this.pictureParameterSets.clear();
  }

  protected override payloadTypeOf(payload: Uint8Array): number | undefined {
    const type = this.nalTypeOf(payload);
    if (type === undefined) this.malformed('invalid payload header');
    return type;
  }

  /** Also keeps each PPS's slice header fields, for {@link inspectSlice}. */
  protected override parameterSetId(kind: number, nal: Uint8Array): number | undefined {
    if (kind !== ParameterSetKind.pps) return h265ParameterSetId(nal);
    try {
      const pps = parseH265Pps(nal);
      this.pictureParameterSets.set(pps.ppsId, pps);
      return pps.ppsId;
    } catch (err) {
      if (isMediaError(err, 'malformed-payload')) return undefined;
      throw err;
    }
  }

  protected override inspectSlice(nal: Uint8Array): number {
    if (!isFirstSliceSegmentInPicture(nal)) return 0;
    const sliceType = h265SliceType(nal, this.pictureParameterSets);
    return SliceFlag.firstInPicture | (sliceType === H265SliceType.b ? SliceFlag.bidirectional : 0);
  }

  /** The type of a NAL unit or payload header; `undefined` if short, F set or TID 0. */
  protected override nalTypeOf(nal: Uint8Array): number | undefined {
    if (nal.length < PAYLOAD_HEADER_SIZE) return undefined;
    const first = nal[0]!;
    if ((first & 0x80) !== 0 || (nal[1]! & 0x07) === 0) return undefined;
    return (first >>> 1) & 0x3f;
  }

  protected override parseSingle(type: number, payload: Uint8Array): void {
    if (!this.donlPresent) {
      this.pushNal(type, payload);
      return;
    }
    if (payload.length < PAYLOAD_HEADER_SIZE + DONL_SIZE) {
      this.malformed('single NAL unit without DONL');
      return;
    }
    this.beginNal(type, payload.subarray(0, PAYLOAD_HEADER_SIZE));
    this.continueNal(type, payload.subarray(PAYLOAD_HEADER_SIZE + DONL_SIZE));
    this.endNal();
  }

  /** Checks every unit first, so a truncated AP contributes nothing. */
  protected override parseAggregation(payload: Uint8Array): void {
    for (let pass = 0; pass < 2; pass++) {
      let offset = PAYLOAD_HEADER_SIZE;
      let units = 0;
      while (offset < payload.length) {
        if (this.donlPresent) offset += units === 0 ? DONL_SIZE : DOND_SIZE;
        if (payload.length - offset < SIZE_FIELD) {
          this.malformed('AP size field truncated');
          return;
        }
        const size = (payload[offset]! << 8) | payload[offset + 1]!;
        offset += SIZE_FIELD;
        if (size > payload.length - offset) {
          this.malformed('AP NAL unit size beyond the payload');
          return;
        }
        const nal = payload.subarray(offset, offset + size);
        const type = this.nalTypeOf(nal);
        if (type === undefined || type >= H265PayloadType.aggregationPacket) {
          this.malformed('AP holds an invalid NAL unit header');
          return;
        }
        if (pass === 1) this.pushNal(type, nal);
        offset += size;
        units++;
      }
      if (units === 0) {
        this.malformed('empty AP');
        return;
      }
    }
  }

  protected override parseFragment(payload: Uint8Array): void {
    if (payload.length < PAYLOAD_HEADER_SIZE + FU_HEADER_SIZE) {
      this.malformed('FU without FU header');
      return;
    }
    const fuHeader = payload[PAYLOAD_HEADER_SIZE]!;
    const type = fuHeader & 0x3f;
    if (type >= H265PayloadType.aggregationPacket) {
      this.malformed('FU carries an invalid NAL unit type');
      return;
    }
    const start = (fuHeader & 0x80) !== 0;
    let offset = PAYLOAD_HEADER_SIZE + FU_HEADER_SIZE;
    if (start) {
      if (this.donlPresent) offset += DONL_SIZE;
      if (offset > payload.length) {
        this.malformed('FU without DONL');
        return;
      }
      this.beginNal(type, Uint8Array.of((payload[0]! & 0x81) | (type << 1), payload[1]!));
    }
    this.continueNal(type, payload.subarray(offset));
    if ((fuHeader & 0x40) !== 0) this.endNal();
  }
}
