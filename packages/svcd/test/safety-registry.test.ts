/**
 * The driver slot's grace (`driver_grace_ms`) in the session registry, on fake time: the same user
 * takes the slot back inside it, anyone else observes until it passes, and `ended` is reported at
 * once whatever the grace.
 */
import { describe, expect, it } from 'vitest';
import { type AcceptedGrant, type SessionEvent, SessionRegistry } from '../src/session-registry.js';

function registry(driverGraceMs = 5000) {
  let now = 1_000_000;
  const sessions = new SessionRegistry({ maxSessions: 4, driverGraceMs, now: () => now });
  const ended: SessionEvent[] = [];
  sessions.on('ended', (event) => ended.push(event));
  let jti = 0;
  const admit = (sub: string, scope: 'drive' | 'observe' = 'drive') => {
    const grant: AcceptedGrant = { ok: true, sub, scope, jti: `jti-${++jti}`, exp: 2_000_000 };
    const admission = sessions.admit({ sessionId: `s-${jti}`, grant, close: () => {} });
    if (!admission.ok) throw new Error(admission.reason);
    return admission.session;
  };
  return {
    sessions,
    ended,
    admit,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('driver grace', () => {
  it("keeps the slot for the same user: their drive session inside the grace drives again, another user's observes", () => {
    const r = registry();
    const first = r.admit('user:alice');
    expect(first.role).toBe('driver');
    r.sessions.end(first.sessionId, 'pilot silent for 600 ms');
    // Ended at once: robot code parks its actuators now.
    expect(r.ended.map((e) => [e.session.role, e.reason])).toEqual([['driver', 'pilot silent for 600 ms']]);
    expect(r.sessions.driver).toBeUndefined();
    expect(r.sessions.driverReservation).toMatchObject({ sub: 'user:alice', sessionId: first.sessionId });

    r.advance(3000);
    expect(r.admit('user:bob').role).toBe('observer');
    r.advance(1999);
    const back = r.admit('user:alice');
    expect(back.role).toBe('driver');
    expect(r.sessions.driver?.sessionId).toBe(back.sessionId);
    expect(r.sessions.driverReservation).toBeUndefined();
  });

  it('after the grace the slot is free for anyone', () => {
    const r = registry();
    const first = r.admit('user:alice');
    r.sessions.end(first.sessionId);
    r.advance(4999);
    expect(r.admit('user:bob').role).toBe('observer');
    r.advance(1);
    expect(r.sessions.driverReservation).toBeUndefined();
    expect(r.admit('user:bob').role).toBe('driver');
  });

  it('an observe-scoped session of the same user does not take the slot back', () => {
    const r = registry();
    r.sessions.end(r.admit('user:alice').sessionId);
    expect(r.admit('user:alice', 'observe').role).toBe('observer');
    expect(r.sessions.driverReservation?.sub).toBe('user:alice');
  });

  it('an observer leaving reserves nothing', () => {
    const r = registry();
    r.admit('user:alice');
    const watcher = r.admit('user:bob');
    expect(watcher.role).toBe('observer');
    r.sessions.end(watcher.sessionId);
    expect(r.sessions.driverReservation).toBeUndefined();
  });

  it('a revoked driver gets no grace: the service took the slot away', () => {
    const r = registry();
    const first = r.admit('user:alice');
    r.sessions.revoke(first.sessionId, 'taken over');
    expect(r.ended.map((e) => e.reason)).toEqual(['taken over']);
    expect(r.sessions.driverReservation).toBeUndefined();
    expect(r.admit('user:bob').role).toBe('driver');
  });

  it('driver_grace_ms = 0 frees the slot at once', () => {
    const r = registry(0);
    r.sessions.end(r.admit('user:alice').sessionId);
    expect(r.admit('user:bob').role).toBe('driver');
  });

  it('refuses a grace that is not a finite number of at least 0', () => {
    expect(() => new SessionRegistry({ maxSessions: 1, driverGraceMs: -1 })).toThrow(
      /driverGraceMs must be a finite number of at least 0, got -1/,
    );
  });
});
