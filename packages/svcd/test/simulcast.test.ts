/**
 * Simulcast in the daemon: a video channel with `[[channel.layer]]` ingests every layer and
 * forwards one, switching at the target layer's next keyframe. In process: a real GStreamer
 * publisher encoding two layers over RTP, the channel, the daemon's `layer` datagram wiring and a
 * real reassembler; what was forwarded is decoded by ffprobe. End to end: a real svcd and the
 * pilot SDK in Chromium painting across a switch.
 */

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { qosProfile } from '@svc/qos';
import { silentLogger } from '@svc/runtime';
import { memoryLogger } from '@svc/runtime/testing';
import { freeUdpPort, type PublisherEvent, type RunningPublisher, startPublisher } from '@svc/testkit';
import { type AssembledFrame, type FrameLoss, Reassembler, seqDiff32 } from '@svc/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, type VideoChannelConfig } from '../src/config.js';
import { PublisherControl } from '../src/publisher-control.js';
import { followLayers } from '../src/serve.js';
import { VideoChannel } from '../src/video-channel.js';
import type { PaintedSize, WatchResult } from './fixtures/pilot-page.js';
import { useBrowserFleet } from './support/browser-fleet.js';
import { twoLayerVideoChannel } from './support/channels.js';

const LOW = { name: 'low', width: 160, height: 120, bitrateKbps: 150 };
const HIGH = { name: 'high', width: 320, height: 240, bitrateKbps: 600 };
const size = (layer: { width: number; height: number }) => `${layer.width}x${layer.height}`;
/** Frames watched after a switch before looking at what came. */
const AFTER_SWITCH = 30;

/** Everything one subscriber got, through the pilot's reassembler. */
class Received {
  readonly frames: AssembledFrame[] = [];
  readonly losses: FrameLoss[] = [];
  readonly #waiters = new Set<() => void>();
  readonly reassembler = new Reassembler({
    channel: 1,
    onFrame: (frame) => {
      this.frames.push(frame);
      for (const waiter of this.#waiters) waiter();
    },
    onFrameLost: (loss) => this.losses.push(loss),
  });

  /** Resolves once `check` holds (re-checked at each frame); rejects after `timeoutMs` saying `what`. */
  until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(test);
        reject(new Error(`never ${what} (${this.frames.length} frames received)`));
      }, timeoutMs);
      const test = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.#waiters.delete(test);
        resolve();
      };
      this.#waiters.add(test);
      test();
    });
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A two-layer channel (low, high) ingesting a GStreamer simulcast publisher, wired to it for
 * publisher control as `serve` does, and one subscriber reassembling what is forwarded.
 */
async function simulcastChannel(publisher: { answer: boolean; gopFrames: number }) {
  const [lowPort, highPort] = [await freeUdpPort(), await freeUdpPort()];
  const config = parseConfig(
    [
      '[agent]',
      'robot_id = "r1"',
      'signal_url = "wss://cloud.example/ws"',
      ...twoLayerVideoChannel({ lowPort, highPort, highMinBitrateKbps: 500 }),
    ].join('\n'),
  );
  const logger = memoryLogger();
  const channel = new VideoChannel(config.channels[0] as VideoChannelConfig, qosProfile('balanced'), logger);
  const received = new Received();
  channel.subscribe({
    handleFrame: (frame) => {
      for (const datagram of frame.datagrams)
        received.reassembler.handleDatagram(datagram, performance.now());
    },
  });
  // The channel listens before the camera starts, so it sees each layer's first keyframe.
  await channel.start({});
  cleanups.push(() => channel.stop());
  const camera = await startPublisher({
    layers: [
      { ...LOW, port: lowPort },
      { ...HIGH, port: highPort },
    ],
    answer: publisher.answer,
    gopFrames: publisher.gopFrames,
  });
  cleanups.push(() => camera.stop());
  const [host, port] = camera.controlAddress.split(':');
  const control = await PublisherControl.open({
    address: { host: host!, port: Number(port) },
    logger: silentLogger,
  });
  cleanups.push(() => control.close());
  followLayers(channel, logger, control);
  const requests: { index: number; name: string; reason: string }[] = [];
  const sendLayer = channel.onLayerRequest;
  channel.onLayerRequest = (index, name, reason) => {
    sendLayer?.(index, name, reason);
    requests.push({ index, name, reason });
  };
  const switches: { index: number; name: string; atFrame: number }[] = [];
  const logSwitch = channel.onLayerSwitched;
  channel.onLayerSwitched = (index, name) => {
    logSwitch?.(index, name);
    switches.push({ index, name, atFrame: received.frames.length });
  };
  return { channel, camera, received, requests, switches, logger };
}

