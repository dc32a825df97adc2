import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '@svc/runtime';
import { memoryLogger } from '@svc/runtime/testing';
import { decodeWithFfmpeg, type RunningRtspServer, startRtspServer } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VideoIngest, type VideoIngestOptions } from '../src/ingest.js';
import type { RtspSourceState } from '../src/rtsp/index.js';
import type { AccessUnit } from '../src/types.js';
import { waitFor } from './support/wait.js';

const USER = 'pilot';
const PASSWORD = 'n0t-in-any-log-7f3a';

let open: RunningRtspServer;
let locked: RunningRtspServer;
let dir: string;

beforeAll(async () => {
  [open, locked] = await Promise.all([
    startRtspServer({
      mounts: [
        { path: '/h264', codec: 'h264' },
        { path: '/h265', codec: 'h265' },
        { path: '/mjpeg', codec: 'mjpeg' },
      ],
    }),
    startRtspServer({ mounts: [{ path: '/h264', codec: 'h264' }], user: USER, password: PASSWORD }),
  ]);
  dir = await mkdtemp(path.join(tmpdir(), 'svc-rtsp-ingest-'));
}, 60_000);

afterAll(async () => {
  await Promise.all([open?.stop(), locked?.stop(), dir && rm(dir, { recursive: true, force: true })]);
});

/** A logger that keeps every line, to check what reaches the logs (redacted as every logger does). */
function capturingLogger(): Logger & { readonly lines: string[] } {
  const logger = memoryLogger();
  return {
    ...logger,
    get lines() {
      return logger.records.map((r) => `${r.level} ${r.message} ${JSON.stringify(r.fields)}`);
    },
  };
}

async function collect(options: Omit<VideoIngestOptions, 'onAccessUnit'>, frames: number) {
  const units: AccessUnit[] = [];
  const states: RtspSourceState[] = [];
  const ingest = await VideoIngest.start({
    ...options,
    onAccessUnit: (au) => units.push(au),
    onStateChange: (state) => states.push(state),
  });
  try {
    await waitFor(
      () => units.length >= frames,
      `${frames} access units (got ${units.length}, states ${states.join(',')})`,
    );
  } finally {
    await ingest.stop();
  }
  return { units, states };
}

const FORMATS = { h264: 'h264', h265: 'hevc', mjpeg: 'mjpeg' } as const;
const CODECS = { h264: 'avc1.42c01e', h265: 'hev1.1.6.L63.90', mjpeg: 'mjpeg' } as const;

describe('RTSP ingest from the GStreamer RTSP server, decoded by ffmpeg', () => {
  for (const transport of ['tcp', 'udp'] as const) {
    for (const codec of ['h264', 'h265', 'mjpeg'] as const) {
      it(`${codec} over ${transport}: whole access units that decode without error`, async () => {
        const logger = capturingLogger();
        const { units } = await collect(
          { input: open.url(`/${codec}`), codec: CODECS[codec], rtspTransport: transport, logger },
          45,
        );
        // A live mount joins mid-stream: start at the first keyframe, as a pilot would.
        const fromKey = units.slice(units.findIndex((u) => u.keyframe));
        expect(fromKey.length).toBeGreaterThan(10);
        const file = path.join(dir, `${codec}-${transport}.${FORMATS[codec]}`);
        await writeFile(file, Buffer.concat(fromKey.map((u) => u.data)));
        const report = await decodeWithFfmpeg(file, FORMATS[codec]);
        expect(report.errors).toEqual([]);
        expect(report.frames).toBe(fromKey.length);
        const bandwidthWarnings = logger.lines.filter((l) => l.startsWith('warn Motion JPEG uses'));
        expect(bandwidthWarnings.length).toBe(codec === 'mjpeg' ? 1 : 0);
      });
    }
  }

  it('uses SVC_RTSP_USER / SVC_RTSP_PASSWORD and never logs them or the full URL', async () => {
    const logger = capturingLogger();
    const { units } = await collect(
      {
        input: locked.url('/h264'),
        codec: CODECS.h264,
        env: { SVC_RTSP_USER: USER, SVC_RTSP_PASSWORD: PASSWORD },
        logger,
      },
      20,
    );
    expect(units.some((u) => u.keyframe)).toBe(true);
    const credentialed = locked.url('/h264').replace('rtsp://', `rtsp://${USER}:${PASSWORD}@`);
    const everything = logger.lines.join('\n');
    expect(logger.lines.length).toBeGreaterThan(0);
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain(credentialed);
  });

  it('reports a wrong password as a clear error, without the password', async () => {
    const logger = capturingLogger();
    const errors: string[] = [];
    const ingest = await VideoIngest.start({
      input: locked.url('/h264').replace('rtsp://', `rtsp://${USER}:wrong-${PASSWORD}@`),
      codec: CODECS.h264,
      logger,
      onAccessUnit: () => {},
      onStateChange: (_state, detail) => {
        if (detail?.error) errors.push(`${detail.error.code}: ${detail.error.message}`);
      },
    });
    try {
      await waitFor(() => errors.length > 0, 'an authentication error');
    } finally {
      await ingest.stop();
    }
    expect(errors[0]).toMatch(/^unauthorized: .*(rejected|credentials)/);
    expect([...errors, ...logger.lines].join('\n')).not.toContain(PASSWORD);
  });

  it('refuses a camera that sends another codec than configured', async () => {
    const errors: string[] = [];
    const ingest = await VideoIngest.start({
      input: open.url('/h265'),
      codec: CODECS.h264,
      onAccessUnit: () => {},
      onError: (err) => errors.push(err.code),
    });
    try {
      await waitFor(() => errors.length > 0, 'a codec mismatch');
    } finally {
      await ingest.stop();
    }
    expect(errors).toEqual(['codec-mismatch']);
  });

  it('reconnects when the camera restarts mid-stream, and frames come again', async () => {
    const camera = await startRtspServer({ mounts: [{ path: '/cam', codec: 'h264' }] });
    const units: AccessUnit[] = [];
    const states: RtspSourceState[] = [];
    const ingest = await VideoIngest.start({
      input: camera.url('/cam'),
      codec: CODECS.h264,
      rtsp: { backoffBaseMs: 100, stallTimeoutMs: 2000 },
      onAccessUnit: (au) => units.push(au),
      onStateChange: (state) => states.push(state),
    });
    try {
      await waitFor(() => units.length >= 10, 'frames before the restart');
      await camera.restart();
      const before = units.length;
      await waitFor(
        () => states.includes('backoff') && units.length >= before + 30,
        'frames after the restart',
      );
      expect(states.filter((s) => s === 'playing').length).toBeGreaterThanOrEqual(2);
      const after = units.slice(before);
      expect(after.find((u) => u.keyframe)).toBeDefined();
    } finally {
      await ingest.stop();
      await camera.stop();
    }
  });
});
