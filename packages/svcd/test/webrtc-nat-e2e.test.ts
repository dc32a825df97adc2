/**
 * WebRTC through NATs on both sides (issue 19): the robot behind one NAT router, the pilot's
 * Chromium behind another, svc-cloud and Debian's coturn on the "internet" between them, all real
 * processes in network namespaces. svc-cloud hands both sides coturn's STUN and TURN with
 * credentials it mints per session.
 *
 * - Address-and-port-restricted NAT on both sides (Linux masquerade): ICE punches through, no TURN.
 * - Symmetric NAT on both sides: only TURN can carry the session, and it says so (relay, TURN).
 * - TURN credentials past their lifetime (coturn's clock 2 h ahead): coturn refuses them and the
 *   page says it found no path to the robot.
 */
import { fileURLToPath } from 'node:url';
import {
  ChromiumSession,
  findChromium,
  type NatMode,
  type NetnsFleet,
  startNetnsFleet,
  startTcpForwarder,
  startTurnServer,
  type TurnServer,
} from '@svc/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { WatchResult } from './fixtures/pilot-page.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));
const SECRET = 'svc-test-turn-secret-0123456789';
/** coturn's address: the internet namespace on the robot router's link, reached from both sides. */
const TURN_HOST = '198.18.1.1';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Scenario {
  readonly nat: NatMode;
  readonly pilotNat: NatMode;
  /** Runs coturn under `faketime` with its clock this far ahead (credentials look expired). */
  readonly turnClockAhead?: string;
  /** The pilot's `backend` (default `webrtc`). */
  readonly backend?: 'auto' | 'webrtc';
}

interface Outcome {
  readonly fleet: NetnsFleet;
  readonly turn: TurnServer;
  readonly result: WatchResult;
  /** The robot as svc-cloud's API shows it to alice while the page watched. */
  readonly robot: Record<string, unknown>;
}

