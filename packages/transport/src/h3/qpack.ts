import { TransportError } from '../errors.js';
import { huffmanDecode } from './huffman.js';
import { QPACK_STATIC_TABLE } from './static-table.js';

/** One field line: lowercase name and value, each one byte per character (Latin-1). */
export type HeaderField = readonly [name: string, value: string];

/** An ordered field section, as it appears on the wire. */
export type HeaderList = readonly HeaderField[];

/**
 * Default limit on a decoded field section: the sum over its lines of name length + value length +
 * 32 (the size RFC 9114 §4.2.2 counts against SETTINGS_MAX_FIELD_SECTION_SIZE).
 */
export const DEFAULT_MAX_FIELD_SECTION_SIZE = 16 * 1024;

/** Per-line overhead in the field section size (RFC 9114 §4.2.2, RFC 7541 §4.1). */
const FIELD_LINE_OVERHEAD = 32;

/** Options of {@link decodeHeaders}. */
export interface DecodeHeadersOptions {
  /** Largest accepted field section size; default {@link DEFAULT_MAX_FIELD_SECTION_SIZE}. */
  readonly maxFieldSectionSize?: number;
}

/**
 * Prefixed integer (RFC 7541 §5.1, used by RFC 9204 §4.1.1): the low N bits of the first byte
 * hold the value when it is below 2^N - 1; otherwise they are all ones and the rest follows in
 * 7-bit groups, least significant first, the top bit of each byte saying "more follows".
 *
 * ```text
 *   0   1   2   3   4   5   6   7
 * +---+---+---+---+---+---+---+---+
 * | ? | ? | ? | 1   1   1   1   1 |   N = 5, value >= 31
 * +---+---+---+-------------------+
 * | 1 |    value - 31 (low 7)     |
 * +---+---------------------------+
 * | 0 |    next 7 bits            |
 * +---+---------------------------+
 * ```
 *
 * Values above 2^35 are refused: no index or length this decoder accepts comes near that.
 */
export function readPrefixedInt(
  bytes: Uint8Array,
  offset: number,
  prefixBits: number,
  end = bytes.length,
): { value: number; bytes: number } {
  if (offset >= end) {
    throw new TransportError('qpack-error', `integer expected at offset ${offset} of a ${end}-byte section`);
  }
  const max = (1 << prefixBits) - 1;
  let value = bytes[offset]! & max;
  if (value < max) return { value, bytes: 1 };
  let at = offset + 1;
  for (let shift = 0; ; shift += 7) {
    if (at >= end) throw new TransportError('qpack-error', `integer at offset ${offset} is truncated`);
    if (shift > 28) throw new TransportError('qpack-error', `integer at offset ${offset} is too large`);
    const byte = bytes[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return { value, bytes: at - offset };
  }
}

/** Bytes {@link writePrefixedInt} takes for `value` with an N-bit prefix. */
export function prefixedIntLength(value: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) return 1;
  let rest = value - max;
  let length = 2;
  while (rest >= 0x80) {
    rest = Math.floor(rest / 0x80);
    length++;
  }
  return length;
}

/**
 * Writes `value` with an N-bit prefix at `offset`; `flags` fills the first byte's bits above the
 * prefix. Returns the bytes written.
 */
export function writePrefixedInt(
  view: DataView,
  offset: number,
  prefixBits: number,
  flags: number,
  value: number,
): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`prefixed integer ${value} is not a non-negative integer`);
  }
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    view.setUint8(offset, flags | value);
    return 1;
  }
  view.setUint8(offset, flags | max);
  let rest = value - max;
  let at = offset + 1;
  while (rest >= 0x80) {
    view.setUint8(at++, 0x80 | (rest % 0x80));
    rest = Math.floor(rest / 0x80);
  }
  view.setUint8(at++, rest);
  return at - offset;
}

