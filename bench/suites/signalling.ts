/**
 * Signalling suite: one svc-cloud node (a real process, embedded PGlite in a data directory) and a
 * fleet of simulated robots in child processes, each robot a WebSocket that proves its Ed25519 key
 * (signalling v2) and heartbeats.
 *
 * - robots connected and authenticated, the server's RSS and the RSS per robot;
 * - reconnect storm: the server is stopped and started again, then every robot reconnects at once
 *   (within the daemon's first backoff step, 0 to 500 ms); the time from then to every robot
 *   re-authenticated, and the server's CPU time per robot;
 * - pilot session tokens minted per second through `POST /api/v1/session-tokens` with an API key
 *   (autocannon), with the fleet still connected.
 *
 * The fleet size is `SVC_BENCH_ROBOTS` (default 19 000): the target is 50 000, but a process here may
 * hold at most `ulimit -n` (20 000 on this machine, and not raisable without privileges) sockets.
 * The figures say how many were reached.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiKeys, hashSecret, openDatabase, orgs, robots } from '@svc/cloud/db';
import { freeTcpPort } from '@svc/testkit';
import autocannon from 'autocannon';
import type { BenchSuite } from '../types.js';
import { benchRobotId, benchRobotKey } from '../workers/fleet-keys.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const ROBOTS = Number(process.env.SVC_BENCH_ROBOTS ?? 19_000);
const WORKERS = 4;
const MINT_SECONDS = 10;
const MINT_CONNECTIONS = 20;
/** A phase gives up when the count has not moved for this long. */
const STALL_MS = 30_000;

interface FleetWorker {
  readonly child: ChildProcess;
  progress: { authenticated: number; online: number; closes: number; connecting: number; waiting: number };
}

