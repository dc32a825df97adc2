import { CodedError } from '@svc/runtime';
import type { ControlMessage } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { CONNECTION_MOVES, type ConnectionStateKind } from '../src/connection/state.js';
import { isOfferError, OfferError } from '../src/index.js';
import {
  HASH,
  harness,
  OFFER,
  SIGNAL_URL,
  sensorDatagrams,
  settle,
  toConnected,
  toHandshake,
  URLS,
  WELCOME,
} from './support/connection-harness.js';

describe('PilotConnection: idle', () => {
  it('idle → connecting: connect() asks svc-cloud for an offer with the token', async () => {
    const h = harness();
    expect(h.connection.state).toBe('idle');
    expect(h.connection.stats().state).toBe('idle');
    h.connection.connect();
    expect(h.states).toEqual([['connecting', 'asking for an offer']]);
    await settle();
    expect(h.offers).toHaveLength(1);
    expect(h.offers[0]!.options).toMatchObject({ signalUrl: SIGNAL_URL, robotId: 'r1', token: 'tok' });
    expect(h.offers[0]!.options.clock).toBe(h.clock);
  });

  it('idle → closed: close() before connect() ends it, and connect() afterwards is refused', async () => {
    const h = harness();
    h.connection.close();
    expect(h.connection.state).toBe('closed');
    expect(h.states).toEqual([['closed', 'closed by the page']]);
    expect(() => h.connection.connect()).toThrow(TypeError);
    expect(() => h.connection.connect()).toThrow(/connects once/);
    await settle();
    expect(h.offers).toHaveLength(0);
  });
});

describe('PilotConnection: offering', () => {
  it('offering → dialing: the offer is announced and the first candidate dialled, pinned to the hash', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.resolve(OFFER);
    await settle();
    expect(h.offerEvents).toEqual([OFFER]);
    expect(h.connection.offer).toBe(OFFER);
    expect(h.transports.map((t) => t.url)).toEqual([URLS[0]]);
    expect(h.transport().options.serverCertificateHashes).toEqual([
      { algorithm: 'sha-256', value: new Uint8Array(32).fill(0xab) },
    ]);
    expect(h.connection.state).toBe('connecting');
  });

  it.each([
    ['bad-token', 'the pilot session token was refused'],
    ['forbidden', 'no grant for this robot'],
  ] as const)('offering → denied: a %s refusal ends the connection, never retried', async (code, message) => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.reject(new OfferError(code, message));
    await settle();
    expect(h.connection.state).toBe('denied');
    expect(h.states.at(-1)).toEqual(['denied', message]);
    expect(h.clock.pendingTimers).toBe(0);
    await h.clock.advanceAsync(60_000);
    expect(h.offers).toHaveLength(1);
  });

  it('offering → reconnecting: an offline robot before any session is asked for again, with the refusal said all along, until it connects', async () => {
    const h = harness();
    await offlineAtFirstOffer(h, 'robot r1 is offline now; try again later');
    expect(h.connection.state).toBe('reconnecting');
    const offline = { code: 'robot-offline', message: 'robot r1 is offline now; try again later' };
    expect(h.connection.refusal).toEqual(offline);
    // Asked for again after the backoff, and still said while the next offer is pending.
    await h.clock.advanceAsync(5000);
    expect(h.offers).toHaveLength(2);
    expect(h.connection.refusal).toEqual(offline);
    // Without reconnecting it is final.
    const once = harness({ reconnect: false });
    await offlineAtFirstOffer(once, 'robot r1 is offline now');
    expect(once.connection.state).toBe('denied');
    expect(once.connection.refusal).toEqual({ code: 'robot-offline', message: 'robot r1 is offline now' });
    expect(once.clock.pendingTimers).toBe(0);
  });

  it('an offline robot that comes back: the refusal clears once connected', async () => {
    const h = harness();
    await offlineAtFirstOffer(h, 'robot r1 is offline now');
    expect(h.connection.refusal?.code).toBe('robot-offline');
    await h.clock.advanceAsync(5000);
    await toConnected(h);
    expect(h.connection.state).toBe('connected');
    expect(h.connection.refusal).toBeUndefined();
  });

  it('offering → reconnecting: after a session, an offline robot (restarting) is asked for again after the backoff', async () => {
    const h = harness();
    const transport = await toConnected(h);
    transport.hangUp();
    await settle();
    await h.clock.advanceAsync(125);
    h.offers.at(-1)!.answer.reject(new OfferError('robot-offline', 'robot r1 is offline now'));
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    // Full jitter with the draw 0.5: half of the second ceiling, 500 ms.
    expect(h.states.at(-1)).toEqual(['reconnecting', 'robot r1 is offline now; retrying in 250 ms']);
    expect(h.connection.refusal).toBeUndefined();
  });

  it('offering → reconnecting: an offer that names no address is a failed attempt', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.resolve({ ...OFFER, urls: [] });
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)?.[1]).toMatch(
      /^robot r1 announced no address it can be reached at, does not serve WebRTC, and does not allow the cloud relay \(relay = false\); retrying/,
    );
    expect(h.transports).toHaveLength(0);
  });

  it('offering → closed: close() while the offer is on its way; the offer that comes later is ignored and counted', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.connection.close();
    h.offers[0]!.answer.resolve(OFFER);
    await settle();
    expect(h.connection.state).toBe('closed');
    expect(h.transports).toHaveLength(0);
    expect(h.offerEvents).toEqual([]);
    expect(h.connection.stats().lateEvents).toBe(1);
  });

  it('with an offer given, no signalling is asked and the token function is called once per attempt', async () => {
    let tokens = 0;
    const h = harness({
      offer: { urls: [URLS[0]!], certificateHashes: [HASH] },
      token: async () => `tok-${++tokens}`,
    });
    h.connection.connect();
    expect(h.states).toEqual([['connecting', undefined]]);
    await settle();
    h.transport().answer();
    await settle();
    expect(h.offers).toHaveLength(0);
    expect(h.transport().sent).toEqual([{ type: 'hello', v: 1, token: 'tok-1' }]);
    h.transport().hangUp();
    await settle();
    await h.clock.advanceAsync(125);
    h.transport().answer();
    await settle();
    expect(tokens).toBe(2);
    expect(h.transports[1]!.sent).toEqual([{ type: 'hello', v: 1, token: 'tok-2' }]);
  });
});

