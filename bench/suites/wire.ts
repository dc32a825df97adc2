/**
 * Wire suite: Reed-Solomon throughput on one core, and frame delivery through the real packer and
 * reassembler over seeded lossy links.
 */
import { encodeParity, parityCountFor, recoverData } from '@svc/wire';
import {
  burstLoss,
  independentLoss,
  type LossModel,
  randomBytes,
  seededRandom,
  simulateStream,
} from '@svc/wire/sim';
import type { BenchResult, BenchSuite } from '../types.js';

const SYMBOL_BYTES = 1186; // payload of a 1200-byte datagram
const BLOCKS = [8, 32]; // a delta-frame-sized and a keyframe-sized block
const PARITY_RATES = [0.15, 0.25, 0.5];
const MEASURE_MS = 1500;

/**
 * Balanced profile: parity 15 % on deltas, 30 % on keyframes (architecture page), and at least three
 * parity chunks per block (docs/adr/0003-parity-floor.md).
 */
const BALANCED = {
  delta: { rate: 0.15, minPerBlock: 3 },
  key: { rate: 0.3, minPerBlock: 3 },
} as const;

const STREAM = {
  frames: 18_000, // ten minutes at 30 fps
  fps: 30,
  keyframeInterval: 300,
  keyframeBytes: 40_000,
  deltaBytes: [2000, 10_000] as const,
};

export const suite: BenchSuite = {
  description: 'Reed-Solomon encode/decode throughput and frames delivered under loss',
  parameters: { symbolBytes: SYMBOL_BYTES, measureMs: MEASURE_MS, parity: BALANCED, stream: STREAM },
  run(report) {
    for (const k of BLOCKS) {
      for (const rate of PARITY_RATES) fecThroughput(k, rate, report);
    }
    const scenarios: [string, (seed: number) => LossModel][] = [
      ['1 % independent', (s) => independentLoss(0.01, seededRandom(s))],
      ['5 % independent', (s) => independentLoss(0.05, seededRandom(s))],
      ['10 % independent', (s) => independentLoss(0.1, seededRandom(s))],
      ['5 % in bursts of 2', (s) => burstLoss(0.05, 2, seededRandom(s))],
      ['5 % in bursts of 3', (s) => burstLoss(0.05, 3, seededRandom(s))],
      ['5 % in bursts of 6', (s) => burstLoss(0.05, 6, seededRandom(s))],
    ];
    for (const floor of [3, 2]) {
      const parity = {
        delta: { ...BALANCED.delta, minPerBlock: floor },
        key: { ...BALANCED.key, minPerBlock: floor },
      };
      const suffix = floor === BALANCED.delta.minPerBlock ? '' : ` (floor ${floor}, for comparison)`;
      scenarios.forEach(([label, loss], i) => {
        const r = simulateStream({
          ...STREAM,
          keyParity: parity.key,
          deltaParity: parity.delta,
          loss: loss(1000 + i),
          random: seededRandom(42),
        });
        const params = {
          loss: label,
          parity,
          datagramsLost: r.datagramsLost,
          datagramsSent: r.datagramsSent,
          framesRepaired: r.framesRepaired,
          framesCorrupted: r.framesCorrupted,
        };
        report({
          name: `frames delivered, ${label}${suffix}`,
          value: r.deliveredPct,
          unit: '%',
          better: 'higher',
          params,
        });
        if (i === 0) {
          report({
            name: `parity overhead, parity / data bytes${suffix}`,
            value: r.parityOverheadPct,
            unit: '%',
            better: 'lower',
            params: { parity },
          });
        }
      });
    }
  },
};

function fecThroughput(k: number, rate: number, report: (r: BenchResult) => void): void {
  const m = parityCountFor(k, { rate, minPerBlock: 0 });
  const random = seededRandom(k * 100 + m);
  const data = Array.from({ length: k }, () => randomBytes(random, SYMBOL_BYTES));
  const parity = Array.from({ length: m }, () => new Uint8Array(SYMBOL_BYTES));
  const bytes = k * SYMBOL_BYTES;
  const params = { k, m, symbolBytes: SYMBOL_BYTES };
  const pct = Math.round(rate * 100);

  const encode = perSecond(() => encodeParity(data, m, SYMBOL_BYTES, parity));
  report({
    name: `FEC encode k=${k} ${pct} % parity`,
    value: (encode * bytes) / 1e6,
    unit: 'MB/s',
    better: 'higher',
    params,
  });

  // Worst case for the decoder: m data chunks lost, every parity chunk needed.
  const chunks: (Uint8Array | undefined)[] = [...data, ...parity];
  for (let i = 0; i < m; i++) chunks[i] = undefined;
  const decode = perSecond(() => recoverData(chunks, k, m, SYMBOL_BYTES));
  report({
    name: `FEC decode k=${k} ${pct} % parity, ${m} lost`,
    value: (decode * bytes) / 1e6,
    unit: 'MB/s',
    better: 'higher',
    params,
  });
}

/** Calls per second of `fn` over {@link MEASURE_MS}, after a warm-up. */
function perSecond(fn: () => unknown): number {
  for (let i = 0; i < 200; i++) fn();
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < MEASURE_MS) {
    for (let i = 0; i < 50; i++) fn();
    calls += 50;
    elapsed = performance.now() - start;
  }
  return (calls * 1000) / elapsed;
}
