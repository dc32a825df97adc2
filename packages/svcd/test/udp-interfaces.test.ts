import { createSocket, type Socket } from 'node:dgram';
import { qosProfile } from '@svc/qos';
import { silentLogger } from '@svc/runtime';
import { freeUdpPort } from '@svc/testkit';
import {
  type AssembledFrame,
  captureClockFromMs,
  decodePublisherControl,
  FramePacker,
  type PublisherControlMessage,
  Reassembler,
} from '@svc/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonClockMs } from '../src/clock.js';
import { CommandChannel } from '../src/command-channel.js';
import { type DaemonConfig, parseConfig, type VideoChannelConfig } from '../src/config.js';
import { PilotSession } from '../src/pilot-session/session.js';
import { PublisherControl } from '../src/publisher-control.js';
import { ChannelError, SensorChannel } from '../src/sensor-channel.js';
import { type AuthorizeSession, SessionRegistry } from '../src/session-registry.js';
import { VideoChannel } from '../src/video-channel.js';
import { FakeSession } from './support/fake-session.js';

/** Resolves when `check` holds; re-checked whenever `changed` is signalled (no polling, no sleeps). */
class Signal {
  #waiters: (() => void)[] = [];
  changed(): void {
    for (const w of this.#waiters.splice(0)) w();
  }
  until(check: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const test = () => (check() ? resolve() : this.#waiters.push(test));
      test();
    });
  }
}

