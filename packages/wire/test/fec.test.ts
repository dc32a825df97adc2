import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { assembleKernel, KERNEL_GENERATED_PATH, renderKernelModule } from '../scripts/build-kernel.js';
import { isWireError } from '../src/errors.js';
import { GF_KERNEL_WASM_BASE64 } from '../src/fec/gf-kernel.generated.js';
import { GF_EXP, GF_LOG, GF_MUL_TABLE, gfDiv, gfInv, gfMul } from '../src/fec/gf256.js';
import { decodeBase64, tryCreateSimdKernel } from '../src/fec/kernel-simd.js';
import {
  activeFecKernel,
  encodeParity,
  type FecKernelName,
  MAX_BLOCK_CHUNKS,
  recoverData,
  setFecKernel,
} from '../src/fec/reed-solomon.js';
import { seededRandom } from '../src/sim/index.js';

const KERNELS: readonly FecKernelName[] = ['scalar', 'simd'];

afterEach(() => setFecKernel('auto'));

// ---------------------------------------------------------------------------------------------------------
// Independent reference: schoolbook GF(256) arithmetic straight from the definition (no tables).

/** Carry-less multiply reduced by x^8 + x^4 + x^3 + x^2 + 1, one bit at a time. */
function slowMul(a: number, b: number): number {
  let product = 0;
  let x = a;
  for (let y = b; y !== 0; y >>= 1) {
    if (y & 1) product ^= x;
    x <<= 1;
    if (x & 0x100) x ^= 0x11d;
  }
  return product;
}

/** Inverse by exhaustive search. */
function slowInv(a: number): number {
  for (let b = 1; b < 256; b++) if (slowMul(a, b) === 1) return b;
  throw new Error(`no inverse for ${a}`);
}

/** Product table built from slowMul, so reference encoding of large blocks stays fast. */
const REF_MUL = Array.from({ length: 256 }, (_, a) => Array.from({ length: 256 }, (_, b) => slowMul(a, b)));
const REF_INV = Array.from({ length: 256 }, (_, a) => (a === 0 ? 0 : slowInv(a)));

/** Parity straight from the wire contract: P_j[b] = XOR_i (1 / ((k + j) ^ i)) * data_i[b], zero-padded. */
function referenceParity(data: readonly Uint8Array[], m: number, symbolSize: number): Uint8Array[] {
  const k = data.length;
  return Array.from({ length: m }, (_, j) => {
    const parity = new Uint8Array(symbolSize);
    for (let i = 0; i < k; i++) {
      const row = REF_MUL[REF_INV[(k + j) ^ i]!]!;
      const chunk = data[i]!;
      for (let b = 0; b < chunk.length; b++) parity[b] = parity[b]! ^ row[chunk[b]!]!;
    }
    return parity;
  });
}

// ---------------------------------------------------------------------------------------------------------
// Helpers.

/** The project's seeded PRNG, as 32-bit unsigned integers. */
function mulberry32(seed: number): () => number {
  const random = seededRandom(seed);
  return () => Math.floor(random() * 0x1_0000_0000);
}

function randomBytes(next: () => number, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let b = 0; b < length; b++) bytes[b] = next() & 0xff;
  return bytes;
}

/** k random data chunks of symbolSize bytes, the last one `lastLength` bytes. */
function randomData(
  next: () => number,
  k: number,
  symbolSize: number,
  lastLength = symbolSize,
): Uint8Array[] {
  return Array.from({ length: k }, (_, i) => randomBytes(next, i === k - 1 ? lastLength : symbolSize));
}

/** `count` distinct indexes in [0, n), chosen by `next`. */
function randomSubset(next: () => number, n: number, count: number): number[] {
  const pool = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < count; i++) {
    const j = i + (next() % (n - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, count);
}

/** Every subset of [0, n) with at most `max` elements, smallest first. */
function* subsetsUpTo(n: number, max: number, start = 0, prefix: number[] = []): Generator<number[]> {
  yield prefix;
  if (prefix.length === max) return;
  for (let i = start; i < n; i++) yield* subsetsUpTo(n, max, i + 1, [...prefix, i]);
}

function withLosses(chunks: readonly Uint8Array[], lost: readonly number[]): (Uint8Array | undefined)[] {
  const received: (Uint8Array | undefined)[] = [...chunks];
  for (const i of lost) received[i] = undefined;
  return received;
}

/** First difference between two chunk lists (byte-wise), or undefined when they are equal. */
function chunksDiff(actual: readonly Uint8Array[], expected: readonly Uint8Array[]): string | undefined {
  if (actual.length !== expected.length) return `${actual.length} chunks, expected ${expected.length}`;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (a.length !== e.length) return `chunk ${i}: length ${a.length}, expected ${e.length}`;
    for (let b = 0; b < e.length; b++)
      if (a[b] !== e[b]) return `chunk ${i} byte ${b}: ${a[b]}, expected ${e[b]}`;
  }
  return undefined;
}

