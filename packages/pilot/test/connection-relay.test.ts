/**
 * A `PilotConnection` through the relay, on fake time with a fake signalling WebSocket and fake
 * transports (the test plays svc-cloud and the robot): the relay port asked for with the offer's
 * token, the session on it, the move to a direct address the robot announces later, the old link
 * read until it lingered, and token renewal on both channels.
 */
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import type { ControlMessage, SignalServerMessage } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { PilotConnection, SignalSession } from '../src/index.js';
import { sensorDatagrams, settle, WELCOME } from './support/connection-harness.js';
import { fakeSignalSockets, tokenExpiringAt } from './support/fake-signal-socket.js';
import { fakeTransports } from './support/fake-transport.js';

const HASH = 'ab'.repeat(32);
const RELAY_OFFER = {
  type: 'offer',
  session_id: 'sess-1',
  robot_id: 'r1',
  role: 'driver',
  candidates: [{ address: '198.19.0.2', port: 4433, family: 'ipv4', kind: 'host' }],
  cert_hashes: [HASH],
  channels: [],
  relay: true,
  relay_grant: { host: '198.18.0.1', token: 'svr1.grant.mac', expires_in_ms: 60_000 },
} as const satisfies SignalServerMessage;

function setup(token: string | (() => Promise<string>) = 'tok', relay?: boolean | 'only') {
  const clock = new FakeClock(1000, Date.UTC(2026, 0, 1));
  const { sockets, WebSocketImpl } = fakeSignalSockets();
  const { made, create } = fakeTransports();
  const paths: string[] = [];
  const connection = new PilotConnection({
    signalUrl: 'wss://cloud.example/ws',
    robotId: 'r1',
    token,
    container: {} as HTMLElement,
    clock,
    random: () => 0.5,
    logger: memoryLogger(),
    createTransport: create,
    openSignalling: (options) => new SignalSession({ ...options, WebSocketImpl }),
    closeOnPageHide: false,
    onSensor: () => undefined,
    ...(relay !== undefined && { relay }),
  });
  const states: [string, string | undefined][] = [];
  connection.on('path', (path) => paths.push(path));
  connection.on('state', (state, detail) => states.push([state, detail]));
  return { clock, connection, sockets, made, paths, states, socket: () => sockets.at(-1)! };
}

type Setup = ReturnType<typeof setup>;

/** svc-cloud answers the pilot's `relay-allocate` with port 40001. */
async function relayAllocated(t: Setup) {
  t.socket().receive({
    type: 'relay-allocated',
    session_id: 'sess-1',
    host: '198.18.0.1',
    port: 40001,
    expires_in_ms: 60_000,
  });
  await settle();
}

/** Offer with a relay grant; the direct candidate stays silent, the relay answers; welcome. */
async function onTheRelay(t: Setup) {
  t.connection.connect();
  await settle();
  t.socket().authenticate('drive');
  t.socket().receive(RELAY_OFFER);
  await settle();
  expect(t.socket().sent.find((m) => m.type === 'relay-allocate')).toEqual({
    type: 'relay-allocate',
    session_id: 'sess-1',
    token: 'svr1.grant.mac',
  });
  await relayAllocated(t);
  t.clock.advance(200);
  await settle();
  const relay = t.made.find((x) => x.url === 'https://198.18.0.1:40001/')!;
  expect(relay).toBeDefined();
  relay.answer();
  await settle();
  relay.say({ ...WELCOME, session_id: 'sess-1', role: 'driver' });
  await settle();
  expect(t.connection.state).toBe('connected');
  expect(t.connection.path).toBe('relay');
  return relay;
}

