import { type Logger, silentLogger } from '@svc/runtime';
import { isMediaError, MediaError } from '../errors.js';
import { ReusedBuffer } from '../reused-buffer.js';
import type { AccessUnit, Depacketizer, DepacketizerStats, RtpPacket } from '../types.js';
import { JPEG_EOI, type JpegSampling, jpegHeader, type QuantTable } from './headers.js';
import { MAX_COMPUTED_Q, MIN_COMPUTED_Q, makeQuantTables } from './tables.js';

/**
 * Main JPEG header, the first 8 bytes of every RTP/JPEG payload (RFC 2435 §3.1). Width and height
 * count blocks of 8 pixels. Every field but the fragment offset is the same in all packets of a frame.
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * | type-specific |    byte offset of this payload in the scan    |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |     type      |       Q       |  width ÷ 8    |  height ÷ 8   |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 */
export interface RtpJpegMainHeader {
  /** Progressive frame (0) or which field of an interlaced picture (1..3). */
  readonly typeSpecific: number;
  /** Where this payload's scan bytes go in the frame's scan data (24 bits). */
  readonly fragmentOffset: number;
  /** 0/64: 4:2:2, 1/65: 4:2:0; 64..127 add the restart marker header. */
  readonly type: number;
  /** 1..99: tables scaled from the standard ones; 128..255: tables sent in-band. */
  readonly q: number;
  /** Width in pixels (the field × 8). */
  readonly width: number;
  /** Height in pixels (the field × 8). */
  readonly height: number;
}

/** Bytes of the {@link RtpJpegMainHeader}. */
export const MAIN_HEADER_BYTES = 8;

/** Decoder of the {@link RtpJpegMainHeader}. */
export const rtpJpegMainHeader = {
  /** Reads the main header; {@link MediaError} `malformed-payload` when fewer than 8 bytes are left. */
  decode(view: DataView, offset = 0, end = view.byteLength): { value: RtpJpegMainHeader; bytes: number } {
    need(view, offset, end, MAIN_HEADER_BYTES, 'main JPEG header');
    const word = view.getUint32(offset);
    return {
      value: {
        typeSpecific: word >>> 24,
        fragmentOffset: word & 0xff_ffff,
        type: view.getUint8(offset + 4),
        q: view.getUint8(offset + 5),
        width: view.getUint8(offset + 6) * 8,
        height: view.getUint8(offset + 7) * 8,
      },
      bytes: MAIN_HEADER_BYTES,
    };
  },
} as const;

/**
 * Restart marker header, after the main header in every packet of types 64..127 (RFC 2435 §3.1.7).
 * F and L mark packets that begin and end whole restart intervals, so a receiver could decode a
 * partial frame; this depacketiser emits whole frames only and does not need them.
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |   MCUs between restart markers  |F|L|  index of first interval |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 */
export interface RestartMarkerHeader {
  /** MCUs between restart markers: the value of the DRI segment. */
  readonly interval: number;
  /** F: the payload starts with the first byte of a restart interval. */
  readonly first: boolean;
  /** L: the payload ends with the last byte of a restart interval. */
  readonly last: boolean;
  /** Restart count (14 bits); 0x3FFF when F and L are not used. */
  readonly count: number;
}

/** Bytes of the {@link RestartMarkerHeader}. */
export const RESTART_HEADER_BYTES = 4;

/** Decoder of the {@link RestartMarkerHeader}. */
export const restartMarkerHeader = {
  /** Reads the restart marker header; {@link MediaError} `malformed-payload` when it does not fit. */
  decode(view: DataView, offset = 0, end = view.byteLength): { value: RestartMarkerHeader; bytes: number } {
    need(view, offset, end, RESTART_HEADER_BYTES, 'restart marker header');
    const flags = view.getUint16(offset + 2);
    return {
      value: {
        interval: view.getUint16(offset),
        first: (flags & 0x8000) !== 0,
        last: (flags & 0x4000) !== 0,
        count: flags & 0x3fff,
      },
      bytes: RESTART_HEADER_BYTES,
    };
  },
} as const;

/**
 * Quantisation table header, after the other headers in the first packet (offset 0) of a frame
 * whose Q is 128..255 (RFC 2435 §3.1.8). The tables follow it: 64 entries each in zig-zag order,
 * one byte per entry, or two (big-endian) where the table's precision bit is set; bit 0 is table 0.
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  must be zero |   precision   |  bytes of table data (length) |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                table data (length bytes) ...                  |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * ```
 */
