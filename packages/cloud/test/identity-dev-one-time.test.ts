/**
 * One-time sign-in tokens of the development provider (spec 5.1.7): an authorization request with
 * `one_time_token` and `login_hint` signs the invitee in without the login page, once, within the
 * token's lifetime, for its own email only. The same provider as an external issuer serves a
 * Logto-compatible management endpoint, so svc-cloud's Logto invitation step works against it.
 */
import { FakeClock } from '@svc/runtime/testing';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadCloudConfig } from '../src/config.js';
import { memberships, orgs } from '../src/db/index.js';
import { OidcVerifier } from '../src/identity/index.js';
import {
  invitationProviderFor,
  isInvitationProviderError,
  LogtoInvitationProvider,
} from '../src/invitations/index.js';
import { type StartApiOptions, startApi, type TestApi } from './support/api.js';
import { alertOf, authorize, exchangeCode, submitLogin } from './support/authorize.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, TEST_AUDIENCE, type TestProvider } from './support/oidc.js';

const HOUR_SEC = 3600;
const M2M = { clientId: 'svc-invitations', clientSecret: 'm2m-s3cret:with/odd chars' } as const;

describe('one-time sign-in tokens of the development provider', () => {
  const clock = new FakeClock();
  let idp: TestProvider;
  let verifier: OidcVerifier;

  beforeAll(async () => {
    idp = await startTestProvider({ clock });
    verifier = new OidcVerifier({ issuer: idp.issuer, audience: idp.audience, clientId: idp.clientId });
  });
  afterAll(async () => {
    await idp.close();
  });

  const issue = (email: string, expiresInSec = HOUR_SEC): Promise<string> =>
    idp.provider.issueOneTimeToken(email, { expiresInSec });

  /** Who the tokens of a sign-in with `token` for `email` are for. */
  async function signInWith(token: string, email: string) {
    const tokens = await exchangeCode(
      idp,
      await authorize(idp, { one_time_token: token, login_hint: email }),
    );
    const { sub } = await verifier.verifyAccessToken(tokens.accessToken);
    const id = await verifier.verifyIdToken(tokens.idToken, sub);
    return { sub, email: id.email, emailVerified: id.emailVerified, claims: id.claims };
  }

  /** The page an authorization request with `token` for `email` stops on. */
  async function refusedPage(token: string, email: string | undefined) {
    const outcome = await authorize(idp, {
      one_time_token: token,
      ...(email === undefined ? {} : { login_hint: email }),
    });
    if (outcome.kind !== 'page') throw new Error('the token signed someone in');
    expect(outcome.html).not.toContain(token);
    return { status: outcome.status, alert: alertOf(outcome.html), html: outcome.html };
  }

  it('signs the invitee in without the login page, with the verified email of the token', async () => {
    const token = await issue('Dora@Company.test');

    const outcome = await authorize(idp, { one_time_token: token, login_hint: 'dora@company.test' });

    expect(outcome.kind).toBe('callback');
    const tokens = await exchangeCode(idp, outcome);
    const { sub } = await verifier.verifyAccessToken(tokens.accessToken);
    expect(sub).toBe('dev-dora@company.test');
    expect(await verifier.verifyIdToken(tokens.idToken, sub)).toMatchObject({
      email: 'dora@company.test',
      emailVerified: true,
    });
    expect(await verifier.verifiedEmail({ sub, ...tokens })).toBe('dora@company.test');
  });

  it('signs the same email in as the same person every time, and a known user as that user', async () => {
    const first = await signInWith(await issue('ezra@company.test'), 'ezra@company.test');
    const again = await signInWith(await issue('ezra@company.test'), 'Ezra@Company.test');
    const bob = await signInWith(await issue('bob@example.test'), 'bob@example.test');
    const typed = await signInWith(await issue('erin@example.test'), 'erin@example.test');

    expect(again.sub).toBe(first.sub);
    expect(bob).toMatchObject({ sub: 'user-bob', email: 'bob@example.test' });
    expect(bob.claims.groups).toEqual(['operators']);
    // The address a typed name gets: the same person as typing "erin" on the login page.
    expect(typed.sub).toBe('dev-erin');
    expect((await idp.login({ name: 'erin' })).idToken).toSatisfy(
      (idToken: string) => decodeJwt(idToken).sub === 'dev-erin',
    );
  });

  it('signs in once: the second use shows the login page saying the link was used', async () => {
    const token = await issue('fay@company.test');
    await signInWith(token, 'fay@company.test');

    const page = await refusedPage(token, 'fay@company.test');

    expect(page.status).toBe(400);
    expect(page.alert).toMatch(/already used/);
    expect(page.html).toContain('name="sub" value="user-alice"');
  });

  it('refuses a token whose lifetime is over, and takes it until then', async () => {
    const late = await issue('gail@company.test', 600);
    const onTime = await issue('gail@company.test', 600);

    clock.advance(599_999);
    expect((await signInWith(onTime, 'gail@company.test')).email).toBe('gail@company.test');
    clock.advance(1);
    const page = await refusedPage(late, 'gail@company.test');

    expect(page.alert).toMatch(/has expired/);
  });

  it('refuses a token presented for another email, without using it up', async () => {
    const token = await issue('hugo@company.test');

    const page = await refusedPage(token, 'mallory@company.test');

    expect(page.alert).toMatch(/for another email address/);
    expect((await signInWith(token, 'hugo@company.test')).email).toBe('hugo@company.test');
  });

  it('refuses an unknown token and a link without email, saying which', async () => {
    expect((await refusedPage('made-up-token', 'ivy@company.test')).alert).toMatch(/not valid/);
    expect((await refusedPage(await issue('ivy@company.test'), undefined)).alert).toMatch(
      /names no email address/,
    );
  });

  it('leaves the login page usable after a refused token', async () => {
    const outcome = await authorize(idp, { one_time_token: 'made-up-token', login_hint: 'ivy@company.test' });
    expect(outcome.kind).toBe('page');

    const tokens = await exchangeCode(idp, await submitLogin(outcome, { sub: 'user-bob' }));

    expect((await verifier.verifyAccessToken(tokens.accessToken)).sub).toBe('user-bob');
  });

  it('signs the invitee in even when someone else is signed in in the same browser', async () => {
    const alice = await submitLogin(await authorize(idp), { sub: 'user-alice' });
    expect(alice.kind).toBe('callback');
    expect((await authorize(idp, {}, alice.jar)).kind).toBe('callback'); // Alice's session

    const token = await issue('jo@company.test');
    const tokens = await exchangeCode(
      idp,
      await authorize(idp, { one_time_token: token, login_hint: 'jo@company.test' }, alice.jar),
    );

    expect((await verifier.verifyAccessToken(tokens.accessToken)).sub).toBe('dev-jo@company.test');
  });
});

