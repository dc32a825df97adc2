import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_FIELD_SECTION_SIZE,
  decodeHeaders,
  encodeHeaders,
  fieldSection,
  type HeaderList,
  latin1Encode,
  prefixedIntLength,
  QpackEncoderStreamReader,
  readPrefixedInt,
  writePrefixedInt,
} from '../src/h3/qpack.js';
import { parseWebTransportRequest } from '../src/h3/request.js';
import { QPACK_STATIC_TABLE } from '../src/h3/static-table.js';
import { ascii, concat, expectCode, hex, toHex } from './support/h3-bytes.js';
import { huffmanEncodeText } from './support/h3-huffman.js';

const USER_AGENT =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/150.0.0.0 Safari/537.36';

/**
 * A Chromium-style extended CONNECT field section for a WebTransport session, built byte by byte.
 * This is a reconstruction from RFC 9204 and what Chromium is known to send (static references
 * where the table has them, Huffman-coded literals when shorter), with a user agent and a
 * non-root path added to exercise the longer forms; the bytes a real Chromium sent follow below.
 */
const CHROMIUM_CONNECT_LINES: readonly Uint8Array[] = [
  // Encoded field section prefix: Required Insert Count 0 | Sign 0, Delta Base 0.
  hex('00 00'),
  // 1 1 001111: indexed field line, static (T=1), index 15 = `:method: CONNECT`.
  hex('cf'),
  // 1 1 010111: indexed field line, static, index 23 = `:scheme: https`.
  hex('d7'),
  // 0 1 0 1 0000: literal with name reference, N=0, static, name index 0 = `:authority`;
  // 1 0001010: H=1, value length 10: Huffman "127.0.0.1:4433".
  hex('50 8a 089d5c0b8170dc69a659'),
  // 0 1 0 1 0001: literal with name reference, static name index 1 = `:path`;
  // 1 0000011: H=1, length 3: Huffman "/wt".
  hex('51 83 63c27f'),
  // 0 0 1 0 1 111 + 00: literal with literal name, N=0, H=1, name length 7 (prefix full, + 0);
  // Huffman ":protocol" (7 bytes); 1 0001001: H=1, length 9: Huffman "webtransport".
  hex('2f 00 b95d8749c87a3f 89 f058d360ea4567b13f'),
  // 0 0 1 0 1 111 + 0e: literal with literal name, H=1, name length 7 + 14 = 21: Huffman
  // "sec-webtransport-http3-draft02"; 0 0000001: H=0, length 1: "1" (Huffman would not be shorter).
  hex('2f 0e 4148b782c69b07522b3d895a74a6b65692c1ca900b 01 31'),
  // 0 1 0 1 1111 + 4b: literal with name reference, static name index 15 + 75 = 90 = `origin`;
  // 1 0001111: H=1, length 15: Huffman "http://127.0.0.1:8080".
  hex('5f 4b 8f 9d29aee30c044eae05c0b86e3c0781'),
  // 0 1 0 1 1111 + 50: literal with name reference, static name index 15 + 80 = 95 = `user-agent`;
  // 1 1001110: H=1, length 78: Huffman of the user agent string.
  concat(hex('5f 50 ce'), huffmanEncodeText(USER_AGENT)),
];
const CHROMIUM_CONNECT = concat(...CHROMIUM_CONNECT_LINES);

const CHROMIUM_CONNECT_FIELDS: HeaderList = [
  [':method', 'CONNECT'],
  [':scheme', 'https'],
  [':authority', '127.0.0.1:4433'],
  [':path', '/wt'],
  [':protocol', 'webtransport'],
  ['sec-webtransport-http3-draft02', '1'],
  ['origin', 'http://127.0.0.1:8080'],
  ['user-agent', USER_AGENT],
];

/**
 * The field section of the extended CONNECT that headless Chromium 156 (Debian bookworm) sent to
 * `svcd` for `new WebTransport('https://127.0.0.1:57048/')` from a page at 127.0.0.1:44375,
 * captured from the HEADERS frame the server received.
 */
const CAPTURED_CHROMIUM_CONNECT_LINES: readonly Uint8Array[] = [
  '0000', // Required Insert Count 0, Base 0: static table only
  'd7', // :scheme: https (static 23)
  'cf', // :method: CONNECT (static 15)
  '508b 089d5c0b8170dc6dd034f7', // :authority (static name 0), Huffman, 11 bytes
  'c1', // :path: / (static 1)
  '2f00 b95d8749c87a3f 89 f058d360ea4567b13f', // literal name :protocol, Huffman value
  '2f0e 4148b782c69b07522b3d895a74a6b65692c1ca900b 0131', // sec-webtransport-http3-draft02: 1
  '5f4b 90 9d29aee30c044eae05c0b86e34d32eb7', // origin (static name 90), Huffman, 16 bytes
].map(hex);
const CAPTURED_CHROMIUM_CONNECT = concat(...CAPTURED_CHROMIUM_CONNECT_LINES);

