/**
 * `POST /api/v1/session-tokens` and `GET /.well-known/svc-session-jwks.json` through the app, on a
 * real database with a real OIDC provider: who may mint what on which robot (the table of
 * docs/cloud.md, row by row), the claims of a minted token checked with jose against the published
 * JWKS, the TTL bounds, the audit entry, the API-key cache, and key rotation on the app's clock.
 */
import { eq } from 'drizzle-orm';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  auditLog,
  memberships,
  type OrgRole,
  robotGrants,
  robots,
  sessionSigningKeys,
} from '../src/db/index.js';
import { type Answer, startApi, type TestApi } from './support/api.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

const PUBLIC_URL = 'http://127.0.0.1:8080';
const JWKS_PATH = '/.well-known/svc-session-jwks.json';
const MINT = '/api/v1/session-tokens';

/** Who calls: a signed-in user, an API key, or nobody. */
type Who =
  | 'keyA'
  | 'keyA-no-scope'
  | 'keyB'
  | 'ownerA'
  | 'operatorA'
  | 'viewerA'
  | 'ownerB'
  | 'guest'
  | 'nobody';

type Scope = 'drive' | 'observe';
/** Which app: the default one, or one in development mode. */
type App = 'default' | 'open-enrolment' | 'allow-anonymous';

/** One row of the who-may-mint table: caller, robot, scope, and the expected answer. */
interface Case {
  readonly who: Who;
  readonly robot: string;
  readonly scope: Scope;
  /** `201`, or the status and error code. */
  readonly expect: string;
  readonly app?: App;
}

/** The who-may-mint table by app, caller and robot: the answer to each scope asked for. */
type MintTable = Partial<Record<App, Partial<Record<Who, Record<string, Partial<Record<Scope, string>>>>>>>;

/** The rows of `table`, without `app` for the default one. */
function casesOf(table: MintTable): Case[] {
  const entries = <K extends string, V>(record: Partial<Record<K, V>>) => Object.entries(record) as [K, V][];
  return entries(table).flatMap(([app, callers]) =>
    entries(callers).flatMap(([who, robots]) =>
      entries(robots).flatMap(([robot, scopes]) =>
        entries(scopes).map(([scope, expect]) => ({
          who,
          robot,
          scope,
          expect,
          ...(app === 'default' ? {} : { app }),
        })),
      ),
    ),
  );
}

