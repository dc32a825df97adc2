/**
 * The `reach` suite's path figures (a), (b), (d), (e): a robot behind a NAT router in network
 * namespaces the suite builds (`startNetnsFleet` of `@svc/testkit`), svc-cloud and the pilot's
 * Chromium on the "internet" beside it, the glass source (a picture carrying its capture time as a
 * pixel code, encoded by a real ffmpeg) as the robot's camera in the robot's namespace, the pilot
 * SDK in Chromium reading the code back from every painted picture (`path-glass-page.ts`).
 *
 * The same robot serves both paths. (e) first: a session on the relay (no gateway answers NAT-PMP
 * yet) when the suite starts a NAT-PMP responder on the router, which the robot's next try finds;
 * the move to the direct path is timed from the mapping. Then (a) and (b) watch in pairs: two pages
 * of the same Chromium watch the same camera at the same time, one straight to the mapped port and
 * one through the relay only (the SDK's `relay: 'only'`), so the pair shares the pictures, the
 * machine's load and the display's paint opportunities and differs only in the path. (Watched one
 * after the other, the p50s moved by more than the relay costs: a 30 fps camera and the 60 Hz
 * display keep one phase for a whole watch, and the p50 of a watch depends on it; ADR 0021.)
 * Loss for (b) is two nftables rules on the router, one per path (the relay's ports against the
 * rest), each dropping 3 of every 60 of that path's UDP datagrams from the robot's LAN (5 % in
 * bursts of 3, the same pattern on either path), averaged over several pairs whose bursts fall at
 * different places in the frames. Last (d): the responder stops and the announced address swallows
 * the pilot's datagrams without a word, so the direct candidate hangs and the relay takes over.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ChromiumSession,
  findChromium,
  freeUdpPort,
  type NatPmpResponder,
  type NetnsFleet,
  type NetnsRobot,
  startNatPmpResponder,
  startNetnsFleet,
} from '@svc/testkit';
import { percentile } from './stats.js';
import type { GlassSample } from './suites/path-glass-page.js';
import type { BenchResult } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const page = path.join(here, 'suites/path-glass-page.ts');
const glassWorker = path.join(here, 'workers/glass-source.ts');
const SOURCE = { width: 640, height: 360, fps: 30, gop: 60, bitrateKbps: 2500 };
/** Pictures of the first seconds are left out of (a) and (b): the hold settles meanwhile. */
const SETTLE_MS = 5000;
const WATCH_S = 25;
const JOINS = 5;
/** Lossy pairs of watches, averaged for (b). */
const LOSSY_RUNS = 16;
/** Calm pairs of watches: (a) is the median of their differences. */
const CALM_RUNS = 8;
/**
 * svc-cloud's relay ports: below Linux's ephemeral range (32768 and up), where Chromium's sockets
 * are, so a rule on the router can tell the robot's datagrams to the relay from those to the pilot.
 */
const RELAY_PORTS = '20000-20999';
const JOIN_WATCH_S = 2;
/** (e): the router starts mapping this long after the session started on the relay. */
const OPEN_AFTER_MS = 4000;
const SWITCH_WATCH_S = 25;
const TABLE = 'svcbench';

