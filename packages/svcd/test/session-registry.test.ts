import { memoryLogger } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import {
  type AcceptedGrant,
  type Admission,
  type SessionEvent,
  SessionRegistry,
} from '../src/session-registry.js';

const T0 = 1_900_000_000_000; // ms since the epoch

function setup(maxSessions = 4) {
  let now = T0;
  const registry = new SessionRegistry({ maxSessions, now: () => now });
  const closed: { sessionId: string; reason: string }[] = [];
  const events: { type: 'started' | 'ended'; event: SessionEvent }[] = [];
  registry.on('started', (event) => events.push({ type: 'started', event }));
  registry.on('ended', (event) => events.push({ type: 'ended', event }));
  let jtis = 0;
  const grant = (over: Partial<AcceptedGrant> = {}): AcceptedGrant => ({
    ok: true,
    sub: 'user-1',
    scope: 'drive',
    jti: `jti-${++jtis}`,
    exp: Math.floor(T0 / 1000) + 300,
    ...over,
  });
  const admit = (sessionId: string, over: Partial<AcceptedGrant> = {}): Admission =>
    registry.admit({
      sessionId,
      grant: grant(over),
      close: (reason) => closed.push({ sessionId, reason }),
    });
  const role = (a: Admission) => (a.ok ? a.session.role : `refused: ${a.reason}`);
  return {
    registry,
    closed,
    events,
    admit,
    role,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('SessionRegistry', () => {
  it('enforces max_sessions with a reason that names the limit, and frees a place when one ends', () => {
    const { admit, role, registry } = setup(2);
    expect(role(admit('a', { scope: 'observe' }))).toBe('observer');
    expect(role(admit('b', { scope: 'observe' }))).toBe('observer');
    const third = admit('c', { scope: 'observe' });
    expect(third).toEqual({
      ok: false,
      code: 'busy',
      reason: 'robot busy: 2 of 2 sessions in use (max_sessions)',
    });
    expect(registry.size).toBe(2);
    expect(registry.end('a')).toBe(true);
    expect(role(admit('c', { scope: 'observe' }))).toBe('observer');
  });

  it('gives the driver slot to the first drive-scoped session; everyone else observes', () => {
    const { admit, role, registry } = setup();
    expect(role(admit('watcher', { scope: 'observe' }))).toBe('observer');
    expect(role(admit('first', { scope: 'drive' }))).toBe('driver');
    expect(role(admit('second', { scope: 'drive' }))).toBe('observer');
    expect(registry.driver?.sessionId).toBe('first');
  });

  it('an observe-scoped token never drives, even when signalling says driver', () => {
    const { admit, role, registry } = setup();
    expect(role(admit('a', { scope: 'observe', role: 'driver' }))).toBe('observer');
    expect(registry.driver).toBeUndefined();
  });

  it('a drive-scoped session that signalling made an observer observes with the slot free', () => {
    const { admit, role, registry } = setup();
    expect(role(admit('a', { scope: 'drive', role: 'observer' }))).toBe('observer');
    expect(registry.driver).toBeUndefined();
    expect(role(admit('b', { scope: 'drive' }))).toBe('driver');
  });

  it('signalling says driver but another live session holds the slot: the newcomer observes', () => {
    const { admit, role, registry } = setup();
    expect(role(admit('local', { scope: 'drive' }))).toBe('driver');
    expect(role(admit('announced', { scope: 'drive', role: 'driver', sessionId: 'announced' }))).toBe(
      'observer',
    );
    expect(registry.driver?.sessionId).toBe('local');
  });

  it('when the driver leaves the slot is free for the next drive-scoped hello, not an existing observer', () => {
    const { admit, role, registry } = setup();
    expect(role(admit('driver', { scope: 'drive' }))).toBe('driver');
    expect(role(admit('waiting', { scope: 'drive' }))).toBe('observer');
    registry.end('driver');
    expect(registry.driver).toBeUndefined();
    expect(registry.get('waiting')?.role).toBe('observer');
    expect(role(admit('next', { scope: 'drive' }))).toBe('driver');
    expect(registry.driver?.sessionId).toBe('next');
  });

  it('refuses a jti already in use, and accepts it again once that session ended', () => {
    const { admit, role, registry } = setup();
    expect(role(admit('a', { jti: 'same' }))).toBe('driver');
    expect(admit('b', { jti: 'same' })).toEqual({
      ok: false,
      code: 'token-in-use',
      reason: 'token already in use',
    });
    registry.end('a');
    expect(role(admit('b', { jti: 'same' }))).toBe('driver');
  });

  it('refuses a second session with an id already open', () => {
    const { admit } = setup();
    admit('dup');
    const again = admit('dup');
    expect(again.ok).toBe(false);
    expect(!again.ok && again.code).toBe('session-in-use');
  });

  it('revoke(sessionId) closes the session, frees its slot and reports it ended', () => {
    const { admit, role, registry, closed, events } = setup();
    admit('d', { scope: 'drive' });
    admit('o', { scope: 'observe' });
    expect(registry.revoke('d')).toBe(true);
    expect(closed).toEqual([{ sessionId: 'd', reason: 'session revoked' }]);
    expect(registry.driver).toBeUndefined();
    expect(registry.size).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'ended', event: { sessions: 1, reason: 'session revoked' } });
    expect(registry.revoke('d')).toBe(false);
    // The transport reporting the close afterwards changes nothing.
    expect(registry.end('d')).toBe(false);
    expect(role(admit('n', { scope: 'drive' }))).toBe('driver');
  });

  it('revokeJti closes every session of the token and refuses the token until its exp', () => {
    const { admit, role, registry, closed, advance } = setup();
    const exp = Math.floor(T0 / 1000) + 60;
    admit('a', { jti: 'stolen', exp });
    expect(registry.revokeJti('stolen')).toBe(1);
    expect(closed.map((c) => c.sessionId)).toEqual(['a']);
    expect(admit('b', { jti: 'stolen', exp })).toMatchObject({ ok: false, code: 'token-revoked' });
    advance(59_000);
    expect(registry.isRevoked('stolen')).toBe(true);
    advance(1_000);
    expect(registry.isRevoked('stolen')).toBe(false);
    expect(role(admit('c', { jti: 'stolen', exp: exp + 300 }))).toBe('driver');
  });

  it('revokeJti of a token not in use refuses it until the given exp, or a default without one', () => {
    const { admit, registry, advance } = setup();
    expect(registry.revokeJti('early', Math.floor(T0 / 1000) + 10)).toBe(0);
    expect(registry.revokeJti('unknown')).toBe(0);
    expect(admit('a', { jti: 'early' })).toMatchObject({ ok: false, code: 'token-revoked' });
    advance(10_000);
    expect(admit('a', { jti: 'early' }).ok).toBe(true);
    expect(admit('b', { jti: 'unknown' })).toMatchObject({ ok: false, code: 'token-revoked' });
    advance(15 * 60_000);
    expect(admit('b', { jti: 'unknown' }).ok).toBe(true);
  });

  it('reports started and ended with the count of open sessions after the change', () => {
    const { admit, registry, events } = setup();
    admit('a', { scope: 'drive' });
    admit('b', { scope: 'observe' });
    registry.end('a', 'bye');
    registry.end('b');
    expect(
      events.map((e) => [e.type, e.event.session.sessionId, e.event.session.role, e.event.sessions]),
    ).toEqual([
      ['started', 'a', 'driver', 1],
      ['started', 'b', 'observer', 2],
      ['ended', 'a', 'driver', 1],
      ['ended', 'b', 'observer', 0],
    ]);
    expect(events[2]!.event.reason).toBe('bye');
  });

  it('a throwing listener neither breaks admission nor silences the other listeners', () => {
    const logger = memoryLogger();
    const registry = new SessionRegistry({ maxSessions: 2, logger });
    const seen: string[] = [];
    registry.on('started', () => {
      throw new Error('listener bug');
    });
    const off = registry.on('started', (e) => seen.push(e.session.sessionId));
    const admission = registry.admit({
      sessionId: 's',
      grant: { ok: true, sub: 'u', scope: 'drive', jti: 'j', exp: 0 },
      close: () => {},
    });
    expect(admission.ok).toBe(true);
    expect(seen).toEqual(['s']);
    expect(logger.records.filter((r) => r.level === 'error')).toHaveLength(1);
    off();
    registry.admit({
      sessionId: 't',
      grant: { ok: true, sub: 'u', scope: 'drive', jti: 'k', exp: 0 },
      close: () => {},
    });
    expect(seen).toEqual(['s']);
  });

  it('rejects a max_sessions below 1', () => {
    expect(() => new SessionRegistry({ maxSessions: 0 })).toThrow(TypeError);
  });
});
