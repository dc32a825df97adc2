import { describe, expect, it } from 'vitest';
import { H264Depacketizer } from '../src/h264/depacketizer.js';
import { H265Depacketizer } from '../src/h265/depacketizer.js';
import type { AccessUnit, Depacketizer, RtpPacket } from '../src/types.js';
import { hex, packetizeH264, packetizeH265, seededRandom } from './support/rtp-builders.js';

/** Mutated packets per depacketiser configuration; three configurations run. */
const PACKETS_PER_RUN = 40_000;
const SEED = 0x5eed_2026;

type Random = () => number;

function randomBytes(random: Random, length: number): Uint8Array {
  return Uint8Array.from({ length }, () => Math.floor(random() * 256));
}

function nal(header: readonly number[], random: Random, length: number): Uint8Array {
  return Uint8Array.from([...header, ...randomBytes(random, length)]);
}

/** H.264 access units shaped like a camera's: parameter sets + SEI + IDR, P pictures of two slices. */
function h264Corpus(random: Random): Uint8Array[][] {
  const sps = hex('6742c00dd90141fb0110000003001000000303c0f142a480');
  const pps = hex('68cb83cb20');
  return [
    [sps, pps, nal([0x06, 0x05], random, 20), nal([0x65, 0x88, 0x84], random, 300)],
    [nal([0x09], random, 1), nal([0x41, 0x9a], random, 90), nal([0x41, 0x16, 0x68], random, 70)],
    [nal([0x01, 0x9f], random, 150)],
    [nal([0x41, 0x9a], random, 20)],
  ];
}

/** H.265 access units: VPS/SPS/PPS + SEI + CRA, TRAIL_R of two slice segments, and an IDR. */
function h265Corpus(random: Random): Uint8Array[][] {
  const vps = hex('40010c01ffff01600000030090000003000003003c928090');
  const sps = hex('42010101600000030090000003000003003ca00a080f16592a4932bc05a020000003002000000303c1');
  const pps = hex('4401c172b46240');
  return [
    [vps, sps, pps, nal([0x4e, 0x01], random, 20), nal([0x2a, 0x01, 0xac], random, 300)],
    [nal([0x46, 0x01], random, 1), nal([0x02, 0x01, 0xd0], random, 90), nal([0x02, 0x01, 0x40], random, 70)],
    [nal([0x02, 0x01, 0xe0], random, 150)],
    [nal([0x26, 0x01, 0xac], random, 120)],
  ];
}

/** One network mishap or corruption applied to a packet, or none. */
function mutate(packet: RtpPacket, random: Random): RtpPacket {
  const roll = random();
  if (roll < 0.35) return packet;
  if (roll < 0.55) {
    const payload = packet.payload.slice();
    const flips = 1 + Math.floor(random() * 3);
    for (let i = 0; i < flips && payload.length > 0; i++) {
      const bit = Math.floor(random() * payload.length * 8);
      payload[bit >>> 3]! ^= 1 << (bit & 7);
    }
    return { ...packet, payload };
  }
  if (roll < 0.7) {
    return { ...packet, payload: packet.payload.slice(0, Math.floor(random() * packet.payload.length)) };
  }
  if (roll < 0.8) return { ...packet, payload: randomBytes(random, Math.floor(random() * 64)) };
  if (roll < 0.9) return { ...packet, marker: random() < 0.5 };
  return { ...packet, timestamp: Math.floor(random() * 2 ** 32) };
}

interface FuzzResult {
  readonly units: AccessUnit[];
  readonly packets: number;
}

/** Feeds `count` packets from `source`, mutated, lost, duplicated and reordered at random. */
function fuzz(d: Depacketizer, source: readonly RtpPacket[], count: number, random: Random): FuzzResult {
  const units: AccessUnit[] = [];
  let fed = 0;
  let index = 0;
  while (fed < count) {
    const roll = random();
    if (roll < 0.03) {
      d.handleLoss();
      index++;
      continue;
    }
    if (roll < 0.035) d.reset(random() < 0.5);
    const pick = roll < 0.05 ? Math.floor(random() * source.length) : index++;
    const packet = mutate(source[pick % source.length]!, random);
    units.push(...d.handlePacket(packet, fed));
    fed++;
  }
  return { units, packets: fed };
}

function countStartCodes(data: Uint8Array): number {
  let count = 0;
  for (let i = 0; i + 3 < data.length; i++) {
    if (data[i] === 0 && data[i + 1] === 0 && data[i + 2] === 0 && data[i + 3] === 1) count++;
  }
  return count;
}

function expectWellFormed(d: Depacketizer, { units, packets }: FuzzResult): void {
  expect(d.stats.packets).toBe(packets);
  expect(d.stats.accessUnits).toBe(units.length);
  for (const au of units) {
    expect(au.data.length).toBeGreaterThan(4);
    expect(Array.from(au.data.subarray(0, 4))).toEqual([0, 0, 0, 1]);
    expect(countStartCodes(au.data)).toBeGreaterThanOrEqual(au.details.nalTypes.length);
    expect(au.details.slices).toBeGreaterThan(0);
  }
  // The run exercised both sides: whole access units and dropped, malformed ones.
  expect(units.length).toBeGreaterThan(packets / 100);
  expect(d.stats.droppedAccessUnits).toBeGreaterThan(0);
  expect(d.stats.skipped.malformed ?? 0).toBeGreaterThan(0);
}

describe('fuzzed RTP payloads', () => {
  it('H.264: no exception escapes and every access unit is Annex B', () => {
    const random = seededRandom(SEED);
    const source = packetizeH264(h264Corpus(random), { maxPayload: 64 });
    const d = new H264Depacketizer({ codec: 'avc1.42c00d' });
    expectWellFormed(d, fuzz(d, source, PACKETS_PER_RUN, random));
  });

  it('H.265: no exception escapes and every access unit is Annex B', () => {
    const random = seededRandom(SEED + 1);
    const source = packetizeH265(h265Corpus(random), { maxPayload: 64 });
    const d = new H265Depacketizer({ codec: 'hev1.1.6.L60.90' });
    expectWellFormed(d, fuzz(d, source, PACKETS_PER_RUN, random));
  });

  it('H.265 with DONL: no exception escapes and every access unit is Annex B', () => {
    const random = seededRandom(SEED + 2);
    const source = packetizeH265(h265Corpus(random), { maxPayload: 64, donl: true });
    const d = new H265Depacketizer({ codec: 'hev1.1.6.L60.90', donlPresent: true });
    expectWellFormed(d, fuzz(d, source, PACKETS_PER_RUN, random));
  });
});
