import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog, users } from '../src/db/index.js';
import { startApi, type TestApi } from './support/api.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

describe.each(databaseBackends)('GET /api/v1/me on $name', (backend) => {
  let provider: TestProvider;
  let api: TestApi;

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend, provider });
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  it('signs a first-time user in with the verified email of the ID token and gives them their own org (self-serve)', async () => {
    const { me } = await api.signIn({ sub: 'user-alice' });
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ email: 'alice@example.test', emailVerified: true });
    expect(me.body.status).toBe('ready');
    expect(me.body.firstLogin).toBe(true);
    expect(me.body.orgs).toEqual([expect.objectContaining({ role: 'owner' })]);
    const again = await api.signIn({ sub: 'user-alice' });
    expect(again.me.body.firstLogin).toBe(false);
    expect(again.me.body.orgs).toEqual(me.body.orgs);
    const entries = await api.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.action, 'provisioning.self-serve'));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorKind: 'system', targetId: me.body.user.id });
  });

  it('refuses an ID token of another user (sub mismatch) with 400 and does not take its email', async () => {
    const bob = await provider.login({ sub: 'user-bob' });
    const alice = await provider.login({ sub: 'user-alice' });
    const answer = await api.call('GET', '/api/v1/me', { token: bob.accessToken, idToken: alice.idToken });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('id-token-rejected');
    expect(answer.body.error.message).toMatch(/subject-mismatch/);
    const rows = await api.db.select().from(users).where(eq(users.oidcSubject, 'user-bob'));
    expect(rows).toEqual([]);
  });

  it('keeps no email that the provider does not say is verified', async () => {
    const { me } = await api.signIn({ sub: 'user-carol' });
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBeNull();
    expect(me.body.user.emailVerified).toBe(false);
  });

  it('without the ID token, userinfo refuses the resource-scoped access token, so no email is known', async () => {
    const tokens = await provider.login({ name: 'dora' });
    const me = await api.call('GET', '/api/v1/me', { token: tokens.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBeNull();
  });

  it('answers 401 with a reason for missing, forged and misdirected tokens', async () => {
    const sub = 'user-alice';
    const cases: [string, string | undefined][] = [
      ['no token', undefined],
      ['alg none', provider.forge.algNone(sub)],
      ['HS256 with the public key', await provider.forge.hs256WithPublicKey(sub)],
      ['foreign key', await provider.forge.foreignKey(sub)],
      ['wrong issuer', await provider.forge.wrongIssuer(sub)],
      ['wrong audience', await provider.forge.wrongAudience(sub)],
      ['expired', await provider.forge.expired(sub)],
      ['not yet valid', await provider.forge.notYetValid(sub)],
      ['the ID token as access token', (await provider.login({ sub })).idToken],
    ];
    for (const [what, token] of cases) {
      const answer = await api.call('GET', '/api/v1/me', token === undefined ? {} : { token });
      expect(answer.status, what).toBe(401);
      expect(answer.body.error.code, what).toBe('unauthenticated');
      if (token !== undefined) expect(answer.body.error.message, what).not.toContain(token);
    }
  });
});
