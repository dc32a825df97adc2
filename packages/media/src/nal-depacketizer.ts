/**
 * Access-unit assembly shared by the H.264 and H.265 depacketisers ({@link NalUnitDepacketizer}):
 * NAL units in, whole Annex B access units out, with parameter-set caching and loss handling.
 */
import { type Logger, silentLogger } from '@svc/runtime';
import { ReusedBuffer } from './reused-buffer.js';
import type { AccessUnit, Depacketizer, DepacketizerStats, RtpPacket } from './types.js';

/** What a NAL unit type means to the access unit assembler. */
export const NalRole = {
  /** Passed through unchanged (SEI, end of sequence, filler, ...). */
  other: 0,
  /** A coded slice (segment) that is not a random access point. */
  slice: 1,
  /** A coded slice (segment) of a random access picture: H.264 IDR, H.265 IRAP. */
  randomAccessSlice: 2,
  /** An access unit delimiter: dropped from the output. */
  delimiter: 3,
  /** H.265 video parameter set. */
  videoParameterSet: 4,
  /** Sequence parameter set. */
  sequenceParameterSet: 5,
  /** Picture parameter set. */
  pictureParameterSet: 6,
} as const;

/** One of the {@link NalRole} values. */
export type NalRole = (typeof NalRole)[keyof typeof NalRole];

/** One line of a role table: a NAL unit type, or an inclusive range of types, and their role. */
export type NalRoleEntry = readonly [types: number | readonly [first: number, last: number], role: NalRole];

/**
 * Builds a {@link NalCodecDescription.roles} table for the NAL unit types below `size`: each type
 * gets the role of the last entry that names it, {@link NalRole.other} when none does.
 */
export function nalRoleTable(size: number, entries: readonly NalRoleEntry[]): Uint8Array {
  const roles = new Uint8Array(size);
  for (const [types, role] of entries) {
    if (typeof types === 'number') roles[types] = role;
    else roles.fill(role, types[0], types[1] + 1);
  }
  return roles;
}

/** Parameter set kinds, in the order they must appear in an access unit. */
export const ParameterSetKind = { vps: 0, sps: 1, pps: 2 } as const;

/** Bits returned by {@link NalUnitDepacketizer.inspectSlice}. */
export const SliceFlag = {
  /** The slice (segment) is the first of its picture. */
  firstInPicture: 1,
  /** The slice is a B slice. */
  bidirectional: 2,
} as const;

/** The codec-specific tables a {@link NalUnitDepacketizer} works from. */
export interface NalCodecDescription {
  /** Codec name for log messages. */
  readonly name: string;
  /** The {@link NalRole} of every NAL unit type, indexed by type. */
  readonly roles: Uint8Array;
  /** Parameter set kinds a keyframe needs (bit 0 VPS, 1 SPS, 2 PPS), to warn when one is missing. */
  readonly requiredParameterSets: number;
  /**
   * The payload type of an aggregation packet (H.264 STAP-A, H.265 AP). In both RTP formats it is
   * the first type past the NAL unit types: a payload of a lower type is a single NAL unit.
   */
  readonly aggregationType: number;
  /** The payload type of a fragmentation unit (H.264 FU-A, H.265 FU). */
  readonly fragmentationType: number;
  /** Payload structures the format defines that are not handled, by type: their `skipped` reason. */
  readonly unsupportedTypes: ReadonlyMap<number, string>;
}

/** Options common to the H.264 and H.265 depacketisers. */
export interface NalDepacketizerOptions {
  /** The channel's codec string, copied unchanged onto every access unit. */
  readonly codec: string;
  /**
   * Parameter sets from the session description (`sprop-parameter-sets`, or `sprop-vps`,
   * `sprop-sps`, `sprop-pps`), base64-decoded: raw NAL units without start codes.
   */
  readonly parameterSets?: readonly Uint8Array[];
  /** Receives one warning per kind of trouble (unsupported payloads, malformed ones, ...). */
  readonly logger?: Logger;
  /**
   * Converts an access unit's RTP timestamp to its capture time in µs. The caller passes one that
   * unwraps the 32-bit timestamp and knows the stream's clock; the default assumes 90 kHz and does
   * not unwrap.
   */
  readonly toCaptureTimeUs?: (rtpTimestamp: number) => number;
  /**
   * Write every access unit into one buffer that the next access unit reuses, instead of a fresh
   * one each: `AccessUnit.data` is then valid during the call that receives it only, and the
   * caller copies what it keeps. Saves an allocation per access unit (and the garbage collection
   * of memory outside the JavaScript heap that it drives).
   */
  readonly lendAccessUnits?: boolean;
}

