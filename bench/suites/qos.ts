/**
 * QoS suite: how the picture holds up on a bad link, end to end with real parts. A real GStreamer
 * publisher (x264, answering publisher-control datagrams or ignoring them) → a real `svcd`,
 * enrolled with a real svc-cloud → the link shaper (`@svc/shaper`, seeded) in front of the
 * daemon's `quic_port` → the pilot SDK in headless Chromium, which asks svc-cloud for the offer and
 * connects to the shaper's address with the offer's certificate hashes and session id.
 *
 * Between the publisher and the daemon this process relays RTP (to count the frames the publisher
 * sent and key them by capture time, as the daemon derives it) and publisher-control datagrams
 * (so the daemon can start before the publisher and have its first keyframe; datagrams sent before
 * the publisher is up are held and handed over). One clock: the machine's wall clock read with
 * sub-millisecond resolution in every process.
 *
 * 1. Loss: frames painted (of those the publisher sent) and the longest freeze over 20 s, at 5 %
 *    independent loss and at 5 % loss in bursts of mean length 3, robot → pilot.
 * 2. Rate halving: the link at twice the stream's bitrate, then half of that; the time until the
 *    pilot's paint latency and the daemon's send queue have settled.
 * 3. First picture: connect (offer in hand) → first painted frame, over several joins, with a
 *    publisher that ignores every datagram (10 s GOP) and with one that answers.
 */
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Impairment, LinkShaper } from '@svc/shaper';
import {
  ChromiumSession,
  type CloudProcess,
  freeUdpPort,
  type PublisherPattern,
  type RunningPublisher,
  startCloudProcess,
  startPublisher,
} from '@svc/testkit';
import { wrapU32 } from '@svc/wire';
import { type BenchDaemon, startBenchDaemon } from '../daemon.js';
import { percentile } from '../stats.js';
import type { BenchResult, BenchSuite } from '../types.js';
import type { FirstPictureJoin, QosWatch, RobotStatsSample } from './qos-page.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const page = path.join(here, 'qos-page.ts');
const ensureSystem = path.resolve(here, '../../scripts/ensure-system.sh');
/** What the GStreamer publisher needs (testkit `startPublisher`); `npm run bench` ensures only ffmpeg and Chromium. */
const PUBLISHER_PACKAGES = [
  'gstreamer1.0-tools',
  'gstreamer1.0-plugins-base',
  'gstreamer1.0-plugins-good',
  'gstreamer1.0-plugins-ugly',
  'python3-gi',
  'gir1.2-gst-plugins-base-1.0',
];

const PROFILE = 'balanced';
/** The publisher's stream. `max_bitrate_kbps` holds the daemon's `video-config` to the same rate. */
const STREAM = { width: 640, height: 480, fps: 30, bitrateKbps: 1500, gopFrames: 300 } as const;
/** H.264 level 3.0 (640×480 at 30 fps). */
const CODEC = 'avc1.42c01e';
const SEED = 7;
/** Loss runs: watched this long after `connected` before the window starts, the window, and after it. */
const LOSS = { warmupSeconds: 2, windowSeconds: 20, tailSeconds: 1.5 } as const;
const LOSS_MODELS: readonly { readonly label: string; readonly down: Impairment }[] = [
  { label: '5 % independent loss', down: { loss: 0.05 } },
  { label: '5 % loss in bursts of 3', down: { burstLoss: { rate: 0.05, meanBurst: 3 } } },
];
/** Rate-halving run. */
const HALVING = {
  rateKbps: 2 * STREAM.bitrateKbps,
  steadySeconds: 10,
  /** The pre-halving p50 is taken over this much before the halving. */
  baselineSeconds: 5,
  afterSeconds: 20,
  /** Settled: for this long, latency within the baseline p50 + `marginMs` and the queue not growing. */
  holdSeconds: 3,
  marginMs: 50,
  /** ... with at least this share of the frames painted in the hold (a frozen picture is not settled). */
  minPaintedShare: 0.5,
  /** Queue "not growing": its last sample in the hold at most one frame at the stream's bitrate above the first. */
  queueSlackBytes: Math.round((STREAM.bitrateKbps * 1000) / 8 / STREAM.fps),
  /** The candidate settle moments are this far apart. */
  stepMs: 50,
  /** The requested bitrate is the median over this last part of the run. */
  tailSeconds: 5,
} as const;
/** First-picture runs: joins per presentation delay, and the pause between joins. */
const FIRST_PICTURE = { joins: 6, gapMs: 1100, pattern: 'ball' as PublisherPattern } as const;