export const suite: BenchSuite = {
  description:
    'signalling v2 on one svc-cloud node: robots held, memory per robot, reconnect storm, session tokens minted/s',
  parameters: {
    robots: ROBOTS,
    robotProcesses: WORKERS,
    database: 'PGlite in a data directory, in the svc-cloud process',
    reconnectJitterMs: 500,
    handshakesInFlightPerProcess: 500,
    mint: { seconds: MINT_SECONDS, connections: MINT_CONNECTIONS, credential: 'API key (sessions:mint)' },
    fdLimit: 'ulimit -n of the machine bounds the robots one process can hold',
  },
  async run(report) {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-signal-'));
    const workers: FleetWorker[] = [];
    let server: ChildProcess | undefined;
    try {
      const apiKey = await seed(dataDir);
      const port = await freeTcpPort();
      const base = `http://127.0.0.1:${port}`;
      const start = async () => {
        server = startServer(dataDir, port);
        await waitUntilListening(base, server);
      };
      await start();
      const baselineRss = await rssBytes(server!.pid!);

      for (let w = 0; w < WORKERS; w++) {
        const first = Math.floor((ROBOTS * w) / WORKERS);
        const count = Math.floor((ROBOTS * (w + 1)) / WORKERS) - first;
        workers.push(await startFleet(`ws://127.0.0.1:${port}/ws`, first, count, `127.${10 + w}`));
      }
      const connectStart = performance.now();
      for (const worker of workers) worker.child.send({ start: true });
      const held = await waitFor(() => sum(workers, 'online'), ROBOTS);
      const connectMs = performance.now() - connectStart;
      const rss = await rssBytes(server!.pid!);
      report({ name: 'robots connected and authenticated', value: held, unit: 'robots', better: 'higher' });
      report({
        name: `time to connect and authenticate ${held} robots`,
        value: connectMs / 1000,
        unit: 's',
        better: 'lower',
      });
      report({
        name: `svc-cloud RSS with ${held} robots`,
        value: rss / 2 ** 20,
        unit: 'MiB',
        better: 'lower',
      });
      report({
        name: 'svc-cloud RSS per robot (above the idle server)',
        value: (rss - baselineRss) / held / 1024,
        unit: 'KiB',
        better: 'lower',
        params: { idleRssMiB: baselineRss / 2 ** 20 },
      });

      // Reconnect storm: the node restarts; every robot comes back.
      const before = sum(workers, 'authenticated');
      const restartAt = performance.now();
      await stopServer(server!);
      const listeningBefore = performance.now();
      await start();
      const listeningAt = performance.now();
      const cpuAtListen = await cpuSeconds(server!.pid!);
      const threadsAtListen = await cpuByThread(server!.pid!);
      const perf = await startPerf(server!.pid!);
      for (const worker of workers) worker.child.send({ reconnect: true });
      const back = await waitFor(
        () => sum(workers, 'authenticated') - before,
        held,
        () =>
          `connecting ${sum(workers, 'connecting')} waiting ${sum(workers, 'waiting')} closes ${sum(workers, 'closes')}`,
      );
      const doneAt = performance.now();
      await perf?.stop();
      const stormCpu = (await cpuSeconds(server!.pid!)) - cpuAtListen;
      const stormThreads = diffThreads(await cpuByThread(server!.pid!), threadsAtListen);
      report({
        name: `reconnect storm: ${back} robots re-authenticated after svc-cloud listens again`,
        value: (doneAt - listeningAt) / 1000,
        unit: 's',
        better: 'lower',
        params: {
          fromRestartS: (doneAt - restartAt) / 1000,
          serverStopS: (listeningBefore - restartAt) / 1000,
          serverStartS: (listeningAt - listeningBefore) / 1000,
          serverCpuS: stormCpu,
          serverCpuByThreadS: stormThreads,
        },
      });
      report({
        name: 'reconnect storm: svc-cloud CPU time per robot re-authenticated',
        value: (stormCpu * 1000) / Math.max(back, 1),
        unit: 'ms',
        better: 'lower',
      });

      const minted = await autocannon({
        url: `${base}/api/v1/session-tokens`,
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ robotId: benchRobotId(0), scope: 'drive' }),
        duration: MINT_SECONDS,
        connections: MINT_CONNECTIONS,
        workers: 1,
      });
      const params = {
        requests: minted.requests.total,
        non2xx: minted.non2xx,
        errors: minted.errors,
        latencyP50Ms: minted.latency.p50,
        latencyP99Ms: minted.latency.p99,
        robotsConnected: sum(workers, 'online'),
      };
      if (minted.non2xx > 0 || minted.errors > 0) {
        throw new Error(`session-token mint failed: ${JSON.stringify(params)}`);
      }
      report({
        name: 'session tokens minted through the API (API key)',
        value: minted.requests.average,
        unit: 'tokens/s',
        better: 'higher',
        params,
      });
    } finally {
      for (const worker of workers) worker.child.kill('SIGKILL');
      if (server !== undefined) await stopServer(server);
      await rm(dataDir, { recursive: true, force: true });
    }
  },
};

/** Enrols the fleet and an API key straight into the database, before svc-cloud opens it. */
async function seed(dataDir: string): Promise<string> {
  const database = await openDatabase({ dataDir });
  try {
    const [org] = await database.db.insert(orgs).values({ name: 'bench fleet' }).returning();
    const rows = [];
    for (let i = 0; i < ROBOTS; i++) {
      rows.push({
        robotId: benchRobotId(i),
        orgId: org!.id,
        publicKey: benchRobotKey(i).publicKey,
        enrolledAt: new Date(),
      });
      if (rows.length === 1000 || i === ROBOTS - 1) await database.db.insert(robots).values(rows.splice(0));
    }
    const prefix = `svc_key_${randomBytes(4).toString('hex')}`;
    const key = `${prefix}_${randomBytes(32).toString('base64url')}`;
    await database.db.insert(apiKeys).values({
      orgId: org!.id,
      name: 'bench backend',
      prefix,
      secretHash: hashSecret(key),
      scopes: ['sessions:mint'],
    });
    return key;
  } finally {
    await database.close();
  }
}

/**
 * `SVC_BENCH_PERF=<file>`: records the server during the storm with Linux `perf` (CPU clock, call
 * graphs) into `<file>`; run the server with `SVC_BENCH_CLOUD_NODE_FLAGS=--perf-basic-prof` so
 * JavaScript frames have names. Unset: nothing is recorded.
 */
