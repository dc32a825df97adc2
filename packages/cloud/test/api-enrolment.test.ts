/**
 * Enrolment tokens (`/api/v1/orgs/:org/enrolment-tokens`) and their redemption by robots
 * (`POST /api/v1/enrol`), on both database engines, with signed-in people from the real OIDC
 * provider and robots holding real Ed25519 keys.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog, enrolmentTokens, robots } from '../src/db/index.js';
import { type Answer, type Person, startApi, type TestApi } from './support/api.js';
import { databaseBackends, rowsOf, sha256 } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

/** `svc_enr_` and 32 random bytes in base64url. */
const TOKEN_PATTERN = /^svc_enr_[A-Za-z0-9_-]{43}$/;
const HOUR = 3_600_000;

/** A robot's raw Ed25519 public key in base64url, as the daemon sends it. */
function robotKey(): string {
  const x = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x;
  if (x === undefined) throw new Error('no x in the Ed25519 JWK');
  return x;
}

describe.each(databaseBackends)('enrolment on $name', (backend) => {
  let provider: TestProvider;
  let api: TestApi;
  let owner: Person;
  let admin: Person;
  let operator: Person;
  let outsider: Person;
  let org: string;
  let otherOrg: string;
  let serial = 0;
  /** A robot id no other test uses. */
  const newRobotId = (what: string) => `${what}-${++serial}`;

  const tokensUrl = (inOrg = org) => `/api/v1/orgs/${inOrg}/enrolment-tokens`;

  async function createToken(body: Record<string, unknown> = {}, who: Person = owner, inOrg = org) {
    const answer = await api.call('POST', tokensUrl(inOrg), { token: who.token, body });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(answer.body.token).toMatch(TOKEN_PATTERN);
    return { id: answer.body.enrolmentToken.id as string, token: answer.body.token as string, answer };
  }
  async function listTokens(who: Person = owner, inOrg = org) {
    const answer = await api.call('GET', tokensUrl(inOrg), { token: who.token });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.enrolmentTokens as { id: string; state: string; redeemedBy: string | null }[];
  }
  async function listed(id: string) {
    const found = (await listTokens()).find((t) => t.id === id);
    expect(found, `token ${id} is listed`).toBeDefined();
    return found!;
  }
  /** `POST /api/v1/enrol` without any credential, as a robot does. */
  const enrol = (body: unknown): Promise<Answer> => api.call('POST', '/api/v1/enrol', { body });
  async function robotRow(robotId: string) {
    const [row] = await api.db.select().from(robots).where(eq(robots.robotId, robotId));
    return row;
  }
  async function robotsSeenBy(who: Person) {
    const answer = await api.call('GET', '/api/v1/robots', { token: who.token });
    expect(answer.status).toBe(200);
    return answer.body.robots as { robotId: string; orgId: string | null; enrolledAt: string | null }[];
  }
  function expectRefusal(answer: Answer, status: number, code: string, secret?: string): void {
    expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    expect(answer.body.error.code).toBe(code);
    if (secret !== undefined) expect(answer.body.error.message).not.toContain(secret);
  }

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend, provider });
    const ownerIn = await api.signIn({ name: 'enrol-owner' });
    owner = { token: ownerIn.accessToken, userId: ownerIn.me.body.user.id };
    org = ownerIn.me.body.orgs[0].id;
    const people: Record<'admin' | 'operator', Person> = {} as never;
    for (const role of ['admin', 'operator'] as const) {
      const invited = await api.call('POST', `/api/v1/orgs/${org}/invitations`, {
        token: owner.token,
        body: { email: `enrol-${role}@example.test`, role },
      });
      expect(invited.status).toBe(201);
      const signedIn = await api.signIn({ name: `enrol-${role}` });
      expect(signedIn.me.body.orgs).toContainEqual(expect.objectContaining({ id: org, role }));
      people[role] = { token: signedIn.accessToken, userId: signedIn.me.body.user.id };
    }
    admin = people.admin;
    operator = people.operator;
    const outsiderIn = await api.signIn({ name: 'enrol-outsider' });
    outsider = { token: outsiderIn.accessToken, userId: outsiderIn.me.body.user.id };
    otherOrg = outsiderIn.me.body.orgs[0].id;
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  it('shows a new token once; lists it newest first without the secret or its hash, which alone is stored', async () => {
    const t0 = new Date('2031-03-01T09:00:00.000Z');
    api.now = t0;
    const first = await createToken({ name: 'line 3 robots', expiresInHours: 48 }, admin);
    const firstView = {
      id: first.id,
      name: 'line 3 robots',
      createdAt: t0.toISOString(),
      expiresAt: new Date(t0.getTime() + 48 * HOUR).toISOString(),
      state: 'unused',
      redeemedAt: null,
      redeemedBy: null,
    };
    expect(first.answer.body.enrolmentToken).toEqual(firstView);

    const t1 = new Date(t0.getTime() + 60_000);
    api.now = t1;
    const second = await createToken();
    expect(second.token).not.toBe(first.token);
    const secondView = {
      id: second.id,
      name: null,
      createdAt: t1.toISOString(),
      expiresAt: new Date(t1.getTime() + 24 * HOUR).toISOString(),
      state: 'unused',
      redeemedAt: null,
      redeemedBy: null,
    };
    expect(second.answer.body.enrolmentToken).toEqual(secondView);

    const list = await api.call('GET', tokensUrl(), { token: owner.token });
    expect(list.status).toBe(200);
    const ids = list.body.enrolmentTokens.map((t: { id: string }) => t.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    expect(list.body.enrolmentTokens).toContainEqual(firstView);
    expect(list.body.enrolmentTokens).toContainEqual(secondView);
    const shown = JSON.stringify(list.body);
    for (const { token } of [first, second]) {
      expect(shown).not.toContain(token);
      expect(shown).not.toContain(sha256(token));
    }

    // Every column of the row, whatever the schema grows: the hash of the token, never the token.
    const [row] = rowsOf<Record<string, unknown>>(
      await api.db.execute(sql`select * from enrolment_tokens where id = ${first.id}::uuid`),
    );
    expect(row!.token_hash).toBe(sha256(first.token));
    for (const [column, value] of Object.entries(row!)) {
      expect(JSON.stringify(value) ?? '', column).not.toContain(first.token);
    }
    const log = await api.db.select().from(auditLog).where(eq(auditLog.targetId, first.id));
    expect(log).toEqual([
      expect.objectContaining({
        orgId: org,
        actorKind: 'user',
        actorId: admin.userId,
        action: 'enrolment-token.create',
        targetKind: 'enrolment_token',
      }),
    ]);
    expect(JSON.stringify(log)).not.toContain(first.token);
  });

  it('refuses a bad token request with 400 naming the field, and creates nothing', async () => {
    const before = (await listTokens()).length;
    const cases: [Record<string, unknown>, string][] = [
      [{ expiresInHours: 0 }, 'expiresInHours'],
      [{ expiresInHours: 721 }, 'expiresInHours'],
      [{ expiresInHours: 1.5 }, 'expiresInHours'],
      [{ expiresInHours: '24' }, 'expiresInHours'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(129) }, 'name'],
      [{ name: 7 }, 'name'],
    ];
    for (const [body, field] of cases) {
      const answer = await api.call('POST', tokensUrl(), { token: owner.token, body });
      expectRefusal(answer, 400, 'invalid-request');
      expect(answer.body.error.message, JSON.stringify(body)).toContain(field);
    }
    expect(await listTokens()).toHaveLength(before);
    // The longest lifetime is accepted.
    const longest = await createToken({ expiresInHours: 720 });
    expect(Date.parse(longest.answer.body.enrolmentToken.expiresAt) - api.now.getTime()).toBe(720 * HOUR);
  });

  it('lets only admins and owners of the org manage its tokens', async () => {
    const { id } = await createToken();
    const before = await listTokens();
    const attempts = [
      (token?: string) =>
        api.call('POST', tokensUrl(), { ...(token === undefined ? {} : { token }), body: {} }),
      (token?: string) => api.call('GET', tokensUrl(), token === undefined ? {} : { token }),
      (token?: string) => api.call('DELETE', `${tokensUrl()}/${id}`, token === undefined ? {} : { token }),
    ];
    for (const attempt of attempts) {
      const asOperator = await attempt(operator.token);
      expectRefusal(asOperator, 403, 'forbidden');
      expect(asOperator.body.error.message).toContain('robots.manage');
      expectRefusal(await attempt(outsider.token), 404, 'not-found');
      expectRefusal(await attempt(undefined), 401, 'unauthenticated');
    }
    expect(await listTokens()).toEqual(before);
    // The outsider's own org does not show this org's tokens, and cannot revoke them through its URL.
    expect((await listTokens(outsider, otherOrg)).map((t) => t.id)).not.toContain(id);
    expectRefusal(
      await api.call('DELETE', `${tokensUrl(otherOrg)}/${id}`, { token: outsider.token }),
      404,
      'not-found',
    );
    expect((await listed(id)).state).toBe('unused');
  });

  it('enrols a robot, which the admin then sees; the token is then used up (410, a new token is needed)', async () => {
    const now = new Date('2031-04-01T10:00:00.000Z');
    api.now = now;
    const { id, token } = await createToken({ name: 'first robot' });
    const robotId = newRobotId('amr');
    const publicKey = robotKey();

    const enrolled = await enrol({ robotId, publicKey, token });
    expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(201);
    expect(enrolled.body).toEqual({ robotId, orgId: org, enrolledAt: now.toISOString() });
    expect(await robotRow(robotId)).toEqual(
      expect.objectContaining({ robotId, orgId: org, publicKey, enrolledAt: now }),
    );
    expect(await robotsSeenBy(admin)).toContainEqual(
      expect.objectContaining({ robotId, orgId: org, enrolledAt: now.toISOString() }),
    );
    expect((await robotsSeenBy(outsider)).map((r) => r.robotId)).not.toContain(robotId);
    expect(await listed(id)).toEqual(
      expect.objectContaining({ state: 'redeemed', redeemedBy: robotId, redeemedAt: now.toISOString() }),
    );
    const log = await api.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, 'robot.enrol'), eq(auditLog.targetId, robotId)));
    expect(log).toEqual([
      expect.objectContaining({ orgId: org, actorKind: 'robot', actorId: robotId, targetKind: 'robot' }),
    ]);
    expect(JSON.stringify(log)).not.toContain(token);

    // A second robot, and the same robot again, are both refused: the token enrolled once.
    const otherRobot = newRobotId('amr');
    for (const body of [
      { robotId: otherRobot, publicKey: robotKey(), token },
      { robotId, publicKey, token },
    ]) {
      const again = await enrol(body);
      expectRefusal(again, 410, 'enrolment-token-used', token);
      expect(again.body.error.message).toMatch(/already used/);
      expect(again.body.error.message).toMatch(/new token is needed/);
      expect(again.body.error.message).toContain('Create enrolment token');
    }
    expect(await robotRow(otherRobot)).toBeUndefined();
    expect(await listed(id)).toEqual(expect.objectContaining({ state: 'redeemed', redeemedBy: robotId }));
  });

  it('refuses an expired token with 410 from its expiry on', async () => {
    const t0 = new Date('2031-05-01T00:00:00.000Z');
    api.now = t0;
    const stillValid = await createToken({ expiresInHours: 1 });
    const expiring = await createToken({ expiresInHours: 1 });

    api.now = new Date(t0.getTime() + HOUR - 1);
    const inTime = newRobotId('late');
    expect((await enrol({ robotId: inTime, publicKey: robotKey(), token: stillValid.token })).status).toBe(
      201,
    );

    api.now = new Date(t0.getTime() + HOUR);
    expect((await listed(expiring.id)).state).toBe('expired');
    const tooLate = newRobotId('late');
    const refused = await enrol({ robotId: tooLate, publicKey: robotKey(), token: expiring.token });
    expectRefusal(refused, 410, 'enrolment-token-expired', expiring.token);
    expect(refused.body.error.message).toContain('expired');
    expect(refused.body.error.message).toContain('Create enrolment token');
    expect(await robotRow(tooLate)).toBeUndefined();
    expect((await listed(expiring.id)).state).toBe('expired');
  });

  it('revokes an unused token (410 for robots after); a used one is 409, an unknown one 404', async () => {
    api.now = new Date('2031-06-01T00:00:00.000Z');
    const { id, token } = await createToken({ name: 'to revoke' });
    const url = `${tokensUrl()}/${id}`;
    expect((await api.call('DELETE', url, { token: admin.token })).status).toBe(204);
    expect(await listed(id)).toEqual(expect.objectContaining({ state: 'revoked', redeemedAt: null }));

    const robotId = newRobotId('revoked');
    const refused = await enrol({ robotId, publicKey: robotKey(), token });
    expectRefusal(refused, 410, 'enrolment-token-revoked', token);
    expect(refused.body.error.message).toContain('revoked');
    expect(refused.body.error.message).toContain('Create enrolment token');
    expect(await robotRow(robotId)).toBeUndefined();

    // Revoking again changes nothing and is logged once.
    expect((await api.call('DELETE', url, { token: owner.token })).status).toBe(204);
    const revokes = await api.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, id), eq(auditLog.action, 'enrolment-token.revoke')));
    expect(revokes).toEqual([expect.objectContaining({ orgId: org, actorId: admin.userId })]);

    const used = await createToken();
    const enrolled = newRobotId('used');
    expect((await enrol({ robotId: enrolled, publicKey: robotKey(), token: used.token })).status).toBe(201);
    const conflict = await api.call('DELETE', `${tokensUrl()}/${used.id}`, { token: owner.token });
    expectRefusal(conflict, 409, 'conflict');
    expect(conflict.body.error.message).toContain(enrolled);
    expect((await listed(used.id)).state).toBe('redeemed');

    const unknown = await api.call('DELETE', `${tokensUrl()}/00000000-0000-4000-8000-000000000000`, {
      token: owner.token,
    });
    expectRefusal(unknown, 404, 'not-found');
    expectRefusal(
      await api.call('DELETE', `${tokensUrl()}/nope`, { token: owner.token }),
      400,
      'invalid-request',
    );
  });

  it('answers 401 enrolment-token-invalid to an unknown or malformed token, never echoing it', async () => {
    const { token } = await createToken();
    const flipped = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    const forgeries: [string, string][] = [
      ['unknown token', `svc_enr_${randomBytes(32).toString('base64url')}`],
      ['last character changed', flipped],
      ['cut short', token.slice(0, -2)],
      ['made longer', `${token}A`],
      ['an API key', `svc_key_0123abcd_${randomBytes(32).toString('base64url')}`],
      ['an invitation token', `svc_inv_${randomBytes(32).toString('base64url')}`],
      ['no prefix', randomBytes(32).toString('base64url')],
    ];
    for (const [what, forged] of forgeries) {
      const robotId = newRobotId('forged');
      const answer = await enrol({ robotId, publicKey: robotKey(), token: forged });
      expect(answer.status, what).toBe(401);
      expect(answer.body.error.code, what).toBe('enrolment-token-invalid');
      expect(answer.body.error.message, what).not.toContain(forged);
      expect(await robotRow(robotId), what).toBeUndefined();
    }
    // The real token was not touched by the attempts.
    expect((await enrol({ robotId: newRobotId('real'), publicKey: robotKey(), token })).status).toBe(201);
  });

  it('refuses a bad enrolment body with 400 naming the field; the token stays unused', async () => {
    const { id, token } = await createToken();
    const key = robotKey();
    const notOnCurve = Buffer.alloc(32);
    notOnCurve[0] = 2; // y = 2: no x satisfies the curve equation
    const cases: [string, Record<string, unknown>, string][] = [
      ['key of 31 bytes', { publicKey: randomBytes(31).toString('base64url') }, 'publicKey'],
      ['key of 33 bytes', { publicKey: randomBytes(33).toString('base64url') }, 'publicKey'],
      ['key with padding', { publicKey: `${key}=` }, 'publicKey'],
      ['key in hex', { publicKey: randomBytes(32).toString('hex') }, 'publicKey'],
      ['key in PEM', { publicKey: '-----BEGIN PUBLIC KEY-----' }, 'publicKey'],
      ['key not a curve point', { publicKey: notOnCurve.toString('base64url') }, 'publicKey'],
      ['key of small order', { publicKey: Buffer.alloc(32).toString('base64url') }, 'publicKey'],
      ['key missing', { publicKey: undefined }, 'publicKey'],
      ['robot id empty', { robotId: '' }, 'robotId'],
      ['robot id starting with a dot', { robotId: '.hidden' }, 'robotId'],
      ['robot id with a slash', { robotId: 'a/b' }, 'robotId'],
      ['robot id of 129 characters', { robotId: `r${'x'.repeat(128)}` }, 'robotId'],
      ['robot id a number', { robotId: 7 }, 'robotId'],
      ['token missing', { token: undefined }, 'token'],
      ['token a number', { token: 7 }, 'token'],
    ];
    for (const [what, change, field] of cases) {
      const body = { robotId: newRobotId('bad'), publicKey: key, token, ...change };
      const answer = await enrol(body);
      expect(answer.status, what).toBe(400);
      expect(answer.body.error.code, what).toBe('invalid-request');
      expect(answer.body.error.message, what).toContain(field);
      expect(answer.body.error.message, what).not.toContain(token);
      if (field === 'publicKey') expect(answer.body.error.message, what).toContain('Ed25519');
    }
    const missing = await enrol(undefined);
    expectRefusal(missing, 400, 'invalid-request');
    for (const field of ['robotId', 'publicKey', 'token'])
      expect(missing.body.error.message).toContain(field);

    expect((await listed(id)).state).toBe('unused');
    // The longest robot id is fine.
    const longest = `r${'x'.repeat(127)}`;
    expect((await enrol({ robotId: longest, publicKey: key, token })).status).toBe(201);
  });

  it('lets exactly one of 50 robots racing for one token enrol; the other 49 get 410', async () => {
    const { id, token } = await createToken({ name: 'raced' });
    const contenders = Array.from({ length: 50 }, () => ({
      robotId: newRobotId('racer'),
      publicKey: robotKey(),
    }));
    const answers = await Promise.all(contenders.map((c) => enrol({ ...c, token })));
    const won = answers.filter((a) => a.status === 201);
    const lost = answers.filter((a) => a.status === 410 && a.body.error.code === 'enrolment-token-used');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(49);
    const winner = won[0]!.body.robotId as string;

    const rows = await api.db
      .select()
      .from(robots)
      .where(
        inArray(
          robots.robotId,
          contenders.map((c) => c.robotId),
        ),
      );
    expect(rows.map((r) => r.robotId)).toEqual([winner]);
    expect(rows[0]!.publicKey).toBe(contenders.find((c) => c.robotId === winner)!.publicKey);
    expect(await listed(id)).toEqual(expect.objectContaining({ state: 'redeemed', redeemedBy: winner }));
    const log = await api.db
      .select()
      .from(auditLog)
      .where(
        and(
          eq(auditLog.action, 'robot.enrol'),
          inArray(
            auditLog.targetId,
            contenders.map((c) => c.robotId),
          ),
        ),
      );
    expect(log.map((e) => e.targetId)).toEqual([winner]);
  });

  it('takes a robot admitted without an org (open dev enrolment) into the org with the enrolling key', async () => {
    const robotId = newRobotId('dev');
    await api.db.insert(robots).values({ robotId, orgId: null, publicKey: robotKey() });
    expect((await robotsSeenBy(owner)).map((r) => r.robotId)).not.toContain(robotId);

    const now = new Date('2031-07-01T00:00:00.000Z');
    api.now = now;
    const { token } = await createToken();
    const publicKey = robotKey();
    const enrolled = await enrol({ robotId, publicKey, token });
    expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(201);
    expect(enrolled.body).toEqual({ robotId, orgId: org, enrolledAt: now.toISOString() });
    expect(await robotRow(robotId)).toEqual(
      expect.objectContaining({ orgId: org, publicKey, enrolledAt: now }),
    );
    expect(await robotsSeenBy(owner)).toContainEqual(expect.objectContaining({ robotId, orgId: org }));
  });

  it('refuses a robot enrolled elsewhere or with another key (409) and leaves the token for another robot', async () => {
    const elsewhere = newRobotId('theirs');
    const theirKey = robotKey();
    await api.db
      .insert(robots)
      .values({ robotId: elsewhere, orgId: otherOrg, publicKey: theirKey, enrolledAt: new Date(0) });
    const ours = newRobotId('ours');
    const ourKey = robotKey();
    const { id, token } = await createToken();
    expect((await enrol({ robotId: ours, publicKey: ourKey, token })).status).toBe(201);

    for (const [what, body] of [
      ['in another org, same key', { robotId: elsewhere, publicKey: theirKey }],
      ['in another org, new key', { robotId: elsewhere, publicKey: robotKey() }],
      ['in this org, another key', { robotId: ours, publicKey: robotKey() }],
    ] as const) {
      const fresh = await createToken();
      const refused = await enrol({ ...body, token: fresh.token });
      expectRefusal(refused, 409, 'robot-enrolled', fresh.token);
      expect(refused.body.error.message, what).toContain('delete the robot in the console and enrol again');
      expect(await listed(fresh.id), what).toEqual(
        expect.objectContaining({ state: 'unused', redeemedAt: null, redeemedBy: null }),
      );
      // The refused token still enrols another robot.
      const another = newRobotId('another');
      const next = await enrol({ robotId: another, publicKey: robotKey(), token: fresh.token });
      expect(next.status, what).toBe(201);
      expect(await listed(fresh.id)).toEqual(
        expect.objectContaining({ state: 'redeemed', redeemedBy: another }),
      );
    }
    expect(await robotRow(elsewhere)).toEqual(
      expect.objectContaining({ orgId: otherOrg, publicKey: theirKey, enrolledAt: new Date(0) }),
    );
    expect(await robotRow(ours)).toEqual(expect.objectContaining({ orgId: org, publicKey: ourKey }));
    expect((await listed(id)).state).toBe('redeemed');
    const refusedLog = await api.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, 'robot.enrol'), eq(auditLog.targetId, elsewhere)));
    expect(refusedLog).toEqual([]);
  });

  it('re-enrols a robot of the org with the same key (201), consuming the new token', async () => {
    const robotId = newRobotId('again');
    const publicKey = robotKey();
    api.now = new Date('2031-08-01T00:00:00.000Z');
    const first = await createToken();
    expect((await enrol({ robotId, publicKey, token: first.token })).status).toBe(201);

    const later = new Date('2031-08-02T00:00:00.000Z');
    api.now = later;
    const second = await createToken();
    const again = await enrol({ robotId, publicKey, token: second.token });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body).toEqual({ robotId, orgId: org, enrolledAt: later.toISOString() });
    expect(await listed(second.id)).toEqual(
      expect.objectContaining({ state: 'redeemed', redeemedBy: robotId }),
    );
    const rows = await api.db.select().from(robots).where(eq(robots.robotId, robotId));
    expect(rows).toEqual([expect.objectContaining({ orgId: org, publicKey, enrolledAt: later })]);
    const tokenRows = await api.db
      .select()
      .from(enrolmentTokens)
      .where(inArray(enrolmentTokens.id, [first.id, second.id]));
    expect(tokenRows.every((t) => t.redeemedBy === robotId)).toBe(true);
  });
});
