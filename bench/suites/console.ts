/**
 * Console suite: the React console's Fleet page against a real svc-cloud process (embedded PGlite
 * in a data directory seeded before it starts) in real headless Chromium, with robots simulated as
 * in the signalling suite (WebSockets that prove an Ed25519 key, signalling v2).
 *
 * - JavaScript (and, for information, CSS) a signed-in person's browser loads from a cold cache to
 *   show Fleet, gzipped here with node's zlib at level 9 (svc-cloud sends them uncompressed);
 * - navigation to Fleet painted with 1 000 robots (offline), cold cache, median and max of
 *   several loads;
 * - robot connects → its row reads `online`, in each of 10 consoles open on Fleet: robots are
 *   connected one at a time while the rest of the fleet is online already, each timed from the
 *   start of its WebSocket connect (`Date.now()` here) to the DOM change in each page (`Date.now()`
 *   there, same machine and clock).
 *
 * People sign in through the development provider's login page. With `default-org` provisioning
 * they join the seeded org; 10 consoles are spread over its four test users because one user may
 * hold at most 5 fleet streams.
 *
 * Where the time goes, recorded with the figures: each timed robot's `auth-ok`, the `robot-updated`
 * event as a Node client of the same stream reads it, the CPU time of every process by role
 * (`/proc`) and the consoles' main-thread time (CDP `Performance.getMetrics`).
 *
 * Environment, for diagnosis (the figures are made with the defaults):
 * - `SVC_BENCH_CONSOLE_LOADS` (7), `SVC_BENCH_CONSOLE_SAMPLES` (200), `SVC_BENCH_CONSOLE_CONSOLES` (10);
 * - `SVC_BENCH_CONSOLE_DIR=<folder>`: svc-cloud serves that build of the pages (`SVC_CONSOLE_DIR`)
 *   instead of building `packages/console/dist`: measures a change of the console side by side;
 * - `SVC_BENCH_CONSOLE_PROFILE=<file>`: writes the V8 CPU profile of the first console while the
 *   timed robots connect (open it in Chrome's DevTools; the build is minified, without source maps).
 */
import { type ChildProcess, execFile, fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openDatabase, orgs, robots } from '@svc/cloud/db';
import { type CloudProcess, type LaunchedChromium, launchChromium, startCloudProcess } from '@svc/testkit';
import {
  type ConsoleTab,
  coldCache,
  type FleetLoad,
  fleetAssets,
  type LoadedFile,
  type MainThreadTime,
  mainThreadDelta,
  mainThreadTime,
  onlineTimes,
  openSignedInTab,
  scrollToRow,
  startPageProfile,
  tabAccessToken,
  timeFleetLoad,
  waitRowsOffline,
  waitStatus,
} from '../console-browser.js';
import { connectTimedRobot, type RobotConnectTimes, type TimedRobot } from '../console-robot.js';
import { cpuByRole, cpuDelta } from '../process-cpu.js';
import { percentile } from '../stats.js';
import type { BenchSuite } from '../types.js';
import { benchRobotId, benchRobotKey } from '../workers/fleet-keys.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

const ROBOTS = 1000;
const ORG_NAME = 'bench fleet';
/** Cold loads of the Fleet page timed; the median and the max are reported. */
const LOADS = Number(process.env.SVC_BENCH_CONSOLE_LOADS ?? 7);
/** Consoles open on Fleet while robots connect (`SVC_BENCH_CONSOLE_CONSOLES`, at most 19: diagnosis only). */
const CONSOLES = Number(process.env.SVC_BENCH_CONSOLE_CONSOLES ?? 10);
/** Robots connected one at a time and timed (the first in the fleet's order). */
const SAMPLES = Number(process.env.SVC_BENCH_CONSOLE_SAMPLES ?? 200);
/** Time between the starts of two timed connects, ms. */
const SPACING_MS = 150;
/** Timed robots per block: the consoles are scrolled so a block's rows are in view before it connects. */
const BLOCK = 10;
/** Longest a block waits for its rows to read `online` after its last connect, ms. */
const BLOCK_TIMEOUT_MS = 15_000;
/** The development provider's test users, one after the other for the consoles (5 streams each at most). */
const PEOPLE = [/Alice/, /Olivia/, /Bob/, /Vera/] as const;
/** In `packages/cloud/src/api/fleet-events.ts`: the feed's coalescing interval, ms. */
const FLEET_FLUSH_MS = 100;
/** KB in the figures: 1000 bytes (as Vite prints sizes). */
const KB = 1000;
/** How long the consoles' main-thread time is read with the fleet online and nothing connecting, ms. */
const IDLE_WINDOW_MS = 5000;

