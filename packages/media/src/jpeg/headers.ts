import { type HuffmanTable, STANDARD_HUFFMAN_TABLES } from './tables.js';

/** The JPEG marker codes (second byte after `0xFF`) written by {@link jpegHeader}. */
export const JpegMarker = {
  /** Start of image. */
  SOI: 0xd8,
  /** End of image. */
  EOI: 0xd9,
  /** Application segment 0, carrying the JFIF identifier. */
  APP0: 0xe0,
  /** Define quantisation table. */
  DQT: 0xdb,
  /** Start of frame, baseline DCT. */
  SOF0: 0xc0,
  /** Start of frame, extended sequential DCT (needed once a quantisation table has 16-bit entries). */
  SOF1: 0xc1,
  /** Define Huffman table. */
  DHT: 0xc4,
  /** Define restart interval. */
  DRI: 0xdd,
  /** Start of scan. */
  SOS: 0xda,
} as const;

/** The two bytes that end every JPEG file. */
export const JPEG_EOI: Uint8Array = Uint8Array.of(0xff, JpegMarker.EOI);

/** Chroma subsampling of an RTP/JPEG frame: type 0 (and 64) is 4:2:2, type 1 (and 65) is 4:2:0. */
export type JpegSampling = '4:2:2' | '4:2:0';

/** One quantisation table, entries in zig-zag order exactly as a DQT segment lists them. */
export interface QuantTable {
  /** 0: 64 one-byte entries; 1: 64 two-byte big-endian entries (128 bytes). */
  readonly precision: 0 | 1;
  readonly entries: Uint8Array;
}

/** What the headers of one rebuilt frame depend on; equal parameters give equal bytes. */
export interface JpegHeaderParams {
  readonly sampling: JpegSampling;
  /** Picture width in pixels, 1..65535. */
  readonly width: number;
  /** Picture height in pixels, 1..65535. */
  readonly height: number;
  /** MCUs between restart markers; a DRI segment is written when this is defined. */
  readonly restartInterval?: number | undefined;
  /** Table 0, used by the luminance component. */
  readonly lumaTable: QuantTable;
  /** Table 1, used by both chrominance components. */
  readonly chromaTable: QuantTable;
}

/** APP0 segment: identifier `JFIF\0`, version 1.01, no density units, aspect 1:1, no thumbnail. */
const APP0_BODY: readonly number[] = [
  0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
];

/**
 * SOS segment body: three components (Y uses DC/AC tables 0, Cb and Cr tables 1), spectral
 * selection 0..63 and no successive approximation, as for every sequential scan.
 */
const SOS_BODY: readonly number[] = [0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00];

/** Marker (2) plus length field (2) in front of every segment body. */
const SEGMENT_OVERHEAD = 4;
const SOF_BODY_BYTES = 15;
const DRI_BODY_BYTES = 2;

/**
 * Writer of the headers RFC 2435 leaves out: everything of a baseline JPEG (JFIF) file before the
 * entropy-coded scan data, that is SOI, APP0, DQT × 2, SOF0, DRI when restart markers are used,
 * DHT × 4 (the Annex K.3 tables) and SOS. The file is then the header, the scan data and
 * {@link JPEG_EOI}.
 */
export const jpegHeader = {
  /** Bytes {@link jpegHeader.encodeInto} writes for `params`. */
  byteLength(params: JpegHeaderParams): number {
    let length = 2 + SEGMENT_OVERHEAD + APP0_BODY.length;
    length += dqtLength(params.lumaTable) + dqtLength(params.chromaTable);
    length += SEGMENT_OVERHEAD + SOF_BODY_BYTES;
    if (params.restartInterval !== undefined) {
      length += SEGMENT_OVERHEAD + DRI_BODY_BYTES;
    }
    for (const table of STANDARD_HUFFMAN_TABLES) {
      length += dhtLength(table);
    }
    return length + SEGMENT_OVERHEAD + SOS_BODY.length;
  },

  /** Writes the headers at `offset` and returns the bytes written; `TypeError` for invalid parameters. */
  encodeInto(view: DataView, offset: number, params: JpegHeaderParams): number {
    checkParams(params);
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    if (offset < 0 || offset + jpegHeader.byteLength(params) > bytes.length) {
      throw new TypeError(`${jpegHeader.byteLength(params)} header bytes do not fit at offset ${offset}`);
    }
    let at = offset;
    at = writeMarker(bytes, at, JpegMarker.SOI);
    at = writeSegment(bytes, at, JpegMarker.APP0, APP0_BODY);
    at = writeDqt(bytes, at, 0, params.lumaTable);
    at = writeDqt(bytes, at, 1, params.chromaTable);
    at = writeSof(bytes, at, params);
    if (params.restartInterval !== undefined) {
      at = writeSegment(bytes, at, JpegMarker.DRI, [
        params.restartInterval >> 8,
        params.restartInterval & 0xff,
      ]);
    }
    for (const table of STANDARD_HUFFMAN_TABLES) {
      at = writeDht(bytes, at, table);
    }
    at = writeSegment(bytes, at, JpegMarker.SOS, SOS_BODY);
    return at - offset;
  },

  /** The headers for `params` in a new array of exactly {@link jpegHeader.byteLength} bytes. */
  encode(params: JpegHeaderParams): Uint8Array {
    const bytes = new Uint8Array(jpegHeader.byteLength(params));
    jpegHeader.encodeInto(new DataView(bytes.buffer), 0, params);
    return bytes;
  },
} as const;

