import type { NetworkInterfaceInfo } from 'node:os';
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import { freeTcpPort } from '@svc/testkit';
import { encodeSignalMessage, SIGNAL_SUBPROTOCOL } from '@svc/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { hostCandidates, type InterfaceTable } from '../src/candidates.js';
import type { AnnounceState } from '../src/signalling/announce.js';
import {
  type SessionOpenMessage,
  type SessionRevokedMessage,
  SignallingClient,
  type SignallingCredential,
} from '../src/signalling/client.js';
import type { SignallingState } from '../src/signalling/state.js';
import {
  logText,
  pendingDelays,
  Recorder,
  runOnly,
  type ServerConnection,
  TestSignalServer,
  testCredential,
} from './support/signal-server.js';

const ROBOT = 'amr-7';
const HASH_A = 'a'.repeat(64);
const HASH_B = 'b'.repeat(64);
const FIVE_MINUTES = 5 * 60_000;

type StateOf<K extends SignallingState['kind']> = Extract<SignallingState, { kind: K }>;

interface Harness {
  readonly client: SignallingClient;
  readonly clock: FakeClock;
  readonly logger: ReturnType<typeof memoryLogger>;
  readonly states: Recorder<SignallingState>;
  readonly opened: Recorder<SessionOpenMessage>;
  readonly revoked: Recorder<SessionRevokedMessage>;
  /** What `announce()` returns; a test replaces it to change the robot. */
  announce: AnnounceState;
  /** The next change to `state`. */
  next<K extends SignallingState['kind']>(state: K): Promise<StateOf<K>>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(
  robots: Map<string, string>,
  options: { heartbeatMs?: number; port?: number } = {},
) {
  const server = await TestSignalServer.start({ robots, ...options });
  let stopped = false;
  cleanups.push(async () => {
    if (!stopped) await server.stop();
  });
  return {
    server,
    stop: async () => {
      stopped = true;
      await server.stop();
    },
  };
}

function startClient(
  url: string,
  credential: SignallingCredential,
  options: { random?: () => number; configPath?: string } = {},
): Harness {
  const clock = new FakeClock();
  const logger = memoryLogger();
  const states = new Recorder<SignallingState>();
  const opened = new Recorder<SessionOpenMessage>();
  const revoked = new Recorder<SessionRevokedMessage>();
  const harness: Omit<Harness, 'client'> = {
    clock,
    logger,
    states,
    opened,
    revoked,
    announce: {
      candidates: [{ address: '192.0.2.7', port: 4433, family: 'ipv4', kind: 'host' }],
      cert_hashes: [HASH_A],
      channels: [{ id: 1, name: 'front', kind: 'video', codec: 'avc1.42e01f' }],
      max_sessions: 4,
      relay: false,
      driver_grace_ms: 5000,
    },
    next: <K extends SignallingState['kind']>(state: K) =>
      states.next((change) => change.kind === state) as Promise<StateOf<K>>,
  };
  const client = new SignallingClient({
    url,
    robotId: ROBOT,
    credential,
    logger,
    announce: () => harness.announce,
    onSessionOpen: (message) => opened.push(message),
    onSessionRevoked: (message) => revoked.push(message),
    onStateChange: (state) => states.push(state),
    random: options.random ?? (() => 0.5),
    clock,
    ...(options.configPath === undefined ? {} : { configPath: options.configPath }),
  });
  cleanups.push(() => client.stop());
  return Object.assign(harness, { client });
}

/** An enrolled robot, its server and a client that is online, with the server's side of it. */
async function online(options: { heartbeatMs?: number; random?: () => number } = {}) {
  const credential = testCredential();
  const robots = new Map([[ROBOT, credential.publicKey]]);
  const { server, stop } = await startServer(robots, options);
  const harness = startClient(server.url, credential, options);
  harness.client.start();
  const connection = await server.connections.next();
  const settled = await harness.states.next((c) => ['online', 'backoff', 'denied'].includes(c.kind));
  expect(settled).toMatchObject({ kind: 'online' });
  // Object.assign keeps `announce` the property the client reads.
  return Object.assign(harness, { server, stopServer: stop, connection, credential, robots });
}

/** Waits until the client has handled everything the server sent before this call. */
async function settle(
  h: { connection: ServerConnection; opened: Recorder<SessionOpenMessage> },
  marker: string,
) {
  h.connection.send({
    type: 'session-open',
    session_id: marker,
    role: 'observer',
    sub: 'marker',
    scope: 'observe',
    jti: marker,
    exp: 1,
  });
  await h.opened.next((m) => m.session_id === marker);
}

describe('SignallingClient against a signalling server', () => {
  it('answers the challenge with a signature the server verifies, then announces the robot', async () => {
    const h = await online();
    expect(h.connection.protocol).toBe(SIGNAL_SUBPROTOCOL);
    const auth = await h.connection.next('auth');
    expect(auth).toMatchObject({ robot_id: ROBOT, public_key: h.credential.publicKey, v: 2 });
    expect(h.connection.signatureVerified).toBe(true);
    const announce = await h.connection.next('announce');
    expect(announce).toEqual({
      type: 'announce',
      candidates: [{ address: '192.0.2.7', port: 4433, family: 'ipv4', kind: 'host' }],
      cert_hashes: [HASH_A],
      channels: [{ id: 1, name: 'front', kind: 'video', codec: 'avc1.42e01f' }],
      max_sessions: 4,
      relay: false,
      sessions: [],
      driver_grace_ms: 5000,
    });
    expect(h.states.items.map((s) => s.kind)).toEqual(['connecting', 'authenticating', 'online']);
    expect(h.connection.invalid).toEqual([]);
    // Neither the nonce nor the signature reaches a log line; the URL's secret parameter is redacted.
    const logs = logText(h.logger);
    expect(logs).toContain('signalling online');
    expect(logs).toContain('access_token=***');
    expect(logs).not.toContain('sekrit-in-url');
    expect(logs).not.toContain(h.connection.nonce);
    expect(logs).not.toContain(h.connection.sig);
  });

  it('announces again on reannounce(), and at a heartbeat when the announcement changed unasked', async () => {
    const h = await online({ heartbeatMs: 5000 });
    await h.connection.next('announce');
    h.announce = { ...h.announce, cert_hashes: [HASH_B, HASH_A] };
    h.client.reannounce();
    expect((await h.connection.next('announce')).cert_hashes).toEqual([HASH_B, HASH_A]);

    // A heartbeat with nothing changed sends no announce (a session that started travels as
    // session-started, not as another announce); one after an address change does.
    h.client.sessionStarted({ session_id: 's-1', role: 'driver', sub: 'user:ada' });
    await h.connection.next('session-started');
    h.clock.advance(5000);
    await h.connection.next('heartbeat');
    await settle(h, 'm1');
    expect(h.connection.messages.items.filter((m) => m.type === 'announce')).toHaveLength(2);
    h.announce = {
      ...h.announce,
      candidates: [{ address: '198.51.100.9', port: 4433, family: 'ipv4', kind: 'host' }],
    };
    h.clock.advance(5000);
    await h.connection.next('heartbeat');
    const changed = await h.connection.next('announce');
    expect(changed.candidates.map((c) => c.address)).toEqual(['198.51.100.9']);
    expect(changed.sessions).toEqual([{ session_id: 's-1', role: 'driver', sub: 'user:ada' }]);
    expect(h.connection.messages.items.filter((m) => m.type === 'announce')).toHaveLength(3);
  });

  it('reports sessions as they start and end, and folds changes made offline into the next announce', async () => {
    const h = await online();
    await h.connection.next('announce');
    h.client.sessionStarted({ session_id: 's-1', role: 'driver', sub: 'user:ada' });
    h.client.sessionStarted({ session_id: 's-2', role: 'observer', sub: 'user:bob' });
    expect(await h.connection.next('session-started')).toEqual({
      type: 'session-started',
      session_id: 's-1',
      role: 'driver',
      sub: 'user:ada',
    });
    await h.connection.next('session-started');
    h.client.sessionEnded('s-2');
    expect(await h.connection.next('session-ended')).toEqual({ type: 'session-ended', session_id: 's-2' });

    // The cloud goes away: sessions change meanwhile, and the next announce carries the result.
    h.connection.close(1001, 'shutting down');
    await h.next('backoff');
    h.client.sessionStarted({ session_id: 's-3', role: 'observer', sub: 'user:cy' });
    h.client.sessionEnded('s-1');
    runOnly(h.clock);
    const second = await h.server.connections.next();
    await h.next('online');
    const announce = await second.next('announce');
    expect(announce.sessions).toEqual([{ session_id: 's-3', role: 'observer', sub: 'user:cy' }]);
    await settle({ connection: second, opened: h.opened }, 'm2');
    expect(second.messages.items.map((m) => m.type)).toEqual(['auth', 'announce']);
    expect(() => h.client.sessionStarted({ session_id: '', role: 'driver', sub: 'x' })).toThrow(TypeError);
  });

  it('passes session-open and session-revoked to the daemon', async () => {
    const h = await online();
    const open: SessionOpenMessage = {
      type: 'session-open',
      session_id: 's-9',
      role: 'driver',
      sub: 'user:ada',
      scope: 'drive',
      jti: 'jti-9',
      exp: 1_900_000_000,
    };
    h.connection.send(open);
    expect(await h.opened.next()).toEqual(open);
    h.connection.send({
      type: 'session-revoked',
      session_id: 's-9',
      jti: 'jti-9',
      reason: 'ended by an admin',
    });
    expect(await h.revoked.next()).toEqual({
      type: 'session-revoked',
      session_id: 's-9',
      jti: 'jti-9',
      reason: 'ended by an admin',
    });
  });

  it("answers a pilot's WebRTC offer with rtc-failed, since it announces no webrtc backend", async () => {
    const h = await online();
    h.connection.send({
      type: 'rtc-session',
      session_id: 's-rtc',
      sdp: 'v=0',
      ice_servers: [{ url: 'stun:stun.example.net:3478' }],
    });
    expect(await h.connection.messages.next((m) => m.type === 'rtc-failed')).toEqual({
      type: 'rtc-failed',
      session_id: 's-rtc',
      message: 'this robot does not serve sessions on WebRTC; connect with WebTransport',
    });
  });

  it('logs the enrolment remedy for an unknown robot and retries only every 5 minutes', async () => {
    const credential = testCredential();
    const robots = new Map<string, string>();
    const { server } = await startServer(robots);
    const h = startClient(server.url, credential, { configPath: '/etc/svcd/svcd.toml' });
    h.client.start();
    const denied = await h.next('denied');
    expect(denied).toMatchObject({ denial: 'unknown-robot', retryInMs: FIVE_MINUTES });
    const remedy = h.logger.records.find((e) => e.level === 'error');
    expect(remedy?.message).toBe(
      'this robot is not enrolled: create an enrolment token in the console and run ' +
        '`svcd --config /etc/svcd/svcd.toml enrol --token <T>`, or set SVC_ENROLMENT_TOKEN',
    );
    expect(pendingDelays(h.clock)).toEqual([FIVE_MINUTES]);

    // Denied again: still 5 minutes, not a growing backoff and not a quick retry.
    runOnly(h.clock);
    await server.connections.next();
    await server.connections.next();
    expect((await h.next('denied')).retryInMs).toBe(FIVE_MINUTES);
    expect(pendingDelays(h.clock)).toEqual([FIVE_MINUTES]);
    expect(server.connections.items).toHaveLength(2);

    // The operator enrols the robot meanwhile: the next attempt goes online.
    robots.set(ROBOT, credential.publicKey);
    runOnly(h.clock);
    await h.next('online');
    expect(logText(h.logger)).not.toContain(server.connections.items[0]?.nonce);
  });

  it('backs off (no 5-minute wait) when the server cannot verify the signature', async () => {
    const enrolled = testCredential();
    const impostor = testCredential();
    const robots = new Map([[ROBOT, enrolled.publicKey]]);
    const { server } = await startServer(robots);
    // The enrolled public key, signed with another private key.
    const h = startClient(server.url, { publicKey: enrolled.publicKey, sign: impostor.sign });
    h.client.start();
    const connection = await server.connections.next();
    const backoff = await h.next('backoff');
    expect(connection.signatureVerified).toBe(false);
    expect(backoff).toMatchObject({ retryInMs: 250 });
    expect((backoff as { denial?: unknown }).denial).toBeUndefined();
    expect(h.logger.records.find((e) => e.level === 'error')?.message).toContain(
      `could not verify robot ${ROBOT}'s signature`,
    );
    expect(logText(h.logger)).not.toContain(connection.sig);
  });

  it('logs the key-mismatch remedy and does not hammer the server', async () => {
    const credential = testCredential();
    const robots = new Map([[ROBOT, testCredential().publicKey]]);
    const { server } = await startServer(robots);
    const h = startClient(server.url, credential);
    h.client.start();
    const denied = await h.next('denied');
    expect(denied).toMatchObject({ denial: 'key-mismatch', retryInMs: FIVE_MINUTES });
    expect(h.logger.records.filter((e) => e.level === 'error').map((e) => e.message)).toEqual([
      `robot ${ROBOT} is enrolled with another key: delete the robot in the console and enrol again`,
    ]);
    expect(pendingDelays(h.clock)).toEqual([FIVE_MINUTES]);
  });

  it('reconnects after the server closes with 1001, and after the server process restarts on its port', async () => {
    const h = await online({ random: () => 0.999 });
    await h.connection.next('announce');
    h.client.sessionStarted({ session_id: 's-1', role: 'driver', sub: 'user:ada' });
    await h.connection.next('session-started');

    h.connection.close(1001, 'going away');
    const first = await h.next('backoff');
    expect(first).toMatchObject({ closeCode: 1001, retryInMs: 499 });
    runOnly(h.clock);
    const second = await h.server.connections.next();
    await h.next('online');
    expect((await second.next('announce')).sessions).toEqual([
      { session_id: 's-1', role: 'driver', sub: 'user:ada' },
    ]);

    // The server process dies; the client keeps trying with growing delays until it is back.
    const port = h.server.port;
    await h.stopServer();
    expect((await h.next('backoff')).retryInMs).toBe(999);
    runOnly(h.clock);
    expect((await h.next('backoff')).retryInMs).toBe(1998);
    const { server: restarted } = await startServer(h.robots, { port });
    runOnly(h.clock);
    const third = await restarted.connections.next();
    await h.next('online');
    expect(third.signatureVerified).toBe(true);
    expect((await third.next('announce')).sessions).toEqual([
      { session_id: 's-1', role: 'driver', sub: 'user:ada' },
    ]);
  });

  it('backs off with full jitter from 0.5 s, doubling, capped at 30 s', async () => {
    const port = await freeTcpPort();
    const draws = [0.25, 0.999, 0.999, 0.999, 0.999, 0.999, 0.999, 0.999, 0.999, 0];
    const h = startClient(`ws://127.0.0.1:${port}/ws`, testCredential(), {
      random: () => draws.shift() ?? 0.999,
    });
    h.client.start();
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      delays.push((await h.next('backoff')).retryInMs);
      runOnly(h.clock);
    }
    expect(delays).toEqual([125, 999, 1998, 3996, 7992, 15984, 29970, 29970, 29970, 0]);
    expect(logText(h.logger)).toContain('ECONNREFUSED');
  });

  it('starts the backoff over after a connection that stayed up 60 s, not after a short one', async () => {
    const h = await online({ random: () => 0.999 });
    for (const expected of [499, 999]) {
      h.server.connections.items.at(-1)?.close(1001);
      expect((await h.next('backoff')).retryInMs).toBe(expected);
      runOnly(h.clock);
      await h.next('online');
    }
    // Sixty seconds online, the cloud answering every heartbeat.
    const current = h.server.connections.items.at(-1)!;
    for (let i = 0; i < 4; i++) {
      h.clock.advance(15_000);
      await current.next('heartbeat');
      await settle({ connection: current, opened: h.opened }, `held-${i}`);
    }
    h.server.connections.items.at(-1)?.close(1001);
    expect((await h.next('backoff')).retryInMs).toBe(499);
  });

  it('reconnects when the server falls silent for three heartbeat periods', async () => {
    const h = await online({ heartbeatMs: 5000 });
    // While the server answers, heartbeats keep the connection (four periods here).
    for (let i = 0; i < 4; i++) {
      h.clock.advance(5000);
      await h.connection.next('heartbeat');
      await settle(h, `alive-${i}`);
    }
    expect(h.client.state.kind).toBe('online');

    h.server.ackHeartbeats = false;
    h.clock.advance(5000);
    await h.connection.next('heartbeat');
    h.clock.advance(5000);
    await h.connection.next('heartbeat');
    expect(h.client.state.kind).toBe('online');
    h.clock.advance(5000);
    expect(h.client.state.kind).toBe('backoff');
    expect(logText(h.logger)).toContain('nothing heard from the cloud for three heartbeat periods');
    await h.connection.closed;

    h.server.ackHeartbeats = true;
    runOnly(h.clock);
    await h.server.connections.next();
    await h.next('online');
    expect(h.server.connections.items).toHaveLength(2);
  });

  it('skips garbage from the server, and survives an oversized message by reconnecting', async () => {
    const h = await online();
    h.connection.sendRaw('not json at all');
    h.connection.sendRaw('{"no":"type"}');
    h.connection.sendRaw('{"type":"session-open","session_id":"x"}');
    h.connection.sendRaw('{"type":"unheard-of"}');
    h.connection.sendRaw('[1,2,3]');
    h.connection.sendRaw(Buffer.from([0, 1, 2, 3]), true);
    h.connection.send({ type: 'robot-offline', robot_id: ROBOT });
    h.connection.send({ type: 'error', code: 'rate-limited', message: 'slow down' });
    h.connection.send({ type: 'challenge', v: 2, nonce: 'n'.repeat(43) });
    await settle(h, 'after-garbage');
    expect(h.client.state.kind).toBe('online');
    expect(h.server.connections.items).toHaveLength(1);
    const warnings = h.logger.records.filter((e) => e.level === 'warn').map((e) => e.message);
    expect(warnings.filter((m) => m.startsWith('signalling: skipped a message from the cloud'))).toHaveLength(
      5,
    );
    expect(warnings).toContain(
      'signalling: ignored a binary message from the cloud (the protocol is text only)',
    );
    expect(warnings).toContain('signalling: the cloud reported an error: slow down');

    h.connection.sendRaw(JSON.stringify({ type: 'heartbeat-ack', pad: 'x'.repeat(70 * 1024) }));
    expect((await h.connection.closed).code).toBe(1009);
    await h.next('backoff');
    runOnly(h.clock);
    await h.server.connections.next();
    await h.next('online');
  });

  it('warns that two daemons share the robot id when replaced (4409), and keeps reconnecting', async () => {
    const h = await online();
    h.connection.close(4409, 'replaced');
    const backoff = await h.next('backoff');
    expect(backoff.closeCode).toBe(4409);
    const warning = h.logger.records.find((e) => e.level === 'warn');
    expect(warning?.message).toContain('two daemons share this robot id');
    expect(pendingDelays(h.clock)).toEqual([backoff.retryInMs]);
  });

  it('stop() closes with 1000 and never reconnects', async () => {
    const h = await online();
    await h.client.stop();
    expect(await h.connection.closed).toMatchObject({ code: 1000 });
    expect(h.client.state.kind).toBe('stopped');
    expect(h.states.items.at(-1)?.kind).toBe('stopped');
    expect(h.clock.pendingTimers).toBe(0);
  });
});

