/**
 * Signalling v2 on a listening svc-cloud (`docs/protocol/signalling.md`), with real `ws` clients, on
 * PGlite and PostgreSQL: robot authentication and its denials, replacement, offers and the driver
 * slot, pilot tokens, limits, deadlines, presence in the robot API, revocation and deletion.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeClock, flushMicrotasks, memoryLogger } from '@svc/runtime/testing';
import { SIGNAL_SUBPROTOCOL } from '@svc/wire';
import { and, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auditLog, type CloudDb, robots } from '../src/db/index.js';
import {
  type ConnectionEvent,
  type ConnectionState,
  nextState,
  type OpenState,
  type PilotClaims,
  RateBucket,
  RobotKeyLoader,
  RobotPresence,
  SignalConnection,
  SignallingServer,
  type SignalSocket,
  type VerifiedSessionToken,
} from '../src/signalling/index.js';
import { databaseBackends, type TestDatabase } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';
import {
  announcement,
  type Message,
  newRobotIdentity,
  robotAuth,
  type SignallingHarness,
  startSignalling,
  TestSocket,
} from './support/signalling.js';

describe.each(databaseBackends)('signalling on $name', (backend) => {
  let provider: TestProvider;
  let h: SignallingHarness;
  let alice: { token: string; orgId: string };
  let bob: { token: string; orgId: string };
  let serial = 0;
  const id = (what: string) => `${what}-${++serial}`;

  beforeAll(async () => {
    provider = await startTestProvider();
    h = await startSignalling({ backend, provider });
    alice = await h.signIn({ sub: 'user-alice' });
    bob = await h.signIn({ sub: 'user-bob' });
    expect(alice.orgId).not.toBe(bob.orgId);
  });
  afterEach(() => h.closeSockets());
  afterAll(async () => {
    await h?.dispose();
    await provider?.close();
  });

  describe('robot authentication', () => {
    it('admits an enrolled robot that signs the challenge with its key', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const { socket, answer } = await h.connectRobot(robot);
      expect(answer).toEqual({
        type: 'auth-ok',
        role: 'robot',
        robot_id: robot.robotId,
        org_id: alice.orgId,
        heartbeat_ms: 15_000,
      });
      socket.send({ type: 'heartbeat', t: 7 });
      expect(await socket.next()).toEqual({ type: 'heartbeat-ack', t: 7 });
    });

    it('sends a fresh 32-byte nonce to every connection', async () => {
      const a = await h.socket().expect('challenge');
      const b = await h.socket().expect('challenge');
      expect(a).toEqual({ type: 'challenge', v: 2, nonce: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
      expect(Buffer.from(a.nonce, 'base64url')).toHaveLength(32);
      expect(b.nonce).not.toBe(a.nonce);
    });

    it('refuses a signature that does not verify: denied bad-signature, close 4401', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const socket = h.socket();
      await socket.expect('challenge');
      // Signed over another nonce: a replayed answer.
      socket.send(robotAuth(robot, 'A'.repeat(43)));
      const denied = await socket.expect('denied');
      expect(denied.reason).toBe('bad-signature');
      expect((await socket.closed).code).toBe(4401);
    });

    it('refuses a robot that was never enrolled and says how to enrol: unknown-robot, close 4403', async () => {
      const robot = newRobotIdentity(id('stranger'));
      const { socket, answer } = await h.connectRobot(robot);
      expect(answer.type).toBe('denied');
      expect(answer.reason).toBe('unknown-robot');
      expect(answer.message).toContain('enrol --token');
      expect((await socket.closed).code).toBe(4403);
      const [row] = await h.db.select().from(robots).where(eq(robots.robotId, robot.robotId));
      expect(row).toBeUndefined();
    });

    it('refuses a robot enrolled with another key: key-mismatch, close 4403, with the remedy', async () => {
      const enrolled = await h.robot(id('amr'), alice.orgId);
      const impostor = newRobotIdentity(enrolled.robotId);
      const { socket, answer } = await h.connectRobot(impostor);
      expect(answer).toMatchObject({ type: 'denied', reason: 'key-mismatch' });
      expect(answer.message).toContain('delete the robot in the console and enrol again');
      expect((await socket.closed).code).toBe(4403);
    });

    it('closes a connection that breaks the protocol before auth (4400)', async () => {
      const notJson = h.socket();
      await notJson.expect('challenge');
      notJson.send('hello?');
      expect((await notJson.closed).code).toBe(4400);

      const wrongOrder = h.socket();
      await wrongOrder.expect('challenge');
      wrongOrder.send({ type: 'heartbeat' });
      expect((await wrongOrder.closed).code).toBe(4400);
    });

    it('refuses the upgrade (426) to a client that does not name svc-signal.v2', async () => {
      const old = h.socket(['svc-signal.v1']);
      await expect(old.opened).rejects.toMatchObject({ status: 426 });
      const none = h.socket([]);
      const refusal = await none.opened.then(
        () => undefined,
        (err: { status?: number; body?: string }) => err,
      );
      expect(refusal?.status).toBe(426);
      expect(refusal?.body).toContain(SIGNAL_SUBPROTOCOL);
    });

    it('replaces the older connection of a robot that connects again (4409)', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const first = await h.onlineRobot(robot);
      const { socket: second, answer } = await h.connectRobot(robot);
      expect(answer.type).toBe('auth-ok');
      expect((await first.closed).code).toBe(4409);
      // The newer connection serves on, and the robot stays online.
      await second.sync();
      const listed = await h.http('GET', `/api/v1/robots/${robot.robotId}`, alice.token);
      expect(listed.body.robot.online).toBe(true);
    });
  });

  describe('robot lookups in a reconnect storm', () => {
    it('answers many robots at once with a few statements, each with its own row or none', async () => {
      const known = [await h.robot(id('amr'), alice.orgId), await h.robot(id('amr'), bob.orgId)];
      let statements = 0;
      const db = new Proxy(h.db, {
        get(target, prop) {
          if (prop !== 'select') return Reflect.get(target, prop);
          return (...args: Parameters<CloudDb['select']>) => {
            statements++;
            return target.select(...args);
          };
        },
      });
      const loader = new RobotKeyLoader({ db, maxBatch: 100 });
      const unknown = Array.from({ length: 248 }, (_, i) => id(`never-enrolled-${i}`));
      // The same robot twice (a connection and the one replacing it) shares one answer.
      const ids = [known[0]!.robotId, known[1]!.robotId, known[0]!.robotId, ...unknown];
      const rows = await Promise.all(ids.map((robotId) => loader.load(robotId)));
      loader.close();

      expect(rows[0]).toEqual({
        robotId: known[0]!.robotId,
        orgId: alice.orgId,
        publicKey: known[0]!.publicKey,
        lastDenialAt: null,
      });
      expect(rows[1]).toEqual({
        robotId: known[1]!.robotId,
        orgId: bob.orgId,
        publicKey: known[1]!.publicKey,
        lastDenialAt: null,
      });
      expect(rows[2]).toEqual(rows[0]);
      expect(rows.slice(3).filter((row) => row !== undefined)).toEqual([]);
      // Two full batches go at once; the rest waits for an answer and goes in one more.
      expect(statements).toBe(3);
    });
  });

  describe('pilots and sessions', () => {
    it('gives a pilot with a valid token an offer with what the robot announced; the robot hears session-open', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const announced = announcement();
      const robotSocket = await h.onlineRobot(robot, announced);
      const token = await h.token({ aud: robot.robotId, scope: 'drive', sub: 'user:pilot-1' });
      const { socket: pilot, answer } = await h.connectPilot(token);
      expect(answer).toEqual({
        type: 'auth-ok',
        role: 'pilot',
        robot_id: robot.robotId,
        scope: 'drive',
        heartbeat_ms: 15_000,
      });
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      const offer = await pilot.expect('offer');
      expect(offer).toEqual({
        type: 'offer',
        session_id: expect.any(String),
        robot_id: robot.robotId,
        role: 'driver',
        candidates: announced.candidates,
        cert_hashes: announced.cert_hashes,
        channels: announced.channels,
        relay: false,
      });
      const open = await robotSocket.expect('session-open');
      expect(open).toEqual({
        type: 'session-open',
        session_id: offer.session_id,
        role: 'driver',
        sub: 'user:pilot-1',
        scope: 'drive',
        jti: expect.any(String),
        exp: expect.any(Number),
      });
    });

    it('holds one driver slot: the first drive pilot drives, the next observes until the slot frees', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const robotSocket = await h.onlineRobot(robot);
      const offerFor = async (scope: 'drive' | 'observe') => {
        const { socket } = await h.connectPilot(await h.token({ aud: robot.robotId, scope }));
        socket.send({ type: 'connect', robot_id: robot.robotId });
        const offer = await socket.expect('offer');
        const open = await robotSocket.expect('session-open');
        expect(open.session_id).toBe(offer.session_id);
        expect(open.role).toBe(offer.role);
        return { socket, offer };
      };

      const first = await offerFor('drive');
      expect(first.offer.role).toBe('driver');
      robotSocket.send({
        type: 'session-started',
        session_id: first.offer.session_id,
        role: 'driver',
        sub: 'user:pilot',
      });
      const second = await offerFor('drive');
      expect(second.offer.role).toBe('observer');
      const watcher = await offerFor('observe');
      expect(watcher.offer.role).toBe('observer');

      // The robot reports the driver's session ended: the slot frees.
      robotSocket.send({ type: 'session-ended', session_id: first.offer.session_id });
      await robotSocket.sync();
      const third = await offerFor('drive');
      expect(third.offer.role).toBe('driver');

      // The pilot leaves: the slot frees.
      third.socket.send({ type: 'leave', session_id: third.offer.session_id });
      await third.socket.sync();
      const fourth = await offerFor('drive');
      expect(fourth.offer.role).toBe('driver');

      // An offer that never starts on the robot frees the slot after 30 s.
      h.clock.advance(29_000);
      h.signalling.sweep();
      expect((await offerFor('drive')).offer.role).toBe('observer');
      h.clock.advance(1_000);
      h.signalling.sweep();
      // Keep the robot within its heartbeat deadline after the clock moved.
      await robotSocket.sync();
      expect((await offerFor('drive')).offer.role).toBe('driver');
    });

    it('frees the slot when the robot disconnects', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const first = await h.onlineRobot(robot);
      const { socket: pilot } = await h.connectPilot(await h.token({ aud: robot.robotId, scope: 'drive' }));
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      const offer = await pilot.expect('offer');
      expect(offer.role).toBe('driver');
      first.send({
        type: 'session-started',
        session_id: offer.session_id,
        role: 'driver',
        sub: 'user:pilot',
      });
      await first.sync();
      // The robot goes silent and is dropped (the pilot keeps talking).
      h.clock.advance(45_000);
      await pilot.sync();
      h.signalling.sweep();
      expect((await first.closed).code).toBe(4408);
      // The pilot, which holds a session on it, is told.
      expect(await pilot.sync()).toEqual([{ type: 'robot-offline', robot_id: robot.robotId }]);
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      expect(await pilot.next()).toEqual({ type: 'robot-offline', robot_id: robot.robotId });
      // Back, with no sessions: the slot is free.
      await h.onlineRobot(robot);
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      expect((await pilot.expect('offer')).role).toBe('driver');
    });

    it('keeps the sessions a replacing connection announces (the robot kept them)', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const first = await h.onlineRobot(robot);
      const { socket: pilot } = await h.connectPilot(await h.token({ aud: robot.robotId, scope: 'drive' }));
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      const offer = await pilot.expect('offer');
      first.send({
        type: 'session-started',
        session_id: offer.session_id,
        role: 'driver',
        sub: 'user:pilot',
      });
      await first.sync();
      await h.onlineRobot(
        robot,
        announcement({ sessions: [{ session_id: offer.session_id, role: 'driver', sub: 'user:pilot' }] }),
      );
      expect((await first.closed).code).toBe(4409);
      // Told who drives after the offer, and again after the robot's announce: the same session.
      const driver = {
        type: 'driver',
        robot_id: robot.robotId,
        session_id: offer.session_id,
        user: { id: 'user:pilot', name: null },
      };
      expect(await pilot.sync()).toEqual([driver, driver]);
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      expect((await pilot.expect('offer')).role).toBe('observer');
      const listed = await h.http('GET', `/api/v1/robots/${robot.robotId}`, alice.token);
      expect(listed.body.robot.sessions).toContainEqual({
        sessionId: offer.session_id,
        role: 'driver',
        path: 'direct',
        backend: 'quic',
      });
    });

    it('denies a token for robot A asking for robot B (forbidden), and the connection stays usable', async () => {
      const a = await h.robot(id('amr'), alice.orgId);
      const b = await h.robot(id('amr'), alice.orgId);
      await h.onlineRobot(b);
      const { socket } = await h.connectPilot(await h.token({ aud: a.robotId, scope: 'drive' }));
      socket.send({ type: 'connect', robot_id: b.robotId });
      const denied = await socket.expect('denied');
      expect(denied).toMatchObject({ reason: 'forbidden', robot_id: b.robotId });
      expect(denied.message).toContain(a.robotId);
      await socket.sync();
    });

    it('refuses an expired or forged token: denied bad-token, close 4401', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const expired = await h.connectPilot(
        await h.token({ aud: robot.robotId, scope: 'drive', expInS: -10 }),
      );
      expect(expired.answer).toMatchObject({ type: 'denied', reason: 'bad-token' });
      expect((await expired.socket.closed).code).toBe(4401);
      const forged = await h.connectPilot(
        await h.token({ aud: robot.robotId, scope: 'drive', key: 'foreign' }),
      );
      expect(forged.answer).toMatchObject({ type: 'denied', reason: 'bad-token' });
      expect((await forged.socket.closed).code).toBe(4401);
      const garbage = await h.connectPilot('not-a-token');
      expect(garbage.answer).toMatchObject({ type: 'denied', reason: 'bad-token' });
      expect((await garbage.socket.closed).code).toBe(4401);
    });

    it('answers robot-offline for a robot that is not connected', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const { socket } = await h.connectPilot(await h.token({ aud: robot.robotId, scope: 'observe' }));
      socket.send({ type: 'connect', robot_id: robot.robotId });
      expect(await socket.next()).toEqual({ type: 'robot-offline', robot_id: robot.robotId });
    });

    it('answers bad-message to an authenticated client and not-allowed to the wrong role', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const robotSocket = await h.onlineRobot(robot);
      robotSocket.send('{"type":"announce"');
      expect(await robotSocket.next()).toMatchObject({ type: 'error', code: 'bad-message' });
      robotSocket.send(announcement({ cert_hashes: ['NOT-HEX'] }));
      const bad = await robotSocket.next();
      expect(bad).toMatchObject({ type: 'error', code: 'bad-message' });
      expect(bad.message).toContain('cert_hashes');
      robotSocket.send({ type: 'connect', robot_id: robot.robotId });
      expect(await robotSocket.next()).toMatchObject({ type: 'error', code: 'not-allowed' });
      await robotSocket.sync();
    });
  });

  describe('limits and deadlines', () => {
    it('closes a connection that sends a message over 64 KiB (1009)', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const socket = await h.onlineRobot(robot);
      socket.send(JSON.stringify({ type: 'heartbeat', pad: 'x'.repeat(64 * 1024) }));
      expect((await socket.closed).code).toBe(1009);
    });

    it('drops a flood with rate-limited errors, and closes it after 10 s over the limit (4429)', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const socket = await h.onlineRobot(robot);
      const start = h.clock.now();
      let acks = 0;
      let limited = 0;
      let closedAt: number | undefined;
      // 100 messages a second, in steps of half a second on the server's clock.
      for (let step = 0; step < 40 && closedAt === undefined; step++) {
        for (let i = 0; i < 50; i++) socket.send({ type: 'heartbeat' });
        for (let i = 0; i < 50; i++) {
          const reply = await socket.nextOrClose();
          if (reply === undefined) {
            closedAt = h.clock.now();
            break;
          }
          if (reply.type === 'heartbeat-ack') acks++;
          else if (reply.type === 'error' && reply.code === 'rate-limited') limited++;
          else throw new Error(`unexpected ${JSON.stringify(reply)}`);
        }
        h.clock.advance(500);
      }
      expect((await socket.closed).code).toBe(4429);
      expect(closedAt! - start).toBeGreaterThanOrEqual(10_000);
      // A burst of 40, then 20 a second.
      expect(acks).toBeGreaterThanOrEqual(40 + 19 * 10);
      expect(limited).toBeGreaterThan(0);
    });

    it('closes a connection that sends no auth within 10 s (4408)', async () => {
      const socket = h.socket();
      await socket.expect('challenge');
      h.clock.advance(9_000);
      h.signalling.sweep();
      h.clock.advance(1_000);
      h.signalling.sweep();
      expect((await socket.closed).code).toBe(4408);
    });

    it('closes a robot not heard from for three heartbeat periods (4408) and shows it offline', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const socket = await h.onlineRobot(robot);
      h.clock.advance(44_000);
      h.signalling.sweep();
      await socket.sync();
      h.clock.advance(45_000);
      h.signalling.sweep();
      expect((await socket.closed).code).toBe(4408);
      const listed = await h.http('GET', `/api/v1/robots/${robot.robotId}`, alice.token);
      expect(listed.body.robot.online).toBe(false);
      await h.signalling.flushLastSeen();
      const [row] = await h.db.select().from(robots).where(eq(robots.robotId, robot.robotId));
      expect(row?.lastSeenAt).toBeInstanceOf(Date);
    });
  });

  describe('presence and the robot API', () => {
    it('shows online, channels, candidates and sessions in GET /api/v1/robots', async () => {
      const online = await h.robot(id('amr'), alice.orgId);
      const offline = await h.robot(id('amr'), alice.orgId);
      const announced = announcement();
      const robotSocket = await h.onlineRobot(online, announced);
      const { socket: pilot } = await h.connectPilot(await h.token({ aud: online.robotId, scope: 'drive' }));
      pilot.send({ type: 'connect', robot_id: online.robotId });
      const offer = await pilot.expect('offer');
      await robotSocket.expect('session-open');

      const list = await h.http('GET', '/api/v1/robots', alice.token);
      expect(list.status).toBe(200);
      const byId = new Map<string, Message>(list.body.robots.map((r: Message) => [r.robotId, r]));
      expect(byId.get(online.robotId)).toMatchObject({
        online: true,
        channels: announced.channels,
        candidates: announced.candidates,
        sessions: [{ sessionId: offer.session_id, role: 'driver', path: 'direct', backend: 'quic' }],
        lastSeenAt: expect.any(String),
      });
      expect(byId.get(offline.robotId)).toMatchObject({ online: false, channels: [], sessions: [] });
      // Another org's member sees neither.
      const other = await h.http('GET', '/api/v1/robots', bob.token);
      expect(other.body.robots.map((r: Message) => r.robotId)).not.toContain(online.robotId);
      expect((await h.http('GET', `/api/v1/robots/${online.robotId}`, bob.token)).status).toBe(404);
    });

    it('lets an admin revoke a session: the robot hears session-revoked, the token is refused after', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const robotSocket = await h.onlineRobot(robot);
      const token = await h.token({ aud: robot.robotId, scope: 'drive', sub: 'user:revoked' });
      const { socket: pilot } = await h.connectPilot(token);
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      const offer = await pilot.expect('offer');
      const open = await robotSocket.expect('session-open');
      robotSocket.send({
        type: 'session-started',
        session_id: offer.session_id,
        role: 'driver',
        sub: 'user:revoked',
      });
      await robotSocket.sync();

      const path = `/api/v1/robots/${robot.robotId}/sessions`;
      expect((await h.http('GET', path, alice.token)).body.sessions).toEqual([
        {
          sessionId: offer.session_id,
          role: 'driver',
          sub: 'user:revoked',
          started: true,
          path: 'direct',
          backend: 'quic',
        },
      ]);
      // Another org's admin neither sees nor ends it.
      expect((await h.http('GET', path, bob.token)).status).toBe(404);
      expect((await h.http('DELETE', `${path}/${offer.session_id}`, bob.token)).status).toBe(404);
      expect(await robotSocket.sync()).toEqual([]);

      expect((await h.http('DELETE', `${path}/${offer.session_id}`, alice.token)).status).toBe(204);
      expect(await robotSocket.next()).toEqual({
        type: 'session-revoked',
        session_id: offer.session_id,
        jti: open.jti,
        reason: 'revoked by an admin',
      });
      expect((await h.http('GET', path, alice.token)).body.sessions).toEqual([]);
      expect((await h.http('DELETE', `${path}/${offer.session_id}`, alice.token)).status).toBe(404);
      const entries = await h.db
        .select()
        .from(auditLog)
        .where(and(eq(auditLog.action, 'session.revoke'), eq(auditLog.targetId, robot.robotId)));
      expect(entries).toHaveLength(1);
      expect(entries[0]?.orgId).toBe(alice.orgId);

      // The pilot heard who drove after its offer; it holds no session on the robot any more, so it
      // hears nothing of the slot since.
      expect((await pilot.sync()).map((m: { session_id: string | null }) => m.session_id)).toEqual([
        offer.session_id,
      ]);
      // The revoked token opens nothing more.
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      expect(await pilot.expect('denied')).toMatchObject({ reason: 'bad-token' });
      expect((await pilot.closed).code).toBe(4401);
    });

    it('deleting a robot revokes its sessions and denies its connection (robot-deleted, 4403)', async () => {
      const robot = await h.robot(id('amr'), alice.orgId);
      const robotSocket = await h.onlineRobot(robot);
      const { socket: pilot } = await h.connectPilot(await h.token({ aud: robot.robotId, scope: 'observe' }));
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      const offer = await pilot.expect('offer');
      await robotSocket.expect('session-open');

      expect((await h.http('DELETE', `/api/v1/robots/${robot.robotId}`, bob.token)).status).toBe(404);
      expect(await robotSocket.sync()).toEqual([]);
      expect((await h.http('DELETE', `/api/v1/robots/${robot.robotId}`, alice.token)).status).toBe(204);
      expect(await robotSocket.next()).toMatchObject({
        type: 'session-revoked',
        session_id: offer.session_id,
        reason: 'robot-deleted',
      });
      expect(await robotSocket.next()).toMatchObject({ type: 'denied', reason: 'robot-deleted' });
      expect((await robotSocket.closed).code).toBe(4403);
      // It does not come back with its old key.
      const { answer } = await h.connectRobot(robot);
      expect(answer).toMatchObject({ type: 'denied', reason: 'unknown-robot' });
    });
  });
});

describe.each(databaseBackends)('open dev enrolment on $name', (backend) => {
  let provider: TestProvider;
  let h: SignallingHarness;
  /** Every log line signalling wrote. */
  const log = memoryLogger();

  beforeAll(async () => {
    provider = await startTestProvider();
    h = await startSignalling({
      backend,
      provider,
      env: { SVC_DEV_OPEN_ENROLMENT: '1' },
      signalling: { logger: log },
    });
  });

  it('never logs a nonce, a signature or a token', async () => {
    const robot = newRobotIdentity('dev-bot-logs');
    const secrets: string[] = [];
    // Admitted, then a bad signature, then a forged and a good pilot token.
    const ok = h.socket();
    const challenge = await ok.expect('challenge');
    const auth = robotAuth(robot, challenge.nonce);
    secrets.push(challenge.nonce, String(auth.sig));
    ok.send(auth);
    await ok.expect('auth-ok');
    ok.send(announcement());
    await ok.sync();
    const bad = h.socket();
    const badChallenge = await bad.expect('challenge');
    const badAuth = robotAuth(robot, 'B'.repeat(43));
    secrets.push(badChallenge.nonce, String(badAuth.sig));
    bad.send(badAuth);
    expect((await bad.closed).code).toBe(4401);
    const forged = await h.token({ aud: robot.robotId, scope: 'drive', key: 'foreign' });
    const good = await h.token({ aud: robot.robotId, scope: 'drive' });
    secrets.push(forged, good);
    expect((await h.connectPilot(forged)).answer.reason).toBe('bad-token');
    const pilot = await h.connectPilot(good);
    pilot.socket.send({ type: 'connect', robot_id: robot.robotId });
    await pilot.socket.expect('offer');
    ok.close();

    const all = log.records.map((record) => JSON.stringify(record)).join('\n');
    // The denials and the admission were logged...
    expect(all).toContain('bad-signature');
    expect(all).toContain('bad-token');
    expect(all).toContain('dev-bot-logs');
    // ...without any secret, whole or as its signature part.
    for (const secret of secrets) {
      expect(all).not.toContain(secret);
      expect(all).not.toContain(secret.split('.').at(-1));
    }
  });
  afterAll(async () => {
    await h?.dispose();
    await provider?.close();
  });

  it('records an unknown robot with no org, shown to anonymous callers but not to members of an org', async () => {
    const member = await h.signIn({ sub: 'user-alice' });
    const robot = newRobotIdentity('dev-bot-1');
    const { socket, answer } = await h.connectRobot(robot);
    expect(answer).toEqual({
      type: 'auth-ok',
      role: 'robot',
      robot_id: 'dev-bot-1',
      org_id: null,
      heartbeat_ms: 15_000,
    });
    const [row] = await h.db.select().from(robots).where(eq(robots.robotId, 'dev-bot-1'));
    expect(row).toMatchObject({ orgId: null, publicKey: robot.publicKey, enrolledAt: null });

    socket.send(announcement());
    await socket.sync();
    const anonymous = await h.http('GET', '/api/v1/robots');
    expect(anonymous.body.robots).toContainEqual(
      expect.objectContaining({ robotId: 'dev-bot-1', orgId: null, online: true }),
    );
    expect((await h.http('GET', '/api/v1/robots/dev-bot-1')).body.robot.online).toBe(true);
    const signedIn = await h.http('GET', '/api/v1/robots', member.token);
    expect(signedIn.body.robots.map((r: Message) => r.robotId)).not.toContain('dev-bot-1');

    // Trust on first use: another key for the same id is refused.
    const impostor = await h.connectRobot(newRobotIdentity('dev-bot-1'));
    expect(impostor.answer).toMatchObject({ type: 'denied', reason: 'key-mismatch' });

    // Shutting down tells the robot to come back later (1001).
    const closed = socket.closed;
    await h.signalling.close();
    expect((await closed).code).toBe(1001);
  });
});