describe('the Logto-compatible management endpoint', () => {
  let idp: TestProvider;
  let endpoint: string;

  beforeAll(async () => {
    idp = await startTestProvider({ managementApi: M2M });
    endpoint = `${idp.baseUrl}/api/one-time-tokens`;
  });
  afterAll(async () => {
    await idp.close();
  });

  const post = (headers: Record<string, string>) =>
    fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ email: 'kim@company.test', expiresIn: 600 }),
    });

  /** A client-credentials token request at Logto's path of the token endpoint. */
  const m2mToken = (id: string, secret: string, resource = 'https://default.logto.app/api') =>
    fetch(`${idp.baseUrl}/oidc/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'all' }),
    });

  it('refuses without an M2M access token, with a user’s access token, and with a made-up one', async () => {
    const { accessToken } = await idp.login({ sub: 'user-alice' });

    for (const headers of [
      {},
      { authorization: `Bearer ${accessToken}` },
      { authorization: 'Bearer nope' },
    ]) {
      const answer = await post(headers);
      expect(answer.status).toBe(401);
      expect(await answer.json()).toMatchObject({ code: 'auth.unauthorized' });
    }
  });

  it('gives no M2M token for a wrong secret, and none for the management API to the console', async () => {
    expect((await m2mToken(M2M.clientId, 'wrong')).status).toBe(401);
    const console = await fetch(idp.tokenEndpoint, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: idp.clientId,
        resource: 'https://default.logto.app/api',
      }),
    });
    expect(console.status).toBe(400);
  });

  it('mints a token for the M2M client that signs the invitee in', async () => {
    const grant = (await (await m2mToken(M2M.clientId, M2M.clientSecret)).json()) as { access_token: string };
    const answer = await post({ authorization: `Bearer ${grant.access_token}` });
    expect(answer.status).toBe(201);
    const body = (await answer.json()) as { token: string; email: string };
    expect(body.email).toBe('kim@company.test');

    const outcome = await authorize(idp, { one_time_token: body.token, login_hint: 'kim@company.test' });
    expect(outcome.kind).toBe('callback');
  });

  it('works with svc-cloud’s Logto invitation step unchanged, and says so when the secret is wrong', async () => {
    const logto = (secret: string) =>
      new LogtoInvitationProvider({
        endpoint: idp.issuer,
        m2mClientId: M2M.clientId,
        m2mClientSecret: secret,
        managementResource: 'https://default.logto.app/api',
      });

    const token = await logto(M2M.clientSecret).oneTimeToken('lea@company.test', { expiresInSec: 600 });
    const refused = await logto('wrong')
      .oneTimeToken('lea@company.test', { expiresInSec: 600 })
      .catch((err: unknown) => err);

    expect((await authorize(idp, { one_time_token: token ?? '', login_hint: 'lea@company.test' })).kind).toBe(
      'callback',
    );
    expect(isInvitationProviderError(refused, 'provider-refused')).toBe(true);
  });
});

describe('an invite-only svc-cloud with the development provider as its external issuer', () => {
  const backend = databaseBackends.find((b) => b.name === 'pglite')!;
  let idp: TestProvider;
  let api: TestApi;

  beforeAll(async () => {
    idp = await startTestProvider({ managementApi: M2M });
  });
  beforeEach(async () => {
    const env = {
      SVC_PROVISIONING: 'invite-only',
      SVC_INVITATION_PROVIDER: 'logto',
      SVC_LOGTO_ENDPOINT: idp.issuer,
      SVC_LOGTO_M2M_CLIENT_ID: M2M.clientId,
      SVC_LOGTO_M2M_CLIENT_SECRET: M2M.clientSecret,
    };
    // The invitation step the configuration selects, as svc-cloud's server does.
    const config = loadCloudConfig({
      SVC_OIDC_ISSUER: idp.issuer,
      SVC_OIDC_AUDIENCE: TEST_AUDIENCE,
      SVC_OIDC_CLIENT_ID: idp.clientId,
      ...env,
    });
    const options: StartApiOptions = {
      backend,
      provider: idp,
      env,
      invitationProvider: invitationProviderFor(config.invitationProvider),
    };
    api = await startApi(options);
  });
  afterEach(async () => {
    await api?.dispose();
  });
  afterAll(async () => {
    await idp?.close();
  });

  it('an invitation link signs the invitee in and into the organisation, once', async () => {
    const admin = await api.signIn({ sub: 'user-alice' });
    const [org] = await api.db.insert(orgs).values({ name: 'Robotics' }).returning();
    await api.db.insert(memberships).values({ orgId: org!.id, userId: admin.me.body.user.id, role: 'admin' });

    const invited = await api.call('POST', `/api/v1/orgs/${org!.id}/invitations`, {
      token: admin.accessToken,
      body: { email: 'Nina@Company.test', role: 'operator' },
    });
    expect(invited.status).toBe(201);
    const link = new URLSearchParams((invited.body.link as string).split('#/invite?')[1]);
    const ott = link.get('ott');
    expect(ott).toBeTruthy();

    // The console begins the login with the link's email and one-time token.
    const outcome = await authorize(idp, { login_hint: link.get('email')!, one_time_token: ott! });
    const tokens = await exchangeCode(idp, outcome);
    const me = await api.call('GET', '/api/v1/me', { token: tokens.accessToken, idToken: tokens.idToken });

    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe('nina@company.test');
    expect(me.body.orgs).toEqual([expect.objectContaining({ id: org!.id, role: 'operator' })]);
    const again = await authorize(idp, { login_hint: link.get('email')!, one_time_token: ott! });
    expect(again.kind === 'page' && alertOf(again.html)).toMatch(/already used/);
  });
});
