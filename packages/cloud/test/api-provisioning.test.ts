/**
 * Provisioning on first login (spec 5.1.6 and 5.1.7), the provider change of spec 2.1, the
 * invitation rules, and the Logto invitation step against a local server speaking Logto's shapes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { and, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auditLog, invitations, memberships, orgs, users } from '../src/db/index.js';
import { type InvitationProvider, LogtoInvitationProvider } from '../src/invitations/index.js';
import { type Answer, type StartApiOptions, startApi, type TestApi } from './support/api.js';
import { databaseBackends } from './support/databases.js';
import { serve, startTestProvider, TEST_USERS, type TestProvider } from './support/oidc.js';

const HOUR_MS = 3_600_000;

/** Users of the test provider besides {@link TEST_USERS}: a group nobody mapped, and two groups. */
const EXTRA_USERS = [
  { sub: 'user-gus', email: 'gus@example.test', emailVerified: true, groups: ['guests'], name: 'Gus' },
  {
    sub: 'user-hana',
    email: 'hana@example.test',
    emailVerified: true,
    groups: ['operators', 'admins'],
    name: 'Hana',
  },
];

/** An org with `user` as its admin, made directly in the database (invite-only has no other way in). */
async function seedOrg(api: TestApi, userId: string, role: 'admin' | 'owner' = 'admin'): Promise<string> {
  const [org] = await api.db.insert(orgs).values({ name: 'Robotics' }).returning();
  await api.db.insert(memberships).values({ orgId: org!.id, userId, role });
  return org!.id;
}

/** The query of an invitation link `<console>#/invite?...`, checking its shape. */
function linkQuery(api: TestApi, link: string): URLSearchParams {
  const prefix = `${api.config.consoleUrl}#/invite?`;
  expect(link.startsWith(prefix), link).toBe(true);
  return new URLSearchParams(link.slice(prefix.length));
}

async function invitationRow(api: TestApi, id: string) {
  const [row] = await api.db.select().from(invitations).where(eq(invitations.id, id));
  return row!;
}

async function auditOf(api: TestApi, action: string) {
  return api.db.select().from(auditLog).where(eq(auditLog.action, action));
}

