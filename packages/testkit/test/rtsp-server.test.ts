import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRtspServer, startRtspServer } from '../src/index.js';

const run = promisify(execFile);

interface Probe {
  readonly ok: boolean;
  readonly streams: { codec_name?: string; width?: number; height?: number }[];
  readonly stderr: string;
}

/** Asks ffprobe what the URL serves, over RTSP with interleaved TCP. */
async function probe(url: string): Promise<Probe> {
  try {
    const { stdout, stderr } = await run(
      'ffprobe',
      ['-v', 'error', '-rtsp_transport', 'tcp', '-show_streams', '-of', 'json', url],
      { timeout: 30_000 },
    );
    const parsed = JSON.parse(stdout) as { streams?: Probe['streams'] };
    return { ok: true, streams: parsed.streams ?? [], stderr };
  } catch (err) {
    return { ok: false, streams: [], stderr: String((err as { stderr?: unknown }).stderr ?? err) };
  }
}

describe('startRtspServer', () => {
  let server: RunningRtspServer;

  beforeAll(async () => {
    server = await startRtspServer({
      mounts: [
        { path: '/h264', codec: 'h264' },
        { path: '/h265', codec: 'h265' },
        { path: '/mjpeg', codec: 'mjpeg' },
      ],
      width: 320,
      height: 240,
    });
  });

  afterAll(async () => {
    await server?.stop();
  });

  it.each([
    ['/h264', 'h264'],
    ['/h265', 'hevc'],
    ['/mjpeg', 'mjpeg'],
  ])('serves %s as %s at the requested size', async (path, codec) => {
    const result = await probe(server.url(path));
    expect(result.stderr).toBe('');
    expect(result.streams).toEqual([expect.objectContaining({ codec_name: codec, width: 320, height: 240 })]);
  });

  it('binds 127.0.0.1 on a free port and builds URLs from it', () => {
    expect(server.port).toBeGreaterThan(0);
    expect(server.url('/h264')).toBe(`rtsp://127.0.0.1:${server.port}/h264`);
  });

  it('answers 404 for a mount it does not have', async () => {
    const result = await probe(server.url('/nothing-here'));
    expect(result.ok).toBe(false);
    expect(result.stderr).toMatch(/404/);
  });

  it('serves again on the same port after restart()', async () => {
    const { port } = server;
    await server.restart();
    expect(server.port).toBe(port);
    const result = await probe(server.url('/h264'));
    expect(result.streams).toEqual([expect.objectContaining({ codec_name: 'h264' })]);
  });
});

describe('startRtspServer with credentials', () => {
  let server: RunningRtspServer;

  beforeAll(async () => {
    server = await startRtspServer({
      mounts: [{ path: '/cam', codec: 'h264' }],
      user: 'viewer',
      password: 'p@ss w:rd',
    });
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('challenges a client without credentials with 401', async () => {
    const result = await probe(server.url('/cam'));
    expect(result.ok).toBe(false);
    expect(result.stderr).toMatch(/401/);
  });

  it('serves the user with the right password', async () => {
    const url = server.url('/cam').replace('rtsp://', `rtsp://viewer:${encodeURIComponent('p@ss w:rd')}@`);
    const result = await probe(url);
    expect(result.streams).toEqual([expect.objectContaining({ codec_name: 'h264' })]);
  });

  it('refuses a wrong password', async () => {
    const result = await probe(server.url('/cam').replace('rtsp://', 'rtsp://viewer:wrong@'));
    expect(result.ok).toBe(false);
    expect(result.stderr).toMatch(/401/);
  });
});

describe('stop()', () => {
  it('ends the server so nothing listens on its port any more', async () => {
    const server = await startRtspServer({ mounts: [{ path: '/x', codec: 'mjpeg' }] });
    const url = server.url('/x');
    await server.stop();
    await server.stop();
    const result = await probe(url);
    expect(result.ok).toBe(false);
    expect(result.stderr).toMatch(/Connection refused/i);
  });
});
