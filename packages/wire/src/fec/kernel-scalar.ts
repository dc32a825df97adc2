/**
 * Table-driven scalar GF(256) kernel: multiplies a coefficient matrix by a list of chunks, one byte at a time,
 * with one look-up in {@link GF_MUL_TABLE} per coefficient and byte.
 *
 * Each pass over the output reads four inputs and writes two output rows, which cuts loads and stores per
 * product; that shape measured fastest among 1 x 4, 1 x 8 and 2 x 4 (rows x inputs) on V8.
 */
import { GF_MUL_TABLE } from './gf256.js';

/** Inputs combined per pass over an output row. */
const GROUP = 4;

/**
 * Computes `outputs[r][b] = XOR over i of coefs[i * rows + r] * inputs[i][b]` for `b < size`, where
 * `rows = outputs.length` and the coefficient matrix is column-major. Inputs shorter than `size` count as
 * zero-padded. Outputs must not alias inputs; bytes of an output past `size` are left untouched.
 */
export function scalarMulChunks(
  coefs: Uint8Array,
  inputs: readonly Uint8Array[],
  outputs: readonly Uint8Array[],
  size: number,
): void {
  const rows = outputs.length;
  const full: number[] = [];
  const short: number[] = [];
  for (let i = 0; i < inputs.length; i++) (inputs[i]!.length >= size ? full : short).push(i);
  const groups = groupFullInputs(coefs, rows, inputs, full);
  for (let r = 0; r < rows; r += 2) {
    const o0 = outputs[r]!;
    const o1 = r + 1 < rows ? outputs[r + 1]! : undefined;
    if (full.length === 0) clearRows(o0, o1, size);
    for (let g = 0; g < groups.sources.length; g += GROUP) {
      const accumulate = g > 0;
      if (o1 === undefined)
        mulRow(o0, groups.shifted, r * groups.width + g, groups.sources, g, size, accumulate);
      else
        mulRowPair(
          o0,
          o1,
          groups.shifted,
          r * groups.width + g,
          groups.width,
          groups.sources,
          g,
          size,
          accumulate,
        );
    }
    for (const i of short) addShort(o0, o1, coefs, i * rows + r, inputs[i]!);
  }
}

/** Full-length inputs padded to a multiple of {@link GROUP}, with their coefficients pre-shifted by 8. */
interface FullGroups {
  /** The full-length inputs; padding slots repeat one of them (with coefficient 0). */
  readonly sources: readonly Uint8Array[];
  /** Row-major `rows x width` matrix of `coefficient << 8`, i.e. row offsets into the table. */
  readonly shifted: Int32Array;
  /** Padded count of full-length inputs (a multiple of {@link GROUP}). */
  readonly width: number;
}

function groupFullInputs(
  coefs: Uint8Array,
  rows: number,
  inputs: readonly Uint8Array[],
  full: readonly number[],
): FullGroups {
  const width = Math.ceil(full.length / GROUP) * GROUP;
  const sources: Uint8Array[] = [];
  const shifted = new Int32Array(rows * width);
  for (let s = 0; s < width; s++) {
    const i = full[Math.min(s, full.length - 1)]!;
    sources.push(inputs[i]!);
    if (s >= full.length) continue;
    for (let r = 0; r < rows; r++) shifted[r * width + s] = coefs[i * rows + r]! << 8;
  }
  return { sources, shifted, width };
}

function clearRows(o0: Uint8Array, o1: Uint8Array | undefined, size: number): void {
  o0.fill(0, 0, size);
  o1?.fill(0, 0, size);
}

/** One output row times four inputs (`s`..`s + 3`); `accumulate` XORs into the row instead of overwriting it. */
function mulRow(
  o: Uint8Array,
  shifted: Int32Array,
  at: number,
  sources: readonly Uint8Array[],
  s: number,
  n: number,
  accumulate: boolean,
): void {
  const t = GF_MUL_TABLE;
  const a0 = shifted[at]!;
  const a1 = shifted[at + 1]!;
  const a2 = shifted[at + 2]!;
  const a3 = shifted[at + 3]!;
  const d0 = sources[s]!;
  const d1 = sources[s + 1]!;
  const d2 = sources[s + 2]!;
  const d3 = sources[s + 3]!;
  if (accumulate) {
    for (let x = 0; x < n; x++) {
      o[x] = o[x]! ^ t[a0 | d0[x]!]! ^ t[a1 | d1[x]!]! ^ t[a2 | d2[x]!]! ^ t[a3 | d3[x]!]!;
    }
  } else {
    for (let x = 0; x < n; x++) o[x] = t[a0 | d0[x]!]! ^ t[a1 | d1[x]!]! ^ t[a2 | d2[x]!]! ^ t[a3 | d3[x]!]!;
  }
}

/** Two output rows times four inputs, sharing each input byte load between the rows. */
function mulRowPair(
  o0: Uint8Array,
  o1: Uint8Array,
  shifted: Int32Array,
  at: number,
  width: number,
  sources: readonly Uint8Array[],
  s: number,
  n: number,
  accumulate: boolean,
): void {
  const t = GF_MUL_TABLE;
  const a0 = shifted[at]!;
  const a1 = shifted[at + 1]!;
  const a2 = shifted[at + 2]!;
  const a3 = shifted[at + 3]!;
  const b0 = shifted[at + width]!;
  const b1 = shifted[at + width + 1]!;
  const b2 = shifted[at + width + 2]!;
  const b3 = shifted[at + width + 3]!;
  const d0 = sources[s]!;
  const d1 = sources[s + 1]!;
  const d2 = sources[s + 2]!;
  const d3 = sources[s + 3]!;
  if (accumulate) {
    for (let x = 0; x < n; x++) {
      const v0 = d0[x]!;
      const v1 = d1[x]!;
      const v2 = d2[x]!;
      const v3 = d3[x]!;
      o0[x] = o0[x]! ^ t[a0 | v0]! ^ t[a1 | v1]! ^ t[a2 | v2]! ^ t[a3 | v3]!;
      o1[x] = o1[x]! ^ t[b0 | v0]! ^ t[b1 | v1]! ^ t[b2 | v2]! ^ t[b3 | v3]!;
    }
  } else {
    for (let x = 0; x < n; x++) {
      const v0 = d0[x]!;
      const v1 = d1[x]!;
      const v2 = d2[x]!;
      const v3 = d3[x]!;
      o0[x] = t[a0 | v0]! ^ t[a1 | v1]! ^ t[a2 | v2]! ^ t[a3 | v3]!;
      o1[x] = t[b0 | v0]! ^ t[b1 | v1]! ^ t[b2 | v2]! ^ t[b3 | v3]!;
    }
  }
}

/** XORs `coef * input` into one or two rows over the input's own (short) length. */
function addShort(
  o0: Uint8Array,
  o1: Uint8Array | undefined,
  coefs: Uint8Array,
  at: number,
  d: Uint8Array,
): void {
  const t = GF_MUL_TABLE;
  const a = coefs[at]! << 8;
  for (let x = 0; x < d.length; x++) o0[x] = o0[x]! ^ t[a | d[x]!]!;
  if (o1 === undefined) return;
  const b = coefs[at + 1]! << 8;
  for (let x = 0; x < d.length; x++) o1[x] = o1[x]! ^ t[b | d[x]!]!;
}
