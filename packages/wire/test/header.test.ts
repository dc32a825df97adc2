import { describe, expect, it } from 'vitest';
import {
  CHUNK_HEADER_BYTES,
  type ChunkHeader,
  captureClockAgeMs,
  captureClockFromMs,
  chunkHeader,
  frameInfo,
  isWireError,
  peekChannel,
  stampSenderTimestamp,
  WireError,
} from '../src/index.js';

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const hex = (s: string) => Uint8Array.from(s.match(/[0-9a-f]{2}/gi)!.map((h) => Number.parseInt(h, 16)));

// A parity chunk (index 5 of a 4 + 2 block) of the last block of a keyframe.
const GOLDEN = hex(
  [
    '2c', // version 2 in the high nibble; flags K (0x8) and E (0x4); reserved bits 0
    '03', // channel 3
    'beef', // frame id 0xbeef
    '02', // block index 2
    '05', // chunk index 5: parity chunk 1 (index - k)
    '04', // data count k = 4
    '02', // parity count m = 2
    '0003', // last data chunk length 3
    '89abcdef', // sender timestamp 0x89abcdef µs
    'aabbcc', // payload: 3 bytes (a parity chunk is as long as the block's symbols)
  ].join(''),
);

const GOLDEN_HEADER: ChunkHeader = {
  channel: 3,
  frameId: 0xbeef,
  blockIndex: 2,
  chunkIndex: 5,
  dataCount: 4,
  parityCount: 2,
  keyframe: true,
  endOfFrame: true,
  lastDataLength: 3,
  senderTimestampUs: 0x89abcdef,
};

function encode(h: ChunkHeader, payloadLength: number): Uint8Array {
  const bytes = new Uint8Array(CHUNK_HEADER_BYTES + payloadLength);
  chunkHeader.encodeInto(view(bytes), 0, h);
  return bytes;
}

function decodeError(bytes: Uint8Array): WireError {
  try {
    chunkHeader.decode(view(bytes));
  } catch (err) {
    if (err instanceof WireError) return err;
    throw err;
  }
  throw new Error('decode accepted a malformed datagram');
}

describe('chunk header', () => {
  it('decodes the golden vector field by field', () => {
    const { value, bytes } = chunkHeader.decode(view(GOLDEN));
    expect(bytes).toBe(14);
    expect(value).toEqual(GOLDEN_HEADER);
  });

  it('encodes to the golden bytes', () => {
    const out = encode(GOLDEN_HEADER, 3);
    out.set([0xaa, 0xbb, 0xcc], CHUNK_HEADER_BYTES);
    expect(out).toEqual(GOLDEN);
    expect(chunkHeader.byteLength()).toBe(CHUNK_HEADER_BYTES);
  });

  it('round-trips flags and extreme field values', () => {
    for (const keyframe of [false, true]) {
      for (const endOfFrame of [false, true]) {
        const h: ChunkHeader = {
          channel: 255,
          frameId: 0xffff,
          blockIndex: 255,
          chunkIndex: 0,
          dataCount: 1,
          parityCount: 254,
          keyframe,
          endOfFrame,
          lastDataLength: 0xffff,
          senderTimestampUs: 0xffffffff,
        };
        expect(chunkHeader.decode(view(encode(h, 0xffff))).value).toEqual(h);
      }
    }
  });

  it('rejects truncation at every offset with short-datagram or a length error', () => {
    for (let length = 0; length < GOLDEN.byteLength; length++) {
      const err = decodeError(GOLDEN.subarray(0, length));
      expect(err.code).toBe(length < CHUNK_HEADER_BYTES ? 'short-datagram' : 'length-out-of-range');
    }
  });

  it('gives a stable code for each malformed field', () => {
    // [what, byte offset -> new value, expected code]
    const cases: [string, Record<number, number>, string][] = [
      ['version 1', { 0: 0x1c }, 'unknown-version'],
      ['version 3', { 0: 0x3c }, 'unknown-version'],
      ['version 0', { 0: 0x0c }, 'unknown-version'],
      ['reserved bit', { 0: 0x2d }, 'reserved-bits'],
      ['channel 0', { 1: 0 }, 'bad-channel'],
      ['no data, some parity', { 6: 0 }, 'parity-without-data'],
      ['no data, no parity', { 6: 0, 7: 0 }, 'counts-out-of-range'],
      ['k + m over 255', { 6: 200, 7: 56 }, 'counts-out-of-range'],
      ['chunk index past the block', { 5: 6 }, 'counts-out-of-range'],
      ['last length 0', { 9: 0 }, 'length-out-of-range'],
      ['parity shorter than last data chunk', { 9: 4 }, 'length-out-of-range'],
      ['last data chunk longer than the datagram', { 5: 3, 9: 9 }, 'length-out-of-range'],
      ['last data chunk shorter than claimed', { 5: 3, 9: 2 }, 'length-out-of-range'],
    ];
    for (const [what, patch, code] of cases) {
      const bytes = GOLDEN.slice();
      for (const [offset, value] of Object.entries(patch)) bytes[Number(offset)] = value;
      const err = decodeError(bytes);
      expect(err.code, what).toBe(code);
      expect(isWireError(err, code as WireError['code'])).toBe(true);
      expect(err.message.length).toBeGreaterThan(10);
    }
  });

  it('refuses to encode what the receiver would reject', () => {
    const bad: Partial<ChunkHeader>[] = [
      { channel: 0 },
      { channel: 256 },
      { frameId: 0x10000 },
      { dataCount: 0 },
      { dataCount: 200, parityCount: 56 },
      { chunkIndex: 6 },
      { lastDataLength: 0 },
      { senderTimestampUs: -1 },
      { blockIndex: 1.5 },
    ];
    for (const patch of bad) {
      expect(() => encode({ ...GOLDEN_HEADER, ...patch }, 3), JSON.stringify(patch)).toThrow(TypeError);
    }
    expect(() => chunkHeader.encodeInto(view(new Uint8Array(13)), 0, GOLDEN_HEADER)).toThrow(TypeError);
  });

  it('peeks the channel and restamps the sender timestamp in place', () => {
    const bytes = GOLDEN.slice();
    expect(peekChannel(bytes)).toBe(3);
    expect(peekChannel(bytes.subarray(0, 5))).toBeUndefined();
    stampSenderTimestamp(bytes, 0x01020304);
    expect(chunkHeader.decode(view(bytes)).value.senderTimestampUs).toBe(0x01020304);
    expect([...bytes.subarray(10, 14)]).toEqual([1, 2, 3, 4]);
    expect(() => stampSenderTimestamp(new Uint8Array(4), 1)).toThrow(TypeError);
  });
});

