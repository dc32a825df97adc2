import { createSocket, type Socket } from 'node:dgram';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type AccessUnit, RtpPipeline } from '@svc/media';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningPublisher, startPublisher } from '../src/index.js';

/** Generous bound for anything that should happen within a second or two. */
const WAIT_MS = 15_000;

/** What one RTP receiver has seen: access units in arrival order. */
interface ReceivedUnit {
  readonly keyframe: boolean;
  readonly bytes: number;
}

/** A plain UDP socket standing in for svcd's RTP input, depacketising with `@svc/media`. */
class RtpReceiver {
  readonly units: ReceivedUnit[] = [];
  readonly #socket: Socket;
  readonly #pipeline: RtpPipeline;
  readonly #waiters = new Set<{ check: () => boolean; resolve: () => void }>();

  private constructor(socket: Socket) {
    this.#socket = socket;
    this.#pipeline = new RtpPipeline({
      codec: 'avc1.42c01e',
      family: 'h264',
      onAccessUnit: (au: AccessUnit) => {
        this.units.push({ keyframe: au.keyframe, bytes: au.data.byteLength });
        for (const waiter of this.#waiters) {
          if (!waiter.check()) continue;
          this.#waiters.delete(waiter);
          waiter.resolve();
        }
      },
    });
    socket.on('message', (datagram) => {
      const now = performance.now();
      this.#pipeline.handleRtp(datagram, now);
      this.#pipeline.handleTick(now);
    });
  }

  static async open(): Promise<RtpReceiver> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new RtpReceiver(socket);
  }

  get port(): number {
    return this.#socket.address().port;
  }

  keyframes(): number {
    return this.units.filter((unit) => unit.keyframe).length;
  }

  /** Resolves once `check()` holds after an access unit (or already holds). */
  until(what: string, check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`no ${what} within ${WAIT_MS} ms (${this.units.length} access units so far)`));
      }, WAIT_MS);
      const waiter = {
        check,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.#waiters.add(waiter);
    });
  }

  /** Waits for `count` more access units and returns them. */
  async next(count: number): Promise<ReceivedUnit[]> {
    const from = this.units.length;
    await this.until(`${count} more access units`, () => this.units.length >= from + count);
    return this.units.slice(from, from + count);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}

/** Sends one datagram to the publisher's control address, as svcd would. */
async function sendControl(publisher: RunningPublisher, datagram: string | object): Promise<void> {
  const socket = createSocket('udp4');
  const bytes = typeof datagram === 'string' ? datagram : JSON.stringify(datagram);
  await new Promise<void>((resolve, reject) =>
    socket.send(bytes, publisher.controlPort, '127.0.0.1', (err) => (err ? reject(err) : resolve())),
  );
  await new Promise<void>((resolve) => socket.close(() => resolve()));
}

/** Kilobits per second of the units' bytes at the stream's frame rate (media time, not wall time). */
function kbps(units: readonly ReceivedUnit[], fps: number): number {
  const bytes = units.reduce((sum, unit) => sum + unit.bytes, 0);
  return (bytes * 8 * fps) / units.length / 1000;
}

const RECOVERY = { type: 'recovery-request', channel: 1, kind: 'ltr', reason: 'loss' } as const;

