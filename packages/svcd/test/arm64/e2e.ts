/**
 * The arm64 daemon end to end (`npm run arm64`, issue 19 item 4), run by `scripts/arm64/run.sh`
 * after it installed a clone of this checkout with an arm64 Node under qemu-user-static:
 * `SVC_ARM64_CLONE` is that clone and `SVC_ARM64_NODE` its Node. A real svc-cloud runs here on
 * x86-64; the clone's svcd runs under the arm64 Node, enrols with a token, and serves an ffmpeg
 * camera to the pilot SDK in headless Chromium. Prints what it saw and exits non-zero when the
 * daemon is not arm64, did not serve, or the page painted nothing.
 */
import { readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ChromiumSession,
  ffmpegRtpSource,
  freeUdpPort,
  startCloudProcess,
  startRobotDaemon,
  writeRobotConfig,
} from '@svc/testkit';
import type { WatchResult } from '../fixtures/pilot-page.js';
import { videoChannel } from '../support/channels.js';

const page = fileURLToPath(new URL('../fixtures/pilot-page.ts', import.meta.url));
const ROBOT = 'arm64-amr';
/** Emulated, the daemon is many times slower than native: generous waits. */
const START_TIMEOUT_MS = 5 * 60_000;
const WATCH_SECONDS = 20;

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '')
    throw new Error(`${name} is not set; run this through scripts/arm64/run.sh`);
  return value;
}

/** The executable a process runs: under binfmt_misc an emulated program's is qemu's. */
async function executableOf(pid: number): Promise<string> {
  return readlink(`/proc/${pid}/exe`);
}

async function main(): Promise<number> {
  const clone = required('SVC_ARM64_CLONE');
  const node = required('SVC_ARM64_NODE');
  const failures: string[] = [];
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  try {
    const cloud = await startCloudProcess();
    cleanups.push(() => cloud.stop());
    const alice = await cloud.signIn('dev-alice');
    const enrolment = await cloud.call('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {
      token: alice.accessToken,
      body: {},
    });
    if (enrolment.status !== 201) throw new Error(`enrolment token: HTTP ${enrolment.status}`);
    const rtpPort = await freeUdpPort();
    const files = await writeRobotConfig({
      robotId: ROBOT,
      signalUrl: cloud.signalUrl,
      channels: videoChannel(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d'),
    });
    const camera = ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 100_000, gop: 30 });
    cleanups.push(() => camera.stop());
    const started = performance.now();
    const daemon = startRobotDaemon(
      files,
      {
        SVC_ENROLMENT_TOKEN: enrolment.body.token as string,
        PATH: `${path.dirname(node)}:${process.env.PATH ?? ''}`,
      },
      { svcd: path.join(clone, 'packages/svcd/bin/svcd') },
    );
    cleanups.push(() => daemon.stop());
    await daemon.waitForLog('svcd running', 1, START_TIMEOUT_MS);
    const startSeconds = (performance.now() - started) / 1000;
    const executable = await executableOf(daemon.process.pid!);
    const arch = (await readFile(`/proc/${daemon.process.pid}/cmdline`, 'utf8'))
      .split('\0')
      .slice(0, 2)
      .join(' ');
    console.log(`svcd running after ${startSeconds.toFixed(1)} s; its process runs ${executable} (${arch})`);
    if (!executable.includes('qemu-aarch64'))
      failures.push(`svcd is not emulated arm64: it runs ${executable}`);
    for (const line of daemon
      .log()
      .split('\n')
      .filter((l) => /no QUIC|udp-batch|dgram/.test(l)))
      console.log(`  daemon: ${line.slice(0, 300)}`);

    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const robot = await cloud.call('GET', `/api/v1/robots/${ROBOT}`, { token: alice.accessToken });
      if (robot.body.robot?.online === true) break;
      if (Date.now() > deadline) throw new Error('the arm64 robot never came online');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const token = await cloud.call('POST', '/api/v1/session-tokens', {
      token: alice.accessToken,
      body: { robotId: ROBOT, scope: 'drive' },
    });
    if (token.status !== 201) throw new Error(`session token: HTTP ${token.status}`);

    const chromium = await ChromiumSession.open();
    cleanups.push(() => chromium.close());
    const result = await chromium.run<WatchResult>({
      entry: page,
      exportName: 'watch',
      args: [cloud.signalUrl, ROBOT, token.body.token as string, WATCH_SECONDS],
      timeoutMs: START_TIMEOUT_MS,
    });
    const video = Object.values(result.stats.channels)[0];
    const figures = {
      states: [...new Set(result.states)],
      backend: result.stats.backend,
      path: result.stats.path,
      role: result.role,
      painted: video?.painted ?? 0,
      framesLost: video?.framesLost ?? 0,
      latencyP50Ms: video?.latency.p50Ms,
      message: result.message,
    };
    console.log(`pilot in Chromium, ${WATCH_SECONDS} s: ${JSON.stringify(figures)}`);
    if (!result.states.includes('connected')) failures.push('the pilot never connected');
    if (result.stats.backend !== 'webrtc')
      failures.push(`the session ran on ${String(result.stats.backend)}, not WebRTC`);
    if (figures.painted < WATCH_SECONDS * 10)
      failures.push(`only ${figures.painted} pictures painted in ${WATCH_SECONDS} s of a 30 fps camera`);
    if (result.message !== null) failures.push(`the page showed "${result.message}"`);
    daemon.process.kill('SIGTERM');
    const code = await daemon.exited;
    console.log(`svcd exited with code ${code} on SIGTERM`);
    if (code !== 0) failures.push(`svcd exited with code ${code}`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
  for (const failure of failures) console.error(`FAILED: ${failure}`);
  console.log(failures.length === 0 ? 'arm64: passed' : 'arm64: failed');
  return failures.length === 0 ? 0 : 1;
}

process.exitCode = await main();