const epochMs = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const suite: BenchSuite = {
  description:
    'QoS through the link shaper: frames painted and longest freeze under loss, settling after the rate halves, first picture',
  parameters: {
    profile: PROFILE,
    publisher: {
      ...STREAM,
      encoder: 'GStreamer x264enc tune=zerolatency speed-preset=ultrafast bframes=0 (testkit startPublisher)',
      maxBitrateKbps: STREAM.bitrateKbps,
      lossAndHalvingPattern: 'snow (noise: the encoder spends its whole bitrate)',
      firstPicturePattern: FIRST_PICTURE.pattern,
    },
    shaper: { seed: SEED, impairedDirection: 'down (robot → pilot) only; up (pilot → robot) clean' },
    loss: { ...LOSS, models: LOSS_MODELS, publisherAnswers: true, presentationDelay: 'profile (100 ms)' },
    halving: { ...HALVING, publisherAnswers: true, presentationDelay: 'profile (100 ms)' },
    firstPicture: {
      ...FIRST_PICTURE,
      connect: 'PilotConnection.connect called with the offer already in hand (signalling not included)',
      link: 'through the shaper, no impairment',
    },
  },
  async run(report) {
    const parts = selectedParts();
    await installPublisherPackages();
    const chromium = await ChromiumSession.open();
    const cloud = await startCloudProcess();
    try {
      if (parts.has('loss')) {
        for (const [index, model] of LOSS_MODELS.entries())
          await measureLoss(`qos-loss-${index + 1}`, model.label, model.down, chromium, cloud, report);
      }
      if (parts.has('halving')) await measureHalving(chromium, cloud, report);
      if (parts.has('first')) {
        for (const answer of [false, true]) await measureFirstPicture(answer, chromium, cloud, report);
      }
    } finally {
      await chromium.close();
      await cloud.stop();
    }
  },
};

const PARTS = ['loss', 'halving', 'first'] as const;

/** `SVC_BENCH_QOS_PARTS=loss,halving,first` (default all): the parts to run, e.g. while working on one. */
function selectedParts(): Set<string> {
  const wanted = process.env.SVC_BENCH_QOS_PARTS?.split(',').map((p) => p.trim()) ?? [...PARTS];
  const unknown = wanted.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (unknown.length > 0)
    throw new Error(
      `SVC_BENCH_QOS_PARTS: unknown part(s) ${unknown.join(', ')}; expected some of ${PARTS.join(', ')}`,
    );
  return new Set(wanted);
}

// ---------------------------------------------------------------------------------------------
// 1. Frames painted and longest freeze under loss

