/**
 * Handover as a {@link PilotConnection} does it, on fake time with a fake signalling WebSocket and
 * fake transports: the test plays svc-cloud and the robot. The signalling session stays open for
 * the session's life; the control calls need the right role and signalling; the robot's `role` line
 * changes what the session may send.
 */
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import { type AssembledFrame, type ControlMessage, Reassembler } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { PilotConnection, type PilotConnectionEvents } from '../src/index.js';
import { settle, WELCOME } from './support/connection-harness.js';
import { SIGNAL_OFFER, signalledConnection } from './support/fake-signal-socket.js';
import { type FakeTransport, fakeTransports } from './support/fake-transport.js';

const ALICE = { id: 'user:alice', name: 'Alice' };
const BOB = { id: 'user:bob', name: 'Bob' };

type Heard = [keyof PilotConnectionEvents, unknown[]];

function setup() {
  const { clock, connection, sockets, made, socket } = signalledConnection();
  const heard: Heard[] = [];
  for (const event of [
    'state',
    'role',
    'driver',
    'control-request',
    'control-pending',
    'control-result',
    'control-error',
    'handover',
  ] as const) {
    connection.on(event, (...args: unknown[]) => heard.push([event, args]));
  }
  const transport = () => {
    const t = made.at(-1);
    if (t === undefined) throw new Error('no transport');
    return t;
  };
  return { clock, connection, heard, sockets, socket, transport };
}

type Setup = ReturnType<typeof setup>;

/**
 * Connected as `role` through signalling (offer, driver news) and the robot (welcome, the first
 * pong so commands can go out).
 */
async function connected(t: Setup, role: 'driver' | 'observer', scope: 'drive' | 'observe' = 'drive') {
  t.connection.connect();
  await settle();
  t.socket().authenticate(scope);
  t.socket().receive({ ...SIGNAL_OFFER, role });
  t.socket().receive({
    type: 'driver',
    robot_id: 'r1',
    session_id: role === 'driver' ? 'sess-1' : 'sess-0',
    user: ALICE,
  });
  await settle();
  const transport = t.transport();
  transport.answer();
  await settle();
  transport.say({ ...WELCOME, session_id: 'sess-1', role });
  await settle();
  expect(t.connection.state).toBe('connected');
  const ping = transport.sent.at(-1) as Extract<ControlMessage, { type: 'ping' }>;
  transport.say({ type: 'pong', t: ping.t, robot_time: 50_000 });
  await settle();
  return transport;
}

function commandsSent(transport: FakeTransport): string[] {
  const frames: AssembledFrame[] = [];
  const reassembler = new Reassembler({ channel: 3, onFrame: (frame) => frames.push(frame) });
  for (const datagram of transport.sentDatagrams) reassembler.handleDatagram(datagram, 0);
  return frames.map((f) => new TextDecoder().decode(f.data));
}

const events = (t: Setup, name: keyof PilotConnectionEvents) =>
  t.heard.filter(([e]) => e === name).map(([, args]) => args);

describe('PilotConnection: the signalling session', () => {
  it('stays open while connected, says who drives, and handover is available', async () => {
    const t = setup();
    await connected(t, 'observer');
    expect(t.sockets).toHaveLength(1);
    expect(t.socket().closedWith).toBeUndefined();
    expect(t.connection.driver).toEqual({ sessionId: 'sess-0', user: ALICE, self: false });
    expect(events(t, 'driver')).toEqual([[{ sessionId: 'sess-0', user: ALICE, self: false }]]);
    expect(t.connection.handover).toEqual({ available: true });
    expect(events(t, 'handover').at(-1)).toEqual([{ available: true }]);
  });

  it('the session ends: the signalling connection is closed with it', async () => {
    const t = setup();
    await connected(t, 'observer');
    t.connection.close();
    expect(t.socket().closedWith).toBe(1000);
    expect(t.connection.handover).toMatchObject({ available: false, reason: 'closed' });
  });

  it('a signalling drop leaves the direct session up and says handover is unavailable', async () => {
    const t = setup();
    await connected(t, 'observer');
    t.socket().remoteClose(1006);
    expect(t.connection.state).toBe('connected');
    expect(t.connection.handover).toMatchObject({ available: false, reason: 'signalling-lost' });
    expect(t.connection.requestControl()).toBe(false);
    expect(events(t, 'handover').at(-1)?.[0]).toMatchObject({ available: false, reason: 'signalling-lost' });
  });
});

