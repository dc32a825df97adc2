import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  decodeWithFfmpeg,
  ffmpegRtpSource,
  gstreamerRtpSource,
  type RunningSource,
  type TestCodec,
} from '@svc/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MediaError } from '../src/errors.js';
import { VideoIngest } from '../src/ingest.js';
import type { AccessUnit } from '../src/types.js';
import { freeUdpPort, waitFor } from './support/wait.js';

const FRAMES = 45;
const CODECS: Record<TestCodec, { codec: string; format: 'h264' | 'hevc' | 'mjpeg' }> = {
  h264: { codec: 'avc1.42c00d', format: 'h264' },
  h265: { codec: 'hev1.1.6.L63.90', format: 'hevc' },
  mjpeg: { codec: 'mjpeg', format: 'mjpeg' },
};

let dir: string;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-ingest-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
});
afterEach(async () => {
  while (cleanups.length > 1) await cleanups.pop()!();
});
afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Receives a source's RTP into access units until `frames` have come, then decodes them with ffmpeg. */
async function ingestAndDecode(
  codec: TestCodec,
  start: (port: number) => RunningSource,
  frames: number,
  label: string,
): Promise<{ units: AccessUnit[]; decoded: number; errors: string[] }> {
  const units: AccessUnit[] = [];
  const port = await freeUdpPort();
  const ingest = await VideoIngest.start({
    input: `rtp://127.0.0.1:${port}`,
    codec: CODECS[codec].codec,
    onAccessUnit: (au) => units.push(au),
  });
  cleanups.push(() => ingest.stop());
  const source = start(port);
  cleanups.push(() => source.stop());
  await waitFor(() => units.length >= frames, `${frames} access units from ${label} (got ${units.length})`);
  await source.done;
  const file = path.join(dir, `${label}.${CODECS[codec].format}`);
  await writeFile(file, Buffer.concat(units.map((u) => u.data)));
  const report = await decodeWithFfmpeg(file, CODECS[codec].format);
  return { units, decoded: report.frames, errors: report.errors };
}

describe('RTP ingest from real encoders, decoded by ffmpeg', () => {
  for (const codec of ['h264', 'h265'] as const) {
    for (const tool of ['ffmpeg', 'gstreamer'] as const) {
      it(`${codec} from ${tool}: every frame out, whole, decodable, keyframes found`, async () => {
        const start = (port: number) =>
          (tool === 'ffmpeg' ? ffmpegRtpSource : gstreamerRtpSource)({
            codec,
            port,
            frames: FRAMES,
            gop: 15,
          });
        const { units, decoded, errors } = await ingestAndDecode(codec, start, FRAMES, `${codec}-${tool}`);
        expect(errors).toEqual([]);
        expect(units).toHaveLength(FRAMES);
        expect(decoded).toBe(FRAMES);
        expect(units.filter((u) => u.keyframe).length).toBe(FRAMES / 15);
        expect(units[0]!.keyframe).toBe(true);
        expect(units.every((u) => u.codec === CODECS[codec].codec)).toBe(true);
        const steps = units.slice(1).map((u, i) => u.captureTimeUs - units[i]!.captureTimeUs);
        expect(steps.every((d) => Math.abs(d - 33_333) <= 1)).toBe(true);
      });
    }
  }

  it('mjpeg from ffmpeg over bare rtp:// is refused before anything opens', async () => {
    const port = await freeUdpPort();
    await expect(
      VideoIngest.start({ input: `rtp://127.0.0.1:${port}`, codec: 'mjpeg', onAccessUnit: () => {} }),
    ).rejects.toMatchObject({ code: 'mjpeg-over-rtp', message: expect.stringContaining('RTSP') });
  });

  it('h264 with four slices per frame: one access unit per frame', async () => {
    const start = (port: number) => ffmpegRtpSource({ codec: 'h264', port, frames: 30, slices: 4 });
    const { units, decoded, errors } = await ingestAndDecode('h264', start, 30, 'h264-slices');
    expect(errors).toEqual([]);
    expect(decoded).toBe(30);
    expect(units.every((u) => u.details.slices === 4)).toBe(true);
  });

  it('h265 open GOP: CRA pictures are random access points', async () => {
    const start = (port: number) =>
      ffmpegRtpSource({ codec: 'h265', port, frames: 45, gop: 15, openGop: true });
    const { units, decoded, errors } = await ingestAndDecode('h265', start, 45, 'h265-cra');
    expect(errors).toEqual([]);
    expect(decoded).toBe(45);
    const keyframes = units.flatMap((u, i) => (u.keyframe ? [i] : []));
    expect(keyframes).toEqual([0, 15, 30]);
    // After the first IDR, x265's open-GOP keyframes are CRA (NAL type 21).
    expect(units[15]!.details.nalTypes).toContain(21);
  });
});

describe('ingest configuration errors', () => {
  it('names what is wrong with the codec or the URL', async () => {
    const bad = (input: string, codec: string) => VideoIngest.start({ input, codec, onAccessUnit: () => {} });
    await expect(bad('rtp://127.0.0.1:5004', 'h264')).rejects.toMatchObject({ code: 'bad-codec' });
    await expect(bad('http://camera/stream', 'avc1.42e01e')).rejects.toMatchObject({ code: 'bad-url' });
    await expect(bad('rtp://camera.local:5004', 'avc1.42e01e')).rejects.toBeInstanceOf(MediaError);
  });
});
