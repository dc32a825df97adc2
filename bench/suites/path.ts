/**
 * Path suite: the direct path on loopback with real processes and Chromium. Camera RTP (real
 * ffmpeg output, replayed at 30 fps by this process) → a real `svcd`, enrolled with a real
 * svc-cloud → WebTransport → the pilot SDK in headless Chromium, which gets the robot's address
 * from a signalling offer, with presentation delay 0. One clock: the machine's wall clock read
 * with sub-millisecond resolution in every process.
 */
import dgram from 'node:dgram';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRtpPacket } from '@svc/media';
import { ChromiumSession, type CloudProcess, freeUdpPort, startCloudProcess } from '@svc/testkit';
import { createSelfSignedCertificate, type Session, WebTransportServer } from '@svc/transport';
import { CHUNK_HEADER_BYTES, wrapU32 } from '@svc/wire';
import { captureRtp } from '../capture.js';
import { startBenchDaemon } from '../daemon.js';
import { percentile } from '../stats.js';
import type { BenchResult, BenchSuite } from '../types.js';
import { FLOOR_LAYOUT, type FloorSample } from './path-floor-page.js';
import { measureGlassFigures } from './path-glass.js';
import type { PathSample } from './path-page.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const page = path.join(here, 'path-page.ts');
const floorPage = path.join(here, 'path-floor-page.ts');
const FPS = 30;
const FRAMES = 300; // ten seconds
const CAPTURE = { frames: FRAMES, size: '1280x720', fps: FPS, gop: 60 };
const ENCODER = [
  '-c:v',
  'libx264',
  '-profile:v',
  'baseline',
  '-preset',
  'ultrafast',
  '-tune',
  'zerolatency',
  '-b:v',
  '8M',
  '-maxrate',
  '8M',
  '-bufsize',
  '1M',
  '-x264-params',
  'sliced-threads=0',
  '-bsf:v',
  'dump_extra=freq=keyframe',
];
const CLOCK_TICKS_PER_SECOND = 100;
/**
 * The stream is replayed twice, the second time right after the first, continuing its sequence
 * numbers and timestamps: the first pass is a daemon's first ten seconds of video (its code still
 * being compiled by V8), the second the same daemon warm, as it serves for hours.
 */
const PASSES = 2;

/** `SVC_BENCH_PATH_PILOTS=1`: only the one-pilot run (for A/B runs of the daemon's CPU). */
function pilotCounts(): number[] {
  const given = process.env.SVC_BENCH_PATH_PILOTS;
  if (given === undefined || given === '') return [1, 4];
  const counts = given.split(',').map(Number);
  if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > 16))
    throw new Error(`SVC_BENCH_PATH_PILOTS must be pilot counts 1..16 separated by commas, got "${given}"`);
  return counts;
}

const PATH_PARTS = ['floor', 'direct', 'webrtc', 'glass', 'contention'] as const;

/**
 * `SVC_BENCH_PATH_PARTS=glass` (names separated by commas): only those parts of the suite, for
 * quicker runs while working on one of them; all by default.
 */
function pathParts(): Set<string> {
  const given = process.env.SVC_BENCH_PATH_PARTS;
  if (given === undefined || given === '') return new Set(PATH_PARTS);
  const parts = given.split(',');
  const unknown = parts.filter((p) => !(PATH_PARTS as readonly string[]).includes(p));
  if (unknown.length > 0)
    throw new Error(
      `SVC_BENCH_PATH_PARTS names unknown parts ${unknown.join(', ')}; known: ${PATH_PARTS.join(', ')}`,
    );
  return new Set(parts);
}

const epochMs = () => performance.timeOrigin + performance.now();

export const suite: BenchSuite = {
  description:
    'direct path on loopback: send→reassembled, RTP-in→painted, connect→first picture, daemon CPU; the same on WebRTC (`webrtc` in the name)',
  parameters: { capture: CAPTURE, encoder: ENCODER.join(' '), presentationDelayMs: 0, passes: PASSES },
  async run(report) {
    const packets = await captureRtp({ ...CAPTURE, encoder: ENCODER, payloadType: '96' });
    const chromium = await ChromiumSession.open();
    const cloud = await startCloudProcess();
    const parts = pathParts();
    try {
      if (parts.has('floor')) await measureFloor(meanFrameBytes(packets), chromium, report);
      if (parts.has('direct'))
        for (const pilots of pilotCounts()) await measure(pilots, packets, chromium, cloud, report);
      // The second backend, the same stream and page: figures named with `webrtc`.
      if (parts.has('webrtc')) await measure(1, packets, chromium, cloud, report, 'webrtc');
      if (parts.has('glass') || parts.has('contention')) {
        await measureGlassFigures(chromium, cloud, report, {
          calm: parts.has('glass'),
          contention: parts.has('contention'),
          webrtc: parts.has('webrtc'),
        });
      }
    } finally {
      await chromium.close();
      await cloud.stop();
    }
  },
};

