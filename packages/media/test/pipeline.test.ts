import dgram from 'node:dgram';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeWithFfmpeg, ffmpegRtpSource } from '@svc/testkit';
import { randomBytes, randomInt, seededRandom } from '@svc/wire/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RtpPipeline } from '../src/ingest.js';
import type { AccessUnit } from '../src/types.js';
import { waitFor } from './support/wait.js';

const FRAMES = 45;

/** Real RTP packets from ffmpeg, captured on a loopback socket. */
async function capture(codec: 'h264' | 'h265'): Promise<Uint8Array[]> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const packets: Uint8Array[] = [];
  let markers = 0;
  socket.on('message', (msg) => {
    packets.push(new Uint8Array(msg));
    if ((msg[1]! & 0x80) !== 0) markers++;
  });
  const source = ffmpegRtpSource({ codec, port: socket.address().port, frames: FRAMES, gop: 15 });
  try {
    await source.done;
    await waitFor(() => markers >= FRAMES, `${FRAMES} frames captured (got ${markers})`);
  } finally {
    await source.stop();
    socket.close();
  }
  return packets;
}

let h264: Uint8Array[];
let h265: Uint8Array[];
let dir: string;
beforeAll(async () => {
  [h264, h265] = await Promise.all([capture('h264'), capture('h265')]);
  dir = await mkdtemp(path.join(tmpdir(), 'svc-pipeline-'));
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Runs `packets` through a pipeline. With `reuseMemory`, every packet is handed over in the same
 * buffer, filled with garbage after each call, as memory that is reused for the next datagram.
 */
function run(
  codec: string,
  family: 'h264' | 'h265',
  packets: Uint8Array[],
  { reuseMemory = false, lendAccessUnits = false } = {},
) {
  const units: AccessUnit[] = [];
  const losses: number[] = [];
  /** The memory each access unit came in. */
  const buffers = new Set<ArrayBufferLike>();
  const pipeline = new RtpPipeline({
    codec,
    family,
    // A lent access unit is valid during the call only: kept as a copy.
    onAccessUnit: (u) => {
      buffers.add(u.data.buffer);
      units.push(lendAccessUnits ? { ...u, data: u.data.slice() } : u);
    },
    onLoss: (n) => losses.push(n),
    lendAccessUnits,
  });
  const scratch = new Uint8Array(65_536);
  for (const [i, p] of packets.entries()) {
    if (!reuseMemory) {
      pipeline.handleRtp(p, i);
      continue;
    }
    scratch.set(p);
    pipeline.handleRtp(scratch.subarray(0, p.length), i);
    scratch.fill(0xa5, 0, p.length);
  }
  pipeline.handleTick(Number.POSITIVE_INFINITY);
  return { units, losses, buffers, stats: pipeline.stats };
}

async function decodes(name: string, units: AccessUnit[], format: 'h264' | 'hevc') {
  const file = path.join(dir, name);
  await writeFile(file, Buffer.concat(units.map((u) => u.data)));
  return decodeWithFfmpeg(file, format);
}

describe('the ingest pipeline on real packets', () => {
  it('puts reordered and duplicated packets back: every frame, decodable', async () => {
    const random = seededRandom(4);
    // The first packet starts the stream; reordering begins after it.
    const mangled: Uint8Array[] = [h264[0]!];
    for (let i = 1; i < h264.length; i += 4) {
      const window = h264.slice(i, i + 4).sort(() => random() - 0.5);
      for (const p of window) {
        mangled.push(p);
        if (random() < 0.1) mangled.push(p.slice());
      }
    }
    const { units, stats } = run('avc1.42c00d', 'h264', mangled);
    expect(stats.reorder.duplicates).toBeGreaterThan(0);
    expect(stats.reorder.reordered).toBeGreaterThan(0);
    expect(stats.reorder.lost).toBe(0);
    expect(units).toHaveLength(FRAMES);
    const report = await decodes('reordered.h264', units, 'h264');
    expect(report).toEqual({ frames: FRAMES, errors: [] });

    // The batched receive reuses its memory for the next datagrams: fed every packet through one
    // buffer, overwritten after each call, the pipeline gives the same frames byte for byte.
    const reused = run('avc1.42c00d', 'h264', mangled, { reuseMemory: true });
    expect(reused.stats.reorder.reordered).toBe(stats.reorder.reordered);
    expect(reused.units.map((u) => Buffer.from(u.data).toString('hex'))).toEqual(
      units.map((u) => Buffer.from(u.data).toString('hex')),
    );
  });

  it('lends every access unit in one reused buffer when asked, with the same bytes', () => {
    for (const [codec, family, packets] of [
      ['avc1.42c00d', 'h264', h264],
      ['hev1.1.6.L63.90', 'h265', h265],
    ] as const) {
      const owned = run(codec, family, packets);
      const lent = run(codec, family, packets, { reuseMemory: true, lendAccessUnits: true });
      expect(owned.buffers.size).toBe(FRAMES);
      // One buffer, grown to the largest access unit: at most a handful of allocations.
      expect(lent.buffers.size).toBeLessThanOrEqual(4);
      expect(lent.units.map((u) => Buffer.from(u.data).toString('hex'))).toEqual(
        owned.units.map((u) => Buffer.from(u.data).toString('hex')),
      );
    }
  });

  it('drops the frames hit by loss, keeps the rest decodable from the next keyframe', async () => {
    const lossy = h265.filter((_, i) => i !== 40 && i !== 41);
    const { units, losses } = run('hev1.1.6.L63.90', 'h265', lossy);
    expect(losses).toEqual([2]);
    expect(units.length).toBeLessThan(FRAMES);
    expect(units.length).toBeGreaterThanOrEqual(FRAMES - 2);
    // Frames after the loss reference the lost one until the next keyframe; a pilot starts there.
    const resume = units.findIndex(
      (u, i) => i > 0 && u.keyframe && u.captureTimeUs > units[0]!.captureTimeUs,
    );
    const report = await decodes('after-loss.hevc', units.slice(resume), 'hevc');
    expect(report.errors).toEqual([]);
    expect(report.frames).toBe(units.length - resume);
  });

  it('takes an SSRC change (a restarted encoder) as a clean new stream', async () => {
    const second = h264.map((p) => {
      const copy = p.slice();
      const view = new DataView(copy.buffer);
      view.setUint32(8, view.getUint32(8) ^ 0xffff_ffff); // another SSRC
      view.setUint16(2, (view.getUint16(2) + 23_456) & 0xffff); // and another sequence base
      return copy;
    });
    const { units, stats } = run('avc1.42c00d', 'h264', [...h264, ...second]);
    expect(stats.reorder.restarts).toBe(1);
    expect(units).toHaveLength(2 * FRAMES);
    expect(units[FRAMES]!.keyframe).toBe(true);
  });
});

describe('RTP fuzz', () => {
  it('takes 100 000 random and mutated datagrams without an exception, and keeps working', () => {
    const random = seededRandom(0xf00d);
    for (const [family, codec, packets] of [
      ['h264', 'avc1.42c00d', h264],
      ['h265', 'hev1.1.6.L63.90', h265],
    ] as const) {
      let emitted = 0;
      const pipeline = new RtpPipeline({ codec, family, onAccessUnit: () => emitted++ });
      for (let i = 0; i < 50_000; i++) {
        const source = packets[randomInt(random, 0, packets.length - 1)]!;
        let datagram: Uint8Array;
        switch (randomInt(random, 0, 3)) {
          case 0:
            datagram = randomBytes(random, randomInt(random, 0, 80));
            break;
          case 1:
            datagram = source.subarray(0, randomInt(random, 0, source.length));
            break;
          case 2: {
            datagram = source.slice();
            for (let f = randomInt(random, 1, 6); f > 0; f--) {
              datagram[randomInt(random, 0, Math.min(datagram.length - 1, 40))]! ^=
                1 << randomInt(random, 0, 7);
            }
            break;
          }
          default:
            datagram = source;
        }
        pipeline.handleRtp(datagram, i);
        if (i % 100 === 0) pipeline.handleTick(i);
      }
      expect(pipeline.stats.malformed).toBeGreaterThan(1000);
      expect(emitted).toBeGreaterThan(0);
      // After the storm the same pipeline takes the camera's next stream (a new SSRC) whole: the
      // garbage left no state behind that could spoil it.
      const before = emitted;
      packets.forEach((p, i) => {
        const copy = p.slice();
        new DataView(copy.buffer).setUint32(8, 0x0bad_cafe);
        pipeline.handleRtp(copy, 1e6 + i);
      });
      pipeline.handleTick(Number.POSITIVE_INFINITY);
      expect(emitted - before).toBe(FRAMES);
    }
  });
});
