import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryLogger } from '@svc/runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMediaError } from '../src/errors.js';
import {
  JpegDepacketizer,
  quantTableHeader,
  restartMarkerHeader,
  rtpJpegMainHeader,
} from '../src/jpeg/depacketizer.js';
import { jpegHeader } from '../src/jpeg/headers.js';
import { makeQuantTables, STANDARD_HUFFMAN_TABLES } from '../src/jpeg/tables.js';
import type { AccessUnit, RtpPacket } from '../src/types.js';
import { encodeFlatScan } from './support/jpeg-encoder.js';
import { readJpegLayout, segmentBodies } from './support/jpeg-file.js';
import { packetizeJpeg, type RtpJpegFrameSpec, widenTable } from './support/jpeg-payload.js';
import { framePackets, withPayload } from './support/jpeg-rtp.js';
import { captureRtp, run, TOOLS } from './support/jpeg-tools.js';

// ---------------------------------------------------------------------------------------------
// An independent, deliberately slow model of RFC 2435 Appendix A, to check the tables against.

/** T.81 Table K.1 (luminance), row by row. */
const K1 = [
  [16, 11, 10, 16, 24, 40, 51, 61],
  [12, 12, 14, 19, 26, 58, 60, 55],
  [14, 13, 16, 24, 40, 57, 69, 56],
  [14, 17, 22, 29, 51, 87, 80, 62],
  [18, 22, 37, 56, 68, 109, 103, 77],
  [24, 35, 55, 64, 81, 104, 113, 92],
  [49, 64, 78, 87, 103, 121, 120, 101],
  [72, 92, 95, 98, 112, 100, 103, 99],
].flat();

/** T.81 Table K.2 (chrominance), row by row. */
const K2 = [
  [17, 18, 24, 47, 99, 99, 99, 99],
  [18, 21, 26, 66, 99, 99, 99, 99],
  [24, 26, 56, 99, 99, 99, 99, 99],
  [47, 66, 99, 99, 99, 99, 99, 99],
  ...Array.from({ length: 4 }, () => Array.from({ length: 8 }, () => 99)),
].flat();

/** Zig-zag order found by walking the anti-diagonals of the 8×8 block (T.81 Figure 5). */
function zigzagByWalking(): number[] {
  const order: number[] = [];
  for (let diagonal = 0; diagonal < 15; diagonal++) {
    const cells: number[] = [];
    for (let row = 0; row < 8; row++) {
      const column = diagonal - row;
      if (column >= 0 && column < 8) {
        cells.push(row * 8 + column);
      }
    }
    // Even diagonals run from bottom-left up to top-right.
    order.push(...(diagonal % 2 === 0 ? cells.reverse() : cells));
  }
  return order;
}