function nic(address: string, family: 'IPv4' | 'IPv6', internal = false): NetworkInterfaceInfo {
  const base = { address, netmask: '', mac: '00:00:00:00:00:00', internal, cidr: null };
  return family === 'IPv4' ? { ...base, family } : { ...base, family, scopeid: 0 };
}

const LAPTOP: InterfaceTable = {
  lo: [nic('127.0.0.1', 'IPv4', true), nic('::1', 'IPv6', true)],
  eth0: [
    nic('192.168.1.20', 'IPv4'),
    nic('fe80::1c2b:3cff:fe4d:5e6f', 'IPv6'),
    nic('2001:db8:1::20', 'IPv6'),
    nic('fd12:3456::20', 'IPv6'),
  ],
  wlan0: [nic('10.0.0.5', 'IPv4'), nic('192.168.1.20', 'IPv4'), nic('ff02::1', 'IPv6')],
};

describe('hostCandidates', () => {
  it('announces non-internal IPv4 addresses, once each', () => {
    expect(hostCandidates({ port: 4433, ipv6: false, interfaces: () => LAPTOP })).toEqual([
      { address: '192.168.1.20', port: 4433, family: 'ipv4', kind: 'host' },
      { address: '10.0.0.5', port: 4433, family: 'ipv4', kind: 'host' },
    ]);
  });

  it('adds global and unique-local IPv6 with ipv6, never link-local, loopback or multicast', () => {
    const addresses = hostCandidates({ port: 4433, ipv6: true, interfaces: () => LAPTOP }).map((c) => [
      c.address,
      c.family,
    ]);
    expect(addresses).toEqual([
      ['192.168.1.20', 'ipv4'],
      ['10.0.0.5', 'ipv4'],
      ['2001:db8:1::20', 'ipv6'],
      ['fd12:3456::20', 'ipv6'],
    ]);
  });

  it('falls back to loopback only when there is nothing else', () => {
    const offline: InterfaceTable = {
      lo: [nic('127.0.0.1', 'IPv4', true), nic('::1', 'IPv6', true)],
      eth0: [nic('fe80::1', 'IPv6')],
    };
    expect(
      hostCandidates({ port: 7000, ipv6: false, interfaces: () => offline }).map((c) => c.address),
    ).toEqual(['127.0.0.1']);
    expect(
      hostCandidates({ port: 7000, ipv6: true, interfaces: () => offline }).map((c) => c.address),
    ).toEqual(['127.0.0.1', '::1']);
  });

  it('announces only the address the daemon binds (--host), and refuses a host name', () => {
    const options = { port: 4433, ipv6: false, interfaces: () => LAPTOP };
    expect(hostCandidates({ ...options, addresses: ['10.0.0.5'] })).toEqual([
      { address: '10.0.0.5', port: 4433, family: 'ipv4', kind: 'host' },
    ]);
    expect(hostCandidates({ ...options, addresses: ['[2001:db8::7]'] })).toEqual([
      { address: '2001:db8::7', port: 4433, family: 'ipv6', kind: 'host' },
    ]);
    expect(hostCandidates({ ...options, addresses: ['0.0.0.0'] })).toHaveLength(2);
    expect(() => hostCandidates({ ...options, addresses: ['robot.local'] })).toThrow(
      /"robot\.local".*IP address/,
    );
    expect(() => hostCandidates({ ...options, port: 0 })).toThrow(TypeError);
  });

  it('reads this machine and produces candidates an announce accepts', () => {
    const candidates = hostCandidates({ port: 4433, ipv6: true });
    expect(candidates.length).toBeGreaterThan(0);
    const text = encodeSignalMessage({
      type: 'announce',
      candidates: candidates.slice(0, 16),
      cert_hashes: [HASH_A],
      channels: [],
      max_sessions: 1,
      relay: false,
      sessions: [],
    });
    expect(JSON.parse(text).candidates).toHaveLength(Math.min(16, candidates.length));
  });
});