const parameters: Record<string, unknown> = {
  robots: ROBOTS,
  database: 'PGlite in a data directory, seeded before svc-cloud starts',
  provisioning: 'default-org (the seeded org), role from the groups claim',
  browser: 'Debian Chromium, headless, via playwright-core; viewport 1280x860',
  gzip: 'node zlib gzipSync, level 9, each response body as received; KB = 1000 bytes',
  coldCache: 'CDP Network.setCacheDisabled + Network.clearBrowserCache, then a reload of the signed-in tab',
  navigation: {
    loads: LOADS,
    statistic: 'median (p50) and max of the loads',
    from: 'navigation start (the new document performance.timeOrigin)',
    to: 'the animation frame after the table has a row and the status line says "1000 robots" (all offline)',
  },
  robotOnline: {
    consoles: CONSOLES,
    people: 'Alice, Olivia, Bob, Vera in turn (a user may hold 5 fleet streams)',
    timedRobots: SAMPLES,
    alreadyOnline: ROBOTS - SAMPLES,
    spacingMs: SPACING_MS,
    blockOf: BLOCK,
    from: 'Date.now() in the bench process just before the robot WebSocket is created',
    to: "Date.now() in the page when a MutationObserver sees the row's badge read online (DOM committed; paint follows in the same frame)",
    scrolling:
      'before each block of robots, every console is scrolled so their rows are in view (the list is virtualised)',
    fleetFlushMs: FLEET_FLUSH_MS,
  },
};