describe('QPACK static table (RFC 9204 Appendix A)', () => {
  it('has the 99 entries, spot-checked across its range', () => {
    expect(QPACK_STATIC_TABLE.length).toBe(99);
    expect(QPACK_STATIC_TABLE[0]).toEqual([':authority', '']);
    expect(QPACK_STATIC_TABLE[15]).toEqual([':method', 'CONNECT']);
    expect(QPACK_STATIC_TABLE[23]).toEqual([':scheme', 'https']);
    expect(QPACK_STATIC_TABLE[25]).toEqual([':status', '200']);
    expect(QPACK_STATIC_TABLE[52]).toEqual(['content-type', 'text/html; charset=utf-8']);
    expect(QPACK_STATIC_TABLE[58]).toEqual([
      'strict-transport-security',
      'max-age=31536000; includesubdomains; preload',
    ]);
    expect(QPACK_STATIC_TABLE[63]).toEqual([':status', '100']);
    expect(QPACK_STATIC_TABLE[85]).toEqual([
      'content-security-policy',
      "script-src 'none'; object-src 'none'; base-uri 'none'",
    ]);
    expect(QPACK_STATIC_TABLE[90]).toEqual(['origin', '']);
    expect(QPACK_STATIC_TABLE[95]).toEqual(['user-agent', '']);
    expect(QPACK_STATIC_TABLE[98]).toEqual(['x-frame-options', 'sameorigin']);
  });

  it('has lowercase names only', () => {
    for (const [name] of QPACK_STATIC_TABLE) expect(name).toBe(name.toLowerCase());
  });
});

describe('QPACK prefixed integers (RFC 7541 §5.1, examples of Appendix C.1)', () => {
  it('encodes and decodes 10 and 1337 with a 5-bit prefix and 42 with an 8-bit prefix', () => {
    const view = new DataView(new ArrayBuffer(3));
    const bytes = new Uint8Array(view.buffer);
    // 000 01010: 10 fits in the prefix.
    expect(writePrefixedInt(view, 0, 5, 0, 10)).toBe(1);
    expect(toHex(bytes.subarray(0, 1))).toBe('0a');
    // 000 11111 | 1 0011010 | 0 0001010: 31 + 26 + 10 * 128 = 1337.
    expect(writePrefixedInt(view, 0, 5, 0, 1337)).toBe(3);
    expect(toHex(bytes)).toBe('1f9a0a');
    expect(readPrefixedInt(bytes, 0, 5)).toEqual({ value: 1337, bytes: 3 });
    expect(prefixedIntLength(1337, 5)).toBe(3);
    // 00101010: 42 on a full byte.
    expect(writePrefixedInt(view, 0, 8, 0, 42)).toBe(1);
    expect(readPrefixedInt(hex('2a'), 0, 8)).toEqual({ value: 42, bytes: 1 });
  });

  it('keeps the flag bits above the prefix and ignores them when reading', () => {
    const view = new DataView(new ArrayBuffer(2));
    expect(writePrefixedInt(view, 0, 6, 0xc0, 63)).toBe(2);
    expect(toHex(new Uint8Array(view.buffer))).toBe('ff00');
    expect(readPrefixedInt(hex('ff00'), 0, 6)).toEqual({ value: 63, bytes: 2 });
  });

  it('refuses truncated and oversized integers', () => {
    expectCode(() => readPrefixedInt(hex('1f9a'), 0, 5), 'qpack-error');
    expectCode(() => readPrefixedInt(hex('1f'), 0, 5), 'qpack-error');
    expectCode(() => readPrefixedInt(hex(''), 0, 5), 'qpack-error');
    expectCode(() => readPrefixedInt(hex('1f ff ff ff ff ff 01'), 0, 5), 'qpack-error');
    expect(readPrefixedInt(hex('1f ff ff ff ff 0f'), 0, 5).value).toBe(31 + 2 ** 32 - 1);
  });
});

