/**
 * The pilot session's life cycle on fake time, one test per transition: an in-memory transport
 * session, a token check the test settles by hand, the real session registry, a `FakeClock` for
 * the stats timer and the close grace.
 */
import { qosProfile } from '@svc/qos';
import { FakeClock, flushMicrotasks, memoryLogger } from '@svc/runtime/testing';
import { FramePacker } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { PilotSession } from '../src/pilot-session/session.js';
import { PILOT_SESSION_MOVES } from '../src/pilot-session/state.js';
import { type SessionGrant, SessionRegistry } from '../src/session-registry.js';
import { FakeSession } from './support/fake-session.js';
import { expectOnlyListedMoves } from './support/transitions.js';

const GRACE_MS = 2000;
const profile = qosProfile('balanced');

const grant = (jti: string): SessionGrant => ({
  ok: true,
  sub: `user-${jti}`,
  scope: 'drive',
  jti,
  exp: Math.floor(Date.UTC(2026, 0, 1) / 1000) + 300,
});

function harness(options: { graceMs?: number } = {}) {
  const clock = new FakeClock();
  const registry = new SessionRegistry({ maxSessions: 2, now: () => clock.wallNow() });
  const session = new FakeSession();
  const checks: { token: string; settle: (grant: SessionGrant) => void; fail: (err: unknown) => void }[] = [];
  let closed = 0;
  const pilot = new PilotSession({
    session,
    channels: [],
    registry,
    authorize: ({ token }) =>
      new Promise<SessionGrant>((settle, fail) => {
        checks.push({ token, settle, fail });
      }),
    profile,
    logger: memoryLogger(),
    clock,
    closeGraceMs: options.graceMs ?? GRACE_MS,
    onClose: () => closed++,
  });
  return { clock, registry, session, checks, pilot, closedCalls: () => closed };
}

type Harness = ReturnType<typeof harness>;

function hello(h: Harness, token = 'drive:a'): void {
  h.session.pilotSends({ type: 'hello', v: 1, token });
}

async function active(h: Harness = harness()): Promise<Harness> {
  hello(h);
  h.checks[0]!.settle(grant('a'));
  await flushMicrotasks();
  expect(h.pilot.state).toBe('active');
  return h;
}

