/**
 * Path suite: the direct path on loopback with real processes and Chromium. Camera RTP (real
 * ffmpeg output, replayed at 30 fps by this process) → a real `svcd`, enrolled with a real
 * svc-cloud → WebTransport → the pilot SDK in headless Chromium, which gets the robot's address
 * from a signalling offer, with presentation delay 0. One clock: the machine's wall clock read
 * with sub-millisecond resolution in every process.
 */
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { appendFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChromiumSession, type CloudProcess, freeUdpPort, startCloudProcess } from '@svc/testkit';
import { wrapU32 } from '@svc/wire';
import { captureRtp } from '../capture.js';
import { percentile } from '../stats.js';
import type { BenchResult, BenchSuite } from '../types.js';
import type { PathSample } from './path-page.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const svcd = path.resolve(here, '../../packages/svcd/bin/svcd');
const svcdCli = path.resolve(here, '../../packages/svcd/src/cli.ts');
const page = path.join(here, 'path-page.ts');
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

const epochMs = () => performance.timeOrigin + performance.now();

export const suite: BenchSuite = {
  description: 'direct path on loopback: send→reassembled, RTP-in→painted, connect→first picture, daemon CPU',
  parameters: { capture: CAPTURE, encoder: ENCODER.join(' '), presentationDelayMs: 0 },
  async run(report) {
    const packets = await captureRtp({ ...CAPTURE, encoder: ENCODER, payloadType: '96' });
    const chromium = await ChromiumSession.open();
    const cloud = await startCloudProcess();
    try {
      for (const pilots of [1, 4]) await measure(pilots, packets, chromium, cloud, report);
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
  report: (r: BenchResult) => void,
): Promise<void> {
  const rtpPort = await freeUdpPort();
  const daemon = await startDaemon(cloud, `bench-${pilots}`, rtpPort);
  try {
    const tokens = await Promise.all(Array.from({ length: pilots }, () => daemon.sessionToken()));
    const watching = tokens.map((token) =>
      chromium.run<PathSample>({
        entry: page,
        exportName: 'measurePath',
        args: [cloud.signalUrl, daemon.robotId, token, FRAMES / FPS + 2],
        timeoutMs: 60_000,
      }),
    );
    await daemon.waitForLog('pilot session opened', pilots);
    const cpuBefore = await cpuTicks(daemon.pid);
    const replayStarted = epochMs();
    const sentAt = await replay(packets, rtpPort);
    const cpuSeconds = (await cpuTicks(daemon.pid)) - cpuBefore;
    const elapsed = (epochMs() - replayStarted) / 1000;
    const samples = await Promise.all(watching);
    const label = pilots === 1 ? '1 pilot' : `${pilots} pilots`;
    const params = {
      pilots,
      frames: FRAMES,
      decoded: samples.map((s) => s.decoded),
      lost: samples.map((s) => s.lost),
    };
    report({
      name: `daemon CPU serving 8 Mbps H.264 to ${label}`,
      value: (100 * cpuSeconds) / CLOCK_TICKS_PER_SECOND / elapsed,
      unit: '% of a core',
      better: 'lower',
      params,
    });
    if (pilots !== 1) return;
    const [sample] = samples as [PathSample];
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
 * Sends the captured packets to the daemon at the frame rate, each frame's packets back to back,
 * and returns when each frame's last packet left, keyed by the capture timestamp the daemon will
 * derive from its RTP timestamp (µs, 32 bits).
 */
async function replay(packets: Uint8Array[], port: number): Promise<Map<number, number>> {
  const socket = dgram.createSocket('udp4');
  const frames: Uint8Array[][] = [];
  let current: Uint8Array[] = [];
  for (const p of packets) {
    current.push(p);
    if ((p[1]! & 0x80) !== 0) {
      frames.push(current);
      current = [];
    }
  }
  const timestamp = (p: Uint8Array) => new DataView(p.buffer, p.byteOffset).getUint32(4);
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

async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

/**
 * Enrols robot `robotId` in alice's org of `cloud` and starts its daemon with one video channel on
 * `rtpPort`; resolves once the robot is online in signalling.
 */
async function startDaemon(cloud: CloudProcess, robotId: string, rtpPort: number) {
  const alice = await cloud.signIn('dev-alice');
  const call = async (method: string, url: string, body: unknown, what: string) => {
    const answer = await cloud.call(method, url, { token: alice.accessToken, body });
    if (answer.status !== 201) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body as { token: string };
  };
  const enrolment = await call('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {}, 'enrolment token');
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-bench-path-'));
  const config = path.join(dir, 'svcd.toml');
  await writeFile(
    config,
    `[agent]\nrobot_id = "${robotId}"\nsignal_url = "${cloud.signalUrl}"\ncredential_path = "${path.join(dir, 'credential')}"\nquic_port = ${await freeUdpPort()}\nmax_sessions = 8\n` +
      `[[channel]]\nkind = "video"\nname = "front"\ninput = "rtp://127.0.0.1:${rtpPort}"\ncodec = "avc1.42c01f"\nfps = ${FPS}\n`,
  );
  const args = ['--config', config, '--host', '127.0.0.1'];
  // SVC_BENCH_DAEMON_FLAGS: Node flags for the daemon, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  // for a CPU profile written when it stops, or `--trace-gc`.
  const flags = process.env.SVC_BENCH_DAEMON_FLAGS?.split(' ').filter((f) => f !== '') ?? [];
  const options = {
    stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVC_ENROLMENT_TOKEN: enrolment.token },
  };
  const child =
    flags.length === 0
      ? spawn(svcd, args, options)
      : spawn(
          process.execPath,
          [...flags, '--conditions=source', '--import', 'tsx', svcdCli, ...args],
          options,
        );
  let log = '';
  const listeners: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    log += chunk.toString();
    // SVC_BENCH_DAEMON_LOG=<file>: the daemon's output is also appended there.
    if (process.env.SVC_BENCH_DAEMON_LOG) appendFileSync(process.env.SVC_BENCH_DAEMON_LOG, chunk);
    for (const l of listeners.splice(0)) l();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const waitForLog = (text: string, times = 1) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (log.split(text).length - 1 >= times) resolve();
        else if (child.exitCode !== null) reject(new Error(`svcd exited:\n${log}`));
        else listeners.push(check);
      };
      check();
    });
  await waitForLog('signalling online');
  return {
    robotId,
    pid: child.pid!,
    waitForLog,
    sessionToken: async () =>
      (await call('POST', '/api/v1/session-tokens', { robotId, scope: 'observe' }, 'session token')).token,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
