/**
 * One deterministic workout of the wire layer whose result must be identical in Node and in
 * Chromium: packed bytes (header, frame info, Reed-Solomon parity), repairs under seeded loss,
 * coded errors for malformed input, and whole loss simulations. Runs in both; keep it free of
 * Node-only APIs.
 */
import { setFecKernel } from '../src/fec/reed-solomon.js';
import { chunkHeader, FramePacker, type ParityPolicy, Reassembler, WireError } from '../src/index.js';
import { burstLoss, independentLoss, randomBytes, seededRandom, simulateStream } from '../src/sim/index.js';

/** JSON-serialisable outcome of {@link runConformance}. */
export interface ConformanceReport {
  /** Per packed frame: FNV-1a of every datagram, in send order. */
  readonly packed: string[][];
  /** Per drop pattern: delivered frame digests and loss reasons. */
  readonly repairs: { delivered: string[]; lost: string[] }[];
  /** Error codes for a fixed list of malformed datagrams. */
  readonly errors: string[];
  /** Loss simulation results. */
  readonly simulations: Record<string, unknown>[];
}

const POLICIES: ParityPolicy[] = [
  { rate: 0, minPerBlock: 0 },
  { rate: 0.15, minPerBlock: 2 },
  { rate: 0.5, minPerBlock: 1 },
];

/** Runs the workout on the given Reed-Solomon kernel (`auto` picks WebAssembly SIMD where it exists). */
export function runConformance(kernel: 'auto' | 'scalar' = 'auto'): ConformanceReport {
  setFecKernel(kernel);
  try {
    return workout();
  } finally {
    setFecKernel('auto');
  }
}

function workout(): ConformanceReport {
  const random = seededRandom(2026);
  const frames = [1, 6, 1181, 1186, 5000, 40_000, 150_000].flatMap((size, i) =>
    POLICIES.map((parity, p) => ({
      data: randomBytes(random, size),
      keyframe: i % 2 === 0,
      captureTimestampUs: (i * 33_333 + p) >>> 0,
      gopPosition: i,
      parity,
    })),
  );
  const packer = new FramePacker({ channel: 7, maxBlockData: 48, firstFrameId: 0xfff0 });
  const packedFrames = frames.map((f) => packer.pack(f, 0xfffffff0 + frames.indexOf(f)));
  const packed = packedFrames.map((p) => p.datagrams.map(fnv1a));

  const repairs = [0.02, 0.1, 0.25].map((rate, n) => {
    const loss = independentLoss(rate, seededRandom(100 + n));
    const delivered: string[] = [];
    const lost: string[] = [];
    const reassembler = new Reassembler({
      channel: 7,
      onFrame: (f) => delivered.push(`${f.frameId}:${f.chunksRecovered}:${fnv1a(f.data)}`),
      onFrameLost: (l) => lost.push(`${l.frameId}x${l.count}:${l.reason}:${l.keyframe}`),
    });
    packedFrames.forEach((p, t) => {
      for (const d of p.datagrams) if (!loss.lose()) reassembler.handleDatagram(d, t);
    });
    reassembler.handleTick(1e9);
    return { delivered, lost };
  });

  const template = packedFrames[4]!.datagrams[0]!;
  const malformed: Uint8Array[] = [
    new Uint8Array(0),
    template.subarray(0, 13),
    patched(template, 0, 0x1c), // version 1
    patched(template, 0, template[0]! | 1),
    patched(template, 1, 0),
    patched(template, 6, 0),
    patched(patched(template, 6, 0), 7, 0),
    patched(template, 5, 250),
    patched(template, 8, 0xff),
  ];
  const errors = malformed.map((d) => {
    try {
      chunkHeader.decode(new DataView(d.buffer, d.byteOffset, d.byteLength));
      return 'accepted';
    } catch (err) {
      return err instanceof WireError ? err.code : `uncoded:${String(err)}`;
    }
  });

  const simulations = [
    independentLoss(0.05, seededRandom(1)),
    burstLoss(0.05, 3, seededRandom(2)),
    burstLoss(0.1, 6, seededRandom(3)),
  ].map((loss) => ({
    loss: loss.label,
    ...simulateStream({
      frames: 600,
      fps: 30,
      keyframeInterval: 300,
      keyframeBytes: 40_000,
      deltaBytes: [2000, 10_000],
      keyParity: { rate: 0.3, minPerBlock: 3 },
      deltaParity: { rate: 0.15, minPerBlock: 3 },
      loss,
      random: seededRandom(7),
    }),
  }));

  return { packed, repairs, errors, simulations };
}

function patched(bytes: Uint8Array, index: number, value: number): Uint8Array {
  const out = bytes.slice();
  out[index] = value;
  return out;
}

/** 32-bit FNV-1a of `bytes`, as 8 hex digits. */
export function fnv1a(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}