/**
 * Decodes an encoded field section (the payload of a HEADERS frame) under the settings we
 * advertise: dynamic table capacity 0, so only the static table and literals may appear.
 *
 * ```text
 * Encoded field section prefix (RFC 9204 §4.5.1)
 *   0   1   2   3   4   5   6   7
 * +---+---+---+---+---+---+---+---+
 * |   Required Insert Count (8+)  |   must be 0 here
 * +---+---------------------------+
 * | S |      Delta Base (7+)      |   S must be 0 (Base = Delta Base, unused)
 * +---+---------------------------+
 *
 * Then field lines, told apart by their leading bits:
 *   1 T index(6+)                    indexed field line; T=1 static, T=0 dynamic (refused)
 *   0 1 N T name-index(4+) | value   literal with name reference; T=0 dynamic (refused)
 *   0 0 1 N H name-length(3+) name | value
 *                                    literal with literal name
 *   0 0 0 1 index(4+)                indexed, post-Base (dynamic, refused)
 *   0 0 0 0 N name-index(3+)         literal with post-Base name reference (dynamic, refused)
 *
 * A value is  | H | length(7+) | bytes |, H=1 meaning Huffman-coded (RFC 7541 Appendix B).
 * ```
 *
 * N ("never index") is accepted and has no effect: nothing is indexed here. Throws
 * {@link TransportError} `qpack-error` for every malformed or refused input, and when the section
 * exceeds `maxFieldSectionSize`.
 */
export function decodeHeaders(block: Uint8Array, options: DecodeHeadersOptions = {}): HeaderField[] {
  const maxSize = options.maxFieldSectionSize ?? DEFAULT_MAX_FIELD_SECTION_SIZE;
  const end = block.length;
  const insertCount = readPrefixedInt(block, 0, 8, end);
  if (insertCount.value !== 0) {
    throw new TransportError(
      'qpack-error',
      `field section requires ${insertCount.value} dynamic table entries, but the table capacity is 0`,
    );
  }
  let offset = insertCount.bytes;
  if (offset >= end) throw new TransportError('qpack-error', 'field section prefix is truncated');
  const signed = (block[offset]! & 0x80) !== 0;
  const deltaBase = readPrefixedInt(block, offset, 7, end);
  if (signed) {
    throw new TransportError('qpack-error', 'negative Delta Base with Required Insert Count 0');
  }
  offset += deltaBase.bytes;

  const fields: HeaderField[] = [];
  let budget = maxSize;
  while (offset < end) {
    const first = block[offset]!;
    if (budget < FIELD_LINE_OVERHEAD) throw sizeExceeded(maxSize);
    budget -= FIELD_LINE_OVERHEAD;
    let name: string;
    let value: string;
    if ((first & 0x80) !== 0) {
      // Indexed field line.
      const index = readPrefixedInt(block, offset, 6, end);
      const entry = staticEntry(index.value, (first & 0x40) !== 0, offset);
      offset += index.bytes;
      [name, value] = entry;
      if (name.length + value.length > budget) throw sizeExceeded(maxSize);
    } else if ((first & 0x40) !== 0) {
      // Literal field line with name reference.
      const index = readPrefixedInt(block, offset, 4, end);
      name = staticEntry(index.value, (first & 0x10) !== 0, offset)[0];
      offset += index.bytes;
      if (name.length > budget) throw sizeExceeded(maxSize);
      const literal = readStringLiteral(block, offset, 7, end, budget - name.length, maxSize);
      value = literal.value;
      offset += literal.bytes;
    } else if ((first & 0x20) !== 0) {
      // Literal field line with literal name.
      const nameLiteral = readStringLiteral(block, offset, 3, end, budget, maxSize);
      name = nameLiteral.value;
      offset += nameLiteral.bytes;
      const literal = readStringLiteral(block, offset, 7, end, budget - name.length, maxSize);
      value = literal.value;
      offset += literal.bytes;
    } else {
      throw new TransportError(
        'qpack-error',
        `post-Base ${(first & 0x10) !== 0 ? 'indexed field line' : 'name reference'} at offset ${offset}, but the dynamic table capacity is 0`,
      );
    }
    budget -= name.length + value.length;
    fields.push([name, value]);
  }
  return fields;
}

function staticEntry(index: number, isStatic: boolean, offset: number): HeaderField {
  if (!isStatic) {
    throw new TransportError(
      'qpack-error',
      `dynamic table reference at offset ${offset}, but the dynamic table capacity is 0`,
    );
  }
  const entry = QPACK_STATIC_TABLE[index];
  if (entry === undefined) {
    throw new TransportError(
      'qpack-error',
      `static table index ${index} at offset ${offset} is beyond the table's ${QPACK_STATIC_TABLE.length} entries`,
    );
  }
  return entry;
}

/**
 * String literal (RFC 9204 §4.1.2): an H bit just above an N-bit length prefix, then `length`
 * bytes, Huffman-coded when H is set. The length is checked against what is left of the section,
 * and the decoded length against `budget`, before anything is allocated.
 */