async function measureLoss(
  robotId: string,
  label: string,
  down: Impairment,
  chromium: ChromiumSession,
  cloud: CloudProcess,
  report: (r: BenchResult) => void,
): Promise<void> {
  await withRobot(cloud, robotId, { answer: true, pattern: 'snow' }, async (robot) => {
    const shaper = await startShaper(robot.daemon, down);
    try {
      const seconds = LOSS.warmupSeconds + LOSS.windowSeconds + LOSS.tailSeconds;
      const watched = await watch(chromium, cloud, robot, shaper, seconds);
      await dump(robotId, watched, robot);
      const start = watched.connectedAt! + LOSS.warmupSeconds * 1000;
      const end = start + LOSS.windowSeconds * 1000;
      const sent = robot.tap.frames.filter((f) => f.at >= start && f.at <= end);
      const paintedKeys = new Set(watched.paints.map(([key]) => key));
      const painted = sent.filter((f) => paintedKeys.has(f.key)).length;
      const inWindow = (l: PaintLatency) => l.at >= start && l.at <= end;
      const params = {
        loss: down,
        framesSent: sent.length,
        framesPainted: painted,
        publisherToPaintP50Ms: p50(oneClockLatencies(watched, robot.tap).filter(inWindow)),
        pilot: pilotCounters(watched),
        shaperDown: shaper.stats().down,
        recoveryRequests: countBy(
          robot.control.messages.filter((m) => m.type === 'recovery-request').map((m) => String(m.kind)),
        ),
        keyframesForced: robot.publisher.actions().filter((a) => a.event === 'keyframe-forced').length,
      };
      report({
        name: `${label}: frames painted, share of the frames the publisher sent (20 s)`,
        value: sent.length === 0 ? Number.NaN : (100 * painted) / sent.length,
        unit: '%',
        better: 'higher',
        params,
      });
      report({
        name: `${label}: frames painted (20 s at 30 fps)`,
        value: painted,
        unit: 'frames',
        better: 'higher',
        params,
      });
      report({
        name: `${label}: longest freeze (longest gap between paints)`,
        value: longestGap(
          watched.paints.map(([, at]) => at).filter((at) => at >= start && at <= end),
          start,
          end,
        ),
        unit: 'ms',
        better: 'lower',
        params,
      });
      report({
        name: `${label}: send→paint latency p50 (pilot stats, with the profile's 100 ms presentation delay)`,
        value: p50(sdkLatencies(watched).filter(inWindow)),
        unit: 'ms',
        better: 'lower',
        params,
      });
    } finally {
      await shaper.close();
    }
  });
}

/** The longest time without a paint in `[start, end]`, counting from `start` and up to `end`. */
function longestGap(paintTimes: readonly number[], start: number, end: number): number {
  const times = [start, ...[...paintTimes].sort((a, b) => a - b), end];
  let longest = 0;
  for (let i = 1; i < times.length; i++) longest = Math.max(longest, times[i]! - times[i - 1]!);
  return longest;
}

/** A painted frame: when (epoch ms) and its latency (ms). */
interface PaintLatency {
  readonly at: number;
  readonly ms: number;
}

/**
 * Send→paint as the pilot SDK measures it: from the daemon's send timestamp, mapped onto the
 * page's clock with the offset its pings estimate (half the round trip assumed each way).
 */
function sdkLatencies(watched: QosWatch): PaintLatency[] {
  return watched.paints.filter(([, , ms]) => Number.isFinite(ms)).map(([, at, ms]) => ({ at, ms }));
}

/**
 * Publisher → paint on one clock: from the moment the frame's last RTP packet passed this
 * process's relay (just before the daemon's ingest) to its paint. It includes the daemon's ingest
 * and queueing before the send timestamp, and needs no clock-offset estimate.
 */
function oneClockLatencies(watched: QosWatch, tap: RtpTap): PaintLatency[] {
  const sentAt = new Map(tap.frames.map((f) => [f.key, f.at]));
  return watched.paints.flatMap(([key, at]) => {
    const sent = sentAt.get(key);
    return sent === undefined ? [] : [{ at, ms: at - sent }];
  });
}

function p50(latencies: readonly PaintLatency[]): number {
  return percentile(
    latencies.map((l) => l.ms).sort((a, b) => a - b),
    0.5,
  );
}

// ---------------------------------------------------------------------------------------------
// 2. Time to settle after the link rate halves

