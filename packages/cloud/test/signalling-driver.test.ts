/**
 * The driver slot as svc-cloud assigns it (`docs/protocol/signalling.md`, "The driver slot"), on a
 * listening svc-cloud with real `ws` clients standing in for the robot and the pilots, on PGlite
 * and PostgreSQL: handover asked and granted, refused, timed out, a second request refused, an org
 * admin's takeover (and a member's refused), release, the robot losing the cloud; each with what
 * the pilots and the robot hear and what the org's audit log holds.
 */
import { randomUUID } from 'node:crypto';
import { asc, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { auditLog, memberships, type OrgRole, orgs, users } from '../src/db/index.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';
import {
  announcement,
  type Message,
  type SignallingHarness,
  startSignalling,
  type TestRobot,
  type TestSocket,
} from './support/signalling.js';

/** A person of the test's org: the `sub` of their tokens, their user id and display name. */
interface Person {
  readonly sub: string;
  readonly userId: string;
  readonly name: string;
}

/** A pilot with one running session on the robot. */
interface Pilot {
  readonly socket: TestSocket;
  readonly sessionId: string;
  readonly role: 'driver' | 'observer';
  readonly person: Person;
}

describe.each(databaseBackends)('the driver slot on $name', (backend) => {
  let provider: TestProvider;
  let h: SignallingHarness;
  let orgId: string;
  let serial = 0;
  const id = (what: string) => `${what}-${++serial}`;

  beforeAll(async () => {
    provider = await startTestProvider();
    h = await startSignalling({ backend, provider });
    const [org] = await h.db.insert(orgs).values({ name: 'Fleet' }).returning({ id: orgs.id });
    orgId = org!.id;
  });
  afterEach(() => h.closeSockets());
  afterAll(async () => {
    await h?.dispose();
    await provider?.close();
  });

  /** A user of the org with `role`. */
  async function person(name: string, role: OrgRole): Promise<Person> {
    const [user] = await h.db
      .insert(users)
      .values({ oidcIssuer: 'https://idp.test', oidcSubject: randomUUID(), name })
      .returning({ id: users.id });
    await h.db.insert(memberships).values({ orgId, userId: user!.id, role });
    return { sub: `user:${user!.id}`, userId: user!.id, name };
  }

  /** A robot of the org (or of none), online and announced. */
  async function robotOnline(org: string | null = orgId): Promise<{ robot: TestRobot; socket: TestSocket }> {
    const robot = await h.robot(id('amr'), org);
    return { robot, socket: await h.onlineRobot(robot) };
  }

  /**
   * `who` connects with a token of `scope`, gets an offer, and the robot reports the session
   * started in the offered role; the pilot has heard who drives.
   */
  async function join(
    robotId: string,
    robotSocket: TestSocket,
    who: Person,
    scope: 'drive' | 'observe' = 'drive',
  ): Promise<Pilot> {
    const { socket } = await h.connectPilot(await h.token({ aud: robotId, scope, sub: who.sub }));
    socket.send({ type: 'connect', robot_id: robotId });
    const offer = await socket.expect('offer');
    await robotSocket.expect('session-open');
    robotSocket.send({
      type: 'session-started',
      session_id: offer.session_id,
      role: offer.role,
      sub: who.sub,
    });
    await robotSocket.sync();
    await waitFor(socket, (m) => m.type === 'driver');
    return { socket, sessionId: offer.session_id, role: offer.role, person: who };
  }

  /** Waits for `socket`'s next `driver` message naming `session` (skipping others), and returns it. */
  async function driverSeen(socket: TestSocket, session: Pilot | null): Promise<Message> {
    const { message } = await waitFor(
      socket,
      (m) => m.type === 'driver' && m.session_id === (session === null ? null : session.sessionId),
    );
    expect(message.user).toEqual(
      session === null ? null : { id: session.person.sub, name: session.person.name },
    );
    return message;
  }

  /** The org log's entries about `robotId`, oldest first, once the server wrote what it queued. */
  async function audited(robotId: string) {
    await h.signalling.flushAudit();
    const rows = await h.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.targetId, robotId))
      .orderBy(asc(auditLog.id));
    return rows.map((r) => ({
      orgId: r.orgId,
      action: r.action,
      actor: `${r.actorKind}:${r.actorId}`,
      detail: r.detail,
    }));
  }

  /** Where the driver and observers are, as the robot API shows it. */
  function roles(robotId: string): Record<string, string> {
    const sessions = h.signalling.presenceOf(robotId)?.sessions ?? [];
    return Object.fromEntries(sessions.map((s) => [s.sessionId, s.role]));
  }

  /** A driver, an observer with a drive token who will ask, and a watcher with an observe token. */
  async function scene() {
    const { robot, socket: robotSocket } = await robotOnline();
    const olga = await person(id('Olga'), 'operator');
    const otto = await person(id('Otto'), 'operator');
    const wendy = await person(id('Wendy'), 'viewer');
    const driver = await join(robot.robotId, robotSocket, olga);
    const asker = await join(robot.robotId, robotSocket, otto);
    const watcher = await join(robot.robotId, robotSocket, wendy, 'observe');
    expect([driver.role, asker.role, watcher.role]).toEqual(['driver', 'observer', 'observer']);
    return { robot, robotSocket, driver, asker, watcher };
  }

  /** `asker` requests control; the driver is asked and the asker told it waits. Returns the request id. */
  async function ask(asker: Pilot, driver: Pilot): Promise<string> {
    asker.socket.send({ type: 'request-control', session_id: asker.sessionId });
    const { message: asked } = await waitFor(driver.socket, (m) => m.type === 'control-request');
    expect(asked).toEqual({
      type: 'control-request',
      request_id: expect.any(String),
      session_id: driver.sessionId,
      user: { id: asker.person.sub, name: asker.person.name },
      expires_in_ms: 10_000,
    });
    const { message: pending } = await waitFor(asker.socket, (m) => m.type === 'control-pending');
    expect(pending).toEqual({
      type: 'control-pending',
      request_id: asked.request_id,
      session_id: asker.sessionId,
      driver: { id: driver.person.sub, name: driver.person.name },
      expires_in_ms: 10_000,
    });
    return asked.request_id;
  }

  it('hands the slot over when the driver grants: the robot swaps the roles, every pilot sees the new driver, the log has it', async () => {
    const { robot, robotSocket, driver, asker, watcher } = await scene();
    const requestId = await ask(asker, driver);

    driver.socket.send({ type: 'answer-control', request_id: requestId, grant: true });
    // The robot hears the old driver demoted before the new one is promoted: never two drivers.
    expect(await robotSocket.next()).toEqual({
      type: 'session-role',
      session_id: driver.sessionId,
      role: 'observer',
    });
    expect(await robotSocket.next()).toEqual({
      type: 'session-role',
      session_id: asker.sessionId,
      role: 'driver',
    });
    const { message: result } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(result).toEqual({
      type: 'control-result',
      request_id: requestId,
      session_id: asker.sessionId,
      outcome: 'granted',
      message: expect.stringContaining('you drive now'),
    });
    for (const pilot of [driver, asker, watcher]) await driverSeen(pilot.socket, asker);
    expect(roles(robot.robotId)).toEqual({
      [driver.sessionId]: 'observer',
      [asker.sessionId]: 'driver',
      [watcher.sessionId]: 'observer',
    });

    expect(await audited(robot.robotId)).toEqual([
      {
        orgId,
        action: 'driver-slot.acquire',
        actor: `user:${driver.person.userId}`,
        detail: { sub: driver.person.sub, session_id: driver.sessionId, how: 'started' },
      },
      {
        orgId,
        action: 'driver-slot.handover',
        actor: `user:${driver.person.userId}`,
        detail: {
          sub: driver.person.sub,
          request_id: requestId,
          from: driver.person.sub,
          from_session_id: driver.sessionId,
          to: asker.person.sub,
          to_session_id: asker.sessionId,
        },
      },
    ]);
  });

  it('links a session to a signalling connection made again with the same token (resume): the pilot hears who drives and may ask; another token may not', async () => {
    const { robot, socket: robotSocket } = await robotOnline();
    const olga = await person(id('Olga'), 'operator');
    const otto = await person(id('Otto'), 'operator');
    const driver = await join(robot.robotId, robotSocket, olga);
    const token = await h.token({ aud: robot.robotId, scope: 'drive', sub: otto.sub });
    const first = (await h.connectPilot(token)).socket;
    first.send({ type: 'connect', robot_id: robot.robotId });
    const offer = await first.expect('offer');
    await robotSocket.expect('session-open');
    robotSocket.send({
      type: 'session-started',
      session_id: offer.session_id,
      role: 'observer',
      sub: otto.sub,
    });
    await robotSocket.sync();
    // The pilot's network drops; its session with the robot goes on.
    first.close();
    await first.closed;

    const again = (await h.connectPilot(token)).socket;
    again.send({ type: 'resume', session_id: offer.session_id });
    await driverSeen(again, driver);
    again.send({ type: 'request-control', session_id: offer.session_id });
    const { message: asked } = await waitFor(driver.socket, (m) => m.type === 'control-request');
    expect(asked.user).toEqual({ id: otto.sub, name: otto.name });

    // Someone else's token cannot take the session over.
    const stranger = (
      await h.connectPilot(await h.token({ aud: robot.robotId, scope: 'drive', sub: olga.sub }))
    ).socket;
    stranger.send({ type: 'resume', session_id: offer.session_id });
    const { message: refused } = await waitFor(stranger, (m) => m.type === 'error');
    expect(refused).toMatchObject({ code: 'not-allowed' });
    expect(String(refused.message)).toContain(String(offer.session_id));
  });

  it('keeps the driver when it refuses; the asker is told, may not ask again at once, and the log has the refusal', async () => {
    const { robot, robotSocket, driver, asker } = await scene();
    const requestId = await ask(asker, driver);

    driver.socket.send({ type: 'answer-control', request_id: requestId, grant: false });
    const { message: result } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(result).toMatchObject({ request_id: requestId, session_id: asker.sessionId, outcome: 'refused' });
    expect(result.message).toContain('the driver refused');
    // Nothing changed on the robot, and nobody is told of a new driver.
    expect(await robotSocket.sync()).toEqual([]);
    expect(await driver.socket.sync()).toEqual([]);
    expect(roles(robot.robotId)[driver.sessionId]).toBe('driver');

    asker.socket.send({ type: 'request-control', session_id: asker.sessionId });
    const { message: again } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(again).toMatchObject({ session_id: asker.sessionId, outcome: 'denied' });
    expect(again.message).toMatch(/refused your last request; you may ask again in \d+ s/);
    expect(await driver.socket.sync()).toEqual([]);

    expect((await audited(robot.robotId)).map((e) => [e.action, e.actor, e.detail])).toEqual([
      ['driver-slot.acquire', `user:${driver.person.userId}`, expect.anything()],
      [
        'driver-slot.refuse',
        `user:${driver.person.userId}`,
        {
          sub: driver.person.sub,
          session_id: driver.sessionId,
          request_id: requestId,
          requester: asker.person.sub,
          requester_session_id: asker.sessionId,
        },
      ],
    ]);
  });

  it('times a request out when the driver does not answer: both are told, a late answer is refused, the log has it', async () => {
    const { robot, robotSocket, driver, asker } = await scene();
    const requestId = await ask(asker, driver);

    h.clock.advance(9_999);
    h.signalling.sweep();
    expect(await asker.socket.sync()).toEqual([]);
    h.clock.advance(1);
    h.signalling.sweep();
    for (const pilot of [asker, driver]) {
      const { message } = await waitFor(pilot.socket, (m) => m.type === 'control-result');
      expect(message).toMatchObject({
        request_id: requestId,
        session_id: pilot.sessionId,
        outcome: 'timeout',
      });
      expect(message.message).toContain('within 10 s');
    }
    driver.socket.send({ type: 'answer-control', request_id: requestId, grant: true });
    const late = await driver.socket.next();
    expect(late).toMatchObject({ type: 'error', code: 'not-allowed' });
    expect(late.message).toContain('timed out');
    expect(await robotSocket.sync()).toEqual([]);
    expect(roles(robot.robotId)[driver.sessionId]).toBe('driver');

    const entries = await audited(robot.robotId);
    expect(entries.at(-1)).toEqual({
      orgId,
      action: 'driver-slot.timeout',
      actor: `user:${asker.person.userId}`,
      detail: {
        sub: asker.person.sub,
        session_id: asker.sessionId,
        request_id: requestId,
        driver: driver.person.sub,
        driver_session_id: driver.sessionId,
      },
    });
  });

  it('refuses a second request while one waits, and a request from an observe token, saying why', async () => {
    const { robot, robotSocket, driver, asker, watcher } = await scene();
    const third = await join(robot.robotId, robotSocket, await person(id('Tom'), 'operator'));
    await ask(asker, driver);

    third.socket.send({ type: 'request-control', session_id: third.sessionId });
    const { message: busy } = await waitFor(third.socket, (m) => m.type === 'control-result');
    expect(busy).toMatchObject({ session_id: third.sessionId, outcome: 'denied' });
    expect(busy.message).toMatch(
      /another pilot's request is waiting for the driver to answer; ask again in \d+ s/,
    );

    watcher.socket.send({ type: 'request-control', session_id: watcher.sessionId });
    const { message: observeOnly } = await waitFor(watcher.socket, (m) => m.type === 'control-result');
    expect(observeOnly).toMatchObject({ session_id: watcher.sessionId, outcome: 'denied' });
    expect(observeOnly.message).toContain('only allows observing');

    // A session of another connection is not this pilot's to use.
    third.socket.send({ type: 'request-control', session_id: asker.sessionId });
    expect(await third.socket.next()).toMatchObject({ type: 'error', code: 'not-allowed' });
    // The driver was asked once.
    expect(await driver.socket.sync()).toEqual([]);
  });

  it('lets an org admin with a drive token take over at once; a waiting request ends; the log has it', async () => {
    const { robot, robotSocket, driver, asker, watcher } = await scene();
    const admin = await join(robot.robotId, robotSocket, await person(id('Ada'), 'admin'));
    const requestId = await ask(asker, driver);

    admin.socket.send({ type: 'take-control', session_id: admin.sessionId });
    expect(await robotSocket.next()).toEqual({
      type: 'session-role',
      session_id: driver.sessionId,
      role: 'observer',
    });
    expect(await robotSocket.next()).toEqual({
      type: 'session-role',
      session_id: admin.sessionId,
      role: 'driver',
    });
    const { message: taken } = await waitFor(admin.socket, (m) => m.type === 'control-result');
    expect(taken).toMatchObject({ session_id: admin.sessionId, outcome: 'taken' });
    const { message: lost } = await waitFor(driver.socket, (m) => m.type === 'control-result');
    expect(lost).toMatchObject({ session_id: driver.sessionId, outcome: 'taken' });
    expect(lost.message).toContain('an org admin took the driver slot over');
    // The driver's prompt for the waiting request closes too.
    const { message: prompt } = await waitFor(driver.socket, (m) => m.type === 'control-result');
    expect(prompt).toMatchObject({ request_id: requestId, session_id: driver.sessionId, outcome: 'taken' });
    const { message: ended } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(ended).toMatchObject({ request_id: requestId, session_id: asker.sessionId, outcome: 'taken' });
    for (const pilot of [driver, asker, watcher, admin]) await driverSeen(pilot.socket, admin);

    // The old driver's late answer to the ended request changes nothing.
    driver.socket.send({ type: 'answer-control', request_id: requestId, grant: true });
    expect(await waitFor(driver.socket, (m) => m.type === 'error')).toMatchObject({
      message: { code: 'not-allowed' },
    });
    expect(await robotSocket.sync()).toEqual([]);

    expect((await audited(robot.robotId)).at(-1)).toEqual({
      orgId,
      action: 'driver-slot.takeover',
      actor: `user:${admin.person.userId}`,
      detail: {
        sub: admin.person.sub,
        session_id: admin.sessionId,
        from: driver.person.sub,
        from_session_id: driver.sessionId,
      },
    });
  });

  it('refuses a takeover by a member who is not an admin or owner, and by an observe token', async () => {
    const { robot, robotSocket, driver, asker, watcher } = await scene();
    asker.socket.send({ type: 'take-control', session_id: asker.sessionId });
    const { message: operator } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(operator).toMatchObject({ session_id: asker.sessionId, outcome: 'denied' });
    expect(operator.message).toContain('needs the admin or owner role');
    expect(operator.message).toContain('you are an operator');

    // An admin whose token only observes may not drive at all.
    const observingAdmin = await join(
      robot.robotId,
      robotSocket,
      await person(id('Abe'), 'admin'),
      'observe',
    );
    observingAdmin.socket.send({ type: 'take-control', session_id: observingAdmin.sessionId });
    const { message: observe } = await waitFor(observingAdmin.socket, (m) => m.type === 'control-result');
    expect(observe).toMatchObject({ outcome: 'denied' });
    expect(observe.message).toContain('only allows observing');

    expect(await robotSocket.sync()).toEqual([]);
    expect(await driver.socket.sync()).toEqual([]);
    expect(await watcher.socket.sync()).toEqual([]);
    expect(roles(robot.robotId)[driver.sessionId]).toBe('driver');
    expect((await audited(robot.robotId)).map((e) => e.action)).toEqual(['driver-slot.acquire']);
  });

  it('releases the slot when the driver gives it up; the next request gets it at once; the log has both', async () => {
    const { robot, robotSocket, driver, asker, watcher } = await scene();
    driver.socket.send({ type: 'release-control', session_id: driver.sessionId });
    expect(await robotSocket.next()).toEqual({
      type: 'session-role',
      session_id: driver.sessionId,
      role: 'observer',
    });
    for (const pilot of [driver, asker, watcher]) await driverSeen(pilot.socket, null);

    asker.socket.send({ type: 'request-control', session_id: asker.sessionId });
    expect(await robotSocket.next()).toEqual({
      type: 'session-role',
      session_id: asker.sessionId,
      role: 'driver',
    });
    const { message } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(message).toMatchObject({ session_id: asker.sessionId, outcome: 'granted' });
    for (const pilot of [driver, asker, watcher]) await driverSeen(pilot.socket, asker);

    // Only the driver may release.
    watcher.socket.send({ type: 'release-control', session_id: watcher.sessionId });
    expect(await watcher.socket.next()).toMatchObject({ type: 'error', code: 'not-allowed' });

    expect((await audited(robot.robotId)).map((e) => [e.action, e.actor, e.detail.how])).toEqual([
      ['driver-slot.acquire', `user:${driver.person.userId}`, 'started'],
      ['driver-slot.release', `user:${driver.person.userId}`, 'released'],
      ['driver-slot.acquire', `user:${asker.person.userId}`, 'request'],
    ]);
  });

  it('cancels a waiting request when the driver leaves; the pilots see the slot free; the log has the release', async () => {
    const { robot, robotSocket, driver, asker, watcher } = await scene();
    const requestId = await ask(asker, driver);
    robotSocket.send({ type: 'session-ended', session_id: driver.sessionId });
    const { message } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(message).toMatchObject({ request_id: requestId, outcome: 'cancelled' });
    expect(message.message).toContain('the slot is free');
    for (const pilot of [asker, watcher]) await driverSeen(pilot.socket, null);
    expect((await audited(robot.robotId)).at(-1)).toMatchObject({
      action: 'driver-slot.release',
      actor: `user:${driver.person.userId}`,
      detail: { session_id: driver.sessionId, how: 'ended' },
    });
  });

  it("keeps the slot for the driver's user during the robot's reload grace: no one else gets it by asking, the same user does, and after the grace anyone may", async () => {
    const robot = await h.robot(id('amr'), orgId);
    const robotSocket = await h.onlineRobot(robot, announcement({ driver_grace_ms: 5000 }));
    const olga = await person(id('Olga'), 'operator');
    const otto = await person(id('Otto'), 'operator');
    const driver = await join(robot.robotId, robotSocket, olga);
    const asker = await join(robot.robotId, robotSocket, otto);
    const requestId = await ask(asker, driver);

    // The driver's page is closed: the robot ends its session and keeps the slot for Olga.
    robotSocket.send({ type: 'session-ended', session_id: driver.sessionId });
    const { message: cancelled } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(cancelled).toMatchObject({ request_id: requestId, outcome: 'cancelled' });
    expect(cancelled.message).toMatch(/keeps the slot for them for 5 s in case they come back/);
    asker.socket.send({ type: 'request-control', session_id: asker.sessionId });
    const { message: kept } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(kept).toMatchObject({ session_id: asker.sessionId, outcome: 'denied' });
    expect(kept.message).toMatch(/keeps the slot for them for 5 s more.*ask again then/);

    // A new drive link of someone else inside the grace is offered as an observer.
    const paul = await join(robot.robotId, robotSocket, await person(id('Paul'), 'operator'));
    expect(paul.role).toBe('observer');

    // Olga reloads within the grace: she is offered the slot, and the robot gives it back.
    const back = await join(robot.robotId, robotSocket, olga);
    expect(back.role).toBe('driver');
    robotSocket.send({ type: 'session-started', session_id: back.sessionId, role: 'driver', sub: olga.sub });
    await driverSeen(asker.socket, back);
    back.socket.send({ type: 'release-control', session_id: back.sessionId });
    expect(await robotSocket.next()).toMatchObject({ type: 'session-role', role: 'observer' });
    await driverSeen(asker.socket, null);

    // A release is not a reload: the next request gets the slot at once.
    asker.socket.send({ type: 'request-control', session_id: asker.sessionId });
    expect(await waitFor(asker.socket, (m) => m.type === 'control-result')).toMatchObject({
      message: { outcome: 'granted' },
    });
    expect(await robotSocket.next()).toMatchObject({
      type: 'session-role',
      session_id: asker.sessionId,
      role: 'driver',
    });
    await driverSeen(back.socket, asker);

    // Otto's session ends; once his grace is over, Olga may ask and drive.
    robotSocket.send({ type: 'session-ended', session_id: asker.sessionId });
    await driverSeen(back.socket, null);
    back.socket.send({ type: 'request-control', session_id: back.sessionId });
    expect(await waitFor(back.socket, (m) => m.type === 'control-result')).toMatchObject({
      message: { outcome: 'denied' },
    });
    h.clock.advance(5000);
    back.socket.send({ type: 'request-control', session_id: back.sessionId });
    expect(await waitFor(back.socket, (m) => m.type === 'control-result')).toMatchObject({
      message: { outcome: 'granted' },
    });
  });

  it('changes no hands while the robot is away from the cloud, and hands over again once it is back', async () => {
    const { robot, robotSocket, driver, asker } = await scene();
    const requestId = await ask(asker, driver);

    robotSocket.close();
    for (const pilot of [asker, driver]) {
      const { message } = await waitFor(pilot.socket, (m) => m.type === 'control-result');
      expect(message).toMatchObject({ request_id: requestId, outcome: 'cancelled' });
      expect(message.message).toContain('lost its connection to the cloud');
      await waitFor(pilot.socket, (m) => m.type === 'robot-offline' && m.robot_id === robot.robotId);
    }
    asker.socket.send({ type: 'request-control', session_id: asker.sessionId });
    const { message: offline } = await waitFor(asker.socket, (m) => m.type === 'control-result');
    expect(offline).toMatchObject({ session_id: asker.sessionId, outcome: 'denied' });
    expect(offline.message).toContain('not connected to the cloud');
    asker.socket.send({ type: 'take-control', session_id: asker.sessionId });
    expect(await waitFor(asker.socket, (m) => m.type === 'control-result')).toMatchObject({
      message: { outcome: 'denied' },
    });

    // Back, with both sessions kept (the driver drove on directly): every pilot sees who drives, and
    // a request reaches the driver again.
    const back = await h.onlineRobot(
      robot,
      announcement({
        sessions: [
          { session_id: driver.sessionId, role: 'driver', sub: driver.person.sub },
          { session_id: asker.sessionId, role: 'observer', sub: asker.person.sub },
        ],
      }),
    );
    for (const pilot of [driver, asker]) await driverSeen(pilot.socket, driver);
    const again = await ask(asker, driver);
    driver.socket.send({ type: 'answer-control', request_id: again, grant: true });
    expect(await back.next()).toMatchObject({
      type: 'session-role',
      session_id: driver.sessionId,
      role: 'observer',
    });
    expect(await back.next()).toMatchObject({
      type: 'session-role',
      session_id: asker.sessionId,
      role: 'driver',
    });
    // Losing the cloud is neither a release nor a new acquisition.
    expect((await audited(robot.robotId)).map((e) => e.action)).toEqual([
      'driver-slot.acquire',
      'driver-slot.handover',
    ]);
  });

  it('hands over on a robot without org (development enrolment) and writes no audit entry', async () => {
    const { robot, socket: robotSocket } = await robotOnline(null);
    const dev = { sub: 'anonymous', userId: '', name: '' };
    const driver = await join(robot.robotId, robotSocket, dev);
    const asker = await join(robot.robotId, robotSocket, dev);
    asker.socket.send({ type: 'request-control', session_id: asker.sessionId });
    const { message: asked } = await waitFor(driver.socket, (m) => m.type === 'control-request');
    expect(asked.user).toEqual({ id: 'anonymous', name: null });
    driver.socket.send({ type: 'answer-control', request_id: asked.request_id, grant: true });
    expect(await waitFor(asker.socket, (m) => m.type === 'control-result')).toMatchObject({
      message: { outcome: 'granted' },
    });
    // Nobody may take over a robot of no org: there is no admin.
    driver.socket.send({ type: 'take-control', session_id: driver.sessionId });
    const { message: refused } = await waitFor(driver.socket, (m) => m.type === 'control-result');
    expect(refused).toMatchObject({ outcome: 'denied' });
    expect(refused.message).toContain('belongs to no org');
    expect(await audited(robot.robotId)).toEqual([]);
  });
});

/**
 * Reads `socket`'s messages until one matches, failing if the connection ends first. Returns it and
 * those skipped (messages the test does not look at here, such as `driver` updates).
 */
async function waitFor(
  socket: TestSocket,
  match: (message: Message) => boolean,
): Promise<{ message: Message; skipped: Message[] }> {
  const skipped: Message[] = [];
  for (;;) {
    const message = await socket.next();
    if (match(message)) return { message, skipped };
    skipped.push(message);
  }
}