describe('QPACK decoding', () => {
  it('decodes RFC 9204 Appendix B.1 (literal field line with name reference)', () => {
    // 00 00: Required Insert Count 0, Base 0.
    // 51: 0 1 0 1 0001 = literal with name reference, static, index 1 (`:path`).
    // 0b: H=0, length 11; then "/index.html".
    expect(decodeHeaders(hex('0000 510b 2f69 6e64 6578 2e68 746d 6c'))).toEqual([[':path', '/index.html']]);
  });

  it('decodes the reconstructed Chromium extended CONNECT, which passes the request check', () => {
    const fields = decodeHeaders(CHROMIUM_CONNECT);
    expect(fields).toEqual(CHROMIUM_CONNECT_FIELDS);
    const check = parseWebTransportRequest(fields);
    expect(check).toEqual({
      ok: true,
      request: {
        authority: '127.0.0.1:4433',
        path: '/wt',
        origin: 'http://127.0.0.1:8080',
        draft02: true,
        headers: CHROMIUM_CONNECT_FIELDS.slice(5),
      },
    });
  });

  it('decodes the bytes a real Chromium sent, in its order, and accepts the request', () => {
    const fields = decodeHeaders(CAPTURED_CHROMIUM_CONNECT);
    expect(fields).toEqual([
      [':scheme', 'https'],
      [':method', 'CONNECT'],
      [':authority', '127.0.0.1:57048'],
      [':path', '/'],
      [':protocol', 'webtransport'],
      ['sec-webtransport-http3-draft02', '1'],
      ['origin', 'http://127.0.0.1:44375'],
    ]);
    expect(parseWebTransportRequest(fields)).toMatchObject({
      ok: true,
      request: { authority: '127.0.0.1:57048', path: '/', origin: 'http://127.0.0.1:44375', draft02: true },
    });
  });

  it('refuses every truncation of the real Chromium block that cuts a line', () => {
    const lineEnds = new Set<number>();
    let offset = 0;
    for (const line of CAPTURED_CHROMIUM_CONNECT_LINES) {
      offset += line.length;
      lineEnds.add(offset);
    }
    for (let length = 0; length < CAPTURED_CHROMIUM_CONNECT.length; length++) {
      const cut = CAPTURED_CHROMIUM_CONNECT.subarray(0, length);
      if (lineEnds.has(length)) expect(() => decodeHeaders(cut)).not.toThrow();
      else expectCode(() => decodeHeaders(cut), 'qpack-error');
    }
  });

  it('decodes every prefix of the Chromium block that ends on a line, and rejects the others', () => {
    const boundaries = new Set<number>();
    let offset = 0;
    for (const line of CHROMIUM_CONNECT_LINES) {
      offset += line.length;
      boundaries.add(offset);
    }
    for (let length = 0; length < CHROMIUM_CONNECT.length; length++) {
      const cut = CHROMIUM_CONNECT.subarray(0, length);
      if (boundaries.has(length)) {
        expect(decodeHeaders(cut).length).toBe([...boundaries].filter((b) => b <= length).length - 1);
      } else {
        expectCode(() => decodeHeaders(cut), 'qpack-error');
      }
    }
  });

  it('accepts the N (never index) bit on both literal forms', () => {
    // 0 1 1 1 0001: literal with name reference, N=1, static `:path`; value "/a".
    // 0 0 1 1 0 001: literal with literal name, N=1, H=0, name length 1: "x"; value "y".
    expect(decodeHeaders(hex('0000 71 02 2f61 31 78 01 79'))).toEqual([
      [':path', '/a'],
      ['x', 'y'],
    ]);
  });

  it('accepts any Delta Base with Sign 0, as the Base is unused without a dynamic table', () => {
    expect(decodeHeaders(hex('00 7f 10 d9'))).toEqual([[':status', '200']]);
  });

  it('decodes an empty field section', () => {
    expect(decodeHeaders(hex('0000'))).toEqual([]);
  });

  it('keeps bytes above 0x7f as Latin-1 characters', () => {
    expect(decodeHeaders(hex('0000 5f 50 02 c3a9'))).toEqual([['user-agent', '\u00c3\u00a9']]);
  });

  // The field sections and encoder stream instructions it refuses: h3-rejects.test.ts.

  it('decodes static index 98, the last entry', () => {
    expect(decodeHeaders(hex('0000 ff 23'))).toEqual([['x-frame-options', 'sameorigin']]);
  });

  it('limits the field section size (name + value + 32 per line) to 16 KiB by default', () => {
    const fits = 'v'.repeat(DEFAULT_MAX_FIELD_SECTION_SIZE - 32 - 3);
    expect(decodeHeaders(encodeHeaders([['x-a', fits]]))[0]![1].length).toBe(fits.length);
    expectCode(() => decodeHeaders(encodeHeaders([['x-a', `${fits}v`]])), 'qpack-error');
    // Many small lines add up as well: 600 lines of 3 + 1 + 32 bytes = 21600.
    const many = Array.from({ length: 600 }, () => ['x-a', 'b'] as const);
    expectCode(() => decodeHeaders(encodeHeaders(many)), 'qpack-error');
    expect(decodeHeaders(encodeHeaders(many), { maxFieldSectionSize: 600 * 36 }).length).toBe(600);
    // Static references count too.
    expectCode(() => decodeHeaders(hex('0000 d9'), { maxFieldSectionSize: 32 + 9 }), 'qpack-error');
    expect(decodeHeaders(hex('0000 d9'), { maxFieldSectionSize: 32 + 10 }).length).toBe(1);
  });

  it('checks a Huffman string against the limit before and while decoding it', () => {
    // 240 'a' take 1200 bits = 150 bytes: H=1 with the 7-bit prefix full (ff), then 150 - 127 = 23.
    const value = huffmanEncodeText('a'.repeat(240));
    const block = concat(hex('0000 5f 50 ff 17'), value);
    expect(decodeHeaders(block)[0]![1]).toBe('a'.repeat(240));
    // One byte short of room: the decoder stops while decoding.
    expectCode(() => decodeHeaders(block, { maxFieldSectionSize: 32 + 10 + 239 }), 'qpack-error');
    // Not even room for the shortest possible decoding (150 * 8 / 30 = 40 bytes): refused up front.
    expectCode(() => decodeHeaders(block, { maxFieldSectionSize: 32 + 10 + 39 }), 'qpack-error');
  });
});