describe('frame info', () => {
  const GOLDEN_INFO = hex(
    [
      'fedcba98', // capture timestamp 0xfedcba98 µs
      '012c', // GOP position 300
      '00bc614e', // capture clock 12345678 µs
    ].join(''),
  );
  const GOLDEN_VALUE = { captureTimestampUs: 0xfedcba98, gopPosition: 300, captureClockUs: 12_345_678 };

  it('decodes and encodes the golden vector', () => {
    expect(frameInfo.decode(view(GOLDEN_INFO)).value).toEqual(GOLDEN_VALUE);
    const out = new Uint8Array(10);
    expect(frameInfo.encodeInto(view(out), 0, GOLDEN_VALUE)).toBe(10);
    expect(out).toEqual(GOLDEN_INFO);
  });

  it('writes an unknown capture clock as 0', () => {
    const out = new Uint8Array(10);
    frameInfo.encodeInto(view(out), 0, { captureTimestampUs: 1, gopPosition: 0 });
    expect(frameInfo.decode(view(out)).value.captureClockUs).toBe(0);
  });

  it('maps wall-clock ms to a capture clock and back to an age, across the 32-bit wrap', () => {
    expect(captureClockFromMs(12_345.678)).toBe(12_345_678);
    // 2^32 µs wraps to 0, which means unknown: written 1 µs later.
    expect(captureClockFromMs(4_294_967.296)).toBe(1);
    const stamped = captureClockFromMs(4_294_900); // 67 ms before the wrap
    expect(captureClockAgeMs(stamped, 4_295_000)).toBeCloseTo(100, 3);
    expect(captureClockAgeMs(stamped, 4_294_800)).toBeCloseTo(-100, 3);
    expect(captureClockAgeMs(0, 1000)).toBeUndefined();
    expect(() => captureClockFromMs(Number.NaN)).toThrow(TypeError);
  });

  it('rejects a frame too short for its info at every length', () => {
    for (let length = 0; length < 10; length++) {
      expect(() => frameInfo.decode(view(GOLDEN_INFO.subarray(0, length)))).toThrow(
        expect.objectContaining({ code: 'frame-info-short' }),
      );
    }
  });

  it('refuses out-of-range fields', () => {
    const out = view(new Uint8Array(10));
    expect(() => frameInfo.encodeInto(out, 0, { captureTimestampUs: 2 ** 32, gopPosition: 0 })).toThrow(
      TypeError,
    );
    expect(() =>
      frameInfo.encodeInto(out, 0, { captureTimestampUs: 0, gopPosition: 0, captureClockUs: -1 }),
    ).toThrow(TypeError);
    expect(() => frameInfo.encodeInto(out, 0, { captureTimestampUs: 0, gopPosition: 65536 })).toThrow(
      TypeError,
    );
  });
});