function checkParams(params: JpegHeaderParams): void {
  for (const [name, value] of [
    ['width', params.width],
    ['height', params.height],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 0xffff) {
      throw new TypeError(`${name} = ${value} is outside 1..65535`);
    }
  }
  const interval = params.restartInterval;
  if (interval !== undefined && (!Number.isInteger(interval) || interval < 0 || interval > 0xffff)) {
    throw new TypeError(`restartInterval = ${interval} is outside 0..65535`);
  }
  for (const [name, table] of [
    ['lumaTable', params.lumaTable],
    ['chromaTable', params.chromaTable],
  ] as const) {
    if (table.entries.length !== tableBytes(table)) {
      throw new TypeError(
        `${name} has ${table.entries.length} bytes; precision ${table.precision} needs ${tableBytes(table)}`,
      );
    }
  }
}

function tableBytes(table: QuantTable): number {
  return table.precision === 1 ? 128 : 64;
}

function dqtLength(table: QuantTable): number {
  return SEGMENT_OVERHEAD + 1 + tableBytes(table);
}

function dhtLength(table: HuffmanTable): number {
  return SEGMENT_OVERHEAD + 1 + table.counts.length + table.symbols.length;
}

function writeMarker(bytes: Uint8Array, at: number, marker: number): number {
  bytes[at] = 0xff;
  bytes[at + 1] = marker;
  return at + 2;
}

/** Writes marker and length field (which counts itself but not the marker); returns where the body starts. */
function writeSegmentStart(bytes: Uint8Array, at: number, marker: number, bodyLength: number): number {
  writeMarker(bytes, at, marker);
  const length = bodyLength + 2;
  bytes[at + 2] = length >> 8;
  bytes[at + 3] = length & 0xff;
  return at + SEGMENT_OVERHEAD;
}

function writeSegment(bytes: Uint8Array, at: number, marker: number, body: readonly number[]): number {
  const start = writeSegmentStart(bytes, at, marker, body.length);
  bytes.set(body, start);
  return start + body.length;
}

/** DQT: Pq (precision) in the high nibble and Tq (destination) in the low one, then the entries. */
function writeDqt(bytes: Uint8Array, at: number, id: 0 | 1, table: QuantTable): number {
  const start = writeSegmentStart(bytes, at, JpegMarker.DQT, 1 + table.entries.length);
  bytes[start] = (table.precision << 4) | id;
  bytes.set(table.entries, start + 1);
  return start + 1 + table.entries.length;
}

/**
 * SOF: 8-bit samples, height, width, then three components as (id, H << 4 | V, table): Y is
 * sampled 2×1 (4:2:2) or 2×2 (4:2:0) against 1×1 for Cb and Cr.
 */
function writeSof(bytes: Uint8Array, at: number, params: JpegHeaderParams): number {
  const extended = params.lumaTable.precision === 1 || params.chromaTable.precision === 1;
  const lumaSampling = params.sampling === '4:2:0' ? 0x22 : 0x21;
  return writeSegment(bytes, at, extended ? JpegMarker.SOF1 : JpegMarker.SOF0, [
    8,
    params.height >> 8,
    params.height & 0xff,
    params.width >> 8,
    params.width & 0xff,
    3,
    1,
    lumaSampling,
    0,
    2,
    0x11,
    1,
    3,
    0x11,
    1,
  ]);
}

/** DHT: Tc (class) in the high nibble and Th (destination) in the low one, BITS, then HUFFVAL. */
function writeDht(bytes: Uint8Array, at: number, table: HuffmanTable): number {
  const bodyLength = 1 + table.counts.length + table.symbols.length;
  const start = writeSegmentStart(bytes, at, JpegMarker.DHT, bodyLength);
  bytes[start] = (table.tableClass << 4) | table.id;
  bytes.set(table.counts, start + 1);
  bytes.set(table.symbols, start + 1 + table.counts.length);
  return start + bodyLength;
}