export const suite: BenchSuite = {
  description:
    'console Fleet page: JavaScript to show it, navigation to Fleet painted with 1000 robots, robot connects → row online in 10 consoles',
  parameters,
  async run(report) {
    parameters.loadAverageAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
    const consoleDir = process.env.SVC_BENCH_CONSOLE_DIR;
    parameters.consoleBuild =
      consoleDir === undefined ? await buildConsole() : `the build in ${consoleDir} (SVC_BENCH_CONSOLE_DIR)`;
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-console-'));
    let cloud: CloudProcess | undefined;
    let chromium: LaunchedChromium | undefined;
    let fleet: ChildProcess | undefined;
    const tabs: ConsoleTab[] = [];
    const timed: TimedRobot[] = [];
    const abort = new AbortController();
    try {
      await seed(dataDir);
      [cloud, chromium] = await Promise.all([
        startCloudProcess({
          env: {
            // Over startCloudProcess's own fresh folder: the seeded one.
            SVC_DATA_DIR: dataDir,
            SVC_PROVISIONING: 'default-org',
            SVC_OIDC_ROLE_CLAIM: 'groups',
            SVC_OIDC_ROLE_MAP: 'owners=owner,admins=admin,operators=operator,viewers=viewer',
            SVC_DEFAULT_ORG_NAME: ORG_NAME,
            SVC_LOG_LEVEL: 'warn',
            ...(consoleDir !== undefined && { SVC_CONSOLE_DIR: path.resolve(consoleDir) }),
          },
        }),
        launchChromium(),
      ]);
      parameters.chromium = chromium.browser.version();

      // 1 and 2: one signed-in tab, reloaded with a cold cache.
      const first = await openSignedInTab(chromium, cloud.address, PEOPLE[0], ROBOTS);
      tabs.push(first);
      const cdp = await coldCache(first.page);
      const assets = await fleetAssets(first.page, cdp);
      reportAssets(report, assets.scripts, 'JavaScript');
      reportAssets(report, assets.styles, 'CSS');

      const loads: FleetLoad[] = [];
      for (let i = 0; i < LOADS; i++) loads.push(await timeFleetLoad(first.page, cdp));
      await cdp.detach();
      const painted = loads.map((l) => l.paintedMs).sort((a, b) => a - b);
      const navigationParams = {
        loads: LOADS,
        maxMs: round(painted.at(-1)!),
        paintedMs: loads.map((l) => round(l.paintedMs)),
        domShownMs: loads.map((l) => round(l.shownMs)),
        milestonesMedianMs: medianMilestones(loads),
      };
      report({
        name: `(console) navigation to Fleet painted, ${ROBOTS} robots`,
        value: percentile(painted, 0.5),
        unit: 'ms',
        better: 'lower',
        params: navigationParams,
      });
      report({
        name: `(console) navigation to Fleet painted, ${ROBOTS} robots, max of ${LOADS}`,
        value: painted.at(-1)!,
        unit: 'ms',
        better: 'lower',
      });

      // 3: ten consoles on Fleet, the fleet but the timed robots online.
      for (let i = 1; i < CONSOLES; i++) {
        tabs.push(await openSignedInTab(chromium, cloud.address, PEOPLE[i % PEOPLE.length]!, ROBOTS));
      }
      fleet = await startFleet(cloud.signalUrl, SAMPLES, ROBOTS - SAMPLES);
      await Promise.all(
        tabs.map((t) => waitStatus(t.page, `${ROBOTS} robots, ${ROBOTS - SAMPLES} online`, 120_000)),
      );
      // The feed's events as a Node client reads them: where the time goes between server and page.
      const streamed = watchFleetStream(
        `${cloud.address}/api/v1/orgs/${first.orgId}/fleet/events`,
        await tabAccessToken(first.page),
        abort.signal,
      );
      await streamed.ready;
      // Main-thread time of the consoles: with the fleet online and nothing connecting, then while
      // the timed robots connect.
      const cdps = await Promise.all(tabs.map((t) => t.context.newCDPSession(t.page)));
      const idleStart = await Promise.all(cdps.map(mainThreadTime));
      const idleCpu = await cpuByRole();
      const idleStartedAt = performance.now();
      await delay(IDLE_WINDOW_MS);
      const idleEnd = await Promise.all(cdps.map(mainThreadTime));
      const samplingCpu = await cpuByRole();
      const idleMs = performance.now() - idleStartedAt;
      const profile = process.env.SVC_BENCH_CONSOLE_PROFILE ? await startPageProfile(cdps[0]!) : undefined;
      parameters.loadAverageWhenRobotsConnect = os.loadavg().map((l) => Math.round(l * 100) / 100);
      const samplingStartedAt = performance.now();

      const times: RobotConnectTimes[] = [];
      const pageTimes: Record<string, number>[] = tabs.map(() => ({}));
      let failedConnects = 0;
      for (let start = 0; start < SAMPLES; start += BLOCK) {
        const indices = Array.from({ length: Math.min(BLOCK, SAMPLES - start) }, (_, k) => start + k);
        const ids = indices.map(benchRobotId);
        // Robot i is named robot-<i>: row i in the fleet's order (by name).
        await Promise.all(tabs.map((t) => scrollToRow(t.page, start)));
        await Promise.all(tabs.map((t) => waitRowsOffline(t.page, ids)));
        const connects: Promise<void>[] = [];
        for (const index of indices) {
          connects.push(
            connectTimedRobot(cloud.signalUrl, index).then(
              (robot) => {
                timed.push(robot);
                times.push(robot.times);
              },
              () => {
                failedConnects++;
              },
            ),
          );
          await delay(SPACING_MS);
        }
        await Promise.all(connects);
        const seen = await Promise.all(tabs.map((t) => onlineTimes(t.page, ids, BLOCK_TIMEOUT_MS)));
        seen.forEach((s, i) => {
          Object.assign(pageTimes[i]!, s);
        });
      }

      const samplingEnd = await Promise.all(cdps.map(mainThreadTime));
      const samplingCpuEnd = await cpuByRole();
      const samplingMs = performance.now() - samplingStartedAt;
      if (profile !== undefined) {
        const file = process.env.SVC_BENCH_CONSOLE_PROFILE!;
        await writeFile(file, JSON.stringify(await profile.stop()));
        console.error(`  wrote the CPU profile of console 1 while the timed robots connected to ${file}`);
      }
      const busy = (from: MainThreadTime[], to: MainThreadTime[], windowMs: number) => {
        const deltas = from.map((f, i) => mainThreadDelta(f, to[i]!));
        const mean = (key: keyof MainThreadTime) =>
          round(deltas.reduce((n, d) => n + d[key], 0) / deltas.length);
        return {
          windowS: round(windowMs / 1000),
          perConsoleMs: {
            task: mean('task'),
            script: mean('script'),
            layout: mean('layout'),
            style: mean('style'),
          },
          perConsoleBusyPercent: round((mean('task') / windowMs) * 100),
        };
      };
      const samplingCpuS = cpuDelta(samplingCpu, samplingCpuEnd);
      const cpu = {
        note: 'user+system CPU seconds of the bench process and its descendants, by role (/proc)',
        fleetOnlineIdle: { windowS: round(idleMs / 1000), ...cpuDelta(idleCpu, samplingCpu) },
        whileTimedRobotsConnect: { windowS: round(samplingMs / 1000), ...samplingCpuS },
        renderersPerTimedRobotPerConsoleMs: round(
          ((samplingCpuS['chromium renderers'] ?? 0) * 1000) / Math.max(1, SAMPLES) / tabs.length,
        ),
        svcCloudPerTimedRobotMs: round(((samplingCpuS['svc-cloud'] ?? 0) * 1000) / Math.max(1, SAMPLES)),
      };
      const consoleMainThread = {
        note: 'CDP Performance.getMetrics, mean over the consoles',
        fleetOnlineIdle: busy(idleStart, idleEnd, idleMs),
        whileTimedRobotsConnect: {
          ...busy(idleEnd, samplingEnd, samplingMs),
          perTimedRobotPerConsoleMs: round(
            samplingEnd.reduce((n, e, i) => n + mainThreadDelta(idleEnd[i]!, e).task, 0) /
              samplingEnd.length /
              Math.max(1, SAMPLES),
          ),
        },
      };

      const latencies: number[] = [];
      const perConsole: number[][] = tabs.map(() => []);
      let missing = 0;
      for (const t of times) {
        pageTimes.forEach((seen, i) => {
          const at = seen[t.robotId];
          if (at === undefined) {
            missing++;
            return;
          }
          latencies.push(at - t.startedAt);
          perConsole[i]!.push(at - t.startedAt);
        });
      }
      latencies.sort((a, b) => a - b);
      const toAuthOk = times.map((t) => t.authOkAt - t.startedAt).sort((a, b) => a - b);
      const toStream = times
        .flatMap((t) => {
          const at = streamed.onlineAt.get(t.robotId);
          return at === undefined ? [] : [at - t.startedAt];
        })
        .sort((a, b) => a - b);
      const onlineParams = {
        pairs: latencies.length,
        timedRobots: times.length,
        consoles: tabs.length,
        missingPairs: missing,
        failedConnects,
        maxMs: round(latencies.at(-1) ?? Number.NaN),
        breakdown: {
          connectToAuthOkMs: quantiles(toAuthOk),
          connectToStreamEventMs: quantiles(toStream),
          streamUpdatesPerTimedRobot: round(
            times.reduce((n, t) => n + (streamed.updates.get(t.robotId) ?? 0), 0) / Math.max(1, times.length),
          ),
          note: 'stream event: a Node client of the same fleet stream reading the robot-updated event with online true',
        },
        cpu,
        consoleMainThread,
        perConsoleP50Ms: perConsole.map((l) =>
          round(
            percentile(
              l.sort((a, b) => a - b),
              0.5,
            ),
          ),
        ),
        pageErrors: tabs.reduce((n, t) => n + t.errors.length, 0),
      };
      report({
        name: '(console) robot connects → row online, p50',
        value: percentile(latencies, 0.5),
        unit: 'ms',
        better: 'lower',
        params: onlineParams,
      });
      report({
        name: '(console) robot connects → row online, p99',
        value: percentile(latencies, 0.99),
        unit: 'ms',
        better: 'lower',
        params: { pairs: latencies.length },
      });
      report({
        name: '(console) robot connects → row online, samples (robot, console)',
        value: latencies.length,
        unit: 'pairs',
        better: 'higher',
        params: { timedRobots: times.length, consoles: tabs.length, missingPairs: missing },
      });
    } finally {
      abort.abort();
      for (const robot of timed) robot.close();
      fleet?.kill('SIGKILL');
      for (const tab of tabs) await tab.context.close().catch(() => undefined);
      await chromium?.close();
      await cloud?.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
};

/** Builds the console pages when their sources changed (`build.mjs` skips an up-to-date build). */
async function buildConsole(): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [
    path.join(root, 'packages/console/scripts/build.mjs'),
  ]);
  return stdout.trim();
}