/** Runs the path figures and reports them. */
export async function measurePathFigures(report: (r: BenchResult) => void): Promise<void> {
  const fleet = await startNetnsFleet({
    nat: 'masquerade',
    chromium: false,
    cloudEnv: { SVC_RELAY_PORTS: RELAY_PORTS },
  });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const topology = fleet.topology;
    const v4 = topology.addresses.ipv4!;
    const rtpPort = await freeUdpPort();
    const robot = await fleet.robot('bench-reach', {
      agent: ['relay = true', 'port_mapping = true', 'port_mapping_protocols = ["natpmp"]'],
      channels: [
        '[[channel]]',
        'kind = "video"',
        'name = "front"',
        `input = "rtp://127.0.0.1:${rtpPort}"`,
        'codec = "avc1.42c01f"',
        `fps = ${SOURCE.fps}`,
      ],
      camera: false,
    });
    const source = await startWorkerSource(fleet, rtpPort);
    cleanups.push(() => source.stop());
    const chromium = await ChromiumSession.open({
      executablePath: topology.wrapperFor('internet', findChromium()),
      serve: 'route',
    });
    cleanups.push(() => chromium.close());
    await routerTable(fleet, 'create');
    cleanups.push(() => routerTable(fleet, 'delete'));

    let watched = 0;
    const watch = async (
      seconds: number,
      options: { during?: () => Promise<void>; relay?: boolean | 'only' } = {},
    ): Promise<GlassSample> => {
      const run = chromium.run<GlassSample>({
        entry: page,
        exportName: 'measureGlass',
        args: [
          {
            signalUrl: fleet.cloud.signalUrl,
            robotId: robot.robotId,
            token: await robot.token('observe'),
            seconds,
            ...(options.relay !== undefined && { relay: options.relay }),
          },
        ],
        timeoutMs: (seconds + 60) * 1000,
        // Chromium reports each candidate it cannot reach (the robot's LAN address) as an error.
        allowConsoleErrors: true,
      });
      await options.during?.();
      const sample = await run;
      await dump(`watch-${++watched}`, sample);
      return sample;
    };

    /** Two pages at once, one on each path. */
    const pair = async (): Promise<Pair> => {
      const [direct, relayed] = await Promise.all([
        watch(WATCH_S, { relay: false }),
        watch(WATCH_S, { relay: 'only' }),
      ]);
      expectPath(direct, 'direct');
      expectPath(relayed, 'relay');
      return { direct, relayed };
    };

    // (e): a session starts on the relay (nothing maps the robot's port yet; its only candidate,
    // its LAN address, is unreachable); then the router starts answering NAT-PMP: the robot maps
    // its port and announces it, svc-cloud passes it on, the pilot reaches it and moves there.
    let mappedAt = Number.NaN;
    let responder: NatPmpResponder | undefined;
    const switching = await watch(SWITCH_WATCH_S, {
      during: async () => {
        await sleep(OPEN_AFTER_MS);
        responder = await startNatPmpResponder({
          spawn: (command, args) => topology.spawn('router', command, [...args]),
          lanAddress: v4.routerLan,
          wanAddress: v4.routerWan,
          wanInterface: topology.interfaces.router.wan,
        });
        cleanups.push(() => responder!.stop());
        await responder.waitFor((e) => e.event === 'mapped', 30_000);
        mappedAt = Date.now();
      },
    });
    expectPath(switching, 'direct');
    const switches =
      (
        switching.connection as {
          pathSwitches?: { atMs: number; framesLost: number; from: string; to: string }[];
        }
      ).pathSwitches ?? [];
    const move = switches.find((x) => x.from === 'relay' && x.to === 'direct');

    // The mapping stays: a page that may not use the relay reaches the robot straight.
    await whenMapped(fleet, robot);
    const calms: Pair[] = [];
    for (let i = 0; i < CALM_RUNS; i++) calms.push(await pair());
    const lan = topology.interfaces.router.lan;
    const lossRules = [
      await addRule(fleet, 'forward', `iifname "${lan}" udp dport ${RELAY_PORTS} numgen inc mod 60 < 3 drop`),
      await addRule(
        fleet,
        'forward',
        `iifname "${lan}" udp dport != ${RELAY_PORTS} numgen inc mod 60 < 3 drop`,
      ),
    ];
    const lossies: Pair[] = [];
    for (let i = 0; i < LOSSY_RUNS; i++) lossies.push(await pair());
    for (const rule of lossRules) await deleteRule(fleet, 'forward', rule);

    // The router forgets the mapping (its forwarding goes), for (d).
    await responder?.stop();
    // (d): the announced address swallows datagrams without a word (a NAT or a firewall the pilot
    // cannot get through): the direct candidate hangs, the relay takes over after its head start.
    const quicPort = robot.files.quicPort;
    const blackhole = await addRule(
      fleet,
      'input',
      `iifname "${topology.interfaces.router.wan}" udp dport ${quicPort} drop`,
    );
    const blocked: number[] = [];
    for (let i = 0; i < JOINS; i++) {
      const join = await watch(JOIN_WATCH_S);
      expectPath(join, 'relay');
      blocked.push(join.connectToFirstPaintMs ?? Number.NaN);
    }
    await deleteRule(fleet, 'input', blackhole);
    // Every picture's capture time comes back when the camera stops.
    await source.stop();

    const settled = (sample: GlassSample) => sample.paints.filter((p) => p[4] >= SETTLE_MS);
    /** The p50 of one field of the settled pictures of several watches together. */
    const pooledP50 = (samples: readonly GlassSample[], field: 1 | 6) =>
      percentile(
        samples.flatMap((x) => settled(x).map((p) => p[field])).sort((a, b) => a - b),
        0.5,
      );
    const relayedCalms = calms.map((x) => x.relayed);
    const directCalms = calms.map((x) => x.direct);
    const relayedP50 = pooledP50(relayedCalms, 1);
    const directP50 = pooledP50(directCalms, 1);
    // A watch's glass times gather in two modes a paint interval apart (a picture goes out at the
    // first paint opportunity after it was decoded, or at the one after), and its p50 falls in
    // whichever holds more than half: a pair's two p50s can differ by a paint interval with the
    // same path under both. The median of the pairs' differences is not moved by such flips.
    const pairDifferences = calms.map((x) => pooledP50([x.relayed], 1) - pooledP50([x.direct], 1));
    const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    const glassMean = (samples: readonly GlassSample[]) =>
      mean(samples.flatMap((x) => settled(x).map((p) => p[1])));
    const common = {
      source: SOURCE,
      settleMs: SETTLE_MS,
      watchS: WATCH_S,
      topology: 'robot behind a NAT router (nftables masquerade), svc-cloud and Chromium on the other side',
      how: 'pairs of watches at once in two pages of one Chromium, one direct, one through the relay only',
    };
    const painted = (samples: readonly GlassSample[]) => samples.map((x) => settled(x).length);
    report({
      name: '(a) capture → glass p50, relayed',
      value: relayedP50,
      unit: 'ms',
      better: 'lower',
      params: {
        ...common,
        pairs: CALM_RUNS,
        p50s: relayedCalms.map((x) => pooledP50([x], 1)),
        painted: painted(relayedCalms),
      },
    });
    report({
      name: '(a) capture → glass p50, direct',
      value: directP50,
      unit: 'ms',
      better: 'lower',
      params: {
        ...common,
        pairs: CALM_RUNS,
        p50s: directCalms.map((x) => pooledP50([x], 1)),
        painted: painted(directCalms),
      },
    });
    report({
      name: '(a) relayed − direct, capture → glass p50 (median of the pairs)',
      value: percentile(
        [...pairDifferences].sort((a, b) => a - b),
        0.5,
      ),
      unit: 'ms',
      better: 'lower',
      params: {
        ...common,
        pairDifferences,
        pooledP50Difference: relayedP50 - directP50,
        meanDifference: glassMean(relayedCalms) - glassMean(directCalms),
      },
    });
    // The path's own part, which the display's paint opportunities do not round.
    report({
      name: '(a) relayed − direct, capture → frame whole at the pilot p50',
      value: pooledP50(relayedCalms, 6) - pooledP50(directCalms, 6),
      unit: 'ms',
      better: 'lower',
      params: { ...common, relayed: pooledP50(relayedCalms, 6), direct: pooledP50(directCalms, 6) },
    });
    const relayedShare = meanShare(lossies.map((x) => paintedShare(x.relayed, source.captured)));
    const directShare = meanShare(lossies.map((x) => paintedShare(x.direct, source.captured)));
    const calm = {
      relayedCalmPercent: meanShare(relayedCalms.map((x) => paintedShare(x, source.captured))).percent,
      directCalmPercent: meanShare(directCalms.map((x) => paintedShare(x, source.captured))).percent,
    };
    // The spread of the pairs' differences: a lost frame that cannot be repaired costs the frames
    // after it until the next keyframe, so a watch's share turns on a few such losses.
    const differences = lossies.map(
      (x) =>
        paintedShare(x.direct, source.captured).percent - paintedShare(x.relayed, source.captured).percent,
    );
    const meanDifference = differences.reduce((a, b) => a + b, 0) / differences.length;
    const standardError = Math.sqrt(
      differences.reduce((a, b) => a + (b - meanDifference) ** 2, 0) /
        (differences.length - 1) /
        differences.length,
    );
    const lossParams = {
      ...common,
      ...calm,
      pairs: LOSSY_RUNS,
      loss: '3 of every 60 UDP datagrams of each path from the robot’s LAN dropped at the router (5 %, bursts of 3); the mean of the pairs',
    };
    report({
      name: '(b) frames painted under 5 % loss in bursts of 3, relayed',
      value: relayedShare.percent,
      unit: '%',
      better: 'higher',
      params: { ...lossParams, ...relayedShare },
    });
    report({
      name: '(b) frames painted under 5 % loss in bursts of 3, direct',
      value: directShare.percent,
      unit: '%',
      better: 'higher',
      params: { ...lossParams, ...directShare },
    });
    report({
      name: '(b) direct − relayed, frames painted',
      value: directShare.percent - relayedShare.percent,
      unit: 'percentage points',
      better: 'lower',
      params: { ...lossParams, pairDifferences: differences, standardError, relayDrops: relayDrops(fleet) },
    });
    const sortedBlocked = [...blocked].sort((a, b) => a - b);
    report({
      name: '(d) connect → first picture, direct blocked (dropped silently), relay allowed, p50',
      value: percentile(sortedBlocked, 0.5),
      unit: 'ms',
      better: 'lower',
      params: { joins: blocked, headStartMs: 200 },
    });
    report({
      name: '(d) same, worst of the joins',
      value: Math.max(...blocked),
      unit: 'ms',
      better: 'lower',
      params: { joins: blocked },
    });
    report({
      name: '(e) relay → direct: port mapped at the router → session on the direct path',
      value: move === undefined ? Number.NaN : switching.timeOrigin + move.atMs - mappedAt,
      unit: 'ms',
      better: 'lower',
      params: {
        switches,
        mappedAt,
        how: 'NAT-PMP responder started on the router mid-session; from its first successful MAP to the pilot on the direct path',
      },
    });
    report({
      name: '(e) frames lost by the move',
      value: move?.framesLost ?? Number.NaN,
      unit: 'frames',
      better: 'lower',
      params: { switches },
    });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await fleet.stop();
  }
}

