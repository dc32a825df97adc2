import { describe, expect, it } from 'vitest';
import {
  encodeVarint,
  isReservedId,
  MAX_SAFE_VARINT,
  MAX_VARINT,
  readVarint,
  readVarintBig,
  readVarintId,
  varintLength,
  varintLengthBig,
  writeVarint,
  writeVarintBig,
} from '../src/h3/varint.js';
import { expectCode, hex, toHex } from './support/h3-bytes.js';

describe('QUIC varints: RFC 9000 Appendix A.1 examples', () => {
  it('reads the 8-byte example as a bigint and refuses it as a number (above 2^53-1)', () => {
    // c2 19 7c 5e ff 14 e8 8c: prefix 11 = 8 bytes, value 0x02197c5eff14e88c.
    const bytes = hex('c2197c5eff14e88c');
    expect(readVarintBig(bytes)).toEqual({ value: 151288809941952652n, bytes: 8 });
    expectCode(() => readVarint(bytes), 'varint-error');
    // As an identifier it reads as "some huge unknown id", never as an error.
    expect(readVarintId(bytes)).toEqual({ value: MAX_SAFE_VARINT, bytes: 8 });
  });

  it('reads the 4-, 2- and 1-byte examples', () => {
    // 9d 7f 3e 7d: prefix 10 = 4 bytes, value 0x1d7f3e7d.
    expect(readVarint(hex('9d7f3e7d'))).toEqual({ value: 494878333, bytes: 4 });
    // 7b bd: prefix 01 = 2 bytes, value 0x3bbd.
    expect(readVarint(hex('7bbd'))).toEqual({ value: 15293, bytes: 2 });
    // 25: prefix 00 = 1 byte, value 0x25.
    expect(readVarint(hex('25'))).toEqual({ value: 37, bytes: 1 });
    // 40 25: the same 37 in two bytes (not minimal, still valid).
    expect(readVarint(hex('4025'))).toEqual({ value: 37, bytes: 2 });
  });

  it('writes the examples back in their shortest form', () => {
    const view = new DataView(new ArrayBuffer(8));
    expect(writeVarintBig(view, 0, 151288809941952652n)).toBe(8);
    expect(toHex(new Uint8Array(view.buffer))).toBe('c2197c5eff14e88c');
    expect(toHex(encodeVarint(494878333))).toBe('9d7f3e7d');
    expect(toHex(encodeVarint(15293))).toBe('7bbd');
    expect(toHex(encodeVarint(37))).toBe('25');
  });
});

describe('QUIC varints: lengths, limits and round trips', () => {
  const boundaries = [
    [0, 1],
    [63, 1],
    [64, 2],
    [16383, 2],
    [16384, 4],
    [2 ** 30 - 1, 4],
    [2 ** 30, 8],
    [2 ** 32, 8],
    [MAX_SAFE_VARINT, 8],
  ] as const;

  it.each(boundaries)('%d takes %d bytes and round-trips at an offset', (value, length) => {
    expect(varintLength(value)).toBe(length);
    const view = new DataView(new ArrayBuffer(length + 3));
    expect(writeVarint(view, 3, value)).toBe(length);
    const bytes = new Uint8Array(view.buffer);
    expect(readVarint(bytes, 3)).toEqual({ value, bytes: length });
    expect(readVarintBig(bytes, 3)).toEqual({ value: BigInt(value), bytes: length });
  });

  it('round-trips the largest varint as a bigint', () => {
    expect(varintLengthBig(MAX_VARINT)).toBe(8);
    const view = new DataView(new ArrayBuffer(8));
    writeVarintBig(view, 0, MAX_VARINT);
    expect(toHex(new Uint8Array(view.buffer))).toBe('ffffffffffffffff');
    expect(readVarintBig(new Uint8Array(view.buffer)).value).toBe(MAX_VARINT);
    // 2^53 is the first value a number cannot hold exactly.
    writeVarintBig(view, 0, 2n ** 53n);
    expectCode(() => readVarint(new Uint8Array(view.buffer)), 'varint-error');
  });

  it('refuses to write what it cannot encode (TypeError: caller misuse)', () => {
    const view = new DataView(new ArrayBuffer(8));
    expect(() => writeVarint(view, 0, -1)).toThrow(TypeError);
    expect(() => writeVarint(view, 0, 1.5)).toThrow(TypeError);
    expect(() => writeVarint(view, 0, 2 ** 53)).toThrow(TypeError);
    expect(() => writeVarint(view, 7, 64)).toThrow(TypeError);
    expect(() => writeVarintBig(view, 0, MAX_VARINT + 1n)).toThrow(TypeError);
  });

  it('fails with varint-error, never RangeError, when truncated at every offset', () => {
    const full = hex('c2197c5eff14e88c');
    for (let length = 0; length < full.length; length++) {
      const cut = full.subarray(0, length);
      expectCode(() => readVarintBig(cut), 'varint-error');
      expectCode(() => readVarintId(cut), 'varint-error');
    }
    for (const sample of ['9d7f3e7d', '7bbd']) {
      const bytes = hex(sample);
      for (let length = 0; length < bytes.length; length++) {
        expectCode(() => readVarint(bytes.subarray(0, length)), 'varint-error');
      }
    }
    expectCode(() => readVarint(hex('25'), 1), 'varint-error');
    expectCode(() => readVarint(hex('25'), -1), 'varint-error');
  });

  it('recognises the reserved identifiers 0x1f * N + 0x21', () => {
    expect([0x21, 0x40, 0x5f, 0x1f * 1000 + 0x21].map(isReservedId)).toEqual([true, true, true, true]);
    expect([0x00, 0x20, 0x22, 0x41, 0x54].map(isReservedId)).toEqual([false, false, false, false, false]);
  });
});
