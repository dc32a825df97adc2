/** H.264 over RTP (RFC 6184, non-interleaved mode) to whole access units in Annex B. */
import {
  type NalCodecDescription,
  type NalDepacketizerOptions,
  NalRole,
  NalUnitDepacketizer,
  nalRoleTable,
  SliceFlag,
} from '../nal-depacketizer.js';
import { H264NalType, h264ParameterSetId, h264SliceHeader, isH264BSliceType } from './sps.js';

/** RTP payload structure types of RFC 6184 (§5.2, Table 1) beyond the NAL unit types 1..23. */
export const H264PayloadType = {
  stapA: 24,
  stapB: 25,
  mtap16: 26,
  mtap24: 27,
  fuA: 28,
  fuB: 29,
} as const;

const H264_DESCRIPTION: NalCodecDescription = {
  name: 'H.264',
  roles: nalRoleTable(32, [
    [H264NalType.nonIdrSlice, NalRole.slice],
    [H264NalType.idrSlice, NalRole.randomAccessSlice],
    [H264NalType.sps, NalRole.sequenceParameterSet],
    [H264NalType.pps, NalRole.pictureParameterSet],
    [H264NalType.accessUnitDelimiter, NalRole.delimiter],
  ]),
  requiredParameterSets: 0b110,
  aggregationType: H264PayloadType.stapA,
  fragmentationType: H264PayloadType.fuA,
  unsupportedTypes: new Map([
    [H264PayloadType.stapB, 'stap-b'],
    [H264PayloadType.mtap16, 'mtap16'],
    [H264PayloadType.mtap24, 'mtap24'],
    [H264PayloadType.fuB, 'fu-b'],
  ]),
};

/** Options of {@link H264Depacketizer}. */
export type H264DepacketizerOptions = NalDepacketizerOptions;

/**
 * H.264 RTP depacketiser (RFC 6184, single NAL unit and non-interleaved modes). Emits access units
 * in Annex B; a keyframe is one with an IDR slice (type 5).
 *
 * The first byte of every payload is a NAL unit header; its type selects the structure.
 *
 * ```
 * NAL unit header / payload header, one byte:
 *    7   6 5   4 3 2 1 0
 *   +---+-----+---------+
 *   | F | NRI |  Type   |    F: forbidden, must be 0; NRI: importance; Type: 1..23 NAL unit,
 *   +---+-----+---------+    24 STAP-A, 28 FU-A (25-27, 29 not supported here)
 *
 * Single NAL unit packet (Type 1..23): the payload is one whole NAL unit.
 *   | header | NAL unit payload ...                                       |
 *
 * STAP-A (Type 24): several NAL units of the same time, each after a 16-bit size.
 *   | F,NRI,24 | size (2 bytes, big-endian) | NAL unit (header+payload) | size | NAL unit | ...
 *
 * FU-A (Type 28): one fragment of a NAL unit too big for a packet.
 *   byte 0: FU indicator   | F | NRI | 28 |      F and NRI of the fragmented NAL unit
 *   byte 1: FU header      | S | E | R | Type |  S first fragment, E last, R reserved (0),
 *                                               Type: type of the fragmented NAL unit
 *   bytes 2..: fragment    the NAL unit's bytes after its header, in order
 *   The NAL unit header is rebuilt as F | NRI | Type.
 * ```
 */
export class H264Depacketizer extends NalUnitDepacketizer {
  constructor(options: H264DepacketizerOptions) {
    super(options, H264_DESCRIPTION);
    this.seedParameterSets(options.parameterSets ?? []);
  }

  protected override payloadTypeOf(payload: Uint8Array): number | undefined {
    if (payload.length === 0) {
      this.malformed('empty payload');
      return undefined;
    }
    const header = payload[0]!;
    if ((header & 0x80) !== 0) {
      this.malformed('forbidden_zero_bit set');
      return undefined;
    }
    const type = header & 0x1f;
    if (type === 0) {
      this.malformed('NAL unit type 0');
      return undefined;
    }
    return type;
  }

  protected override parseSingle(type: number, payload: Uint8Array): void {
    this.pushNal(type, payload);
  }

  protected override parameterSetId(_kind: number, nal: Uint8Array): number | undefined {
    return h264ParameterSetId(nal);
  }

  protected override inspectSlice(nal: Uint8Array): number {
    const header = h264SliceHeader(nal);
    if (header === undefined) return 0;
    return (
      (header.firstMbInSlice === 0 ? SliceFlag.firstInPicture : 0) |
      (isH264BSliceType(header.sliceType) ? SliceFlag.bidirectional : 0)
    );
  }

  protected override nalTypeOf(nal: Uint8Array): number | undefined {
    const header = nal[0];
    if (header === undefined || (header & 0x80) !== 0) return undefined;
    return header & 0x1f;
  }

  /** STAP-A. Checks every size first, so a truncated STAP-A contributes nothing. */
  protected override parseAggregation(payload: Uint8Array): void {
    for (let pass = 0; pass < 2; pass++) {
      let offset = 1;
      while (offset < payload.length) {
        if (payload.length - offset < 2) {
          this.malformed('STAP-A size field truncated');
          return;
        }
        const size = (payload[offset]! << 8) | payload[offset + 1]!;
        offset += 2;
        if (size === 0 || size > payload.length - offset) {
          this.malformed('STAP-A NAL unit size beyond the payload');
          return;
        }
        const header = payload[offset]!;
        const type = header & 0x1f;
        if ((header & 0x80) !== 0 || type === 0 || type > 23) {
          this.malformed('STAP-A holds an invalid NAL unit header');
          return;
        }
        if (pass === 1) this.pushNal(type, payload.subarray(offset, offset + size));
        offset += size;
      }
      if (offset === 1) {
        this.malformed('empty STAP-A');
        return;
      }
    }
  }

  /** FU-A: one fragment of a NAL unit; the first rebuilds the NAL unit header. */
  protected override parseFragment(payload: Uint8Array): void {
    if (payload.length < 2) {
      this.malformed('FU-A without FU header');
      return;
    }
    const fuHeader = payload[1]!;
    const type = fuHeader & 0x1f;
    if (type === 0 || type > 23) {
      this.malformed('FU-A carries an invalid NAL unit type');
      return;
    }
    if ((fuHeader & 0x80) !== 0) {
      this.beginNal(type, Uint8Array.of((payload[0]! & 0xe0) | type));
    }
    this.continueNal(type, payload.subarray(2));
    if ((fuHeader & 0x40) !== 0) this.endNal();
  }
}
