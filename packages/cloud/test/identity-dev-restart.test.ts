/**
 * svc-cloud's embedded development provider keeps its keys and what sign-in depends on in the data
 * folder: after a restart on the same folder, tokens issued before still verify, refresh tokens still
 * renew, the browser's session still signs in without the login page, and an invitation's one-time
 * token still signs the invitee in. A damaged keys file stops the start, naming the file.
 */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { discover, freeTcpPort, type LoginTarget } from '@svc/testkit';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isIdentityError } from '../src/identity/index.js';
import { type RunningCloud, startCloud } from '../src/server.js';
import { alertOf, authorize, exchangeCode, refreshTokens, submitLogin } from './support/authorize.js';

/** One HTTP request to a running svc-cloud, JSON both ways. */
async function call(
  cloud: RunningCloud,
  method: string,
  path: string,
  options: { token?: string; idToken?: string; body?: unknown } = {},
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read field by field
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.idToken !== undefined) headers['x-svc-id-token'] = options.idToken;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${cloud.address}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** The console's view of the embedded provider: its endpoints, client and API resource. */
async function consoleTarget(cloud: RunningCloud): Promise<LoginTarget> {
  const { identity, consoleUrl } = cloud.config;
  const endpoints = await discover(identity.issuer);
  return {
    authorizationEndpoint: endpoints.authorizationEndpoint,
    tokenEndpoint: endpoints.tokenEndpoint,
    clientId: identity.clientId,
    redirectUri: `${consoleUrl}/`,
    audience: identity.audience,
  };
}

describe('a restart of svc-cloud on the same data folder', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let cloud: RunningCloud | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-dev-restart-'));
    // The issuer names the port: the restart must come back on the same one.
    env = {
      SVC_PORT: String(await freeTcpPort()),
      SVC_DATA_DIR: dataDir,
      SVC_LOG_LEVEL: 'error',
      SVC_RATE_LIMIT_PER_MINUTE: '0',
    };
  });
  afterAll(async () => {
    await cloud?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps people signed in: tokens verify, refresh works, the session and an invitation link still sign in', async () => {
    cloud = await startCloud(env);
    let target = await consoleTarget(cloud);
    const page = await authorize(target);
    expect(page.kind).toBe('page');
    const signedIn = await submitLogin(page, { sub: 'dev-alice' });
    const before = await exchangeCode(target, signedIn);
    const me = await call(cloud, 'GET', '/api/v1/me', { token: before.accessToken, idToken: before.idToken });
    expect(me.status).toBe(200);
    const orgId = me.body.orgs[0].id as string;
    const invited = await call(cloud, 'POST', `/api/v1/orgs/${orgId}/invitations`, {
      token: before.accessToken,
      body: { email: 'dora@company.test', role: 'operator' },
    });
    expect(invited.status).toBe(201);
    const link = new URLSearchParams((invited.body.link as string).split('#/invite?')[1]);
    expect(link.get('ott')).toBeTruthy();

    await cloud.close();
    // Keys and state are readable by the service's user only.
    const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;
    expect(await mode(join(dataDir, 'dev-oidc'))).toBe(0o700);
    expect(await mode(join(dataDir, 'dev-oidc', 'keys.json'))).toBe(0o600);
    expect(await mode(join(dataDir, 'dev-oidc', 'state.json'))).toBe(0o600);
    cloud = await startCloud(env);
    target = await consoleTarget(cloud);

    // The access and ID tokens issued before the restart.
    const again = await call(cloud, 'GET', '/api/v1/me', {
      token: before.accessToken,
      idToken: before.idToken,
    });
    expect(again.status).toBe(200);
    expect(again.body.user.id).toBe(me.body.user.id);
    // Silent renewal with the refresh token issued before the restart.
    const renewed = await refreshTokens(target, before.refreshToken, target.audience);
    const renewedMe = await call(cloud, 'GET', '/api/v1/me', {
      token: renewed.accessToken,
      idToken: renewed.idToken,
    });
    expect(renewedMe.body.user).toMatchObject({ id: me.body.user.id, email: 'alice@example.test' });
    // The browser's session: a new sign-in goes straight back to the console.
    expect((await authorize(target, {}, signedIn.jar)).kind).toBe('callback');
    // The invitation link made before the restart.
    const dora = await exchangeCode(
      target,
      await authorize(target, { login_hint: link.get('email')!, one_time_token: link.get('ott')! }),
    );
    const doraMe = await call(cloud, 'GET', '/api/v1/me', { token: dora.accessToken, idToken: dora.idToken });
    expect(doraMe.body.user.email).toBe('dora@company.test');
    const accepted = await call(cloud, 'POST', '/api/v1/invitations/accept', {
      token: dora.accessToken,
      body: { token: link.get('token') },
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ org: { id: orgId }, role: 'operator' });
  });

  it('refuses a one-time token used before the restart', async () => {
    cloud ??= await startCloud(env);
    const target = await consoleTarget(cloud);
    const owner = await exchangeCode(target, await submitLogin(await authorize(target), { sub: 'dev-bob' }));
    const me = await call(cloud, 'GET', '/api/v1/me', { token: owner.accessToken, idToken: owner.idToken });
    const invited = await call(cloud, 'POST', `/api/v1/orgs/${me.body.orgs[0].id}/invitations`, {
      token: owner.accessToken,
      body: { email: 'eli@company.test', role: 'viewer' },
    });
    const link = new URLSearchParams((invited.body.link as string).split('#/invite?')[1]);
    const params = { login_hint: link.get('email')!, one_time_token: link.get('ott')! };
    expect((await authorize(target, params)).kind).toBe('callback');

    await cloud.close();
    cloud = await startCloud(env);

    const reused = await authorize(await consoleTarget(cloud), params);
    expect(reused.kind === 'page' && alertOf(reused.html)).toMatch(/already used/);
  });
});

describe('a damaged keys file', () => {
  let dataDir: string;
  let cloud: RunningCloud | undefined;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-dev-keys-'));
  });
  afterEach(async () => {
    await cloud?.close();
    cloud = undefined;
    await rm(dataDir, { recursive: true, force: true });
  });

  it('stops the start with an error naming the file and what to do; without the file it starts', async () => {
    const env = { SVC_PORT: String(await freeTcpPort()), SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'error' };
    cloud = await startCloud(env);
    await cloud.close();
    cloud = undefined;
    const keysFile = join(dataDir, 'dev-oidc', 'keys.json');
    await writeFile(keysFile, '{"version":1,"signingKeys":[{"kty":"EC"', 'utf8');

    const err = await startCloud(env).catch((e: unknown) => e);

    expect(isIdentityError(err, 'dev-state-corrupt')).toBe(true);
    expect((err as Error).message).toContain(keysFile);
    expect((err as Error).message).toMatch(/delete it/);
    await rm(keysFile);
    cloud = await startCloud(env);
    expect((await fetch(`${cloud.config.identity.issuer}/jwks`)).status).toBe(200);
  });
});