// ---------------------------------------------------------------------------------------------
// The connection's state machine: every transition, the refused ones, and late messages.

/** A socket that records what the connection sends and how it closes it. */
function fakeSocket(): SignalSocket & { sent: string[]; closes: { code: number; reason: string }[] } {
  return {
    readyState: 1,
    OPEN: 1,
    sent: [],
    closes: [],
    send(text) {
      this.sent.push(text);
    },
    close(code, reason) {
      this.closes.push({ code, reason });
    },
    terminate() {},
  };
}

const PILOT: PilotClaims = {
  robotId: 'amr-1',
  sub: 'user:p',
  scope: 'drive',
  jti: 'jti-1',
  exp: 2_000_000_000,
};

describe('the signalling connection state machine', () => {
  const clock = new FakeClock(5_000);
  const presence = () => new RobotPresence('amr-1', null, fakeConnection().conn, clock.wallNow());
  const challenged: ConnectionState = { kind: 'challenged', nonce: 'n', deadline: 15_000 };
  const authenticating = (role: 'robot' | 'pilot'): ConnectionState => ({
    kind: 'authenticating',
    role,
    deadline: 15_000,
  });

  /** A connection on a fake socket, opened now on the fake clock, with the states it left. */
  function fakeConnection() {
    const socket = fakeSocket();
    const left: OpenState[] = [];
    const conn = new SignalConnection(socket, {
      nonce: 'the-nonce',
      now: clock.now(),
      authTimeoutMs: 10_000,
      rate: { perSecond: 20, burst: 40, closeAfterMs: 10_000 },
      onClosed: (_conn, from) => left.push(from),
    });
    return { conn, socket, left };
  }

  describe('nextState', () => {
    it('challenged --auth--> authenticating, keeping the deadline, for a robot or a pilot', () => {
      expect(nextState(challenged, { type: 'auth', role: 'robot' })).toEqual(authenticating('robot'));
      expect(nextState(challenged, { type: 'auth', role: 'pilot' })).toEqual(authenticating('pilot'));
    });

    it('authenticating a robot --admit-robot--> robot, with its presence', () => {
      const online = presence();
      expect(nextState(authenticating('robot'), { type: 'admit-robot', presence: online })).toEqual({
        kind: 'robot',
        presence: online,
      });
    });

    it('authenticating a pilot --admit-pilot--> pilot, with its claims and no session yet', () => {
      expect(nextState(authenticating('pilot'), { type: 'admit-pilot', claims: PILOT })).toEqual({
        kind: 'pilot',
        claims: PILOT,
        sessions: new Set(),
      });
    });

    it('every open state --close--> closed with the code; closing a closed one changes nothing', () => {
      const open: ConnectionState[] = [
        challenged,
        authenticating('robot'),
        { kind: 'robot', presence: presence() },
        { kind: 'pilot', claims: PILOT, sessions: new Set(['s']) },
      ];
      for (const from of open) {
        expect(nextState(from, { type: 'close', code: 4408 })).toEqual({ kind: 'closed', code: 4408 });
      }
      const closed: ConnectionState = { kind: 'closed', code: 4401 };
      expect(nextState(closed, { type: 'close', code: 1000 })).toBe(closed);
    });

    it('has no other transition', () => {
      const refused: [ConnectionState, ConnectionEvent][] = [
        [challenged, { type: 'admit-robot', presence: presence() }],
        [challenged, { type: 'admit-pilot', claims: PILOT }],
        [authenticating('robot'), { type: 'auth', role: 'robot' }],
        [authenticating('robot'), { type: 'admit-pilot', claims: PILOT }],
        [authenticating('pilot'), { type: 'admit-robot', presence: presence() }],
        [
          { kind: 'robot', presence: presence() },
          { type: 'auth', role: 'robot' },
        ],
        [
          { kind: 'pilot', claims: PILOT, sessions: new Set() },
          { type: 'admit-pilot', claims: PILOT },
        ],
        [
          { kind: 'closed', code: 4401 },
          { type: 'auth', role: 'pilot' },
        ],
        [
          { kind: 'closed', code: 4401 },
          { type: 'admit-robot', presence: presence() },
        ],
      ];
      for (const [from, event] of refused)
        expect([from.kind, event.type, nextState(from, event)]).toEqual([from.kind, event.type, undefined]);
    });
  });

  describe('SignalConnection', () => {
    it('starts challenged, with the auth deadline on its clock', () => {
      const { conn } = fakeConnection();
      expect(conn.state).toEqual({ kind: 'challenged', nonce: 'the-nonce', deadline: clock.now() + 10_000 });
      expect(conn.isClosed).toBe(false);
    });

    it('hands out the nonce when authentication starts, and admits a robot', () => {
      const { conn } = fakeConnection();
      expect(conn.beginAuth('robot')).toBe('the-nonce');
      expect(conn.state).toMatchObject({ kind: 'authenticating', role: 'robot' });
      const online = new RobotPresence('amr-1', null, conn, clock.wallNow());
      conn.admitRobot(online);
      expect(conn.state).toEqual({ kind: 'robot', presence: online });
    });

    it('admits a pilot, whose offered sessions it forgets when told', () => {
      const { conn } = fakeConnection();
      conn.beginAuth('pilot');
      const state = conn.admitPilot(PILOT);
      state.sessions.add('s-1');
      conn.forget('s-1');
      expect(conn.state).toEqual({ kind: 'pilot', claims: PILOT, sessions: new Set() });
    });

    it('refuses a transition the state does not allow with a TypeError naming both', () => {
      const { conn } = fakeConnection();
      expect(() => conn.admitPilot(PILOT)).toThrow(
        new TypeError('signalling connection: cannot admit a pilot when challenged'),
      );
      conn.beginAuth('robot');
      expect(() => conn.beginAuth('robot')).toThrow(
        new TypeError('signalling connection: cannot start authenticating when authenticating a robot'),
      );
      expect(() => conn.admitPilot(PILOT)).toThrow(
        new TypeError('signalling connection: cannot admit a pilot when authenticating a robot'),
      );
      conn.close(4401, 'bad-signature');
      expect(() => conn.admitRobot(presence())).toThrow(
        new TypeError('signalling connection: cannot admit a robot when closed'),
      );
      // A refused transition changes nothing.
      expect(conn.state).toEqual({ kind: 'closed', code: 4401 });
    });

    it('closes once: one close frame, the state it left reported once, nothing sent after', () => {
      const { conn, socket, left } = fakeConnection();
      conn.beginAuth('pilot');
      conn.admitPilot(PILOT);
      expect(conn.close(4408, 'nothing heard for three heartbeat periods')).toBe(true);
      expect(conn.close(1001, 'server shutting down')).toBe(false);
      conn.ended(1005);
      conn.send({ type: 'robot-offline', robot_id: 'amr-1' });
      expect(socket.closes).toEqual([{ code: 4408, reason: 'nothing heard for three heartbeat periods' }]);
      expect(left).toEqual([{ kind: 'pilot', claims: PILOT, sessions: new Set() }]);
      expect(socket.sent).toEqual([]);
      expect(conn.state).toEqual({ kind: 'closed', code: 4408 });
    });

    it('is closed by the peer without a close frame of its own', () => {
      const { conn, socket, left } = fakeConnection();
      conn.ended(1006);
      expect(conn.state).toEqual({ kind: 'closed', code: 1006 });
      expect(socket.closes).toEqual([]);
      expect(left).toEqual([{ kind: 'challenged', nonce: 'the-nonce', deadline: clock.now() + 10_000 }]);
    });

    it('denies: the denied message, then the close with the reason', () => {
      const { conn, socket } = fakeConnection();
      conn.deny('unknown-robot', 'x'.repeat(600), 4403);
      expect(JSON.parse(socket.sent[0]!)).toMatchObject({ type: 'denied', reason: 'unknown-robot' });
      expect(JSON.parse(socket.sent[0]!).message.length).toBeLessThanOrEqual(512);
      expect(socket.closes).toEqual([{ code: 4403, reason: 'unknown-robot' }]);
    });
  });

  describe('RateBucket on fake time', () => {
    it('admits a burst, then the rate; drops the rest; says to close after a long run over the rate', () => {
      const time = new FakeClock();
      const bucket = new RateBucket({ perSecond: 20, burst: 40, closeAfterMs: 10_000 }, time.now());
      const take = (n: number) => Array.from({ length: n }, () => bucket.take(time.now()));
      expect(take(41)).toEqual([...Array(40).fill('admitted'), 'dropped']);
      time.advance(500);
      expect(take(11)).toEqual([...Array(10).fill('admitted'), 'dropped']);
      // Still over the rate every half second: closed once the run lasts 10 s.
      for (let i = 0; i < 18; i++) {
        time.advance(500);
        expect(take(11).at(-1)).toBe('dropped');
      }
      time.advance(500);
      expect(take(11).at(-1)).toBe('over-too-long');
    });

    it('ends a run over the rate after a second without a dropped message', () => {
      const time = new FakeClock();
      const bucket = new RateBucket({ perSecond: 20, burst: 2, closeAfterMs: 1_500 }, time.now());
      expect([bucket.take(0), bucket.take(0), bucket.take(0)]).toEqual(['admitted', 'admitted', 'dropped']);
      time.advance(1_000);
      expect(bucket.take(time.now())).toBe('admitted');
      time.advance(1_000);
      expect([bucket.take(time.now()), bucket.take(time.now()), bucket.take(time.now())]).toEqual([
        'admitted',
        'admitted',
        'dropped',
      ]);
    });
  });
});