describe('PilotConnection: dialing (the candidate race)', () => {
  it('dialing → handshaking: the first candidate to answer gets hello with the token and session id', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    expect(transport.sent).toEqual([{ type: 'hello', v: 1, token: 'tok', session_id: 'offer-1' }]);
    expect(h.connection.state).toBe('connecting');
  });

  it('tries the next candidate after the stagger and closes the one that lost', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.resolve(OFFER);
    await settle();
    h.clock.advance(249);
    expect(h.transports).toHaveLength(1);
    h.clock.advance(1);
    expect(h.transports.map((t) => t.url)).toEqual(URLS);
    h.transports[1]!.answer();
    await settle();
    expect(h.transports[0]!.closedWith).toEqual({ closeCode: 0, reason: 'another candidate answered first' });
    expect(h.transports[1]!.sent[0]).toMatchObject({ type: 'hello' });
    expect(h.transports[1]!.closedWith).toBeUndefined();
  });

  it('tries the next candidate at once when one fails', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.resolve(OFFER);
    await settle();
    h.transports[0]!.refuse();
    await settle();
    expect(h.transports.map((t) => t.url)).toEqual(URLS);
  });

  it('dialing → reconnecting: no candidate answers', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.resolve(OFFER);
    await settle();
    h.transports[0]!.refuse('timed out');
    await settle();
    h.transports[1]!.refuse('unreachable');
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)?.[1]).toBe(
      `no path to the robot answered: ${URLS[0]}: timed out; ${URLS[1]}: unreachable; the robot does not allow the cloud relay (relay = false in its [agent] configuration), so no other path is tried; retrying in 125 ms`,
    );
  });

  it('dialing → closed: close() during the race closes every candidate; one answering later is closed too', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.resolve(OFFER);
    await settle();
    h.connection.close();
    expect(h.connection.state).toBe('closed');
    expect(h.transports[0]!.closedWith).toEqual({ closeCode: 0, reason: 'pilot closed' });
    h.transports[0]!.answer();
    await h.clock.advanceAsync(1000);
    expect(h.transports).toHaveLength(1);
    expect(h.transports[0]!.sent).toEqual([]);
  });
});

