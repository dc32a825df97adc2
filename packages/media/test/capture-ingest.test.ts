/**
 * Capture times and source state with real sources: ffmpeg's RTP muxer and GStreamer's rtpbin send
 * RTCP sender reports on the RTP port + 1, a bare GStreamer payloader sends none; a wrong port,
 * an RTSP URL nobody serves, a camera that stops and comes back.
 */
import { spawn } from 'node:child_process';
import {
  ffmpegRtpSource,
  freeTcpPort,
  gstreamerRtpSource,
  type RunningSource,
  startRtspServer,
} from '@svc/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { VideoIngest } from '../src/ingest.js';
import type { SourceStatus } from '../src/source-monitor.js';
import type { CaptureTime } from '../src/types.js';
import { freeUdpPort, waitFor } from './support/wait.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** GStreamer with rtpbin: RTP to `port`, RTCP (sender reports) to `port + 1`. */
function gstreamerWithRtcp(port: number, frames: number): RunningSource {
  const pipeline = [
    'rtpbin name=rtpbin',
    `videotestsrc num-buffers=${frames} is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1`,
    '! x264enc tune=zerolatency speed-preset=ultrafast bframes=0 sliced-threads=false key-int-max=30',
    '! rtph264pay config-interval=-1 pt=96 mtu=1200 ! rtpbin.send_rtp_sink_0',
    `rtpbin.send_rtp_src_0 ! udpsink host=127.0.0.1 port=${port}`,
    `rtpbin.send_rtcp_src_0 ! udpsink host=127.0.0.1 port=${port + 1} sync=false async=false`,
  ].join(' ');
  const child = spawn('gst-launch-1.0', ['-q', ...pipeline.split(' ')], { stdio: 'ignore' });
  const done = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 0)));
  return {
    process: child,
    done,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await done;
    },
  };
}

/** An access unit's capture time, and the wall-clock arrival of its last packet. */
interface Timed {
  readonly capture: CaptureTime;
  readonly arrivedMs: number;
}

/** Ingests `start(port)` until `frames` access units were timed by a sender report (or as `timedBy` says). */
async function timedUnits(
  start: (port: number) => RunningSource,
  frames: number,
  timedBy: CaptureTime['source'] | 'any' = 'sender-report',
): Promise<Timed[]> {
  const port = await freeUdpPort();
  const units: { capture: CaptureTime; arrivedMs: number }[] = [];
  const ingest = await VideoIngest.start({
    input: `rtp://127.0.0.1:${port}`,
    codec: 'avc1.42c00d',
    onAccessUnit: (au, capture) =>
      units.push({ capture, arrivedMs: Date.now() - (performance.now() - au.receivedAtMs) }),
  });
  cleanups.push(() => ingest.stop());
  expect(ingest.rtcpPort).toBe(port + 1);
  const source = start(port);
  cleanups.push(() => source.stop());
  const counted = () => units.filter((u) => timedBy === 'any' || u.capture.source === timedBy).length;
  await waitFor(() => counted() >= frames, `${frames} access units timed by ${timedBy} (got ${counted()})`);
  return units;
}

/** ffmpeg with x264's sliced threads (no frame-thread delay): each frame leaves as it is read. */
function ffmpegSlicedThreads(port: number, frames: number): RunningSource {
  const args = [
    ...['-hide_banner', '-loglevel', 'error', '-nostdin', '-re'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30', '-frames:v', String(frames)],
    ...['-c:v', 'libx264', '-profile:v', 'baseline', '-preset', 'ultrafast', '-tune', 'zerolatency'],
    ...['-g', '30', '-bf', '0', '-pix_fmt', 'yuv420p', '-f', 'rtp', '-payload_type', '96'],
    `rtp://127.0.0.1:${port}?pkt_size=1200`,
  ];
  const child = spawn('ffmpeg', args, { stdio: 'ignore' });
  const done = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 0)));
  return {
    process: child,
    done,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await done;
    },
  };
}

/** How long before arriving each unit timed by a sender report was captured, ms. */
const delays = (units: readonly Timed[]) =>
  units.filter((u) => u.capture.source === 'sender-report').map((u) => u.arrivedMs - u.capture.wallMs);

