import { createSocket, type Socket } from 'node:dgram';
import { silentLogger } from '@svc/runtime';
import { FakeClock } from '@svc/runtime/testing';
import { decodeRelayControl, encodeRelayControl, isWireError, type RelayControl } from '@svc/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { RelayServer, RelayTokens } from '../src/relay/index.js';

/**
 * The relay's forwarding and its rules, with real UDP sockets on loopback: a "pilot" socket and a
 * "robot" socket stand in for the two QUIC endpoints (the relay never looks inside their packets).
 */

const ROBOT = 'amr-7';
const SESSION = 'session-1';
const RATE = { toPilot: 4_000_000, toRobot: 1_000_000 };

interface Peer {
  readonly socket: Socket;
  readonly port: number;
  readonly received: Buffer[];
  next(): Promise<Buffer>;
  send(bytes: Uint8Array, port: number): void;
}

const opened: { close(): unknown }[] = [];

async function peer(): Promise<Peer> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const received: Buffer[] = [];
  const waiters: ((b: Buffer) => void)[] = [];
  socket.on('message', (msg) => {
    const waiter = waiters.shift();
    if (waiter !== undefined) waiter(msg);
    else received.push(msg);
  });
  opened.push({ close: () => socket.close() });
  return {
    socket,
    port: socket.address().port,
    received,
    next: () =>
      new Promise<Buffer>((resolve, reject) => {
        const queued = received.shift();
        if (queued !== undefined) {
          resolve(queued);
          return;
        }
        const timer = setTimeout(() => reject(new Error('nothing arrived within 2 s')), 2000);
        waiters.push((b) => {
          clearTimeout(timer);
          resolve(b);
        });
      }),
    send: (bytes, port) => socket.send(bytes, port, '127.0.0.1'),
  };
}

/** Nothing arrives at `p` for `ms` (real time: the packets travel on real sockets). */
async function silence(p: Peer, ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
  expect(p.received.map((b) => b.toString())).toEqual([]);
}

function relay(clock: FakeClock, live: () => boolean = () => true): RelayServer {
  const server = new RelayServer({
    publicHost: '127.0.0.1',
    bindHost: '127.0.0.1',
    clock,
    logger: silentLogger,
    isSessionLive: () => live(),
  });
  opened.push(server);
  return server;
}

/** A QUIC-looking packet (first byte with the fixed bit) carrying `text`. */
function quic(text: string): Buffer {
  return Buffer.concat([Buffer.from([0x40]), Buffer.from(text)]);
}

async function attach(robot: Peer, port: number, token: string): Promise<RelayControl> {
  robot.send(encodeRelayControl({ type: 'attach', token }), port);
  const answer = decodeRelayControl(await robot.next());
  if (isWireError(answer)) throw answer;
  return answer;
}

afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