/** Enrols the fleet into the org people join at sign-in, before svc-cloud opens the database. */
async function seed(dataDir: string): Promise<void> {
  const database = await openDatabase({ dataDir });
  try {
    const [org] = await database.db.insert(orgs).values({ name: ORG_NAME }).returning();
    const rows = [];
    for (let i = 0; i < ROBOTS; i++) {
      rows.push({
        robotId: benchRobotId(i),
        orgId: org!.id,
        publicKey: benchRobotKey(i).publicKey,
        // Named so that the fleet's order (by name) is the index order.
        name: `robot-${String(i).padStart(4, '0')}`,
        enrolledAt: new Date(),
      });
      if (rows.length === 500 || i === ROBOTS - 1) await database.db.insert(robots).values(rows.splice(0));
    }
  } finally {
    await database.close();
  }
}

function reportAssets(
  report: Parameters<BenchSuite['run']>[0],
  files: readonly LoadedFile[],
  kind: 'JavaScript' | 'CSS',
): void {
  const gzip = files.reduce((n, f) => n + f.gzipBytes, 0);
  report({
    name: `(console) ${kind} to show Fleet, gzipped`,
    value: gzip / KB,
    unit: 'KB',
    better: 'lower',
    params: {
      files: files.map((f) => ({ path: f.path, KB: round(f.bytes / KB), gzipKB: round(f.gzipBytes / KB) })),
      uncompressedKB: round(files.reduce((n, f) => n + f.bytes, 0) / KB),
    },
  });
}