async function measureHalving(
  chromium: ChromiumSession,
  cloud: CloudProcess,
  report: (r: BenchResult) => void,
): Promise<void> {
  await withRobot(cloud, 'qos-halving', { answer: true, pattern: 'snow' }, async (robot) => {
    const shaper = await startShaper(robot.daemon, { rateKbps: HALVING.rateKbps });
    try {
      const watching = watch(chromium, cloud, robot, shaper, HALVING.steadySeconds + HALVING.afterSeconds);
      await robot.daemon.waitForLog('pilot session opened');
      await sleep(HALVING.steadySeconds * 1000);
      const halvedAt = epochMs();
      const downBefore = shaper.stats().down;
      shaper.update({ down: { rateKbps: HALVING.rateKbps / 2 } });
      const watched = await watching;
      await dump('qos-halving', watched, robot);
      const downAfter = shaper.stats().down;
      const end = watched.paints.at(-1)?.[1] ?? halvedAt;
      const tailStart = end - HALVING.tailSeconds * 1000;
      const queue = queueSamples(watched.robotStats);
      const abr = abrSamples(watched.robotStats).filter((s) => s.at >= tailStart);
      const halving = `${HALVING.rateKbps} → ${HALVING.rateKbps / 2} kbit/s, ${STREAM.bitrateKbps} kbit/s stream`;
      const common = {
        rateKbps: `${HALVING.rateKbps} → ${HALVING.rateKbps / 2}`,
        observedAfterHalvingSeconds: (end - halvedAt) / 1000,
        queueBytesAfterHalving: queue.filter((s) => s.at >= halvedAt).map((s) => s.bytes),
        rttMsAfterHalving: watched.robotStats
          .filter((s) => s.at >= halvedAt)
          .map((s) => videoEntry(s)?.rtt_ms)
          .filter((v) => typeof v === 'number'),
        shaperQueueDropsAfterHalving: downAfter.dropped.queue - downBefore.dropped.queue,
        abrReasons: countBy(abr.map((s) => s.reason).filter((r) => r !== undefined)),
        videoConfigsAfterHalving: robot.control.messages
          .filter((m) => m.type === 'video-config' && m.at >= halvedAt)
          .map((m) => ({
            afterMs: Math.round(m.at - halvedAt),
            maxBitrateKbps: m.maxBitrateKbps,
            reason: m.reason,
          })),
        pilot: pilotCounters(watched),
      };
      for (const [latencies, what] of [
        [sdkLatencies(watched), 'send→paint latency (pilot stats)'],
        [oneClockLatencies(watched, robot.tap), 'publisher→paint latency (one clock)'],
      ] as const) {
        const baseline = p50(
          latencies.filter((l) => l.at >= halvedAt - HALVING.baselineSeconds * 1000 && l.at < halvedAt),
        );
        const settledAt = settleMoment(latencies, queue, halvedAt, end, baseline + HALVING.marginMs);
        const params = { ...common, settled: settledAt !== null, thresholdMs: baseline + HALVING.marginMs };
        report({
          name: `rate halves (${halving}): time to settle, on ${what} and the daemon's send queue`,
          value: settledAt === null ? Number.NaN : (settledAt - halvedAt) / 1000,
          unit: 's',
          better: 'lower',
          params,
        });
        report({
          name: `rate halves: ${what} p50 over the ${HALVING.baselineSeconds} s before`,
          value: baseline,
          unit: 'ms',
          better: 'lower',
          params,
        });
        report({
          name: `rate halves: ${what} p50 over the last ${HALVING.tailSeconds} s`,
          value: p50(latencies.filter((l) => l.at >= tailStart)),
          unit: 'ms',
          better: 'lower',
          params,
        });
      }
      const kbps = abr.map((s) => s.kbps).filter((v) => v !== undefined);
      if (kbps.length > 0) {
        report({
          name: `rate halves: bitrate the daemon requests afterwards (agent-stats abr_bitrate_kbps, median of the last ${HALVING.tailSeconds} s)`,
          value: percentile(
            kbps.sort((a, b) => a - b),
            0.5,
          ),
          unit: 'kbit/s',
          better: 'higher',
          params: common,
        });
      }
    } finally {
      await shaper.close();
    }
  });
}

interface QueueSample {
  readonly at: number;
  readonly bytes: number;
}

/** The daemon's send-queue bytes of the video channel from each `agent-stats`. */
function queueSamples(samples: readonly RobotStatsSample[]): QueueSample[] {
  return samples.flatMap((s) => {
    const bytes = videoEntry(s)?.queue_bytes;
    return typeof bytes === 'number' ? [{ at: s.at, bytes }] : [];
  });
}