describe('startPublisher', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
  });

  async function receiver(): Promise<RtpReceiver> {
    const opened = await RtpReceiver.open();
    cleanups.push(() => opened.close());
    return opened;
  }

  async function publisher(options: Parameters<typeof startPublisher>[0]): Promise<RunningPublisher> {
    const started = await startPublisher(options);
    cleanups.push(() => started.stop());
    return started;
  }

  it('answers a recovery-request with a keyframe long before its 10 s GOP would', async () => {
    const rtp = await receiver();
    const fps = 30;
    const gopFrames = 10 * fps;
    const running = await publisher({ port: rtp.port, fps, gopFrames });
    expect(running.controlAddress).toBe(`127.0.0.1:${running.controlPort}`);

    await rtp.until('first keyframe', () => rtp.keyframes() >= 1);
    const first = rtp.units.findIndex((unit) => unit.keyframe);
    await rtp.next(10);
    expect(rtp.keyframes()).toBe(1);

    await sendControl(running, RECOVERY);
    await rtp.until('keyframe after the recovery-request', () => rtp.keyframes() >= 2);
    const second = rtp.units.findIndex((unit, index) => index > first && unit.keyframe);
    // Counted in frames, not time: the forced keyframe comes well inside the GOP.
    expect(second - first).toBeLessThan(gopFrames / 2);
    expect(running.received()).toEqual([RECOVERY]);
    expect(running.actions()).toEqual([
      { event: 'keyframe-forced', channel: 1, layer: 'main', cause: 'recovery-request', kind: 'ltr' },
    ]);
  });

  it('with answerDelayMs forces the keyframe that long after the recovery-request', async () => {
    const rtp = await receiver();
    const fps = 30;
    const running = await publisher({ port: rtp.port, fps, gopFrames: 10 * fps, answerDelayMs: 600 });
    await rtp.until('first keyframe', () => rtp.keyframes() >= 1);

    const sentAt = rtp.units.length;
    await sendControl(running, RECOVERY);
    await rtp.until('keyframe after the recovery-request', () => rtp.keyframes() >= 2);
    const keyframeAt = rtp.units.findIndex((unit, index) => index >= sentAt && unit.keyframe);
    // 600 ms is 18 frames at 30 fps: a publisher answering at once has its keyframe within 3.
    expect(keyframeAt - sentAt).toBeGreaterThanOrEqual(12);
    expect(keyframeAt - sentAt).toBeLessThan(60);
    expect(running.actions()).toEqual([
      { event: 'keyframe-forced', channel: 1, layer: 'main', cause: 'recovery-request', kind: 'ltr' },
    ]);
  });

  it('applies a lower maxBitrateKbps from video-config, and the RTP byte rate goes down', async () => {
    const rtp = await receiver();
    const fps = 30;
    // Noise makes the encoder spend its whole bitrate, so the byte rate follows the setting.
    const running = await publisher({
      port: rtp.port,
      fps,
      bitrateKbps: 1600,
      pattern: 'snow',
      gopFrames: 60,
    });
    await rtp.next(15);
    const before = kbps(await rtp.next(60), fps);

    await sendControl(running, {
      type: 'video-config',
      channel: 1,
      profile: 'latency',
      maxBitrateKbps: 400,
      latencyBudgetMs: 60,
      maxGopMs: 10_000,
      preferIntraRefresh: false,
      suggestedFps: 0,
      reason: 'abr-down',
    });
    await running.waitFor((event) => event.event === 'bitrate-set', WAIT_MS);
    expect(running.actions()).toEqual([{ event: 'bitrate-set', channel: 1, layer: 'main', kbps: 400 }]);
    await rtp.next(15); // the rate-control buffer drains
    const after = kbps(await rtp.next(60), fps);

    expect(before).toBeGreaterThan(900);
    expect(after).toBeLessThan(before * 0.6);
  });

  it('with answer: false reports the datagram, acts on nothing and keeps streaming', async () => {
    const rtp = await receiver();
    const running = await publisher({ port: rtp.port, answer: false });
    await rtp.until('first keyframe', () => rtp.keyframes() >= 1);

    await sendControl(running, { ...RECOVERY, kind: 'idr' });
    await running.waitFor((event) => event.event === 'ignored', WAIT_MS);
    const later = await rtp.next(45);

    expect(later.some((unit) => unit.keyframe)).toBe(false);
    expect(running.received()).toEqual([{ ...RECOVERY, kind: 'idr' }]);
    expect(running.actions().map((action) => action.event)).toEqual(['ignored']);
  });

  it('counts malformed datagrams, keeps streaming and still answers the next good one', async () => {
    const rtp = await receiver();
    const running = await publisher({ port: rtp.port });
    await rtp.until('first keyframe', () => rtp.keyframes() >= 1);

    await sendControl(running, 'not json');
    await sendControl(running, '[1, 2]');
    await sendControl(running, { type: 'reboot', channel: 1 });
    await sendControl(running, { ...RECOVERY, kind: 'everything' });
    await running.waitFor((event) => event.event === 'malformed' && event.count === 4, WAIT_MS);
    await rtp.next(10);

    expect(running.malformed().map((event) => event.reason)).toEqual([
      expect.stringContaining('not UTF-8 JSON'),
      expect.stringContaining('not a JSON object'),
      expect.stringContaining("unknown type 'reboot'"),
      expect.stringContaining("invalid 'kind'"),
    ]);
    expect(running.received()).toEqual([]);
    expect(running.actions()).toEqual([]);

    await sendControl(running, RECOVERY);
    await rtp.until('keyframe after the good datagram', () => rtp.keyframes() >= 2);
    expect(running.actions().map((action) => action.event)).toEqual(['keyframe-forced']);
  });

  it('sends every simulcast layer and forces a keyframe on the layer a layer datagram names', async () => {
    const high = await receiver();
    const low = await receiver();
    const running = await publisher({
      layers: [
        { name: 'high', port: high.port, width: 320, height: 240, bitrateKbps: 800 },
        { name: 'low', port: low.port, width: 160, height: 120, bitrateKbps: 200 },
      ],
    });
    expect(running.layers).toEqual(['high', 'low']);
    await high.until('first keyframe of high', () => high.keyframes() >= 1);
    await low.until('first keyframe of low', () => low.keyframes() >= 1);
    await low.next(5);

    await sendControl(running, { type: 'layer', channel: 1, layer: 1, name: 'low', reason: 'down' });
    await low.until('keyframe of low after the layer datagram', () => low.keyframes() >= 2);
    expect(running.actions()).toEqual([
      { event: 'keyframe-forced', channel: 1, layer: 'low', cause: 'layer' },
    ]);

    await sendControl(running, { type: 'layer', channel: 1, layer: 2, name: 'middle', reason: 'up' });
    const ignored = await running.waitFor((event) => event.event === 'ignored', WAIT_MS);
    expect(ignored.reason).toMatch(/no layer named 'middle'/);
    await high.next(5);
    expect(high.keyframes()).toBe(1);
  });

  it('stop() ends the process: pending waits reject and the control port is free again', async () => {
    const rtp = await receiver();
    const running = await publisher({ port: rtp.port });
    const pending = running.waitFor((event) => event.event === 'never', WAIT_MS);

    await running.stop();
    await expect(pending).rejects.toThrow(/exited/);
    const socket = createSocket('udp4');
    cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(running.controlPort, '127.0.0.1', resolve);
    });
    await running.stop();
  });

  it('rejects with the script stderr when a GStreamer plugin is missing', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'publisher-no-plugins-'));
    cleanups.push(() => rm(empty, { recursive: true, force: true }));
    const start = startPublisher({
      port: 9,
      // No plugins at all, and a registry of its own so the shared one is left alone.
      env: {
        GST_PLUGIN_SYSTEM_PATH_1_0: empty,
        GST_PLUGIN_PATH_1_0: empty,
        GST_REGISTRY_1_0: join(empty, 'registry.bin'),
      },
    });
    await expect(start).rejects.toThrow(
      /exited \(2\) before streaming: .*x264enc.*gstreamer1\.0-plugins-ugly/,
    );
  });

  it('refuses bad options with a TypeError naming them', async () => {
    await expect(startPublisher({})).rejects.toThrow(/give port \(one stream\) or layers/);
    await expect(startPublisher({ port: 5000, width: 321 })).rejects.toThrow(/width must be even/);
    await expect(
      startPublisher({ layers: [{ name: 'a', port: 5000, width: 320, height: 240, bitrateKbps: 0 }] }),
    ).rejects.toThrow(/layers\[0\]\.bitrateKbps must be an integer/);
    await expect(startPublisher({ port: 5000, answerDelayMs: -1 })).rejects.toThrow(
      /answerDelayMs must be an integer from 0/,
    );
  });
});
