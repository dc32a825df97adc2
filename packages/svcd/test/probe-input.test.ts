import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ffmpegRtpSource,
  freeUdpPort,
  type RunningRtspServer,
  type RunningSource,
  startRtspServer,
} from '@svc/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const svcd = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/svcd');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `svcd probe-input` to its end. `onListening` runs once the probe says it listens, which is
 * when a test starts its source.
 */
function probe(args: string[], onListening?: () => void): Promise<Result> {
  const child = spawn(svcd, ['probe-input', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (onListening !== undefined && stderr.includes('listening for RTP')) {
      const start = onListening;
      onListening = undefined;
      start();
    }
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const sources: RunningSource[] = [];
afterEach(async () => {
  for (const s of sources.splice(0)) await s.stop();
});

/** A source that keeps sending for the whole probe. */
const sender = (codec: 'h264' | 'h265', port: number) => () => {
  sources.push(ffmpegRtpSource({ codec, port, frames: 150, gop: 30 }));
};

describe('svcd probe-input', () => {
  it('describes an H.264 RTP stream: a line per access unit and a summary', async () => {
    const port = await freeUdpPort();
    const r = await probe(
      [`rtp://127.0.0.1:${port}`, '--codec', 'avc1.42c00d', '--seconds', '2.5'],
      sender('h264', port),
    );
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/t=0\.000s {2}key .* B {2}NAL 7,8,(6,)?5\n/);
    expect(r.stdout).toMatch(/30\.0 fps/);
    expect(r.stdout).toMatch(/keyframe every 30\.0 frames \(1\.00 s\)/);
    expect(r.stdout).toContain('B-frames: no; multiple slices: no; parameter sets in-band: yes');
    expect(r.stdout).toContain('stream implies avc1.42c00d');
  });

  it('emits JSON lines with --json, and names a codec mismatch', async () => {
    const port = await freeUdpPort();
    const r = await probe(
      [`rtp://127.0.0.1:${port}`, '--codec', 'avc1.640028', '--seconds', '2', '--json'],
      sender('h264', port),
    );
    expect(r.code).toBe(1);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; [k: string]: unknown });
    expect(lines.filter((l) => l.type === 'access-unit').length).toBeGreaterThan(30);
    expect(lines.find((l) => l.type === 'summary')).toMatchObject({
      streamCodec: 'avc1.42c00d',
      codecMatches: false,
    });
    expect(lines.at(-1)).toMatchObject({ type: 'error', code: 'codec-mismatch' });
    expect(String(lines.at(-1)!.message)).toContain('set codec = "avc1.42c00d"');
  });

  it('says when an H.265 stream arrives on a channel configured for H.264', async () => {
    const port = await freeUdpPort();
    const r = await probe(
      [`rtp://127.0.0.1:${port}`, '--codec', 'avc1.42c00d', '--seconds', '2'],
      sender('h265', port),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error \(codec-mismatch\)/);
  });

  it('says when no packets arrive', async () => {
    const port = await freeUdpPort();
    const r = await probe([`rtp://127.0.0.1:${port}`, '--codec', 'avc1.42e01e', '--seconds', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error (timeout): no RTP packets arrived from rtp://127.0.0.1:${port} within 1 s`,
    );
  });

  it('refuses Motion JPEG over bare RTP and points to RTSP', async () => {
    const r = await probe(['rtp://127.0.0.1:5004', '--codec', 'mjpeg']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error \(mjpeg-over-rtp\): .*rtsp:\/\//);
  });

  it('explains bad arguments', async () => {
    const r = await probe(['rtp://127.0.0.1:5004']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--codec is required');
  });
});

describe('svcd probe-input against an RTSP camera', () => {
  let camera: RunningRtspServer;
  let locked: RunningRtspServer;
  beforeAll(async () => {
    [camera, locked] = await Promise.all([
      startRtspServer({ mounts: [{ path: '/cam', codec: 'h264' }] }),
      startRtspServer({ mounts: [{ path: '/cam', codec: 'h264' }], user: 'op', password: 'secret-pw-91' }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([camera?.stop(), locked?.stop()]);
  });

  it('describes the stream', async () => {
    // GStreamer's x264enc at 320x240 signals constrained baseline, level 2.1.
    const r = await probe([camera.url('/cam'), '--codec', 'avc1.42c015', '--seconds', '1.5']);
    expect(r.stderr).not.toMatch(/^error/m);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/access units over .* 30\.0 fps/);
    expect(r.stdout).toContain('parameter sets in-band');
  });

  it('names each failure: unreachable host, 401, no such mount', async () => {
    // Port 1: nothing listens there (a free port number could be taken by another test's RTSP
    // server while this one runs).
    const unreachable = await probe(['rtsp://127.0.0.1:1/cam', '--codec', 'avc1.42c01e', '--seconds', '2']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/error \(unreachable\)/);

    const unauthorized = await probe([locked.url('/cam'), '--codec', 'avc1.42c01e', '--seconds', '2']);
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toMatch(/error \(unauthorized\).*SVC_RTSP_USER/);

    const wrong = locked.url('/cam').replace('rtsp://', 'rtsp://op:wrong-secret-pw-91@');
    const rejected = await probe([wrong, '--codec', 'avc1.42c01e', '--seconds', '2']);
    expect(rejected.stderr).toMatch(/error \(unauthorized\)/);
    expect(rejected.stdout + rejected.stderr).not.toContain('secret-pw-91');

    const missing = await probe([camera.url('/nope'), '--codec', 'avc1.42c01e', '--seconds', '2']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/error \(not-found\)/);
  });
});