describe('PilotSession states', () => {
  it('awaiting-hello → authorizing: hello starts the token check; a second hello is ignored', () => {
    const h = harness();
    expect(h.pilot.state).toBe('awaiting-hello');
    hello(h);
    expect(h.pilot.state).toBe('authorizing');
    hello(h, 'drive:b');
    expect(h.checks.map((c) => c.token)).toEqual(['drive:a']);
  });

  it('authorizing → active: welcome, the registry admits it, agent-stats each second', async () => {
    const h = await active();
    expect(h.session.find('welcome')).toMatchObject({ role: 'driver', session_id: h.session.id });
    expect(h.registry.size).toBe(1);
    expect(h.pilot.admitted?.role).toBe('driver');
    h.clock.advance(1000);
    expect(h.session.controlTypes().filter((type) => type !== 'heartbeat')).toEqual([
      'welcome',
      'agent-stats',
    ]);
  });

  it('authorizing → closing: a refused token is denied, and the session closes after the grace', async () => {
    const h = harness();
    hello(h);
    h.checks[0]!.settle({ ok: false, code: 'token-refused', reason: 'token expired' });
    await flushMicrotasks();
    expect(h.pilot.state).toBe('closing');
    expect(h.session.find('denied')).toEqual({
      type: 'denied',
      reason: 'token expired',
      code: 'token-refused',
    });
    expect(h.session.closed).toBe(false);
    h.clock.advance(GRACE_MS);
    expect(h.session.closeInfo).toMatchObject({ code: 1, reason: 'denied' });
    expect(h.pilot.state).toBe('closed');
  });

  it('authorizing → closing → closed at once without a grace', async () => {
    const h = harness({ graceMs: 0 });
    hello(h);
    h.checks[0]!.fail(new Error('verifier down'));
    await flushMicrotasks();
    expect(h.session.find('denied')?.reason).toBe('the robot could not check the token; try again');
    expect(h.pilot.state).toBe('closed');
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('awaiting-hello → closed when the pilot leaves before saying hello', () => {
    const h = harness();
    h.session.pilotLeaves();
    expect(h.pilot.state).toBe('closed');
    expect(h.closedCalls()).toBe(1);
  });

  it('authorizing → closed when the pilot leaves during the token check; the late grant is ignored and counted', async () => {
    const h = harness();
    hello(h);
    h.session.pilotLeaves();
    expect(h.pilot.state).toBe('closed');
    h.checks[0]!.settle(grant('a'));
    await flushMicrotasks();
    expect(h.registry.size).toBe(0);
    expect(h.session.find('welcome')).toBeUndefined();
    expect(h.pilot.lateEvents).toBe(1);
  });

  it('active → closing on revocation: bye, no more stats, closed after the grace; the registry entry ends', async () => {
    const h = await active();
    expect(h.registry.revokeJti('a')).toBe(1);
    expect(h.pilot.state).toBe('closing');
    expect(h.session.control.at(-1)).toEqual({ type: 'bye', reason: 'token revoked' });
    expect(h.registry.size).toBe(0);
    h.clock.advance(GRACE_MS);
    expect(h.session.control.filter((m) => m.type === 'agent-stats')).toEqual([]);
    expect(h.session.closeInfo).toMatchObject({ code: 0, reason: 'token revoked' });
    expect(h.pilot.state).toBe('closed');
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('active → closed when the pilot leaves: the registry frees the slot, timers stop', async () => {
    const h = await active();
    h.session.pilotLeaves();
    expect(h.pilot.state).toBe('closed');
    expect(h.registry.size).toBe(0);
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.closedCalls()).toBe(1);
  });

  it('active → closed on the pilot bye', async () => {
    const h = await active();
    h.session.pilotSends({ type: 'bye', reason: 'done' });
    expect(h.session.closeInfo).toMatchObject({ code: 0, reason: 'pilot said bye: done' });
    expect(h.pilot.state).toBe('closed');
  });

  it('closing → closed when the pilot closes first: the grace timer is cleared', async () => {
    const h = await active();
    h.registry.revoke(h.pilot.admitted!.sessionId, 'ended by an admin');
    expect(h.pilot.state).toBe('closing');
    h.session.pilotLeaves();
    expect(h.pilot.state).toBe('closed');
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('ignores and counts what the pilot sends while closing and after close', async () => {
    const h = await active();
    const command = new FramePacker({ channel: 3 }).pack(
      {
        data: new Uint8Array([1]),
        keyframe: true,
        captureTimestampUs: 0,
        gopPosition: 0,
        parity: { rate: 0, minPerBlock: 1 },
      },
      0,
    ).datagrams;
    h.registry.revokeJti('a');
    for (const d of command) h.session.pilotDatagram(d);
    h.session.pilotSends({ type: 'ping', t: 1 });
    expect(h.pilot.lateEvents).toBe(command.length + 1);
    h.session.pilotLeaves();
    h.session.pilotDatagram(command[0]!);
    expect(h.pilot.lateEvents).toBe(command.length + 2);
    expect(h.pilot.commandStats()['0']).toMatchObject({
      late_events: command.length + 2,
      datagrams_unknown_channel: 0,
    });
    expect(h.session.find('pong')).toBeUndefined();
  });

  it('refuses calls that make no sense: a sample before it is active, a profile change after close', async () => {
    const h = harness();
    expect(() => h.pilot.qosSample(1, 0)).toThrow(
      /qosSample: session fake-\d+ is awaiting-hello, not active/,
    );
    await active(h);
    expect(h.pilot.qosSample(1, 0)).toMatchObject({ packetsSent: 0 });
    h.pilot.profileChanged(qosProfile('latency'));
    expect(h.session.find('qos')).toEqual({ type: 'qos', profile: 'latency', presentation_delay_ms: 50 });
    h.session.pilotLeaves();
    expect(() => h.pilot.profileChanged(profile)).toThrow(TypeError);
    expect(() => h.pilot.qosSample(1, 0)).toThrow(TypeError);
  });

  it('refuses every move the life cycle does not have, naming both states', () => {
    expect(expectOnlyListedMoves('PilotSession', PILOT_SESSION_MOVES)).toBe(26);
  });
});