export interface QuantTableHeader {
  /** Bit i set: table i has 16-bit entries. */
  readonly precision: number;
  /** The table data (a view into the packet); empty means "the tables last sent with this Q". */
  readonly data: Uint8Array;
}

/** Bytes of the {@link QuantTableHeader} before its table data. */
export const QUANT_HEADER_BYTES = 4;

/** Decoder of the {@link QuantTableHeader}. */
export const quantTableHeader = {
  /**
   * Reads the header and its table data; {@link MediaError} `malformed-payload` when the header
   * does not fit or the length exceeds what is left (RFC 2435: such a packet MUST be discarded).
   */
  decode(view: DataView, offset = 0, end = view.byteLength): { value: QuantTableHeader; bytes: number } {
    need(view, offset, end, QUANT_HEADER_BYTES, 'quantisation table header');
    const length = view.getUint16(offset + 2);
    need(view, offset + QUANT_HEADER_BYTES, end, length, 'quantisation table data');
    const start = view.byteOffset + offset + QUANT_HEADER_BYTES;
    return {
      value: { precision: view.getUint8(offset + 1), data: new Uint8Array(view.buffer, start, length) },
      bytes: QUANT_HEADER_BYTES + length,
    };
  },
} as const;

function need(view: DataView, offset: number, end: number, bytes: number, what: string): void {
  const left = Math.min(end, view.byteLength) - offset;
  if (left < bytes) {
    throw new MediaError('malformed-payload', `${what} needs ${bytes} bytes, ${Math.max(left, 0)} left`);
  }
}

/** Keys of {@link DepacketizerStats.skipped} this depacketiser counts. */
export const JpegSkipReason = {
  /** A payload whose headers do not parse, are reserved, or contradict the frame's first packet. */
  malformed: 'malformed',
  /** A type other than 0, 1, 64 and 65 (the only ones RFC 2435 defines). */
  unsupportedType: 'unsupported-type',
  /** In-band tables announced as "same as before" (length 0) for a Q whose tables never arrived. */
  missingTables: 'missing-tables',
} as const;

/** A value of {@link JpegSkipReason}. */
export type JpegSkipReason = (typeof JpegSkipReason)[keyof typeof JpegSkipReason];

/** Options of {@link JpegDepacketizer}. */
export interface JpegDepacketizerOptions {
  /** The channel's configured codec string, copied into every access unit. */
  readonly codec: string;
  /** Receives a warning per undefined type seen and a debug line per dropped frame. */
  readonly logger?: Logger | undefined;
  /** RTP timestamp (90 kHz) to capture time in µs; by default a plain scaling without unwrapping. */
  readonly toCaptureTimeUs?: ((rtpTimestamp: number) => number) | undefined;
  /**
   * Write every frame into one buffer that the next frame reuses: `AccessUnit.data` is then
   * valid during the call that receives it only (see the NAL depacketisers' option).
   */
  readonly lendAccessUnits?: boolean | undefined;
}

/** Frames' headers are cached per parameter combination; past this many the cache starts over. */
const MAX_CACHED_HEADERS = 64;
/** First size of the scan assembly buffer. */
const INITIAL_SCAN_BYTES = 64 * 1024;
const Q_IN_BAND_MIN = 128;
/** Q 255: tables may change every frame, so "length 0" (reuse) is forbidden by RFC 2435. */
const Q_DYNAMIC = 255;
const NO_NAL_TYPES: readonly number[] = Object.freeze([]);

/** Quantisation tables with an identity, so headers built from them can be cached. */
interface TableSet {
  readonly id: number;
  readonly luma: QuantTable;
  readonly chroma: QuantTable;
}

interface Frame {
  readonly timestamp: number;
  readonly main: RtpJpegMainHeader;
  readonly restartInterval: number | undefined;
  readonly header: Uint8Array;
  readonly inBandTables: boolean;
  /** Scan bytes so far, at the start of the depacketiser's assembly buffer. */
  size: number;
}

type State =
  | { readonly kind: 'idle' }
  | { readonly kind: 'collecting'; readonly timestamp: number; readonly frame: Frame }
  /** A frame of this timestamp was dropped: ignore its remaining packets. */
  | { readonly kind: 'discarding'; readonly timestamp: number };

const IDLE: State = { kind: 'idle' };

