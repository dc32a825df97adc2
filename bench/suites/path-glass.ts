/**
 * The `path` suite's figures (e) to (j) (issue 16): capture → glass read from the pixels, on the
 * default profile, with a live source (`glass-source.ts`: a picture drawn by this process with its
 * capture time as a pixel code, encoded by a real ffmpeg, RTP to a real `svcd`, WebTransport to
 * the pilot SDK in Chromium). One daemon and one source serve every part; the daemon's clock is
 * set 250 ms off the machine's (`SVC_TEST_CLOCK_OFFSET_MS`), which only the HUD's picture age
 * (i) must see through.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JitterTuning } from '@svc/pilot';
import { LinkShaper } from '@svc/shaper';
import { type ChromiumSession, type CloudProcess, freeUdpPort } from '@svc/testkit';
import { startBenchDaemon } from '../daemon.js';
import { CODE_MODULUS, codeDiffMs } from '../glass-code.js';
import { startGlassSource } from '../glass-source.js';
import { startShaperProcess } from '../shaper-process.js';
import { percentile } from '../stats.js';
import type { BenchResult } from '../types.js';
import type { GlassPaint, GlassParams, GlassSample } from './path-glass-page.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const page = path.join(here, 'path-glass-page.ts');
const SOURCE = { width: 640, height: 360, fps: 30, gop: 60, bitrateKbps: 2500 };
/** The robot's clock runs this far ahead of the machine's (figure (i)). */
const ROBOT_CLOCK_OFFSET_MS = 250;
/** Pictures of the first seconds are left out of (e), (f) and (i): the hold settles meanwhile. */
const SETTLE_MS = 5000;
const WATCH_S = 30;
const CONTENTION_WATCH_S = 120;
const JOINS = 3;
const JOIN_WATCH_S = 10;

/** Which parts to run: `calm` is (e) to (i), `contention` is (j). */
export interface GlassParts {
  readonly calm: boolean;
  readonly contention: boolean;
  /** (e) on the WebRTC backend too, named with `webrtc` (issue 19). */
  readonly webrtc?: boolean;
}