/** Asserts that `recovered` equals `data`: same objects where received, zero-padded copies where rebuilt. */
function expectRecovered(
  recovered: readonly Uint8Array[],
  data: readonly Uint8Array[],
  received: readonly (Uint8Array | undefined)[],
  symbolSize: number,
): void {
  const expected = data.map((chunk, i) => {
    if (received[i] !== undefined) return chunk;
    const padded = new Uint8Array(symbolSize);
    padded.set(chunk);
    return padded;
  });
  const diff = chunksDiff(recovered, expected);
  if (diff !== undefined) expect.fail(`lost ${lostIndexes(received)}: ${diff}`);
  for (let i = 0; i < data.length; i++) {
    if (received[i] !== undefined && recovered[i] !== received[i])
      expect.fail(`chunk ${i} is not the received object`);
  }
}

function lostIndexes(received: readonly (Uint8Array | undefined)[]): string {
  return received.flatMap((chunk, i) => (chunk === undefined ? [i] : [])).join(',');
}

function expectTypeError(fn: () => unknown): void {
  expect(fn).toThrow(TypeError);
}

// ---------------------------------------------------------------------------------------------------------

describe('GF(256)', () => {
  it('matches the schoolbook product for every pair, in gfMul and in the flat table', () => {
    for (let a = 0; a < 256; a++) {
      for (let b = 0; b < 256; b++) {
        const expected = REF_MUL[a]![b]!;
        if (gfMul(a, b) !== expected || GF_MUL_TABLE[(a << 8) | b] !== expected) {
          expect.fail(
            `${a} * ${b}: gfMul ${gfMul(a, b)}, table ${GF_MUL_TABLE[(a << 8) | b]}, want ${expected}`,
          );
        }
      }
    }
  });

  it('has consistent division and inverse for every pair', () => {
    for (let a = 0; a < 256; a++) {
      if (a !== 0) {
        expect(gfMul(a, gfInv(a))).toBe(1);
        expect(gfInv(a)).toBe(REF_INV[a]);
        expect(gfInv(gfInv(a))).toBe(a);
      }
      for (let b = 1; b < 256; b++) {
        const q = gfDiv(a, b);
        if (gfMul(q, b) !== a || q !== gfMul(a, gfInv(b)) || gfDiv(gfMul(a, b), b) !== a) {
          expect.fail(`division inconsistent for ${a} / ${b}`);
        }
      }
    }
  });

  it('is commutative, associative and distributive (exhaustive pairs, sampled triples)', () => {
    const next = mulberry32(0x5eed);
    for (let a = 0; a < 256; a++) {
      for (let b = 0; b < 256; b++)
        if (gfMul(a, b) !== gfMul(b, a)) expect.fail(`${a} * ${b} not commutative`);
    }
    for (let n = 0; n < 100_000; n++) {
      const a = next() & 0xff;
      const b = next() & 0xff;
      const c = next() & 0xff;
      if (gfMul(a, b ^ c) !== (gfMul(a, b) ^ gfMul(a, c)))
        expect.fail(`distributivity fails at ${a},${b},${c}`);
      if (gfMul(gfMul(a, b), c) !== gfMul(a, gfMul(b, c)))
        expect.fail(`associativity fails at ${a},${b},${c}`);
    }
  });

  it('uses 2 as a generator of order 255, with matching exp/log tables', () => {
    const seen = new Set<number>();
    for (let n = 0; n < 255; n++) {
      seen.add(GF_EXP[n]!);
      expect(GF_EXP[n + 255]).toBe(GF_EXP[n]);
      expect(GF_LOG[GF_EXP[n]!]).toBe(n);
    }
    expect(seen.size).toBe(255);
    expect(seen.has(0)).toBe(false);
  });

  it('pins a few products of the 0x11d field', () => {
    expect(gfMul(2, 0x80)).toBe(0x1d);
    expect(gfMul(0x53, 0xca)).toBe(0x8f);
    expect(gfInv(2)).toBe(0x8e);
    expect(GF_EXP[8]).toBe(0x1d);
  });

  it('rejects division by zero and the inverse of zero', () => {
    expect(() => gfInv(0)).toThrow(RangeError);
    expect(() => gfDiv(7, 0)).toThrow(RangeError);
    expect(gfDiv(0, 7)).toBe(0);
  });
});

