/**
 * Operator safety end to end: a real svc-cloud, a real `svcd` with a command channel and publisher
 * control on UDP sockets of the test (the robot's motor controller and its publisher), the pilot
 * SDK in headless Chromium tabs the test closes, reloads and cuts off (the link shaper).
 */
import { createSocket } from 'node:dgram';
import { LinkShaper } from '@svc/shaper';
import { decodePublisherControl, type PublisherControlMessage } from '@svc/wire';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, type FleetRobot, startFleet } from './support/fleet.js';
import { type PilotBrowser, type PilotTab, startPilotBrowser } from './support/pilot-tab.js';

let fleet: Fleet;
let browser: PilotBrowser;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  [fleet, browser] = await Promise.all([startFleet(), startPilotBrowser()]);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await browser?.close();
  await fleet?.stop();
});

/** A UDP socket of the test that records every datagram, and waits for one that matches. */
async function udpRecorder() {
  const socket = createSocket('udp4');
  const received: Buffer[] = [];
  const waiters = new Set<() => void>();
  socket.on('message', (message) => {
    received.push(message);
    for (const wake of [...waiters]) wake();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return {
    port: socket.address().port,
    received,
    /** Resolves with the first datagram (since the start) that `match` accepts. */
    until<T>(match: (datagram: Buffer) => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const check = () => {
          for (const datagram of received) {
            const found = match(datagram);
            if (found !== undefined) {
              waiters.delete(check);
              clearTimeout(timer);
              resolve(found);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`never received ${what}; got ${received.map((d) => d.toString()).join(' | ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

type Recorder = Awaited<ReturnType<typeof udpRecorder>>;

/** The `session` datagram of `sessionId` in `state`, once publisher control sent it. */
function sessionEvent(publisher: Recorder, sessionId: string, state: 'started' | 'ended') {
  return publisher.until((datagram) => {
    const message: PublisherControlMessage = decodePublisherControl(datagram);
    return message.type === 'session' && message.session_id === sessionId && message.state === state
      ? message
      : undefined;
  }, `session ${state} for ${sessionId}`);
}

/** A robot with one command channel (`drive`, id 1) and publisher control, both to sockets of the test. */
async function robot(robotId: string) {
  const motors = await udpRecorder();
  const publisher = await udpRecorder();
  const r: FleetRobot = await fleet.robot(
    robotId,
    [
      '[[channel]]',
      'kind = "command"',
      'name = "drive"',
      `output = "udp://127.0.0.1:${motors.port}"`,
      'codec = "json"',
    ],
    { publisherControl: `127.0.0.1:${publisher.port}` },
  );
  cleanups.push(() => r.remove());
  return { robot: r, motors, publisher };
}

async function tab(): Promise<PilotTab> {
  return browser.open();
}

/** A `drive` token minted with an API key of alice's org: another person, as the robot sees it (`sub` `key:<id>`). */
async function otherPersonsToken(robotId: string): Promise<string> {
  const key = await fleet.cloud.call('POST', `/api/v1/orgs/${fleet.alice.orgId}/api-keys`, {
    token: fleet.alice.accessToken,
    body: { name: `minter-${robotId}`, scopes: ['sessions:mint'] },
  });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  const minted = await fleet.cloud.call('POST', '/api/v1/session-tokens', {
    token: key.body.key as string,
    body: { robotId, scope: 'drive' },
  });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  return minted.body.token as string;
}

describe('operator safety, end to end', () => {
  it("the driver's page closed: the robot's publisher control receives session ended", async () => {
    const { robot: r, publisher } = await robot('safety-close');
    const pilot = await tab();
    const settled = await pilot.call('connect', await r.token('drive'), {
      signalUrl: fleet.cloud.signalUrl,
      robotId: 'safety-close',
    });
    expect(settled).toMatchObject({ state: 'connected', role: 'driver' });
    await sessionEvent(publisher, settled.sessionId!, 'started');

    await pilot.page.close();
    const ended = await sessionEvent(publisher, settled.sessionId!, 'ended');
    expect(ended).toMatchObject({ role: 'driver', sessions: 0 });
    // The page said why as it went (pagehide), rather than falling silent.
    await r.daemon.waitForLog('pilot said bye: page closed');
  });

  it("the driver's link cut (link shaper): the robot's publisher control receives session ended", async () => {
    const { robot: r, publisher } = await robot('safety-cut');
    const shaper = await LinkShaper.start({
      listen: { address: '127.0.0.1', port: 0 },
      target: { address: '127.0.0.1', port: r.files.quicPort },
      down: {},
      seed: 7,
    });
    cleanups.push(() => shaper.close());
    const token = await r.token('drive');
    const pilot = await tab();
    const certificateHashes = await pilot.call('hashes', fleet.cloud.signalUrl, 'safety-cut', token);
    const settled = await pilot.call('connect', token, {
      offer: { urls: [`https://127.0.0.1:${shaper.address().port}/`], certificateHashes },
    });
    expect(settled).toMatchObject({ state: 'connected', role: 'driver' });
    await sessionEvent(publisher, settled.sessionId!, 'started');

    shaper.update({ up: { loss: 1 }, down: { loss: 1 } });
    const ended = await sessionEvent(publisher, settled.sessionId!, 'ended');
    expect(ended).toMatchObject({ role: 'driver', sessions: 0 });
    await r.daemon.waitForLog('the pilot went silent; ending its session');
    await pilot.call('close');
  });

  it('a reload inside the driver grace resumes driving; another person drives only once the grace is over', async () => {
    const { robot: r, motors, publisher } = await robot('safety-grace');
    const source = { signalUrl: fleet.cloud.signalUrl, robotId: 'safety-grace' };
    // The page keeps its token across a reload (session storage), so it asks again with the same one.
    const token = await r.token('drive');
    const pilot = await tab();
    const first = await pilot.call('connect', token, source);
    expect(first).toMatchObject({ state: 'connected', role: 'driver' });

    await pilot.reload();
    await sessionEvent(publisher, first.sessionId!, 'ended');
    const resumed = await pilot.call('connect', token, source);
    expect(resumed).toMatchObject({ state: 'connected', role: 'driver' });
    expect(resumed.sessionId).not.toBe(first.sessionId);
    expect(await pilot.call('send', '{"after":"reload"}')).toBe(true);
    await motors.until(
      (d) => (d.toString() === '{"after":"reload"}' ? true : undefined),
      'the resumed command',
    );

    // The driver leaves; another person comes within the grace: observer, told the slot is held.
    await pilot.page.close();
    await sessionEvent(publisher, resumed.sessionId!, 'ended');
    const bobToken = await otherPersonsToken('safety-grace');
    const bob = await tab();
    const early = await bob.call('connect', bobToken, source);
    expect(early).toMatchObject({ state: 'connected', role: 'observer' });
    expect(early.refusal?.code).toBe('driver-slot-held');
    expect(await bob.call('send', '{"bob":"early"}')).toBe(false);

    // Once the grace is over (5 s by default) a new session of his drives.
    await expect
      .poll(async () => (await bob.call('connect', bobToken, source)).role, {
        timeout: 30_000,
        interval: 1000,
      })
      .toBe('driver');
    expect(await bob.call('send', '{"bob":"drives"}')).toBe(true);
    await motors.until((d) => (d.toString() === '{"bob":"drives"}' ? true : undefined), "bob's command");
    expect(motors.received.map((d) => d.toString())).not.toContain('{"bob":"early"}');
    await bob.call('close');
  });

  it('commands reach the command port byte-identical; stale and out-of-order ones (forged send times) are dropped and counted', async () => {
    const { robot: r, motors } = await robot('safety-commands');
    const pilot = await tab();
    const settled = await pilot.call('connect', await r.token('drive'), {
      signalUrl: fleet.cloud.signalUrl,
      robotId: 'safety-commands',
    });
    expect(settled).toMatchObject({ state: 'connected', role: 'driver' });

    const payloads = [
      '{"linear":0.5,"angular":-0.25}',
      '{ "v": 1, "cmd": "stop", "note": "ünïcødé ✓" }',
      JSON.stringify({ pad: 'x'.repeat(3000) }),
    ];
    for (const payload of payloads) {
      expect(await pilot.call('send', payload)).toBe(true);
      await motors.until((d) => (d.toString() === payload ? true : undefined), 'the command');
    }
    // Exactly the bytes the page sent: no framing, no send time, no sequence number leaks through.
    expect(motors.received.slice(0, 3)).toEqual(payloads.map((p) => Buffer.from(p, 'utf8')));

    const now = (await pilot.call('robotNow'))!;
    expect(await pilot.call('send', '{"forged":"stale"}', { sentAtRobotMs: now - 2000 })).toBe(true);
    expect(await pilot.call('send', '{"forged":"A"}', { sentAtRobotMs: now })).toBe(true);
    expect(await pilot.call('send', '{"forged":"before A"}', { sentAtRobotMs: now - 100 })).toBe(true);
    expect(await pilot.call('send', '{"after":"drops"}')).toBe(true);
    await motors.until((d) => (d.toString() === '{"after":"drops"}' ? true : undefined), 'the last command');
    expect(motors.received.slice(3).map((d) => d.toString())).toEqual([
      '{"forged":"A"}',
      '{"after":"drops"}',
    ]);

    // The robot's counters reach the pilot in agent-stats, once a second.
    await expect
      .poll(async () => (await pilot.call('stats')).robot['1'], { timeout: 10_000 })
      .toMatchObject({ commands_sent: 5, commands_dropped_stale: 1, commands_dropped_out_of_order: 1 });
    await pilot.call('close');
  });
});