describe.each(databaseBackends)('session tokens on $name', (backend) => {
  let provider: TestProvider;
  let api: TestApi;
  let openEnrolment: TestApi;
  let allowAnonymous: TestApi;
  const orgs = { A: '', B: '' };
  const tokens: Partial<Record<Who, string>> = {};
  const ids: Partial<Record<Who, string>> = {};

  const appOf = (which: Case['app'] = 'default'): TestApi =>
    which === 'open-enrolment' ? openEnrolment : which === 'allow-anonymous' ? allowAnonymous : api;
  const mint = (who: Who, body: unknown, on: TestApi = api): Promise<Answer> =>
    on.call('POST', MINT, { ...(tokens[who] === undefined ? {} : { token: tokens[who] }), body });
  const shown = (answer: Answer): string =>
    answer.status === 201 ? '201' : `${answer.status} ${answer.body?.error?.code}`;
  const jwksOf = async (on: TestApi): Promise<JSONWebKeySet> => {
    const answer = await on.call('GET', JWKS_PATH);
    expect(answer.status).toBe(200);
    return answer.body;
  };
  /** Verifies a minted token as a robot would: the published JWKS, ES256 only, aud = the robot. */
  const verify = async (token: string, robotId: string, on: TestApi = api) => {
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(await jwksOf(on)), {
      algorithms: ['ES256'],
      issuer: PUBLIC_URL,
      audience: robotId,
      currentDate: on.now,
    });
    return { payload, protectedHeader };
  };
  async function createKey(org: 'A' | 'B', scopes: string[]): Promise<{ id: string; key: string }> {
    const owner = org === 'A' ? tokens.ownerA : tokens.ownerB;
    const answer = await api.call('POST', `/api/v1/orgs/${orgs[org]}/api-keys`, {
      token: owner!,
      body: { name: `mint-${scopes.join('-') || 'none'}`, scopes },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return { id: answer.body.apiKey.id, key: answer.body.key };
  }

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend, provider });
    // The same database in development mode: another node, sharing the session keys.
    openEnrolment = await startApi({
      backend,
      provider,
      database: api.database,
      env: { SVC_DEV_OPEN_ENROLMENT: '1', SVC_SESSION_TOKEN_TTL_SECONDS: '120' },
    });
    allowAnonymous = await startApi({
      backend,
      provider,
      database: api.database,
      env: { SVC_DEV_ALLOW_ANONYMOUS: '1' },
    });

    const signIn = async (who: Who, name: string) => {
      const signed = await api.signIn({ name });
      expect(signed.me.status).toBe(200);
      tokens[who] = signed.accessToken;
      ids[who] = signed.me.body.user.id;
      return signed.me.body;
    };
    orgs.A = (await signIn('ownerA', 'mint-owner-a')).orgs[0].id;
    orgs.B = (await signIn('ownerB', 'mint-owner-b')).orgs[0].id;
    for (const [who, role] of [
      ['operatorA', 'operator'],
      ['viewerA', 'viewer'],
    ] as const satisfies readonly (readonly [Who, OrgRole])[]) {
      await signIn(who, `mint-${role}-a`);
      await api.db.insert(memberships).values({ orgId: orgs.A, userId: ids[who]!, role });
    }
    await signIn('guest', 'mint-guest');

    const keyA = await createKey('A', ['sessions:mint']);
    tokens.keyA = keyA.key;
    ids.keyA = keyA.id;
    const keyANoScope = await createKey('A', ['robots:read']);
    tokens['keyA-no-scope'] = keyANoScope.key;
    const keyB = await createKey('B', ['sessions:mint', 'robots:read']);
    tokens.keyB = keyB.key;
    ids.keyB = keyB.id;

    await api.db.insert(robots).values([
      { robotId: 'robot-a', orgId: orgs.A, publicKey: 'pk-a' },
      { robotId: 'robot-b', orgId: orgs.B, publicKey: 'pk-b' },
      { robotId: 'robot-b-to-a-observe', orgId: orgs.B, publicKey: 'pk-b1' },
      { robotId: 'robot-b-to-a-drive', orgId: orgs.B, publicKey: 'pk-b2' },
      { robotId: 'robot-b-public', orgId: orgs.B, publicKey: 'pk-b3' },
      { robotId: 'robot-b-guest-observe', orgId: orgs.B, publicKey: 'pk-b4' },
      { robotId: 'robot-b-guest-drive', orgId: orgs.B, publicKey: 'pk-b5' },
      { robotId: 'robot-dev', orgId: null, publicKey: 'pk-dev' },
    ]);
    await api.db.insert(robotGrants).values([
      { robotId: 'robot-b-to-a-observe', granteeKind: 'org', orgId: orgs.A, access: 'observe' },
      { robotId: 'robot-b-to-a-drive', granteeKind: 'org', orgId: orgs.A, access: 'drive' },
      { robotId: 'robot-b-public', granteeKind: 'public', access: 'observe' },
      { robotId: 'robot-b-guest-observe', granteeKind: 'user', userId: ids.guest!, access: 'observe' },
      { robotId: 'robot-b-guest-drive', granteeKind: 'user', userId: ids.guest!, access: 'drive' },
    ]);
  });
  afterAll(async () => {
    await allowAnonymous?.dispose();
    await openEnrolment?.dispose();
    await api?.dispose();
    await provider?.close();
  });

  it('publishes the JWKS without credentials, cacheable for a minute, public keys only', async () => {
    const answer = await api.app.inject({ method: 'GET', url: JWKS_PATH });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['cache-control']).toBe('public, max-age=60');
    const jwks = answer.json() as JSONWebKeySet;
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
    for (const key of jwks.keys) {
      expect(key).toEqual({
        kty: 'EC',
        crv: 'P-256',
        x: expect.any(String),
        y: expect.any(String),
        kid: expect.any(String),
        alg: 'ES256',
        use: 'sig',
      });
    }
    // Every node on the database publishes the same keys.
    expect((await jwksOf(openEnrolment)).keys).toEqual(jwks.keys);
  });

  it('mints a token that verifies against the JWKS, with the documented claims', async () => {
    const answer = await mint('keyA', { robotId: 'robot-a', scope: 'drive', subject: 'customer-user-42' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const { token, jti, expiresAt } = answer.body;
    expect(Object.keys(answer.body).sort()).toEqual(['expiresAt', 'jti', 'robotId', 'scope', 'token']);
    expect(answer.body).toMatchObject({ robotId: 'robot-a', scope: 'drive' });
    const { payload, protectedHeader } = await verify(token, 'robot-a');
    const iat = Math.floor(api.now.getTime() / 1000);
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'svc-session+jwt' });
    expect(payload).toEqual({
      iss: PUBLIC_URL,
      sub: `key:${ids.keyA}`,
      act: 'customer-user-42',
      aud: 'robot-a',
      scope: 'drive',
      org: orgs.A,
      iat,
      exp: iat + 300,
      jti,
    });
    expect(jti).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(expiresAt).toBe(new Date((iat + 300) * 1000).toISOString());
    // The store verifies it too, as the signalling server will.
    expect((await api.app.sessionKeys.verify(token, { audience: 'robot-a' })).jti).toBe(jti);

    // A user's token: sub is the user, no act.
    const byUser = await mint('operatorA', { robotId: 'robot-a', scope: 'drive' });
    expect(byUser.status).toBe(201);
    const user = await verify(byUser.body.token, 'robot-a');
    expect(user.payload.sub).toBe(`user:${ids.operatorA}`);
    expect(user.payload).not.toHaveProperty('act');
    expect(user.payload.jti).not.toBe(jti);
  });

  const cases = casesOf({
    default: {
      // API keys: with sessions:mint (of org A and of org B), and without it.
      keyA: {
        'robot-a': { drive: '201', observe: '201' },
        'robot-b': { observe: '404 not-found' },
        'robot-b-to-a-observe': { observe: '201', drive: '403 forbidden' },
        'robot-b-to-a-drive': { drive: '201' },
        'robot-b-public': { observe: '201', drive: '403 forbidden' },
        'robot-b-guest-drive': { observe: '404 not-found' },
        'robot-dev': { drive: '404 not-found' },
        'robot-nowhere': { drive: '404 not-found' },
      },
      keyB: { 'robot-a': { observe: '404 not-found' }, 'robot-b': { drive: '201' } },
      'keyA-no-scope': {
        'robot-a': { observe: '403 forbidden' },
        'robot-nowhere': { observe: '403 forbidden' },
      },
      // Signed-in users: of the robot's org by role, through grants (to their org, to them, public),
      // and on robots they cannot see.
      ownerA: {
        'robot-a': { drive: '201' },
        'robot-b': { observe: '404 not-found' },
        'robot-dev': { drive: '404 not-found' },
      },
      operatorA: { 'robot-a': { drive: '201', observe: '201' }, 'robot-b-to-a-drive': { drive: '201' } },
      viewerA: {
        'robot-a': { drive: '403 forbidden', observe: '403 forbidden' },
        'robot-b-to-a-observe': { observe: '201', drive: '403 forbidden' },
      },
      guest: {
        'robot-b-guest-observe': { observe: '201', drive: '403 forbidden' },
        'robot-b-guest-drive': { drive: '201' },
        'robot-b-public': { observe: '201', drive: '403 forbidden' },
        'robot-a': { observe: '404 not-found' },
      },
      ownerB: { 'robot-a': { observe: '404 not-found' }, 'robot-b': { drive: '201' } },
      // Nobody signed in.
      nobody: {
        'robot-dev': { drive: '401 unauthenticated' },
        'robot-a': { observe: '401 unauthenticated' },
        'robot-nowhere': { observe: '401 unauthenticated' },
        'robot-b-public': { observe: '201', drive: '403 forbidden' },
      },
    },
    'open-enrolment': {
      keyA: { 'robot-dev': { drive: '404 not-found' } },
      ownerA: { 'robot-dev': { drive: '404 not-found' } },
      nobody: { 'robot-dev': { drive: '201' }, 'robot-a': { observe: '401 unauthenticated' } },
    },
    'allow-anonymous': {
      nobody: { 'robot-dev': { drive: '201' }, 'robot-a': { observe: '401 unauthenticated' } },
    },
  });

  it('answers every row of the who-may-mint table', async () => {
    const problems: string[] = [];
    for (const c of cases) {
      const on = appOf(c.app);
      const answer = await mint(c.who, { robotId: c.robot, scope: c.scope }, on);
      const label = `${c.who} ${c.scope} ${c.robot}${c.app === undefined ? '' : ` (${c.app})`}`;
      if (shown(answer) !== c.expect) {
        problems.push(`${label}: got ${shown(answer)} ${JSON.stringify(answer.body)}, expected ${c.expect}`);
        continue;
      }
      if (answer.status === 201) {
        const { payload } = await verify(answer.body.token, c.robot, on);
        const sub =
          c.who === 'nobody'
            ? 'anonymous'
            : c.who.startsWith('key')
              ? `key:${ids[c.who]}`
              : `user:${ids[c.who]}`;
        if (payload.sub !== sub) problems.push(`${label}: sub ${String(payload.sub)}, expected ${sub}`);
        if (payload.scope !== c.scope) problems.push(`${label}: scope ${String(payload.scope)}`);
        const [row] = await api.db.select().from(robots).where(eq(robots.robotId, c.robot));
        if ((payload.org ?? null) !== row!.orgId) problems.push(`${label}: org ${String(payload.org)}`);
      } else {
        const message: string = answer.body.error.message;
        if (tokens[c.who] !== undefined && message.includes(tokens[c.who]!))
          problems.push(`${label}: token echoed`);
        if (
          c.expect.startsWith('403') &&
          c.scope === 'drive' &&
          c.who !== 'viewerA' &&
          !c.who.includes('no-scope')
        ) {
          if (!message.includes('only observe'))
            problems.push(`${label}: message "${message}" does not say observe only`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('says why: a key without the scope, a viewer asking to drive', async () => {
    const noScope = await mint('keyA-no-scope', { robotId: 'robot-a', scope: 'observe' });
    expect(noScope.body.error.message).toContain('sessions:mint');
    const viewer = await mint('viewerA', { robotId: 'robot-a', scope: 'drive' });
    expect(viewer.body.error.message).toContain('viewer');
  });

  it('bounds ttlSeconds to 30..900 and defaults to SVC_SESSION_TOKEN_TTL_SECONDS', async () => {
    const lifetime = async (ttlSeconds: number | undefined, on: TestApi = api) => {
      const answer = await mint(
        'keyA',
        { robotId: 'robot-a', scope: 'observe', ...(ttlSeconds === undefined ? {} : { ttlSeconds }) },
        on,
      );
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      const { payload } = await verify(answer.body.token, 'robot-a', on);
      return payload.exp! - payload.iat!;
    };
    expect(await lifetime(undefined)).toBe(300);
    expect(await lifetime(30)).toBe(30);
    expect(await lifetime(900)).toBe(900);
    expect(await lifetime(undefined, openEnrolment)).toBe(120);
    for (const ttlSeconds of [29, 901, 60.5, '60', 0, -1]) {
      const answer = await mint('keyA', { robotId: 'robot-a', scope: 'observe', ttlSeconds });
      expect(answer.status, String(ttlSeconds)).toBe(400);
      expect(answer.body.error.code).toBe('invalid-request');
      expect(answer.body.error.message).toContain('ttlSeconds');
    }
  });

  it('refuses a bad body with 400 naming the field', async () => {
    const bodies: [unknown, string, Who][] = [
      [{ scope: 'drive' }, 'robotId', 'keyA'],
      [{ robotId: '', scope: 'drive' }, 'robotId', 'keyA'],
      [{ robotId: 'r'.repeat(129), scope: 'drive' }, 'robotId', 'keyA'],
      [{ robotId: 'robot-a', scope: 'admin' }, 'scope', 'keyA'],
      [{ robotId: 'robot-a' }, 'scope', 'keyA'],
      [{ robotId: 'robot-a', scope: 'drive', subject: 's'.repeat(129) }, 'subject', 'keyA'],
      [{ robotId: 'robot-a', scope: 'drive', subject: 'someone' }, 'subject', 'ownerA'],
      [{ robotId: 'robot-a', scope: 'drive', subject: 'bad\u0000id' }, 'subject', 'keyA'],
      [{ robotId: 'robot-\u0000a', scope: 'drive' }, 'robotId', 'keyA'],
    ];
    for (const [body, field, who] of bodies) {
      const answer = await mint(who, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.code).toBe('invalid-request');
      expect(answer.body.error.message).toContain(field);
    }
  });

  it('audits each mint (actor, robot, scope, jti, subject), never the token', async () => {
    const answer = await mint('keyA', { robotId: 'robot-a', scope: 'observe', subject: 'customer-user-9' });
    expect(answer.status).toBe(201);
    // The audit read flushes the batch first, so the entry shows at once.
    const log = await api.call('GET', `/api/v1/orgs/${orgs.A}/audit?action=session-token.mint&limit=100`, {
      token: tokens.ownerA!,
    });
    expect(log.status).toBe(200);
    // Earlier tests minted too (their entries may carry a later time): this mint's entry, by its jti.
    const mine = (log.body.entries as { detail: { jti?: string } }[]).filter(
      (e) => e.detail.jti === answer.body.jti,
    );
    expect(mine).toEqual([
      {
        id: expect.any(Number),
        at: api.now.toISOString(),
        action: 'session-token.mint',
        actor: { kind: 'api_key', id: ids.keyA },
        target: { kind: 'robot', id: 'robot-a' },
        detail: {
          scope: 'observe',
          jti: answer.body.jti,
          subject: 'customer-user-9',
          expiresAt: answer.body.expiresAt,
        },
      },
    ]);

    const byUser = await mint('guest', { robotId: 'robot-b-guest-drive', scope: 'drive' });
    expect(byUser.status).toBe(201);
    await api.app.auditBatcher.flush();
    const entry = (
      await api.db.select().from(auditLog).where(eq(auditLog.targetId, 'robot-b-guest-drive'))
    ).find((e) => e.detail.jti === byUser.body.jti);
    expect(entry).toMatchObject({
      orgId: orgs.B,
      actorKind: 'user',
      actorId: ids.guest,
      action: 'session-token.mint',
      detail: { scope: 'drive', jti: byUser.body.jti, expiresAt: byUser.body.expiresAt },
    });

    await Promise.all([openEnrolment.app.auditBatcher.flush(), allowAnonymous.app.auditBatcher.flush()]);
    const all = await api.db.select().from(auditLog).where(eq(auditLog.action, 'session-token.mint'));
    expect(all.length).toBeGreaterThan(cases.filter((c) => c.expect === '201').length);
    const text = JSON.stringify(all);
    for (const token of [answer.body.token, byUser.body.token, tokens.keyA!])
      expect(text).not.toContain(token);
  });

  it('stops minting with a revoked API key once its cache entry expires (5 s on the app clock)', async () => {
    const { id, key } = await createKey('A', ['sessions:mint']);
    tokens.keyA = key;
    const body = { robotId: 'robot-a', scope: 'drive' };
    expect((await mint('keyA', body)).status).toBe(201);
    const revoked = await api.call('DELETE', `/api/v1/orgs/${orgs.A}/api-keys/${id}`, {
      token: tokens.ownerA!,
    });
    expect(revoked.status).toBe(204);
    // Documented: the mint path trusts its key cache for up to 5 s; routes without the cache refuse at once.
    expect((await mint('keyA', body)).status).toBe(201);
    expect((await api.call('GET', '/api/v1/robots', { token: key })).status).toBe(401);
    api.now = new Date(api.now.getTime() + 5_000);
    const refused = await mint('keyA', body);
    expect(shown(refused)).toBe('401 unauthenticated');
    expect(refused.body.error.message).not.toContain(key);
    // An unknown key stays refused.
    expect(shown(await mint('keyA', body))).toBe('401 unauthenticated');
  });

  it('rotates keys on the app clock: a new key signs, the old stays published until its tokens expired', async () => {
    const before = await mint('keyB', { robotId: 'robot-b', scope: 'drive', ttlSeconds: 900 });
    expect(before.status).toBe(201);
    const oldKid = decodeProtectedHeader(before.body.token).kid!;
    const [oldRow] = await api.db.select().from(sessionSigningKeys).where(eq(sessionSigningKeys.kid, oldKid));
    expect(oldRow!.retiresAt.getTime() - oldRow!.createdAt.getTime()).toBe(24 * 3_600_000);

    // Past the rotation period (no timer tick needed): a new key signs, the old one is still published.
    api.now = new Date(oldRow!.retiresAt.getTime() + 1_000);
    const after = await mint('keyB', { robotId: 'robot-b', scope: 'drive' });
    expect(after.status).toBe(201);
    const newKid = decodeProtectedHeader(after.body.token).kid!;
    expect(newKid).not.toBe(oldKid);
    const published = (await jwksOf(api)).keys.map((k) => k.kid);
    expect(published).toContain(oldKid);
    expect(published).toContain(newKid);
    await verify(after.body.token, 'robot-b');

    // After the old key's expiresAt it is gone from the JWKS and, after the next reload, from the database.
    api.now = new Date(oldRow!.expiresAt.getTime());
    expect((await jwksOf(api)).keys.map((k) => k.kid)).toEqual([newKid]);
    await api.app.sessionKeys.refresh();
    const left = await api.db.select().from(sessionSigningKeys);
    expect(left.map((r) => r.kid)).toEqual([newKid]);
    await expect(api.app.sessionKeys.verify(before.body.token)).rejects.toMatchObject({
      code: 'unknown-key',
    });
  });
});
