/**
 * A video channel with a real camera: every frame it packs carries its capture time on the daemon
 * clock (from ffmpeg's RTCP sender reports, or the arrival for a GStreamer source without them),
 * the replay at join carries the same times, and the channel says when its camera is live, sends
 * nothing, or cannot be read.
 */
import { qosProfile } from '@svc/qos';
import { memoryLogger } from '@svc/runtime/testing';
import { ffmpegRtpSource, freeTcpPort, freeUdpPort, gstreamerRtpSource } from '@svc/testkit';
import { type AssembledFrame, captureClockAgeMs, Reassembler } from '@svc/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonClockMs } from '../src/clock.js';
import type { VideoChannelConfig } from '../src/config.js';
import { VideoChannel, type VideoSourceStatus } from '../src/video-channel.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const config = (input: string): VideoChannelConfig => ({
  kind: 'video',
  id: 1,
  name: 'front',
  input,
  codec: 'avc1.42c00d',
  fps: 30,
  max_bitrate_kbps: 0,
  layer: [],
});

/** Resolves when `check()` holds, polling; rejects naming `what` after `timeoutMs`. */
async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A started channel on `input`, one subscriber reassembling its frames with their arrival ages. */
async function watchedChannel(input: string) {
  const logger = memoryLogger();
  const channel = new VideoChannel(config(input), qosProfile('balanced'), logger);
  const frames: { frame: AssembledFrame; ageMs: number }[] = [];
  const reassembler = new Reassembler({
    channel: 1,
    onFrame: (frame) => {
      const ageMs = captureClockAgeMs(frame.captureClockUs, daemonClockMs());
      if (ageMs !== undefined) frames.push({ frame, ageMs });
    },
  });
  channel.subscribe({
    handleFrame: (packed) => {
      for (const datagram of packed.datagrams) reassembler.handleDatagram(datagram, performance.now());
    },
  });
  const statuses: VideoSourceStatus[] = [];
  channel.onSourceStatus((status) => statuses.push(status));
  await channel.start({});
  cleanups.push(() => channel.stop());
  return { channel, frames, statuses, logger };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe('capture clock of packed frames', () => {
  it('GStreamer without sender reports: every frame carries its arrival on the daemon clock', async () => {
    const port = await freeUdpPort();
    const { frames } = await watchedChannel(`rtp://127.0.0.1:${port}`);
    const camera = gstreamerRtpSource({ codec: 'h264', port, frames: 300 });
    cleanups.push(() => camera.stop());
    await until(() => frames.length >= 30, '30 frames');
    // Packed as it arrived, reassembled at once: the age is the time through the daemon (< a few ms).
    const ages = frames.map((f) => f.ageMs);
    expect(Math.min(...ages)).toBeGreaterThanOrEqual(0);
    expect(median(ages)).toBeLessThan(5);
  });

  it('ffmpeg with sender reports: frames carry the capture time they map to, the encoder’s delay included; the replay carries the same', async () => {
    const port = await freeUdpPort();
    const { channel, frames } = await watchedChannel(`rtp://127.0.0.1:${port}`);
    const camera = ffmpegRtpSource({ codec: 'h264', port, frames: 300, gop: 30 });
    cleanups.push(() => camera.stop());
    await until(() => frames.length >= 45, '45 frames');
    // x264's frame threads hold each frame a couple of frame times after it is read: steadily.
    const ages = frames.slice(5).map((f) => f.ageMs);
    expect(median(ages)).toBeGreaterThan(20);
    expect(median(ages)).toBeLessThan(200);
    expect(Math.max(...ages) - Math.min(...ages)).toBeLessThan(40);
    // The replay at join stamps each frame as it was stamped live.
    const replay = channel.catchUp();
    expect(replay).toBeDefined();
    const replayed: AssembledFrame[] = [];
    const reassembler = new Reassembler({ channel: 1, onFrame: (frame) => replayed.push(frame) });
    for (const packed of replay!.frames)
      for (const datagram of packed.datagrams) reassembler.handleDatagram(datagram, performance.now());
    const live = new Map(frames.map(({ frame }) => [frame.frameId, frame.captureClockUs]));
    expect(replayed.length).toBe(replay!.frames.length);
    for (const frame of replayed) {
      if (live.has(frame.frameId)) expect(frame.captureClockUs).toBe(live.get(frame.frameId));
      else expect(frame.captureClockUs).not.toBe(0);
    }
  });
});

describe('source status of a video channel', () => {
  it('a camera sending elsewhere: no-data with the port; started on the right port: live; stopped: no-data again', async () => {
    const port = await freeUdpPort();
    const { channel, statuses } = await watchedChannel(`rtp://127.0.0.1:${port}`);
    const wrong = ffmpegRtpSource({ codec: 'h264', port: await freeUdpPort(), frames: 300 });
    cleanups.push(() => wrong.stop());
    const before = daemonClockMs();
    await until(() => channel.sourceStatus.reason?.startsWith('no RTP packets') === true, 'no-data');
    expect(channel.sourceStatus.reason).toBe(
      `no RTP packets on udp 127.0.0.1:${port} for over 1 s: check that the camera is running and sends to this port`,
    );
    // On the daemon clock, about a second after the channel started.
    expect(channel.sourceStatus.sinceMs).toBeGreaterThan(before);
    expect(channel.sourceStatus.sinceMs).toBeLessThanOrEqual(daemonClockMs());
    const right = ffmpegRtpSource({ codec: 'h264', port, frames: 30 });
    cleanups.push(() => right.stop());
    await until(() => channel.sourceStatus.state === 'live', 'live');
    expect(channel.sourceStatus.reason).toBeUndefined();
    await right.done;
    await until(() => channel.sourceStatus.state === 'no-data', 'no-data once the camera stopped');
    expect(statuses.map((s) => [s.state, s.reason?.replace(/ for over.*/, '')])).toEqual([
      ['no-data', `waiting for the first picture from udp 127.0.0.1:${port}`],
      ['no-data', `no RTP packets on udp 127.0.0.1:${port}`],
      ['live', undefined],
      ['no-data', `no RTP packets on udp 127.0.0.1:${port}`],
    ]);
  });

  it('an RTSP camera nobody serves: offline, with the reason', async () => {
    const port = await freeTcpPort();
    const { channel } = await watchedChannel(`rtsp://127.0.0.1:${port}/front`);
    await until(() => channel.sourceStatus.state === 'offline', 'offline');
    expect(channel.sourceStatus.reason).toMatch(
      new RegExp(`^RTSP rtsp://127\\.0\\.0\\.1:${port}/front unreachable: .*connection refused`),
    );
  });
});