describe.each(KERNELS)('Reed-Solomon on the %s kernel', (kernel) => {
  const useKernel = () => {
    setFecKernel(kernel);
    expect(activeFecKernel()).toBe(kernel);
  };

  it('produces the golden parity of a small block (k = 3, m = 2, 4-byte chunks)', () => {
    useKernel();
    const data = [
      Uint8Array.of(0x00, 0x01, 0x80, 0xff),
      Uint8Array.of(0x12, 0x34, 0x56, 0x78),
      Uint8Array.of(0x9a, 0xbc, 0xde, 0xf0),
    ];
    // Coefficients 1 / ((3 + j) ^ i): row 0 = f4 8e 01, row 1 = 47 a7 7a.
    const golden = [Uint8Array.of(0x93, 0x52, 0x7e, 0x99), Uint8Array.of(0xca, 0xdb, 0xe0, 0xc6)];
    expect(referenceParity(data, 2, 4)).toEqual(golden);
    expect(encodeParity(data, 2, 4)).toEqual(golden);
  });

  it('matches the reference encoder on seeded random blocks of many shapes', () => {
    useKernel();
    const next = mulberry32(0xc0ffee);
    const shapes: [number, number, number][] = [
      [1, 1, 1],
      [1, 5, 17],
      [2, 1, 16],
      [3, 3, 15],
      [8, 2, 1176],
      [13, 7, 100],
      [32, 8, 1176],
      [32, 5, 1176],
      [32, 16, 1176],
      [100, 100, 33],
      [250, 5, 64],
      [5, 250, 8],
    ];
    for (const [k, m, symbolSize] of shapes) {
      const lastLength = 1 + (next() % symbolSize);
      const data = randomData(next, k, symbolSize, lastLength);
      expect(encodeParity(data, m, symbolSize), `k=${k} m=${m}`).toEqual(
        referenceParity(data, m, symbolSize),
      );
    }
  });

  it('recovers every erasure pattern of up to m losses', () => {
    useKernel();
    const next = mulberry32(42);
    const shapes: [number, number][] = [
      [1, 0],
      [1, 1],
      [1, 4],
      [2, 2],
      [3, 2],
      [4, 4],
      [5, 3],
      [6, 0],
      [10, 4],
    ];
    for (const [k, m] of shapes) {
      const symbolSize = 9;
      const data = randomData(next, k, symbolSize, 5);
      const chunks = [...data, ...encodeParity(data, m, symbolSize)];
      for (const lost of subsetsUpTo(k + m, m)) {
        const received = withLosses(chunks, lost);
        expectRecovered(recoverData(received, k, m, symbolSize), data, received, symbolSize);
      }
    }
  });

  it('recovers blocks of the maximum size k + m = 255', () => {
    useKernel();
    const next = mulberry32(255);
    const symbolSize = 3;
    // k = 253, m = 2: every pattern of up to two losses.
    const wide = randomData(next, 253, symbolSize);
    const wideChunks = [...wide, ...encodeParity(wide, 2, symbolSize)];
    for (const lost of subsetsUpTo(MAX_BLOCK_CHUNKS, 2)) {
      const received = withLosses(wideChunks, lost);
      expectRecovered(recoverData(received, 253, 2, symbolSize), wide, received, symbolSize);
    }
    // k = 1, m = 254: any single surviving chunk is enough.
    const lone = randomData(next, 1, symbolSize);
    const loneChunks = [...lone, ...encodeParity(lone, 254, symbolSize)];
    for (let keep = 0; keep < MAX_BLOCK_CHUNKS; keep++) {
      const received = loneChunks.map((chunk, i) => (i === keep ? chunk : undefined));
      expectRecovered(recoverData(received, 1, 254, symbolSize), lone, received, symbolSize);
    }
    // k = 128, m = 127: random patterns of exactly m losses.
    const half = randomData(next, 128, symbolSize);
    const halfChunks = [...half, ...encodeParity(half, 127, symbolSize)];
    for (let trial = 0; trial < 20; trial++) {
      const received = withLosses(halfChunks, randomSubset(next, MAX_BLOCK_CHUNKS, 127));
      expectRecovered(recoverData(received, 128, 127, symbolSize), half, received, symbolSize);
    }
  });

  it('round-trips a short last chunk (and empty or short chunks anywhere) as zero-padded', () => {
    useKernel();
    const next = mulberry32(7);
    const symbolSize = 1176;
    for (const lastLength of [0, 1, 15, 16, 17, 600, 1175, 1176]) {
      const data = randomData(next, 6, symbolSize, lastLength);
      data[2] = randomBytes(next, 40);
      const chunks = [...data, ...encodeParity(data, 3, symbolSize)];
      for (const lost of [[5], [2, 5], [0, 2, 5], [1, 3, 4]]) {
        const received = withLosses(chunks, lost);
        const recovered = recoverData(received, 6, 3, symbolSize);
        expectRecovered(recovered, data, received, symbolSize);
        expect(recovered[5]!.subarray(0, lastLength)).toEqual(data[5]);
      }
    }
  });

  it('recovers seeded random blocks with random losses', () => {
    useKernel();
    const next = mulberry32(0xfec);
    for (let trial = 0; trial < 300; trial++) {
      const k = 1 + (next() % 40);
      const m = next() % Math.min(41, MAX_BLOCK_CHUNKS - k + 1);
      const symbolSize = 1 + (next() % 200);
      const data = randomData(next, k, symbolSize, next() % (symbolSize + 1));
      const chunks = [...data, ...encodeParity(data, m, symbolSize)];
      const received = withLosses(chunks, randomSubset(next, k + m, next() % (m + 1)));
      expectRecovered(recoverData(received, k, m, symbolSize), data, received, symbolSize);
    }
  });

  it('fills and returns caller-provided parity buffers without touching bytes past symbolSize', () => {
    useKernel();
    const next = mulberry32(99);
    const data = randomData(next, 4, 20, 11);
    const out = [new Uint8Array(24).fill(0xaa), new Uint8Array(20).fill(0xaa)];
    const firstBuffer = out[0];
    const parity = encodeParity(data, 2, 20, out);
    expect(parity).toBe(out);
    expect(parity[0]).toBe(firstBuffer);
    const expected = referenceParity(data, 2, 20);
    expect(parity[0]!.subarray(0, 20)).toEqual(expected[0]);
    expect(parity[0]!.subarray(20)).toEqual(new Uint8Array(4).fill(0xaa));
    expect(parity[1]).toEqual(expected[1]);
    // Only short inputs: the stale bytes of `out` must still be overwritten, not accumulated into.
    const lone = [randomBytes(next, 7)];
    const stale = [new Uint8Array(20).fill(0x55), new Uint8Array(20).fill(0x55)];
    expect(chunksDiff(encodeParity(lone, 2, 20, stale), referenceParity(lone, 2, 20))).toBeUndefined();
  });

  it('handles zero-length symbols', () => {
    useKernel();
    const data = [new Uint8Array(0), new Uint8Array(0)];
    const parity = encodeParity(data, 1, 0);
    expect(parity).toEqual([new Uint8Array(0)]);
    expect(recoverData([undefined, data[1], parity[0]], 2, 1, 0)).toEqual(data);
  });

  it('throws WireError unrecoverable when more than m chunks are lost', () => {
    useKernel();
    const next = mulberry32(3);
    for (const [k, m] of [
      [1, 0],
      [4, 0],
      [3, 2],
      [8, 2],
      [32, 8],
    ] as const) {
      const data = randomData(next, k, 16);
      const chunks = [...data, ...encodeParity(data, m, 16)];
      for (let trial = 0; trial < 20; trial++) {
        const lost = randomSubset(next, k + m, m + 1 + (next() % k));
        let caught: unknown;
        try {
          recoverData(withLosses(chunks, lost), k, m, 16);
        } catch (err) {
          caught = err;
        }
        expect(isWireError(caught, 'unrecoverable'), `k=${k} m=${m} lost=${lost}`).toBe(true);
      }
    }
  });
});