/**
 * Depacketiser of Motion JPEG over RTP (RFC 2435, types 0, 1, 64 and 65). RTP/JPEG leaves out the
 * JPEG headers, so each frame is rebuilt into a complete baseline JPEG (JFIF) file that a browser
 * can decode: headers from the RTP JPEG header and the (computed or in-band) quantisation tables,
 * then the reassembled scan data, then EOI.
 *
 * A frame is emitted only when all its fragments arrived in order up to the marker; otherwise it
 * is dropped and counted. Scan bytes are copied as they arrive into one assembly buffer kept from
 * frame to frame, so the caller may reuse a packet's memory as soon as `handlePacket` returns.
 */
export class JpegDepacketizer implements Depacketizer {
  /** Counters; `skipped` uses the keys of {@link JpegSkipReason}. */
  readonly stats: DepacketizerStats = {
    packets: 0,
    accessUnits: 0,
    keyframes: 0,
    droppedAccessUnits: 0,
    skipped: {},
  };

  readonly #codec: string;
  readonly #logger: Logger;
  readonly #toCaptureTimeUs: (rtpTimestamp: number) => number;
  #state: State = IDLE;
  #nextTableId = 0;
  /** Tables computed from Q 1..99, by Q. */
  readonly #computedTables = new Map<number, TableSet>();
  /** The tables last received in-band, by Q (128..255). */
  readonly #inBandTables = new Map<number, TableSet>();
  readonly #headers = new Map<string, Uint8Array>();
  readonly #warnedTypes = new Set<number>();
  /** The scan data of the frame being collected; grows to the largest frame seen, never shrinks. */
  #scan = new Uint8Array(INITIAL_SCAN_BYTES);
  /** With `lendAccessUnits`: the memory every frame is written into. */
  readonly #output: ReusedBuffer | undefined;

  /** Creates a depacketiser for one stream; it holds no resources. */
  constructor(options: JpegDepacketizerOptions) {
    this.#codec = options.codec;
    this.#logger = options.logger ?? silentLogger;
    this.#toCaptureTimeUs = options.toCaptureTimeUs ?? ((ts) => Math.round((ts * 1e6) / 90000));
    this.#output = options.lendAccessUnits === true ? new ReusedBuffer() : undefined;
  }

  /** Takes the next packet in sequence order; returns the frame its marker completed, if any. */
  handlePacket(packet: RtpPacket, receivedAtMs: number): AccessUnit[] {
    this.stats.packets++;
    if (this.#state.kind !== 'idle' && this.#state.timestamp !== packet.timestamp) {
      if (this.#state.kind === 'collecting') {
        this.#drop(this.#state.timestamp, 'timestamp changed before the marker');
      }
      this.#state = IDLE;
    }
    let units: AccessUnit[] = [];
    try {
      units = this.#take(packet, receivedAtMs);
    } catch (err) {
      if (!isMediaError(err, 'malformed-payload')) {
        throw err;
      }
      this.#skip(JpegSkipReason.malformed);
      this.#abandon(packet.timestamp, err.message);
    }
    if (packet.marker && this.#state.kind === 'discarding') {
      this.#state = IDLE;
    }
    return units;
  }

  /** Packets were lost: the frame in progress, if any, is dropped. */
  handleLoss(): void {
    if (this.#state.kind === 'collecting') {
      this.#abandon(this.#state.timestamp, 'packet loss');
    }
  }

  /** Forgets the frame in progress; `hard` also forgets cached quantisation tables and headers. */
  reset(hard = false): void {
    this.#state = IDLE;
    if (hard) {
      this.#computedTables.clear();
      this.#inBandTables.clear();
      this.#headers.clear();
    }
  }

