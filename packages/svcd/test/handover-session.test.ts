/**
 * The robot's side of a driver handover, on fake time: svc-cloud's `session-role` moves the slot
 * through `SessionRegistry.setRole`; the sessions concerned switch which commands they write, and
 * each pilot hears `role` on its control stream.
 */
import { qosProfile } from '@svc/qos';
import { FakeClock, flushMicrotasks, memoryLogger } from '@svc/runtime/testing';
import { captureClockFromMs, FramePacker } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { type CommandChannel, CommandInbox, type CommandInboxOptions } from '../src/command-channel.js';
import type { CommandChannelConfig } from '../src/config.js';
import { PilotSession } from '../src/pilot-session/session.js';
import { type RoleChangeEvent, type SessionGrant, SessionRegistry } from '../src/session-registry.js';
import { FakeSession } from './support/fake-session.js';

const profile = qosProfile('balanced');

function grant(sub: string, scope: 'drive' | 'observe' = 'drive'): SessionGrant {
  return { ok: true, sub, scope, jti: `jti-${sub}`, exp: Math.floor(Date.UTC(2027, 0, 1) / 1000) };
}

function robot() {
  const clock = new FakeClock(10_000);
  const registry = new SessionRegistry({ maxSessions: 4, now: () => clock.wallNow(), driverGraceMs: 5000 });
  const roles: RoleChangeEvent[] = [];
  registry.on('role', (event) => roles.push(event));
  const written: string[] = [];
  const config = { kind: 'command', name: 'drive', id: 3, codec: 'json' } as unknown as CommandChannelConfig;
  const output = {
    config,
    write: (bytes: Uint8Array) => {
      written.push(new TextDecoder().decode(bytes));
      return true;
    },
    inbox: (options: CommandInboxOptions): CommandInbox => new CommandInbox(output as never, options),
  };
  /** A pilot with a session on this robot, its token for `sub`. */
  const pilot = async (sub: string, scope: 'drive' | 'observe' = 'drive') => {
    const session = new FakeSession();
    const packer = new FramePacker({ channel: 3, maxDatagramBytes: 1199 });
    const robotSession = new PilotSession({
      session,
      channels: [],
      commands: [output as unknown as CommandChannel],
      registry,
      authorize: async () => grant(sub, scope),
      profile,
      logger: memoryLogger(),
      clock,
      maxCommandAgeMs: 500,
    });
    session.pilotSends({ type: 'hello', v: 1, token: sub });
    await flushMicrotasks();
    const send = (text: string) => {
      const packed = packer.pack(
        {
          data: new TextEncoder().encode(text),
          keyframe: true,
          captureTimestampUs: 0,
          gopPosition: 0,
          captureClockUs: captureClockFromMs(clock.now()),
          parity: { rate: 0, minPerBlock: 1 },
        },
        0,
      );
      for (const datagram of packed.datagrams) session.pilotDatagram(datagram);
    };
    return { session, robotSession, send, id: () => robotSession.admitted!.sessionId };
  };
  return { clock, registry, roles, written, pilot };
}

describe('handover on the robot', () => {
  it('moves the slot: the old driver is demoted first, only the new driver commands are written, both pilots hear role', async () => {
    const r = robot();
    const alice = await r.pilot('user:alice');
    const bob = await r.pilot('user:bob');
    expect(alice.robotSession.role).toBe('driver');
    expect(bob.robotSession.role).toBe('observer');

    alice.send('{"from":"alice","n":1}');
    bob.send('{"from":"bob","n":1}');
    expect(r.written).toEqual(['{"from":"alice","n":1}']);

    expect(r.registry.setRole(bob.id(), 'driver', 'alice granted')).toBe(true);
    // One driver at every moment: alice lost the slot before bob got it.
    expect(r.roles.map((e) => [e.session.sub, e.previous, e.session.role])).toEqual([
      ['user:alice', 'driver', 'observer'],
      ['user:bob', 'observer', 'driver'],
    ]);
    expect(r.registry.driver?.sub).toBe('user:bob');
    expect(alice.session.find('role')).toMatchObject({ role: 'observer', reason: 'alice granted' });
    expect(bob.session.find('role')).toMatchObject({ role: 'driver' });

    r.clock.advance(20);
    alice.send('{"from":"alice","n":2}');
    bob.send('{"from":"bob","n":2}');
    expect(r.written).toEqual(['{"from":"alice","n":1}', '{"from":"bob","n":2}']);
    const aliceStats = alice.robotSession.commandStats()['3'];
    expect(aliceStats).toMatchObject({ commands_sent: 1, commands_dropped_observer: 1 });
  });

  it('never gives the slot to an observe token or a session that is not open, and a release leaves nobody driving', async () => {
    const r = robot();
    const alice = await r.pilot('user:alice');
    const watcher = await r.pilot('user:carol', 'observe');
    expect(r.registry.setRole(watcher.id(), 'driver')).toBe(false);
    expect(r.registry.setRole('no-such-session', 'driver')).toBe(false);
    expect(r.registry.driver?.sub).toBe('user:alice');
    expect(r.roles).toEqual([]);

    expect(r.registry.setRole(alice.id(), 'observer', 'released')).toBe(true);
    expect(r.registry.driver).toBeUndefined();
    alice.send('{"after":"release"}');
    expect(r.written).toEqual([]);
    expect(alice.session.find('role')).toMatchObject({ role: 'observer', reason: 'released' });
  });

  it("svc-cloud's assignment ends a reload grace: the slot goes to whom the cloud says", async () => {
    const r = robot();
    const alice = await r.pilot('user:alice');
    const bob = await r.pilot('user:bob');
    alice.session.close(0, 'tab closed');
    await flushMicrotasks();
    expect(r.registry.driverReservation?.sub).toBe('user:alice');
    expect(r.registry.setRole(bob.id(), 'driver')).toBe(true);
    expect(r.registry.driverReservation).toBeUndefined();
    expect(r.registry.driver?.sub).toBe('user:bob');
  });
});
