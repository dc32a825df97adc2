import { describe, expect, it } from 'vitest';
import {
  type Capsule,
  CapsuleReader,
  capsule,
  encodeCapsule,
  MAX_CLOSE_REASON_BYTES,
} from '../src/h3/capsules.js';
import { decodeDatagram, encodeDatagram, h3Datagram } from '../src/h3/datagram.js';
import { ascii, bytewise, concat, expectCode, hex, toHex } from './support/h3-bytes.js';

function readCapsules(chunks: readonly Uint8Array[]): Capsule[] {
  const reader = new CapsuleReader();
  const out = chunks.flatMap((chunk) => reader.push(chunk));
  reader.end();
  return out;
}

describe('capsules: golden bytes', () => {
  it.each<[string, Capsule, string]>([
    [
      'CLOSE_WEBTRANSPORT_SESSION',
      { type: 'close-session', code: 7, reason: 'bye' },
      // 6843: type 0x2843 as a 2-byte varint | 07: length | 00000007: error code (32 bits) | "bye"
      '6843 07 00000007 627965',
    ],
    [
      'CLOSE_WEBTRANSPORT_SESSION without a reason',
      { type: 'close-session', code: 0xffffffff, reason: '' },
      // 6843 | 04: length | ffffffff: the largest code
      '6843 04 ffffffff',
    ],
    [
      'DRAIN_WEBTRANSPORT_SESSION',
      { type: 'drain-session' },
      // 800078ae: type 0x78ae as a 4-byte varint (it is above 16383) | 00: empty value
      '800078ae 00',
    ],
    [
      'DATAGRAM',
      { type: 'datagram', payload: ascii('abc') },
      // 00: type | 03: length | "abc"
      '00 03 616263',
    ],
  ])('encodes and decodes %s', (_label, value, bytes) => {
    const encoded = encodeCapsule(value);
    expect(toHex(encoded)).toBe(toHex(hex(bytes)));
    expect(capsule.decode(encoded)).toEqual({ value, bytes: encoded.length });
  });

  it('carries a UTF-8 reason of up to 1024 bytes', () => {
    const reason = 'é'.repeat(MAX_CLOSE_REASON_BYTES / 2);
    const encoded = encodeCapsule({ type: 'close-session', code: 1, reason });
    expect(capsule.decode(encoded).value).toEqual({ type: 'close-session', code: 1, reason });
    expect(() => encodeCapsule({ type: 'close-session', code: 1, reason: `${reason}a` })).toThrow(TypeError);
    expect(() => encodeCapsule({ type: 'close-session', code: 2 ** 32, reason: '' })).toThrow(TypeError);
  });

  it('writes at an offset and refuses a buffer that is too small', () => {
    const value: Capsule = { type: 'datagram', payload: ascii('xy') };
    const view = new DataView(new ArrayBuffer(capsule.byteLength(value) + 1));
    expect(capsule.encodeInto(view, 1, value)).toBe(4);
    expect(toHex(new Uint8Array(view.buffer))).toBe('0000027879');
    expect(() => capsule.encodeInto(new DataView(new ArrayBuffer(3)), 0, value)).toThrow(TypeError);
  });
});

describe('capsules: decoding', () => {
  it('skips unknown capsule types', () => {
    expect(capsule.decode(hex('21 02 abcd'))).toEqual({ value: undefined, bytes: 4 });
    expect(capsule.decode(hex('ffffffffffffffff 00'))).toEqual({ value: undefined, bytes: 9 });
  });

  // The capsules it refuses: h3-rejects.test.ts.
});

