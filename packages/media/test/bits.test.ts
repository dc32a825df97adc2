import { describe, expect, it } from 'vitest';
import { BitReader, removeEmulationPrevention } from '../src/bits.js';
import { isMediaError } from '../src/errors.js';
import { addEmulationPrevention, BitWriter, hex, seededRandom } from './support/rtp-builders.js';

function expectMalformed(read: () => unknown): void {
  let caught: unknown;
  try {
    read();
  } catch (err) {
    caught = err;
  }
  expect(caught).not.toBeInstanceOf(RangeError);
  expect(isMediaError(caught, 'malformed-payload')).toBe(true);
}

describe('removeEmulationPrevention', () => {
  it('drops the 03 of every 00 00 03', () => {
    expect(removeEmulationPrevention(hex('25 00 00 03 01 ff'))).toEqual(hex('25 00 00 01 ff'));
    expect(removeEmulationPrevention(hex('00 00 03 00 00 03 00'))).toEqual(hex('00 00 00 00 00'));
    // cabac_zero_words at the end: 00 00 03 with nothing after it
    expect(removeEmulationPrevention(hex('11 00 00 03'))).toEqual(hex('11 00 00'));
  });

  it('leaves 03 alone unless two zero bytes come right before it', () => {
    expect(removeEmulationPrevention(hex('00 03 00 00 02 03'))).toEqual(hex('00 03 00 00 02 03'));
  });

  it('returns the input itself when there is nothing to remove', () => {
    const nal = hex('67 42 c0 0d');
    expect(removeEmulationPrevention(nal)).toBe(nal);
  });

  it('undoes what an encoder inserts, on random RBSPs full of zeros', () => {
    const random = seededRandom(7);
    for (let run = 0; run < 500; run++) {
      const rbsp = Uint8Array.from({ length: Math.floor(random() * 40) }, () =>
        random() < 0.5 ? 0 : Math.floor(random() * 4),
      );
      // An RBSP never ends in a zero byte (rbsp_trailing_bits); keep the round trip exact.
      if (rbsp.length > 0) rbsp[rbsp.length - 1] = 0x80;
      expect(removeEmulationPrevention(addEmulationPrevention(rbsp))).toEqual(rbsp);
    }
  });
});

describe('BitReader', () => {
  it('reads fixed-width fields across byte boundaries', () => {
    // 1010 1100 | 0101 0011: 1, 010, 1100 0101 0, 011
    const reader = new BitReader(hex('ac 53'));
    expect(reader.bit()).toBe(1);
    expect(reader.u(3)).toBe(0b010);
    expect(reader.u(9)).toBe(0b1100_0101_0);
    expect(reader.bitsLeft).toBe(3);
    expect(reader.u(3)).toBe(0b011);
    expect(reader.bitsLeft).toBe(0);
  });

  it('reads 32-bit fields as unsigned numbers', () => {
    expect(new BitReader(hex('ff ff ff ff')).u(32)).toBe(0xffff_ffff);
    expect(new BitReader(hex('80 00 00 01')).u(32)).toBe(0x8000_0001);
  });

  it('decodes Exp-Golomb codes (H.264 Table 9-2)', () => {
    // 1 | 010 | 011 | 00100 | 00101 | 0001000 -> 0, 1, 2, 3, 4, 7
    const bits = new BitWriter().u(1, 1).u(3, 0b010).u(3, 0b011).u(5, 0b00100).u(5, 0b00101).u(7, 0b0001000);
    const reader = new BitReader(bits.bytes());
    expect([reader.ue(), reader.ue(), reader.ue(), reader.ue(), reader.ue(), reader.ue()]).toEqual([
      0, 1, 2, 3, 4, 7,
    ]);
    // se(v): code numbers 0, 1, 2, 3, 4 are 0, 1, -1, 2, -2
    const signed = new BitReader(new BitWriter().ue(0).ue(1).ue(2).ue(3).ue(4).bytes());
    expect([signed.se(), signed.se(), signed.se(), signed.se(), signed.se()]).toEqual([0, 1, -1, 2, -2]);
  });

  it('round-trips random ue/se/u values written by a bit writer', () => {
    const random = seededRandom(11);
    for (let run = 0; run < 200; run++) {
      const values = Array.from({ length: 20 }, () => ({
        kind: Math.floor(random() * 3),
        value: Math.floor(random() * 2 ** Math.floor(random() * 32)),
      }));
      const writer = new BitWriter();
      for (const { kind, value } of values) {
        if (kind === 0) writer.ue(value);
        else if (kind === 1) writer.se(value % 2 ? -value : value);
        else writer.u(32, value);
      }
      const reader = new BitReader(writer.bytes());
      for (const { kind, value } of values) {
        if (kind === 0) expect(reader.ue()).toBe(value);
        else if (kind === 1) expect(reader.se()).toBe(value % 2 ? -value : value);
        else expect(reader.u(32)).toBe(value);
      }
    }
  });

  it('reads the largest Exp-Golomb code that fits 32 bits and refuses a longer prefix', () => {
    expect(new BitReader(new BitWriter().ue(2 ** 32 - 2).bytes()).ue()).toBe(2 ** 32 - 2);
    expectMalformed(() => new BitReader(new Uint8Array(8)).ue());
  });

  it('throws malformed-payload, never RangeError, when a read runs past the end at any offset', () => {
    const data = new BitWriter().ue(1000).ue(5).u(13, 77).bytes();
    for (let length = 0; length < data.length; length++) {
      const reader = new BitReader(data.subarray(0, length));
      expectMalformed(() => {
        reader.ue();
        reader.ue();
        reader.u(13);
        reader.u(8);
      });
    }
    expectMalformed(() => new BitReader(new Uint8Array(0)).bit());
    expectMalformed(() => new BitReader(new Uint8Array(1)).u(9));
    expectMalformed(() => new BitReader(new Uint8Array(1)).skip(9));
  });

  it('skips bits', () => {
    const reader = new BitReader(hex('0f'));
    reader.skip(4);
    expect(reader.u(4)).toBe(0xf);
  });

  it('rejects field widths outside 0..32 as caller misuse', () => {
    expect(() => new BitReader(new Uint8Array(8)).u(33)).toThrow(TypeError);
    expect(() => new BitReader(new Uint8Array(8)).skip(-1)).toThrow(TypeError);
  });
});