/** Number of parameter set kinds: VPS, SPS, PPS (H.264 uses the last two). */
const PARAMETER_SET_KINDS = 3;
/** Rank of every NAL unit that is not a parameter set, for ordering parameter sets before it. */
const RANK_AFTER_PARAMETER_SETS = PARAMETER_SET_KINDS;
const KIND_NAMES = ['VPS', 'SPS', 'PPS'] as const;
/** First size of the assembly buffer; it grows to the largest access unit seen. */
const INITIAL_ASSEMBLY_BYTES = 64 * 1024;

/** A four-byte Annex B start code (00 00 00 01) at `at`. */
function writeStartCode(data: Uint8Array, at: number): void {
  data[at] = 0;
  data[at + 1] = 0;
  data[at + 2] = 0;
  data[at + 3] = 1;
}

function defaultCaptureTimeUs(rtpTimestamp: number): number {
  return Math.round((rtpTimestamp * 1e6) / 90_000);
}

/**
 * Turns the RTP packets of one H.264 or H.265 stream into whole access units in Annex B. This class
 * routes each payload by its header's type (single NAL unit, aggregation packet, fragmentation
 * unit, unsupported or unknown structure); subclasses parse those structures and hand NAL units
 * over with `beginNal` / `continueNal` / `endNal`. This class finds the access unit boundaries
 * (marker bit, timestamp change), drops access units that lost a packet or carried a malformed
 * one, drops access unit delimiters, caches parameter sets and puts them in front of keyframes
 * that lack them.
 *
 * Payload bytes are copied as they arrive, into one assembly buffer kept from access unit to
 * access unit, so the caller may reuse a packet's memory as soon as `handlePacket` returns (the
 * ingest reads datagrams into memory it reuses). Each NAL unit is copied again into the access
 * unit's data.
 */
export abstract class NalUnitDepacketizer implements Depacketizer {
  /** Counters; `skipped` reasons: `malformed`, `fragment`, `no-slice`, `unknown-type`, unsupported kinds. */
  readonly stats: DepacketizerStats = {
    packets: 0,
    accessUnits: 0,
    keyframes: 0,
    droppedAccessUnits: 0,
    skipped: {},
  };

  /** Logger for warnings (each kind once per depacketiser). */
  private readonly logger: Logger;
  private readonly codec: string;
  private readonly description: NalCodecDescription;
  private readonly toCaptureTimeUs: (rtpTimestamp: number) => number;
  /** With `lendAccessUnits`: the memory every access unit is written into. */
  private readonly output: ReusedBuffer | undefined;
  /** The lent memory holds an access unit returned by the current `handlePacket` call. */
  private outputTaken = false;
  private readonly warned = new Set<string>();
  /** Latest parameter sets by kind (VPS, SPS, PPS), each by id. */
  private readonly parameterSets: Map<number, Uint8Array>[] = [new Map(), new Map(), new Map()];

  /** An access unit is in progress. */
  private open = false;
  private timestamp = 0;
  private lastArrivalMs = 0;
  /** A packet of the access unit in progress was lost or malformed: drop it. */
  private damaged = false;
  /** `handleLoss` was called and no packet arrived since. */
  private lossPending = false;
  /** Packets may be missing before this access unit's first: emit it only if it starts a picture. */
  private checkHead = false;

  /** The access unit's NAL unit bytes (without start codes), back to back; grows, never shrinks. */
  private assembly = new Uint8Array(INITIAL_ASSEMBLY_BYTES);
  /** Bytes of {@link assembly} in use. */
  private assembled = 0;
  private readonly nalTypes: number[] = [];
  /** For each complete NAL unit: where its bytes start in {@link assembly}. */
  private readonly nalStarts: number[] = [];
  private readonly nalSizes: number[] = [];
  private slices = 0;
  private keyframe = false;
  /** Parameter set kinds present in the access unit (bit per kind). */
  private presentKinds = 0;

  /** A NAL unit is being reassembled from fragments. */
  private nalOpen = false;
  private openType = 0;
  /** Where the NAL unit being reassembled starts in {@link assembly}. */
  private openStart = 0;
  private openSize = 0;