async function measure(
  pilots: number,
  packets: Uint8Array[],
  chromium: ChromiumSession,
  cloud: CloudProcess,
  reportAny: (r: BenchResult) => void,
  backend: 'webtransport' | 'webrtc' = 'webtransport',
): Promise<void> {
  const report = (r: BenchResult) =>
    reportAny(backend === 'webrtc' ? { ...r, name: `${r.name}, webrtc` } : r);
  const rtpPort = await freeUdpPort();
  const daemon = await startBenchDaemon(cloud, {
    robotId: `bench-${pilots}-${backend}`,
    channels: [
      '[[channel]]',
      'kind = "video"',
      'name = "front"',
      `input = "rtp://127.0.0.1:${rtpPort}"`,
      'codec = "avc1.42c01f"',
      `fps = ${FPS}`,
    ],
  });
  try {
    const tokens = await Promise.all(Array.from({ length: pilots }, () => daemon.sessionToken()));
    const watching = tokens.map((token) =>
      chromium.run<PathSample>({
        entry: page,
        exportName: 'measurePath',
        args: [cloud.signalUrl, daemon.robotId, token, (PASSES * FRAMES) / FPS + 2, backend],
        timeoutMs: 90_000,
      }),
    );
    await daemon.waitForLog('pilot session opened', pilots);
    // CPU share of each pass; (a) and (b) come from the first pass only, as they always did.
    const cpu: number[] = [];
    const systemCpu: number[] = [];
    let sentAt = new Map<number, number>();
    for (let pass = 0; pass < PASSES; pass++) {
      const before = await cpuTicks(daemon.pid);
      const replayStarted = epochMs();
      const sent = await replay(packets, rtpPort, pass);
      const after = await cpuTicks(daemon.pid);
      const elapsed = (epochMs() - replayStarted) / 1000;
      const share = (ticks: number) => (100 * ticks) / CLOCK_TICKS_PER_SECOND / elapsed;
      cpu.push(share(after.user + after.system - before.user - before.system));
      systemCpu.push(share(after.system - before.system));
      if (pass === 0) sentAt = sent;
    }
    const samples = await Promise.all(watching);
    for (const s of samples)
      if (s.backend !== backend) throw new Error(`a ${backend} watch ran on ${String(s.backend)}`);
    const label = pilots === 1 ? '1 pilot' : `${pilots} pilots`;
    const params = {
      pilots,
      frames: PASSES * FRAMES,
      decoded: samples.map((s) => s.decoded),
      lost: samples.map((s) => s.lost),
      robot: samples[0]?.robot ?? null,
    };
    report({
      name: `daemon CPU serving 8 Mbps H.264 to ${label}`,
      value: cpu[0]!,
      unit: '% of a core',
      better: 'lower',
      params: { ...params, systemPercent: systemCpu[0], note: "the daemon's first 10 s of video" },
    });
    report({
      name: `daemon CPU serving 8 Mbps H.264 to ${label}, warm`,
      value: cpu[PASSES - 1]!,
      unit: '% of a core',
      better: 'lower',
      params: { ...params, systemPercent: systemCpu[PASSES - 1], note: 'the same daemon, the next 10 s' },
    });
    if (pilots !== 1) return;
    const [both] = samples as [PathSample];
    // The first pass's frames come first.
    const sample: PathSample = {
      ...both,
      sendToAssembledMs: both.sendToAssembledMs.slice(0, FRAMES),
      firstSendToAssembledMs: both.firstSendToAssembledMs.slice(0, FRAMES),
    };
    // (a), per frame: the daemon starts sending it (its first datagram is stamped as it leaves
    // the session's send queue for the transport) → the pilot has it whole. It includes the
    // frame's own serialisation and pacing, the daemon's QUIC work and system calls, the kernel,
    // Chromium's network process and the renderer; not the wait behind earlier frames.
    const whole = [...sample.firstSendToAssembledMs].sort((a, b) => a - b);
    for (const q of [0.5, 0.95]) {
      report({
        name: `(a) daemon sends a frame (first datagram) → pilot reassembled, p${q * 100}`,
        value: percentile(whole, q),
        unit: 'ms',
        better: 'lower',
        params,
      });
    }
    // The same ending at the datagram that completed the frame: what the path adds after the
    // daemon's last send, without the frame's own spread.
    const completing = [...sample.sendToAssembledMs].sort((a, b) => a - b);
    for (const q of [0.5, 0.95]) {
      report({
        name: `(a, last) datagram completing the frame sent → reassembled, p${q * 100}`,
        value: percentile(completing, q),
        unit: 'ms',
        better: 'lower',
        params,
      });
    }
    const painted = sample.paints
      .map(([capture, paint]) => (sentAt.has(capture) ? paint - sentAt.get(capture)! : Number.NaN))
      .filter((v) => !Number.isNaN(v))
      .sort((a, b) => a - b);
    report({
      name: '(b) RTP in at the daemon → painted, p50',
      value: percentile(painted, 0.5),
      unit: 'ms',
      better: 'lower',
      params: { ...params, paintedFrames: painted.length },
    });
    report({
      name: '(b) RTP in at the daemon → painted, p99',
      value: percentile(painted, 0.99),
      unit: 'ms',
      better: 'lower',
      params: { ...params, paintedFrames: painted.length },
    });
    report({
      name: '(c) connect → first painted frame',
      value: sample.connectToFirstPaintMs ?? Number.NaN,
      unit: 'ms',
      better: 'lower',
      params: {
        note: "from asking svc-cloud for the offer; waits for the source's next keyframe (GOP 2 s) without publisher control",
      },
    });
  } finally {
    await daemon.stop();
  }
}