/** A UDP socket on 127.0.0.1 that records every datagram it receives. */
async function udpListener(signal: Signal): Promise<{ socket: Socket; port: number; received: Buffer[] }> {
  const socket = createSocket('udp4');
  const received: Buffer[] = [];
  socket.on('message', (message) => {
    received.push(message);
    signal.changed();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, port: socket.address().port, received };
}

/** Tokens of these tests: `drive:<jti>` and `observe:<jti>` are accepted; anything else is refused. */
const authorize: AuthorizeSession = async ({ token, sessionId }) => {
  if (token === 'verifier-crash') throw new Error(`verifier bug with ${token}`);
  const [scope, jti] = token.split(':');
  if ((scope !== 'drive' && scope !== 'observe') || jti === undefined)
    return { ok: false, code: 'token-refused', reason: 'token not accepted' };
  return {
    ok: true,
    sub: `user-${jti}`,
    scope,
    jti,
    exp: Math.floor(Date.now() / 1000) + 300,
    ...(sessionId !== undefined && { sessionId }),
  };
};

const encoder = new TextEncoder();
const profile = qosProfile('balanced');
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Robot {
  readonly config: DaemonConfig;
  readonly signal: Signal;
  readonly registry: SessionRegistry;
  readonly sensor: SensorChannel;
  readonly command: CommandChannel;
  readonly commandOut: { port: number; received: Buffer[] };
  readonly publisher: { port: number; received: Buffer[] };
  readonly video: VideoChannel;
  /** Profiles asked for with `set-qos` that reached the daemon, with the asking session. */
  readonly profileRequests: { profile: string; sessionId: string }[];
  /** A new pilot session on the robot (not yet said hello). */
  connect(): { fake: FakeSession; pilot: PilotSession };
  /** Says hello and waits for the answer. */
  hello(token: string, sessionId?: string): Promise<{ fake: FakeSession; pilot: PilotSession }>;
}

/** The robot's pieces as serve() wires them, on loopback, with fake sessions instead of QUIC. */
async function robot(maxSessions = 4): Promise<Robot> {
  const signal = new Signal();
  const commandOut = await udpListener(signal);
  const publisher = await udpListener(signal);
  cleanups.push(() => new Promise<void>((resolve) => commandOut.socket.close(() => resolve())));
  cleanups.push(() => new Promise<void>((resolve) => publisher.socket.close(() => resolve())));
  const sensorPort = await freeUdpPort();
  const config = parseConfig(
    [
      '[agent]',
      'robot_id = "udp-robot"',
      'signal_url = "wss://cloud.example/ws"',
      `max_sessions = ${maxSessions}`,
      '[[channel]]',
      'kind = "video"',
      'name = "front"',
      'input = "rtp://127.0.0.1:5004"',
      'codec = "avc1.42c00d"',
      'fps = 30',
      'max_bitrate_kbps = 2000',
      '[[channel]]',
      'kind = "sensor"',
      'name = "imu"',
      `input = "udp://127.0.0.1:${sensorPort}"`,
      'codec = "json"',
      '[[channel]]',
      'kind = "command"',
      'name = "drive"',
      `output = "udp://127.0.0.1:${commandOut.port}"`,
      'codec = "json"',
      '[publisher_control]',
      `udp = "127.0.0.1:${publisher.port}"`,
    ].join('\n'),
  );
  const registry = new SessionRegistry({ maxSessions });
  const sensor = await SensorChannel.open(config.channels[1] as never, silentLogger);
  cleanups.push(() => sensor.close());
  const command = await CommandChannel.open(config.channels[2] as never, silentLogger);
  cleanups.push(() => command.close());
  const control = await PublisherControl.open({ address: config.publisherControl!, logger: silentLogger });
  cleanups.push(() => control.close());
  control.followSessions(registry);
  const video = new VideoChannel(config.channels[0] as VideoChannelConfig, profile, silentLogger);
  control.announceVideoChannels([video.config], profile);
  const profileRequests: { profile: string; sessionId: string }[] = [];
  const connect = () => {
    const fake = new FakeSession(() => signal.changed());
    cleanups.push(() => fake.close(0, 'test over'));
    const pilot = new PilotSession({
      session: fake,
      channels: [video],
      sensors: [sensor],
      commands: [command],
      registry,
      authorize,
      profile,
      logger: silentLogger,
      onProfileRequest: (requested, sessionId) => {
        profileRequests.push({ profile: requested, sessionId });
        signal.changed();
      },
    });
    return { fake, pilot };
  };
  return {
    config,
    signal,
    registry,
    sensor,
    command,
    commandOut,
    publisher,
    video,
    profileRequests,
    connect,
    async hello(token, sessionId) {
      const c = connect();
      c.fake.pilotSends({
        type: 'hello',
        v: 1,
        token,
        ...(sessionId !== undefined && { session_id: sessionId }),
      });
      await signal.until(() => c.fake.find('welcome') !== undefined || c.fake.find('denied') !== undefined);
      return c;
    },
  };
}

/** The pilot SDK's way of sending a command: one frame, one parity chunk per block, ≤ 1199-byte datagrams. */
function commandPacker(channel: number): FramePacker {
  return new FramePacker({ channel, maxDatagramBytes: 1199, firstFrameId: 40_000 });
}
function packCommand(packer: FramePacker, payload: string | Uint8Array): Uint8Array[] {
  const data = typeof payload === 'string' ? encoder.encode(payload) : payload;
  return packer.pack(
    {
      data,
      keyframe: true,
      captureTimestampUs: 0,
      gopPosition: 0,
      // Sent now on the robot's clock (the session's default clock), as the SDK stamps it.
      captureClockUs: captureClockFromMs(daemonClockMs()),
      parity: { rate: 0, minPerBlock: 1 },
    },
    0,
  ).datagrams;
}

describe('robot-side UDP interfaces', () => {
  it('welcome carries the real role and every video, sensor and command channel', async () => {
    const r = await robot();
    const driver = await r.hello('drive:a', 'signal-session-1');
    const observer = await r.hello('observe:b');
    expect(driver.fake.find('welcome')).toEqual({
      type: 'welcome',
      session_id: 'signal-session-1',
      role: 'driver',
      channels: [
        { id: 1, name: 'front', kind: 'video', codec: 'avc1.42c00d' },
        { id: 2, name: 'imu', kind: 'sensor', codec: 'json' },
        { id: 3, name: 'drive', kind: 'command', codec: 'json' },
      ],
      qos: { profile: 'balanced', presentation_delay_ms: 100 },
      heartbeat_ms: 300,
    });
    expect(observer.fake.find('welcome')).toMatchObject({ role: 'observer', session_id: observer.fake.id });
  });

  it('a driver command reaches the output as one datagram holding exactly its bytes', async () => {
    const r = await robot();
    const { fake, pilot } = await r.hello('drive:a');
    const packer = commandPacker(3);
    const small = '{"linear":0.5,"angular":-0.25}';
    for (const d of packCommand(packer, small)) fake.pilotDatagram(d);
    await r.signal.until(() => r.commandOut.received.length === 1);
    expect(r.commandOut.received[0]!.toString('utf8')).toBe(small);

    // A 10 KiB command spans several chunks; with one datagram lost, parity repairs it.
    const big = Uint8Array.from({ length: 10 * 1024 }, (_, i) => (i * 7 + 3) & 0xff);
    const datagrams = packCommand(packer, big);
    expect(datagrams.length).toBeGreaterThan(2);
    expect(Math.max(...datagrams.map((d) => d.byteLength))).toBeLessThanOrEqual(1199);
    for (const d of datagrams.filter((_, i) => i !== 1)) fake.pilotDatagram(d);
    await r.signal.until(() => r.commandOut.received.length === 2);
    expect(new Uint8Array(r.commandOut.received[1]!)).toEqual(big);
    expect(pilot.commandStats()['3']).toMatchObject({ commands_sent: 2, commands_dropped_observer: 0 });
  });

  it("an observer's command never reaches the output; it is counted", async () => {
    const r = await robot();
    const driver = await r.hello('drive:a');
    const observer = await r.hello('observe:b');
    expect(observer.fake.find('welcome')?.role).toBe('observer');
    for (const d of packCommand(commandPacker(3), 'OBSERVER-STOP')) observer.fake.pilotDatagram(d);
    expect(observer.pilot.commandStats()['3']).toMatchObject({
      commands_dropped_observer: 1,
      commands_sent: 0,
    });
    // A drive-scoped token that found the slot taken observes too.
    const late = await r.hello('drive:c');
    expect(late.fake.find('welcome')?.role).toBe('observer');
    for (const d of packCommand(commandPacker(3), 'LATE-DRIVER')) late.fake.pilotDatagram(d);
    for (const d of packCommand(commandPacker(3), 'DRIVER-GO')) driver.fake.pilotDatagram(d);
    await r.signal.until(() => r.commandOut.received.length >= 1);
    expect(r.commandOut.received.map((b) => b.toString('utf8'))).toEqual(['DRIVER-GO']);
    expect(late.pilot.commandStats()['3']!.commands_dropped_observer).toBe(1);
  });

  it('latest wins: an older command completing after a newer one is dropped', async () => {
    const r = await robot();
    const { fake, pilot } = await r.hello('drive:a');
    const packer = commandPacker(3);
    const older = packCommand(packer, 'older');
    const newer = packCommand(packer, 'newer');
    for (const d of newer) fake.pilotDatagram(d);
    for (const d of older) fake.pilotDatagram(d);
    for (const d of packCommand(packer, 'last')) fake.pilotDatagram(d);
    await r.signal.until(() => r.commandOut.received.length >= 2);
    expect(r.commandOut.received.map((b) => b.toString('utf8'))).toEqual(['newer', 'last']);
    expect(pilot.commandStats()['3']!.commands_sent).toBe(2);
  });

  it('malformed and unknown-channel datagrams are counted and dropped, and commands still flow', async () => {
    const r = await robot();
    const { fake, pilot } = await r.hello('drive:a');
    fake.pilotDatagram(Uint8Array.of(1, 2, 3));
    const garbage = new Uint8Array(40).fill(0xff);
    garbage[1] = 3; // claims the command channel, but its header is nonsense
    fake.pilotDatagram(garbage);
    for (const d of packCommand(new FramePacker({ channel: 200 }), 'nowhere')) fake.pilotDatagram(d);
    for (const d of packCommand(new FramePacker({ channel: 2 }), 'to a sensor')) fake.pilotDatagram(d);
    for (const d of packCommand(commandPacker(3), 'still works')) fake.pilotDatagram(d);
    await r.signal.until(() => r.commandOut.received.length === 1);
    expect(r.commandOut.received[0]!.toString('utf8')).toBe('still works');
    const stats = pilot.commandStats();
    expect(stats['0']).toMatchObject({ datagrams_malformed: 1, datagrams_unknown_channel: 4 });
    expect(stats['3']).toMatchObject({ datagrams_malformed: 1, commands_sent: 1 });
  });

  it('a command sent before the session is welcomed is dropped', async () => {
    const r = await robot();
    const { fake, pilot } = r.connect();
    const early = packCommand(commandPacker(3), 'too early');
    for (const d of early) fake.pilotDatagram(d);
    expect(pilot.commandStats()['0']!.datagrams_before_welcome).toBe(early.length);
    fake.pilotSends({ type: 'hello', v: 1, token: 'drive:a' });
    await r.signal.until(() => fake.find('welcome') !== undefined);
    for (const d of packCommand(commandPacker(3), 'on time')) fake.pilotDatagram(d);
    await r.signal.until(() => r.commandOut.received.length === 1);
    expect(r.commandOut.received.map((b) => b.toString('utf8'))).toEqual(['on time']);
  });

  it('each sensor datagram reaches every welcomed session as one frame with the same bytes', async () => {
    const r = await robot();
    const a = await r.hello('drive:a');
    const b = await r.hello('observe:b');
    const waiting = r.connect(); // connected, never said hello
    const messages = [
      encoder.encode('{"imu":{"ax":0.1}}'),
      Uint8Array.from({ length: 30_000 }, (_, i) => (i * 13) & 0xff),
      encoder.encode('{"imu":{"ax":0.2}}'),
    ];
    const sender = createSocket('udp4');
    cleanups.push(() => new Promise<void>((resolve) => sender.close(() => resolve())));
    const reassembled = (fake: FakeSession) => {
      const frames: AssembledFrame[] = [];
      const reassembler = new Reassembler({ channel: 2, onFrame: (f) => frames.push(f) });
      for (const d of fake.datagrams) reassembler.handleDatagram(d, 0);
      return frames.map((f) => f.data);
    };
    for (const message of messages) {
      await new Promise<void>((resolve, reject) =>
        sender.send(message, r.sensor.port, '127.0.0.1', (err) => (err ? reject(err) : resolve())),
      );
    }
    await r.signal.until(
      () => reassembled(a.fake).length === messages.length && reassembled(b.fake).length === messages.length,
    );
    expect(reassembled(a.fake)).toEqual(messages);
    expect(reassembled(b.fake)).toEqual(messages);
    expect(a.fake.datagrams.every((d) => d[1] === 2 && d.byteLength <= 1200)).toBe(true);
    expect(waiting.fake.datagrams).toHaveLength(0);
    expect(r.sensor.stats.received).toBe(3);
  });

  it('publisher control: video-config at start, session started and ended with role and count', async () => {
    const r = await robot();
    const decoded = () => r.publisher.received.map((b) => decodePublisherControl(b));
    const sessions = () => decoded().filter((m) => m.type === 'session');
    await r.signal.until(() => decoded().some((m) => m.type === 'video-config'));
    expect(decoded().find((m) => m.type === 'video-config')).toEqual({
      type: 'video-config',
      channel: 1,
      profile: 'balanced',
      maxBitrateKbps: 2000, // the channel's max_bitrate_kbps, below the 3000 ceiling
      latencyBudgetMs: 100,
      maxGopMs: 10_000,
      preferIntraRefresh: true,
      suggestedFps: 0,
      reason: 'profile',
    } satisfies PublisherControlMessage);

    const driver = await r.hello('drive:a', 'sess-driver');
    const observer = await r.hello('observe:b', 'sess-observer');
    await r.signal.until(() => sessions().length === 2);
    driver.fake.pilotLeaves();
    await r.signal.until(() => sessions().length === 3);
    observer.fake.pilotSends({ type: 'bye' });
    await r.signal.until(() => sessions().length === 4);
    expect(sessions()).toEqual([
      { type: 'session', state: 'started', session_id: 'sess-driver', role: 'driver', sessions: 1 },
      { type: 'session', state: 'started', session_id: 'sess-observer', role: 'observer', sessions: 2 },
      { type: 'session', state: 'ended', session_id: 'sess-driver', role: 'driver', sessions: 1 },
      { type: 'session', state: 'ended', session_id: 'sess-observer', role: 'observer', sessions: 0 },
    ]);
  });

  it("only the driver's set-qos changes the profile; every session then hears the new one", async () => {
    const r = await robot();
    const driver = await r.hello('drive:a', 'sess-driver');
    const observer = await r.hello('observe:b', 'sess-observer');
    observer.fake.pilotSends({ type: 'set-qos', profile: 'quality' });
    driver.fake.pilotSends({ type: 'set-qos', profile: 'balanced' }); // the profile in force: nothing to do
    driver.fake.pilotSends({ type: 'set-qos', profile: 'latency' });
    await r.signal.until(() => r.profileRequests.length > 0);
    expect(r.profileRequests).toEqual([{ profile: 'latency', sessionId: 'sess-driver' }]);

    // The daemon applies it (serve.ts) and tells every session.
    for (const { pilot } of [driver, observer]) pilot.profileChanged(qosProfile('latency'));
    for (const { fake } of [driver, observer]) {
      expect(fake.find('qos')).toEqual({ type: 'qos', profile: 'latency', presentation_delay_ms: 50 });
    }
  });

  it('one hello over max_sessions is denied with the reason and closed', async () => {
    const r = await robot(1);
    await r.hello('drive:a');
    const extra = await r.hello('observe:b');
    expect(extra.fake.find('denied')).toEqual({
      type: 'denied',
      reason: 'robot busy: 1 of 1 sessions in use (max_sessions)',
      code: 'busy',
    });
    expect(extra.fake.find('welcome')).toBeUndefined();
    expect(extra.fake.closed).toBe(true);
  });

  it('a refused token and a token already in use are denied; revocation closes a session', async () => {
    const r = await robot();
    expect((await r.hello('forged')).fake.find('denied')).toMatchObject({
      reason: 'token not accepted',
      code: 'token-refused',
    });
    const crashed = await r.hello('verifier-crash');
    expect(crashed.fake.find('denied')).toMatchObject({
      reason: 'the robot could not check the token; try again',
      code: 'check-failed',
    });
    expect(crashed.fake.closed).toBe(true);
    expect(r.registry.size).toBe(0);
    const first = await r.hello('drive:same');
    const again = await r.hello('drive:same');
    expect(again.fake.find('denied')).toMatchObject({ reason: 'token already in use', code: 'token-in-use' });
    expect(again.fake.closed).toBe(true);
    expect(r.registry.revokeJti('same')).toBe(1);
    expect(first.fake.closed).toBe(true);
    expect(first.fake.control.at(-1)).toEqual({ type: 'bye', reason: 'token revoked' });
    expect((await r.hello('drive:same')).fake.find('denied')?.reason).toBe('token revoked');
    // The slot the revoked driver held is free again.
    expect((await r.hello('drive:fresh')).fake.find('welcome')?.role).toBe('driver');
  });

  it('a sensor channel that cannot bind is a startup error naming the channel and address', async () => {
    const taken = createSocket('udp4');
    await new Promise<void>((resolve) => taken.bind(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const port = taken.address().port;
    const config = parseConfig(
      `[agent]\nrobot_id = "r"\nsignal_url = "wss://x.example/ws"\n[[channel]]\nkind = "sensor"\nname = "lidar"\ninput = "udp://127.0.0.1:${port}"\ncodec = "json"\n`,
    );
    const error = await SensorChannel.open(config.channels[0] as never, silentLogger).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ChannelError);
    expect((error as ChannelError).code).toBe('bind-failed');
    expect((error as Error).message).toContain(
      `sensor channel "lidar": cannot listen on udp://127.0.0.1:${port}`,
    );
  });
});