describe('the relay', () => {
  it('forwards both ways once the robot attached, holding the pilot’s first packets meanwhile', async () => {
    const clock = new FakeClock();
    const server = relay(clock);
    const grant = server.grant(SESSION, ROBOT, clock.wallNow() + 60_000);
    const allocation = await server.allocate(grant.token, {
      sessionId: SESSION,
      robotId: ROBOT,
      expiresAt: clock.wallNow() + 60_000,
      rate: RATE,
    });
    if (!allocation.ok) throw new Error(allocation.message);
    const pilot = await peer();
    const robot = await peer();
    pilot.send(quic('initial'), allocation.pilotPort);
    await silence(robot, 50);
    expect(await attach(robot, allocation.robotPort, allocation.robotToken)).toEqual({
      type: 'attached',
      expiresInMs: 60_000,
    });
    expect((await robot.next()).toString()).toBe(quic('initial').toString());
    robot.send(quic('handshake'), allocation.robotPort);
    expect((await pilot.next()).toString()).toBe(quic('handshake').toString());
    pilot.send(quic('data'), allocation.pilotPort);
    expect((await robot.next()).toString()).toBe(quic('data').toString());
    // The attach is answered again (its answer may be lost), without a second attachment.
    expect(await attach(robot, allocation.robotPort, allocation.robotToken)).toMatchObject({
      type: 'attached',
    });
    expect(server.list()[0]).toMatchObject({ attached: true, pilot: true });
  });

  it('refuses a pilot token for another session, an expired one, a robot’s, and one used twice', async () => {
    const clock = new FakeClock();
    const server = relay(clock);
    const request = { sessionId: SESSION, robotId: ROBOT, expiresAt: clock.wallNow() + 60_000, rate: RATE };
    const other = server.grant('session-2', ROBOT, clock.wallNow() + 60_000);
    expect(await server.allocate(other.token, request)).toMatchObject({ ok: false, code: 'wrong-session' });
    const forged = new RelayTokens(() => clock.wallNow()).mint({
      sid: SESSION,
      rid: ROBOT,
      party: 'pilot',
      exp: clock.wallNow() + 1000,
    });
    expect(await server.allocate(forged, request)).toMatchObject({ ok: false, code: 'bad-token' });
    const stale = server.grant(SESSION, ROBOT, clock.wallNow() + 60_000);
    clock.advance(61_000);
    expect(
      await server.allocate(stale.token, { ...request, expiresAt: clock.wallNow() + 60_000 }),
    ).toMatchObject({
      ok: false,
      code: 'expired',
    });
    const good = server.grant(SESSION, ROBOT, clock.wallNow() + 60_000);
    const made = await server.allocate(good.token, { ...request, expiresAt: clock.wallNow() + 60_000 });
    expect(made.ok).toBe(true);
    if (!made.ok) return;
    expect(
      await server.allocate(good.token, { ...request, expiresAt: clock.wallNow() + 60_000 }),
    ).toMatchObject({
      ok: false,
      code: 'replayed',
    });
    // The robot's token opens nothing for a pilot.
    expect(await server.allocate(made.robotToken, request)).toMatchObject({ ok: false, code: 'bad-token' });
  });

  it('refuses a robot attach with another session’s token, a replayed one, and a stranger’s packets', async () => {
    const clock = new FakeClock();
    const server = relay(clock);
    const open = async (sessionId: string) => {
      const grant = server.grant(sessionId, ROBOT, clock.wallNow() + 60_000);
      const made = await server.allocate(grant.token, {
        sessionId,
        robotId: ROBOT,
        expiresAt: clock.wallNow() + 60_000,
        rate: RATE,
      });
      if (!made.ok) throw new Error(made.message);
      return made;
    };
    const first = await open(SESSION);
    const second = await open('session-2');
    const robot = await peer();
    expect(await attach(robot, first.robotPort, second.robotToken)).toMatchObject({
      type: 'refused',
      code: 'wrong-session',
    });
    expect(await attach(robot, first.robotPort, first.pilotPort.toString())).toMatchObject({
      type: 'refused',
      code: 'bad-token',
    });
    expect(await attach(robot, first.robotPort, first.robotToken)).toMatchObject({ type: 'attached' });
    const thief = await peer();
    expect(await attach(thief, first.robotPort, first.robotToken)).toMatchObject({
      type: 'refused',
      code: 'replayed',
    });
    // The thief's packets go nowhere; the pilot hears only the robot.
    const pilot = await peer();
    pilot.send(quic('hello'), first.pilotPort);
    expect((await robot.next()).toString()).toBe(quic('hello').toString());
    thief.send(quic('injected'), first.robotPort);
    robot.send(quic('answer'), first.robotPort);
    expect((await pilot.next()).toString()).toBe(quic('answer').toString());
    await silence(pilot, 50);
    // A second pilot address cannot use the port either.
    const other = await peer();
    other.send(quic('other pilot'), first.pilotPort);
    await silence(robot, 50);
    expect(server.list().find((a) => a.sessionId === SESSION)?.stats.strangers).toBe(2);
  });

  it('stops forwarding within a sweep when the session ends, and when its token expires unrenewed', async () => {
    const clock = new FakeClock();
    let live = true;
    const server = relay(clock, () => live);
    const made = async (sessionId: string, lifeMs: number) => {
      const grant = server.grant(sessionId, ROBOT, clock.wallNow() + lifeMs);
      const result = await server.allocate(grant.token, {
        sessionId,
        robotId: ROBOT,
        expiresAt: clock.wallNow() + lifeMs,
        rate: RATE,
      });
      if (!result.ok) throw new Error(result.message);
      return result;
    };
    const a = await made('a', 10_000);
    const pilot = await peer();
    const robot = await peer();
    await attach(robot, a.robotPort, a.robotToken);
    pilot.send(quic('one'), a.pilotPort);
    expect((await robot.next()).toString()).toBe(quic('one').toString());
    // Renewed: it outlives the first token.
    expect(server.renew('a', clock.wallNow() + 20_000)).toBe(true);
    clock.advance(10_250);
    pilot.send(quic('two'), a.pilotPort);
    expect((await robot.next()).toString()).toBe(quic('two').toString());
    clock.advance(10_000);
    await new Promise((r) => setTimeout(r, 20));
    expect(server.has('a')).toBe(false);
    pilot.send(quic('three'), a.pilotPort);
    await silence(robot, 50);

    const b = await made('b', 60_000);
    await attach(robot, b.robotPort, b.robotToken);
    pilot.send(quic('four'), b.pilotPort);
    expect((await robot.next()).toString()).toBe(quic('four').toString());
    live = false; // revoked, left, or the robot deleted
    clock.advance(250);
    await new Promise((r) => setTimeout(r, 20));
    expect(server.has('b')).toBe(false);
    pilot.send(quic('five'), b.pilotPort);
    await silence(robot, 50);
  });

  it('drops what a session sends beyond its rate', async () => {
    const clock = new FakeClock();
    const server = relay(clock);
    const grant = server.grant(SESSION, ROBOT, clock.wallNow() + 60_000);
    const made = await server.allocate(grant.token, {
      sessionId: SESSION,
      robotId: ROBOT,
      expiresAt: clock.wallNow() + 60_000,
      rate: { toPilot: 100_000, toRobot: 100_000 },
    });
    if (!made.ok) throw new Error(made.message);
    const pilot = await peer();
    const robot = await peer();
    await attach(robot, made.robotPort, made.robotToken);
    pilot.send(quic('start'), made.pilotPort);
    await robot.next();
    // The clock stands still: the bucket holds 256 KiB, so 300 packets of 1200 bytes overflow it.
    const packet = Buffer.concat([Buffer.from([0x40]), Buffer.alloc(1199, 1)]);
    for (let i = 0; i < 300; i++) robot.send(packet, made.robotPort);
    await expect.poll(() => server.list()[0]?.stats.overRate ?? 0, { timeout: 2000 }).toBeGreaterThan(0);
    const { packetsToPilot } = server.list()[0]!.stats;
    expect(packetsToPilot).toBeLessThanOrEqual(Math.ceil((256 * 1024) / 1200));
  });
});
