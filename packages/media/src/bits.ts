/**
 * Bit-level reading of H.264/H.265 syntax (ITU-T H.264 §7.2, H.265 §7.2): emulation prevention
 * removal and a bounds-checked reader for fixed-width and Exp-Golomb fields.
 */
import { MediaError } from './errors.js';

/**
 * Turns a NAL unit (or a prefix of one) into its RBSP by dropping every emulation prevention byte:
 * each `00 00 03` becomes `00 00`. Returns `nal` itself when there is nothing to drop, so the
 * common case allocates nothing.
 */
export function removeEmulationPrevention(nal: Uint8Array): Uint8Array {
  const first = findEmulationPrevention(nal);
  if (first < 0) return nal;
  const out = new Uint8Array(nal.length - 1);
  out.set(nal.subarray(0, first));
  let written = first;
  let zeros = 0;
  for (let i = first + 1; i < nal.length; i++) {
    const byte = nal[i]!;
    if (zeros >= 2 && byte === 3) {
      zeros = 0;
      continue;
    }
    zeros = byte === 0 ? zeros + 1 : 0;
    out[written++] = byte;
  }
  return out.subarray(0, written);
}

/** Index of the first emulation prevention byte (the `03` of `00 00 03`), or -1. */
function findEmulationPrevention(nal: Uint8Array): number {
  let zeros = 0;
  for (let i = 0; i < nal.length; i++) {
    const byte = nal[i]!;
    if (zeros >= 2 && byte === 3) return i;
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return -1;
}

/** Longest Exp-Golomb prefix accepted: the value then still fits 32 bits. */
const MAX_EXP_GOLOMB_ZEROS = 31;

/**
 * Reads bits most significant first from an RBSP (emulation prevention already removed). Every
 * read past the end throws `MediaError('malformed-payload')`, so a parser over peer bytes fails with
 * a coded error and never with a `RangeError` or a silent `undefined`.
 */
export class BitReader {
  private readonly data: Uint8Array;
  private position = 0;

  constructor(data: Uint8Array) {
    this.data = data;
  }

  /** Bits not read yet. */
  get bitsLeft(): number {
    return this.data.length * 8 - this.position;
  }

  /** One bit, 0 or 1. */
  bit(): number {
    if (this.position >= this.data.length * 8) throw pastEnd(1);
    const byte = this.data[this.position >>> 3]!;
    const value = (byte >>> (7 - (this.position & 7))) & 1;
    this.position++;
    return value;
  }

  /** An unsigned field of `n` bits, u(n), for 0 ≤ n ≤ 32. */
  u(n: number): number {
    if (!Number.isInteger(n) || n < 0 || n > 32) {
      throw new TypeError(`BitReader.u: width must be an integer in 0..32, got ${n}`);
    }
    if (n > this.bitsLeft) throw pastEnd(n);
    let value = 0;
    for (let i = 0; i < n; i++) value = value * 2 + this.bit();
    return value;
  }

  /** An unsigned Exp-Golomb code, ue(v), up to 2^32 - 2. */
  ue(): number {
    let zeros = 0;
    while (this.bit() === 0) {
      zeros++;
      if (zeros > MAX_EXP_GOLOMB_ZEROS) {
        throw new MediaError('malformed-payload', 'Exp-Golomb code longer than 32 bits');
      }
    }
    return 2 ** zeros - 1 + this.u(zeros);
  }

  /** A signed Exp-Golomb code, se(v): 1, -1, 2, -2, ... for code numbers 1, 2, 3, 4, ... */
  se(): number {
    const code = this.ue();
    return code % 2 === 1 ? (code + 1) / 2 : 0 - code / 2; // `0 -`: no -0 for code 0
  }

  /** Skips `n` bits. */
  skip(n: number): void {
    if (!Number.isInteger(n) || n < 0) {
      throw new TypeError(`BitReader.skip: count must be a non-negative integer, got ${n}`);
    }
    if (n > this.bitsLeft) throw pastEnd(n);
    this.position += n;
  }
}

function pastEnd(wanted: number): MediaError {
  return new MediaError('malformed-payload', `bitstream ended: ${wanted} more bit(s) wanted`);
}