/** What ffprobe decodes from the forwarded access units, one `<width>x<height>` per frame. */
async function decodedSizes(frames: readonly AssembledFrame[]): Promise<{ sizes: string[]; errors: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svcd-simulcast-'));
  try {
    const file = path.join(dir, 'forwarded.h264');
    await writeFile(file, Buffer.concat(frames.map((f) => f.data)));
    const { stdout, stderr } = await promisify(execFile)(
      'ffprobe',
      ['-v', 'error', '-f', 'h264', '-i', file, '-show_entries', 'frame=width,height', '-of', 'json'],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const parsed = JSON.parse(stdout) as { frames: { width: number; height: number }[] };
    return { sizes: parsed.frames.map(size), errors: stderr.trim() };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Consecutive equal values as `[value, count]`. */
function runs(values: readonly string[]): [string, number][] {
  const out: [string, number][] = [];
  for (const value of values) {
    const last = out.at(-1);
    if (last?.[0] === value) last[1]++;
    else out.push([value, 1]);
  }
  return out;
}

/** Frame ids go up by one, wrapping at 16 bits: no frame missing for the pilot's reassembler. */
function expectContinuousIds(frames: readonly AssembledFrame[]): void {
  const steps = frames.slice(1).map((f, i) => (f.frameId - frames[i]!.frameId + 0x10000) & 0xffff);
  expect(steps.every((step) => step === 1)).toBe(true);
}

const isLayerDatagram = (name: string) => (e: PublisherEvent) =>
  e.event === 'received' &&
  (e.datagram as { type?: string; name?: string }).type === 'layer' &&
  (e.datagram as { name?: string }).name === name;

describe('simulcast layers in a video channel (real GStreamer RTP)', () => {
  it('ingests both layers, forwards only the target, and switches down at the low layer’s next keyframe, which the publisher forces on the layer datagram', async () => {
    // Ten seconds of GOP: no natural keyframe comes while the test runs.
    const { channel, camera, received, requests, switches, logger } = await simulcastChannel({
      answer: true,
      gopFrames: 300,
    });
    expect(channel.layers).toEqual([
      { name: 'low', minBitrateKbps: 0 },
      { name: 'high', minBitrateKbps: 500 },
    ]);
    // The highest layer is the target at start.
    expect(channel.targetLayerIndex).toBe(1);
    await received.until(
      () => channel.layerIndex === 1 && received.frames.length >= AFTER_SWITCH,
      'forwarded the high layer',
    );
    const [low, high] = channel.stats.layers;
    expect(low!.accessUnits).toBeGreaterThan(0);
    expect(high!.accessUnits).toBeGreaterThan(0);
    // One layer's worth of frames reached the subscriber, not both.
    expect(received.frames.length).toBeLessThan(0.6 * (low!.accessUnits + high!.accessUnits));

    const before = received.frames.length;
    channel.requestLayer(0, 'down');
    // The switch waits for the low layer's keyframe.
    expect(channel.targetLayerIndex).toBe(0);
    expect(channel.layerIndex).toBe(1);
    await camera.waitFor(isLayerDatagram('low'), 10_000);
    expect(camera.received()).toContainEqual({
      type: 'layer',
      channel: 1,
      layer: 0,
      name: 'low',
      reason: 'down',
    });
    await camera.waitFor(
      (e) => e.event === 'keyframe-forced' && e.layer === 'low' && e.cause === 'layer',
      10_000,
    );
    await received.until(
      () => channel.layerIndex === 0 && received.frames.length >= before + AFTER_SWITCH,
      'switched down',
    );
    expect(switches.at(-1)).toMatchObject({ index: 0, name: 'low' });
    expect(logger.records).toContainEqual({
      level: 'info',
      message: 'simulcast layer switched',
      fields: { channel: 'front', layer: 0, name: 'low' },
    });
    // Asking again for the layer already asked for sends nothing more.
    channel.requestLayer(0, 'down');
    expect(requests).toEqual([{ index: 0, name: 'low', reason: 'down' }]);

    const frames = [...received.frames];
    expect(received.losses).toEqual([]);
    expectContinuousIds(frames);
    const switchAt = switches.at(-1)!.atFrame;
    expect(frames[switchAt]).toMatchObject({ keyframe: true, gopPosition: 0 });
    // Capture times run on across the switch (each encoder has its own RTP clock).
    const step = seqDiff32(frames[switchAt]!.captureTimestampUs, frames[switchAt - 1]!.captureTimestampUs);
    expect(step).toBeGreaterThan(0);
    expect(step).toBeLessThan(5_000_000);
    // Decoded as one stream: the high layer's pictures, then from the switch's keyframe on the low layer's.
    const decoded = await decodedSizes(frames);
    expect(decoded.errors).toBe('');
    expect(decoded.sizes).toHaveLength(frames.length);
    expect(decoded.sizes.slice(switchAt).every((s) => s === size(LOW))).toBe(true);
    expect(runs(decoded.sizes).slice(-2)).toEqual([
      [size(HIGH), expect.any(Number)],
      [size(LOW), frames.length - switchAt],
    ]);
  });

  it('a publisher that ignores the layer datagram: the switch comes with the layer’s natural keyframe, and frame ids stay continuous', async () => {
    // A keyframe every 1.5 s on each layer.
    const { channel, camera, received, switches } = await simulcastChannel({ answer: false, gopFrames: 45 });
    await received.until(() => channel.layerIndex === 1 && received.frames.length >= 10, 'forwarded high');
    const lowKeyframes = channel.stats.layers[0]!.keyframes;
    const before = received.frames.length;
    channel.requestLayer(0, 'down');
    await camera.waitFor(isLayerDatagram('low'), 10_000);
    await received.until(
      () => channel.layerIndex === 0 && received.frames.length >= before + 10,
      'switched down at the natural keyframe',
    );
    expect(camera.actions().filter((a) => a.event === 'keyframe-forced')).toEqual([]);
    expect(channel.stats.layers[0]!.keyframes).toBeGreaterThan(lowKeyframes);
    const frames = [...received.frames];
    expectContinuousIds(frames);
    expect(received.losses).toEqual([]);
    const switchAt = switches.at(-1)!.atFrame;
    expect(frames[switchAt]).toMatchObject({ keyframe: true, gopPosition: 0 });
    const decoded = await decodedSizes(frames);
    expect(decoded.errors).toBe('');
    expect(decoded.sizes.slice(switchAt).every((s) => s === size(LOW))).toBe(true);
    expect(decoded.sizes[switchAt - 1]).toBe(size(HIGH));

    // Back up, then cancelled before the high layer's keyframe: the low layer stays, through the
    // high layer's next natural keyframes (two seconds, GOP 1.5 s), and the publisher hears both.
    const switchCount = switches.length;
    const highKeyframes = channel.stats.layers[1]!.keyframes;
    channel.requestLayer(1, 'up');
    channel.requestLayer(0, 'down');
    expect(channel.targetLayerIndex).toBe(0);
    const count = received.frames.length;
    await received.until(() => received.frames.length >= count + 60, 'went on for two seconds');
    expect(channel.stats.layers[1]!.keyframes).toBeGreaterThan(highKeyframes);
    expect(channel.layerIndex).toBe(0);
    expect(switches).toHaveLength(switchCount);
    await camera.waitFor(() => camera.received().filter((d) => d.type === 'layer').length === 3, 10_000);
    expect(camera.received().filter((d) => d.type === 'layer')).toEqual([
      { type: 'layer', channel: 1, layer: 0, name: 'low', reason: 'down' },
      { type: 'layer', channel: 1, layer: 1, name: 'high', reason: 'up' },
      { type: 'layer', channel: 1, layer: 0, name: 'low', reason: 'down' },
    ]);
  });
});

describe('simulcast end to end (real svcd, the pilot in Chromium)', () => {
  const t = useBrowserFleet();
  const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));

  it('the pilot keeps painting when the forwarded layer switches to a larger picture', async () => {
    // Two publishers, one per layer, so the test decides when the high layer appears.
    const [lowPort, highPort] = [await freeUdpPort(), await freeUdpPort()];
    const robot = await t.fleet.robot(
      'simulcast',
      twoLayerVideoChannel({ lowPort, highPort, highMinBitrateKbps: 500 }),
    );
    t.defer(() => robot.remove());
    const start = (layer: typeof LOW, port: number): Promise<RunningPublisher> =>
      startPublisher({ layers: [{ ...layer, port }], gopFrames: 300 });
    const low = await start(LOW, lowPort);
    t.defer(() => low.stop());
    // The low layer's keyframe came first: it is forwarded while the high layer (the target) is missing.
    await robot.daemon.waitForLog('simulcast layer forwarded first');

    const watching = t.chromium.run<WatchResult & { sizes: PaintedSize[] }>({
      entry: page,
      exportName: 'watchSizes',
      args: [t.fleet.cloud.signalUrl, 'simulcast', await robot.token('observe'), size(HIGH), 60, 30],
      timeoutMs: 60_000,
    });
    await robot.daemon.waitForLog('pilot session welcomed');
    const high = await start(HIGH, highPort);
    t.defer(() => high.stop());
    const result = await watching;
    const video = Object.values(result.stats.channels)[0]!;
    expect(
      result.sizes.map((s) => s.size),
      JSON.stringify(result),
    ).toEqual([size(LOW), size(HIGH)]);
    expect(result.sizes[1]!.paints).toBeGreaterThanOrEqual(60);
    expect(video.decodeErrors).toBe(0);
    expect(robot.log()).toMatch(/simulcast layer switched/);
  }, 120_000);
});