describe('caller misuse', () => {
  const chunk = (n: number) => new Uint8Array(n);

  it('encodeParity rejects bad counts, sizes and out buffers with TypeError', () => {
    expectTypeError(() => encodeParity([], 1, 4));
    expectTypeError(() => encodeParity([chunk(4)], -1, 4));
    expectTypeError(() => encodeParity([chunk(4)], 1.5, 4));
    expectTypeError(() =>
      encodeParity(
        Array.from({ length: 200 }, () => chunk(4)),
        56,
        4,
      ),
    );
    expectTypeError(() => encodeParity([chunk(4)], 1, -1));
    expectTypeError(() => encodeParity([chunk(4)], 1, Number.NaN));
    expectTypeError(() => encodeParity([chunk(5)], 1, 4));
    expectTypeError(() => encodeParity([chunk(4), [1, 2] as unknown as Uint8Array], 1, 4));
    expectTypeError(() => encodeParity([chunk(4)], 2, 4, [chunk(4)]));
    expectTypeError(() => encodeParity([chunk(4)], 1, 4, [chunk(3)]));
    expect(
      encodeParity(
        Array.from({ length: 200 }, () => chunk(4)),
        55,
        4,
      ),
    ).toHaveLength(55);
  });

  it('recoverData rejects bad counts, slot arrays and chunk lengths with TypeError', () => {
    const data = [Uint8Array.of(1, 2, 3, 4), Uint8Array.of(5, 6)];
    const chunks = [...data, ...encodeParity(data, 2, 4)];
    expectTypeError(() => recoverData(chunks, 0, 4, 4));
    expectTypeError(() => recoverData(chunks, 2, -1, 4));
    expectTypeError(() => recoverData(chunks, 2, 254, 4));
    expectTypeError(() => recoverData(chunks, 2, 1, 4));
    expectTypeError(() => recoverData(chunks.slice(0, 3), 2, 2, 4));
    expectTypeError(() => recoverData([chunk(5), ...chunks.slice(1)], 2, 2, 4));
    expectTypeError(() => recoverData([undefined, data[1], chunk(3), chunks[3]], 2, 2, 4));
    expectTypeError(() => recoverData([undefined, data[1], chunk(5), chunks[3]], 2, 2, 4));
    expect(recoverData([undefined, ...chunks.slice(1)], 2, 2, 4)[0]).toEqual(data[0]);
  });
});