/** Runs the parts asked for and reports (e) to (j). */
export async function measureGlassFigures(
  chromium: ChromiumSession,
  cloud: CloudProcess,
  report: (r: BenchResult) => void,
  parts: GlassParts,
): Promise<void> {
  const rtpPort = await freeUdpPort();
  const publisher = await listenPublisherControl();
  const daemon = await startBenchDaemon(cloud, {
    robotId: 'bench-glass',
    channels: [
      '[[channel]]',
      'kind = "video"',
      'name = "front"',
      `input = "rtp://127.0.0.1:${rtpPort}"`,
      'codec = "avc1.42c01f"',
      `fps = ${SOURCE.fps}`,
    ],
    publisherControl: `127.0.0.1:${publisher.port}`,
    env: { SVC_TEST_CLOCK_OFFSET_MS: String(ROBOT_CLOCK_OFFSET_MS) },
  });
  const source = await startGlassSource({ port: rtpPort, ...SOURCE });
  const jitter = jitterTuning();
  const base = {
    signalUrl: cloud.signalUrl,
    robotId: daemon.robotId,
    ...(jitter !== undefined && { jitter }),
  };
  let watched = 0;
  const watch = async (params: Omit<GlassParams, 'signalUrl' | 'robotId' | 'token'>) => {
    const sample = await chromium.run<GlassSample>({
      entry: page,
      exportName: 'measureGlass',
      args: [{ ...base, token: await daemon.sessionToken('observe'), ...params }],
      timeoutMs: (params.seconds + 60) * 1000,
    });
    await dumpSample(`watch-${++watched}`, sample);
    return sample;
  };
  const sourceParams = { source: SOURCE, profile: 'balanced (default)', settleMs: SETTLE_MS };
  try {
    if (parts.calm) await calmFigures();
    if (parts.webrtc === true) await webrtcFigures();
    if (parts.contention) await contentionFigures();
  } finally {
    await source.stop().catch(() => {});
    await daemon.stop();
    publisher.close();
  }

  /** (e) from a calm watch: capture → glass of the pictures painted after the settling time. */
  function reportGlass(calm: GlassSample, suffix: string): GlassPaint[] {
    const settled = calm.paints.filter((p) => p[4] >= SETTLE_MS);
    const glass = settled.map((p) => p[1]).sort((a, b) => a - b);
    const params = {
      ...sourceParams,
      painted: settled.length,
      unreadable: calm.unreadable,
      kernel: calm.kernel,
      stats: calm.stats,
    };
    for (const q of [0.5, 0.99]) {
      report({
        name: `(e) capture → glass, p${q * 100}${suffix}`,
        value: percentile(glass, q),
        unit: 'ms',
        better: 'lower',
        params,
      });
    }
    return settled;
  }

  /** (e) on a calm loopback, the session on WebRTC data channels. */
  async function webrtcFigures(): Promise<void> {
    const calm = await watch({ seconds: WATCH_S, backend: 'webrtc' });
    const backend = (calm.connection as { backend?: string } | null)?.backend;
    if (backend !== 'webrtc') throw new Error(`the WebRTC watch ran on ${String(backend)}`);
    reportGlass(calm, ', webrtc');
  }

  async function calmFigures(): Promise<void> {
    // (e) and (i): a calm loopback.
    const settled = reportGlass(await watch({ seconds: WATCH_S }), '');
    const errors = settled.filter((p) => Number.isFinite(p[2])).map((p) => Math.abs(p[2] - p[1]));
    report({
      name: `(i) HUD picture age − (e), mean absolute error, robot clock ${ROBOT_CLOCK_OFFSET_MS} ms off`,
      value: errors.length === 0 ? Number.NaN : errors.reduce((a, b) => a + b, 0) / errors.length,
      unit: 'ms',
      better: 'lower',
      params: { ...sourceParams, compared: errors.length, painted: settled.length },
    });

    // (f): through the shaper, 40 ms ± 20 ms each way, order kept, in a process of its own.
    const jitteryLink = await startShaperProcess(daemon.quicPort, [
      '--delay',
      '40ms',
      '--jitter',
      '20ms',
      '--seed',
      '16',
    ]);
    let jittery: GlassSample;
    let shaperStats: unknown;
    try {
      jittery = await watch({ seconds: WATCH_S, viaUrls: [`https://127.0.0.1:${jitteryLink.port}/`] });
    } finally {
      shaperStats = await jitteryLink.close();
    }
    const shaped = jittery.paints.filter((p) => p[4] >= SETTLE_MS);
    const shapedGlass = shaped.map((p) => p[1]).sort((a, b) => a - b);
    const share = lateOrSkipped(jittery, source.captured);
    const shapedParams = {
      ...sourceParams,
      link: '40 ms ± 20 ms uniform each way, no reordering (svc-shaper, its own process)',
      ...share,
      shaper: shaperStats,
      stats: jittery.stats,
    };
    report({
      name: '(f) capture → glass through 40 ± 20 ms jitter, p50',
      value: percentile(shapedGlass, 0.5),
      unit: 'ms',
      better: 'lower',
      params: shapedParams,
    });
    report({
      name: '(f) frames painted late or skipped through 40 ± 20 ms jitter',
      value: share.percent,
      unit: '%',
      better: 'lower',
      params: shapedParams,
    });

    // (g) needs the link cut at a moment of its choosing: an in-process shaper it can update.
    const shaper = await LinkShaper.start({
      listen: { address: '127.0.0.1', port: 0 },
      target: { address: '127.0.0.1', port: daemon.quicPort },
      up: { delayMs: 40, jitterMs: 20 },
      down: { delayMs: 40, jitterMs: 20 },
      seed: 16,
    });
    try {
      const viaUrls = [`https://127.0.0.1:${shaper.address().port}/`];
      // (g): the driver vanishes → `session ended` at the robot's publisher-control port.
      const closed = await driverGone(chromium, daemon, publisher, base, 'close');
      report({
        name: '(g) driver page closed → session ended at the publisher-control port',
        value: closed,
        unit: 'ms',
        better: 'lower',
      });
      const cut = await driverGone(chromium, daemon, publisher, { ...base, viaUrls }, 'cut', shaper);
      report({
        name: '(g) driver link cut → session ended at the publisher-control port',
        value: cut,
        unit: 'ms',
        better: 'lower',
      });
    } finally {
      await shaper.close();
    }

    // (h): joins mid-GOP with a publisher that ignores recovery requests (this source does).
    const lostPerJoin: number[] = [];
    for (let join = 0; join < JOINS; join++) {
      await new Promise((resolve) => setTimeout(resolve, 700 * (join + 1)));
      const sample = await watch({ seconds: JOIN_WATCH_S });
      lostPerJoin.push(framesMissing(sample.frames, JOIN_WATCH_S * 1000));
    }
    report({
      name: '(h) frames lost in the first 10 s after a join, publisher ignoring requests, GOP 2 s',
      value: lostPerJoin.reduce((a, b) => a + b, 0),
      unit: 'frames',
      better: 'lower',
      params: { joins: JOINS, lostPerJoin, gopFrames: SOURCE.gop },
    });
  }

  async function contentionFigures(): Promise<void> {
    // (j): two minutes with two CPU-bound busy loops beside everything.
    const loops = [busyLoop(), busyLoop()];
    try {
      const busy = await watch({ seconds: CONTENTION_WATCH_S });
      const all = busy.paints.map((p) => p[1]);
      const end = busy.paints.at(-1)?.[4] ?? 0;
      const first = busy.paints
        .filter((p) => p[4] < 30_000)
        .map((p) => p[1])
        .sort((a, b) => a - b);
      const last = busy.paints
        .filter((p) => p[4] >= end - 30_000)
        .map((p) => p[1])
        .sort((a, b) => a - b);
      const growth = percentile(last, 0.5) / percentile(first, 0.5) - 1;
      const busyParams = {
        ...sourceParams,
        busyLoops: 2,
        painted: all.length,
        firstP50: percentile(first, 0.5),
        lastP50: percentile(last, 0.5),
        stats: busy.stats,
      };
      report({
        name: '(j) capture → glass with two busy loops, 2 min, p99',
        value: percentile(
          [...all].sort((a, b) => a - b),
          0.99,
        ),
        unit: 'ms',
        better: 'lower',
        params: busyParams,
      });
      report({
        name: '(j) p50 growth, last 30 s against the first 30 s',
        value: 100 * growth,
        unit: '%',
        better: 'lower',
        params: busyParams,
      });
    } finally {
      for (const loop of loops) loop.kill('SIGKILL');
    }
  }
}