/**
 * A signalling server alone on 127.0.0.1 port 0, on fake time (its sweep timer fires as the test
 * advances the clock), with a pilot token verifier the test answers for.
 */
async function startBareSignalling(db: CloudDb) {
  const clock = new FakeClock(0, Date.now());
  const log = memoryLogger();
  const held = new Map<string, (claims: VerifiedSessionToken) => void>();
  const askedFor = new Map<string, () => void>();
  const claimsFor = (aud: string): VerifiedSessionToken => ({
    sub: 'user:pilot',
    aud,
    scope: 'drive',
    jti: randomUUID(),
    exp: Math.floor(clock.wallNow() / 1000) + 300,
  });
  const signalling = new SignallingServer({
    db,
    devOpenEnrolment: false,
    logger: log,
    clock,
    // `good:<robot>` verifies, `held:<name>` waits for `release(name)`, anything else is refused.
    verifySessionToken: (token) => {
      const [kind, value = ''] = token.split(':');
      if (kind === 'good') return Promise.resolve(claimsFor(value));
      if (kind === 'held') {
        askedFor.get(value)?.();
        return new Promise((resolve) => held.set(value, resolve));
      }
      return Promise.reject(
        Object.assign(new Error('the signature does not verify'), { code: 'token-invalid' }),
      );
    },
  });
  const http = createServer();
  signalling.attach(http);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/ws`;
  const sockets: TestSocket[] = [];
  return {
    clock,
    log,
    signalling,
    socket(): TestSocket {
      const socket = new TestSocket(url);
      sockets.push(socket);
      return socket;
    },
    /** Resolves once the held token `name` is being verified (the connection is authenticating). */
    asked(name: string): Promise<void> {
      return new Promise((resolve) => askedFor.set(name, resolve));
    },
    /** Answers the held token `name` as verifying for `robotId`. */
    release(name: string, robotId: string): void {
      held.get(name)?.(claimsFor(robotId));
    },
    async pilot(token: string): Promise<{ socket: TestSocket; answer: Message }> {
      const socket = this.socket();
      await socket.expect('challenge');
      socket.send({ type: 'auth', v: 2, token });
      return { socket, answer: await socket.next() };
    },
    async close(): Promise<void> {
      for (const socket of sockets) socket.close();
      const closing = signalling.close();
      clock.advance(2_000);
      await closing;
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

describe('signalling connections on fake time', () => {
  let test: TestDatabase;
  let bare: Awaited<ReturnType<typeof startBareSignalling>>;

  beforeAll(async () => {
    test = await databaseBackends[0]!.create();
  });
  afterAll(async () => {
    await test?.dispose();
  });
  beforeEach(async () => {
    bare = await startBareSignalling(test.database.db);
  });
  afterEach(async () => {
    await bare?.close();
  });

  const enrolled = async (robotId: string) => {
    const robot = newRobotIdentity(robotId);
    await test.database.db.insert(robots).values({ robotId, orgId: null, publicKey: robot.publicKey });
    return robot;
  };

  it('challenged -> authenticating -> robot: a robot that signs the challenge is online', async () => {
    const robot = await enrolled(`fake-time-${randomUUID()}`);
    const socket = bare.socket();
    const challenge = await socket.expect('challenge');
    socket.send(robotAuth(robot, challenge.nonce));
    expect(await socket.next()).toMatchObject({ type: 'auth-ok', role: 'robot', robot_id: robot.robotId });
    expect(bare.signalling.presenceOf(robot.robotId)?.online).toBe(true);
  });

  it('challenged -> authenticating -> pilot: a pilot whose token verifies is admitted', async () => {
    const { answer } = await bare.pilot('good:amr-7');
    expect(answer).toMatchObject({ type: 'auth-ok', role: 'pilot', robot_id: 'amr-7' });
    expect(bare.signalling.stats()).toMatchObject({ connections: 1, pilots: 1 });
  });

  it('challenged -> closed: no auth within 10 s of the challenge (4408); an auth just before is in time', async () => {
    const early = bare.socket();
    const late = bare.socket();
    await early.expect('challenge');
    await late.expect('challenge');
    bare.clock.advance(9_999);
    early.send({ type: 'auth', v: 2, token: 'good:amr-7' });
    expect(await early.next()).toMatchObject({ type: 'auth-ok' });
    bare.clock.advance(1);
    expect(await late.closed).toEqual({ code: 4408, reason: 'no auth within the deadline' });
    await early.sync();
  });

  it('authenticating -> closed: the deadline passes while the token is checked (4408); its late answer is dropped', async () => {
    const socket = bare.socket();
    await socket.expect('challenge');
    const asked = bare.asked('slow');
    socket.send({ type: 'auth', v: 2, token: 'held:slow' });
    await asked;
    bare.clock.advance(10_000);
    expect((await socket.closed).code).toBe(4408);
    bare.release('slow', 'amr-7');
    await flushMicrotasks();
    expect(bare.signalling.stats().pilots).toBe(0);
    expect(await socket.nextOrClose()).toBeUndefined();
    expect(bare.log.records.filter((r) => r.level === 'error')).toEqual([]);
  });

  it('authenticating -> closed: a message before auth-ok breaks the protocol (4400)', async () => {
    const socket = bare.socket();
    await socket.expect('challenge');
    socket.send({ type: 'auth', v: 2, token: 'held:pending' });
    socket.send({ type: 'heartbeat' });
    expect(await socket.closed).toMatchObject({ code: 4400 });
  });

  it('robot and pilot -> closed: nothing heard for three heartbeat periods (4408); the robot goes offline', async () => {
    const robot = await enrolled(`fake-time-${randomUUID()}`);
    const robotSocket = bare.socket();
    robotSocket.send(robotAuth(robot, (await robotSocket.expect('challenge')).nonce));
    await robotSocket.expect('auth-ok');
    const { socket: pilot } = await bare.pilot(`good:${robot.robotId}`);
    // Both were last heard at 0; the sweep runs every second.
    bare.clock.advance(44_999);
    await robotSocket.sync();
    bare.clock.advance(89_000 - 44_999);
    expect(await pilot.closed).toMatchObject({ code: 4408 });
    expect(bare.signalling.presenceOf(robot.robotId)?.online).toBe(true);
    bare.clock.advance(1_000);
    expect(await robotSocket.closed).toMatchObject({ code: 4408 });
    expect(bare.signalling.presenceOf(robot.robotId)).toBeUndefined();
  });

  it('closed: messages that arrive after a denial are ignored and counted', async () => {
    const socket = bare.socket();
    await socket.expect('challenge');
    // Sent the moment the denial arrives, before the close frame behind it is read.
    socket.ws.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'denied') {
        socket.ws.send('{"type":"heartbeat"}');
        socket.ws.send('{"type":"connect","robot_id":"amr-7"}');
      }
    });
    socket.send({ type: 'auth', v: 2, token: 'forged' });
    expect(await socket.next()).toMatchObject({ type: 'denied', reason: 'bad-token' });
    expect(await socket.closed).toMatchObject({ code: 4401 });
    expect(await socket.nextOrClose()).toBeUndefined();
    expect(bare.signalling.stats().lateMessages).toBe(2);
  });
});