describe('PilotConnection: handshaking and starting', () => {
  it('handshaking → starting → connected: welcome starts the channels, datagrams that came first are delivered', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    for (const datagram of sensorDatagrams('early')) transport.datagram(datagram);
    await settle();
    expect(h.sensors).toEqual([]);
    h.clock.advance(5);
    transport.say(WELCOME);
    await settle();
    expect(h.connection.state).toBe('connected');
    expect(h.states.at(-1)).toEqual(['connected', 'session-1']);
    expect(h.sensors).toEqual(['early']);
    expect(h.connection.role).toBe('driver');
    expect(h.connection.channels.map((c) => c.name)).toEqual(['lidar', 'drive']);
    expect(h.connection.stats()).toMatchObject({ sessions: 1, profile: 'balanced', lateEvents: 0 });
    // The clock offset is asked for at once.
    expect(transport.sent.at(-1)).toEqual({ type: 'ping', t: 1005 });
    for (const datagram of sensorDatagrams('live', 1)) transport.datagram(datagram);
    await settle();
    expect(h.sensors).toEqual(['early', 'live']);
  });

  it('handshaking → reconnecting: the transport closes before welcome', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    transport.hangUp({ closeCode: 7, reason: 'gone' });
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)?.[1]).toBe('the robot closed the connection (7: gone); retrying in 125 ms');
  });

  it('handshaking → reconnecting: the robot ends the control stream, and the pilot closes the transport', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    transport.endControl();
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)?.[1]).toMatch(/^the robot closed the control stream; retrying/);
    expect(transport.closedWith).toEqual({ closeCode: 0, reason: 'reconnecting' });
  });

  it('handshaking → denied: the robot refuses hello; the transport is closed with code 1, nothing retried', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    transport.say({ type: 'denied', reason: 'bad token (expired)' });
    await settle();
    expect(h.connection.state).toBe('denied');
    expect(h.states.at(-1)).toEqual(['denied', 'bad token (expired)']);
    expect(transport.closedWith).toEqual({ closeCode: 1, reason: 'denied' });
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('handshaking → closed: close() says bye and closes the transport', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    h.connection.close();
    await settle();
    expect(transport.sent.at(-1)).toEqual({ type: 'bye' });
    expect(transport.closedWith).toEqual({ closeCode: 0, reason: 'pilot closed' });
  });

  it('starting → reconnecting: bye right behind welcome; the decoders that start afterwards are a late event', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    transport.say(WELCOME, { type: 'bye', reason: 'token revoked' });
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.map(([state]) => state)).not.toContain('connected');
    expect(h.states.at(-1)?.[1]).toBe('token revoked; retrying in 125 ms');
    // The decoders' start and the closed transport's end came after the state had moved on.
    expect(h.connection.stats()).toMatchObject({ sessions: 1, lateEvents: 2 });
  });

  it('starting → denied: denied right behind welcome', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    transport.say(WELCOME, { type: 'denied', reason: 'revoked' });
    await settle();
    expect(h.connection.state).toBe('denied');
    expect(h.connection.role).toBeUndefined();
  });

  it('starting → closed: with reconnection off, bye right behind welcome ends the connection', async () => {
    const h = harness({ reconnect: false });
    const transport = await toHandshake(h);
    transport.say(WELCOME, { type: 'bye', reason: 'shutting down' });
    await settle();
    expect(h.connection.state).toBe('closed');
    expect(h.states.at(-1)).toEqual(['closed', 'shutting down']);
    expect(h.clock.pendingTimers).toBe(0);
  });
});