/**
 * `SVC_BENCH_GLASS_JITTER='{"percentile":0.99}'`: the pilot's adaptive hold tuned otherwise than
 * the SDK's defaults (`JitterTuning`), for trying settings; unset, the figures are the shipped ones.
 */
function jitterTuning(): JitterTuning | undefined {
  const given = process.env.SVC_BENCH_GLASS_JITTER;
  if (given === undefined || given === '') return undefined;
  try {
    return JSON.parse(given) as JitterTuning;
  } catch (err) {
    throw new Error(`SVC_BENCH_GLASS_JITTER must be JSON such as {"percentile":0.99}: ${String(err)}`);
  }
}

/**
 * With `SVC_BENCH_GLASS_DUMP=<folder>`, each watch's paints go to `<folder>/<name>.json`, for
 * looking into where the time went (the columns are those of {@link GlassPaint}).
 */
async function dumpSample(name: string, sample: GlassSample): Promise<void> {
  const folder = process.env.SVC_BENCH_GLASS_DUMP;
  if (folder === undefined || folder === '') return;
  await mkdir(folder, { recursive: true });
  await writeFile(path.join(folder, `${name}.json`), JSON.stringify(sample));
}

/**
 * Of the pictures the source drew while the pilot watched (after the settling time, and not in
 * the last second), the share painted late or never painted.
 */
