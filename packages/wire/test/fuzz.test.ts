import { describe, expect, it } from 'vitest';
import { chunkHeader, FramePacker, Reassembler, WireError } from '../src/index.js';
import { randomBytes, randomInt, seededRandom } from '../src/sim/index.js';
import { testFrame } from './support/helpers.js';

const RUNS = 100_000;

describe('fuzz', () => {
  it(`meets ${RUNS} random and mutated datagrams with coded errors only`, () => {
    const random = seededRandom(0x5eed);
    const packer = new FramePacker({ channel: 1, maxDatagramBytes: 300, maxBlockData: 8 });
    const valid: Uint8Array[] = [];
    for (let i = 0; i < 40; i++) {
      const size = randomInt(random, 1, 3000);
      valid.push(
        ...packer.pack(testFrame(size, { rate: 0.3, minPerBlock: 1 }, { keyframe: i % 7 === 0 }, i), i)
          .datagrams,
      );
    }
    let delivered = 0;
    const reassembler = new Reassembler({
      channel: 1,
      onFrame: () => delivered++,
      maxPendingFrames: 8,
      maxFrameBytes: 64 * 1024,
    });
    const codes = new Map<string, number>();
    let accepted = 0;
    for (let run = 0; run < RUNS; run++) {
      const datagram = run % 4 === 0 ? randomBytes(random, randomInt(random, 0, 64)) : mutate(valid, random);
      try {
        chunkHeader.decode(new DataView(datagram.buffer, datagram.byteOffset, datagram.byteLength));
        reassembler.handleDatagram(datagram, run);
        accepted++;
      } catch (err) {
        if (!(err instanceof WireError)) throw err;
        codes.set(err.code, (codes.get(err.code) ?? 0) + 1);
      }
    }
    // The fuzzer reached both sides: plenty rejected under several codes, plenty accepted.
    expect(accepted).toBeGreaterThan(RUNS / 10);
    expect(codes.size).toBeGreaterThanOrEqual(6);
    expect(delivered).toBeGreaterThan(0);
    expect(reassembler.pendingFrames).toBeLessThanOrEqual(8);
  });
});

function mutate(valid: Uint8Array[], random: () => number): Uint8Array {
  const source = valid[Math.floor(random() * valid.length)]!;
  const out = source.slice();
  switch (randomInt(random, 0, 4)) {
    case 0: {
      const flips = randomInt(random, 1, 4);
      for (let i = 0; i < flips; i++)
        out[randomInt(random, 0, Math.min(out.length - 1, 19))]! ^= 1 << randomInt(random, 0, 7);
      return out;
    }
    case 1:
      return out.subarray(0, randomInt(random, 0, out.length));
    case 2:
      out[randomInt(random, 0, Math.min(out.length - 1, 13))] = randomInt(random, 0, 255);
      return out;
    case 3: {
      const longer = new Uint8Array(out.length + randomInt(random, 1, 40));
      longer.set(out);
      return longer;
    }
    default:
      return out; // a replay of a valid datagram
  }
}