function referenceTable(natural: readonly number[], q: number): number[] {
  const scale = q < 50 ? Math.trunc(5000 / q) : 200 - q * 2;
  return zigzagByWalking().map((index) => {
    const value = Math.trunc((natural[index]! * scale + 50) / 100);
    return Math.min(Math.max(value, 1), 255);
  });
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/** Quantised luma DC of block (x, y): multiples of 4 in -40..40 so every table used decodes exactly. */
const lumaPattern = (x: number, y: number): number => (((x * 3 + y * 5) % 21) - 10) * 4;

interface FlatFrame {
  readonly payloads: Uint8Array[];
  readonly scan: Uint8Array;
  readonly width: number;
  readonly height: number;
}

function flatFrame(
  spec: Omit<RtpJpegFrameSpec, 'width' | 'height'> & {
    readonly mcusWide?: number;
    readonly mcusHigh?: number;
    readonly withEoi?: boolean;
    readonly lumaDc?: (x: number, y: number) => number;
  },
): FlatFrame {
  const encoded = encodeFlatScan({
    sampling: (spec.type & 1) === 1 ? '4:2:0' : '4:2:2',
    mcusWide: spec.mcusWide ?? 4,
    mcusHigh: spec.mcusHigh ?? 3,
    lumaDc: spec.lumaDc ?? lumaPattern,
    ...(spec.restart === undefined ? {} : { restartInterval: spec.restart.interval }),
    ...(spec.withEoi === undefined ? {} : { withEoi: spec.withEoi }),
  });
  const payloads = packetizeJpeg(encoded.scan, { ...spec, width: encoded.width, height: encoded.height });
  return { payloads, scan: encoded.scan, width: encoded.width, height: encoded.height };
}

function feed(depacketizer: JpegDepacketizer, packets: readonly RtpPacket[], receivedAtMs = 0): AccessUnit[] {
  return packets.flatMap((packet, i) => depacketizer.handlePacket(packet, receivedAtMs + i));
}

/**
 * Feeds captured packets in order, reporting sequence gaps as loss. With `reuseMemory`, every
 * payload is handed over in the same buffer, filled with garbage after each call, as memory that
 * is reused for the next datagram.
 */
function depacketizeCapture(
  depacketizer: JpegDepacketizer,
  packets: readonly RtpPacket[],
  { reuseMemory = false } = {},
): AccessUnit[] {
  const units: AccessUnit[] = [];
  const scratch = new Uint8Array(65_536);
  let previous: number | undefined;
  packets.forEach((packet, i) => {
    if (previous !== undefined && ((packet.sequenceNumber - previous) & 0xffff) !== 1) {
      depacketizer.handleLoss();
    }
    previous = packet.sequenceNumber;
    if (!reuseMemory) {
      units.push(...depacketizer.handlePacket(packet, i));
      return;
    }
    scratch.set(packet.payload);
    const payload = scratch.subarray(0, packet.payload.length);
    units.push(...depacketizer.handlePacket({ ...packet, payload }, i));
    payload.fill(0xa5);
  });
  return units;
}

function expectWholeJpeg(data: Uint8Array): void {
  expect([data[0], data[1]]).toEqual([0xff, 0xd8]);
  expect([data[data.length - 2], data[data.length - 1]]).toEqual([0xff, 0xd9]);
}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

const standardTables = (q: number) => {
  const { luma, chroma } = makeQuantTables(q);
  return { precision: 0, data: Uint8Array.from([...luma, ...chroma]) };
};

// ---------------------------------------------------------------------------------------------

describe('quantisation tables (RFC 2435 Appendix A)', () => {
  it('match a slow reference for every Q of 1..99, in zig-zag order', () => {
    for (let q = 1; q <= 99; q++) {
      const { luma, chroma } = makeQuantTables(q);
      expect([...luma], `luma Q ${q}`).toEqual(referenceTable(K1, q));
      expect([...chroma], `chroma Q ${q}`).toEqual(referenceTable(K2, q));
    }
  });

  it('are the plain standard tables at Q 50 and clamp to 1..255 at the ends', () => {
    const { luma } = makeQuantTables(50);
    // Zig-zag positions 0..5 of K.1: (0,0) (0,1) (1,0) (2,0) (1,1) (0,2).
    expect([...luma.subarray(0, 6)]).toEqual([16, 11, 12, 14, 12, 10]);
    expect(makeQuantTables(1).luma.every((value) => value === 255)).toBe(true);
    // Q 99 scales by 2 %: 99 becomes 2, and the small entries round down to 0 and clamp to 1.
    expect(makeQuantTables(99).chroma.at(-1)).toBe(2);
    expect(Math.min(...makeQuantTables(99).luma)).toBe(1);
  });

  it('refuses Q values that do not select computed tables', () => {
    for (const q of [0, 100, 128, 1.5]) {
      expect(() => makeQuantTables(q)).toThrow(TypeError);
    }
  });

  it('has Huffman tables whose counts add up to their symbol lists (Annex K.3)', () => {
    const sizes = STANDARD_HUFFMAN_TABLES.map((table) => {
      expect(table.counts).toHaveLength(16);
      return [table.counts.reduce((sum, count) => sum + count, 0), table.symbols.length];
    });
    expect(sizes).toEqual([
      [12, 12],
      [162, 162],
      [12, 12],
      [162, 162],
    ]);
  });
});

describe('JPEG header writer', () => {
  const tables = makeQuantTables(50);
  const params = {
    sampling: '4:2:0',
    width: 320,
    height: 240,
    lumaTable: { precision: 0, entries: tables.luma },
    chromaTable: { precision: 0, entries: tables.chroma },
  } as const;

  it('writes the golden layout of a Q 50, type 1, 320×240 frame', () => {
    const bytes = jpegHeader.encode(params);
    expect(bytes.length).toBe(jpegHeader.byteLength(params));
    expect(bytes.length).toBe(623);
    // SOI.
    expect(hex(bytes.subarray(0, 2))).toBe('ffd8');
    // APP0, length 16: "JFIF\0", version 1.01, no units, density 1:1, no thumbnail.
    expect(hex(bytes.subarray(2, 20))).toBe('ffe000104a46494600010100000100010000');
    // DQT, length 67, Pq 0 / Tq 0, then the luma table in zig-zag order.
    expect(hex(bytes.subarray(20, 25))).toBe('ffdb004300');
    expect([...bytes.subarray(25, 89)]).toEqual(referenceTable(K1, 50));
    // DQT, Tq 1: the chroma table.
    expect(hex(bytes.subarray(89, 94))).toBe('ffdb004301');
    expect([...bytes.subarray(94, 158)]).toEqual(referenceTable(K2, 50));
    // SOF0, length 17, 8-bit samples.
    expect(hex(bytes.subarray(158, 163))).toBe('ffc0001108');
    // Height 240, then width 320.
    expect((bytes[163]! << 8) | bytes[164]!).toBe(240);
    expect((bytes[165]! << 8) | bytes[166]!).toBe(320);
    // Three components: Y 2×2 table 0, Cb 1×1 table 1, Cr 1×1 table 1.
    expect(hex(bytes.subarray(167, 177))).toBe('03012200021101031101');
    // DHT: DC 0 (length 31), AC 0 (length 181), DC 1, AC 1.
    expect(hex(bytes.subarray(177, 182))).toBe('ffc4001f00');
    expect(hex(bytes.subarray(210, 215))).toBe('ffc400b510');
    expect(hex(bytes.subarray(393, 398))).toBe('ffc4001f01');
    expect(hex(bytes.subarray(426, 431))).toBe('ffc400b511');
    // SOS, length 12: components 1/2/3 with tables 0/0, 1/1, 1/1; Ss 0, Se 63, Ah/Al 0.
    expect(hex(bytes.subarray(609))).toBe('ffda000c03010002110311003f00');
  });

  it('samples luma 2×1 for 4:2:2 and writes DRI when a restart interval is given', () => {
    const bytes = jpegHeader.encode({ ...params, sampling: '4:2:2', restartInterval: 0x0102 });
    const layout = readJpegLayout(bytes);
    expect(hex(segmentBodies(layout, 0xc0)[0]!)).toBe('0800f0014003012100021101031101');
    expect(segmentBodies(layout, 0xdd).map(hex)).toEqual(['0102']);
    expect(bytes.length).toBe(623 + 6);
  });

  it('writes 16-bit tables with Pq 1 under SOF1', () => {
    const wide = { precision: 1, entries: widenTable(tables.luma) } as const;
    const bytes = jpegHeader.encode({ ...params, lumaTable: wide });
    const layout = readJpegLayout(bytes);
    expect(segmentBodies(layout, 0xdb).map((body) => [body[0], body.length])).toEqual([
      [0x10, 129],
      [0x01, 65],
    ]);
    expect(segmentBodies(layout, 0xc0)).toHaveLength(0);
    expect(segmentBodies(layout, 0xc1)).toHaveLength(1);
  });

  it('rejects parameters a JPEG cannot carry', () => {
    expect(() => jpegHeader.encode({ ...params, width: 0 })).toThrow(TypeError);
    expect(() => jpegHeader.encode({ ...params, height: 70000 })).toThrow(TypeError);
    expect(() => jpegHeader.encode({ ...params, restartInterval: -1 })).toThrow(TypeError);
    expect(() => jpegHeader.encode({ ...params, lumaTable: { precision: 1, entries: tables.luma } })).toThrow(
      TypeError,
    );
  });
});

describe('RTP JPEG header decoders', () => {
  const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

  it('decode golden bytes', () => {
    const main = Uint8Array.of(
      0x02, // type-specific: even field
      0x01,
      0x02,
      0x03, // fragment offset 0x010203
      0x41, // type 65
      0x80, // Q 128
      0x28, // width 40 × 8 = 320
      0x1e, // height 30 × 8 = 240
    );
    expect(rtpJpegMainHeader.decode(view(main))).toEqual({
      value: { typeSpecific: 2, fragmentOffset: 0x010203, type: 65, q: 128, width: 320, height: 240 },
      bytes: 8,
    });
    const restart = Uint8Array.of(
      0x00,
      0x05, // restart interval 5
      0b1011_1111, // F = 1, L = 0, count high bits
      0xff, // count low bits: 0x3fff
    );
    expect(restartMarkerHeader.decode(view(restart))).toEqual({
      value: { interval: 5, first: true, last: false, count: 0x3fff },
      bytes: 4,
    });
    const quant = Uint8Array.of(
      0x00, // MBZ
      0x01, // precision: table 0 has 16-bit entries
      0x00,
      0x02, // length 2
      0xab,
      0xcd, // table data
      0xee, // not part of the header
    );
    const decoded = quantTableHeader.decode(view(quant));
    expect(decoded.bytes).toBe(6);
    expect(decoded.value.precision).toBe(1);
    expect(hex(decoded.value.data)).toBe('abcd');
  });

  it('round-trip what the test packetiser writes', () => {
    const tables = standardTables(10);
    const payloads = packetizeJpeg(new Uint8Array(2500).fill(7), {
      type: 64,
      q: 200,
      width: 64,
      height: 48,
      typeSpecific: 1,
      restart: { interval: 9, count: 0x123 },
      tables,
    });
    expect(payloads).toHaveLength(3);
    payloads.forEach((payload, i) => {
      const main = rtpJpegMainHeader.decode(view(payload));
      expect(main.value).toEqual({
        typeSpecific: 1,
        fragmentOffset: i * 1000,
        type: 64,
        q: 200,
        width: 64,
        height: 48,
      });
      const restart = restartMarkerHeader.decode(view(payload), main.bytes);
      expect(restart.value).toEqual({ interval: 9, first: true, last: true, count: 0x123 });
      if (i === 0) {
        const quant = quantTableHeader.decode(view(payload), main.bytes + restart.bytes);
        expect(quant.value.precision).toBe(0);
        expect([...quant.value.data]).toEqual([...tables.data]);
      }
    });
  });

  it('throw malformed-payload, never RangeError, at every truncation', () => {
    const bytes = Uint8Array.of(0, 0, 0, 0, 1, 255, 40, 30, 0, 0, 0, 4, 1, 2, 3, 4);
    for (let end = 0; end < bytes.length; end++) {
      const cut = view(bytes.subarray(0, end));
      const attempt = () => {
        const main = rtpJpegMainHeader.decode(cut);
        restartMarkerHeader.decode(cut, main.bytes);
        quantTableHeader.decode(cut, main.bytes);
      };
      let caught: unknown;
      try {
        attempt();
      } catch (err) {
        caught = err;
      }
      expect(isMediaError(caught, 'malformed-payload'), `cut at ${end}`).toBe(true);
    }
  });
});

describe('JpegDepacketizer', () => {
  it('rebuilds a fragmented frame into one complete JPEG with the access unit fields', () => {
    const frame = flatFrame({ type: 1, q: 50, scanBytesPerPacket: 5 });
    expect(frame.payloads.length).toBeGreaterThan(3);
    const depacketizer = new JpegDepacketizer({ codec: 'MJPG custom' });
    const timestamp = 2 * 90000 + 45;
    const units = feed(depacketizer, framePackets(frame.payloads, timestamp), 100);
    expect(units).toHaveLength(1);
    const unit = units[0]!;
    expect(unit).toMatchObject({
      codec: 'MJPG custom',
      rtpTimestamp: timestamp,
      captureTimeUs: 2_000_500,
      keyframe: true,
      receivedAtMs: 100 + frame.payloads.length - 1,
      details: { nalTypes: [], slices: 1, bSlice: false, inBandParameterSets: false },
    });
    const expectedHeader = jpegHeader.encode({
      sampling: '4:2:0',
      width: frame.width,
      height: frame.height,
      lumaTable: { precision: 0, entries: makeQuantTables(50).luma },
      chromaTable: { precision: 0, entries: makeQuantTables(50).chroma },
    });
    expect(hex(unit.data)).toBe(`${hex(expectedHeader)}${hex(frame.scan)}ffd9`);
    expect(depacketizer.stats).toEqual({
      packets: frame.payloads.length,
      accessUnits: 1,
      keyframes: 1,
      droppedAccessUnits: 0,
      skipped: {},
    });
  });

  it('uses the injected capture-time converter', () => {
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg', toCaptureTimeUs: (ts) => ts * 2 + 1 });
    const [unit] = feed(depacketizer, framePackets(flatFrame({ type: 0, q: 80 }).payloads, 1000));
    expect(unit?.captureTimeUs).toBe(2001);
  });

  it('appends EOI only when the scan data does not already end with it, even split over packets', () => {
    const frame = flatFrame({ type: 1, q: 50, withEoi: true });
    for (const step of [frame.scan.length, frame.scan.length - 1, 7]) {
      const payloads = packetizeJpeg(frame.scan, {
        type: 1,
        q: 50,
        width: frame.width,
        height: frame.height,
        scanBytesPerPacket: step,
      });
      const [unit] = feed(new JpegDepacketizer({ codec: 'mjpeg' }), framePackets(payloads, 0));
      expect(hex(unit!.data).endsWith(hex(frame.scan)), `step ${step}`).toBe(true);
      expectWholeJpeg(unit!.data);
    }
  });

  it('drops the frame in progress on loss and emits the next one', () => {
    const first = framePackets(flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 }).payloads, 1000);
    const second = framePackets(flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 }).payloads, 4000);
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    expect(feed(depacketizer, first.slice(0, 2))).toEqual([]);
    depacketizer.handleLoss();
    expect(feed(depacketizer, first.slice(3))).toEqual([]);
    const units = feed(depacketizer, second);
    expect(units.map((unit) => unit.rtpTimestamp)).toEqual([4000]);
    expect(depacketizer.stats).toMatchObject({ accessUnits: 1, droppedAccessUnits: 1, skipped: {} });
  });

  it('drops a frame with a gap in its fragment offsets even when no loss was reported', () => {
    const packets = framePackets(flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 }).payloads, 1000);
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    expect(feed(depacketizer, [...packets.slice(0, 2), ...packets.slice(3)])).toEqual([]);
    expect(depacketizer.stats.droppedAccessUnits).toBe(1);
  });

  it('drops a frame whose first fragment is missing', () => {
    const first = framePackets(flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 }).payloads, 1000);
    const second = framePackets(flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 }).payloads, 4000);
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    depacketizer.handleLoss();
    expect(feed(depacketizer, [...first.slice(1), ...second]).map((unit) => unit.rtpTimestamp)).toEqual([
      4000,
    ]);
    expect(depacketizer.stats.droppedAccessUnits).toBe(1);
  });

  it('drops a frame whose timestamp changes before its marker', () => {
    const first = framePackets(flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 }).payloads, 1000);
    const second = framePackets(flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 }).payloads, 4000);
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    const units = feed(depacketizer, [...first.slice(0, -1), ...second]);
    expect(units.map((unit) => unit.rtpTimestamp)).toEqual([4000]);
    expect(depacketizer.stats).toMatchObject({ accessUnits: 1, droppedAccessUnits: 1 });
  });

  it('does not count loss between frames as a dropped frame', () => {
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    depacketizer.handleLoss();
    expect(feed(depacketizer, framePackets(flatFrame({ type: 1, q: 50 }).payloads, 0))).toHaveLength(1);
    expect(depacketizer.stats.droppedAccessUnits).toBe(0);
  });

  it('reuses in-band tables announced with length 0 and caches them per Q', () => {
    const tables = { precision: 0, data: Uint8Array.from({ length: 128 }, (_, i) => 1 + (i % 50)) };
    const withTables = flatFrame({ type: 1, q: 200, tables });
    const reuse = flatFrame({ type: 1, q: 200, tables: { precision: 0, data: new Uint8Array(0) } });
    const otherQ = flatFrame({ type: 1, q: 201, tables: { precision: 0, data: new Uint8Array(0) } });
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });

    expect(feed(depacketizer, framePackets(reuse.payloads, 0))).toEqual([]);
    expect(depacketizer.stats).toMatchObject({ droppedAccessUnits: 1, skipped: { 'missing-tables': 1 } });

    const [sent] = feed(depacketizer, framePackets(withTables.payloads, 3000));
    const [reused] = feed(depacketizer, framePackets(reuse.payloads, 6000));
    expect(sent?.details.inBandParameterSets).toBe(true);
    expect(reused?.details.inBandParameterSets).toBe(false);
    const dqt = (unit: AccessUnit | undefined) =>
      segmentBodies(readJpegLayout(unit!.data), 0xdb).map((body) => [...body.subarray(1)]);
    expect(dqt(sent)).toEqual([[...tables.data.subarray(0, 64)], [...tables.data.subarray(64)]]);
    expect(dqt(reused)).toEqual(dqt(sent));

    expect(feed(depacketizer, framePackets(otherQ.payloads, 9000))).toEqual([]);
    expect(depacketizer.stats).toMatchObject({ accessUnits: 2, skipped: { 'missing-tables': 2 } });

    depacketizer.reset(true);
    expect(feed(depacketizer, framePackets(reuse.payloads, 12000))).toEqual([]);
    expect(depacketizer.stats.skipped['missing-tables']).toBe(3);
  });

  it('uses a lone in-band table for luma and chroma', () => {
    const luma = Uint8Array.from({ length: 64 }, (_, i) => 2 + i);
    const frame = flatFrame({ type: 1, q: 255, tables: { precision: 0, data: luma } });
    const [unit] = feed(new JpegDepacketizer({ codec: 'mjpeg' }), framePackets(frame.payloads, 0));
    const bodies = segmentBodies(readJpegLayout(unit!.data), 0xdb);
    expect(bodies.map((body) => [body[0], ...body.subarray(1)])).toEqual([
      [0x00, ...luma],
      [0x01, ...luma],
    ]);
  });

  it('counts reserved Q values, Q 255 without tables and bad table lengths as malformed', () => {
    const cases: Array<Omit<RtpJpegFrameSpec, 'width' | 'height'>> = [
      { type: 1, q: 0 },
      { type: 1, q: 100 },
      { type: 65, q: 127, restart: { interval: 2 } },
      { type: 1, q: 255, tables: { precision: 0, data: new Uint8Array(0) } },
      { type: 1, q: 200, tables: { precision: 0, data: new Uint8Array(100) } },
      { type: 1, q: 200, tables: { precision: 2, data: new Uint8Array(128) } },
    ];
    for (const spec of cases) {
      const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
      const frame = flatFrame({ ...spec, scanBytesPerPacket: 10 });
      expect(feed(depacketizer, framePackets(frame.payloads, 0)), JSON.stringify(spec)).toEqual([]);
      expect(depacketizer.stats, JSON.stringify(spec)).toMatchObject({
        droppedAccessUnits: 1,
        skipped: { malformed: 1 },
      });
      // The next good frame is unaffected.
      expect(feed(depacketizer, framePackets(flatFrame({ type: 1, q: 50 }).payloads, 3000))).toHaveLength(1);
    }
  });

  it('counts a zero width or height and a frame without scan data as malformed', () => {
    for (const payload of [
      Uint8Array.of(0, 0, 0, 0, 1, 50, 0, 30, 0xaa),
      Uint8Array.of(0, 0, 0, 0, 1, 50, 40, 0, 0xaa),
      Uint8Array.of(0, 0, 0, 0, 1, 50, 40, 30),
    ]) {
      const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
      expect(feed(depacketizer, framePackets([payload], 0))).toEqual([]);
      expect(depacketizer.stats.skipped).toEqual({ malformed: 1 });
    }
  });

  it('counts a header that changes within a frame as malformed', () => {
    const frame = flatFrame({ type: 1, q: 50, scanBytesPerPacket: 10 });
    const packets = framePackets(frame.payloads, 0);
    const changed = packets[1]!.payload.slice();
    changed[5] = 51;
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    expect(feed(depacketizer, [packets[0]!, withPayload(packets[1]!, changed), ...packets.slice(2)])).toEqual(
      [],
    );
    expect(depacketizer.stats).toMatchObject({ droppedAccessUnits: 1, skipped: { malformed: 1 } });
  });

  it('skips undefined types, warning once per type', () => {
    const logger = memoryLogger();
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg', logger });
    const frame = flatFrame({ type: 3, q: 50, scanBytesPerPacket: 10 });
    feed(depacketizer, framePackets(frame.payloads, 0));
    feed(depacketizer, framePackets(frame.payloads, 3000));
    expect(depacketizer.stats).toMatchObject({
      accessUnits: 0,
      droppedAccessUnits: 0,
      skipped: { 'unsupported-type': frame.payloads.length * 2 },
    });
    const warnings = logger.records.filter((r) => r.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.fields).toEqual({ type: 3 });
  });

  it('survives the first packet truncated at every offset', () => {
    const frame = flatFrame({
      type: 65,
      q: 200,
      restart: { interval: 1 },
      tables: standardTables(30),
      scanBytesPerPacket: 100_000,
    });
    const payload = frame.payloads[0]!;
    const headerBytes = 8 + 4 + 4 + 128;
    for (let end = 0; end < payload.length; end++) {
      const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
      const units = feed(depacketizer, framePackets([payload.subarray(0, end)], 0));
      if (end <= headerBytes) {
        expect(units, `cut at ${end}`).toEqual([]);
        expect(depacketizer.stats.skipped, `cut at ${end}`).toEqual({ malformed: 1 });
      } else {
        expect(units, `cut at ${end}`).toHaveLength(1);
        expectWholeJpeg(units[0]!.data);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Decoding with real tools.

describe('with real encoders and decoders', () => {
  let dir = '';

  beforeAll(async () => {
    // npm test installs these (scripts/ensure-system.sh); a missing one fails here, it is never skipped.
    for (const tool of [TOOLS.ffmpeg, TOOLS.ffprobe, TOOLS.gstLaunch]) {
      if (!existsSync(tool))
        throw new Error(`${tool} is needed (Debian packages ffmpeg, gstreamer1.0-tools)`);
    }
    dir = await mkdtemp(join(tmpdir(), 'svc-jpeg-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Writes `%03d.jpg` per frame and all frames into one `.mjpeg` file; returns the latter's path. */
  async function writeFrames(name: string, units: readonly AccessUnit[]): Promise<string> {
    await Promise.all(
      units.map((unit, i) => writeFile(join(dir, `${name}-${String(i).padStart(3, '0')}.jpg`), unit.data)),
    );
    const path = join(dir, `${name}.mjpeg`);
    await writeFile(path, Buffer.concat(units.map((unit) => unit.data)));
    return path;
  }

  /** Decodes every frame with `ffmpeg -v error`: no message may appear, and all frames must be read. */
  async function expectCleanDecode(name: string, path: string, frames: number): Promise<void> {
    const decoded = await run(TOOLS.ffmpeg, ['-v', 'error', '-f', 'mjpeg', '-i', path, '-f', 'null', '-']);
    expect(decoded.stderr).toBe('');
    expect(decoded.code).toBe(0);
    const single = await run(TOOLS.ffmpeg, [
      '-v',
      'error',
      '-f',
      'image2',
      '-i',
      join(dir, `${name}-%03d.jpg`),
      '-f',
      'null',
      '-',
    ]);
    expect(single.stderr).toBe('');
    const probe = await run(TOOLS.ffprobe, [
      '-v',
      'error',
      '-count_frames',
      '-select_streams',
      'v',
      '-show_entries',
      'stream=nb_read_frames',
      '-of',
      'csv=p=0',
      '-f',
      'mjpeg',
      path,
    ]);
    expect(probe.stderr).toBe('');
    expect(probe.stdout.trim()).toBe(String(frames));
  }

  /** MD5 of each decoded picture. */
  async function pictureHashes(path: string): Promise<string[]> {
    const result = await run(TOOLS.ffmpeg, ['-v', 'error', '-f', 'mjpeg', '-i', path, '-f', 'framemd5', '-']);
    expect(result.stderr).toBe('');
    return result.stdout
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => line.split(',').at(-1)!.trim());
  }

  /** The luma plane ffmpeg decodes from one JPEG. */
  async function decodeLuma(name: string, jpeg: Uint8Array, pixelFormat: string): Promise<RunDecoded> {
    const input = join(dir, `${name}.jpg`);
    const output = join(dir, `${name}.yuv`);
    await writeFile(input, jpeg);
    const result = await run(TOOLS.ffmpeg, [
      '-v',
      'error',
      '-y',
      '-f',
      'mjpeg',
      '-i',
      input,
      '-f',
      'rawvideo',
      '-pix_fmt',
      pixelFormat,
      output,
    ]);
    const raw = result.code === 0 ? new Uint8Array(await readFile(output)) : new Uint8Array(0);
    return { stderr: result.stderr, raw };
  }

  interface RunDecoded {
    readonly stderr: string;
    readonly raw: Uint8Array;
  }

  /** Pixels of the luma plane that differ by more than 1 from the flat-block prediction. */
  function lumaMismatches(
    raw: Uint8Array,
    width: number,
    height: number,
    lumaDc: (x: number, y: number) => number,
    dcStep: number,
  ): number {
    if (raw.length < width * height) {
      return width * height;
    }
    let mismatches = 0;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const expected = 128 + (lumaDc(x >> 3, y >> 3) * dcStep) / 8;
        if (Math.abs(raw[y * width + x]! - expected) > 1) {
          mismatches++;
        }
      }
    }
    return mismatches;
  }

  const FFMPEG_SOURCE = [
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=320x240:rate=30',
    '-frames:v',
    '30',
    '-c:v',
    'mjpeg',
    '-pix_fmt',
    'yuvj420p',
    '-huffman',
    'default',
    '-q:v',
    '5',
  ];

  it('rebuilds what ffmpeg streams (type 1, Q 255, in-band tables) into the pictures ffmpeg encoded', async () => {
    const capture = await captureRtp(
      TOOLS.ffmpeg,
      (port) => [
        '-v',
        'error',
        '-re',
        ...FFMPEG_SOURCE,
        '-f',
        'rtp',
        '-payload_type',
        '26',
        `rtp://127.0.0.1:${port}`,
      ],
      30,
    );
    expect(capture.gaps).toBe(0);
    const first = capture.packets[0]!.payload;
    expect({ type: first[4], q: first[5] }).toEqual({ type: 1, q: 255 });

    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    const units = depacketizeCapture(depacketizer, capture.packets);
    expect(units).toHaveLength(30);
    expect(depacketizer.stats).toMatchObject({ accessUnits: 30, droppedAccessUnits: 0, skipped: {} });
    for (const unit of units) {
      expectWholeJpeg(unit.data);
      expect(unit.details.inBandParameterSets).toBe(true);
    }
    const path = await writeFrames('ffmpeg', units);
    await expectCleanDecode('ffmpeg', path, 30);
    // The batched receive reuses its memory for the next datagrams: the same frames, byte for byte.
    const fromReusedMemory = depacketizeCapture(new JpegDepacketizer({ codec: 'mjpeg' }), capture.packets, {
      reuseMemory: true,
    });
    expect(fromReusedMemory.map((u) => hex(u.data))).toEqual(units.map((u) => hex(u.data)));
    // Lent frames (one buffer, reused by the next frame) have the same bytes while they are lent.
    const lentHex: string[] = [];
    const lending = new JpegDepacketizer({ codec: 'mjpeg', lendAccessUnits: true });
    for (const [i, packet] of capture.packets.entries()) {
      for (const unit of lending.handlePacket(packet, i)) lentHex.push(hex(unit.data));
    }
    expect(lentHex).toEqual(units.map((u) => hex(u.data)));

    const reference = join(dir, 'ffmpeg-reference.mjpeg');
    const encoded = await run(TOOLS.ffmpeg, ['-v', 'error', ...FFMPEG_SOURCE, '-f', 'mjpeg', reference]);
    expect(encoded.stderr).toBe('');
    expect(await pictureHashes(path)).toEqual(await pictureHashes(reference));

    // The Annex K.3 tables written are exactly those ffmpeg writes with `-huffman default`
    // (ffmpeg puts all four in one DHT segment, in another order).
    const ours = huffmanTables(segmentBodies(readJpegLayout(units[0]!.data), 0xc4));
    const theirs = huffmanTables(
      segmentBodies(readJpegLayout(new Uint8Array(await readFile(reference))), 0xc4),
    );
    expect(ours.size).toBe(4);
    expect(ours).toEqual(theirs);

    // The same stream as a sender that repeats Q 200 tables by reference (length 0) after the first frame.
    const reusing = reuseTablesAfterFirstFrame(capture.packets);
    const reusedUnits = depacketizeCapture(new JpegDepacketizer({ codec: 'mjpeg' }), reusing);
    expect(reusedUnits.map((unit) => unit.details.inBandParameterSets)).toEqual([
      true,
      ...Array.from({ length: 29 }, () => false),
    ]);
    const reusedPath = await writeFrames('ffmpeg-reused', reusedUnits);
    await expectCleanDecode('ffmpeg-reused', reusedPath, 30);
    expect(await pictureHashes(reusedPath)).toEqual(await pictureHashes(reference));
  });

  for (const [format, type] of [
    ['I420', 1],
    ['Y42B', 0],
  ] as const) {
    it(`rebuilds what GStreamer streams from ${format} (type ${type})`, async () => {
      const caps = `video/x-raw,format=${format},width=320,height=240,framerate=30/1`;
      const capture = await captureRtp(
        TOOLS.gstLaunch,
        (port) =>
          `-q videotestsrc num-buffers=30 is-live=true pattern=ball ! ${caps} ! jpegenc ! rtpjpegpay ! udpsink host=127.0.0.1 port=${port}`.split(
            ' ',
          ),
        30,
      );
      expect(capture.gaps).toBe(0);
      const first = capture.packets[0]!.payload;
      expect({ type: first[4], q: first[5] }).toEqual({ type, q: 255 });
      const units = depacketizeCapture(new JpegDepacketizer({ codec: 'mjpeg' }), capture.packets);
      expect(units).toHaveLength(30);
      const path = await writeFrames(`gst-${format}`, units);
      await expectCleanDecode(`gst-${format}`, path, 30);

      const reference = join(dir, `gst-${format}-reference.mjpeg`);
      const encoded = await run(
        TOOLS.gstLaunch,
        `-q videotestsrc num-buffers=30 pattern=ball ! ${caps} ! jpegenc ! filesink location=${reference}`.split(
          ' ',
        ),
      );
      expect(encoded.code).toBe(0);
      expect(await pictureHashes(path)).toEqual(await pictureHashes(reference));
    });
  }

  for (const [type, q, dcStep] of [
    [1, 50, 16],
    [0, 50, 16],
    [1, 80, 6],
    [0, 40, 20],
  ] as const) {
    it(`decodes computed tables: type ${type}, Q ${q}`, async () => {
      const frame = flatFrame({ type, q, mcusWide: 6, mcusHigh: 4, scanBytesPerPacket: 50 });
      const [unit] = feed(new JpegDepacketizer({ codec: 'mjpeg' }), framePackets(frame.payloads, 0));
      // Luma DC quantiser of the Q: zig-zag entry 0 of the scaled table.
      expect(makeQuantTables(q).luma[0]).toBe(dcStep);
      const decoded = await decodeLuma(`flat-${type}-${q}`, unit!.data, type === 1 ? 'yuvj420p' : 'yuvj422p');
      expect(decoded.stderr).toBe('');
      expect(lumaMismatches(decoded.raw, frame.width, frame.height, lumaPattern, dcStep)).toBe(0);
    });
  }

  for (const [type, interval] of [
    [65, 1],
    [65, 5],
    [64, 7],
  ] as const) {
    it(`decodes restart markers: type ${type}, interval ${interval}`, async () => {
      const frame = flatFrame({
        type,
        q: 50,
        restart: { interval },
        mcusWide: 20,
        mcusHigh: 15,
        scanBytesPerPacket: 200,
      });
      const [unit] = feed(new JpegDepacketizer({ codec: 'mjpeg' }), framePackets(frame.payloads, 0));
      const layout = readJpegLayout(unit!.data);
      expect(segmentBodies(layout, 0xdd).map(hex)).toEqual([interval.toString(16).padStart(4, '0')]);
      const format = type === 65 ? 'yuvj420p' : 'yuvj422p';
      const decoded = await decodeLuma(`restart-${type}-${interval}`, unit!.data, format);
      expect(decoded.stderr).toBe('');
      expect(lumaMismatches(decoded.raw, frame.width, frame.height, lumaPattern, 16)).toBe(0);

      // Control: the same scan announced without restart markers (no DRI) does not decode right,
      // so the check above depends on the DRI segment.
      const plain = packetizeJpeg(frame.scan, {
        type: type - 64,
        q: 50,
        width: frame.width,
        height: frame.height,
      });
      const [wrong] = feed(new JpegDepacketizer({ codec: 'mjpeg' }), framePackets(plain, 0));
      const control = await decodeLuma(`restart-${type}-${interval}-control`, wrong!.data, format);
      const broken =
        control.stderr !== '' || lumaMismatches(control.raw, frame.width, frame.height, lumaPattern, 16) > 0;
      expect(broken).toBe(true);
    });
  }

  it('decodes 16-bit in-band tables (SOF1), with a luma DC quantiser above 255', async () => {
    const luma = new Uint8Array(128);
    luma.set(widenTable(makeQuantTables(50).luma));
    luma[0] = 300 >> 8;
    luma[1] = 300 & 0xff;
    const chroma = makeQuantTables(50).chroma;
    const dc = (x: number, y: number): number => (((x + y) % 3) - 1) * 2;
    const frame = flatFrame({
      type: 1,
      q: 255,
      tables: { precision: 0b01, data: Uint8Array.from([...luma, ...chroma]) },
      lumaDc: dc,
    });
    const [unit] = feed(new JpegDepacketizer({ codec: 'mjpeg' }), framePackets(frame.payloads, 0));
    expect(segmentBodies(readJpegLayout(unit!.data), 0xc1)).toHaveLength(1);
    const decoded = await decodeLuma('wide-tables', unit!.data, 'yuvj420p');
    expect(decoded.stderr).toBe('');
    expect(lumaMismatches(decoded.raw, frame.width, frame.height, dc, 300)).toBe(0);
  });
});

/** The tables of DHT segment bodies by `Tc << 4 | Th`, each as hex of BITS and HUFFVAL. */
function huffmanTables(bodies: readonly Uint8Array[]): Map<number, string> {
  const tables = new Map<number, string>();
  for (const body of bodies) {
    let at = 0;
    while (at < body.length) {
      const symbols = body.subarray(at + 1, at + 17).reduce((sum, count) => sum + count, 0);
      tables.set(body[at]!, hex(body.subarray(at + 1, at + 17 + symbols)));
      at += 17 + symbols;
    }
  }
  return tables;
}

/**
 * Rewrites a captured type 1, Q 255 stream into one with Q 200 whose frames after the first send
 * their quantisation table header with length 0 ("the tables of last time").
 */
function reuseTablesAfterFirstFrame(packets: readonly RtpPacket[]): RtpPacket[] {
  let firstFrameSeen = false;
  return packets.map((packet) => {
    const payload = packet.payload.slice();
    expect(payload[4]).toBe(1);
    payload[5] = 200;
    const offset = (payload[1]! << 16) | (payload[2]! << 8) | payload[3]!;
    if (offset !== 0) {
      return withPayload(packet, payload);
    }
    if (!firstFrameSeen) {
      firstFrameSeen = true;
      return withPayload(packet, payload);
    }
    // Main header (8) then the quantisation table header (4) and its tables.
    const length = (payload[10]! << 8) | payload[11]!;
    const stripped = new Uint8Array(payload.length - length);
    stripped.set(payload.subarray(0, 12));
    stripped[10] = 0;
    stripped[11] = 0;
    stripped.set(payload.subarray(12 + length), 12);
    return withPayload(packet, stripped);
  });
}