  /** Subclasses call {@link seedParameterSets} once their own fields exist. */
  protected constructor(options: NalDepacketizerOptions, description: NalCodecDescription) {
    this.codec = options.codec;
    this.logger = options.logger ?? silentLogger;
    this.toCaptureTimeUs = options.toCaptureTimeUs ?? defaultCaptureTimeUs;
    this.output = options.lendAccessUnits === true ? new ReusedBuffer() : undefined;
    this.description = description;
  }

  /** Takes one packet; returns the access units it completed (marker bit or timestamp change). */
  handlePacket(packet: RtpPacket, receivedAtMs: number): AccessUnit[] {
    this.stats.packets++;
    this.outputTaken = false;
    const completed: AccessUnit[] = [];
    if (this.open && packet.timestamp !== this.timestamp) {
      // The previous access unit never saw its marker. After a reported loss its tail is missing.
      if (this.lossPending) this.damaged = true;
      this.finish(completed);
    }
    if (this.lossPending) {
      if (this.nalOpen) this.discardOpenNal();
      if (this.open) this.damaged = true;
    }
    if (!this.open) {
      this.open = true;
      this.timestamp = packet.timestamp;
      this.checkHead = this.lossPending;
    }
    this.lossPending = false;
    this.lastArrivalMs = receivedAtMs;
    this.parsePayload(packet.payload);
    if (packet.marker) this.finish(completed);
    return completed;
  }

  /**
   * Packets were lost before the next one. The access unit in progress is dropped; when none is
   * in progress, the next one is emitted only if it starts at its picture's first slice.
   */
  handleLoss(): void {
    this.lossPending = true;
  }

  /** Drops the access unit in progress; `hard` (a codec change) also forgets cached parameter sets. */
  reset(hard = false): void {
    this.clearAccessUnit();
    this.open = false;
    this.lossPending = false;
    if (hard) for (const sets of this.parameterSets) sets.clear();
  }

  /**
   * The type in an RTP payload's header (a NAL unit type or a payload structure type), or
   * `undefined` after reporting the payload {@link malformed}.
   */
  protected abstract payloadTypeOf(payload: Uint8Array): number | undefined;

  /** Parses a single NAL unit packet of NAL unit `type` and passes the unit on. */
  protected abstract parseSingle(type: number, payload: Uint8Array): void;

  /** Parses an aggregation packet and passes each of its NAL units on. */
  protected abstract parseAggregation(payload: Uint8Array): void;

  /** Parses a fragmentation unit and passes its piece to `beginNal` / `continueNal` / `endNal`. */
  protected abstract parseFragment(payload: Uint8Array): void;

  /** The id of a parameter set of `kind` (0 VPS, 1 SPS, 2 PPS), or `undefined` if it does not parse. */
  protected abstract parameterSetId(kind: number, nal: Uint8Array): number | undefined;

  /** {@link SliceFlag} bits of a complete coded slice NAL unit. */
  protected abstract inspectSlice(nal: Uint8Array): number;

  /** The NAL unit type of `nal`, or `undefined` when its header is invalid. */
  protected abstract nalTypeOf(nal: Uint8Array): number | undefined;

  /** Caches the parameter sets given at construction; anything else is ignored with a warning. */
  protected seedParameterSets(sets: readonly Uint8Array[]): void {
    for (const nal of sets) {
      const type = this.nalTypeOf(nal);
      const kind = type === undefined ? -1 : this.parameterSetKind(type);
      if (kind < 0) {
        this.warnOnce('sdp-not-parameter-set', { type }, 'ignored a non-parameter-set NAL unit given as one');
        continue;
      }
      this.cacheParameterSet(kind, nal.slice());
    }
  }

  /** Starts a NAL unit with its first piece (its header at least); an open one is dropped. */
  protected beginNal(type: number, first: Uint8Array): void {
    if (this.nalOpen) this.dropFragment();
    this.nalOpen = true;
    this.openType = type;
    this.openStart = this.assembled;
    this.openSize = first.length;
    this.append(first);
  }

  /**
   * Adds a continuation fragment to the NAL unit of `type` being reassembled. Without one (its
   * start was lost, or the fragment belongs to another NAL unit) the fragment is dropped.
   */
  protected continueNal(type: number, piece: Uint8Array): void {
    if (!this.nalOpen || this.openType !== type) {
      this.dropFragment();
      return;
    }
    this.append(piece);
    this.openSize += piece.length;
  }

