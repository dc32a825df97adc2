/**
 * Operator safety in the pilot session, on fake time: the robot's heartbeat, the end of a silent
 * session and of one whose pilot said `bye` (the registry's `ended`, which publisher control turns
 * into `session` `ended`, comes at once), and the command watchdog's `driver-idle`.
 */
import { qosProfile } from '@svc/qos';
import type { Clock } from '@svc/runtime';
import { FakeClock, flushMicrotasks, memoryLogger } from '@svc/runtime/testing';
import { captureClockFromMs, FramePacker } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { type CommandChannel, CommandInbox, type CommandInboxOptions } from '../src/command-channel.js';
import type { CommandChannelConfig } from '../src/config.js';
import { PilotSession } from '../src/pilot-session/session.js';
import { type SessionEvent, type SessionGrant, SessionRegistry } from '../src/session-registry.js';
import { FakeSession } from './support/fake-session.js';

const profile = qosProfile('balanced');

/** A command channel whose output the test reads (the real one writes to a UDP socket). */
function commandChannel(): { channel: CommandChannel; written: string[] } {
  const written: string[] = [];
  const config = { kind: 'command', name: 'drive', id: 3, codec: 'json' } as unknown as CommandChannelConfig;
  const fake = {
    config,
    write: (bytes: Uint8Array) => {
      written.push(new TextDecoder().decode(bytes));
      return true;
    },
    // The real inbox, over the fake output.
    inbox: (options: CommandInboxOptions): CommandInbox => new CommandInbox(fake as never, options),
  };
  return { channel: fake as unknown as CommandChannel, written };
}

/** A fake clock whose `now()` can be pushed ahead of its timers: a process that stalled. */
function stallableClock(): { clock: Clock; fake: FakeClock; stall(ms: number): void } {
  const fake = new FakeClock(10_000);
  let extraMs = 0;
  const clock: Clock = {
    now: () => fake.now() + extraMs,
    wallNow: () => fake.wallNow() + extraMs,
    setTimeout: (callback, delayMs) => fake.setTimeout(callback, delayMs),
    clearTimeout: (handle) => fake.clearTimeout(handle),
    setInterval: (callback, periodMs) => fake.setInterval(callback, periodMs),
    clearInterval: (handle) => fake.clearInterval(handle),
  };
  return {
    clock,
    fake,
    stall: (ms) => {
      extraMs += ms;
    },
  };
}

function harness(options: { role?: 'driver' | 'observer'; commandTimeoutMs?: number } = {}) {
  const stallable = stallableClock();
  const clock = stallable.fake;
  const registry = new SessionRegistry({ maxSessions: 4, now: () => clock.wallNow() });
  const ended: SessionEvent[] = [];
  registry.on('ended', (event) => ended.push(event));
  const session = new FakeSession();
  const idle: { sessionId: string; idleMs: number }[] = [];
  const command = commandChannel();
  const grant: SessionGrant = {
    ok: true,
    sub: 'user-a',
    scope: options.role === 'observer' ? 'observe' : 'drive',
    jti: 'jti-a',
    exp: Math.floor(clock.wallNow() / 1000) + 300,
  };
  const pilot = new PilotSession({
    session,
    channels: [],
    commands: [command.channel],
    registry,
    authorize: async () => grant,
    profile,
    logger: memoryLogger(),
    clock: stallable.clock,
    closeGraceMs: 2000,
    maxCommandAgeMs: 500,
    // A finer period than the daemon's 300 ms default, so each test can step tick by tick.
    heartbeatMs: 200,
    commandTimeoutMs: options.commandTimeoutMs ?? 1000,
    onDriverIdle: (sessionId, idleMs) => idle.push({ sessionId, idleMs }),
  });
  const packer = new FramePacker({ channel: 3, maxDatagramBytes: 1199, firstFrameId: 100 });
  /** The pilot sends a command stamped now on the robot's clock (the SDK's way). */
  const sendCommand = (text: string) => {
    const packed = packer.pack(
      {
        data: new TextEncoder().encode(text),
        keyframe: true,
        captureTimestampUs: 0,
        gopPosition: 0,
        captureClockUs: captureClockFromMs(stallable.clock.now()),
        parity: { rate: 0, minPerBlock: 1 },
      },
      0,
    );
    for (const datagram of packed.datagrams) session.pilotDatagram(datagram);
  };
  return {
    clock,
    stall: stallable.stall,
    registry,
    ended,
    session,
    pilot,
    idle,
    written: command.written,
    sendCommand,
  };
}

async function welcomed(h: ReturnType<typeof harness>): Promise<void> {
  h.session.pilotSends({ type: 'hello', v: 1, token: 't' });
  await flushMicrotasks();
  expect(h.pilot.state).toBe('active');
}

