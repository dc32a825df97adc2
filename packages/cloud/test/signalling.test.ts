/**
 * Signalling v2 on a listening svc-cloud (`docs/protocol/signalling.md`), with real `ws` clients, on
 * PGlite and PostgreSQL: robot authentication and its denials, replacement, offers and the driver
 * slot, pilot tokens, limits, deadlines, presence in the robot API, revocation and deletion.
 */
import { SIGNAL_SUBPROTOCOL } from '@svc/wire';
import { and, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { auditLog, type CloudDb, robots } from '../src/db/index.js';
import { RobotKeyLoader } from '../src/signalling/index.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';
import {
  announcement,
  type Message,
  newRobotIdentity,
  robotAuth,
  type SignallingHarness,
  startSignalling,
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
      });
      expect(rows[1]).toEqual({
        robotId: known[1]!.robotId,
        orgId: bob.orgId,
        publicKey: known[1]!.publicKey,
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
      pilot.send({ type: 'connect', robot_id: robot.robotId });
      expect((await pilot.expect('offer')).role).toBe('observer');
      const listed = await h.http('GET', `/api/v1/robots/${robot.robotId}`, alice.token);
      expect(listed.body.robot.sessions).toContainEqual({ sessionId: offer.session_id, role: 'driver' });
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
        sessions: [{ sessionId: offer.session_id, role: 'driver' }],
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
        { sessionId: offer.session_id, role: 'driver', sub: 'user:revoked', started: true },
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
  /** Every log line signalling wrote, as JSON. */
  const lines: string[] = [];
  const capture = (level: string) => (fields: object, message: string) => {
    lines.push(JSON.stringify({ level, ...fields, message }));
  };

  beforeAll(async () => {
    provider = await startTestProvider();
    h = await startSignalling({
      backend,
      provider,
      env: { SVC_DEV_OPEN_ENROLMENT: '1' },
      signalling: {
        logger: {
          debug: capture('debug'),
          info: capture('info'),
          warn: capture('warn'),
          error: capture('error'),
        },
      },
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

    const all = lines.join('\n');
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
