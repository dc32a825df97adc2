/**
 * The pilot's signalling session on fake time with a fake WebSocket standing in for svc-cloud: it
 * stays open after the offer, keeps the heartbeat, turns the driver-slot messages into events and
 * the calls into messages, and after a drop makes the connection again without a new offer.
 */
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import {
  type HandoverAvailability,
  isOfferError,
  type RobotOffer,
  requestOffer,
  SignalSession,
  type SignalSessionEvents,
} from '../src/index.js';
import { fakeSignalSockets, SIGNAL_OFFER, tokenExpiringAt } from './support/fake-signal-socket.js';

const HEARTBEAT_MS = 5000;
const ALICE = { id: 'user:alice', name: 'Alice' };
const BOB = { id: 'user:bob', name: 'Bob' };

function setup(token = 'tok') {
  const clock = new FakeClock(1000);
  const { sockets, WebSocketImpl } = fakeSignalSockets();
  const session = new SignalSession({
    signalUrl: 'wss://cloud.example/ws',
    robotId: 'r1',
    token,
    clock,
    WebSocketImpl,
    random: () => 0.5,
    logger: memoryLogger(),
  });
  const heard: [keyof SignalSessionEvents, unknown][] = [];
  for (const event of [
    'handover',
    'driver',
    'control-request',
    'control-pending',
    'control-result',
    'control-error',
  ] as const) {
    session.on(event, (value: unknown) => heard.push([event, value]));
  }
  const handover = () => heard.filter(([e]) => e === 'handover').map(([, v]) => v as HandoverAvailability);
  const socket = (i = -1) => {
    const s = sockets.at(i);
    if (s === undefined) throw new Error('no socket');
    return s;
  };
  return { clock, sockets, session, heard, handover, socket };
}

/** Up to the offer, which the server follows with the driver news, as svc-cloud does. */
async function offered(
  t: ReturnType<typeof setup>,
  scope: 'drive' | 'observe' = 'drive',
): Promise<RobotOffer> {
  const offer = t.session.offer();
  t.socket().authenticate(scope, HEARTBEAT_MS);
  t.socket().receive(SIGNAL_OFFER);
  t.socket().receive({ type: 'driver', robot_id: 'r1', session_id: 'sess-0', user: ALICE });
  return offer;
}