/** Robots `first` to `first + count - 1`, connected by `workers/signal-robots.ts`; resolves once all are online. */
async function startFleet(url: string, first: number, count: number): Promise<ChildProcess> {
  const child = fork(
    path.join(root, 'bench/workers/signal-robots.ts'),
    [url, String(first), String(count), '127.30'],
    {
      execArgv: ['--conditions=source', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    const exited = (code: number | null) => reject(new Error(`robot fleet process exited with ${code}`));
    child.once('exit', exited);
    child.on('message', (message: { ready?: boolean; online?: number }) => {
      if (message.ready === true) child.send({ start: true });
      else if (message.online === count) {
        child.off('exit', exited);
        resolve();
      }
    });
  });
  return child;
}

/** A Node client of the fleet stream: when each robot's first `robot-updated` with `online` arrived. */
function watchFleetStream(
  url: string,
  accessToken: string,
  signal: AbortSignal,
): {
  readonly ready: Promise<void>;
  readonly onlineAt: Map<string, number>;
  readonly updates: Map<string, number>;
} {
  const onlineAt = new Map<string, number>();
  const updates = new Map<string, number>();
  let snapshot: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    snapshot = resolve;
  });
  const read = async () => {
    const response = await fetch(url, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${accessToken}` },
      signal,
    });
    if (!response.ok || response.body === null) throw new Error(`fleet stream answered ${response.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    const reader = response.body.getReader();
    for (;;) {
      const { done, value: chunk } = await reader.read();
      if (done) return;
      const now = Date.now();
      buffer += decoder.decode(chunk, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const data = buffer
          .slice(0, end)
          .split('\n')
          .find((line) => line.startsWith('data: '));
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
        if (data === undefined) continue;
        const event = JSON.parse(data.slice(6)) as {
          type: string;
          robot?: { robotId: string; online: boolean };
        };
        if (event.type === 'snapshot') snapshot();
        if (event.type === 'robot-updated' && event.robot !== undefined) {
          updates.set(event.robot.robotId, (updates.get(event.robot.robotId) ?? 0) + 1);
        }
        if (
          event.type === 'robot-updated' &&
          event.robot?.online === true &&
          !onlineAt.has(event.robot.robotId)
        ) {
          onlineAt.set(event.robot.robotId, now);
        }
      }
    }
  };
  read().catch((err: unknown) => {
    if (!signal.aborted) console.error(`  fleet stream reader stopped: ${String(err)}`);
    snapshot();
  });
  return { ready, onlineAt, updates };
}

function medianMilestones(loads: readonly FleetLoad[]): Record<string, number> {
  const names = new Set(loads.flatMap((l) => Object.keys(l.milestones)));
  const out: Record<string, number> = {};
  for (const name of names) {
    const values = loads.flatMap((l) => (l.milestones[name] === undefined ? [] : [l.milestones[name]!]));
    out[name] = round(
      percentile(
        values.sort((a, b) => a - b),
        0.5,
      ),
    );
  }
  out.domShown = round(
    percentile(
      loads.map((l) => l.shownMs).sort((a, b) => a - b),
      0.5,
    ),
  );
  out.painted = round(
    percentile(
      loads.map((l) => l.paintedMs).sort((a, b) => a - b),
      0.5,
    ),
  );
  return out;
}

function quantiles(sorted: readonly number[]): { p50: number; p99: number; n: number } {
  return { p50: round(percentile(sorted, 0.5)), p99: round(percentile(sorted, 0.99)), n: sorted.length };
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
