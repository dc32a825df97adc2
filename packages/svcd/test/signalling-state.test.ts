/**
 * The signalling client's life cycle on fake time, one test per transition: a WebSocket the test
 * drives by hand (no network), a `FakeClock` for the handshake, heartbeat and retry timers.
 */
import { FakeClock, flushMicrotasks, memoryLogger } from '@svc/runtime/testing';
import { SIGNAL_SUBPROTOCOL, type SignalServerMessage } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { SIGNALLING_TIMING, SignallingClient } from '../src/signalling/client.js';
import { SIGNALLING_MOVES, type SignallingState } from '../src/signalling/state.js';
import { type FakeSocket, fakeWebSocketClass } from './support/fake-websocket.js';
import { testCredential } from './support/signal-server.js';
import { expectOnlyListedMoves } from './support/transitions.js';

const ROBOT = 'amr-7';
const HEARTBEAT_MS = 5000;
const FIVE_MINUTES = 5 * 60_000;

const AUTH_OK: SignalServerMessage = {
  type: 'auth-ok',
  role: 'robot',
  robot_id: ROBOT,
  org_id: 'org-1',
  heartbeat_ms: HEARTBEAT_MS,
};

function harness(options: { refuseUrl?: boolean } = {}) {
  const clock = new FakeClock();
  const logger = memoryLogger();
  const sockets: FakeSocket[] = [];
  const states: SignallingState[] = [];
  const opened: string[] = [];
  const WebSocketImpl = fakeWebSocketClass(sockets);
  const client = new SignallingClient({
    url: 'ws://cloud.test/ws',
    robotId: ROBOT,
    credential: testCredential(),
    logger,
    announce: () => ({
      candidates: [{ address: '192.0.2.7', port: 4433, family: 'ipv4', kind: 'host' }],
      cert_hashes: ['a'.repeat(64)],
      channels: [],
      max_sessions: 4,
      relay: false,
      driver_grace_ms: 5000,
    }),
    onStateChange: (state) => states.push(state),
    onSessionOpen: (message) => opened.push(message.session_id),
    random: () => 0.5,
    clock,
    WebSocketImpl: options.refuseUrl
      ? (class {
          constructor() {
            throw new SyntaxError('Invalid URL: ws://cloud.test/ws');
          }
        } as unknown as typeof WebSocketImpl)
      : WebSocketImpl,
  });
  const socket = (): FakeSocket => {
    const last = sockets.at(-1);
    if (last === undefined) throw new Error('no socket opened');
    return last;
  };
  return { clock, logger, sockets, states, opened, client, socket };
}

type Harness = ReturnType<typeof harness>;

/** Started, opened and answered: online. */
function online(h: Harness = harness()): Harness {
  h.client.start();
  h.socket().open();
  h.socket().receive({ type: 'challenge', v: 2, nonce: 'n'.repeat(43) });
  h.socket().receive(AUTH_OK);
  expect(h.client.state).toEqual({ kind: 'online', orgId: 'org-1' });
  return h;
}