  /** Completes the NAL unit being reassembled. */
  protected endNal(): void {
    if (!this.nalOpen) return;
    this.nalOpen = false;
    const type = this.openType;
    const role = this.description.roles[type] ?? NalRole.other;
    if (role === NalRole.delimiter) {
      this.assembled = this.openStart;
      return;
    }
    this.nalTypes.push(type);
    this.nalStarts.push(this.openStart);
    this.nalSizes.push(this.openSize);
    if (role === NalRole.slice || role === NalRole.randomAccessSlice) {
      this.slices++;
      if (role === NalRole.randomAccessSlice) this.keyframe = true;
    } else if (role >= NalRole.videoParameterSet) {
      const kind = role - NalRole.videoParameterSet;
      this.presentKinds |= 1 << kind;
      this.cacheParameterSet(kind, this.copyOpenNal());
    }
  }

  /** Adds a whole NAL unit (single NAL unit packet or one unit of an aggregation packet). */
  protected pushNal(type: number, nal: Uint8Array): void {
    this.beginNal(type, nal);
    this.endNal();
  }

  /** A payload that does not parse: skipped, and its access unit is dropped. */
  protected malformed(reason: string): void {
    this.countSkip('malformed');
    this.damaged = true;
    this.warnOnce('malformed', { reason }, `malformed ${this.description.name} RTP payload skipped`);
  }

  /** A payload structure this depacketiser does not handle: skipped, and its access unit dropped. */
  private unsupported(kind: string): void {
    this.countSkip(kind);
    this.damaged = true;
    this.warnOnce(kind, { kind }, `unsupported ${this.description.name} RTP payload structure skipped`);
  }

  /**
   * A payload type the RTP format leaves undefined or reserved: ignored without dropping the
   * access unit, so a future extension does not break the stream.
   */
  private ignoreUnknown(type: number): void {
    this.countSkip('unknown-type');
    this.warnOnce('unknown-type', { type }, `unknown ${this.description.name} RTP payload type ignored`);
  }

  /** Parses one RTP payload by the structure its header's type names. */
  private parsePayload(payload: Uint8Array): void {
    const type = this.payloadTypeOf(payload);
    if (type === undefined) return;
    const description = this.description;
    if (type < description.aggregationType) {
      this.parseSingle(type, payload);
    } else if (type === description.aggregationType) {
      this.parseAggregation(payload);
    } else if (type === description.fragmentationType) {
      this.parseFragment(payload);
    } else {
      const unsupported = description.unsupportedTypes.get(type);
      if (unsupported === undefined) this.ignoreUnknown(type);
      else this.unsupported(unsupported);
    }
  }

  private parameterSetKind(type: number): number {
    const role = this.description.roles[type] ?? NalRole.other;
    return role >= NalRole.videoParameterSet ? role - NalRole.videoParameterSet : -1;
  }

  private cacheParameterSet(kind: number, nal: Uint8Array): void {
    const id = this.parameterSetId(kind, nal);
    if (id === undefined) {
      this.warnOnce(
        `unparsed-${kind}`,
        { kind: KIND_NAMES[kind] },
        'parameter set without a readable id not cached',
      );
      return;
    }
    this.parameterSets[kind]!.set(id, nal);
  }

  /** A copy of the NAL unit just completed. */
  private copyOpenNal(): Uint8Array {
    return this.assembly.slice(this.openStart, this.openStart + this.openSize);
  }

  /** Copies `bytes` to the end of the assembly buffer, growing it when they do not fit. */
  private append(bytes: Uint8Array): void {
    const end = this.assembled + bytes.length;
    if (end > this.assembly.length) {
      const grown = new Uint8Array(Math.max(end, this.assembly.length * 2));
      grown.set(this.assembly.subarray(0, this.assembled));
      this.assembly = grown;
    }
    this.assembly.set(bytes, this.assembled);
    this.assembled = end;
  }

  private discardOpenNal(): void {
    this.assembled = this.openStart;
    this.nalOpen = false;
  }

  /** A fragment that cannot be reassembled: the partial NAL unit goes, the access unit is damaged. */
  private dropFragment(): void {
    if (this.nalOpen) this.discardOpenNal();
    this.countSkip('fragment');
    this.damaged = true;
  }

  private countSkip(reason: string): void {
    this.stats.skipped[reason] = (this.stats.skipped[reason] ?? 0) + 1;
  }

  private warnOnce(key: string, obj: object, msg: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn({ codec: this.codec, ...obj }, msg);
  }

