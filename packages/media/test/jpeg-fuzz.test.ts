import { seededRandom as seeded } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import { JpegDepacketizer } from '../src/jpeg/depacketizer.js';
import { makeQuantTables } from '../src/jpeg/tables.js';
import type { RtpPacket } from '../src/types.js';
import { encodeFlatScan } from './support/jpeg-encoder.js';
import { readJpegLayout } from './support/jpeg-file.js';
import { packetizeJpeg, type RtpJpegFrameSpec, widenTable } from './support/jpeg-payload.js';
import { framePackets } from './support/jpeg-rtp.js';

const PACKETS = 100_000;

/** Valid frames of every supported shape, split into small packets so frames span many of them. */
function sourceFrames(): RtpPacket[][] {
  const { luma, chroma } = makeQuantTables(60);
  const specs: Array<Omit<RtpJpegFrameSpec, 'width' | 'height'>> = [
    { type: 1, q: 50 },
    { type: 0, q: 90 },
    { type: 65, q: 30, restart: { interval: 2 } },
    { type: 64, q: 75, restart: { interval: 1 } },
    { type: 1, q: 255, tables: { precision: 0, data: Uint8Array.from([...luma, ...chroma]) } },
    { type: 1, q: 200, tables: { precision: 0, data: Uint8Array.from([...luma, ...chroma]) } },
    { type: 1, q: 200, tables: { precision: 0, data: new Uint8Array(0) } },
    { type: 65, q: 128, restart: { interval: 3 }, tables: { precision: 1, data: widenTable(luma) } },
  ];
  return specs.map((spec, i) => {
    const scan = encodeFlatScan({
      sampling: (spec.type & 1) === 1 ? '4:2:0' : '4:2:2',
      mcusWide: 3,
      mcusHigh: 2,
      lumaDc: (x, y) => ((x * 7 + y * 3 + i) % 9) - 4,
      ...(spec.restart === undefined ? {} : { restartInterval: spec.restart.interval }),
      withEoi: i % 2 === 0,
    });
    const payloads = packetizeJpeg(scan.scan, {
      ...spec,
      width: scan.width,
      height: scan.height,
      scanBytesPerPacket: 12,
    });
    return framePackets(payloads, 0);
  });
}

function mutate(payload: Uint8Array, random: () => number): Uint8Array {
  const pick = (n: number) => Math.floor(random() * n);
  const copy = payload.slice();
  switch (pick(6)) {
    case 0: {
      // Flip a bit in the RTP JPEG headers, where the interesting decisions are.
      const at = pick(Math.min(copy.length, 20));
      copy[at] = copy[at]! ^ (1 << pick(8));
      return copy;
    }
    case 1: {
      copy[pick(copy.length)] = pick(256);
      return copy;
    }
    case 2:
      return copy.subarray(0, pick(copy.length + 1));
    case 3: {
      const longer = new Uint8Array(copy.length + 1 + pick(40));
      longer.set(copy);
      for (let i = copy.length; i < longer.length; i++) {
        longer[i] = pick(256);
      }
      return longer;
    }
    case 4:
      return Uint8Array.from({ length: pick(24) }, () => pick(256));
    default: {
      // A plausible header with random fields.
      for (let i = 0; i < Math.min(8, copy.length); i++) {
        copy[i] = random() < 0.5 ? pick(256) : copy[i]!;
      }
      return copy;
    }
  }
}

describe('JpegDepacketizer fuzz', () => {
  it(`takes ${PACKETS} mutated packets without throwing and emits only whole JPEG files`, () => {
    const random = seeded(0x2435);
    const frames = sourceFrames();
    const depacketizer = new JpegDepacketizer({ codec: 'mjpeg' });
    let fed = 0;
    let emitted = 0;
    let timestamp = 0;
    while (fed < PACKETS) {
      const frame = frames[Math.floor(random() * frames.length)]!;
      timestamp = (timestamp + (random() < 0.9 ? 3000 : Math.floor(random() * 0x1_0000_0000))) >>> 0;
      const mutating = random() < 0.5;
      for (let i = 0; i < frame.length; i++) {
        const roll = random();
        if (mutating && roll < 0.03) {
          depacketizer.handleLoss();
          continue;
        }
        const source = frame[i]!;
        let packet: RtpPacket = { ...source, timestamp };
        if (mutating && roll < 0.15) {
          packet = { ...packet, payload: mutate(source.payload, random) };
        }
        if (mutating && roll > 0.97) {
          packet = { ...packet, marker: !packet.marker, timestamp: (timestamp + 1) >>> 0 };
        }
        const units = depacketizer.handlePacket(packet, fed);
        fed++;
        for (const unit of units) {
          emitted++;
          const data = unit.data;
          expect(data[0] === 0xff && data[1] === 0xd8, 'starts with SOI').toBe(true);
          expect(data[data.length - 2] === 0xff && data[data.length - 1] === 0xd9, 'ends with EOI').toBe(
            true,
          );
          expect(() => readJpegLayout(data)).not.toThrow();
        }
      }
      if (random() < 0.01) {
        depacketizer.reset(random() < 0.5);
      }
    }
    const stats = depacketizer.stats;
    expect(stats.packets).toBe(fed);
    expect(stats.accessUnits).toBe(emitted);
    // Both sides were reached: whole frames came out, and broken ones were dropped for several reasons.
    expect(emitted).toBeGreaterThan(PACKETS / 100);
    expect(stats.droppedAccessUnits).toBeGreaterThan(100);
    expect(stats.skipped.malformed).toBeGreaterThan(100);
    expect(stats.skipped['unsupported-type']).toBeGreaterThan(100);
    expect(stats.skipped['missing-tables']).toBeGreaterThan(0);
  });
});