describe('heartbeat and a pilot that is gone', () => {
  it('welcome announces the period (200 ms in this harness); a heartbeat with a growing seq follows every period while the pilot echoes', async () => {
    const h = harness();
    await welcomed(h);
    expect(h.session.find('welcome')).toMatchObject({ heartbeat_ms: 200 });
    h.clock.advance(5000);
    const beats = h.session.control.filter((m) => m.type === 'heartbeat');
    expect(beats.map((m) => (m as { seq: number }).seq)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(h.pilot.state).toBe('active');
    expect(h.ended).toEqual([]);
  });

  it('a pilot silent for 600 ms has its session ended: the registry says ended at once, the transport closes', async () => {
    const h = harness();
    await welcomed(h);
    h.clock.advance(1000);
    h.session.echoHeartbeats = false;
    h.clock.advance(600);
    expect(h.pilot.state).toBe('active');
    h.clock.advance(200);
    expect(h.pilot.state).toBe('closed');
    expect(h.ended).toHaveLength(1);
    expect(h.ended[0]).toMatchObject({ reason: 'pilot silent for 600 ms', sessions: 0 });
    expect(h.ended[0]!.session.role).toBe('driver');
    expect(h.session.closeInfo).toMatchObject({ code: 0, reason: 'pilot silent for 600 ms' });
    expect(h.registry.size).toBe(0);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('applies to observers too', async () => {
    const h = harness({ role: 'observer' });
    await welcomed(h);
    expect(h.pilot.role).toBe('observer');
    h.session.echoHeartbeats = false;
    h.clock.advance(1000);
    expect(h.ended.map((e) => [e.session.role, e.reason])).toEqual([['observer', 'pilot silent for 600 ms']]);
  });

  it('any control line or datagram is a sign of life', async () => {
    const h = harness();
    await welcomed(h);
    h.session.echoHeartbeats = false;
    for (let i = 0; i < 10; i++) {
      h.clock.advance(250);
      if (i % 2 === 0) h.session.pilotSends({ type: 'ping', t: i });
      else h.sendCommand(`{"n":${i}}`);
    }
    expect(h.pilot.state).toBe('active');
    expect(h.written).toHaveLength(5);
  });

  it('a heartbeat tick that comes late (the daemon stalled) gives no verdict; the next one does', async () => {
    const h = harness();
    await welcomed(h);
    h.clock.advance(100);
    // The process was stuck for 2 s: its next tick comes 2.2 s after the last one, before the
    // pilot's lines that waited meanwhile are read.
    h.session.echoHeartbeats = false;
    h.stall(2000);
    h.clock.advance(100);
    expect(h.pilot.state).toBe('active');
    // Still nothing from the pilot by the next tick: now it is silent.
    h.clock.advance(200);
    expect(h.pilot.state).toBe('closed');
    expect(h.ended.map((e) => e.reason)).toEqual(['pilot silent for 600 ms']);
  });

  it('late ticks in a row (a process that stays overloaded) decide all the same', async () => {
    const h = harness();
    await welcomed(h);
    h.session.echoHeartbeats = false;
    h.stall(2000);
    h.clock.advance(200);
    expect(h.pilot.state).toBe('active');
    h.stall(2000);
    h.clock.advance(200);
    expect(h.pilot.state).toBe('closed');
  });

  it("the pilot's bye ends the session at once, with its reason", async () => {
    const h = harness();
    await welcomed(h);
    h.session.pilotSends({ type: 'bye', reason: 'page closed' });
    expect(h.ended.map((e) => e.reason)).toEqual(['pilot said bye: page closed']);
    expect(h.session.closeInfo).toMatchObject({ code: 0, reason: 'pilot said bye: page closed' });
    expect(h.pilot.state).toBe('closed');
  });
});

describe('the command watchdog', () => {
  it('reports a driver that sends nothing for command_timeout_ms once, and again only after commands resumed and stopped', async () => {
    const h = harness();
    await welcomed(h);
    const sessionId = h.pilot.admitted!.sessionId;
    h.clock.advance(999);
    expect(h.idle).toEqual([]);
    h.clock.advance(1);
    expect(h.idle).toEqual([{ sessionId, idleMs: 1000 }]);
    h.clock.advance(5000);
    expect(h.idle).toHaveLength(1);

    // Commands resume at 50 Hz for a second: no report; then they stop.
    for (let i = 0; i < 50; i++) {
      h.sendCommand(`{"i":${i}}`);
      h.clock.advance(20);
    }
    expect(h.idle).toHaveLength(1);
    h.clock.advance(979);
    expect(h.idle).toHaveLength(1);
    h.clock.advance(1);
    expect(h.idle).toEqual([
      { sessionId, idleMs: 1000 },
      { sessionId, idleMs: 1000 },
    ]);
  });

  it('says nothing for an observer, and stops with the session', async () => {
    const observer = harness({ role: 'observer' });
    await welcomed(observer);
    observer.clock.advance(3000);
    expect(observer.idle).toEqual([]);

    const driver = harness();
    await welcomed(driver);
    driver.session.pilotSends({ type: 'bye' });
    driver.clock.advance(3000);
    expect(driver.idle).toEqual([]);
  });
});