describe('SignalSession: after the offer', () => {
  it('answers the challenge with the token, connects, and keeps the WebSocket open after the offer', async () => {
    const t = setup();
    const offer = await offered(t);
    expect(offer).toMatchObject({ sessionId: 'sess-1', role: 'observer', urls: ['https://10.0.0.1:4433/'] });
    expect(t.socket().sent).toEqual([
      { type: 'auth', v: 2, token: 'tok' },
      { type: 'connect', robot_id: 'r1' },
    ]);
    expect(t.socket().closedWith).toBeUndefined();
    expect(t.session.availability).toEqual({ available: true });
    expect(t.session.scope).toBe('drive');
  });

  it('sends a heartbeat every auth-ok.heartbeat_ms while the server answers', async () => {
    const t = setup();
    await offered(t);
    t.clock.advance(HEARTBEAT_MS);
    t.socket().receive({ type: 'heartbeat-ack', t: 1 });
    t.clock.advance(HEARTBEAT_MS);
    t.socket().receive({ type: 'heartbeat-ack', t: 2 });
    t.clock.advance(HEARTBEAT_MS);
    expect(t.socket().sentTypes()).toEqual(['auth', 'connect', 'heartbeat', 'heartbeat', 'heartbeat']);
    expect(t.socket().sent.at(-1)).toEqual({ type: 'heartbeat', t: 1000 + 3 * HEARTBEAT_MS });
    expect(t.sockets).toHaveLength(1);
  });

  it('tells who drives, and whether it is this session', async () => {
    const t = setup();
    await offered(t);
    expect(t.session.driver).toEqual({ sessionId: 'sess-0', user: ALICE, self: false });
    t.socket().receive({ type: 'driver', robot_id: 'r1', session_id: 'sess-1', user: BOB });
    expect(t.session.driver).toEqual({ sessionId: 'sess-1', user: BOB, self: true });
    t.socket().receive({ type: 'driver', robot_id: 'r1', session_id: null, user: null });
    expect(t.session.driver).toBeNull();
    expect(t.heard.filter(([e]) => e === 'driver').map(([, v]) => v)).toEqual([
      { sessionId: 'sess-0', user: ALICE, self: false },
      { sessionId: 'sess-1', user: BOB, self: true },
      null,
    ]);
  });

  it('sends request-control, take-control and release-control naming its own session', async () => {
    const t = setup();
    await offered(t);
    expect(t.session.requestControl()).toBe(true);
    expect(t.session.takeControl()).toBe(true);
    expect(t.session.releaseControl()).toBe(true);
    expect(t.socket().sent.slice(2)).toEqual([
      { type: 'request-control', session_id: 'sess-1' },
      { type: 'take-control', session_id: 'sess-1' },
      { type: 'release-control', session_id: 'sess-1' },
    ]);
  });

  it('turns control-pending and control-result into events; news of another session is not its own', async () => {
    const t = setup();
    await offered(t);
    t.socket().receive({
      type: 'control-pending',
      request_id: 'q1',
      session_id: 'sess-1',
      driver: ALICE,
      expires_in_ms: 10_000,
    });
    t.socket().receive({
      type: 'control-result',
      request_id: 'q1',
      session_id: 'sess-1',
      outcome: 'refused',
      message: 'the driver refused; you may ask again in 10 s',
    });
    t.socket().receive({
      type: 'control-result',
      request_id: 'q2',
      session_id: 'sess-9',
      outcome: 'granted',
      message: 'not for us',
    });
    t.socket().receive({ type: 'error', code: 'not-allowed', message: 'no control request q7 is waiting' });
    expect(t.heard.filter(([e]) => e.startsWith('control'))).toEqual([
      ['control-pending', { requestId: 'q1', driver: ALICE, expiresInMs: 10_000 }],
      [
        'control-result',
        { requestId: 'q1', outcome: 'refused', message: 'the driver refused; you may ask again in 10 s' },
      ],
      ['control-error', 'no control request q7 is waiting'],
    ]);
  });

  it('answers a control-request once, within its time; an expired or unknown request is not answered', async () => {
    const t = setup();
    await offered(t);
    t.socket().receive({ type: 'driver', robot_id: 'r1', session_id: 'sess-1', user: ALICE });
    const ask = (id: string) =>
      t.socket().receive({
        type: 'control-request',
        request_id: id,
        session_id: 'sess-1',
        user: BOB,
        expires_in_ms: 10_000,
      });
    ask('q1');
    expect(t.heard.at(-1)).toEqual(['control-request', { requestId: 'q1', user: BOB, expiresInMs: 10_000 }]);
    t.clock.advance(4000);
    expect(t.session.asked).toEqual({ requestId: 'q1', user: BOB, expiresInMs: 6000 });
    expect(t.session.answerControl('q-unknown', true)).toBe(false);
    expect(t.session.answerControl('q1', false)).toBe(true);
    expect(t.session.answerControl('q1', true)).toBe(false);
    ask('q2');
    t.clock.advance(10_000);
    expect(t.session.asked).toBeUndefined();
    expect(t.session.answerControl('q2', true)).toBe(false);
    expect(t.socket().sent.filter((m) => m.type === 'answer-control')).toEqual([
      { type: 'answer-control', request_id: 'q1', grant: false },
    ]);
  });

  it('a robot that lost the cloud makes handover unavailable until a driver message says it is back', async () => {
    const t = setup();
    await offered(t);
    t.socket().receive({ type: 'robot-offline', robot_id: 'r1' });
    expect(t.session.availability).toMatchObject({ available: false, reason: 'robot-offline' });
    expect(t.session.requestControl()).toBe(false);
    t.socket().receive({ type: 'driver', robot_id: 'r1', session_id: 'sess-0', user: ALICE });
    expect(t.session.availability).toEqual({ available: true });
    expect(t.handover().map((h) => (h.available ? 'available' : h.reason))).toEqual([
      'available',
      'robot-offline',
      'available',
    ]);
  });
});

