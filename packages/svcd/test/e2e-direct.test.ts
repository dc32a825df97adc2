import { createSocket } from 'node:dgram';
import { fileURLToPath } from 'node:url';
import {
  ffmpegRtpSource,
  freeUdpPort,
  gstreamerRtpSource,
  type RunningRtspServer,
  type RunningSource,
  startRtspServer,
} from '@svc/testkit';
import { describe, expect, it } from 'vitest';
import type { OfferSummary, PilotOutcome, WatchResult } from './fixtures/pilot-page.js';
import { useBrowserFleet } from './support/browser-fleet.js';
import { videoChannel } from './support/channels.js';
import type { FleetRobot } from './support/fleet.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));
const screenshots = fileURLToPath(new URL('../../../test-results/', import.meta.url));
const FRAMES = 300; // 10 s at 30 fps

const t = useBrowserFleet();

let robots = 0;

/** A robot of alice's org with one video channel, online; removed after the test. */
async function robotFor(input: string, codec: string): Promise<FleetRobot> {
  const robot = await t.fleet.robot(`camera-${++robots}`, videoChannel(input, codec));
  t.defer(() => robot.remove());
  return robot;
}

function sendWhenWatched(robot: FleetRobot, start: () => RunningSource, pilots = 1): void {
  void robot.daemon.waitForLog('pilot session opened', pilots).then(
    () => {
      const source = start();
      t.defer(() => source.stop());
    },
    () => undefined,
  );
}

const channel = (r: WatchResult) => Object.values(r.stats.channels)[0]!;
const BACKENDS = ['webtransport', 'webrtc'] as const;

