/**
 * The fixed tables RTP/JPEG (RFC 2435) relies on: the example quantisation tables of the JPEG
 * standard (ITU-T T.81 Annex K.1), the Q-factor scaling of RFC 2435 Appendix A, and the typical
 * Huffman tables of Annex K.3 that every type 0/1 stream is coded with.
 */

/**
 * For each position of the zig-zag scan, the index of that coefficient in row-major order.
 * DQT segments and the RTP quantisation table header both list table entries in this order.
 */
const ZIGZAG_TO_NATURAL: readonly number[] = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7,
  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46,
  53, 60, 61, 54, 47, 55, 62, 63,
];

/** Luminance quantisation table of T.81 Table K.1, in row-major order. */
export const STANDARD_LUMA_QUANTIZER: readonly number[] = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22,
  29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103,
  121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];

/** Chrominance quantisation table of T.81 Table K.2, in row-major order. */
export const STANDARD_CHROMA_QUANTIZER: readonly number[] = [
  17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99,
  99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
  99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
];

/** Lowest Q value (RFC 2435 main header) that selects tables computed by {@link makeQuantTables}. */
export const MIN_COMPUTED_Q = 1;
/** Highest Q value that selects computed tables; 0 and 100..127 are reserved. */
export const MAX_COMPUTED_Q = 99;

/** The luminance and chrominance quantisation tables of one Q value, 64 entries each in zig-zag order. */
export interface ComputedQuantTables {
  readonly luma: Uint8Array;
  readonly chroma: Uint8Array;
}

/**
 * The quantisation tables RFC 2435 Appendix A derives from a Q value of 1..99: the standard tables
 * scaled by `5000 / Q` (Q < 50) or `200 - 2Q` percent, rounded, clamped to 1..255, in zig-zag order.
 * Throws `TypeError` for a Q outside 1..99 (the caller validates the header first).
 */
export function makeQuantTables(q: number): ComputedQuantTables {
  if (!Number.isInteger(q) || q < MIN_COMPUTED_Q || q > MAX_COMPUTED_Q) {
    throw new TypeError(`Q = ${q} is outside ${MIN_COMPUTED_Q}..${MAX_COMPUTED_Q}`);
  }
  const percent = q < 50 ? Math.floor(5000 / q) : 200 - 2 * q;
  return {
    luma: scaleTable(STANDARD_LUMA_QUANTIZER, percent),
    chroma: scaleTable(STANDARD_CHROMA_QUANTIZER, percent),
  };
}

function scaleTable(natural: readonly number[], percent: number): Uint8Array {
  const table = new Uint8Array(64);
  for (let i = 0; i < 64; i++) {
    const scaled = Math.floor((natural[ZIGZAG_TO_NATURAL[i]!]! * percent + 50) / 100);
    table[i] = Math.min(Math.max(scaled, 1), 255);
  }
  return table;
}

/** One Huffman table as a DHT segment carries it. */
export interface HuffmanTable {
  /** 0 for a DC table, 1 for an AC table (Tc). */
  readonly tableClass: 0 | 1;
  /** Destination identifier the scan refers to (Th): 0 for luminance, 1 for chrominance. */
  readonly id: 0 | 1;
  /** Number of codes of each length 1..16 (BITS). */
  readonly counts: readonly number[];
  /** Symbols in order of increasing code length (HUFFVAL). */
  readonly symbols: readonly number[];
}

/** Luminance DC table, T.81 Table K.3. */
const LUMA_DC: HuffmanTable = {
  tableClass: 0,
  id: 0,
  counts: [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
  symbols: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
};

/** Chrominance DC table, T.81 Table K.4. */
const CHROMA_DC: HuffmanTable = {
  tableClass: 0,
  id: 1,
  counts: [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
  symbols: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
};

/** Luminance AC table, T.81 Table K.5. */
const LUMA_AC: HuffmanTable = {
  tableClass: 1,
  id: 0,
  counts: [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d],
  symbols: [
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22,
    0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33,
    0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x34,
    0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55,
    0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76,
    0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96,
    0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5,
    0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4,
    0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1,
    0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
  ],
};

/** Chrominance AC table, T.81 Table K.6. */
const CHROMA_AC: HuffmanTable = {
  tableClass: 1,
  id: 1,
  counts: [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77],
  symbols: [
    0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13,
    0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15, 0x62,
    0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26, 0x27, 0x28, 0x29,
    0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54,
    0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75,
    0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94,
    0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3,
    0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2,
    0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea,
    0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
  ],
};

/**
 * The four Huffman tables of T.81 Annex K.3 in the order the DHT segments carry them. RTP/JPEG
 * types 0 and 1 (and 64, 65) are always coded with these, so they are never sent on the wire.
 */
export const STANDARD_HUFFMAN_TABLES: readonly HuffmanTable[] = [LUMA_DC, LUMA_AC, CHROMA_DC, CHROMA_AC];