describe.each(databaseBackends)('provisioning on $name', (backend) => {
  let provider: TestProvider;
  const apis: TestApi[] = [];
  const start = async (options: Partial<StartApiOptions> = {}): Promise<TestApi> => {
    const api = await startApi({ backend, provider, ...options });
    apis.push(api);
    return api;
  };

  beforeAll(async () => {
    provider = await startTestProvider({ users: [...TEST_USERS, ...EXTRA_USERS] });
  });
  afterEach(async () => {
    // Apps sharing a database first, the one that owns it last.
    for (const api of apis.splice(0).reverse()) await api.dispose();
  });
  afterAll(async () => {
    await provider?.close();
  });

  describe('self-serve', () => {
    it('gives each new user an org of their own as owner, and nobody else joins it', async () => {
      const api = await start();
      const alice = await api.signIn({ sub: 'user-alice' });
      const bob = await api.signIn({ sub: 'user-bob' });
      expect(alice.me.status).toBe(200);
      expect(alice.me.body).toMatchObject({ status: 'ready', provisioning: 'self-serve', firstLogin: true });
      expect(alice.me.body.orgs).toEqual([expect.objectContaining({ role: 'owner' })]);
      expect(bob.me.body.orgs).toEqual([expect.objectContaining({ role: 'owner' })]);
      expect(bob.me.body.orgs[0].id).not.toBe(alice.me.body.orgs[0].id);
      const members = await api.call('GET', `/api/v1/orgs/${alice.me.body.orgs[0].id}/members`, {
        token: alice.accessToken,
      });
      expect(members.body.members).toEqual([
        expect.objectContaining({ userId: alice.me.body.user.id, role: 'owner' }),
      ]);
      const [org] = await api.db.select().from(orgs).where(eq(orgs.id, alice.me.body.orgs[0].id));
      expect(org!.createdBy).toBe(alice.me.body.user.id);
    });
  });

  describe('invite-only', () => {
    let api: TestApi;
    let admin: Awaited<ReturnType<TestApi['signIn']>>;
    let orgId: string;

    beforeEach(async () => {
      api = await start({ env: { SVC_PROVISIONING: 'invite-only' } });
      admin = await api.signIn({ sub: 'user-alice' });
      orgId = await seedOrg(api, admin.me.body.user.id);
    });

    const invite = (email: string, role = 'operator'): Promise<Answer> =>
      api.call('POST', `/api/v1/orgs/${orgId}/invitations`, {
        token: admin.accessToken,
        body: { email, role },
      });

    it('gives no access on first login, then the invited role once an admin invites the verified email', async () => {
      const first = await api.signIn({ sub: 'user-bob' });
      expect(first.me.status).toBe(200);
      expect(first.me.body).toMatchObject({ status: 'no-organisation', orgs: [], firstLogin: true });
      const bobId = first.me.body.user.id;
      expect(await api.db.select().from(memberships).where(eq(memberships.userId, bobId))).toEqual([]);
      expect(await api.call('GET', '/api/v1/orgs', { token: first.accessToken })).toMatchObject({
        status: 200,
        body: { orgs: [] },
      });
      expect((await api.call('GET', `/api/v1/orgs/${orgId}`, { token: first.accessToken })).status).toBe(404);
      expect((await auditOf(api, 'provisioning.invite-only')).map((e) => e.targetId)).toContain(bobId);

      const invited = await invite('Bob@Example.test', 'operator');
      expect(invited.status).toBe(201);
      const query = linkQuery(api, invited.body.link);
      expect(query.get('email')).toBe('bob@example.test');
      expect(query.get('token')).toBe(invited.body.token);
      expect(query.has('ott')).toBe(false); // the default provider has open registration: no one-time token
      expect(api.mail).toEqual([
        expect.objectContaining({ to: 'bob@example.test', text: expect.stringContaining(invited.body.link) }),
      ]);

      // The same login, next time: the invitation matches the verified email.
      const again = await api.call('GET', '/api/v1/me', { token: first.accessToken, idToken: first.idToken });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'ready', firstLogin: false });
      expect(again.body.user.id).toBe(bobId);
      expect(again.body.orgs).toEqual([{ id: orgId, name: 'Robotics', role: 'operator' }]);
      expect(await invitationRow(api, invited.body.invitation.id)).toMatchObject({ acceptedBy: bobId });
      const accepts = await auditOf(api, 'invitation.accept');
      expect(accepts).toEqual([
        expect.objectContaining({ orgId, actorId: bobId, detail: expect.objectContaining({ via: 'email' }) }),
      ]);
    });

    it('matches an invitation at the very first login', async () => {
      const invited = await invite('bob@example.test', 'viewer');
      expect(invited.status).toBe(201);
      const { me } = await api.signIn({ sub: 'user-bob' });
      expect(me.body).toMatchObject({ status: 'ready', firstLogin: true });
      expect(me.body.orgs).toEqual([{ id: orgId, name: 'Robotics', role: 'viewer' }]);
    });

    it('puts the provider’s one-time token in the link as ott', async () => {
      const withOtt: InvitationProvider = {
        name: 'closed-registration',
        oneTimeToken: async (email) => `ott-for-${email}`,
      };
      const closed = await start({ env: { SVC_PROVISIONING: 'invite-only' }, invitationProvider: withOtt });
      const owner = await closed.signIn({ sub: 'user-alice' });
      const org = await seedOrg(closed, owner.me.body.user.id, 'owner');
      const invited = await closed.call('POST', `/api/v1/orgs/${org}/invitations`, {
        token: owner.accessToken,
        body: { email: 'bob@example.test', role: 'admin' },
      });
      expect(invited.status).toBe(201);
      const query = linkQuery(closed, invited.body.link);
      expect([...query.keys()]).toEqual(['email', 'token', 'ott']);
      expect(query.get('ott')).toBe('ott-for-bob@example.test');
    });

    it('accepts an invitation by token for the invited person; again by them is the same answer, by anyone else gone', async () => {
      const dora = await api.signIn({ name: 'dora' });
      expect(dora.me.body.status).toBe('no-organisation');
      const invited = await invite('dora@example.test', 'viewer');
      const accept = () =>
        api.call('POST', '/api/v1/invitations/accept', {
          token: dora.accessToken,
          body: { token: invited.body.token },
        });
      const accepted = await accept();
      expect(accepted).toMatchObject({ status: 200, body: { org: { id: orgId }, role: 'viewer' } });
      const orgsOfDora = await api.call('GET', '/api/v1/orgs', { token: dora.accessToken });
      expect(orgsOfDora.body.orgs).toEqual([expect.objectContaining({ id: orgId, role: 'viewer' })]);
      // The console accepts the link after a sign-in that may have matched it by email already.
      expect(await accept()).toMatchObject({ status: 200, body: { org: { id: orgId }, role: 'viewer' } });
      const bob = await api.signIn({ sub: 'user-bob' });
      const reused = await api.call('POST', '/api/v1/invitations/accept', {
        token: bob.accessToken,
        body: { token: invited.body.token },
      });
      expect(reused.status).toBe(410);
      expect(reused.body.error).toMatchObject({
        code: 'gone',
        message: expect.stringMatching(/already accepted/),
      });
      expect((await api.call('GET', '/api/v1/orgs', { token: bob.accessToken })).body.orgs).toEqual([]);
    });

    it('refuses an invitation claimed by another person’s login, and keeps it pending for the invitee', async () => {
      const bob = await api.signIn({ sub: 'user-bob' });
      const invited = await invite('dora@example.test', 'operator');
      const claimed = await api.call('POST', '/api/v1/invitations/accept', {
        token: bob.accessToken,
        body: { token: invited.body.token },
      });
      expect(claimed.status).toBe(403);
      expect(claimed.body.error.code).toBe('forbidden');
      expect(claimed.body.error.message).not.toContain(invited.body.token);
      const row = await invitationRow(api, invited.body.invitation.id);
      expect(row).toMatchObject({ acceptedAt: null, acceptedBy: null });
      const listed = await api.call('GET', `/api/v1/orgs/${orgId}/invitations`, { token: admin.accessToken });
      expect(listed.body.invitations).toEqual([
        expect.objectContaining({ id: invited.body.invitation.id, state: 'pending' }),
      ]);
      expect((await api.call('GET', '/api/v1/orgs', { token: bob.accessToken })).body.orgs).toEqual([]);
      // Bob's own ID token with the access token cannot make the invitation his either.
      const bobAgain = await api.call('GET', '/api/v1/me', { token: bob.accessToken, idToken: bob.idToken });
      expect(bobAgain.body.status).toBe('no-organisation');

      const dora = await api.signIn({ name: 'dora' });
      expect(dora.me.body.orgs).toEqual([{ id: orgId, name: 'Robotics', role: 'operator' }]);
    });

    it('lets an invitation expire: not matched at login, and 410 when accepted', async () => {
      const invited = await invite('dora@example.test');
      expect(new Date(invited.body.invitation.expiresAt).getTime()).toBe(
        api.now.getTime() + api.config.invitationTtlHours * HOUR_MS,
      );
      api.now = new Date(api.now.getTime() + api.config.invitationTtlHours * HOUR_MS + 1000);
      const dora = await api.signIn({ name: 'dora' });
      expect(dora.me.body).toMatchObject({ status: 'no-organisation', orgs: [] });
      const accepted = await api.call('POST', '/api/v1/invitations/accept', {
        token: dora.accessToken,
        body: { token: invited.body.token },
      });
      expect(accepted.status).toBe(410);
      expect(accepted.body.error).toMatchObject({ code: 'gone', message: expect.stringMatching(/expired/) });
      const listed = await api.call('GET', `/api/v1/orgs/${orgId}/invitations`, { token: admin.accessToken });
      expect(listed.body.invitations).toEqual([expect.objectContaining({ state: 'expired' })]);
      expect(await api.db.select().from(memberships).where(eq(memberships.orgId, orgId))).toHaveLength(1);
    });

    it('honours a revocation: not matched at login, and 410 when accepted', async () => {
      const invited = await invite('dora@example.test');
      const revoked = await api.call(
        'DELETE',
        `/api/v1/orgs/${orgId}/invitations/${invited.body.invitation.id}`,
        {
          token: admin.accessToken,
        },
      );
      expect(revoked.status).toBe(204);
      const dora = await api.signIn({ name: 'dora' });
      expect(dora.me.body).toMatchObject({ status: 'no-organisation', orgs: [] });
      const accepted = await api.call('POST', '/api/v1/invitations/accept', {
        token: dora.accessToken,
        body: { token: invited.body.token },
      });
      expect(accepted.status).toBe(410);
      expect(accepted.body.error).toMatchObject({ code: 'gone', message: expect.stringMatching(/revoked/) });
      expect(await auditOf(api, 'invitation.revoke')).toHaveLength(1);
    });

    it('never matches an invitation on an email the provider does not say is verified', async () => {
      const invited = await invite('carol@example.test');
      const carol = await api.signIn({ sub: 'user-carol' });
      expect(carol.me.body).toMatchObject({ status: 'no-organisation', orgs: [] });
      expect(carol.me.body.user).toMatchObject({ email: null, emailVerified: false });
      const accepted = await api.call('POST', '/api/v1/invitations/accept', {
        token: carol.accessToken,
        body: { token: invited.body.token },
      });
      expect(accepted.status).toBe(403);
      expect(await invitationRow(api, invited.body.invitation.id)).toMatchObject({ acceptedAt: null });
    });

    it('does not let users create organisations', async () => {
      const bob = await api.signIn({ sub: 'user-bob' });
      const created = await api.call('POST', '/api/v1/orgs', {
        token: bob.accessToken,
        body: { name: 'Mine' },
      });
      expect(created.status).toBe(403);
      expect(await api.db.select().from(orgs)).toHaveLength(1);
    });
  });

  describe('default-org', () => {
    const env = {
      SVC_PROVISIONING: 'default-org',
      SVC_OIDC_ROLE_CLAIM: 'groups',
      SVC_OIDC_ROLE_MAP: 'admins=admin, operators=operator',
      SVC_DEFAULT_ORG_NAME: 'Acme Robotics',
    };

    it('puts mapped users in the one org at the role their group maps to (the highest of several)', async () => {
      const api = await start({ env });
      const alice = await api.signIn({ sub: 'user-alice' });
      const bob = await api.signIn({ sub: 'user-bob' });
      const hana = await api.signIn({ sub: 'user-hana' });
      expect(alice.me.body).toMatchObject({ status: 'ready', provisioning: 'default-org' });
      const orgId = alice.me.body.orgs[0].id;
      expect(alice.me.body.orgs).toEqual([{ id: orgId, name: 'Acme Robotics', role: 'admin' }]);
      expect(bob.me.body.orgs).toEqual([{ id: orgId, name: 'Acme Robotics', role: 'operator' }]);
      expect(hana.me.body.orgs).toEqual([{ id: orgId, name: 'Acme Robotics', role: 'admin' }]);
      expect(await api.db.select().from(orgs)).toHaveLength(1);
      const entries = await auditOf(api, 'provisioning.default-org');
      expect(entries.map((e) => [e.targetId, e.detail.role])).toEqual([
        [alice.me.body.user.id, 'admin'],
        [bob.me.body.user.id, 'operator'],
        [hana.me.body.user.id, 'admin'],
      ]);
    });

    it('gives users whose groups are not mapped no access, and audits the denial', async () => {
      const api = await start({ env });
      const gus = await api.signIn({ sub: 'user-gus' });
      const carol = await api.signIn({ sub: 'user-carol' }); // no group claim at all
      for (const { me } of [gus, carol]) {
        expect(me.status).toBe(200);
        expect(me.body).toMatchObject({ status: 'no-organisation', orgs: [] });
      }
      expect(await api.db.select().from(memberships)).toEqual([]);
      const denials = await auditOf(api, 'provisioning.denied');
      expect(denials.map((e) => [e.targetId, e.detail])).toEqual([
        [gus.me.body.user.id, { claim: 'groups', values: ['guests'] }],
        [carol.me.body.user.id, { claim: 'groups', values: [] }],
      ]);
      // A denied user sees no org and cannot make one.
      const created = await api.call('POST', '/api/v1/orgs', {
        token: gus.accessToken,
        body: { name: 'Mine' },
      });
      expect(created.status).toBe(403);
      // The admins who sign in later still find the one org.
      const alice = await api.signIn({ sub: 'user-alice' });
      expect(alice.me.body.orgs).toEqual([expect.objectContaining({ name: 'Acme Robotics', role: 'admin' })]);
      expect(denials[0]!.orgId).toBe(alice.me.body.orgs[0].id);
    });
  });

  describe('provider change', () => {
    let providerB: TestProvider;
    beforeAll(async () => {
      // The same people at another provider, under other subjects; Mallory claims Alice's email unverified.
      providerB = await startTestProvider({
        users: [
          { sub: 'b-7f3a', email: 'alice@example.test', emailVerified: true, name: 'Alice B' },
          { sub: 'b-mallory', email: 'alice@example.test', emailVerified: false, name: 'Mallory' },
          { sub: 'b-bob', email: 'bob@example.test', emailVerified: true, name: 'Bob B' },
        ],
      });
    });
    afterAll(async () => {
      await providerB?.close();
    });

    it('re-keys the user with the same verified email onto the new issuer, memberships kept, audited', async () => {
      const appA = await start();
      const first = await appA.signIn({ sub: 'user-alice' });
      const aliceId = first.me.body.user.id;
      const orgsBefore = first.me.body.orgs;
      expect(orgsBefore).toEqual([expect.objectContaining({ role: 'owner' })]);

      const appB = await start({ provider: providerB, database: appA.database });
      expect(appB.config.identity.issuer).toBe(providerB.issuer);
      expect(providerB.issuer).not.toBe(provider.issuer);

      // An unverified email at B takes over nothing.
      const mallory = await appB.signIn({ sub: 'b-mallory' });
      expect(mallory.me.status).toBe(200);
      expect(mallory.me.body.user.id).not.toBe(aliceId);
      expect(mallory.me.body).toMatchObject({ providerChanged: false, firstLogin: true });
      expect(mallory.me.body.user.email).toBeNull();

      const second = await appB.signIn({ sub: 'b-7f3a' });
      expect(second.me.status).toBe(200);
      expect(second.me.body).toMatchObject({ providerChanged: true, firstLogin: false, status: 'ready' });
      expect(second.me.body.user).toMatchObject({ id: aliceId, email: 'alice@example.test' });
      expect(second.me.body.orgs).toEqual(orgsBefore);
      const rows = await appB.db.select().from(users).where(eq(users.email, 'alice@example.test'));
      expect(rows).toEqual([
        expect.objectContaining({ id: aliceId, oidcIssuer: providerB.issuer, oidcSubject: 'b-7f3a' }),
      ]);
      expect(await appB.db.select().from(orgs)).toHaveLength(2); // Alice's and Mallory's: none made for the change
      const changes = await auditOf(appB, 'user.provider-change');
      expect(changes).toEqual([
        expect.objectContaining({
          targetId: aliceId,
          detail: {
            email: 'alice@example.test',
            fromIssuer: provider.issuer,
            fromSubject: 'user-alice',
            toIssuer: providerB.issuer,
            toSubject: 'b-7f3a',
          },
        }),
      ]);

      // Later logins through B are plain logins; B's access token reaches the same org.
      const third = await appB.signIn({ sub: 'b-7f3a' });
      expect(third.me.body).toMatchObject({ providerChanged: false, user: { id: aliceId } });
      const org = await appB.call('GET', `/api/v1/orgs/${orgsBefore[0].id}`, { token: third.accessToken });
      expect(org.status).toBe(200);
      expect(org.body.org.role).toBe('owner');
      expect(await auditOf(appB, 'user.provider-change')).toHaveLength(1);
      // The old issuer's login no longer names this user.
      const [oldKey] = await appB.db
        .select()
        .from(users)
        .where(and(eq(users.oidcIssuer, provider.issuer), eq(users.oidcSubject, 'user-alice')));
      expect(oldKey).toBeUndefined();
    });

    it('does not give a verified email that another user holds to a user first seen without it', async () => {
      const appA = await start();
      const bobA = await appA.signIn({ sub: 'user-bob' });
      const appB = await start({ provider: providerB, database: appA.database });
      // Bob's first login through B comes without the ID token: no email, so a new user.
      const tokens = await providerB.login({ sub: 'b-bob' });
      const bare = await appB.call('GET', '/api/v1/me', { token: tokens.accessToken });
      expect(bare.body).toMatchObject({ firstLogin: true, user: { email: null } });
      const full = await appB.call('GET', '/api/v1/me', {
        token: tokens.accessToken,
        idToken: tokens.idToken,
      });
      expect(full.status).toBe(200);
      expect(full.body.user).toMatchObject({ id: bare.body.user.id, email: null });
      const [holder] = await appB.db.select().from(users).where(eq(users.email, 'bob@example.test'));
      expect(holder).toMatchObject({ id: bobA.me.body.user.id, oidcIssuer: provider.issuer });
      expect(await auditOf(appB, 'user.email-conflict')).toEqual([
        expect.objectContaining({
          targetId: bare.body.user.id,
          detail: { email: 'bob@example.test', heldBy: bobA.me.body.user.id },
        }),
      ]);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Logto, against a local server that speaks the documented shapes.

interface FakeLogto {
  readonly origin: string;
  /** What the server answers next: 'ok', or an HTTP status for one of its two endpoints. */
  mode: { token: number; ott: number };
  readonly tokenRequests: { authorization: string | undefined; form: URLSearchParams }[];
  readonly ottRequests: { authorization: string | undefined; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

const M2M_ID = 'm2m-app';
const M2M_SECRET = 'm2m-s3cret:with/odd chars';

async function startFakeLogto(): Promise<FakeLogto> {
  let issued = 0;
  const state = {
    mode: { token: 200, ott: 201 },
    tokenRequests: [] as FakeLogto['tokenRequests'],
    ottRequests: [] as FakeLogto['ottRequests'],
  };
  const read = async (req: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const text = await read(req);
    if (req.method === 'POST' && req.url === '/oidc/token') {
      state.tokenRequests.push({ authorization: req.headers.authorization, form: new URLSearchParams(text) });
      const expected = `Basic ${Buffer.from(`${encodeURIComponent(M2M_ID)}:${encodeURIComponent(M2M_SECRET)}`).toString('base64')}`;
      if (state.mode.token !== 200 || req.headers.authorization !== expected) {
        json(res, state.mode.token === 200 ? 401 : state.mode.token, { error: 'invalid_client' });
        return;
      }
      issued += 1;
      json(res, 200, {
        access_token: `m2m-token-${issued}`,
        expires_in: 3600,
        token_type: 'Bearer',
        scope: 'all',
      });
      return;
    }
    if (req.method === 'POST' && req.url === '/api/one-time-tokens') {
      const body = JSON.parse(text) as Record<string, unknown>;
      state.ottRequests.push({ authorization: req.headers.authorization, body });
      if (state.mode.ott !== 201 || req.headers.authorization !== `Bearer m2m-token-${issued}`) {
        json(res, state.mode.ott === 201 ? 401 : state.mode.ott, { code: 'auth.unauthorized' });
        return;
      }
      const n = state.ottRequests.length;
      json(res, 201, {
        id: `ott-id-${n}`,
        email: body.email,
        token: `logto-ott-${n}`,
        status: 'active',
        context: {},
        expiresAt: Date.now() + Number(body.expiresIn) * 1000,
        createdAt: Date.now(),
        tenantId: 'default',
      });
      return;
    }
    json(res, 404, { code: 'not-found' });
  };
  const server = await serve((req, res) => {
    handler(req, res).catch(() => res.writeHead(500).end());
  });
  let closed: Promise<void> | undefined;
  return Object.assign(state, {
    origin: server.origin,
    close: () => {
      closed ??= server.close();
      return closed;
    },
  });
}

describe('Logto invitation provider', () => {
  const backend = databaseBackends.find((b) => b.name === 'pglite')!;
  let provider: TestProvider;
  let logto: FakeLogto;
  let api: TestApi;
  let admin: Awaited<ReturnType<TestApi['signIn']>>;
  let orgId: string;

  beforeAll(async () => {
    provider = await startTestProvider();
  });
  beforeEach(async () => {
    logto = await startFakeLogto();
    api = await startApi({
      backend,
      provider,
      env: { SVC_PROVISIONING: 'invite-only' },
      invitationProvider: new LogtoInvitationProvider({
        endpoint: `${logto.origin}/`,
        m2mClientId: M2M_ID,
        m2mClientSecret: M2M_SECRET,
        managementResource: 'https://default.logto.app/api',
      }),
    });
    admin = await api.signIn({ sub: 'user-alice' });
    orgId = await seedOrg(api, admin.me.body.user.id);
  });
  afterEach(async () => {
    await api?.dispose();
    await logto?.close();
  });
  afterAll(async () => {
    await provider?.close();
  });

  const invite = (email: string): Promise<Answer> =>
    api.call('POST', `/api/v1/orgs/${orgId}/invitations`, {
      token: admin.accessToken,
      body: { email, role: 'operator' },
    });

  it('puts Logto’s one-time token in the link as ott, and reuses the M2M token across invitations', async () => {
    const first = await invite('Bob@Example.test');
    const second = await invite('dora@example.test');
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(linkQuery(api, first.body.link).get('ott')).toBe('logto-ott-1');
    expect(linkQuery(api, second.body.link).get('ott')).toBe('logto-ott-2');
    expect(linkQuery(api, first.body.link).get('email')).toBe('bob@example.test');

    expect(logto.tokenRequests).toHaveLength(1);
    const [tokenRequest] = logto.tokenRequests;
    expect(Object.fromEntries(tokenRequest!.form)).toMatchObject({
      grant_type: 'client_credentials',
      resource: 'https://default.logto.app/api',
    });
    expect(logto.ottRequests.map((r) => r.authorization)).toEqual([
      'Bearer m2m-token-1',
      'Bearer m2m-token-1',
    ]);
    expect(logto.ottRequests.map((r) => r.body)).toEqual([
      { email: 'bob@example.test', expiresIn: api.config.invitationTtlHours * 3600 },
      { email: 'dora@example.test', expiresIn: api.config.invitationTtlHours * 3600 },
    ]);
    // The one-time token travels in the link only; the invitation still matches on the verified email.
    const bob = await api.signIn({ sub: 'user-bob' });
    expect(bob.me.body.orgs).toEqual([expect.objectContaining({ id: orgId, role: 'operator' })]);
    expect(await auditOf(api, 'invitation.create')).toEqual([
      expect.objectContaining({ detail: expect.objectContaining({ provider: 'logto' }) }),
      expect.objectContaining({ detail: expect.objectContaining({ provider: 'logto' }) }),
    ]);
  });

  it.each([
    ['the M2M credentials are refused (401)', { token: 401, ott: 201 }, /M2M credentials/],
    ['the token endpoint fails (500)', { token: 500, ott: 201 }, /M2M credentials \(HTTP 500\)/],
    ['the one-time token is refused (401)', { token: 200, ott: 401 }, /one-time token \(HTTP 401\)/],
    ['the one-time token request fails (500)', { token: 200, ott: 500 }, /one-time token \(HTTP 500\)/],
  ])('answers 502 and creates no invitation when %s', async (_what, mode, reason) => {
    logto.mode = mode;
    const answer = await invite('bob@example.test');
    expect(answer.status).toBe(502);
    expect(answer.body.error.code).toBe('provider-unavailable');
    expect(answer.body.error.message).toMatch(/invitation could not be prepared/);
    expect(answer.body.error.message).toMatch(reason);
    expect(answer.body.error.message).not.toContain(M2M_SECRET);
    expect(await api.db.select().from(invitations)).toEqual([]);
    expect(await auditOf(api, 'invitation.create')).toEqual([]);
    expect(api.mail).toEqual([]);
  });

  it('answers 502 when Logto cannot be reached', async () => {
    await logto.close();
    const answer = await invite('bob@example.test');
    expect(answer.status).toBe(502);
    expect(answer.body.error.message).toMatch(/could not be reached/);
    expect(await api.db.select().from(invitations)).toEqual([]);
  });

  it('asks for a new M2M token after Logto refuses the cached one', async () => {
    expect((await invite('bob@example.test')).status).toBe(201);
    logto.mode = { token: 200, ott: 401 };
    expect((await invite('dora@example.test')).status).toBe(502);
    logto.mode = { token: 200, ott: 201 };
    const third = await invite('dora@example.test');
    expect(third.status).toBe(201);
    expect(logto.tokenRequests).toHaveLength(2);
    expect(logto.ottRequests.at(-1)!.authorization).toBe('Bearer m2m-token-2');
  });
});