/**
 * The floor under (a) on this machine and browser: bursts of full datagrams every frame time,
 * from this process through the same QUIC and WebTransport code the daemon uses, to a bare page
 * that only notes when each burst is in. No ingest, packing, pacing or SDK: what is left is the
 * transport, the kernel and Chromium. Once with as many datagrams as the mean frame fills
 * (without parity), once with a single datagram.
 */
async function measureFloor(
  frameBytes: number,
  chromium: ChromiumSession,
  report: (r: BenchResult) => void,
): Promise<void> {
  const certificate = await createSelfSignedCertificate({ commonName: 'path-floor' });
  const hashHex = Buffer.from(certificate.sha256).toString('hex');
  let perBurst: (maxDatagramBytes: number) => number = () => 1;
  let sending: Promise<void> | undefined;
  let sentPerBurst = 0;
  const server = await WebTransportServer.listen({
    host: '127.0.0.1',
    port: 0,
    path: '/floor',
    certificates: { current: () => certificate },
    onSession: (session) => {
      let text = '';
      session.setHandlers({
        onControlData: (bytes) => {
          text += new TextDecoder().decode(bytes);
          const go = /^go (\d+)\n/.exec(text);
          if (go === null) return;
          text = '';
          sentPerBurst = perBurst(session.maxDatagramBytes());
          sending = sendBursts(session, Number(go[1]), sentPerBurst);
        },
      });
    },
  });
  const run = async (exportName = 'measureFloor') => {
    const sample = await chromium.run<FloorSample>({
      entry: floorPage,
      exportName,
      args: [`https://127.0.0.1:${server.port}/floor`, hashHex, FRAMES],
      timeoutMs: 60_000,
    });
    await sending;
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    const params = { datagramsPerBurst: sentPerBurst, bursts: FRAMES, incomplete: sample.incomplete };
    return { whole: sorted(sample.burstMs), first: sorted(sample.firstMs), params };
  };
  try {
    perBurst = (max) => Math.ceil(frameBytes / (max - CHUNK_HEADER_BYTES));
    const frame = await run();
    const params = { ...frame.params, frameBytes: Math.round(frameBytes) };
    for (const q of [0.5, 0.95]) {
      report({
        name: `(a, floor) a frame's datagrams from the transport alone → bare page, p${q * 100}`,
        value: percentile(frame.whole, q),
        unit: 'ms',
        better: 'lower',
        params,
      });
    }
    // Where the floor goes: the first datagram is in long before the last.
    report({
      name: "(a, floor) that burst's first datagram → bare page, p50",
      value: percentile(frame.first, 0.5),
      unit: 'ms',
      better: 'lower',
      params,
    });
    perBurst = () => 1;
    const single = await run();
    for (const q of [0.5, 0.95]) {
      report({
        name: `(a, floor) one datagram alone → bare page, p${q * 100}`,
        value: percentile(single.whole, q),
        unit: 'ms',
        better: 'lower',
        params: single.params,
      });
    }
    // The same single datagram read in a dedicated worker, off the page's main thread.
    const worker = await run('measureFloorInWorker');
    report({
      name: '(a, floor) one datagram alone → bare worker, p50',
      value: percentile(worker.whole, 0.5),
      unit: 'ms',
      better: 'lower',
      params: worker.params,
    });
  } finally {
    await server.close();
  }
}

