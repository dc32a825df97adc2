import { describe, expect, it } from 'vitest';
import { CHUNK_HEADER_BYTES, FramePacker, NO_PARITY, parityCountFor } from '../src/index.js';
import { headerOf, packOne, testFrame } from './support/helpers.js';

describe('parityCountFor', () => {
  it('rounds the rate up, applies the floor and the code limit', () => {
    expect(parityCountFor(20, { rate: 0.15, minPerBlock: 0 })).toBe(3);
    expect(parityCountFor(7, { rate: 0.15, minPerBlock: 0 })).toBe(2);
    expect(parityCountFor(2, { rate: 0.15, minPerBlock: 3 })).toBe(3);
    expect(parityCountFor(5, NO_PARITY)).toBe(0);
    expect(parityCountFor(200, { rate: 0.5, minPerBlock: 0 })).toBe(55);
    expect(() => parityCountFor(4, { rate: -1, minPerBlock: 0 })).toThrow(TypeError);
    expect(() => parityCountFor(4, { rate: 0.1, minPerBlock: 1.5 })).toThrow(TypeError);
  });
});

describe('FramePacker', () => {
  it('fits every datagram in 1200 bytes by default and sizes chunks evenly', () => {
    const packed = packOne(testFrame(5000, { rate: 0.25, minPerBlock: 0 }));
    // 5010 bytes with frame info -> 5 chunks of 1002 bytes, 2 parity.
    expect(packed.dataChunks).toBe(5);
    expect(packed.parityChunks).toBe(2);
    expect(packed.blocks).toBe(1);
    expect(packed.datagrams.map((d) => d.byteLength - CHUNK_HEADER_BYTES)).toEqual([
      1002, 1002, 1002, 1002, 1002, 1002, 1002,
    ]);
    expect(packed.parityBytes).toBe(2004);
    expect(packed.bytes).toBe(packed.datagrams.reduce((n, d) => n + d.byteLength, 0));
    for (const d of packed.datagrams) expect(d.byteLength).toBeLessThanOrEqual(1200);
  });

  it('starts the first chunk with the frame info and the access unit', () => {
    const frame = testFrame(100, NO_PARITY, {
      captureTimestampUs: 0x01020304,
      gopPosition: 0x0506,
      captureClockUs: 0x0708090a,
    });
    const [only] = packOne(frame).datagrams;
    expect([...only!.subarray(14, 24)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(only!.subarray(24)).toEqual(frame.data);
  });

  it('numbers frames with wrapping 16-bit ids', () => {
    const packer = new FramePacker({ channel: 9, firstFrameId: 0xfffe });
    const ids = [0, 1, 2].map(() => packer.pack(testFrame(10, NO_PARITY), 0).frameId);
    expect(ids).toEqual([0xfffe, 0xffff, 0]);
    expect(packer.nextFrameId).toBe(1);
  });

  it('splits a large frame into interleaved blocks, data before parity', () => {
    const packed = packOne(testFrame(40_000, { rate: 0.3, minPerBlock: 2 }), { maxBlockData: 12 });
    const headers = packed.datagrams.map(headerOf);
    expect(packed.blocks).toBe(3);
    // Consecutive datagrams always belong to different blocks.
    for (let i = 1; i < headers.length; i++)
      expect(headers[i]!.blockIndex).not.toBe(headers[i - 1]!.blockIndex);
    expect(headers.filter((h) => h.endOfFrame).every((h) => h.blockIndex === 2)).toBe(true);
    // Chunk indexes never go down along the send order: low (data) ones leave first.
    for (let i = 1; i < headers.length; i++) {
      expect(headers[i]!.chunkIndex).toBeGreaterThanOrEqual(headers[i - 1]!.chunkIndex);
    }
    expect(headers.every((h) => h.keyframe === false && h.frameId === packed.frameId)).toBe(true);
  });

  it('gives a one-chunk block parity as long as its chunk', () => {
    const packed = packOne(testFrame(10, { rate: 0, minPerBlock: 2 }));
    expect(packed.datagrams.map((d) => d.byteLength)).toEqual([34, 34, 34]);
  });

  it('refuses bad options and oversized frames with TypeError', () => {
    expect(() => new FramePacker({ channel: 0 })).toThrow(TypeError);
    expect(() => new FramePacker({ channel: 1, maxDatagramBytes: 14 })).toThrow(TypeError);
    expect(() => new FramePacker({ channel: 1, maxBlockData: 255 })).toThrow(TypeError);
    expect(() => new FramePacker({ channel: 1, firstFrameId: 70_000 })).toThrow(TypeError);
    const small = new FramePacker({ channel: 1, maxDatagramBytes: 20, maxBlockData: 1 });
    expect(small.maxFrameBytes).toBe(256 * 6 - 10);
    expect(() => small.pack(testFrame(small.maxFrameBytes + 1, NO_PARITY), 0)).toThrow(TypeError);
    expect(small.pack(testFrame(small.maxFrameBytes, NO_PARITY), 0).blocks).toBe(256);
  });
});