function readStringLiteral(
  block: Uint8Array,
  offset: number,
  prefixBits: number,
  end: number,
  budget: number,
  maxSize: number,
): { value: string; bytes: number } {
  const huffman = (block[offset]! & (1 << prefixBits)) !== 0;
  const length = readPrefixedInt(block, offset, prefixBits, end);
  const start = offset + length.bytes;
  if (length.value > end - start) {
    throw new TransportError(
      'qpack-error',
      `string of ${length.value} bytes at offset ${offset} runs past the section's end (${end - start} left)`,
    );
  }
  const raw = block.subarray(start, start + length.value);
  let bytes: Uint8Array;
  if (huffman) {
    // Every Huffman code is at most 30 bits, so even the shortest decoding has floor(8n/30) bytes.
    if (Math.floor((raw.length * 8) / 30) > budget) throw sizeExceeded(maxSize);
    try {
      bytes = huffmanDecode(raw, budget);
    } catch (error) {
      throw new TransportError('qpack-error', `string at offset ${offset}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  } else {
    if (raw.length > budget) throw sizeExceeded(maxSize);
    bytes = raw;
  }
  return { value: latin1Decode(bytes), bytes: length.bytes + length.value };
}

function sizeExceeded(maxSize: number): TransportError {
  return new TransportError('qpack-error', `field section exceeds the ${maxSize}-byte size limit`);
}

/** Bytes to a string, one character per byte (field values are octets, not UTF-8, in HTTP). */
export function latin1Decode(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 4096) {
    out += String.fromCharCode(...bytes.subarray(i, i + 4096));
  }
  return out;
}

/** A string to bytes, one byte per character; `TypeError` when a character is above U+00FF. */
export function latin1Encode(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0xff)
      throw new TypeError(`character U+${code.toString(16)} in ${JSON.stringify(text)} is not one byte`);
    out[i] = code;
  }
  return out;
}

const EXACT_MATCH = new Map<string, number>();
const NAME_MATCH = new Map<string, number>();
QPACK_STATIC_TABLE.forEach(([name, value], index) => {
  const key = `${name}\0${value}`;
  if (!EXACT_MATCH.has(key)) EXACT_MATCH.set(key, index);
  if (!NAME_MATCH.has(name)) NAME_MATCH.set(name, index);
});

type Line =
  | { readonly kind: 'indexed'; readonly index: number }
  | { readonly kind: 'name-ref'; readonly index: number; readonly value: Uint8Array }
  | { readonly kind: 'literal'; readonly name: Uint8Array; readonly value: Uint8Array };

function planLine([name, value]: HeaderField): Line {
  if (name.length === 0 || /[A-Z]/.test(name)) {
    throw new TypeError(`field name ${JSON.stringify(name)} must be non-empty and lowercase`);
  }
  if (/[\0\r\n]/.test(value)) {
    throw new TypeError(`value of ${name} contains NUL, CR or LF`);
  }
  const exact = EXACT_MATCH.get(`${name}\0${value}`);
  if (exact !== undefined) return { kind: 'indexed', index: exact };
  const nameIndex = NAME_MATCH.get(name);
  if (nameIndex !== undefined) return { kind: 'name-ref', index: nameIndex, value: latin1Encode(value) };
  return { kind: 'literal', name: latin1Encode(name), value: latin1Encode(value) };
}

function lineLength(line: Line): number {
  switch (line.kind) {
    case 'indexed':
      return prefixedIntLength(line.index, 6);
    case 'name-ref':
      return prefixedIntLength(line.index, 4) + prefixedIntLength(line.value.length, 7) + line.value.length;
    case 'literal':
      return (
        prefixedIntLength(line.name.length, 3) +
        line.name.length +
        prefixedIntLength(line.value.length, 7) +
        line.value.length
      );
    default: {
      const unreachable: never = line;
      throw new TypeError(`unknown line ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * Encoder of field sections for our responses, with the shape of every wire type: static table
 * references where a line or its name matches (`:status 200` is index 25), plain literals
 * otherwise, never the dynamic table, never Huffman.
 */
export const fieldSection = {
  /** Bytes the encoded section of `fields` takes. */
  byteLength(fields: HeaderList): number {
    return 2 + fields.reduce((sum, field) => sum + lineLength(planLine(field)), 0);
  },

  /**
   * Writes the encoded section at `offset`; returns the bytes written. `TypeError` for an
   * uppercase or empty name, a value with NUL/CR/LF, or a character above U+00FF.
   */
  encodeInto(view: DataView, offset: number, fields: HeaderList): number {
    // Prefix: Required Insert Count 0, Sign 0, Delta Base 0.
    view.setUint8(offset, 0);
    view.setUint8(offset + 1, 0);
    let at = offset + 2;
    for (const field of fields) {
      const line = planLine(field);
      switch (line.kind) {
        case 'indexed':
          at += writePrefixedInt(view, at, 6, 0xc0, line.index);
          break;
        case 'name-ref':
          at += writePrefixedInt(view, at, 4, 0x50, line.index);
          at += writeBytes(view, at, line.value);
          break;
        case 'literal':
          at += writePrefixedInt(view, at, 3, 0x20, line.name.length);
          new Uint8Array(view.buffer, view.byteOffset + at, line.name.length).set(line.name);
          at += line.name.length;
          at += writeBytes(view, at, line.value);
          break;
        default: {
          const unreachable: never = line;
          throw new TypeError(`unknown line ${JSON.stringify(unreachable)}`);
        }
      }
    }
    return at - offset;
  },

  /** Decodes a section; same as {@link decodeHeaders}, with the bytes consumed (all of them). */
  decode(bytes: Uint8Array, options: DecodeHeadersOptions = {}): { value: HeaderField[]; bytes: number } {
    return { value: decodeHeaders(bytes, options), bytes: bytes.length };
  },
} as const;

function writeBytes(view: DataView, offset: number, bytes: Uint8Array): number {
  const written = writePrefixedInt(view, offset, 7, 0x00, bytes.length);
  new Uint8Array(view.buffer, view.byteOffset + offset + written, bytes.length).set(bytes);
  return written + bytes.length;
}

/** Encodes `fields` as a QPACK field section (the payload of a HEADERS frame). */
export function encodeHeaders(fields: HeaderList): Uint8Array {
  const out = new Uint8Array(fieldSection.byteLength(fields));
  fieldSection.encodeInto(new DataView(out.buffer), 0, fields);
  return out;
}

/**
 * Checks the peer's QPACK encoder stream (RFC 9204 §4.3) under our dynamic table capacity of 0:
 * the only instruction it may carry is Set Dynamic Table Capacity with capacity 0.
 *
 * ```text
 *   0   1   2   3   4   5   6   7
 * +---+---+---+---+---+---+---+---+
 * | 0 | 0 | 1 |   Capacity (5+)   |   Set Dynamic Table Capacity
 * +---+---+---+-------------------+
 *   1 T ...   Insert with Name Reference     (refused)
 *   0 1 ...   Insert with Literal Name       (refused)
 *   0 0 0 ... Duplicate                      (refused)
 * ```
 */
export class QpackEncoderStreamReader {
  #pending: Uint8Array = new Uint8Array(0);

  /** Takes the next stream bytes. Throws {@link TransportError} `qpack-stream-error` on any insertion. */
  push(chunk: Uint8Array): void {
    let bytes = chunk;
    if (this.#pending.length > 0) {
      bytes = new Uint8Array(this.#pending.length + chunk.length);
      bytes.set(this.#pending);
      bytes.set(chunk, this.#pending.length);
    }
    let offset = 0;
    while (offset < bytes.length) {
      const first = bytes[offset]!;
      if ((first & 0xe0) !== 0x20) {
        throw new TransportError(
          'qpack-stream-error',
          `encoder stream instruction 0x${first.toString(16)} inserts into a dynamic table of capacity 0`,
        );
      }
      if (!prefixedIntComplete(bytes, offset, 5)) {
        if (bytes.length - offset > 6) {
          throw new TransportError('qpack-stream-error', 'encoder stream capacity is too large');
        }
        break;
      }
      const capacity = readPrefixedInt(bytes, offset, 5);
      if (capacity.value !== 0) {
        throw new TransportError(
          'qpack-stream-error',
          `encoder stream sets dynamic table capacity ${capacity.value}, above our maximum of 0`,
        );
      }
      offset += capacity.bytes;
    }
    this.#pending = bytes.slice(offset);
  }
}

/** True when the prefixed integer at `offset` ends within `bytes`. */
function prefixedIntComplete(bytes: Uint8Array, offset: number, prefixBits: number): boolean {
  const max = (1 << prefixBits) - 1;
  if ((bytes[offset]! & max) < max) return true;
  for (let at = offset + 1; at < bytes.length; at++) {
    if ((bytes[at]! & 0x80) === 0) return true;
  }
  return false;
}