/** Sends `bursts` bursts of `perBurst` full datagrams at the frame rate, each stamped with the burst's send time. */
async function sendBursts(session: Session, bursts: number, perBurst: number): Promise<void> {
  const size = session.maxDatagramBytes();
  if (size < FLOOR_LAYOUT.header) throw new Error(`the floor session takes datagrams of only ${size} bytes`);
  // The transport copies a datagram as it takes it: one buffer serves every send.
  const datagram = new Uint8Array(size);
  const view = new DataView(datagram.buffer);
  const start = epochMs();
  for (let burst = 0; burst < bursts; burst++) {
    const wait = start + (burst * 1000) / FPS - epochMs();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    view.setUint32(FLOOR_LAYOUT.burst, burst);
    view.setUint16(FLOOR_LAYOUT.count, perBurst);
    view.setFloat64(FLOOR_LAYOUT.sentUs, epochMs() * 1000);
    for (let index = 0; index < perBurst; index++) {
      view.setUint16(FLOOR_LAYOUT.index, index);
      session.sendDatagram(datagram);
    }
  }
}

/** Mean bytes of a frame's RTP payloads in the capture (its access unit, near enough). */
function meanFrameBytes(packets: readonly Uint8Array[]): number {
  let bytes = 0;
  let frames = 0;
  for (const { payload, marker } of packets.map(parseRtpPacket)) {
    bytes += payload.byteLength;
    if (marker) frames++;
  }
  return bytes / Math.max(1, frames);
}

/**
 * Sends the captured packets to the daemon at the frame rate, each frame's packets back to back,
 * and returns when each frame's last packet left, keyed by the capture timestamp the daemon will
 * derive from its RTP timestamp (µs, 32 bits). Pass `n` continues where pass `n - 1` ended: its
 * sequence numbers and timestamps are moved on by the capture's length.
 */
async function replay(captured: Uint8Array[], port: number, pass: number): Promise<Map<number, number>> {
  const socket = dgram.createSocket('udp4');
  const timestamp = (p: Uint8Array) => new DataView(p.buffer, p.byteOffset).getUint32(4);
  const span = (timestamp(captured.at(-1)!) - timestamp(captured[0]!) + 90_000 / FPS) >>> 0;
  const packets = captured.map((original) => {
    if (pass === 0) return original;
    const p = original.slice();
    const view = new DataView(p.buffer);
    view.setUint16(2, (view.getUint16(2) + pass * captured.length) & 0xffff);
    view.setUint32(4, (view.getUint32(4) + pass * span) >>> 0);
    return p;
  });
  const frames: Uint8Array[][] = [];
  let current: Uint8Array[] = [];
  for (const p of packets) {
    current.push(p);
    if ((p[1]! & 0x80) !== 0) {
      frames.push(current);
      current = [];
    }
  }
  const firstTs = timestamp(packets[0]!);
  const sentAt = new Map<number, number>();
  const start = epochMs();
  for (const [i, frame] of frames.entries()) {
    const due = start + (i * 1000) / FPS;
    const wait = due - epochMs();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    for (const p of frame) socket.send(p, port, '127.0.0.1');
    const extended = firstTs + ((timestamp(frame[0]!) - firstTs) | 0);
    sentAt.set(wrapU32(Math.round((extended * 1e6) / 90_000)), epochMs());
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  socket.close();
  return sentAt;
}

/** Clock ticks the process has run in user mode and in the kernel (its system calls, and on loopback the delivery to the receiving socket). */
async function cpuTicks(pid: number): Promise<{ user: number; system: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]), system: Number(fields[12]) }; // utime, stime
}