/** The ABR fields of each `agent-stats`, where the daemon sends them (read defensively). */
function abrSamples(samples: readonly RobotStatsSample[]): { at: number; kbps?: number; reason?: string }[] {
  return samples.flatMap((s) => {
    const entry = videoEntry(s);
    if (entry === undefined) return [];
    const kbps = entry.abr_bitrate_kbps;
    const reason = entry.abr_reason;
    return [
      {
        at: s.at,
        ...(typeof kbps === 'number' && { kbps }),
        ...(typeof reason === 'string' && { reason }),
      },
    ];
  });
}

/** The video channel's entry of an `agent-stats`: the one with a send queue. */
function videoEntry(sample: RobotStatsSample): Record<string, unknown> | undefined {
  return Object.values(sample.channels).find((c) => 'queue_bytes' in c);
}

/**
 * The first moment `t` from `halvedAt` on after which, for {@link HALVING.holdSeconds}, every paint
 * has a latency within `thresholdMs`, at least {@link HALVING.minPaintedShare} of the frames are
 * painted, and the daemon's send queue does not grow (its last sample in the hold at most
 * {@link HALVING.queueSlackBytes} above its first; at least two samples). `null`: not within the
 * run.
 */
function settleMoment(
  latencies: readonly PaintLatency[],
  queue: readonly QueueSample[],
  halvedAt: number,
  end: number,
  thresholdMs: number,
): number | null {
  const holdMs = HALVING.holdSeconds * 1000;
  const minPaints = HALVING.minPaintedShare * HALVING.holdSeconds * STREAM.fps;
  for (let t = halvedAt; t + holdMs <= end; t += HALVING.stepMs) {
    const held = latencies.filter((l) => l.at > t && l.at <= t + holdMs);
    if (held.length < minPaints) continue;
    if (held.some((l) => !(l.ms <= thresholdMs))) continue;
    const samples = queue.filter((s) => s.at >= t && s.at <= t + holdMs);
    if (samples.length < 2) continue;
    if (samples.at(-1)!.bytes > samples[0]!.bytes + HALVING.queueSlackBytes) continue;
    return t;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// 3. First picture

async function measureFirstPicture(
  answer: boolean,
  chromium: ChromiumSession,
  cloud: CloudProcess,
  report: (r: BenchResult) => void,
): Promise<void> {
  const name = answer ? 'qos-first-answering' : 'qos-first-ignoring';
  await withRobot(cloud, name, { answer, pattern: FIRST_PICTURE.pattern }, async (robot) => {
    const shaper = await startShaper(robot.daemon, {});
    try {
      const publisher = answer ? 'publisher answering' : 'publisher ignoring every datagram';
      for (const delay of [0, null] as const) {
        const tokens = await Promise.all(
          Array.from({ length: FIRST_PICTURE.joins }, () => robot.daemon.sessionToken()),
        );
        const joins = await chromium.run<FirstPictureJoin[]>({
          entry: page,
          exportName: 'firstPictures',
          args: [
            cloud.signalUrl,
            robot.daemon.robotId,
            tokens,
            shaperUrl(shaper),
            delay,
            FIRST_PICTURE.gapMs,
          ],
          timeoutMs: 120_000,
          allowConsoleErrors: true,
        });
        const times = joins
          .map((j) => j.connectToFirstPaintMs)
          .filter((v) => v !== null)
          .sort((a, b) => a - b);
        const delayLabel = delay === 0 ? 'presentation delay 0' : 'profile presentation delay (100 ms)';
        const params = {
          gopFrames: STREAM.gopFrames,
          presentationDelay: delayLabel,
          joins: joins.map((j) => ({
            firstPaintMs: j.connectToFirstPaintMs === null ? null : round1(j.connectToFirstPaintMs),
            connectedMs: j.connectToConnectedMs === null ? null : round1(j.connectToConnectedMs),
            notLive: j.firstPaintNotLive,
            replayed: j.replayed,
          })),
          withoutPicture: joins.length - times.length,
        };
        for (const [q, label] of [
          [0.5, 'p50'],
          [1, 'max'],
        ] as const) {
          report({
            name: `first picture, ${publisher}, GOP 10 s, ${delayLabel}: connect (offer in hand) → first paint, ${label}`,
            value: percentile(times, q),
            unit: 'ms',
            better: 'lower',
            params,
          });
        }
      }
    } finally {
      await shaper.close();
    }
  });
}

const round1 = (v: number) => Math.round(v * 10) / 10;

// ---------------------------------------------------------------------------------------------
// Parts

/** Installs the publisher's Debian packages when missing (as root; otherwise says what to run). */
function installPublisherPackages(): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('bash', [ensureSystem, ...PUBLISHER_PACKAGES], (err, stdout, stderr) => {
      if (stdout !== '') process.stdout.write(stdout);
      if (err === null) resolve();
      else
        reject(
          new Error(`the qos suite needs GStreamer for its publisher: ${stderr.trim()}`, { cause: err }),
        );
    });
  });
}

