/**
 * Silent renewal against the development provider: the console (a public client) gets a rotating
 * refresh token without asking for `offline_access`, and each renewal gives a JWT access token for
 * the API again and a new ID token.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcVerifier } from '../src/identity/index.js';
import { refresh, refreshTokens } from './support/authorize.js';
import { startTestProvider, TEST_AUDIENCE, type TestProvider } from './support/oidc.js';

describe('refresh tokens of the development provider', () => {
  let idp: TestProvider;
  let verifier: OidcVerifier;

  beforeAll(async () => {
    idp = await startTestProvider();
    verifier = new OidcVerifier({ issuer: idp.issuer, audience: idp.audience, clientId: idp.clientId });
  });
  afterAll(async () => {
    await idp.close();
  });

  /** Bob's refresh token from a login that asked for `openid email profile`, no `offline_access`. */
  async function bobsRefreshToken(): Promise<string> {
    const { response } = await idp.login({ sub: 'user-bob' });
    expect(response.scope).not.toMatch(/offline_access/);
    expect(typeof response.refresh_token).toBe('string');
    return response.refresh_token as string;
  }

  it('renews with the resource: a JWT access token for the API and a new ID token with the email', async () => {
    const { response, idToken } = await idp.login({ sub: 'user-bob' });
    const first = response.refresh_token as string;

    const renewed = await refreshTokens(idp, first, TEST_AUDIENCE);

    const access = await verifier.verifyAccessToken(renewed.accessToken);
    expect(access.sub).toBe('user-bob');
    expect(decodeJwt(renewed.accessToken).aud).toBe(TEST_AUDIENCE);
    expect(await verifier.verifyIdToken(renewed.idToken, access.sub)).toMatchObject({
      email: 'bob@example.test',
      emailVerified: true,
    });
    expect(renewed.refreshToken).not.toBe(first);
    // What oidc-client-ts compares before it takes a renewed ID token.
    const [before, after] = [decodeJwt(idToken), decodeJwt(renewed.idToken)];
    expect({ sub: after.sub, auth_time: after.auth_time, azp: after.azp }).toEqual({
      sub: before.sub,
      auth_time: before.auth_time,
      azp: before.azp,
    });
  });

  it('renews for the API also when the request names no resource', async () => {
    const renewed = await refreshTokens(idp, await bobsRefreshToken());

    expect((await verifier.verifyAccessToken(renewed.accessToken)).sub).toBe('user-bob');
  });

  it('keeps renewing with each new refresh token', async () => {
    let token = await bobsRefreshToken();
    for (let i = 0; i < 3; i += 1) {
      const renewed = await refreshTokens(idp, token, TEST_AUDIENCE);
      expect((await verifier.verifyAccessToken(renewed.accessToken)).sub).toBe('user-bob');
      token = renewed.refreshToken;
    }
  });

  it('takes a refresh token once: a reused one is refused and ends that sign-in', async () => {
    const first = await bobsRefreshToken();
    const second = await refreshTokens(idp, first, TEST_AUDIENCE);

    const replay = await refresh(idp, first, TEST_AUDIENCE);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    // A replayed token may be a stolen one: the whole grant is revoked, the newer token with it.
    const after = await refresh(idp, second.refreshToken, TEST_AUDIENCE);
    expect(after.status).toBe(400);
    expect(after.body.error).toBe('invalid_grant');
  });

  it('refuses to renew for another resource', async () => {
    const answer = await refresh(idp, await bobsRefreshToken(), 'https://another-api.svc.test');

    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_target');
  });
});
