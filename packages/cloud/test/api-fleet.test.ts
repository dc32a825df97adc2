/**
 * The fleet's live view and the robot views around it, on a listening svc-cloud with real robots
 * and pilots (`ws`), read with `fetch` as the console reads it, on PGlite and PostgreSQL: the
 * stream's snapshot and a robot going online, offline and deleted; enrolment, renaming and the
 * driver arriving as events; a member of one org never hearing of another's robots; the stream
 * ending when the membership is removed or the org deleted; the per-user limit; the org filter of
 * `GET /api/v1/robots`; and a robot's last signalling denial, remembered, audited and cleared.
 */
import { randomBytes } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FleetEvent } from '../src/api/fleet-events.js';
// The app's `fleet` decoration is declared there.
import type {} from '../src/api/fleet-feed.js';
import type { RobotView } from '../src/api/robot-view.js';
import { auditLog, memberships, robots, users } from '../src/db/index.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';
import { newRobotIdentity, type SignallingHarness, startSignalling } from './support/signalling.js';
import { FleetStream } from './support/sse.js';

/** A signed-in person: their access token, their own org, their user id. */
interface Person {
  readonly token: string;
  readonly orgId: string;
  readonly userId: string;
}

/** Whether `event` carries `robotId`'s state (added or updated). */
function about(robotId: string, check: (robot: RobotView) => boolean = () => true) {
  return (event: FleetEvent): boolean =>
    (event.type === 'robot-updated' || event.type === 'robot-added') &&
    event.robot.robotId === robotId &&
    check(event.robot);
}

/** The robot ids an event speaks of. */
function robotIdsOf(event: FleetEvent): string[] {
  switch (event.type) {
    case 'snapshot':
      return event.robots.map((r) => r.robotId);
    case 'robot-added':
    case 'robot-updated':
      return [event.robot.robotId];
    case 'robot-removed':
      return [event.robotId];
    case 'end':
      return [];
    default:
      return event satisfies never;
  }
}