  /** Ends the access unit in progress: emits it into `completed` unless it has to be dropped. */
  private finish(completed: AccessUnit[]): void {
    if (!this.open) return;
    this.open = false;
    if (this.nalOpen) this.dropFragment();
    if (this.damaged) {
      this.stats.droppedAccessUnits++;
    } else if (this.slices === 0) {
      this.countSkip('no-slice');
    } else {
      const accessUnit = this.build();
      if (accessUnit === undefined) {
        this.stats.droppedAccessUnits++;
      } else {
        completed.push(accessUnit);
        this.stats.accessUnits++;
        if (accessUnit.keyframe) this.stats.keyframes++;
      }
    }
    this.clearAccessUnit();
  }

  /** Kinds (bit per kind) to take from the cache for this access unit. */
  private missingParameterSets(): number {
    if (!this.keyframe) return 0;
    let missing = 0;
    for (let kind = 0; kind < PARAMETER_SET_KINDS; kind++) {
      const bit = 1 << kind;
      if ((this.presentKinds & bit) !== 0) continue;
      if (this.parameterSets[kind]!.size > 0) {
        missing |= bit;
      } else if ((this.description.requiredParameterSets & bit) !== 0) {
        this.warnOnce(
          `keyframe-without-${kind}`,
          { kind: KIND_NAMES[kind] },
          'keyframe without a parameter set, none cached',
        );
      }
    }
    return missing;
  }

  /**
   * Writes the access unit in Annex B. Missing parameter sets go right before the first NAL unit
   * that must follow them (VPS, SPS, PPS, then everything else). Returns `undefined` when the
   * access unit must start a picture (after a loss) and does not.
   */
  private build(): AccessUnit | undefined {
    let pending = this.missingParameterSets();
    let total = 0;
    for (const size of this.nalSizes) total += 4 + size;
    for (let kind = 0; kind < PARAMETER_SET_KINDS; kind++) {
      if ((pending & (1 << kind)) === 0) continue;
      for (const nal of this.parameterSets[kind]!.values()) total += 4 + nal.length;
    }

    // A packet can complete two access units (one without its marker, then its own): the lent
    // memory takes the first, the second gets its own.
    let data: Uint8Array;
    if (this.output !== undefined && !this.outputTaken) {
      data = this.output.take(total);
      this.outputTaken = true;
    } else {
      data = new Uint8Array(total);
    }
    let position = 0;
    let firstSlice = true;
    let bSlice = false;
    for (let i = 0; i < this.nalTypes.length; i++) {
      const type = this.nalTypes[i]!;
      if (pending !== 0) {
        const kind = this.parameterSetKind(type);
        const rank = kind < 0 ? RANK_AFTER_PARAMETER_SETS : kind;
        for (let k = 0; k < rank; k++) {
          if ((pending & (1 << k)) === 0) continue;
          pending &= ~(1 << k);
          for (const nal of this.parameterSets[k]!.values()) {
            writeStartCode(data, position);
            data.set(nal, position + 4);
            position += 4 + nal.length;
          }
        }
      }
      writeStartCode(data, position);
      position += 4;
      const nalStart = position;
      const from = this.nalStarts[i]!;
      data.set(this.assembly.subarray(from, from + this.nalSizes[i]!), position);
      position += this.nalSizes[i]!;
      const role = this.description.roles[type] ?? NalRole.other;
      if (role === NalRole.slice || role === NalRole.randomAccessSlice) {
        const flags = this.inspectSlice(data.subarray(nalStart, position));
        if (firstSlice && this.checkHead && (flags & SliceFlag.firstInPicture) === 0) return undefined;
        firstSlice = false;
        if ((flags & SliceFlag.bidirectional) !== 0) bSlice = true;
      }
    }

    return {
      codec: this.codec,
      data,
      rtpTimestamp: this.timestamp,
      captureTimeUs: this.toCaptureTimeUs(this.timestamp),
      keyframe: this.keyframe,
      receivedAtMs: this.lastArrivalMs,
      details: {
        nalTypes: this.nalTypes.slice(),
        slices: this.slices,
        bSlice,
        inBandParameterSets: this.presentKinds !== 0,
      },
    };
  }

  private clearAccessUnit(): void {
    this.assembled = 0;
    this.nalTypes.length = 0;
    this.nalStarts.length = 0;
    this.nalSizes.length = 0;
    this.slices = 0;
    this.keyframe = false;
    this.presentKinds = 0;
    this.nalOpen = false;
    this.damaged = false;
    this.checkHead = false;
  }
}
