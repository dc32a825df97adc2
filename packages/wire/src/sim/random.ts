/**
 * Seeded pseudo-random numbers (mulberry32): the same seed gives the same sequence in Node and in
 * every browser, so loss simulations repeat exactly.
 */
export type Random = () => number;

/** A generator of floats in [0, 1) from a 32-bit seed. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [min, max], both included. */
export function randomInt(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** `length` random bytes, four from each draw. */
export function randomBytes(random: Random, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i += 4) {
    let word = Math.floor(random() * 4294967296);
    for (let j = i; j < i + 4 && j < length; j++) {
      out[j] = word & 0xff;
      word >>>= 8;
    }
  }
  return out;
}