describe('SignalSession: when the connection drops', () => {
  it('says handover is unavailable, reconnects with backoff, answers the challenge with the same token, asks for no new offer and resumes its session', async () => {
    const t = setup();
    await offered(t);
    t.socket().remoteClose(1006);
    expect(t.session.availability).toMatchObject({ available: false, reason: 'signalling-lost' });
    expect(t.session.requestControl()).toBe(false);
    expect(t.sockets).toHaveLength(1);
    // Full jitter at 0.5 of the first 500 ms step.
    t.clock.advance(250);
    expect(t.sockets).toHaveLength(2);
    t.socket().authenticate('drive', HEARTBEAT_MS);
    // The same token, no new offer: the session is linked to the new connection with `resume`.
    expect(t.socket().sent).toEqual([
      { type: 'auth', v: 2, token: 'tok' },
      { type: 'resume', session_id: 'sess-1' },
    ]);
    // Until svc-cloud answers with who drives, the slot cannot be asked for.
    expect(t.session.availability).toMatchObject({ available: false, reason: 'not-attached' });
    t.socket().receive({ type: 'driver', robot_id: 'r1', session_id: 'sess-0', user: ALICE });
    expect(t.session.availability).toEqual({ available: true });
    expect(t.session.requestControl()).toBe(true);
    expect(t.socket().sent.at(-1)).toEqual({ type: 'request-control', session_id: 'sess-1' });
  });

  it('keeps trying while the server stays away, each wait longer', async () => {
    const t = setup();
    await offered(t);
    t.socket().remoteClose(1006);
    t.clock.advance(250);
    t.socket().remoteClose(1006);
    t.clock.advance(499);
    expect(t.sockets).toHaveLength(2);
    t.clock.advance(1);
    expect(t.sockets).toHaveLength(3);
  });

  it('a server silent for three heartbeat periods is a drop', async () => {
    const t = setup();
    await offered(t);
    t.clock.advance(3 * HEARTBEAT_MS);
    expect(t.session.availability).toMatchObject({ available: false, reason: 'signalling-lost' });
    expect(t.sockets[0]!.closedWith).toBe(1000);
    t.clock.advance(250);
    expect(t.sockets).toHaveLength(2);
  });

  it('an expired token is not presented again: handover is unavailable until the next session', async () => {
    const t = setup(tokenExpiringAt(Date.UTC(2026, 0, 1) / 1000 + 60));
    await offered(t);
    t.clock.stepWallClock(61_000);
    t.socket().remoteClose(1006);
    t.clock.advance(60_000);
    expect(t.sockets).toHaveLength(1);
    expect(t.session.availability).toMatchObject({ available: false, reason: 'token-expired' });
    expect(t.clock.pendingTimers).toBe(0);
  });

  it('a token the server refuses at the new connection ends it (4401)', async () => {
    const t = setup();
    await offered(t);
    t.socket().remoteClose(1006);
    t.clock.advance(250);
    t.socket().receive({ type: 'challenge', v: 2, nonce: 'n'.repeat(43) });
    t.socket().receive({
      type: 'denied',
      reason: 'bad-token',
      message: 'the session token is not usable: it was revoked',
    });
    expect(t.session.availability).toMatchObject({ available: false, reason: 'token-expired' });
    t.socket().remoteClose(4401);
    t.clock.advance(60_000);
    expect(t.sockets).toHaveLength(2);
  });

  it('close() ends it for good: the socket is closed, no timer is left', async () => {
    const t = setup();
    await offered(t);
    t.session.close();
    expect(t.socket().closedWith).toBe(1000);
    expect(t.session.availability).toMatchObject({ available: false, reason: 'closed' });
    expect(t.session.requestControl()).toBe(false);
    expect(t.clock.pendingTimers).toBe(0);
  });
});

describe('SignalSession: before the offer', () => {
  it('refuses every call, and a refused token rejects the offer with bad-token', async () => {
    const t = setup();
    const offer = t.session.offer();
    expect(t.session.requestControl()).toBe(false);
    t.socket().receive({ type: 'challenge', v: 2, nonce: 'n'.repeat(43) });
    t.socket().receive({ type: 'denied', reason: 'bad-token', message: 'the session token does not verify' });
    const err = await offer.catch((e: unknown) => e);
    expect(isOfferError(err, 'bad-token')).toBe(true);
    expect(t.socket().closedWith).toBe(1000);
    expect(t.clock.pendingTimers).toBe(0);
  });

  it('requestOffer still closes the WebSocket once the offer arrives', async () => {
    const { sockets, WebSocketImpl } = fakeSignalSockets();
    const offer = requestOffer({ signalUrl: 'wss://x/ws', robotId: 'r1', token: 'tok', WebSocketImpl });
    sockets[0]!.authenticate();
    sockets[0]!.receive(SIGNAL_OFFER);
    expect((await offer).sessionId).toBe('sess-1');
    expect(sockets[0]!.closedWith).toBe(1000);
  });
});