  #take(packet: RtpPacket, receivedAtMs: number): AccessUnit[] {
    const payload = packet.payload;
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    const main = rtpJpegMainHeader.decode(view, 0);
    let at = main.bytes;
    const state = this.#state;
    if (state.kind === 'collecting') {
      checkSameFrame(state.frame.main, main.value);
    }
    if (!isSupportedType(main.value.type)) {
      this.#skipUnsupported(main.value.type);
      return [];
    }
    let restartInterval: number | undefined;
    if (main.value.type >= 64) {
      const restart = restartMarkerHeader.decode(view, at);
      at += restart.bytes;
      restartInterval = restart.value.interval;
      if (state.kind === 'collecting' && state.frame.restartInterval !== restartInterval) {
        throw new MediaError('malformed-payload', 'restart interval changed within a frame');
      }
    }
    if (state.kind === 'discarding') {
      return [];
    }
    const offset = main.value.fragmentOffset;
    let frame: Frame;
    if (state.kind === 'collecting') {
      frame = state.frame;
      if (offset === 0 || offset !== frame.size) {
        this.#abandon(packet.timestamp, `fragment at ${offset} after ${frame.size} bytes`);
        return [];
      }
    } else if (offset !== 0) {
      this.#abandon(packet.timestamp, 'first fragment lost');
      return [];
    } else {
      const started = this.#startFrame(packet.timestamp, main.value, restartInterval, view, at);
      if (started === undefined) {
        return [];
      }
      frame = started.frame;
      at += started.bytes;
      this.#state = { kind: 'collecting', timestamp: packet.timestamp, frame };
    }
    if (at < payload.length) {
      this.#append(frame, payload.subarray(at));
    }
    if (!packet.marker) {
      return [];
    }
    if (frame.size === 0) {
      throw new MediaError('malformed-payload', 'frame without scan data');
    }
    this.#state = IDLE;
    return [this.#emit(frame, receivedAtMs)];
  }

