import {
  type AssembledFrame,
  chunkHeader,
  type FrameLoss,
  FramePacker,
  type FrameToPack,
  type PackerOptions,
  type ParityPolicy,
  Reassembler,
  type ReassemblerOptions,
} from '../../src/index.js';
import { randomBytes, seededRandom } from '../../src/sim/index.js';

/** A reassembler that records what it hands over. */
export function recordingReassembler(options: Partial<ReassemblerOptions> = {}) {
  const frames: AssembledFrame[] = [];
  const losses: FrameLoss[] = [];
  const reassembler = new Reassembler({
    channel: 1,
    onFrame: (f) => frames.push(f),
    onFrameLost: (l) => losses.push(l),
    ...options,
  });
  return { reassembler, frames, losses };
}

/** A frame of `size` seeded random bytes. */
export function testFrame(
  size: number,
  parity: ParityPolicy,
  overrides: Partial<FrameToPack> = {},
  seed = size,
): FrameToPack {
  return {
    data: randomBytes(seededRandom(seed), size),
    keyframe: false,
    captureTimestampUs: 123_456,
    gopPosition: 7,
    parity,
    ...overrides,
  };
}

/** Packs one frame with a fresh packer on channel 1. */
export function packOne(frame: FrameToPack, options: Partial<PackerOptions> = {}) {
  return new FramePacker({ channel: 1, ...options }).pack(frame, 1000);
}

/** Header of a datagram. */
export function headerOf(datagram: Uint8Array) {
  return chunkHeader.decode(new DataView(datagram.buffer, datagram.byteOffset, datagram.byteLength)).value;
}

/** Shuffles a copy of `items` with a seeded generator. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const random = seededRandom(seed);
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