/** Builds the scenario's network, a robot with a camera, and watches it from the pilot's Chromium on WebRTC. */
async function watchThrough(scenario: Scenario, seconds: number): Promise<Outcome> {
  const fleet = await startNetnsFleet({
    nat: scenario.nat,
    pilotNat: scenario.pilotNat,
    chromium: false,
    cloudEnv: {
      SVC_STUN_URLS: `stun:${TURN_HOST}:3478`,
      SVC_TURN_URLS: `turn:${TURN_HOST}:3478?transport=udp,turns:${TURN_HOST}:443?transport=tcp`,
      SVC_TURN_SECRET: SECRET,
    },
  });
  cleanups.push(() => fleet.stop());
  const topology = fleet.topology;
  const turn = await startTurnServer({
    prefix: [
      'ip',
      'netns',
      'exec',
      topology.namespaces.internet,
      ...(scenario.turnClockAhead === undefined ? [] : ['faketime', '-f', scenario.turnClockAhead]),
    ],
    listen: [TURN_HOST],
    relay: TURN_HOST,
    secret: SECRET,
  });
  cleanups.push(() => turn.stop());
  const robot = await fleet.robot('nat-amr');
  await robot.daemon.waitForLog('svcd running', 1, 30_000);
  // The pilot reaches svc-cloud's pages and signalling through its own NAT, on its loopback.
  const forwarder = await startTcpForwarder({
    prefix: ['ip', 'netns', 'exec', topology.namespaces.pilot!],
    targetHost: topology.pilot!.internet,
    targetPort: fleet.cloud.port,
  });
  cleanups.push(() => forwarder.stop());
  const chromium = await ChromiumSession.open({
    executablePath: topology.wrapperFor('pilot', findChromium()),
    serve: 'route',
    // coturn's certificate is the test's own: trusted by its key, as a deployment's CA would be.
    args: [`--ignore-certificate-errors-spki-list=${turn.certificateSpki}`],
  });
  cleanups.push(() => chromium.close());
  const token = await robot.token('drive');
  const watching = chromium.run<WatchResult>({
    entry: page,
    exportName: 'watch',
    args: [fleet.cloud.signalUrl, robot.robotId, token, seconds, true, scenario.backend ?? 'webrtc'],
    timeoutMs: (seconds + 60) * 1000,
    // Chromium reports each candidate it cannot reach as an error.
    allowConsoleErrors: true,
  });
  // What svc-cloud shows of the robot while the page watches: the last view with a session.
  let robotSeen: Record<string, unknown> = {};
  let watched = false;
  const following = (async () => {
    while (!watched) {
      const view = await fleet.cloud.call('GET', `/api/v1/robots/${robot.robotId}`, {
        token: fleet.alice.accessToken,
      });
      const seen = view.body.robot as Record<string, unknown>;
      if (Array.isArray(seen.sessions) && seen.sessions.length > 0) robotSeen = seen;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  const result = await watching.finally(() => {
    watched = true;
  });
  await following;
  return { fleet, turn, result, robot: robotSeen };
}

function painted(result: WatchResult): number {
  return Object.values(result.stats.channels)[0]?.painted ?? 0;
}

/**
 * The TURN sessions coturn authenticated, by how the client reached it, from its log: a session's
 * `new` line names the TLS version for TURN over TLS.
 */
function allocations(turn: TurnServer): { udp: number; tls: number } {
  const opened = turn
    .log()
    .split('\n')
    .filter((line) => /: new, realm=<svc\.test>, username=<\d+:(pilot|robot)\./.test(line));
  return {
    udp: opened.filter((line) => !/method=TLS/.test(line)).length,
    tls: opened.filter((line) => /method=TLS/.test(line)).length,
  };
}

describe('WebRTC through NATs on both sides, with coturn', () => {
  it('restricted NATs on both sides: ICE connects without TURN', async () => {
    const { result, robot } = await watchThrough({ nat: 'masquerade', pilotNat: 'masquerade' }, 4);
    expect(result.states).toContain('connected');
    expect(result.stats.backend).toBe('webrtc');
    expect(result.stats.path).toBe('direct');
    expect(painted(result)).toBeGreaterThan(40); // of about 120 in 4 s
    expect(robot.sessions).toEqual([expect.objectContaining({ path: 'direct', backend: 'webrtc' })]);
  }, 180_000);

  it('symmetric NATs on both sides: the session goes through TURN, and says so', async () => {
    const { result, robot, turn } = await watchThrough({ nat: 'symmetric', pilotNat: 'symmetric' }, 4);
    expect(result.states).toContain('connected');
    expect(result.stats.backend).toBe('webrtc');
    expect(result.stats.path).toBe('relay');
    expect(painted(result)).toBeGreaterThan(40);
    expect(robot.sessions).toEqual([expect.objectContaining({ path: 'relay', backend: 'webrtc' })]);
    expect(allocations(turn).udp).toBeGreaterThan(0);
  }, 180_000);

  it('a pilot left to choose (auto) tries the QUIC addresses, finds none answers, and takes WebRTC through TURN', async () => {
    const { result, robot } = await watchThrough(
      { nat: 'symmetric', pilotNat: 'symmetric', backend: 'auto' },
      4,
    );
    expect(result.states).toContain('connected');
    expect(result.stats.backend).toBe('webrtc');
    expect(result.stats.path).toBe('relay');
    expect(painted(result)).toBeGreaterThan(40);
    expect(robot.sessions).toEqual([expect.objectContaining({ path: 'relay', backend: 'webrtc' })]);
  }, 180_000);

  it('TURN credentials past their lifetime are refused, and the page says it found no path', async () => {
    const { result, turn } = await watchThrough(
      { nat: 'symmetric', pilotNat: 'symmetric', turnClockAhead: '+2h' },
      20,
    );
    expect(result.states).not.toContain('connected');
    expect(result.stats.state).toBe('reconnecting');
    expect(result.reasons?.[0]).toMatch(
      /^WebRTC: no WebRTC connection within 15 s \(ICE found no path to the robot\)/,
    );
    expect(allocations(turn)).toEqual({ udp: 0, tls: 0 });
    expect(turn.log()).toMatch(/401/);
  }, 180_000);
});