function lateOrSkipped(sample: GlassSample, captured: readonly number[]) {
  const painted = new Map<number, number>();
  for (const p of sample.paints) painted.set(p[0], p[3]);
  const settled = sample.paints.filter((p) => p[4] >= SETTLE_MS);
  if (settled.length === 0) return { percent: Number.NaN, drawn: 0, skipped: 0, late: 0 };
  const from = settled[0]![0];
  const to = settled.at(-1)![0];
  let drawn = 0;
  let skipped = 0;
  let late = 0;
  for (const at of captured) {
    const code = Math.floor(at) % CODE_MODULUS;
    if (codeDiffMs(code, from) < 0 || codeDiffMs(to, code) < 1000) continue;
    drawn++;
    const wasLate = painted.get(code);
    if (wasLate === undefined) skipped++;
    else if (wasLate === 1) late++;
  }
  return { percent: drawn === 0 ? Number.NaN : (100 * (skipped + late)) / drawn, drawn, skipped, late };
}

/** Frame ids missing between the first frame delivered and `windowMs` after it. */
function framesMissing(frames: readonly [number, number][], windowMs: number): number {
  if (frames.length === 0) return Number.NaN;
  const start = frames[0]![1];
  const inWindow = frames.filter(([, at]) => at - start <= windowMs);
  const first = inWindow[0]![0];
  const ids = new Set(inWindow.map(([id]) => (id - first + 0x10000) & 0xffff));
  const span = Math.max(...ids) + 1;
  return span - ids.size;
}

/** A UDP socket standing in for the publisher: notes when each `session` message arrives. */
async function listenPublisherControl() {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const waiters: { match: (m: Record<string, unknown>) => boolean; resolve: (at: number) => void }[] = [];
  socket.on('message', (bytes) => {
    const at = performance.timeOrigin + performance.now();
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(bytes.toString()) as Record<string, unknown>;
    } catch {
      return;
    }
    for (const w of waiters.splice(0)) {
      if (w.match(message)) w.resolve(at);
      else waiters.push(w);
    }
  });
  return {
    port: (socket.address() as { port: number }).port,
    next(match: (m: Record<string, unknown>) => boolean, timeoutMs: number): Promise<number> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error('no such publisher-control message in time')),
          timeoutMs,
        );
        waiters.push({
          match,
          resolve: (at) => {
            clearTimeout(timer);
            resolve(at);
          },
        });
      });
    },
    close: () => socket.close(),
  };
}

/** ms from the driver vanishing (page closed, or link cut) to `session` `ended` at the publisher. */
async function driverGone(
  chromium: ChromiumSession,
  daemon: Awaited<ReturnType<typeof startBenchDaemon>>,
  publisher: Awaited<ReturnType<typeof listenPublisherControl>>,
  base: Omit<GlassParams, 'token' | 'seconds'>,
  how: 'close' | 'cut',
  shaper?: LinkShaper,
): Promise<number> {
  const token = await daemon.sessionToken('drive');
  const params: GlassParams = { ...base, token, seconds: 0 };
  const isDriver = (state: string) => (m: Record<string, unknown>) =>
    m.type === 'session' && m.state === state && m.role === 'driver';
  const started = publisher.next(isDriver('started'), 30_000);
  const running = chromium.run<number>({
    entry: page,
    exportName: 'holdDriver',
    args: [params, how === 'close' ? 0.5 : 6],
    timeoutMs: 60_000,
  });
  await started;
  let gone: number;
  const ended = publisher.next(isDriver('ended'), 35_000);
  if (how === 'close') {
    // The page is closed as soon as the function returns: count from its return.
    gone = await running;
  } else {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    gone = performance.timeOrigin + performance.now();
    shaper!.update({ up: { loss: 1 }, down: { loss: 1 } });
  }
  const endedAt = await ended;
  if (how === 'cut') {
    shaper!.update({ up: { loss: 0 }, down: { loss: 0 } });
    await running.catch(() => {});
  }
  return endedAt - gone;
}

function busyLoop(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}