/** A daemon fed by a live publisher through this process's relays. */
interface Robot {
  readonly daemon: BenchDaemon;
  readonly publisher: RunningPublisher;
  readonly tap: RtpTap;
  readonly control: ControlRelay;
}

/**
 * Starts the relays, a daemon (profile {@link PROFILE}, one video channel at
 * {@link STREAM}`.bitrateKbps` at most) and then the publisher, runs `body`, and stops them all.
 * The daemon starts first so it has the publisher's first keyframe (the GOP is 10 s).
 */
async function withRobot(
  cloud: CloudProcess,
  robotId: string,
  publisher: { answer: boolean; pattern: PublisherPattern },
  body: (robot: Robot) => Promise<void>,
): Promise<void> {
  const rtpPort = await freeUdpPort();
  const tap = await RtpTap.open(rtpPort);
  const control = await ControlRelay.open();
  const stops: (() => Promise<void>)[] = [() => tap.close(), () => control.close()];
  try {
    const daemon = await startBenchDaemon(cloud, {
      robotId,
      agent: [`qos_profile = "${PROFILE}"`],
      channels: [
        '[[channel]]',
        'kind = "video"',
        'name = "front"',
        `input = "rtp://127.0.0.1:${rtpPort}"`,
        `codec = "${CODEC}"`,
        `fps = ${STREAM.fps}`,
        `max_bitrate_kbps = ${STREAM.bitrateKbps}`,
      ],
      publisherControl: `127.0.0.1:${control.port}`,
    });
    stops.push(() => daemon.stop());
    const running = await startPublisher({
      port: tap.port,
      answer: publisher.answer,
      width: STREAM.width,
      height: STREAM.height,
      fps: STREAM.fps,
      gopFrames: STREAM.gopFrames,
      bitrateKbps: STREAM.bitrateKbps,
      pattern: publisher.pattern,
    });
    stops.push(() => running.stop());
    control.setTarget(running.controlPort);
    // A second of stream in the daemon before any pilot comes.
    await sleep(1000);
    await body({ daemon, publisher: running, tap, control });
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

/** A link shaper in front of the daemon's `quic_port`, impairing robot → pilot with `down`. */
function startShaper(daemon: BenchDaemon, down: Impairment): Promise<LinkShaper> {
  return LinkShaper.start({
    listen: { address: '127.0.0.1', port: 0 },
    target: { address: '127.0.0.1', port: daemon.quicPort },
    down,
    seed: SEED,
  });
}

const shaperUrl = (shaper: LinkShaper) => `https://127.0.0.1:${shaper.address().port}/`;

async function watch(
  chromium: ChromiumSession,
  cloud: CloudProcess,
  robot: Robot,
  shaper: LinkShaper,
  seconds: number,
): Promise<QosWatch> {
  const token = await robot.daemon.sessionToken();
  return chromium.run<QosWatch>({
    entry: page,
    exportName: 'watchThroughShaper',
    args: [cloud.signalUrl, robot.daemon.robotId, token, shaperUrl(shaper), seconds, null],
    timeoutMs: (seconds + 60) * 1000,
    allowConsoleErrors: true,
  });
}

/** The pilot's counters of the video channel at the end of a watch. */
function pilotCounters(watched: QosWatch) {
  const video = Object.values(watched.stats.channels)[0];
  return (
    video && {
      framesReceived: video.framesReceived,
      framesRepaired: video.framesRepaired,
      framesLost: video.framesLost,
      decoded: video.decoded,
      decodeErrors: video.decodeErrors,
      dropped: video.dropped,
      late: video.late,
      painted: video.painted,
      waitingForKeyframe: video.waitingForKeyframe,
      keyframeRequests: video.keyframeRequests,
      reanchors: video.reanchors,
    }
  );
}

/** `SVC_BENCH_QOS_DUMP=<dir>`: each watch's raw record (paints, agent-stats, frames sent, control datagrams) is written there. */
async function dump(name: string, watched: QosWatch, robot: Robot): Promise<void> {
  const dir = process.env.SVC_BENCH_QOS_DUMP;
  if (dir === undefined || dir === '') return;
  await mkdir(dir, { recursive: true });
  const record = { watched, framesSent: robot.tap.frames, control: robot.control.messages };
  await writeFile(path.join(dir, `${name}.json`), JSON.stringify(record));
}

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

/** One frame the publisher sent: its capture key (as the daemon and the pilot derive it) and when its last packet passed. */
interface TappedFrame {
  readonly key: number;
  readonly at: number;
}

/**
 * Relays the publisher's RTP to the daemon and notes each frame (the packet with the marker bit):
 * its capture time in µs, 32 bits, derived from the RTP timestamp as the daemon does (90 kHz,
 * unwrapped from the first packet on), and when it passed.
 */
class RtpTap {
  readonly frames: TappedFrame[] = [];
  readonly #socket: dgram.Socket;
  #last: number | undefined;
  #extended = 0;

  private constructor(socket: dgram.Socket, target: number) {
    this.#socket = socket;
    socket.on('message', (packet) => {
      socket.send(packet, target, '127.0.0.1');
      if (packet.length < 12) return;
      const timestamp = packet.readUInt32BE(4);
      this.#extended = this.#last === undefined ? timestamp : this.#extended + ((timestamp - this.#last) | 0);
      this.#last = timestamp;
      if ((packet[1]! & 0x80) === 0) return;
      this.frames.push({ key: wrapU32(Math.round((this.#extended * 1e6) / 90_000)), at: epochMs() });
    });
  }

  static async open(target: number): Promise<RtpTap> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    socket.setRecvBufferSize(4 * 1024 * 1024);
    return new RtpTap(socket, target);
  }

  get port(): number {
    return this.#socket.address().port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}

/** A publisher-control datagram the daemon sent, parsed, with when it arrived here. */
type ControlMessage = Record<string, unknown> & { readonly at: number };

/**
 * Receives the daemon's publisher-control datagrams, notes them, and passes them on to the
 * publisher; those that come before the publisher's port is known are held until then.
 */
class ControlRelay {
  readonly messages: ControlMessage[] = [];
  readonly #socket: dgram.Socket;
  #target: number | undefined;
  readonly #held: Buffer[] = [];

  private constructor(socket: dgram.Socket) {
    this.#socket = socket;
    socket.on('message', (datagram) => {
      try {
        this.messages.push({ ...(JSON.parse(datagram.toString('utf8')) as object), at: epochMs() });
      } catch {
        this.messages.push({ type: 'unreadable', at: epochMs() });
      }
      if (this.#target === undefined) this.#held.push(datagram);
      else socket.send(datagram, this.#target, '127.0.0.1');
    });
  }

  static async open(): Promise<ControlRelay> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new ControlRelay(socket);
  }

  get port(): number {
    return this.#socket.address().port;
  }

  setTarget(port: number): void {
    this.#target = port;
    for (const datagram of this.#held.splice(0)) this.#socket.send(datagram, port, '127.0.0.1');
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}