  /** Validates the first packet's headers and finds the frame's JPEG headers; undefined when dropped. */
  #startFrame(
    timestamp: number,
    main: RtpJpegMainHeader,
    restartInterval: number | undefined,
    view: DataView,
    at: number,
  ): { frame: Frame; bytes: number } | undefined {
    if (main.width === 0 || main.height === 0) {
      throw new MediaError('malformed-payload', `picture of ${main.width}×${main.height} pixels`);
    }
    let tables: TableSet | undefined;
    let bytes = 0;
    let inBandTables = false;
    if (main.q < Q_IN_BAND_MIN) {
      tables = this.#computed(main.q);
    } else {
      const quant = quantTableHeader.decode(view, at);
      bytes = quant.bytes;
      if (quant.value.data.length === 0) {
        if (main.q === Q_DYNAMIC) {
          throw new MediaError('malformed-payload', 'Q 255 without quantisation tables');
        }
        tables = this.#inBandTables.get(main.q);
        if (tables === undefined) {
          this.#skip(JpegSkipReason.missingTables);
          this.#abandon(timestamp, `no tables received yet for Q ${main.q}`);
          return undefined;
        }
      } else {
        tables = this.#received(main.q, quant.value);
        inBandTables = true;
      }
    }
    const sampling: JpegSampling = (main.type & 1) === 1 ? '4:2:0' : '4:2:2';
    const key = `${sampling}/${main.width}/${main.height}/${restartInterval ?? '-'}/${tables.id}`;
    let header = this.#headers.get(key);
    if (header === undefined) {
      header = jpegHeader.encode({
        sampling,
        width: main.width,
        height: main.height,
        restartInterval,
        lumaTable: tables.luma,
        chromaTable: tables.chroma,
      });
      if (this.#headers.size >= MAX_CACHED_HEADERS) {
        this.#headers.clear();
      }
      this.#headers.set(key, header);
    }
    return { frame: { timestamp, main, restartInterval, header, inBandTables, size: 0 }, bytes };
  }

  #computed(q: number): TableSet {
    if (q < MIN_COMPUTED_Q || q > MAX_COMPUTED_Q) {
      throw new MediaError('malformed-payload', `reserved Q ${q}`);
    }
    let tables = this.#computedTables.get(q);
    if (tables === undefined) {
      const { luma, chroma } = makeQuantTables(q);
      tables = {
        id: this.#nextTableId++,
        luma: { precision: 0, entries: luma },
        chroma: { precision: 0, entries: chroma },
      };
      this.#computedTables.set(q, tables);
    }
    return tables;
  }

  /**
   * Tables sent in-band: table 0 (luma) then table 1 (chroma). A lone table 0 serves both, as
   * FFmpeg sends when its encoder used a single table for all components.
   */
  #received(q: number, header: QuantTableHeader): TableSet {
    const lumaBytes = (header.precision & 1) === 1 ? 128 : 64;
    const chromaBytes = (header.precision & 2) === 2 ? 128 : 64;
    const data = header.data;
    if (data.length !== lumaBytes && data.length !== lumaBytes + chromaBytes) {
      throw new MediaError(
        'malformed-payload',
        `${data.length} bytes of quantisation tables for precision ${header.precision}`,
      );
    }
    const previous = this.#inBandTables.get(q);
    const luma: QuantTable = { precision: lumaBytes === 128 ? 1 : 0, entries: data.subarray(0, lumaBytes) };
    const chroma: QuantTable =
      data.length === lumaBytes
        ? luma
        : { precision: chromaBytes === 128 ? 1 : 0, entries: data.subarray(lumaBytes) };
    if (previous !== undefined && sameTable(previous.luma, luma) && sameTable(previous.chroma, chroma)) {
      return previous;
    }
    const copiedLuma: QuantTable = { precision: luma.precision, entries: luma.entries.slice() };
    const tables: TableSet = {
      id: this.#nextTableId++,
      luma: copiedLuma,
      chroma: chroma === luma ? copiedLuma : { precision: chroma.precision, entries: chroma.entries.slice() },
    };
    this.#inBandTables.set(q, tables);
    return tables;
  }

  /** Copies scan bytes to the end of the frame's, growing the assembly buffer when they do not fit. */
  #append(frame: Frame, bytes: Uint8Array): void {
    const end = frame.size + bytes.length;
    if (end > this.#scan.length) {
      const grown = new Uint8Array(Math.max(end, this.#scan.length * 2));
      grown.set(this.#scan.subarray(0, frame.size));
      this.#scan = grown;
    }
    this.#scan.set(bytes, frame.size);
    frame.size = end;
  }

  #emit(frame: Frame, receivedAtMs: number): AccessUnit {
    const scan = this.#scan.subarray(0, frame.size);
    const appendEoi = !endsWithEoi(scan);
    const size = frame.header.length + frame.size + (appendEoi ? JPEG_EOI.length : 0);
    const data = this.#output?.take(size) ?? new Uint8Array(size);
    data.set(frame.header, 0);
    data.set(scan, frame.header.length);
    const at = frame.header.length + frame.size;
    if (appendEoi) {
      data.set(JPEG_EOI, at);
    }
    this.stats.accessUnits++;
    this.stats.keyframes++;
    return {
      codec: this.#codec,
      data,
      rtpTimestamp: frame.timestamp,
      captureTimeUs: this.#toCaptureTimeUs(frame.timestamp),
      keyframe: true,
      receivedAtMs,
      details: { nalTypes: NO_NAL_TYPES, slices: 1, bSlice: false, inBandParameterSets: frame.inBandTables },
    };
  }

  /** The frame of `timestamp` will not be emitted: count it once and ignore its remaining packets. */
  #abandon(timestamp: number, reason: string): void {
    if (this.#state.kind === 'discarding' && this.#state.timestamp === timestamp) {
      return;
    }
    this.#drop(timestamp, reason);
    this.#state = { kind: 'discarding', timestamp };
  }

  #drop(timestamp: number, reason: string): void {
    this.stats.droppedAccessUnits++;
    this.#logger.debug({ rtpTimestamp: timestamp, reason }, 'dropped Motion JPEG frame');
  }

  #skip(reason: JpegSkipReason): void {
    this.stats.skipped[reason] = (this.stats.skipped[reason] ?? 0) + 1;
  }

  #skipUnsupported(type: number): void {
    this.#skip(JpegSkipReason.unsupportedType);
    if (!this.#warnedTypes.has(type)) {
      this.#warnedTypes.add(type);
      this.#logger.warn({ type }, 'skipping RTP/JPEG payloads of a type RFC 2435 does not define');
    }
  }
}

function isSupportedType(type: number): boolean {
  return type === 0 || type === 1 || type === 64 || type === 65;
}

/** RFC 2435: all main header fields but the fragment offset are the same in every packet of a frame. */
function checkSameFrame(first: RtpJpegMainHeader, next: RtpJpegMainHeader): void {
  if (
    first.typeSpecific !== next.typeSpecific ||
    first.type !== next.type ||
    first.q !== next.q ||
    first.width !== next.width ||
    first.height !== next.height
  ) {
    throw new MediaError('malformed-payload', 'main JPEG header changed within a frame');
  }
}

function sameTable(a: QuantTable, b: QuantTable): boolean {
  if (a.precision !== b.precision || a.entries.length !== b.entries.length) {
    return false;
  }
  for (let i = 0; i < a.entries.length; i++) {
    if (a.entries[i] !== b.entries[i]) {
      return false;
    }
  }
  return true;
}

/** Whether the scan data already ends with the EOI marker (FF D9). */
function endsWithEoi(scan: Uint8Array): boolean {
  return scan.length >= 2 && scan[scan.length - 2] === 0xff && scan[scan.length - 1] === JPEG_EOI[1];
}