/**
 * What the relay's sessions dropped, from svc-cloud's `relay: closed` lines: datagrams over the
 * session's rate, and strangers' datagrams.
 */
function relayDrops(fleet: NetnsFleet): { sessions: number; overRate: number; strangers: number } {
  const drops = { sessions: 0, overRate: 0, strangers: 0 };
  for (const line of fleet.cloud.log().split('\n')) {
    if (!line.includes('relay: closed')) continue;
    try {
      const entry = JSON.parse(line) as { overRate?: number; strangers?: number };
      drops.sessions++;
      drops.overRate += entry.overRate ?? 0;
      drops.strangers += entry.strangers ?? 0;
    } catch {
      // Not a JSON line.
    }
  }
  return drops;
}

/** Two watches at once: the same pictures, one page on each path. */
interface Pair {
  readonly direct: GlassSample;
  readonly relayed: GlassSample;
}

function expectPath(sample: GlassSample, expected: string): void {
  const actual = (sample.connection as { path?: string }).path;
  if (actual !== expected) throw new Error(`the session ran on the ${String(actual)} path, not ${expected}`);
}

/** The mean of several runs' shares, with each run's. */
function meanShare(shares: readonly { percent: number; painted: number; drawn: number }[]): {
  percent: number;
  each: number[];
} {
  const each = shares.map((x) => x.percent);
  return { percent: each.reduce((a, b) => a + b, 0) / Math.max(1, each.length), each };
}

