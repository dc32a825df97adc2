import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isIdentityError, OidcVerifier, verifiedEmailClaim } from '../src/identity/index.js';
import { serve, startTestProvider, type TestProvider } from './support/oidc.js';

describe('userinfo of a provider whose access token userinfo accepts', () => {
  let idp: TestProvider;
  let verifier: OidcVerifier;

  beforeAll(async () => {
    // Without a resource the provider issues an opaque access token meant for its own userinfo.
    idp = await startTestProvider({ resourceByDefault: false });
    verifier = new OidcVerifier({ issuer: idp.issuer, audience: idp.audience, clientId: idp.clientId });
  });
  afterAll(async () => {
    await idp.close();
  });

  it('returns the claims the real provider gives for an opaque access token', async () => {
    const { accessToken } = await idp.login({ sub: 'user-bob' }, { resource: false });
    expect(accessToken.split('.')).toHaveLength(1);

    const claims = await verifier.userinfo(accessToken);

    expect(claims).toMatchObject({ sub: 'user-bob', email: 'bob@example.test', email_verified: true });
  });

  it('takes the email from userinfo when no ID token is sent, only if verified and for the same sub', async () => {
    const bob = await idp.login({ sub: 'user-bob' }, { resource: false });
    const carol = await idp.login({ sub: 'user-carol' }, { resource: false });

    expect(await verifier.verifiedEmail({ sub: 'user-bob', accessToken: bob.accessToken })).toBe(
      'bob@example.test',
    );
    expect(
      await verifier.verifiedEmail({ sub: 'user-carol', accessToken: carol.accessToken }),
    ).toBeUndefined();
    expect(await verifier.verifiedEmail({ sub: 'user-alice', accessToken: bob.accessToken })).toBeUndefined();
  });
});

describe('the userinfo fallback against a userinfo endpoint of the documented shape', () => {
  let idp: TestProvider;
  let userinfo: Awaited<ReturnType<typeof serve>>;
  let answer: { status: number; body: unknown } = { status: 500, body: {} };
  let requests: { authorization: string | undefined }[] = [];
  let verifier: OidcVerifier;

  beforeAll(async () => {
    idp = await startTestProvider();
    userinfo = await serve((req, res) => {
      requests.push({ authorization: req.headers.authorization });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
    verifier = new OidcVerifier({
      issuer: idp.issuer,
      audience: idp.audience,
      clientId: idp.clientId,
      userinfoUri: `${userinfo.origin}/userinfo`,
    });
  });
  afterAll(async () => {
    await userinfo.close();
    await idp.close();
  });

  /** Logs `sub` in with scope `openid` only, so the ID token carries no email. */
  async function loginWithoutEmail(sub: string): Promise<{ accessToken: string; idToken: string }> {
    const tokens = await idp.login({ sub }, { scope: 'openid' });
    expect(decodeJwt(tokens.idToken)).not.toHaveProperty('email');
    requests = [];
    return tokens;
  }

  it('takes a verified email from userinfo when the ID token lacks one, sending the access token', async () => {
    const tokens = await loginWithoutEmail('user-alice');
    answer = { status: 200, body: { sub: 'user-alice', email: 'Alice@Example.TEST', email_verified: true } };

    expect(await verifier.verifiedEmail({ sub: 'user-alice', ...tokens })).toBe('alice@example.test');
    expect(requests).toEqual([{ authorization: `Bearer ${tokens.accessToken}` }]);
  });

  it('accepts email_verified sent as the string "true"', async () => {
    const tokens = await loginWithoutEmail('user-alice');
    answer = {
      status: 200,
      body: { sub: 'user-alice', email: 'alice@example.test', email_verified: 'true' },
    };

    expect(await verifier.verifiedEmail({ sub: 'user-alice', ...tokens })).toBe('alice@example.test');
  });

  it.each([
    [
      'email_verified is false',
      { status: 200, body: { sub: 'user-alice', email: 'a@x.test', email_verified: false } },
    ],
    ['email_verified is absent', { status: 200, body: { sub: 'user-alice', email: 'a@x.test' } }],
    [
      'userinfo names another sub',
      { status: 200, body: { sub: 'user-bob', email: 'b@x.test', email_verified: true } },
    ],
    ['userinfo answers 401', { status: 401, body: { error: 'invalid_token' } }],
    ['userinfo answers 403', { status: 403, body: { error: 'insufficient_scope' } }],
  ])('takes no email when %s', async (_name, reply) => {
    const tokens = await loginWithoutEmail('user-alice');
    answer = reply;

    expect(await verifier.verifiedEmail({ sub: 'user-alice', ...tokens })).toBeUndefined();
    expect(requests).toHaveLength(1);
  });

  it.each([
    ['answers 500', { status: 500, body: { error: 'server_error' } }],
    ['answers without sub', { status: 200, body: { email: 'a@x.test', email_verified: true } }],
  ])('fails with userinfo-failed when userinfo %s', async (_name, reply) => {
    const tokens = await loginWithoutEmail('user-alice');
    answer = reply;

    const err = await verifier.verifiedEmail({ sub: 'user-alice', ...tokens }).catch((e: unknown) => e);
    expect(isIdentityError(err, 'userinfo-failed')).toBe(true);
  });

  it('does not ask userinfo when the ID token carries a verified email', async () => {
    const tokens = await idp.login({ sub: 'user-bob' });
    requests = [];
    answer = { status: 200, body: { sub: 'user-bob', email: 'other@x.test', email_verified: true } };

    expect(await verifier.verifiedEmail({ sub: 'user-bob', ...tokens })).toBe('bob@example.test');
    expect(requests).toHaveLength(0);
  });

  it('asks userinfo when the ID token email is not verified', async () => {
    const tokens = await idp.login({ sub: 'user-carol' });
    requests = [];
    answer = { status: 200, body: { sub: 'user-carol', email: 'carol@example.test', email_verified: true } };

    expect(await verifier.verifiedEmail({ sub: 'user-carol', ...tokens })).toBe('carol@example.test');
    expect(requests).toHaveLength(1);
  });
});

describe('verifiedEmailClaim', () => {
  it('returns the trimmed, lowercased email only when email_verified is true', () => {
    expect(verifiedEmailClaim({ email: ' Dana@Example.Test ', email_verified: true })).toBe(
      'dana@example.test',
    );
    expect(verifiedEmailClaim({ email: 'dana@example.test', email_verified: false })).toBeUndefined();
    expect(verifiedEmailClaim({ email: 'dana@example.test', email_verified: 'yes' })).toBeUndefined();
    expect(verifiedEmailClaim({ email: 'dana@example.test' })).toBeUndefined();
    expect(verifiedEmailClaim({ email: 42, email_verified: true })).toBeUndefined();
    expect(verifiedEmailClaim({ email: '  ', email_verified: true })).toBeUndefined();
  });
});