describe.each(databaseBackends)('the live fleet on $name', (backend) => {
  let provider: TestProvider;
  let h: SignallingHarness;
  let alice: Person;
  let bob: Person;
  let carol: Person;
  const streams: FleetStream[] = [];
  let serial = 0;
  const id = (what: string) => `${what}-${++serial}`;

  /** Signs `sub` in; their own org is the one self-serve made them. */
  async function person(sub: string): Promise<Person> {
    const { token, orgId } = await h.signIn({ sub });
    const [row] = await h.db.select({ id: users.id }).from(users).where(eq(users.oidcSubject, sub));
    return { token, orgId, userId: row!.id };
  }

  async function open(
    who: Person,
    orgId = who.orgId,
  ): Promise<{ stream: FleetStream; snapshot: FleetEvent }> {
    const stream = await FleetStream.open(h.base, orgId, who.token);
    streams.push(stream);
    const snapshot = await stream.next();
    expect(snapshot.type).toBe('snapshot');
    return { stream, snapshot };
  }

  /** A real HTTP request with a JSON body. */
  async function send(method: 'POST' | 'PATCH' | 'DELETE', path: string, token: string, body?: unknown) {
    const response = await fetch(`${h.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  }

  beforeAll(async () => {
    provider = await startTestProvider();
    h = await startSignalling({ backend, provider });
    alice = await person('user-alice');
    bob = await person('user-bob');
    carol = await person('user-carol');
    expect(alice.orgId).not.toBe(bob.orgId);
  });
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
    h.closeSockets();
  });
  afterAll(async () => {
    await h?.dispose();
    await provider?.close();
  });

  it('is in the OpenAPI document as server-sent events, with the format of its events', async () => {
    const document = await h.http('GET', '/api/v1/openapi.json');
    const operation = document.body.paths['/api/v1/orgs/{org}/fleet/events'].get;
    expect(Object.keys(operation.responses[200].content)).toEqual(['text/event-stream']);
    const schema = operation.responses[200].content['text/event-stream'].schema;
    const types = (schema.oneOf ?? schema.anyOf).map(
      (s: { properties: { type: { enum: [string] } } }) => s.properties.type.enum[0],
    );
    expect(types).toEqual(['snapshot', 'robot-added', 'robot-updated', 'robot-removed', 'end']);
    expect(operation.description).toContain('`snapshot` first');
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['401', '403', '404', '429']));
  });

  it('starts with a snapshot, then a robot going online, offline and deleted, each as an event', async () => {
    const robot = await h.robot(id('amr'), alice.orgId);
    const { stream, snapshot } = await open(alice);
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(snapshot).toMatchObject({ type: 'snapshot', orgId: alice.orgId });
    const listed = await h.http('GET', `/api/v1/robots?org=${alice.orgId}`, alice.token);
    // The snapshot is the list of GET /api/v1/robots?org=, robot for robot.
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual({
      type: 'snapshot',
      orgId: alice.orgId,
      robots: listed.body.robots,
    });
    expect(
      snapshot.type === 'snapshot' && snapshot.robots.find((r) => r.robotId === robot.robotId),
    ).toMatchObject({ online: false, sessions: [], driver: null, lastDenial: null });

    const socket = await h.onlineRobot(robot);
    const online = await stream.until(about(robot.robotId, (r) => r.online && r.channels.length === 2));
    expect(online.event).toMatchObject({
      type: 'robot-updated',
      robot: { robotId: robot.robotId, orgId: alice.orgId, online: true, relay: false },
    });

    socket.close();
    const offline = await stream.until(about(robot.robotId, (r) => !r.online));
    expect(offline.event.type === 'robot-updated' && offline.event.robot.lastSeenAt).toBeInstanceOf(Date);

    expect((await send('DELETE', `/api/v1/robots/${robot.robotId}`, alice.token)).status).toBe(204);
    const removed = await stream.until((e) => e.type === 'robot-removed');
    expect(removed.event).toEqual({ type: 'robot-removed', robotId: robot.robotId, reason: 'deleted' });
  });

  it('sends a robot enrolled into the org, and renamed, as events', async () => {
    const { stream } = await open(alice);
    const made = await send('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, alice.token, {});
    expect(made.status).toBe(201);
    const identity = newRobotIdentity(id('enrolled'));
    const enrolled = await send('POST', '/api/v1/enrol', alice.token, {
      robotId: identity.robotId,
      publicKey: identity.publicKey,
      token: made.body.token,
    });
    expect(enrolled.status).toBe(201);
    const added = await stream.until((e) => e.type === 'robot-added');
    expect(added.event).toMatchObject({
      type: 'robot-added',
      robot: { robotId: identity.robotId, orgId: alice.orgId, name: null, online: false },
    });

    const renamed = await send('PATCH', `/api/v1/robots/${identity.robotId}`, alice.token, {
      name: 'Line 3',
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.robot).toMatchObject({ robotId: identity.robotId, name: 'Line 3' });
    await stream.until(about(identity.robotId, (r) => r.name === 'Line 3'));
    const [entry] = await h.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, 'robot.update'), eq(auditLog.targetId, identity.robotId)));
    expect(entry).toMatchObject({ orgId: alice.orgId, actorId: alice.userId, detail: { name: 'Line 3' } });
  });

  it('shows the sessions and who drives, by user id, name and email', async () => {
    const robot = await h.robot(id('amr'), alice.orgId);
    const robotSocket = await h.onlineRobot(robot);
    const { stream } = await open(alice);
    const sub = `user:${alice.userId}`;
    const { socket: pilot } = await h.connectPilot(
      await h.token({ aud: robot.robotId, scope: 'drive', sub }),
    );
    pilot.send({ type: 'connect', robot_id: robot.robotId });
    const offer = await pilot.expect('offer');
    await robotSocket.expect('session-open');
    robotSocket.send({ type: 'session-started', session_id: offer.session_id, role: 'driver', sub });
    const driving = await stream.until(about(robot.robotId, (r) => r.driver?.name === 'Alice'));
    expect(driving.event.type === 'robot-updated' && driving.event.robot).toMatchObject({
      sessions: [{ sessionId: offer.session_id, role: 'driver' }],
      driver: {
        sessionId: offer.session_id,
        userId: alice.userId,
        name: 'Alice',
        email: 'alice@example.test',
      },
    });
    // The list shows the driver to members of the robot's org, and hides who it is from others.
    const listed = await h.http('GET', `/api/v1/robots/${robot.robotId}`, alice.token);
    expect(listed.body.robot.driver).toEqual({
      sessionId: offer.session_id,
      userId: alice.userId,
      name: 'Alice',
      email: 'alice@example.test',
    });

    pilot.send({ type: 'leave', session_id: offer.session_id });
    await stream.until(about(robot.robotId, (r) => r.driver === null && r.sessions.length === 0));
  });

  it("never sends a member of one org another org's robots", async () => {
    const ours = await h.robot(id('ours'), alice.orgId);
    const theirs = await h.robot(id('theirs'), bob.orgId);
    const { stream: aliceStream, snapshot } = await open(alice);
    const { stream: bobStream } = await open(bob);
    expect(robotIdsOf(snapshot)).not.toContain(theirs.robotId);

    // Bob hears of his robot coming online; Alice then hears of hers, flushed after it.
    await h.onlineRobot(theirs);
    await bobStream.until(about(theirs.robotId, (r) => r.online));
    await h.onlineRobot(ours);
    const { skipped } = await aliceStream.until(about(ours.robotId, (r) => r.online));
    expect(skipped.flatMap(robotIdsOf)).not.toContain(theirs.robotId);
    expect(bobStream.seen.flatMap(robotIdsOf)).not.toContain(ours.robotId);

    // A stream of an org one is not in is refused as the org is: not shown to exist.
    const refused = await fetch(`${h.base}/api/v1/orgs/${bob.orgId}/fleet/events`, {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('not-found');
  });

  it('ends the stream when the member is removed, and when the org is deleted', async () => {
    await h.db.insert(memberships).values({ orgId: alice.orgId, userId: bob.userId, role: 'viewer' });
    const { stream } = await open(bob, alice.orgId);
    const removed = await send('DELETE', `/api/v1/orgs/${alice.orgId}/members/${bob.userId}`, alice.token);
    expect(removed.status).toBe(204);
    expect(await stream.next()).toEqual({
      type: 'end',
      reason: 'membership-removed',
      message: 'you are no longer a member of this organisation',
    });
    await stream.ended;
    expect((await h.http('GET', `/api/v1/robots?org=${alice.orgId}`, bob.token)).status).toBe(404);

    const { stream: carolStream } = await open(carol);
    expect((await send('DELETE', `/api/v1/orgs/${carol.orgId}`, carol.token)).status).toBe(204);
    expect(await carolStream.next()).toMatchObject({ type: 'end', reason: 'org-deleted' });
    await carolStream.ended;
  });

  it('ends a stream whose membership went away without this node hearing, at the next check', async () => {
    await h.db.insert(memberships).values({ orgId: alice.orgId, userId: bob.userId, role: 'viewer' });
    const { stream } = await open(bob, alice.orgId);
    // As if another node removed it.
    await h.db
      .delete(memberships)
      .where(and(eq(memberships.orgId, alice.orgId), eq(memberships.userId, bob.userId)));
    await h.app.fleet.recheck();
    expect(await stream.next()).toMatchObject({ type: 'end', reason: 'membership-removed' });
  });

  it('refuses a user more than five streams at once', async () => {
    // Carol has no stream open (her only one ended with her org): five more are hers.
    await h.db.insert(memberships).values({ orgId: alice.orgId, userId: carol.userId, role: 'viewer' });
    for (let i = 0; i < 5; i++) await open(carol, alice.orgId);
    const sixth = await fetch(`${h.base}/api/v1/orgs/${alice.orgId}/fleet/events`, {
      headers: { authorization: `Bearer ${carol.token}` },
    });
    expect(sixth.status).toBe(429);
    expect(((await sixth.json()) as { error: { code: string } }).error.code).toBe('rate-limited');
  });

  it('lists only the robots of the org asked for, to its members', async () => {
    const ours = await h.robot(id('listed'), alice.orgId);
    const theirs = await h.robot(id('unlisted'), bob.orgId);
    const mine = await h.http('GET', `/api/v1/robots?org=${alice.orgId}`, alice.token);
    expect(mine.status).toBe(200);
    const ids = mine.body.robots.map((r: RobotView) => r.robotId);
    expect(ids).toContain(ours.robotId);
    expect(ids).not.toContain(theirs.robotId);
    expect(mine.body.robots.every((r: RobotView) => r.orgId === alice.orgId)).toBe(true);

    expect(await h.http('GET', `/api/v1/robots?org=${bob.orgId}`, alice.token)).toMatchObject({
      status: 404,
      body: { error: { code: 'not-found' } },
    });
    expect(await h.http('GET', `/api/v1/robots?org=${alice.orgId}`)).toMatchObject({
      status: 401,
      body: { error: { code: 'unauthenticated' } },
    });
    expect(await h.http('GET', '/api/v1/robots?org=not-a-uuid', alice.token)).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid-request' } },
    });
  });

  it('remembers a key-mismatch as the robot’s last denial, audits it once, and clears it when the robot connects', async () => {
    const robot = await h.robot(id('amr'), alice.orgId);
    const { stream } = await open(alice);
    for (let attempt = 0; attempt < 2; attempt++) {
      const impostor = await h.connectRobot(newRobotIdentity(robot.robotId));
      expect(impostor.answer).toMatchObject({ type: 'denied', reason: 'key-mismatch' });
      await h.signalling.flushDenials();
    }
    const denied = await stream.until(about(robot.robotId, (r) => r.lastDenial !== null));
    expect(denied.event.type === 'robot-updated' && denied.event.robot.lastDenial).toEqual({
      reason: 'key-mismatch',
      at: expect.any(Date),
    });
    const listed = await h.http('GET', `/api/v1/robots/${robot.robotId}`, alice.token);
    expect(listed.body.robot.lastDenial).toEqual({ reason: 'key-mismatch', at: expect.any(String) });
    await h.signalling.flushAudit();
    const entries = await h.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, 'robot.deny'), eq(auditLog.targetId, robot.robotId)));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      orgId: alice.orgId,
      actorKind: 'robot',
      actorId: robot.robotId,
      detail: { reason: 'key-mismatch' },
    });

    // The robot itself proves its key: the denial is cleared, in the stream and in the record.
    await h.onlineRobot(robot);
    await h.signalling.flushDenials();
    await stream.until(about(robot.robotId, (r) => r.online && r.lastDenial === null));
    const [row] = await h.db.select().from(robots).where(eq(robots.robotId, robot.robotId));
    expect(row).toMatchObject({ lastDenialReason: null, lastDenialAt: null });
  });

  it('remembers a bad signature under a known robot id, and nothing under an unknown one', async () => {
    const robot = await h.robot(id('amr'), alice.orgId);
    for (const robotId of [robot.robotId, id('nobody')]) {
      const socket = h.socket();
      const challenge = await socket.expect('challenge');
      const other = newRobotIdentity(robotId);
      socket.send({
        type: 'auth',
        v: 2,
        robot_id: robotId,
        public_key: other.publicKey,
        sig: randomBytes(64).toString('base64url'),
      });
      expect(await socket.next()).toMatchObject({ type: 'denied', reason: 'bad-signature' });
      expect(challenge.nonce).toEqual(expect.any(String));
    }
    await h.signalling.flushDenials();
    const [row] = await h.db.select().from(robots).where(eq(robots.robotId, robot.robotId));
    expect(row).toMatchObject({ lastDenialReason: 'bad-signature', lastDenialAt: expect.any(Date) });
  });
});