async function startPerf(pid: number): Promise<{ stop(): Promise<void> } | undefined> {
  const file = process.env.SVC_BENCH_PERF;
  if (file === undefined || file === '') return undefined;
  const child = spawn(
    'perf',
    ['record', '-e', 'cpu-clock', '-F', '997', '-g', '-p', String(pid), '-o', file],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  await new Promise((resolve) => setTimeout(resolve, 500)); // perf attaches to every thread
  return {
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
    },
  };
}

function startServer(dataDir: string, port: number): ChildProcess {
  // What packages/cloud/bin/svc-cloud runs, with room for node flags when profiling the server
  // (`SVC_BENCH_CLOUD_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof"`).
  const flags = (process.env.SVC_BENCH_CLOUD_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '');
  const cli = path.join(root, 'packages/cloud/src/cli.ts');
  const child = spawn(process.execPath, [...flags, '--conditions=source', '--import', 'tsx', cli], {
    cwd: root,
    env: {
      ...process.env,
      SVC_DATA_DIR: dataDir,
      SVC_HOST: '127.0.0.1',
      SVC_PORT: String(port),
      SVC_PUBLIC_URL: `http://127.0.0.1:${port}`,
      SVC_LOG_LEVEL: 'warn',
      SVC_RATE_LIMIT_PER_MINUTE: '0',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

async function waitUntilListening(base: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`svc-cloud exited with ${child.exitCode}`);
    try {
      const answer = await fetch(`${base}/.well-known/svc-session-jwks.json`);
      if (answer.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

async function startFleet(
  url: string,
  first: number,
  count: number,
  addressPrefix: string,
): Promise<FleetWorker> {
  const child = fork(
    path.join(root, 'bench/workers/signal-robots.ts'),
    [url, String(first), String(count), addressPrefix],
    {
      execArgv: ['--conditions=source', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const worker: FleetWorker = {
    child,
    progress: { authenticated: 0, online: 0, closes: 0, connecting: 0, waiting: 0 },
  };
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`robot fleet process exited with ${code}`)));
    child.on(
      'message',
      (message: { ready?: boolean; authenticated?: number; online?: number; closes?: number }) => {
        if (message.ready === true) resolve();
        else worker.progress = message as FleetWorker['progress'];
      },
    );
  });
  return worker;
}

function sum(workers: readonly FleetWorker[], field: keyof FleetWorker['progress']): number {
  return workers.reduce((total, w) => total + w.progress[field], 0);
}

/** Waits until `count()` reaches `target`, or stops moving for {@link STALL_MS}; returns the count. */
async function waitFor(count: () => number, target: number, detail?: () => string): Promise<number> {
  let last = -1;
  let movedAt = performance.now();
  for (;;) {
    const now = count();
    if (process.env.SVC_BENCH_VERBOSE === '1') console.error(`  ... ${now} of ${target} ${detail?.() ?? ''}`);
    if (now >= target) return now;
    if (now !== last) {
      last = now;
      movedAt = performance.now();
    } else if (performance.now() - movedAt > STALL_MS) {
      return now;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** User and system CPU time the process has used, seconds (`/proc/<pid>/stat`, clock ticks of 10 ms). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * User and system CPU time of the process's event loop thread (`main`) and of all its other threads
 * together (`others`: libuv's pool, the garbage collector's helpers), seconds: says where a change
 * moved the work.
 */
async function cpuByThread(pid: number): Promise<Record<string, { user: number; system: number }>> {
  const out: Record<string, { user: number; system: number }> = {};
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = tid === String(pid) ? 'main' : 'others';
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const entry = out[name] ?? { user: 0, system: 0 };
    out[name] = entry;
    entry.user += Number(fields[11]) / 100;
    entry.system += Number(fields[12]) / 100;
  }
  return out;
}

function diffThreads(
  after: Record<string, { user: number; system: number }>,
  before: Record<string, { user: number; system: number }>,
): Record<string, { user: number; system: number }> {
  const out: Record<string, { user: number; system: number }> = {};
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? { user: 0, system: 0 };
    out[name] = { user: round2(a.user - b.user), system: round2(a.system - b.system) };
  }
  return out;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kb) * 1024;
}
