/**
 * WebAssembly SIMD GF(256) kernel (split-nibble method, see gf-kernel.wat).
 *
 * The module is about 650 bytes, well under the 4 KB limit Chromium puts on synchronous compilation on the
 * main thread, so it is compiled synchronously on first use. Inputs are copied into linear memory, multiplied,
 * and the outputs copied back out.
 */

import { GF_KERNEL_WASM_BASE64 } from './gf-kernel.generated.js';
import { GF_MUL_TABLE } from './gf256.js';

/** The subset of the WebAssembly JS API this module uses (the package's `lib` has no DOM types). */
interface WasmApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object, imports: object) => { readonly exports: object };
}

interface KernelExports {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  mul(rows: number, cols: number, stride: number, src: number, dst: number, coef: number): void;
}

const PAGE_BYTES = 65536;
/** Nibble product tables: 32 bytes for each of the 256 coefficients, at address 0. */
const TABLES_BYTES = 256 * 32;

/** A compiled and initialised SIMD kernel instance with its own linear memory. */
export class SimdKernel {
  readonly #exports: KernelExports;
  #view: Uint8Array;

  /** Instantiates the kernel; throws when WebAssembly or its SIMD extension is unavailable. */
  constructor(api: WasmApi) {
    const module = new api.Module(decodeBase64(GF_KERNEL_WASM_BASE64));
    this.#exports = new api.Instance(module, {}).exports as KernelExports;
    this.#view = new Uint8Array(this.#exports.memory.buffer);
    writeNibbleTables(this.#view);
  }

  /**
   * Same contract as `scalarMulChunks`: `outputs[r][b] = XOR over i of coefs[i * rows + r] * inputs[i][b]`
   * for `b < size`, with a column-major coefficient matrix and short inputs zero-padded. Needs at least one
   * input and one output.
   */
  mulChunks(
    coefs: Uint8Array,
    inputs: readonly Uint8Array[],
    outputs: readonly Uint8Array[],
    size: number,
  ): void {
    const rows = outputs.length;
    const cols = inputs.length;
    const stride = (size + 15) & ~15;
    const src = align16(TABLES_BYTES + coefs.length);
    const dst = src + cols * stride;
    const view = this.#reserve(dst + rows * stride);
    view.set(coefs, TABLES_BYTES);
    for (let i = 0; i < cols; i++) {
      const input = inputs[i]!;
      const at = src + i * stride;
      view.set(input, at);
      if (input.length < size) view.fill(0, at + input.length, at + size);
    }
    this.#exports.mul(rows, cols, stride, src, dst, TABLES_BYTES);
    for (let r = 0; r < rows; r++) {
      const at = dst + r * stride;
      outputs[r]!.set(view.subarray(at, at + size));
    }
  }

  /** Grows linear memory to at least `bytes` and returns a current view of it. */
  #reserve(bytes: number): Uint8Array {
    const memory = this.#exports.memory;
    if (memory.buffer.byteLength < bytes) {
      memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / PAGE_BYTES));
    }
    if (this.#view.buffer !== memory.buffer) this.#view = new Uint8Array(memory.buffer);
    return this.#view;
  }
}

/** Returns a kernel instance, or `undefined` when this runtime lacks WebAssembly SIMD. */
export function tryCreateSimdKernel(): SimdKernel | undefined {
  const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (api === undefined) return undefined;
  try {
    return new SimdKernel(api);
  } catch {
    return undefined;
  }
}

function align16(n: number): number {
  return (n + 15) & ~15;
}

function writeNibbleTables(view: Uint8Array): void {
  for (let c = 0; c < 256; c++) {
    for (let n = 0; n < 16; n++) {
      view[c * 32 + n] = GF_MUL_TABLE[(c << 8) | n]!;
      view[c * 32 + 16 + n] = GF_MUL_TABLE[(c << 8) | (n << 4)]!;
    }
  }
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Decodes standard base64 (with `=` padding), without relying on `atob` or `Buffer`. */
export function decodeBase64(text: string): Uint8Array {
  const body = text.replace(/=+$/, '');
  const out = new Uint8Array(Math.floor((body.length * 3) / 4));
  let bits = 0;
  let acc = 0;
  let o = 0;
  for (let i = 0; i < body.length; i++) {
    const value = BASE64_ALPHABET.indexOf(body[i]!);
    if (value < 0) throw new RangeError(`decodeBase64: invalid character at ${i}`);
    acc = ((acc << 6) | value) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}
