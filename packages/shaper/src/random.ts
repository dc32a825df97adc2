/**
 * Seeded pseudo-random numbers for the shaper: xoshiro128** (Blackman and Vigna), a 128-bit state
 * generator with 32-bit outputs, seeded through splitmix64 so that nearby seeds give unrelated
 * streams. The same seed gives the same sequence on every run and platform.
 */

/** A generator of floats in [0, 1). */
export type Random = () => number;

const MASK64 = (1n << 64n) - 1n;

/** splitmix64: the usual way to expand a small seed into a full xoshiro state. */
function splitmix64(state: bigint): { value: bigint; state: bigint } {
  const next = (state + 0x9e3779b97f4a7c15n) & MASK64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return { value: z ^ (z >> 31n), state: next };
}

/**
 * The raw xoshiro128** generator over an explicit 128-bit state (four 32-bit words, not all zero):
 * each call returns the next unsigned 32-bit output. Exposed for the reference-vector test.
 */
export function xoshiro128ss(state: readonly [number, number, number, number]): () => number {
  let [s0, s1, s2, s3] = state.map((w) => w >>> 0) as [number, number, number, number];
  if ((s0 | s1 | s2 | s3) === 0) throw new TypeError('xoshiro128** state must not be all zero');
  return () => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
}

/**
 * A generator of floats in [0, 1) for `seed` (an unsigned 32-bit integer) and `stream` (which
 * independent sequence of that seed: the shaper uses 0 for "up" and 1 for "down").
 */
export function seededRandom(seed: number, stream = 0): Random {
  let state = (BigInt(seed >>> 0) << 8n) | BigInt(stream & 0xff);
  const words: number[] = [];
  for (let i = 0; i < 2; i++) {
    const out = splitmix64(state);
    state = out.state;
    words.push(Number(out.value & 0xffffffffn), Number(out.value >> 32n));
  }
  const next = xoshiro128ss(words as [number, number, number, number]);
  return () => next() / 4294967296;
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
