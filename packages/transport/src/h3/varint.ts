import { TransportError } from '../errors.js';

/**
 * QUIC variable-length integers (RFC 9000 §16), used for every type, length and identifier in
 * HTTP/3, WebTransport and capsules.
 *
 * ```text
 *  first byte
 * +-+-+-+-+-+-+-+-+
 * |L L|  value... |   L = 00: 1 byte,  6-bit value  (0 .. 63)
 * +-+-+-+-+-+-+-+-+   L = 01: 2 bytes, 14-bit value (0 .. 16383)
 *                     L = 10: 4 bytes, 30-bit value (0 .. 2^30-1)
 *                     L = 11: 8 bytes, 62-bit value (0 .. 2^62-1)
 * ```
 *
 * The two high bits of the first byte give the length; the rest of the bytes, big-endian, give the
 * value. A value may be sent in more bytes than it needs (`0x40 0x25` is 37), and readers accept
 * that.
 */
export const MAX_VARINT = (1n << 62n) - 1n;

/** Largest value {@link readVarint} returns: beyond it a `number` loses integer precision. */
export const MAX_SAFE_VARINT = Number.MAX_SAFE_INTEGER;

const TWO_32 = 0x1_0000_0000;

/** Bytes the varint starting with `firstByte` occupies: 1, 2, 4 or 8. */
export function varintLengthOfFirstByte(firstByte: number): 1 | 2 | 4 | 8 {
  switch (firstByte >> 6) {
    case 0:
      return 1;
    case 1:
      return 2;
    case 2:
      return 4;
    default:
      return 8;
  }
}

/** Bytes the shortest encoding of `value` takes. Throws `TypeError` for a non-integer or out-of-range value. */
export function varintLength(value: number): 1 | 2 | 4 | 8 {
  checkNumber(value);
  if (value < 0x40) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x4000_0000) return 4;
  return 8;
}

/** Bytes the shortest encoding of the `bigint` `value` takes. Throws `TypeError` when out of range. */
export function varintLengthBig(value: bigint): 1 | 2 | 4 | 8 {
  if (value < 0n || value > MAX_VARINT) {
    throw new TypeError(`varint value ${value} is outside 0..2^62-1`);
  }
  if (value < 0x40n) return 1;
  if (value < 0x4000n) return 2;
  if (value < 0x4000_0000n) return 4;
  return 8;
}

/**
 * Writes `value` in its shortest encoding at `offset` and returns the bytes written. Throws
 * `TypeError` for an out-of-range value or when the view has no room: the caller sized the buffer.
 */
export function writeVarint(view: DataView, offset: number, value: number): number {
  const length = varintLength(value);
  checkRoom(view, offset, length);
  switch (length) {
    case 1:
      view.setUint8(offset, value);
      break;
    case 2:
      view.setUint16(offset, 0x4000 | value);
      break;
    case 4:
      view.setUint32(offset, (0x8000_0000 | value) >>> 0);
      break;
    default:
      view.setUint32(offset, (0xc000_0000 | Math.floor(value / TWO_32)) >>> 0);
      view.setUint32(offset + 4, value % TWO_32);
  }
  return length;
}

/** Writes the `bigint` `value` in its shortest encoding at `offset`; returns the bytes written. */
export function writeVarintBig(view: DataView, offset: number, value: bigint): number {
  const length = varintLengthBig(value);
  if (length < 8) return writeVarint(view, offset, Number(value));
  checkRoom(view, offset, 8);
  view.setBigUint64(offset, value | (3n << 62n));
  return 8;
}

/** The shortest encoding of `value` as a new byte array. */
export function encodeVarint(value: number): Uint8Array {
  const out = new Uint8Array(varintLength(value));
  writeVarint(new DataView(out.buffer), 0, value);
  return out;
}

/**
 * Reads the varint at `offset`. Throws {@link TransportError} `varint-error` when the bytes end
 * before the varint does or when the value exceeds 2^53-1 (use {@link readVarintBig} for those).
 */
export function readVarint(bytes: Uint8Array, offset = 0): { value: number; bytes: number } {
  const length = checkAvailable(bytes, offset);
  const first = bytes[offset]! & 0x3f;
  switch (length) {
    case 1:
      return { value: first, bytes: 1 };
    case 2:
      return { value: (first << 8) | bytes[offset + 1]!, bytes: 2 };
    case 4:
      return { value: readU32(bytes, offset, first), bytes: 4 };
    default: {
      const high = readU32(bytes, offset, first);
      if (high > 0x1f_ffff) {
        throw new TransportError('varint-error', `varint at offset ${offset} exceeds 2^53-1`);
      }
      return { value: high * TWO_32 + readU32(bytes, offset + 4, bytes[offset + 4]!), bytes: 8 };
    }
  }
}

/** Reads the varint at `offset` as a `bigint` (the full 62-bit range). Throws `varint-error` when truncated. */
export function readVarintBig(bytes: Uint8Array, offset = 0): { value: bigint; bytes: number } {
  const length = checkAvailable(bytes, offset);
  if (length < 8) {
    const { value } = readVarint(bytes, offset);
    return { value: BigInt(value), bytes: length };
  }
  const high = readU32(bytes, offset, bytes[offset]! & 0x3f);
  const low = readU32(bytes, offset + 4, bytes[offset + 4]!);
  return { value: (BigInt(high) << 32n) | BigInt(low), bytes: 8 };
}

/**
 * Reads a varint used as an identifier (frame, stream, setting or capsule type). Values beyond
 * 2^53-1 come back as `Number.MAX_SAFE_INTEGER`: no identifier we act on is that large, and reserved
 * (GREASE) identifiers may be, so they must read as "unknown" instead of failing.
 */
export function readVarintId(bytes: Uint8Array, offset = 0): { value: number; bytes: number } {
  const length = checkAvailable(bytes, offset);
  if (length === 8 && readU32(bytes, offset, bytes[offset]! & 0x3f) > 0x1f_ffff) {
    return { value: MAX_SAFE_VARINT, bytes: 8 };
  }
  return readVarint(bytes, offset);
}

/**
 * True for identifiers reserved to exercise the "ignore unknown" rule: `0x1f * N + 0x21` (RFC 9114
 * §7.2.8 frame types, §7.2.4.1 settings, §6.2.3 stream types; RFC 9297 capsule types).
 */
export function isReservedId(id: number): boolean {
  return id >= 0x21 && (id - 0x21) % 0x1f === 0;
}

function readU32(bytes: Uint8Array, offset: number, first: number): number {
  return first * 0x100_0000 + ((bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!);
}

function checkAvailable(bytes: Uint8Array, offset: number): 1 | 2 | 4 | 8 {
  if (offset < 0 || offset >= bytes.length) {
    throw new TransportError('varint-error', `varint expected at offset ${offset} of ${bytes.length} bytes`);
  }
  const length = varintLengthOfFirstByte(bytes[offset]!);
  if (bytes.length - offset < length) {
    throw new TransportError(
      'varint-error',
      `varint at offset ${offset} needs ${length} bytes, ${bytes.length - offset} left`,
    );
  }
  return length;
}

function checkNumber(value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`varint value ${value} is not an integer in 0..2^53-1`);
  }
}

function checkRoom(view: DataView, offset: number, length: number): void {
  if (!Number.isInteger(offset) || offset < 0 || offset + length > view.byteLength) {
    throw new TypeError(`varint of ${length} bytes does not fit at offset ${offset} of ${view.byteLength}`);
  }
}
