import { describe, expect, it } from 'vitest';
import { seqDiff16, seqDiff32, seqLess16, seqNext16, wrapU32 } from '../src/index.js';

describe('wrap-aware counters', () => {
  it('compares 16-bit frame ids across the wrap', () => {
    expect(seqDiff16(1, 0xffff)).toBe(2);
    expect(seqDiff16(0xffff, 1)).toBe(-2);
    expect(seqDiff16(0x8000, 0)).toBe(-0x8000);
    expect(seqDiff16(0x7fff, 0)).toBe(0x7fff);
    expect(seqLess16(0xfff0, 5)).toBe(true);
    expect(seqLess16(5, 0xfff0)).toBe(false);
    expect(seqNext16(0xffff)).toBe(0);
  });

  it('compares 32-bit µs timestamps across the wrap and wraps values into 32 bits', () => {
    expect(seqDiff32(5, 0xfffffffb)).toBe(10);
    expect(seqDiff32(0xfffffffb, 5)).toBe(-10);
    expect(wrapU32(2 ** 32 + 7)).toBe(7);
    expect(wrapU32(-1)).toBe(0xffffffff);
    expect(wrapU32(12.9)).toBe(12);
  });
});