describe('SignallingClient states', () => {
  it('idle → connecting: start() opens the socket with the subprotocol and a handshake deadline', () => {
    const h = harness();
    expect(h.client.state).toEqual({ kind: 'idle' });
    h.client.start();
    expect(h.client.state).toEqual({ kind: 'connecting' });
    expect(h.sockets).toHaveLength(1);
    expect(h.socket().protocols).toEqual([SIGNAL_SUBPROTOCOL]);
    expect(h.clock.pendingTimers).toBe(1);
    expect(h.clock.nextDueMs()).toBe(SIGNALLING_TIMING.handshakeTimeoutMs);
  });

  it('connecting → authenticating when the socket opens', () => {
    const h = harness();
    h.client.start();
    h.socket().open();
    expect(h.states.map((s) => s.kind)).toEqual(['connecting', 'authenticating']);
  });

  it('authenticating → online at auth-ok: the challenge answered, then announce and heartbeats', () => {
    const h = harness();
    h.client.start();
    h.socket().open();
    h.socket().receive({ type: 'challenge', v: 2, nonce: 'n'.repeat(43) });
    expect(h.socket().sentTypes()).toEqual(['auth']);
    h.socket().receive(AUTH_OK);
    expect(h.states.map((s) => s.kind)).toEqual(['connecting', 'authenticating', 'online']);
    expect(h.socket().sentTypes()).toEqual(['auth', 'announce']);
    expect(h.clock.pendingTimers).toBe(1);
    h.clock.advance(HEARTBEAT_MS);
    expect(h.socket().sentTypes()).toEqual(['auth', 'announce', 'heartbeat']);
  });

  it('connecting → backoff when the connection fails, with a full-jitter delay', () => {
    const h = harness();
    h.client.start();
    h.socket().remoteClose(1006);
    // random 0.5 of the first ceiling (500 ms).
    expect(h.client.state).toEqual({
      kind: 'backoff',
      retryInMs: 250,
      reason: 'connection lost',
      closeCode: 1006,
    });
    expect(h.clock.pendingTimers).toBe(1);
    expect(h.clock.nextDueMs()).toBe(250);
  });

  it('connecting → backoff when the handshake takes too long: the socket is dropped', () => {
    const h = harness();
    h.client.start();
    h.clock.advance(SIGNALLING_TIMING.handshakeTimeoutMs);
    expect(h.socket().endedBy).toBe('terminated');
    expect(h.client.state).toMatchObject({ kind: 'backoff', reason: 'handshake timed out' });
  });

  it('authenticating → denied when the cloud does not know the robot: next attempt in 5 minutes', () => {
    const h = harness();
    h.client.start();
    h.socket().open();
    h.socket().receive({ type: 'denied', reason: 'unknown-robot', message: 'not enrolled' });
    expect(h.client.state).toEqual({
      kind: 'denied',
      retryInMs: FIVE_MINUTES,
      reason: 'denied: unknown-robot',
      denial: 'unknown-robot',
    });
    expect(h.socket().endedBy).toEqual({ code: 1000, reason: 'reconnecting' });
    expect(h.clock.nextDueMs()).toBe(FIVE_MINUTES);
  });

  it('authenticating → backoff when the cloud could not verify the signature (no operator needed)', () => {
    const h = harness();
    h.client.start();
    h.socket().open();
    h.socket().receive({ type: 'denied', reason: 'bad-signature', message: 'signature did not verify' });
    expect(h.client.state).toEqual({ kind: 'backoff', retryInMs: 250, reason: 'denied: bad-signature' });
  });

  it('online → backoff when the cloud closes the connection', () => {
    const h = online();
    h.socket().remoteClose(1001, 'shutting down');
    expect(h.client.state).toEqual({
      kind: 'backoff',
      retryInMs: 250,
      reason: 'shutting down',
      closeCode: 1001,
    });
  });

  it('online → backoff after three silent heartbeat periods: the socket is dropped without a handshake', () => {
    const h = online();
    h.clock.advance(2 * HEARTBEAT_MS);
    expect(h.client.state.kind).toBe('online');
    h.clock.advance(HEARTBEAT_MS);
    expect(h.client.state).toMatchObject({ kind: 'backoff', reason: 'heartbeat timeout' });
    expect(h.socket().endedBy).toBe('terminated');
  });

  it('online → denied when the cloud closes with 4403', () => {
    const h = online();
    h.socket().remoteClose(4403);
    expect(h.client.state).toEqual({
      kind: 'denied',
      retryInMs: FIVE_MINUTES,
      reason: 'denied',
      closeCode: 4403,
    });
  });

  it('backoff → connecting when the retry delay is over, with a new socket', () => {
    const h = harness();
    h.client.start();
    h.socket().remoteClose(1006);
    h.clock.advance(249);
    expect(h.client.state.kind).toBe('backoff');
    h.clock.advance(1);
    expect(h.client.state.kind).toBe('connecting');
    expect(h.sockets).toHaveLength(2);
    // The second failure draws from a doubled ceiling.
    h.socket().remoteClose(1006);
    expect(h.client.state).toMatchObject({ kind: 'backoff', retryInMs: 500 });
  });

  it('denied → connecting after 5 minutes, and the backoff starts over', () => {
    const h = harness();
    h.client.start();
    h.socket().remoteClose(1006);
    h.clock.advance(250);
    h.socket().open();
    h.socket().receive({ type: 'denied', reason: 'key-mismatch', message: 'another key' });
    h.clock.advance(FIVE_MINUTES - 1);
    expect(h.client.state.kind).toBe('denied');
    h.clock.advance(1);
    expect(h.client.state.kind).toBe('connecting');
    h.socket().remoteClose(1006);
    expect(h.client.state).toMatchObject({ kind: 'backoff', retryInMs: 250 });
  });

  it('idle → backoff and backoff → backoff when the WebSocket class refuses the URL', () => {
    const h = harness({ refuseUrl: true });
    h.client.start();
    expect(h.client.state).toMatchObject({
      kind: 'backoff',
      retryInMs: 250,
      reason: 'Invalid URL: ws://cloud.test/ws',
    });
    h.clock.advance(250);
    expect(h.client.state).toMatchObject({ kind: 'backoff', retryInMs: 500 });
    expect(h.logger.records.filter((r) => r.level === 'error')).toHaveLength(2);
  });

  it('online → stopped: stop() closes with 1000 and leaves no timer', async () => {
    const h = online();
    await h.client.stop();
    expect(h.socket().endedBy).toEqual({ code: 1000, reason: 'robot stopping' });
    expect(h.client.state).toEqual({ kind: 'stopped' });
    expect(h.states.at(-1)).toEqual({ kind: 'stopped' });
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('idle, connecting and backoff → stopped', async () => {
    const idle = harness();
    await idle.client.stop();
    expect(idle.client.state.kind).toBe('stopped');

    const connecting = harness();
    connecting.client.start();
    await connecting.client.stop();
    expect(connecting.client.state.kind).toBe('stopped');
    expect(connecting.clock.pendingTimers).toBe(0);

    const waiting = harness();
    waiting.client.start();
    waiting.socket().remoteClose(1006);
    await waiting.client.stop();
    expect(waiting.client.state.kind).toBe('stopped');
    expect(waiting.clock.pendingTimers).toBe(0);
    waiting.clock.advance(60_000);
    expect(waiting.sockets).toHaveLength(1);
  });

  it('refuses calls that make no sense: start() twice or after stop(), reports after stop()', async () => {
    const h = harness();
    h.client.start();
    expect(() => h.client.start()).toThrow(
      new TypeError('SignallingClient.start() may be called once (the client is connecting)'),
    );
    await h.client.stop();
    expect(() => h.client.start()).toThrow(TypeError);
    expect(() => h.client.sessionStarted({ session_id: 's-1', role: 'driver', sub: 'ada' })).toThrow(
      /sessionStarted\(\) after stop\(\)/,
    );
    expect(() => h.client.sessionEnded('s-1')).toThrow(TypeError);
    expect(() => h.client.reannounce()).toThrow(TypeError);
  });

  it('refuses every move the life cycle does not have, naming both states', () => {
    expect(expectOnlyListedMoves('SignallingClient', SIGNALLING_MOVES)).toBeGreaterThan(20);
    expect(SIGNALLING_MOVES.idle).not.toContain('online');
    expect(SIGNALLING_MOVES.stopped).not.toContain('connecting');
  });

  it('ignores and counts messages from a connection it already left, and messages out of order', async () => {
    const h = online();
    const first = h.socket();
    first.receive({ type: 'challenge', v: 2, nonce: 'm'.repeat(43) });
    expect(h.client.ignored).toEqual({ late: 0, outOfOrder: 1 });

    h.clock.advance(3 * HEARTBEAT_MS); // silent: the client drops this connection
    expect(h.client.state.kind).toBe('backoff');
    first.receive({
      type: 'session-open',
      session_id: 's-late',
      role: 'driver',
      sub: 'ada',
      scope: 'drive',
      jti: 'j',
      exp: 1,
    });
    expect(h.client.ignored).toEqual({ late: 1, outOfOrder: 1 });
    expect(h.opened).toEqual([]);

    // A session-open before auth-ok on the next connection is skipped too.
    h.clock.advance(250);
    h.socket().open();
    h.socket().receive({
      type: 'session-open',
      session_id: 's-early',
      role: 'driver',
      sub: 'ada',
      scope: 'drive',
      jti: 'k',
      exp: 1,
    });
    expect(h.client.ignored).toEqual({ late: 1, outOfOrder: 2 });
    expect(h.opened).toEqual([]);
    await flushMicrotasks();
    expect(h.client.state.kind).toBe('authenticating');
  });

  it('a throwing onStateChange is logged and the client carries on', () => {
    const clock = new FakeClock();
    const logger = memoryLogger();
    const sockets: FakeSocket[] = [];
    const client = new SignallingClient({
      url: 'ws://cloud.test/ws',
      robotId: ROBOT,
      credential: testCredential(),
      logger,
      announce: () => ({
        candidates: [],
        cert_hashes: [],
        channels: [],
        max_sessions: 1,
        relay: false,
        driver_grace_ms: 0,
      }),
      onStateChange: () => {
        throw new Error('listener bug');
      },
      clock,
      WebSocketImpl: fakeWebSocketClass(sockets),
    });
    client.start();
    sockets[0]!.open();
    expect(client.state.kind).toBe('authenticating');
    expect(logger.records.filter((r) => r.level === 'error')).toHaveLength(2);
  });
});
