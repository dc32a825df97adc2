/**
 * A pilot session that moves from the relay to a direct path mid-session (`hello {move: true}`),
 * renews its token, or lets it expire: the robot's side on fake time, with in-memory transports
 * standing in for the relayed and the direct WebTransport sessions.
 */
import { qosProfile } from '@svc/qos';
import { FakeClock, flushMicrotasks, memoryLogger } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import { EXPIRY_GRACE_MS, MOVE_LINGER_MS, PilotSession } from '../src/pilot-session/session.js';
import { type OpenSession, type SessionGrant, SessionRegistry } from '../src/session-registry.js';
import { FakeSession } from './support/fake-session.js';

const profile = qosProfile('balanced');
const START_S = Math.floor(Date.UTC(2026, 0, 1) / 1000);

function grantFor(token: string): SessionGrant {
  // `<sub>:<jti>:<seconds to expiry>`: what the verifier would read from a real token.
  const [sub, jti, life] = token.split(':');
  return { ok: true, sub: sub!, scope: 'drive', jti: jti!, exp: START_S + Number(life) };
}

function robot() {
  const clock = new FakeClock();
  const registry = new SessionRegistry({ maxSessions: 4, now: () => clock.wallNow() });
  const pilots = new Set<PilotSession>();
  const paths: OpenSession[] = [];
  registry.on('path', (s) => paths.push(s));
  const open = (transport: FakeSession): PilotSession => {
    const pilot: PilotSession = new PilotSession({
      session: transport,
      channels: [],
      registry,
      authorize: async ({ token }) => grantFor(token),
      profile,
      logger: memoryLogger(),
      clock,
      onClose: () => pilots.delete(pilot),
      adopt: (move) => {
        for (const other of pilots)
          if (other !== pilot && other.admitted?.sessionId === move.sessionId)
            return other.moveTo(move.transport, move.grant);
        return false;
      },
    });
    pilots.add(pilot);
    return pilot;
  };
  return { clock, registry, pilots, paths, open };
}

async function relayedSession(r: ReturnType<typeof robot>, token = 'user:alice:j1:300') {
  const relayed = new FakeSession();
  relayed.kind = 'relay';
  const pilot = r.open(relayed);
  relayed.pilotSends({ type: 'hello', v: 1, token: token.replace(/^user:/, 'user-') });
  await flushMicrotasks();
  expect(pilot.state).toBe('active');
  return { relayed, pilot, sessionId: pilot.admitted!.sessionId };
}

describe('a session moves from the relay to a direct path', () => {
  it('takes the new transport over: `moved` there, everything after it there, the old one read 1 s more then closed', async () => {
    const r = robot();
    const { relayed, pilot, sessionId } = await relayedSession(r);
    expect(r.registry.get(sessionId)?.path).toBe('relay');

    const direct = new FakeSession();
    const newcomer = r.open(direct);
    direct.pilotSends({ type: 'hello', v: 1, token: 'user-alice:j2:600', session_id: sessionId, move: true });
    await flushMicrotasks();

    expect(direct.find('moved')).toEqual({ type: 'moved', path: 'direct' });
    expect(direct.find('welcome')).toBeUndefined();
    expect(newcomer.state).toBe('moved');
    expect(r.pilots.has(newcomer)).toBe(false);
    expect(pilot.state).toBe('active');
    // The registry, and through it svc-cloud, hears the new path; the fresher token counts.
    expect(r.paths.map((s) => s.path)).toEqual(['direct']);
    expect(r.registry.get(sessionId)).toMatchObject({ path: 'direct', jti: 'j2', exp: START_S + 600 });

    // The session answers on the new transport now.
    direct.pilotSends({ type: 'ping', t: 5 });
    expect(direct.find('pong')).toMatchObject({ t: 5 });
    expect(relayed.find('pong')).toBeUndefined();
    expect(relayed.closed).toBe(false);
    r.clock.advance(MOVE_LINGER_MS);
    expect(relayed.closeInfo).toMatchObject({ reason: 'the session moved to another path' });
    // Closing the old one does not end the session.
    expect(pilot.state).toBe('active');
    expect(r.registry.size).toBe(1);
    // The new transport's end is the session's end.
    direct.pilotLeaves();
    expect(pilot.state).toBe('closed');
    expect(r.registry.size).toBe(0);
  });

  it('refuses a move with another person’s token, or to a session that is not open', async () => {
    const r = robot();
    const { relayed, pilot, sessionId } = await relayedSession(r);
    const thief = new FakeSession();
    r.open(thief);
    thief.pilotSends({
      type: 'hello',
      v: 1,
      token: 'user-mallory:j9:300',
      session_id: sessionId,
      move: true,
    });
    await flushMicrotasks();
    expect(thief.find('denied')).toMatchObject({ code: 'session-in-use' });
    expect(thief.find('moved')).toBeUndefined();

    const stray = new FakeSession();
    r.open(stray);
    stray.pilotSends({
      type: 'hello',
      v: 1,
      token: 'user-alice:j3:300',
      session_id: 'no-such-session',
      move: true,
    });
    await flushMicrotasks();
    expect(stray.find('denied')).toMatchObject({ code: 'session-in-use' });

    relayed.pilotSends({ type: 'ping', t: 1 });
    expect(relayed.find('pong')).toBeDefined();
    expect(pilot.state).toBe('active');
    expect(r.registry.get(sessionId)?.path).toBe('relay');
  });
});

describe('the session token’s lifetime', () => {
  it('a renewed session outlives its first token; one never renewed ends after its expiry and a grace', async () => {
    const r = robot();
    const renewed = await relayedSession(r, 'user:alice:j1:30');
    const lapsing = await relayedSession(r, 'user:bob:j4:30');

    renewed.relayed.pilotSends({ type: 'renew', token: 'user-alice:j5:120' });
    await flushMicrotasks();
    expect(renewed.relayed.find('renewed')).toEqual({ type: 'renewed', exp: START_S + 120 });

    // A renewal with someone else's token changes nothing.
    lapsing.relayed.pilotSends({ type: 'renew', token: 'user-mallory:j6:120' });
    await flushMicrotasks();
    expect(lapsing.relayed.find('renewed')).toBeUndefined();

    await r.clock.advanceAsync(30_000 + EXPIRY_GRACE_MS + 1000);
    expect(lapsing.pilot.state).not.toBe('active');
    expect(lapsing.relayed.find('bye')?.reason).toMatch(/expired and the pilot did not renew it/);
    expect(renewed.pilot.state).toBe('active');
  });
});