describe('kernel selection', () => {
  it('defaults to SIMD in Node 20 and can be forced to scalar', () => {
    expect(activeFecKernel()).toBe('simd');
    setFecKernel('scalar');
    expect(activeFecKernel()).toBe('scalar');
    setFecKernel('auto');
    expect(activeFecKernel()).toBe('simd');
  });

  it('gives byte-identical parity and recovery on both kernels', () => {
    const next = mulberry32(0xb0b);
    for (let trial = 0; trial < 100; trial++) {
      const k = 1 + (next() % 64);
      const m = 1 + (next() % 32);
      const symbolSize = 1 + (next() % 1300);
      const data = randomData(next, k, symbolSize, next() % (symbolSize + 1));
      const lost = randomSubset(next, k + m, 1 + (next() % m));
      const [scalar, simd] = KERNELS.map((kernel) => {
        setFecKernel(kernel);
        const parity = encodeParity(data, m, symbolSize);
        return [...parity, ...recoverData(withLosses([...data, ...parity], lost), k, m, symbolSize)];
      });
      expect(chunksDiff(simd!, scalar!), `k=${k} m=${m} size=${symbolSize}`).toBeUndefined();
    }
  });
});

describe('SIMD kernel module', () => {
  it('is the committed assembly of gf-kernel.wat', async () => {
    const bytes = await assembleKernel();
    expect(decodeBase64(GF_KERNEL_WASM_BASE64)).toEqual(bytes);
    expect(await readFile(KERNEL_GENERATED_PATH, 'utf8')).toBe(renderKernelModule(bytes));
  });

  it('is reported unavailable when WebAssembly is missing or rejects the module', () => {
    const original = globalThis.WebAssembly;
    const rejecting = {
      Module: class {
        constructor() {
          throw new Error('SIMD unsupported');
        }
      },
    };
    try {
      Object.assign(globalThis, { WebAssembly: undefined });
      expect(tryCreateSimdKernel()).toBeUndefined();
      Object.assign(globalThis, { WebAssembly: rejecting });
      expect(tryCreateSimdKernel()).toBeUndefined();
    } finally {
      Object.assign(globalThis, { WebAssembly: original });
    }
    expect(tryCreateSimdKernel()).toBeDefined();
  });

  it('stays under the 4 KB limit for synchronous compilation in Chromium', () => {
    expect(decodeBase64(GF_KERNEL_WASM_BASE64).length).toBeLessThan(4096);
  });

  it('decodes base64 like the platform decoder, for every length modulo 3', () => {
    const next = mulberry32(64);
    for (let length = 0; length < 70; length++) {
      const bytes = randomBytes(next, length);
      expect(decodeBase64(Buffer.from(bytes).toString('base64'))).toEqual(bytes);
    }
  });
});
