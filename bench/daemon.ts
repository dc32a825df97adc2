/**
 * A real `svcd` for benchmarks: enrolled in alice's org of a running svc-cloud with a fresh
 * enrolment token, started with the configuration lines a suite gives, online in signalling.
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CloudProcess, freeUdpPort } from '@svc/testkit';

const here = path.dirname(fileURLToPath(import.meta.url));
const svcd = path.resolve(here, '../packages/svcd/bin/svcd');
const svcdCli = path.resolve(here, '../packages/svcd/src/cli.ts');

/** What a benchmark daemon is configured with, besides what every one gets. */
export interface BenchDaemonOptions {
  readonly robotId: string;
  /** Extra `[agent]` lines (e.g. `qos_profile = "balanced"`). */
  readonly agent?: readonly string[];
  /** `[[channel]]` tables, as TOML lines. */
  readonly channels: readonly string[];
  /** `[publisher_control] udp`, `<address>:<port>`. */
  readonly publisherControl?: string;
  /** Extra environment variables of the daemon's process. */
  readonly env?: Readonly<Record<string, string>>;
}

/** A running benchmark daemon. */
export interface BenchDaemon {
  readonly robotId: string;
  readonly pid: number;
  /** `agent.quic_port`: where pilots (or a link shaper in front of it) connect. */
  readonly quicPort: number;
  /** Resolves once `text` has appeared `times` times in its log; rejects if it exits first. */
  waitForLog(text: string, times?: number): Promise<void>;
  /** How many times `text` has appeared in its log so far. */
  countLog(text: string): number;
  /** A pilot session token for this robot, minted by alice. */
  sessionToken(scope?: 'drive' | 'observe'): Promise<string>;
  /** Stops it (SIGTERM) and removes its files. */
  stop(): Promise<void>;
}

/**
 * Enrols robot `options.robotId` in alice's org of `cloud` and starts its daemon on a free QUIC
 * port; resolves once it is online in signalling.
 *
 * `SVC_BENCH_DAEMON_FLAGS`: Node flags for the daemon, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
 * for a CPU profile written when it stops, or `--trace-gc`. `SVC_BENCH_DAEMON_LOG=<file>`: the
 * daemon's output is also appended there.
 */
export async function startBenchDaemon(
  cloud: CloudProcess,
  options: BenchDaemonOptions,
): Promise<BenchDaemon> {
  const { robotId } = options;
  const alice = await cloud.signIn('dev-alice');
  const call = async (method: string, url: string, body: unknown, what: string) => {
    const answer = await cloud.call(method, url, { token: alice.accessToken, body });
    if (answer.status !== 201) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body as { token: string };
  };
  const enrolment = await call('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {}, 'enrolment token');
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-bench-daemon-'));
  const config = path.join(dir, 'svcd.toml');
  const quicPort = await freeUdpPort();
  const lines = [
    '[agent]',
    `robot_id = "${robotId}"`,
    `signal_url = "${cloud.signalUrl}"`,
    `credential_path = "${path.join(dir, 'credential')}"`,
    `quic_port = ${quicPort}`,
    'max_sessions = 8',
    ...(options.agent ?? []),
    ...options.channels,
    ...(options.publisherControl === undefined
      ? []
      : ['[publisher_control]', `udp = "${options.publisherControl}"`]),
  ];
  await writeFile(config, `${lines.join('\n')}\n`);
  const args = ['--config', config, '--host', '127.0.0.1'];
  const flags = process.env.SVC_BENCH_DAEMON_FLAGS?.split(' ').filter((f) => f !== '') ?? [];
  const spawnOptions = {
    stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env, SVC_ENROLMENT_TOKEN: enrolment.token },
  };
  const child =
    flags.length === 0
      ? spawn(svcd, args, spawnOptions)
      : spawn(
          process.execPath,
          [...flags, '--conditions=source', '--import', 'tsx', svcdCli, ...args],
          spawnOptions,
        );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let log = '';
  const listeners: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    log += chunk.toString();
    if (process.env.SVC_BENCH_DAEMON_LOG) appendFileSync(process.env.SVC_BENCH_DAEMON_LOG, chunk);
    for (const l of listeners.splice(0)) l();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  child.once('exit', () => {
    for (const l of listeners.splice(0)) l();
  });
  const countLog = (text: string) => log.split(text).length - 1;
  const waitForLog = (text: string, times = 1) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (countLog(text) >= times) resolve();
        else if (child.exitCode !== null || child.signalCode !== null)
          reject(new Error(`svcd ${robotId} exited before logging "${text}":\n${log}`));
        else listeners.push(check);
      };
      check();
    });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitForLog('signalling online');
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    robotId,
    pid: child.pid!,
    quicPort,
    waitForLog,
    countLog,
    sessionToken: async (scope = 'observe') =>
      (await call('POST', '/api/v1/session-tokens', { robotId, scope }, 'session token')).token,
    stop,
  };
}