describe('PilotConnection through the relay', () => {
  it("with relay: 'only' dials the relay at once, never the robot's own addresses, and stays on the relay when one is announced", async () => {
    const t = setup('tok', 'only');
    t.connection.connect();
    await settle();
    t.socket().authenticate('drive');
    t.socket().receive(RELAY_OFFER);
    await settle();
    await relayAllocated(t);
    // No head start to wait out: the relay is the only entrant.
    expect(t.made.map((x) => x.url)).toEqual(['https://198.18.0.1:40001/']);
    const relay = t.made[0]!;
    relay.answer();
    await settle();
    relay.say({ ...WELCOME, session_id: 'sess-1', role: 'driver' });
    await settle();
    expect(t.connection.path).toBe('relay');
    t.socket().receive({
      type: 'candidates',
      robot_id: 'r1',
      candidates: [{ address: '198.18.1.2', port: 4433, family: 'ipv4', kind: 'mapped' }],
      cert_hashes: [HASH],
    });
    await settle();
    t.clock.advance(10_000);
    await settle();
    expect(t.made.map((x) => x.url)).toEqual(['https://198.18.0.1:40001/']);
    expect(t.connection.path).toBe('relay');
    expect(t.paths).toEqual([]);
  });

  it("with relay: 'only' says why when the robot does not allow the relay, and dials nothing", async () => {
    const t = setup('tok', 'only');
    t.connection.connect();
    await settle();
    t.socket().authenticate('drive');
    const { relay_grant: _grant, ...direct } = RELAY_OFFER;
    t.socket().receive({ ...direct, relay: false });
    await settle();
    expect(t.made).toEqual([]);
    expect(t.states.at(-1)).toEqual([
      'reconnecting',
      expect.stringContaining(
        "does not allow the cloud relay (relay = false in its [agent] configuration), and this pilot uses the relay only (relay: 'only')",
      ),
    ]);
  });

  it('moves to a direct address the robot announces mid-session, and the session carries on', async () => {
    const t = setup();
    const relay = await onTheRelay(t);
    // The robot's port gets mapped: svc-cloud passes its new candidates on.
    t.socket().receive({
      type: 'candidates',
      robot_id: 'r1',
      candidates: [
        { address: '198.19.0.2', port: 4433, family: 'ipv4', kind: 'host' },
        { address: '198.18.1.2', port: 4433, family: 'ipv4', kind: 'mapped' },
      ],
      cert_hashes: [HASH],
    });
    await settle();
    for (let i = 0; i < 6 && t.made.every((x) => x.url !== 'https://198.18.1.2:4433/'); i++) {
      for (const x of t.made)
        if (x.url === 'https://198.19.0.2:4433/' && x.closedWith === undefined) x.refuse('unreachable');
      t.clock.advance(500);
      await settle();
    }
    const direct = t.made.find((x) => x.url === 'https://198.18.1.2:4433/');
    expect(direct).toBeDefined();
    direct!.answer();
    await settle();
    expect(direct!.sent[0]).toEqual({ type: 'hello', v: 1, token: 'tok', session_id: 'sess-1', move: true });
    // A sensor message still in flight on the relay arrives after the robot moved: it is taken.
    direct!.say({ type: 'moved', path: 'direct' });
    await settle();
    expect(t.connection.path).toBe('direct');
    expect(t.paths).toEqual(['direct']);
    const heard: string[] = [];
    t.connection.on('sensor', (_c, bytes) => heard.push(new TextDecoder().decode(bytes)));
    for (const d of sensorDatagrams('late on the relay', 0)) relay.datagram(d);
    for (const d of sensorDatagrams('first on the direct path', 1)) direct!.datagram(d);
    await settle();
    expect(heard).toEqual(['late on the relay', 'first on the direct path']);
    // Control goes out on the new link only; the relay is closed after its linger.
    t.connection.setQos('latency');
    expect(direct!.sent.at(-1)).toEqual({ type: 'set-qos', profile: 'latency' });
    expect(relay.sent.some((m) => m.type === 'set-qos')).toBe(false);
    expect(relay.closedWith).toBeUndefined();
    t.clock.advance(1000);
    await settle();
    expect(relay.closedWith).toEqual({ closeCode: 0, reason: 'moved to a direct path' });
    expect(t.connection.state).toBe('connected');
    expect(t.connection.stats().pathSwitches).toEqual([
      expect.objectContaining({ from: 'relay', to: 'direct', framesLost: 0 }),
    ]);
  });

  it('renews the token before it expires: to the robot on the control stream and to svc-cloud', async () => {
    const now = Date.UTC(2026, 0, 1) / 1000;
    const tokens = [tokenExpiringAt(now + 40), tokenExpiringAt(now + 80)];
    let minted = 0;
    const t = setup(async () => tokens[Math.min(minted++, tokens.length - 1)]!);
    const relay = await onTheRelay(t);
    // 3/4 of the first token's life (40 s) is 30 s; at least 20 s before its end means 20 s.
    t.clock.advance(19_000);
    await settle();
    expect(relay.sent.some((m) => m.type === 'renew')).toBe(false);
    t.clock.advance(1500);
    await settle();
    expect(relay.sent.filter((m) => m.type === 'renew')).toEqual([{ type: 'renew', token: tokens[1] }]);
    expect(t.socket().sent.filter((m) => m.type === 'renew')).toEqual([
      { type: 'renew', session_id: 'sess-1', token: tokens[1] },
    ]);
    relay.say({ type: 'renewed', exp: now + 80 } as ControlMessage);
    t.socket().receive({ type: 'renewed', session_id: 'sess-1', exp: now + 80 });
    await settle();
    expect(t.connection.state).toBe('connected');
  });
});