/** The `q` quantile (0..1) of `values`. */
const quantile = (values: readonly number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!;

describe('capture times from real sources', () => {
  it('ffmpeg sends sender reports: with an encoder that sends each frame as it is read, the capture time is within a few ms of the arrival on loopback', async () => {
    const units = await timedUnits((port) => ffmpegSlicedThreads(port, 120), 60);
    // The first report comes with the first packet: every unit is timed by one.
    expect(units.filter((u) => u.capture.source === 'arrival').length).toBeLessThanOrEqual(1);
    // What separates them is the frame's encoding, a few ms at this size.
    const gaps = delays(units);
    expect(Math.abs(quantile(gaps, 0.5))).toBeLessThan(10);
    expect(quantile(gaps, 0.9) - quantile(gaps, 0.1)).toBeLessThan(10);
  });

  it('ffmpeg with x264 frame threads: the capture time precedes the arrival by the encoder’s delay, steadily', async () => {
    const units = await timedUnits((port) => ffmpegRtpSource({ codec: 'h264', port, frames: 120 }), 60);
    const gaps = delays(units);
    // The frames are read (captured) at the frame rate and leave a few frames later: the age the
    // pilot shows includes that delay, which arrival times would hide.
    expect(quantile(gaps, 0.5)).toBeGreaterThan(20);
    expect(quantile(gaps, 0.5)).toBeLessThan(200);
    expect(quantile(gaps, 0.9) - quantile(gaps, 0.1)).toBeLessThan(15);
  });

  it('GStreamer with rtpbin sends sender reports too: timed by them, within a few ms of arrival', async () => {
    const units = await timedUnits((port) => gstreamerWithRtcp(port, 300), 30);
    const gaps = delays(units);
    expect(Math.abs(quantile(gaps, 0.5))).toBeLessThan(10);
    expect(quantile(gaps, 0.9) - quantile(gaps, 0.1)).toBeLessThan(10);
  });

  it('a bare GStreamer payloader sends no reports: each access unit is timed by its first packet’s arrival', async () => {
    const units = await timedUnits(
      (port) => gstreamerRtpSource({ codec: 'h264', port, frames: 60 }),
      40,
      'any',
    );
    expect(units.every((u) => u.capture.source === 'arrival')).toBe(true);
    // The first packet arrives no later than the last.
    for (const u of units) expect(u.capture.wallMs).toBeLessThanOrEqual(u.arrivedMs + 1);
  });
});

/** An ingest of `input` whose status changes are recorded. */
async function watched(input: string): Promise<{ ingest: VideoIngest; statuses: SourceStatus[] }> {
  const statuses: SourceStatus[] = [];
  const ingest = await VideoIngest.start({
    input,
    codec: 'avc1.42c00d',
    onAccessUnit: () => {},
    onSourceStatus: (status) => statuses.push(status),
    rtsp: { timeoutMs: 2000, backoffBaseMs: 100 },
  });
  cleanups.push(() => ingest.stop());
  return { ingest, statuses };
}

describe('capture times over RTSP', () => {
  for (const transport of ['tcp', 'udp'] as const) {
    it(`the GStreamer RTSP server's sender reports (${transport === 'tcp' ? 'the interleaved RTCP channel' : 'the UDP RTCP port'}) time the access units`, async () => {
      const camera = await startRtspServer({ mounts: [{ path: '/h264', codec: 'h264' }] });
      cleanups.push(() => camera.stop());
      const units: Timed[] = [];
      const ingest = await VideoIngest.start({
        input: camera.url('/h264'),
        codec: 'avc1.42c00d',
        rtspTransport: transport,
        onAccessUnit: (au, capture) =>
          units.push({ capture, arrivedMs: Date.now() - (performance.now() - au.receivedAtMs) }),
      });
      cleanups.push(() => ingest.stop());
      const mapped = () => units.filter((u) => u.capture.source === 'sender-report').length;
      await waitFor(() => mapped() >= 30, `30 access units timed by sender reports (got ${mapped()})`);
      expect(ingest.stats.rtcp).toBeGreaterThan(0);
      expect(ingest.stats.malformedRtcp).toBe(0);
      // Captured before they arrived (the server's encoder and, over TCP, its batching between).
      const gaps = delays(units);
      expect(quantile(gaps, 0.5)).toBeGreaterThan(-5);
      expect(quantile(gaps, 0.5)).toBeLessThan(200);
      // The capture times follow the camera's clock, whole frame intervals apart (one, unless a
      // frame was lost), whatever the arrival.
      const times = units.filter((u) => u.capture.source === 'sender-report').map((u) => u.capture.wallMs);
      for (const [i, t] of times.slice(1).entries()) {
        const frames = (t - times[i]!) / (1000 / 30);
        expect(frames).toBeGreaterThan(0.5);
        expect(Math.abs(frames - Math.round(frames))).toBeLessThan(0.02);
      }
    });
  }
});

describe('source state with real sources', () => {
  it('a camera sending to another port: no-data, naming the port the daemon listens on', async () => {
    const port = await freeUdpPort();
    const { ingest } = await watched(`rtp://127.0.0.1:${port}`);
    const elsewhere = ffmpegRtpSource({ codec: 'h264', port: await freeUdpPort(), frames: 300 });
    cleanups.push(() => elsewhere.stop());
    await waitFor(() => ingest.sourceStatus.reason?.startsWith('no RTP packets') === true, 'no-data');
    expect(ingest.sourceStatus).toMatchObject({
      state: 'no-data',
      reason: `no RTP packets on udp 127.0.0.1:${port} for over 1 s: check that the camera is running and sends to this port`,
    });
  });

  it('an RTSP URL nobody serves: offline, connection refused, without the credentials', async () => {
    const port = await freeTcpPort();
    const { ingest } = await watched(`rtsp://robot:s3cret@127.0.0.1:${port}/front`);
    await waitFor(() => ingest.sourceStatus.state === 'offline', 'offline');
    const reason = ingest.sourceStatus.reason ?? '';
    expect(reason).toMatch(
      new RegExp(`^RTSP rtsp://.*127\\.0\\.0\\.1:${port}/front unreachable: .*connection refused`),
    );
    expect(reason).not.toContain('s3cret');
    expect(reason).not.toContain('robot:');
  });

  it('a camera that stops is no-data; started again, live', async () => {
    const port = await freeUdpPort();
    const { ingest, statuses } = await watched(`rtp://127.0.0.1:${port}`);
    const first = ffmpegRtpSource({ codec: 'h264', port, frames: 30 });
    cleanups.push(() => first.stop());
    await waitFor(() => ingest.sourceStatus.state === 'live', 'live');
    await first.done;
    await waitFor(() => ingest.sourceStatus.state === 'no-data', 'no-data after the camera stopped');
    expect(ingest.sourceStatus.reason).toMatch(/^no RTP packets on udp 127\.0\.0\.1:\d+ for over 1 s/);
    const second = ffmpegRtpSource({ codec: 'h264', port, frames: 300 });
    cleanups.push(() => second.stop());
    await waitFor(() => ingest.sourceStatus.state === 'live', 'live again');
    expect(statuses.map((s) => s.state)).toEqual(['live', 'no-data', 'live']);
  });
});