describe('CapsuleReader', () => {
  const close = encodeCapsule({ type: 'close-session', code: 42, reason: 'done' });
  const stream = concat(
    encodeCapsule({ type: 'datagram', payload: ascii('one') }),
    hex('21 03 aabbcc'), // unknown capsule, skipped
    encodeCapsule({ type: 'drain-session' }),
    hex('ffffffffffffffff 01 00'), // unknown capsule with an id beyond 2^53, skipped
    close,
  );
  const expected: Capsule[] = [
    { type: 'datagram', payload: ascii('one') },
    { type: 'drain-session' },
    { type: 'close-session', code: 42, reason: 'done' },
  ];

  it('yields the same capsules whatever the chunking', () => {
    expect(readCapsules([stream])).toEqual(expected);
    expect(readCapsules(bytewise(stream))).toEqual(expected);
  });

  it('fails with capsule-error when the stream ends inside a capsule, at every offset', () => {
    const boundaries = new Set([0]);
    let at = 0;
    while (at < stream.length) {
      at += capsule.decode(stream, at).bytes;
      boundaries.add(at);
    }
    for (let length = 0; length <= stream.length; length++) {
      const reader = new CapsuleReader();
      reader.push(stream.subarray(0, length));
      if (boundaries.has(length)) reader.end();
      else expectCode(() => reader.end(), 'capsule-error');
    }
  });

  it('refuses anything after CLOSE_WEBTRANSPORT_SESSION', () => {
    expectCode(() => new CapsuleReader().push(concat(close, hex('00'))), 'capsule-error');
    const reader = new CapsuleReader();
    expect(reader.push(close)).toEqual([{ type: 'close-session', code: 42, reason: 'done' }]);
    expectCode(() => reader.push(hex('00')), 'capsule-error');
    expectCode(() => reader.push(hex('00')), 'closed');
  });

  it('checks announced lengths before buffering', () => {
    // DATAGRAM of 2^30 bytes: refused at its header, nothing allocated.
    expectCode(() => new CapsuleReader().push(hex('00 c000000040000000')), 'capsule-error');
    expectCode(() => new CapsuleReader({ maxDatagramPayload: 2 }).push(hex('00 03')), 'capsule-error');
    // A close with more than 4 + 1024 bytes.
    expectCode(() => new CapsuleReader().push(hex('6843 4405')), 'capsule-error');
    // An unknown capsule may be any size: it is skipped, not buffered.
    expect(new CapsuleReader().push(hex('21 c000000040000000 00'))).toEqual([]);
  });
});

describe('HTTP/3 datagrams (RFC 9297 §2.1)', () => {
  it('prefixes the payload with the quarter stream id', () => {
    // 00: quarter stream id 0 (stream 0) | "hi"
    expect(toHex(encodeDatagram(0, ascii('hi')))).toBe('006869');
    // 01: quarter stream id 1 (stream 4)
    expect(toHex(encodeDatagram(4, ascii('hi')))).toBe('016869');
    // 40 40: quarter stream id 64 (stream 256) as a 2-byte varint
    expect(toHex(encodeDatagram(256, new Uint8Array(0)))).toBe('4040');
  });

  it('decodes without copying the payload', () => {
    const bytes = hex('01 010203');
    const datagram = decodeDatagram(bytes);
    expect(datagram.quarterStreamId).toBe(1);
    expect(Array.from(datagram.payload)).toEqual([1, 2, 3]);
    expect(datagram.payload.buffer).toBe(bytes.buffer);
    expect(datagram.payload.byteOffset).toBe(1);
  });

  it('writes only the prefix when the caller places the payload', () => {
    const view = new DataView(new ArrayBuffer(h3Datagram.byteLength(256, 3)));
    expect(h3Datagram.encodeInto(view, 0, 256)).toBe(2);
    expect(h3Datagram.encodeInto(view, 0, 256, hex('aabbcc'))).toBe(5);
    expect(toHex(new Uint8Array(view.buffer))).toBe('4040aabbcc');
  });

  it('refuses stream ids that are not client-initiated bidirectional streams', () => {
    for (const streamId of [1, 2, 3, 5, -4, 0.5]) {
      expect(() => encodeDatagram(streamId, new Uint8Array(0))).toThrow(TypeError);
    }
  });

  it('rejects datagrams without a whole quarter stream id', () => {
    for (const bytes of ['', '40', '80 0000', 'c0 00000000 0000', 'ff ffffffff ffffff 00']) {
      expectCode(() => decodeDatagram(hex(bytes)), 'datagram-error');
    }
  });
});
