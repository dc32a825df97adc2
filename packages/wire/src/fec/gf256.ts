/**
 * Arithmetic in GF(2^8) with the primitive polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d) and generator 2.
 *
 * Addition and subtraction are XOR. The tables are built once when the module loads (a few microseconds) and
 * must be treated as read-only.
 */

/** The field's primitive polynomial, including the x^8 term. */
export const GF_POLYNOMIAL = 0x11d;

/**
 * Powers of the generator: `GF_EXP[n] = 2^n`. It holds 510 entries (two periods of 255) so that
 * `GF_EXP[GF_LOG[a] + GF_LOG[b]]` needs no reduction modulo 255.
 */
export const GF_EXP: Uint8Array = /* @__PURE__ */ buildExp();

/** Discrete logarithms: `GF_LOG[a]` is `n` with `2^n = a`, for `a` in 1..255. `GF_LOG[0]` is unused (0). */
export const GF_LOG: Uint8Array = /* @__PURE__ */ buildLog(GF_EXP);

/**
 * Flat 256 x 256 multiplication table: `GF_MUL_TABLE[(c << 8) | x] = c * x`.
 * Row `c` (offset `c << 8`, 256 bytes) holds every product of `c`, which is what the coding kernels index.
 */
export const GF_MUL_TABLE: Uint8Array = /* @__PURE__ */ buildMulTable(GF_EXP, GF_LOG);

function buildExp(): Uint8Array {
  const exp = new Uint8Array(510);
  let value = 1;
  for (let n = 0; n < 255; n++) {
    exp[n] = value;
    exp[n + 255] = value;
    value <<= 1;
    if (value & 0x100) value ^= GF_POLYNOMIAL;
  }
  return exp;
}

function buildLog(exp: Uint8Array): Uint8Array {
  const log = new Uint8Array(256);
  for (let n = 0; n < 255; n++) log[exp[n]!] = n;
  return log;
}

function buildMulTable(exp: Uint8Array, log: Uint8Array): Uint8Array {
  const table = new Uint8Array(65536);
  for (let c = 1; c < 256; c++) {
    const logC = log[c]!;
    const row = c << 8;
    for (let x = 1; x < 256; x++) table[row | x] = exp[logC + log[x]!]!;
  }
  return table;
}

/** Product `a * b` in GF(256). Both operands are bytes (0..255). */
export function gfMul(a: number, b: number): number {
  return GF_MUL_TABLE[(a << 8) | b]!;
}

/** Multiplicative inverse of `a` in GF(256). Throws `RangeError` for 0, which has none. */
export function gfInv(a: number): number {
  if (a === 0) throw new RangeError('gfInv: 0 has no inverse in GF(256)');
  return GF_EXP[255 - GF_LOG[a]!]!;
}

/** Quotient `a / b` in GF(256). Throws `RangeError` when `b` is 0. */
export function gfDiv(a: number, b: number): number {
  if (b === 0) throw new RangeError('gfDiv: division by 0 in GF(256)');
  if (a === 0) return 0;
  return GF_EXP[GF_LOG[a]! + 255 - GF_LOG[b]!]!;
}