describe('PilotConnection: connected', () => {
  it("connected → reconnecting → connecting again: the robot's bye, then a fresh offer after the backoff", async () => {
    const h = harness();
    const first = await toConnected(h);
    first.say({ type: 'bye', reason: 'token revoked' });
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)).toEqual(['reconnecting', 'token revoked; retrying in 125 ms']);
    expect(first.closedWith).toEqual({ closeCode: 0, reason: 'reconnecting' });
    expect(h.connection.role).toBeUndefined();
    expect(h.connection.channels).toEqual([]);
    expect(h.connection.sendCommand('drive', 'x')).toBe(false);
    // Only the retry timer is left: the session's pings, reports and ticks stopped with it.
    expect(h.clock.pendingTimers).toBe(1);
    await h.clock.advanceAsync(124);
    expect(h.offers).toHaveLength(1);
    await h.clock.advanceAsync(1);
    expect(h.offers).toHaveLength(2);
    expect(h.states.at(-1)).toEqual(['reconnecting', 'asking for an offer']);
    const second = await toConnected(h, { ...WELCOME, session_id: 'session-2' });
    expect(second).not.toBe(first);
    expect(h.states.at(-1)).toEqual(['connected', 'session-2']);
    expect(h.connection.stats().sessions).toBe(2);
  });

  it('connected → reconnecting: the transport drops', async () => {
    const h = harness();
    const transport = await toConnected(h);
    transport.hangUp();
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)?.[1]).toBe(
      'the robot closed the connection (0: shutting down); retrying in 125 ms',
    );
  });

  it('connected → denied: the robot refuses the session', async () => {
    const h = harness();
    const transport = await toConnected(h);
    transport.say({ type: 'denied', reason: 'grant revoked' });
    await settle();
    expect(h.connection.state).toBe('denied');
    expect(transport.closedWith).toEqual({ closeCode: 1, reason: 'denied' });
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('connected → closed: close() says bye; what still comes from the robot is ignored and counted', async () => {
    const h = harness();
    const transport = await toConnected(h);
    for (const datagram of sensorDatagrams('in flight')) transport.datagram(datagram);
    h.connection.close();
    await settle();
    expect(h.connection.state).toBe('closed');
    expect(transport.sent.at(-1)).toEqual({ type: 'bye' });
    expect(transport.closedWith).toEqual({ closeCode: 0, reason: 'pilot closed' });
    expect(h.sensors).toEqual([]);
    // The datagram and the transport's close came after close().
    expect(h.connection.stats().lateEvents).toBe(2);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('connected → closed: with reconnection off, a drop ends the connection', async () => {
    const h = harness({ reconnect: false });
    const transport = await toConnected(h);
    transport.hangUp({ closeCode: 0, reason: 'restarting' });
    await settle();
    expect(h.connection.state).toBe('closed');
    expect(h.states.at(-1)).toEqual(['closed', 'the robot closed the connection (0: restarting)']);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('ignores and counts a datagram and a control line from the transport a reconnect replaced', async () => {
    const h = harness();
    const old = await toConnected(h);
    old.hangUp();
    await settle();
    await h.clock.advanceAsync(125);
    await toConnected(h, { ...WELCOME, session_id: 'session-2' });
    const before = h.connection.stats().lateEvents;
    for (const datagram of sensorDatagrams('stale')) old.datagram(datagram);
    old.say({ type: 'agent-stats', channels: { '1': { bitrate_bps: 1 } } });
    await settle();
    expect(h.sensors).toEqual([]);
    expect(h.connection.stats().robot).toEqual({});
    expect(h.connection.stats().lateEvents).toBe(before + 2);
  });

  it('reports the round trip and the clock offset on the injected clock', async () => {
    const h = harness();
    const transport = await toConnected(h);
    const ping = transport.sent.at(-1) as Extract<ControlMessage, { type: 'ping' }>;
    h.clock.advance(40);
    transport.say({ type: 'pong', t: ping.t, robot_time: 5000 });
    await settle();
    expect(h.connection.stats()).toMatchObject({ rttMs: 40, clockOffsetMs: ping.t + 20 - 5000 });
    // Four more 50 ms apart, then once a second.
    h.clock.advance(200);
    await settle();
    expect(transport.sent.filter((m) => m.type === 'ping').map((m) => (m as { t: number }).t)).toEqual([
      ping.t,
      ping.t + 50,
      ping.t + 100,
      ping.t + 150,
      ping.t + 200,
    ]);
    h.clock.advance(1000);
    await settle();
    expect(transport.sent.filter((m) => m.type === 'ping')).toHaveLength(6);
  });

  it("keeps the robot's agent-stats and follows its qos profile", async () => {
    const h = harness();
    const transport = await toConnected(h);
    transport.say(
      { type: 'agent-stats', channels: { '1': { bitrate_bps: 800_000 } } },
      { type: 'qos', profile: 'quality', presentation_delay_ms: 200 },
    );
    await settle();
    expect(h.connection.stats()).toMatchObject({
      robot: { '1': { bitrate_bps: 800_000 } },
      profile: 'quality',
    });
  });
});

describe('PilotConnection: reconnecting', () => {
  it('reconnecting → closed: close() while waiting cancels the retry', async () => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.reject(new OfferError('unreachable', 'no network'));
    await settle();
    expect(h.connection.state).toBe('reconnecting');
    h.connection.close();
    expect(h.connection.state).toBe('closed');
    expect(h.clock.pendingTimers).toBe(0);
    await h.clock.advanceAsync(10_000);
    expect(h.offers).toHaveLength(1);
  });

  it('waits a full-jitter backoff from 250 ms doubling to 5 s, and starts over after a session that held 10 s', async () => {
    const h = harness({ random: () => 0.999 });
    const delays: number[] = [];
    const fail = async () => {
      h.offers.at(-1)!.answer.reject(new OfferError('unreachable', 'down'));
      await settle();
      const detail = h.states.at(-1)?.[1] ?? '';
      delays.push(Number(/retrying in (\d+) ms/.exec(detail)?.[1]));
      await h.clock.advanceAsync(delays.at(-1)!);
    };
    h.connection.connect();
    await settle();
    for (let i = 0; i < 7; i++) await fail();
    expect(delays).toEqual([249, 499, 999, 1998, 3996, 4995, 4995]);

    const transport = await toConnected(h);
    await h.clock.advanceAsync(10_000);
    transport.hangUp();
    await settle();
    expect(h.states.at(-1)?.[1]).toMatch(/retrying in 249 ms$/);
  });

  it('a session that did not hold 10 s does not reset the backoff', async () => {
    const h = harness({ random: () => 0.999 });
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.reject(new OfferError('unreachable', 'down'));
    await settle();
    await h.clock.advanceAsync(249);
    const transport = await toConnected(h);
    await h.clock.advanceAsync(9_000);
    transport.hangUp();
    await settle();
    expect(h.states.at(-1)?.[1]).toMatch(/retrying in 499 ms$/);
  });
});

describe('PilotConnection: calls that make no sense are refused', () => {
  it('connect() twice', async () => {
    const h = harness();
    h.connection.connect();
    expect(() => h.connection.connect()).toThrow(
      new TypeError(
        'connect() was called on a connection that is connecting already; a PilotConnection connects once, make a new one',
      ),
    );
  });

  it('sendCommand() and setQos() before connect() and after the end', async () => {
    const h = harness();
    expect(() => h.connection.sendCommand('drive', 'x')).toThrow(
      /sendCommand\(\) on a connection that is idle/,
    );
    await toConnected(h);
    h.connection.close();
    expect(() => h.connection.sendCommand('drive', 'x')).toThrow(
      new TypeError('sendCommand() on a connection that is closed: there is no session to send on'),
    );
    expect(() => h.connection.setQos('latency')).toThrow(/setQos\(\) on a connection that is closed/);
    // Closing again is no misuse: pages close whatever the outcome.
    expect(() => h.connection.close()).not.toThrow();
  });

  it('setQos() after a denial', async () => {
    const h = harness();
    const transport = await toHandshake(h);
    transport.say({ type: 'denied', reason: 'no' });
    await settle();
    expect(() => h.connection.setQos('latency')).toThrow(/setQos\(\) on a connection that is denied/);
    h.connection.close();
    expect(h.connection.state).toBe('denied');
  });

  it('a channel that is not a command channel, and a command that is too long', async () => {
    const h = harness();
    await toConnected(h);
    expect(() => h.connection.sendCommand('lidar', 'x')).toThrow(
      new TypeError('"lidar" is not a command channel of this robot (command channels: drive)'),
    );
    expect(() => h.connection.sendCommand('drive', new Uint8Array(16 * 1024 + 1))).toThrow(
      /command of 16385 bytes exceeds 16384/,
    );
  });

  it('final states have no way out, and a session is reached only through starting', () => {
    const kinds: ConnectionStateKind[] = [
      'idle',
      'offering',
      'dialing',
      'handshaking',
      'starting',
      'connected',
      'reconnecting',
      'closed',
      'denied',
    ];
    const canTransition = (from: ConnectionStateKind, to: ConnectionStateKind) =>
      CONNECTION_MOVES[from].includes(to);
    for (const to of kinds) {
      expect(canTransition('closed', to)).toBe(false);
      expect(canTransition('denied', to)).toBe(false);
      // A session that moves to another path stays connected (`connected` → `connected`).
      expect(canTransition(to, 'connected')).toBe(to === 'starting' || to === 'connected');
      expect(canTransition(to, 'idle')).toBe(false);
    }
  });
});

describe('PilotConnection: commands and listeners', () => {
  it('sends a command as datagrams with parity for a driver, nothing for an observer', async () => {
    const driver = harness();
    const transport = await toConnected(driver);
    transport.say({ type: 'pong', t: driver.clock.now(), robot_time: 5000 });
    await settle();
    expect(driver.connection.sendCommand('drive', '{"linear":0.5}')).toBe(true);
    await settle();
    expect(transport.sentDatagrams).toHaveLength(2); // one data chunk, one parity chunk
    expect(driver.connection.setQos('quality')).toBe(true);
    await settle();
    expect(transport.sent.at(-1)).toEqual({ type: 'set-qos', profile: 'quality' });

    const observer = harness();
    const watched = await toConnected(observer, { ...WELCOME, role: 'observer' });
    expect(observer.connection.sendCommand(3, 'x')).toBe(false);
    // An observer's choice is its own presentation: nothing goes to the robot, and a later
    // profile from the driver leaves it as chosen.
    expect(observer.connection.setQos('quality')).toBe(true);
    expect(observer.connection.presentation).toBe('quality');
    watched.say({ type: 'qos', profile: 'latency', presentation_delay_ms: 50 });
    await settle();
    expect(watched.sent.filter((m) => m.type === 'set-qos')).toEqual([]);
    expect(observer.connection.presentation).toBe('quality');
    expect(observer.connection.stats().profile).toBe('latency');
    expect(watched.sentDatagrams).toEqual([]);
  });

  it('while the connection is on its way, commands and QoS requests are not sent', async () => {
    const h = harness();
    await toHandshake(h);
    expect(h.connection.sendCommand('drive', 'x')).toBe(false);
    expect(h.connection.setQos('latency')).toBe(false);
  });

  it('a listener that throws is logged and the connection carries on', async () => {
    const h = harness({
      onState: () => {
        throw new Error('page bug');
      },
    });
    const seen: string[] = [];
    h.connection.on('state', (state) => seen.push(state));
    await toConnected(h);
    expect(seen).toEqual(['connecting', 'connected']);
    const errors = h.logs.filter((r) => r.level === 'error');
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatchObject({ fields: { event: 'state' } });
    expect(errors[0]!.message).toMatch(/listener of state threw/);
  });

  it('off() removes a listener', async () => {
    const h = harness();
    const seen: string[] = [];
    const listener = (state: string) => seen.push(state);
    h.connection.on('state', listener);
    h.connection.off('state', listener);
    await toConnected(h);
    expect(seen).toEqual([]);
  });
});

describe('OfferError', () => {
  it('is a CodedError that isOfferError recognises, by code too', () => {
    const err = new OfferError('forbidden', 'no grant', { cause: 'x' });
    expect(err).toBeInstanceOf(CodedError);
    expect(err).toMatchObject({ name: 'OfferError', code: 'forbidden', cause: 'x' });
    expect(isOfferError(err)).toBe(true);
    expect(isOfferError(err, 'forbidden')).toBe(true);
    expect(isOfferError(err, 'bad-token')).toBe(false);
    expect(isOfferError(new Error('forbidden'))).toBe(false);
  });
});

/** Connects `h` and answers its first offer with `robot-offline`. */
async function offlineAtFirstOffer(h: ReturnType<typeof harness>, message: string): Promise<void> {
  h.connection.connect();
  await settle();
  h.offers[0]!.answer.reject(new OfferError('robot-offline', message));
  await settle();
}