describe('PilotConnection: the control calls', () => {
  it('an observer with a drive token may request and take control; it may not answer or release', async () => {
    const t = setup();
    await connected(t, 'observer');
    expect(t.connection.answerControl('q1', true)).toBe(false);
    expect(t.connection.releaseControl()).toBe(false);
    expect(t.connection.requestControl()).toBe(true);
    expect(t.connection.takeControl()).toBe(true);
    expect(t.socket().sent.slice(2)).toEqual([
      { type: 'request-control', session_id: 'sess-1' },
      { type: 'take-control', session_id: 'sess-1' },
    ]);
    t.socket().receive({
      type: 'control-pending',
      request_id: 'q1',
      session_id: 'sess-1',
      driver: ALICE,
      expires_in_ms: 10_000,
    });
    t.socket().receive({
      type: 'control-result',
      request_id: 'q2',
      session_id: 'sess-1',
      outcome: 'denied',
      message: 'taking over needs the admin or owner role in the robot org',
    });
    expect(events(t, 'control-pending')).toEqual([[{ requestId: 'q1', driver: ALICE, expiresInMs: 10_000 }]]);
    expect(events(t, 'control-result')).toEqual([
      [
        {
          requestId: 'q2',
          outcome: 'denied',
          message: 'taking over needs the admin or owner role in the robot org',
        },
      ],
    ]);
  });

  it('an observe-only token may not ask: nothing is sent', async () => {
    const t = setup();
    await connected(t, 'observer', 'observe');
    expect(t.connection.requestControl()).toBe(false);
    expect(t.connection.takeControl()).toBe(false);
    expect(t.socket().sentTypes()).toEqual(['auth', 'connect']);
  });

  it('the driver is asked, answers within the time, and may release; it may not request', async () => {
    const t = setup();
    await connected(t, 'driver');
    expect(t.connection.driver).toMatchObject({ self: true });
    expect(t.connection.requestControl()).toBe(false);
    t.socket().receive({
      type: 'control-request',
      request_id: 'q1',
      session_id: 'sess-1',
      user: BOB,
      expires_in_ms: 10_000,
    });
    expect(events(t, 'control-request')).toEqual([[{ requestId: 'q1', user: BOB, expiresInMs: 10_000 }]]);
    t.clock.advance(3000);
    expect(t.connection.controlRequest).toEqual({ requestId: 'q1', user: BOB, expiresInMs: 7000 });
    expect(t.connection.answerControl('q1', true)).toBe(true);
    expect(t.connection.releaseControl()).toBe(true);
    expect(
      t
        .socket()
        .sent.slice(2)
        .filter((m) => m.type !== 'heartbeat'),
    ).toEqual([
      { type: 'answer-control', request_id: 'q1', grant: true },
      { type: 'release-control', session_id: 'sess-1' },
    ]);
  });

  it('without a signalling session (a given offer) every call is false and handover says why', async () => {
    const { create } = fakeTransports();
    const connection = new PilotConnection({
      offer: { urls: ['https://10.0.0.1:4433/'], certificateHashes: ['ab'.repeat(32)] },
      token: 'tok',
      container: {} as HTMLElement,
      clock: new FakeClock(0),
      logger: memoryLogger(),
      createTransport: create,
      closeOnPageHide: false,
    });
    expect(connection.handover).toMatchObject({ available: false, reason: 'no-signalling' });
    expect(connection.requestControl()).toBe(false);
    expect(connection.takeControl()).toBe(false);
    expect(connection.releaseControl()).toBe(false);
    expect(connection.answerControl('q', true)).toBe(false);
    expect(connection.driver).toBeUndefined();
  });
});

describe('PilotConnection: the robot changes the role', () => {
  it('driver → observer: the commands stop; observer → driver: they go out; each change is an event and a state detail', async () => {
    const t = setup();
    const transport = await connected(t, 'driver');
    expect(t.connection.sendCommand('drive', '{"n":1}')).toBe(true);

    transport.say({ type: 'role', role: 'observer', reason: 'handed over to Bob' });
    await settle();
    expect(t.connection.role).toBe('observer');
    expect(t.connection.sendCommand('drive', '{"n":2}')).toBe(false);
    // Observing, a profile choice is only this page's presentation: nothing goes to the robot.
    const before = transport.sent.length;
    expect(t.connection.setQos('quality')).toBe(true);
    expect(transport.sent.slice(before).filter((m) => m.type === 'set-qos')).toEqual([]);
    expect(events(t, 'role')).toEqual([['observer', 'handed over to Bob']]);
    expect(events(t, 'state').at(-1)).toEqual([
      'connected',
      'now observing: handed over to Bob',
      expect.objectContaining({ code: 'driver-slot-held' }),
    ]);

    transport.say({ type: 'role', role: 'driver' });
    await settle();
    expect(t.connection.role).toBe('driver');
    expect(t.connection.sendCommand('drive', '{"n":3}')).toBe(true);
    expect(events(t, 'state').at(-1)).toEqual(['connected', 'now driving']);
    expect(commandsSent(transport)).toEqual(['{"n":1}', '{"n":3}']);
  });

  it('a role line that changes nothing is not news', async () => {
    const t = setup();
    const transport = await connected(t, 'driver');
    const before = t.heard.length;
    transport.say({ type: 'role', role: 'driver' });
    await settle();
    expect(t.heard.slice(before)).toEqual([]);
  });
});
