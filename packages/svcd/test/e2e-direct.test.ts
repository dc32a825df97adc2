import { fileURLToPath } from 'node:url';
import {
  ChromiumSession,
  ffmpegRtpSource,
  gstreamerRtpSource,
  type RunningRtspServer,
  type RunningSource,
  startRtspServer,
} from '@svc/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WatchResult } from './fixtures/pilot-page.js';
import { type DevDaemon, freeUdpPort, startDevDaemon } from './support/daemon.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));
const screenshots = fileURLToPath(new URL('../../../test-results/', import.meta.url));
const FRAMES = 300; // 10 s at 30 fps

let chromium: ChromiumSession;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  chromium = await ChromiumSession.open();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await chromium?.close();
});

async function daemonFor(input: string, codec: string): Promise<DevDaemon> {
  const daemon = await startDevDaemon({ input, codec });
  cleanups.push(() => daemon.stop());
  return daemon;
}

function sendWhenWatched(daemon: DevDaemon, start: () => RunningSource, pilots = 1): void {
  void daemon.waitForLog('pilot session opened', pilots).then(() => {
    const source = start();
    cleanups.push(() => source.stop());
  });
}

const channel = (r: WatchResult) => Object.values(r.stats.channels)[0]!;

describe('direct path: camera → svcd → WebTransport → pilot in Chromium', () => {
  it('H.264 over RTP: the page decodes at least 95 % of the frames sent in 10 s', async () => {
    const rtpPort = await freeUdpPort();
    const daemon = await daemonFor(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d');
    sendWhenWatched(daemon, () => ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: FRAMES, gop: 30 }));
    const result = await chromium.run<WatchResult>({
      entry: page,
      exportName: 'watch',
      args: [daemon.url, daemon.hash, 12],
      timeoutMs: 60_000,
    });
    const stats = channel(result);
    expect(result.message).toBeNull();
    expect(stats.decoded).toBeGreaterThanOrEqual(0.95 * FRAMES);
    expect(stats.painted).toBeGreaterThan(0.9 * FRAMES);
    expect(result.stats.clockOffsetMs).toBeDefined();
    expect(stats.latency.p50Ms).toBeGreaterThan(0);
    expect(stats.latency.p50Ms).toBeLessThan(500);
  });

  it('Motion JPEG from the GStreamer RTSP server likewise', async () => {
    const camera: RunningRtspServer = await startRtspServer({ mounts: [{ path: '/mjpeg', codec: 'mjpeg' }] });
    cleanups.push(() => camera.stop());
    const daemon = await daemonFor(camera.url('/mjpeg'), 'mjpeg');
    const result = await chromium.run<WatchResult>({
      entry: page,
      exportName: 'watch',
      args: [daemon.url, daemon.hash, 10],
      timeoutMs: 60_000,
    });
    const stats = channel(result);
    const arrived = stats.reassembler.framesDelivered + stats.reassembler.framesLost;
    expect(arrived).toBeGreaterThan(250);
    expect(stats.decoded).toBeGreaterThanOrEqual(0.95 * arrived);
    expect(daemon.log()).toContain('Motion JPEG uses several times the bandwidth');
  });

  it('H.265 without a hardware decoder: the page says so on the video area', async () => {
    const rtpPort = await freeUdpPort();
    const daemon = await daemonFor(`rtp://127.0.0.1:${rtpPort}`, 'hev1.1.6.L63.90');
    sendWhenWatched(daemon, () => ffmpegRtpSource({ codec: 'h265', port: rtpPort, frames: 90 }));
    const result = await chromium.run<WatchResult>({
      entry: page,
      exportName: 'watch',
      args: [daemon.url, daemon.hash, 3, true],
      timeoutMs: 60_000,
      screenshotPath: `${screenshots}h265-cannot-decode.png`,
    });
    expect(result.message).toMatch(/^Cannot decode H\.265 \(hev1\.1\.6\.L63\.90\)/);
    expect(channel(result).decoded).toBe(0);
  });

  it('serves two pilots at once, and a pilot that reloads sees video again', async () => {
    const rtpPort = await freeUdpPort();
    const daemon = await daemonFor(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d');
    sendWhenWatched(daemon, () => ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 240, gop: 30 }), 2);
    const [a, b] = await Promise.all([
      chromium.run<WatchResult[]>({
        entry: page,
        exportName: 'watchTwice',
        args: [daemon.url, daemon.hash, 3.5],
        timeoutMs: 60_000,
      }),
      chromium.run<WatchResult>({
        entry: page,
        exportName: 'watch',
        args: [daemon.url, daemon.hash, 7],
        timeoutMs: 60_000,
      }),
    ]);
    expect(channel(b).decoded).toBeGreaterThan(150);
    expect(channel(a[0]!).decoded).toBeGreaterThan(60);
    expect(channel(a[1]!).decoded).toBeGreaterThan(30); // after the reload, from the next keyframe on
  });

  it('the pilot reconnects when svcd restarts, and video comes again', async () => {
    const rtpPort = await freeUdpPort();
    const daemon = await daemonFor(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d');
    // GStreamer's udpsink keeps sending while the daemon is down (the port refuses meanwhile).
    sendWhenWatched(daemon, () => gstreamerRtpSource({ codec: 'h264', port: rtpPort, frames: 900, gop: 30 }));
    // Restart once the first keyframe has reached the pilot and video has played for a while.
    void daemon.waitForLog('pilot session opened').then(async () => {
      await new Promise((resolve) => setTimeout(resolve, 3000));
      await daemon.restart();
    });
    const result = await chromium.run<WatchResult>({
      entry: page,
      exportName: 'watchAcrossRestart',
      args: [daemon.url, daemon.hash, 60, 40],
      timeoutMs: 60_000,
      allowConsoleErrors: true, // Chromium logs the attempts that fail while svcd is down
    });
    expect(result.states).toContain('reconnecting');
    expect(result.stats.sessions).toBeGreaterThanOrEqual(2);
    expect(channel(result).decoded).toBeGreaterThanOrEqual(60);
  });
});