/**
 * The share of the pictures drawn while the pilot watched (after the settling seconds) that were
 * painted, and how many.
 */
function paintedShare(
  sample: GlassSample,
  captured: readonly number[],
): { percent: number; painted: number; drawn: number } {
  const settled = sample.paints.filter((p) => p[4] >= SETTLE_MS);
  if (settled.length === 0) return { percent: 0, painted: 0, drawn: 0 };
  const from = sample.firstPaintEpochMs + SETTLE_MS - 200;
  const until = sample.firstPaintEpochMs + sample.paints.at(-1)![4] - 500;
  const drawn = captured.filter((t) => t >= from && t <= until).length;
  const painted = new Set(
    settled
      .filter((p) => {
        const at = sample.firstPaintEpochMs + p[4] - p[1];
        return at >= from && at <= until;
      })
      .map((p) => p[0]),
  ).size;
  return { percent: drawn === 0 ? 0 : (100 * painted) / drawn, painted, drawn };
}

/** The camera: the glass source in the robot's namespace, in a process of its own. */
async function startWorkerSource(
  fleet: NetnsFleet,
  port: number,
): Promise<{ captured: number[]; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(
    'ip',
    [
      'netns',
      'exec',
      fleet.topology.namespaces.robot,
      process.execPath,
      '--conditions=source',
      '--import',
      'tsx',
      glassWorker,
      JSON.stringify({ port, ...SOURCE }),
    ],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const captured: number[] = [];
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the glass source exited (${String(code)})`)));
  });
  let stopped: Promise<void> | undefined;
  return {
    captured,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        child.on('message', (m: { captured?: number[] }) => {
          if (m.captured !== undefined) captured.push(...m.captured);
        });
        child.once('exit', () => resolve());
        child.send({ stop: true });
      });
      return stopped;
    },
  };
}

async function whenMapped(fleet: NetnsFleet, robot: NetnsRobot): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await fleet.cloud.call('GET', `/api/v1/robots/${robot.robotId}`, {
      token: fleet.alice.accessToken,
    });
    if ((answer.body.robot?.candidates ?? []).some((c: { kind: string }) => c.kind === 'mapped')) return;
    if (Date.now() > deadline) throw new Error('the robot never announced a mapped candidate');
    await sleep(200);
  }
}

async function routerTable(fleet: NetnsFleet, what: 'create' | 'delete'): Promise<void> {
  const script =
    what === 'create'
      ? `table ip ${TABLE} {\n chain forward {\n type filter hook forward priority -10; policy accept;\n }\n chain input {\n type filter hook input priority -10; policy accept;\n }\n}\n`
      : `delete table ip ${TABLE}\n`;
  const result = await fleet.topology.run('router', 'nft', ['-f', '-'], { input: script });
  if (result.code !== 0) throw new Error(`nft: ${result.stderr}`);
}

/** Adds a rule to one of the suite's chains on the router; returns its handle. */
async function addRule(fleet: NetnsFleet, chain: 'forward' | 'input', rule: string): Promise<number> {
  const result = await fleet.topology.run('router', 'nft', [
    '--echo',
    '--handle',
    'add',
    'rule',
    'ip',
    TABLE,
    chain,
    ...rule.split(' '),
  ]);
  const handle = /# handle (\d+)/.exec(result.stdout);
  if (result.code !== 0 || handle === null) throw new Error(`nft add rule: ${result.stderr}${result.stdout}`);
  return Number(handle[1]);
}

async function deleteRule(fleet: NetnsFleet, chain: 'forward' | 'input', handle: number): Promise<void> {
  await fleet.topology.run('router', 'nft', ['delete', 'rule', 'ip', TABLE, chain, 'handle', String(handle)]);
}

async function dump(name: string, sample: GlassSample): Promise<void> {
  const dir = process.env.SVC_BENCH_DUMP;
  if (dir === undefined) return;
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `reach-${name}.json`), JSON.stringify(sample));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
