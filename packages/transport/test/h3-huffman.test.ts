import { seededRandom } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import { HUFFMAN_CODE_LENGTHS, HUFFMAN_CODES, HUFFMAN_EOS, huffmanDecode } from '../src/h3/huffman.js';
import { ascii, expectCode, hex, toHex } from './support/h3-bytes.js';
import { codeBits, huffmanEncode, huffmanEncodeText, packBits, RFC7541_CODES } from './support/h3-huffman.js';

const latin1 = (bytes: Uint8Array): string => String.fromCharCode(...bytes);

describe('Huffman code table', () => {
  it('rebuilds every code of RFC 7541 Appendix B from the stored lengths', () => {
    expect(HUFFMAN_CODE_LENGTHS.length).toBe(257);
    for (let symbol = 0; symbol <= HUFFMAN_EOS; symbol++) {
      const [code, length] = RFC7541_CODES[symbol]!;
      expect([symbol, HUFFMAN_CODES[symbol], HUFFMAN_CODE_LENGTHS[symbol]]).toEqual([symbol, code, length]);
    }
  });

  it('is a complete prefix code (Kraft sum exactly 1)', () => {
    const sum = Array.from(HUFFMAN_CODE_LENGTHS).reduce((acc, length) => acc + 2 ** (30 - length), 0);
    expect(sum).toBe(2 ** 30);
  });
});

describe('Huffman decoding', () => {
  // RFC 7541 Appendix C.4 and C.6 (request and response examples with Huffman coding).
  const examples = [
    ['www.example.com', 'f1e3 c2e5 f23a 6ba0 ab90 f4ff'],
    ['no-cache', 'a8eb 1064 9cbf'],
    ['custom-key', '25a8 49e9 5ba9 7d7f'],
    ['custom-value', '25a8 49e9 5bb8 e8b4 bf'],
    ['302', '6402'],
    ['private', 'aec3 771a 4b'],
    ['Mon, 21 Oct 2013 20:13:21 GMT', 'd07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff'],
    ['https://www.example.com', '9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3'],
  ] as const;

  it.each(examples)('decodes the RFC 7541 example %j', (text, encoded) => {
    expect(latin1(huffmanDecode(hex(encoded), 1000))).toBe(text);
    expect(toHex(huffmanEncodeText(text))).toBe(encoded.replace(/ /g, ''));
  });

  it('round-trips each of the 256 byte values alone, and all of them together', () => {
    for (let byte = 0; byte < 256; byte++) {
      expect(Array.from(huffmanDecode(huffmanEncode(Uint8Array.of(byte)), 10))).toEqual([byte]);
    }
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(huffmanDecode(huffmanEncode(all), 256)).toEqual(all);
    const reversed = all.slice().reverse();
    expect(huffmanDecode(huffmanEncode(reversed), 256)).toEqual(reversed);
  });

  it('round-trips random strings of every length up to 64', () => {
    const random = seededRandom(7541);
    for (let round = 0; round < 2000; round++) {
      const input = Uint8Array.from({ length: round % 65 }, () => Math.floor(random() * 256));
      expect(huffmanDecode(huffmanEncode(input), 64)).toEqual(input);
    }
  });

  it('decodes the empty string', () => {
    expect(huffmanDecode(new Uint8Array(0), 0).length).toBe(0);
  });

  it('rejects the EOS symbol inside a string', () => {
    // 'a' (00011), then EOS (30 ones), then 5 bits of padding: 40 bits.
    expectCode(
      () => huffmanDecode(packBits(`${codeBits(0x61)}${codeBits(HUFFMAN_EOS)}11111`), 10),
      'qpack-error',
    );
    // EOS alone, padded with two ones.
    expectCode(() => huffmanDecode(packBits(`${codeBits(HUFFMAN_EOS)}11`), 10), 'qpack-error');
  });

  it('rejects padding longer than 7 bits', () => {
    // '0' is 00000; then 11 ones of padding: 16 bits, the last byte all padding.
    expectCode(() => huffmanDecode(packBits(`${codeBits(0x30)}11111111111`), 10), 'qpack-error');
    // A whole byte of ones and nothing else.
    expectCode(() => huffmanDecode(hex('ff'), 10), 'qpack-error');
    // 'a' padded correctly decodes; the same plus one extra 0xff byte does not.
    expect(latin1(huffmanDecode(packBits(`${codeBits(0x61)}111`), 10))).toBe('a');
    expectCode(() => huffmanDecode(packBits(`${codeBits(0x61)}111 11111111`), 10), 'qpack-error');
  });

  it('rejects padding that is not all ones', () => {
    // 'a' (00011) then padding 110 instead of 111.
    expectCode(() => huffmanDecode(packBits(`${codeBits(0x61)}110`), 10), 'qpack-error');
    // 'a' then padding 000: these zeros start a 5-bit code that never completes.
    expectCode(() => huffmanDecode(packBits(`${codeBits(0x61)}000`), 10), 'qpack-error');
  });

  it('accepts padding of 1 to 7 ones', () => {
    // 'e' 'a' 'o' (5 bits each) and ':' (7 bits) = 22 bits, then 2 ones.
    const eao = `${codeBits(0x65)}${codeBits(0x61)}${codeBits(0x6f)}${codeBits(0x3a)}11`;
    expect(latin1(huffmanDecode(packBits(eao), 10))).toBe('eao:');
    // '0' and 'a' (5 bits each) = 10 bits, then 6 ones.
    expect(latin1(huffmanDecode(packBits(`${codeBits(0x30)}${codeBits(0x61)}111111`), 10))).toBe('0a');
    // Five 'a' = 25 bits, then 7 ones: the longest padding allowed.
    expect(latin1(huffmanDecode(packBits(`${codeBits(0x61).repeat(5)}1111111`), 10))).toBe('aaaaa');
  });

  it('stops at the length limit instead of allocating', () => {
    const encoded = huffmanEncode(ascii('abcdefghij'));
    expect(latin1(huffmanDecode(encoded, 10))).toBe('abcdefghij');
    expectCode(() => huffmanDecode(encoded, 9), 'qpack-error');
  });
});
