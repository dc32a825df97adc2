import { describe, expect, it } from 'vitest';
import { type AssembledFrame, type FrameLoss, FramePacker, Reassembler } from '../src/index.js';
import {
  burstLoss,
  independentLoss,
  randomBytes,
  randomInt,
  seededRandom,
  simulateStream,
} from '../src/sim/index.js';

const BALANCED = { keyParity: { rate: 0.3, minPerBlock: 3 }, deltaParity: { rate: 0.15, minPerBlock: 3 } };
const STREAM = { fps: 30, keyframeInterval: 300, keyframeBytes: 40_000, deltaBytes: [2000, 10_000] as const };

describe('loss models', () => {
  it('lose the configured fraction, bursts exactly as long as configured', () => {
    const burst = burstLoss(0.05, 3, seededRandom(9));
    const draws = Array.from({ length: 200_000 }, () => burst.lose());
    const lost = draws.filter(Boolean).length / draws.length;
    expect(lost).toBeGreaterThan(0.045);
    expect(lost).toBeLessThan(0.055);
    const runs = draws
      .map((d) => (d ? '1' : '0'))
      .join('')
      .split('0')
      .filter((r) => r.length > 0);
    // Back-to-back bursts merge; every run is a whole number of bursts.
    expect(runs.every((r) => r.length % 3 === 0)).toBe(true);
    const iid = independentLoss(0.1, seededRandom(9));
    const iidLost = Array.from({ length: 100_000 }, () => iid.lose()).filter(Boolean).length;
    expect(iidLost).toBeGreaterThan(9000);
    expect(iidLost).toBeLessThan(11_000);
    expect(() => independentLoss(1, seededRandom(1))).toThrow(TypeError);
    expect(() => burstLoss(0.1, 0, seededRandom(1))).toThrow(TypeError);
  });
});

describe('frames over a seeded lossy link', () => {
  for (const [label, loss] of [
    ['5 % independent', () => independentLoss(0.05, seededRandom(11))],
    ['5 % in bursts of 3', () => burstLoss(0.05, 3, seededRandom(12))],
  ] as const) {
    it(`delivers intact frames and accounts for the rest, ${label}`, () => {
      const r = simulateStream({
        ...STREAM,
        ...BALANCED,
        frames: 3000,
        loss: loss(),
        random: seededRandom(5),
      });
      expect(r.datagramsLost).toBeGreaterThan(r.datagramsSent * 0.04);
      expect(r.framesCorrupted).toBe(0);
      expect(r.framesDelivered + r.framesReportedLost).toBe(r.framesSent);
      expect(r.framesRepaired).toBeGreaterThan(100);
      // With a floor of three parity chunks a block survives any three losses.
      expect(r.deliveredPct).toBeGreaterThan(98.5);
    });
  }

  it('loses frames it cannot repair, and says so, when the link is worse than the parity', () => {
    const r = simulateStream({
      ...STREAM,
      keyParity: { rate: 0, minPerBlock: 1 },
      deltaParity: { rate: 0, minPerBlock: 1 },
      frames: 1500,
      loss: independentLoss(0.2, seededRandom(3)),
      random: seededRandom(5),
    });
    expect(r.deliveredPct).toBeLessThan(80);
    expect(r.framesCorrupted).toBe(0);
    expect(r.framesDelivered + r.framesReportedLost).toBe(r.framesSent);
  });

  it('copes with reordering across frames: every frame delivered or reported once, in order', () => {
    const random = seededRandom(77);
    const packer = new FramePacker({ channel: 1 });
    const delivered: AssembledFrame[] = [];
    const lost: FrameLoss[] = [];
    const reassembler = new Reassembler({
      channel: 1,
      onFrame: (f) => delivered.push(f),
      onFrameLost: (l) => lost.push(l),
    });
    const sent = new Map<number, Uint8Array>();
    const inFlight: Uint8Array[] = [];
    for (let i = 0; i < 600; i++) {
      const data = randomBytes(random, randomInt(random, 500, 6000));
      const packed = packer.pack(
        {
          data,
          keyframe: i % 60 === 0,
          captureTimestampUs: i,
          gopPosition: i % 60,
          parity: { rate: 0.2, minPerBlock: 2 },
        },
        i,
      );
      sent.set(packed.frameId, data);
      inFlight.push(...packed.datagrams);
      // A network that holds a few datagrams back: swap neighbours at random, then deliver.
      while (inFlight.length > 4) {
        const j = randomInt(random, 0, 3);
        const [d] = inFlight.splice(j, 1);
        if (random() > 0.03) reassembler.handleDatagram(d!, i * 33);
      }
    }
    for (const d of inFlight) reassembler.handleDatagram(d, 600 * 33);
    reassembler.handleTick(1e9);
    const ids: number[] = [];
    for (const f of delivered) {
      expect(sameBytes(f.data, sent.get(f.frameId)!), `frame ${f.frameId}`).toBe(true);
      ids.push(f.frameId);
    }
    for (const l of lost) for (let n = 0; n < l.count; n++) ids.push(l.frameId + n);
    expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: 600 }, (_, i) => i));
    expect(delivered.length).toBeGreaterThan(560);
  });
});

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((v, i) => v === b[i]);
}
