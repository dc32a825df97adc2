import { describe, expect, it } from 'vitest';
import { seededRandom, xoshiro128ss } from '../src/random.js';

describe('seeded random numbers', () => {
  it('xoshiro128** gives the reference outputs for the state {1, 2, 3, 4}', () => {
    const next = xoshiro128ss([1, 2, 3, 4]);
    const out = Array.from({ length: 10 }, () => next());
    expect(out).toEqual([
      11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849, 3729100597, 4258142804,
    ]);
  });

  it('refuses the all-zero state, from which xoshiro only ever yields zero', () => {
    expect(() => xoshiro128ss([0, 0, 0, 0])).toThrow(TypeError);
  });

  it('repeats for a seed and stream, and differs across seeds and streams', () => {
    const take = (seed: number, stream: number) => {
      const random = seededRandom(seed, stream);
      return Array.from({ length: 8 }, () => random());
    };
    expect(take(7, 0)).toEqual(take(7, 0));
    expect(take(7, 0)).not.toEqual(take(8, 0));
    expect(take(7, 0)).not.toEqual(take(7, 1));
    expect(take(0, 0)).not.toEqual(take(0, 1));
  });

  it('yields floats in [0, 1) with a uniform spread', () => {
    const random = seededRandom(123);
    const bins = new Array<number>(10).fill(0);
    const n = 100_000;
    let outside = 0;
    for (let i = 0; i < n; i++) {
      const x = random();
      if (!(x >= 0 && x < 1)) outside++;
      else bins[Math.floor(x * 10)]!++;
    }
    expect(outside).toBe(0);
    // Each bin expects 10 000 with a standard deviation near 95: 500 is over five of them.
    for (const count of bins) expect(Math.abs(count - n / 10)).toBeLessThan(500);
  });
});