describe('QPACK encoding of responses', () => {
  it('encodes `:status 200` as static index 25', () => {
    // 00 00: prefix; d9 = 1 1 011001: indexed field line, static, index 25.
    expect(toHex(encodeHeaders([[':status', '200']]))).toBe('0000d9');
  });

  it('uses a name reference when only the name is in the table, a literal name otherwise', () => {
    const block = encodeHeaders([
      [':status', '418'],
      ['content-type', 'application/octet-stream'],
      ['sec-webtransport-http3-draft', 'draft02'],
    ]);
    const expected = concat(
      hex('0000'),
      // 0 1 0 1 1111 + 09: name reference, static index 15 + 9 = 24 (`:status`); length 3, "418".
      hex('5f 09 03'),
      ascii('418'),
      // 0 1 0 1 1111 + 1d: name reference, static index 15 + 29 = 44 (`content-type`); length 24.
      hex('5f 1d 18'),
      ascii('application/octet-stream'),
      // 0 0 1 0 0 111 + 15: literal name, N=0, H=0, length 7 + 21 = 28; then length 7, "draft02".
      hex('27 15'),
      ascii('sec-webtransport-http3-draft'),
      hex('07'),
      ascii('draft02'),
    );
    expect(toHex(block)).toBe(toHex(expected));
  });

  it('round-trips field sections of every representation and length', () => {
    const sections: HeaderList[] = [
      [],
      [[':status', '200']],
      QPACK_STATIC_TABLE,
      [
        ['x-long-name-'.repeat(20), 'v'.repeat(1000)],
        ['empty', ''],
        ['latin', '\u00ff\u0080'],
      ],
    ];
    for (const fields of sections) {
      const view = new DataView(new ArrayBuffer(fieldSection.byteLength(fields) + 4));
      const written = fieldSection.encodeInto(view, 4, fields);
      expect(written).toBe(view.byteLength - 4);
      const bytes = new Uint8Array(view.buffer, 4);
      expect(fieldSection.decode(bytes, { maxFieldSectionSize: 1 << 20 })).toEqual({
        value: fields,
        bytes: bytes.length,
      });
    }
  });

  it('refuses to encode what HTTP/3 forbids (TypeError: caller misuse)', () => {
    expect(() => encodeHeaders([['Content-Type', 'x']])).toThrow(TypeError);
    expect(() => encodeHeaders([['', 'x']])).toThrow(TypeError);
    expect(() => encodeHeaders([['x', 'a\r\nb']])).toThrow(TypeError);
    expect(() => encodeHeaders([['x', '\u20ac']])).toThrow(TypeError);
    expect(() => latin1Encode('\u0100')).toThrow(TypeError);
  });
});

describe('QPACK encoder stream under capacity 0', () => {
  it('accepts Set Dynamic Table Capacity 0, in any split', () => {
    const reader = new QpackEncoderStreamReader();
    reader.push(hex('20'));
    reader.push(hex('2020'));
    reader.push(new Uint8Array(0));
  });

  it('rejects a capacity above 0, even when it arrives in pieces', () => {
    const reader = new QpackEncoderStreamReader();
    reader.push(hex('3f'));
    reader.push(hex('e1'));
    // 0x3f 0xe1 0x1f: 31 + 0x61 + 0x1f * 128 = 4096.
    expectCode(() => reader.push(hex('1f')), 'qpack-stream-error');
  });
});