/** The same cases on both transports (issue 19): WebTransport over QUIC, and WebRTC data channels. */
describe.each(BACKENDS)(
  'camera → svcd → %s → pilot in Chromium, the address from a signalling offer',
  (backend) => {
    it('H.264 over RTP: the page decodes at least 95 % of the frames sent in 10 s', async () => {
      const rtpPort = await freeUdpPort();
      const robot = await robotFor(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d');
      sendWhenWatched(robot, () =>
        ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: FRAMES, gop: 30 }),
      );
      const result = await t.chromium.run<WatchResult>({
        entry: page,
        exportName: 'watch',
        args: [t.fleet.cloud.signalUrl, robot.files.robotId, await robot.token(), 12, false, backend],
        timeoutMs: 60_000,
      });
      const stats = channel(result);
      expect(result.stats.backend).toBe(backend);
      expect(result.message).toBeNull();
      expect(stats.decoded).toBeGreaterThanOrEqual(0.95 * FRAMES);
      expect(stats.painted).toBeGreaterThan(0.9 * FRAMES);
      expect(result.stats.clockOffsetMs).toBeDefined();
      expect(stats.latency.p50Ms).toBeGreaterThan(0);
      expect(stats.latency.p50Ms).toBeLessThan(500);
    });

    it('Motion JPEG from the GStreamer RTSP server likewise', async () => {
      const camera: RunningRtspServer = await startRtspServer({
        mounts: [{ path: '/mjpeg', codec: 'mjpeg' }],
      });
      t.defer(() => camera.stop());
      const robot = await robotFor(camera.url('/mjpeg'), 'mjpeg');
      const result = await t.chromium.run<WatchResult>({
        entry: page,
        exportName: 'watch',
        args: [t.fleet.cloud.signalUrl, robot.files.robotId, await robot.token(), 10, false, backend],
        timeoutMs: 60_000,
      });
      const stats = channel(result);
      const arrived = stats.reassembler.framesDelivered + stats.reassembler.framesLost;
      expect(arrived).toBeGreaterThan(250);
      expect(stats.decoded).toBeGreaterThanOrEqual(0.95 * arrived);
      expect(robot.log()).toContain('Motion JPEG uses several times the bandwidth');
    });

    it('H.265 without a hardware decoder: the page says so on the video area', async () => {
      const rtpPort = await freeUdpPort();
      const robot = await robotFor(`rtp://127.0.0.1:${rtpPort}`, 'hev1.1.6.L63.90');
      sendWhenWatched(robot, () => ffmpegRtpSource({ codec: 'h265', port: rtpPort, frames: 90 }));
      const result = await t.chromium.run<WatchResult>({
        entry: page,
        exportName: 'watch',
        args: [t.fleet.cloud.signalUrl, robot.files.robotId, await robot.token(), 3, true, backend],
        timeoutMs: 60_000,
        screenshotPath: `${screenshots}h265-cannot-decode.png`,
      });
      expect(result.message).toMatch(/^Cannot decode H\.265 \(hev1\.1\.6\.L63\.90\)/);
      expect(channel(result).decoded).toBe(0);
    });

    it('serves two pilots at once, and a pilot that reloads sees video again', async () => {
      const rtpPort = await freeUdpPort();
      const robot = await robotFor(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d');
      sendWhenWatched(
        robot,
        () => ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 240, gop: 30 }),
        2,
      );
      const [a, b] = await Promise.all([
        t.chromium.run<WatchResult[]>({
          entry: page,
          exportName: 'watchTwice',
          args: [
            t.fleet.cloud.signalUrl,
            robot.files.robotId,
            [await robot.token(), await robot.token()],
            3.5,
            backend,
          ],
          timeoutMs: 60_000,
        }),
        t.chromium.run<WatchResult>({
          entry: page,
          exportName: 'watch',
          args: [
            t.fleet.cloud.signalUrl,
            robot.files.robotId,
            await robot.token('observe'),
            7,
            false,
            backend,
          ],
          timeoutMs: 60_000,
        }),
      ]);
      expect(channel(b).decoded).toBeGreaterThan(150);
      expect(channel(a[0]!).decoded).toBeGreaterThan(60);
      expect(channel(a[1]!).decoded).toBeGreaterThan(30); // after the reload, from the next keyframe on
    });

    it('the pilot reconnects when svcd restarts, and video comes again', async () => {
      const rtpPort = await freeUdpPort();
      const robot = await robotFor(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d');
      // GStreamer's udpsink keeps sending while the daemon is down (the port refuses meanwhile).
      sendWhenWatched(robot, () =>
        gstreamerRtpSource({ codec: 'h264', port: rtpPort, frames: 900, gop: 30 }),
      );
      // Restart once the first keyframe has reached the pilot and video has played for a while.
      void robot.daemon.waitForLog('pilot session opened').then(
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 3000));
          await robot.restart();
        },
        () => undefined,
      );
      const result = await t.chromium.run<WatchResult & { offers: number }>({
        entry: page,
        exportName: 'watchAcrossRestart',
        args: [t.fleet.cloud.signalUrl, robot.files.robotId, await robot.token(), 60, 40, backend],
        timeoutMs: 60_000,
        allowConsoleErrors: true, // Chromium logs the attempts that fail while svcd is down
      });
      expect(result.states).toContain('reconnecting');
      expect(result.stats.sessions).toBeGreaterThanOrEqual(2);
      expect(result.offers).toBeGreaterThanOrEqual(2); // each attempt asked svc-cloud for a fresh offer
      expect(channel(result).decoded).toBeGreaterThanOrEqual(60);
    });
  },
);

describe('direct path: the candidate race (WebTransport)', () => {
  it('races the candidates: a first address that never answers does not keep the pilot from the next', async () => {
    const robot = await robotFor(`rtp://127.0.0.1:${await freeUdpPort()}`, 'avc1.42c00d');
    // A bound socket that reads and never answers: QUIC's handshake to it would wait for its timeout.
    const blackHole = createSocket('udp4');
    await new Promise<void>((resolve) => blackHole.bind(0, '127.0.0.1', resolve));
    t.defer(() => new Promise<void>((resolve) => blackHole.close(() => resolve())));
    const token = await robot.token();
    const { offer } = await t.chromium.run<{ offer: OfferSummary | null }>({
      entry: page,
      exportName: 'tryOffer',
      args: [t.fleet.cloud.signalUrl, robot.files.robotId, token],
    });
    const urls = [`https://127.0.0.1:${blackHole.address().port}/`, ...offer!.urls];
    const outcome = await t.chromium.run<PilotOutcome>({
      entry: page,
      exportName: 'connectDirect',
      args: [urls, offer!.certificateHashes, token, 20],
      allowConsoleErrors: true, // Chromium reports the abandoned attempt
    });
    expect(outcome).toMatchObject({ state: 'connected', role: 'driver' });
  });
});
