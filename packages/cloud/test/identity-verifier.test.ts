import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type IdentityErrorCode,
  isIdentityError,
  OidcVerifier,
  type OidcVerifierOptions,
  type SigningAlgorithm,
} from '../src/identity/index.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

/** Expects `promise` to reject with an IdentityError of `code` whose message does not contain `token`. */
async function expectRejected(
  promise: Promise<unknown>,
  code: IdentityErrorCode,
  token?: string,
): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isIdentityError(err), `expected an IdentityError, got ${String(err)}`).toBe(true);
  if (!isIdentityError(err)) return;
  expect(err.code).toBe(code);
  if (token !== undefined && token !== '') {
    expect(err.message).not.toContain(token);
    for (const part of token.split('.')) if (part.length > 8) expect(err.message).not.toContain(part);
  }
}

function verifierFor(idp: TestProvider, extra: Partial<OidcVerifierOptions> = {}): OidcVerifier {
  return new OidcVerifier({ issuer: idp.issuer, audience: idp.audience, clientId: idp.clientId, ...extra });
}

describe('OidcVerifier against the embedded provider', () => {
  let idp: TestProvider;
  let verifier: OidcVerifier;

  beforeAll(async () => {
    idp = await startTestProvider();
    verifier = verifierFor(idp);
  });
  afterAll(async () => {
    await idp.close();
  });

  it('accepts the access token issued for the API resource, which carries only the subject', async () => {
    const { accessToken } = await idp.login({ sub: 'user-alice' });

    const { sub, claims } = await verifier.verifyAccessToken(accessToken);

    expect(sub).toBe('user-alice');
    expect(claims.aud).toBe(idp.audience);
    expect(claims.iss).toBe(idp.issuer);
    expect(claims.scope ?? '').toBe('');
    for (const claim of ['email', 'email_verified', 'groups', 'name'])
      expect(claims).not.toHaveProperty(claim);
  });

  it('gets null from userinfo for that access token, because the provider answers 401', async () => {
    const { accessToken } = await idp.login({ sub: 'user-alice' });

    const direct = await fetch(idp.userinfoUri, { headers: { authorization: `Bearer ${accessToken}` } });
    await direct.body?.cancel();

    expect(direct.status).toBe(401);
    expect(await verifier.userinfo(accessToken)).toBeNull();
  });

  it('verifies the ID token (aud = client id) and takes its verified email, lowercased', async () => {
    const { accessToken, idToken } = await idp.login({ sub: 'user-alice' });
    expect(decodeJwt(idToken).aud).toBe(idp.clientId);

    const id = await verifier.verifyIdToken(idToken, 'user-alice');

    expect(id.email).toBe('Alice@Example.test');
    expect(id.emailVerified).toBe(true);
    expect(id.claims.groups).toEqual(['admins']);
    expect(await verifier.verifiedEmail({ sub: 'user-alice', accessToken, idToken })).toBe(
      'alice@example.test',
    );
  });

  it('does not take an email whose email_verified is false', async () => {
    const { accessToken, idToken } = await idp.login({ sub: 'user-carol' });

    const id = await verifier.verifyIdToken(idToken, 'user-carol');

    expect(id).toMatchObject({ email: 'carol@example.test', emailVerified: false });
    expect(await verifier.verifiedEmail({ sub: 'user-carol', accessToken, idToken })).toBeUndefined();
  });

  it("rejects another user's ID token with subject-mismatch", async () => {
    const alice = await idp.login({ sub: 'user-alice' });
    const bob = await idp.login({ sub: 'user-bob' });
    const { sub } = await verifier.verifyAccessToken(alice.accessToken);

    await expectRejected(verifier.verifyIdToken(bob.idToken, sub), 'subject-mismatch', bob.idToken);
    await expectRejected(
      verifier.verifiedEmail({ sub, accessToken: alice.accessToken, idToken: bob.idToken }),
      'subject-mismatch',
    );
  });

  it('rejects an ID token presented as access token, and the reverse, as wrong-audience', async () => {
    const { accessToken, idToken } = await idp.login({ sub: 'user-bob' });

    await expectRejected(verifier.verifyAccessToken(idToken), 'wrong-audience', idToken);
    await expectRejected(verifier.verifyIdToken(accessToken, 'user-bob'), 'wrong-audience', accessToken);
  });

  it.each([
    ['alg none', (p: TestProvider) => Promise.resolve(p.forge.algNone('user-alice')), 'token-invalid'],
    [
      'HS256 keyed with the public key',
      (p: TestProvider) => p.forge.hs256WithPublicKey('user-alice'),
      'token-invalid',
    ],
    [
      "a foreign key under the provider's kid",
      (p: TestProvider) => p.forge.foreignKey('user-alice'),
      'token-invalid',
    ],
    ['another issuer', (p: TestProvider) => p.forge.wrongIssuer('user-alice'), 'wrong-issuer'],
    ['another audience', (p: TestProvider) => p.forge.wrongAudience('user-alice'), 'wrong-audience'],
    ['an expired token', (p: TestProvider) => p.forge.expired('user-alice'), 'token-expired'],
    ['a token not valid yet', (p: TestProvider) => p.forge.notYetValid('user-alice'), 'token-not-yet-valid'],
  ] as const)('rejects %s', async (_name, make, code) => {
    const token = await make(idp);

    await expectRejected(verifier.verifyAccessToken(token), code, token);
  });

  it('accepts a token signed by the provider key with the same claims as the forgeries (control)', async () => {
    const token = await idp.signWith(idp.accessClaims('user-alice'));

    await expect(verifier.verifyAccessToken(token)).resolves.toMatchObject({ sub: 'user-alice' });
  });

  it('rejects a missing, malformed or subject-less token', async () => {
    const { sub: _sub, ...withoutSub } = idp.accessClaims('x');
    const noSub = await idp.signWith(withoutSub);

    await expectRejected(verifier.verifyAccessToken(undefined), 'token-missing');
    await expectRejected(verifier.verifyAccessToken(''), 'token-missing');
    await expectRejected(verifier.verifyAccessToken('not-a-jwt'), 'token-malformed', 'not-a-jwt');
    await expectRejected(verifier.verifyAccessToken('bm9wZQ.e30.c2ln'), 'token-malformed');
    // A good header with a claims set that is not JSON fails on the signature first (jose's order).
    await expectRejected(verifier.verifyAccessToken('eyJhbGciOiJFUzI1NiJ9.bm9wZQ.c2ln'), 'token-invalid');
    await expectRejected(verifier.verifyAccessToken(noSub), 'claim-invalid', noSub);
  });

  it('tolerates 30 s of clock skew by default, and no more', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = idp.accessClaims('user-bob');
    const justExpired = await idp.signWith({ ...claims, iat: now - 600, exp: now - 10 });
    const almostValid = await idp.signWith({ ...claims, nbf: now + 10 });
    const longExpired = await idp.signWith({ ...claims, iat: now - 600, exp: now - 60 });

    await expect(verifier.verifyAccessToken(justExpired)).resolves.toMatchObject({ sub: 'user-bob' });
    await expect(verifier.verifyAccessToken(almostValid)).resolves.toMatchObject({ sub: 'user-bob' });
    await expectRejected(verifier.verifyAccessToken(longExpired), 'token-expired');
    await expectRejected(
      verifierFor(idp, { clockToleranceSec: 0 }).verifyAccessToken(justExpired),
      'token-expired',
    );
  });

  it('fetches discovery and the JWKS once for many verifications', async () => {
    const requests: string[] = [];
    const counting = verifierFor(idp, {
      fetch: (input, init) => {
        requests.push(new URL(String(input)).pathname);
        return fetch(input, init);
      },
    });
    const { accessToken, idToken } = await idp.login({ sub: 'user-bob' });

    await counting.verifyAccessToken(accessToken);
    await counting.verifyAccessToken(accessToken);
    await counting.verifyIdToken(idToken, 'user-bob');

    expect(requests).toEqual(['/dev-oidc/.well-known/openid-configuration', '/dev-oidc/jwks']);
  });
});

describe('OidcVerifier pins no algorithm', () => {
  it.each(['RS256', 'Ed25519'] as SigningAlgorithm[])(
    'accepts tokens of a provider signing with %s',
    async (alg) => {
      const idp = await startTestProvider({ signingAlgorithm: alg });
      try {
        const verifier = verifierFor(idp);
        const { accessToken, idToken } = await idp.login({ sub: 'user-bob' });
        expect(decodeProtectedHeader(accessToken).alg).toBe(alg);
        expect(decodeProtectedHeader(idToken).alg).toBe(alg);

        await expect(verifier.verifyAccessToken(accessToken)).resolves.toMatchObject({ sub: 'user-bob' });
        await expect(verifier.verifiedEmail({ sub: 'user-bob', idToken })).resolves.toBe('bob@example.test');
        const forged = await idp.forge.hs256WithPublicKey('user-bob');
        await expectRejected(verifier.verifyAccessToken(forged), 'token-invalid', forged);
        const foreign = await idp.forge.foreignKey('user-bob');
        await expectRejected(verifier.verifyAccessToken(foreign), 'token-invalid', foreign);
      } finally {
        await idp.close();
      }
    },
  );
});

describe('OidcVerifier after the provider rotates its signing key', () => {
  it('accepts a token with the new kid once the JWKS cooldown (5 s by default) has passed', async () => {
    const idp = await startTestProvider();
    try {
      const verifier = verifierFor(idp);
      const before = await idp.login({ sub: 'user-alice' });
      await verifier.verifyAccessToken(before.accessToken);

      const kid = idp.rotateKeys();
      const after = await idp.login({ sub: 'user-alice' });
      expect(decodeProtectedHeader(after.accessToken).kid).toBe(kid);
      expect(decodeProtectedHeader(before.accessToken).kid).not.toBe(kid);

      // Within the cooldown that follows the first JWKS fetch, an unknown kid does not trigger a refetch.
      await expectRejected(verifier.verifyAccessToken(after.accessToken), 'unknown-key', after.accessToken);

      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 5_001 });
      await expect(verifier.verifyAccessToken(after.accessToken)).resolves.toMatchObject({
        sub: 'user-alice',
      });
      await expect(verifier.verifyIdToken(after.idToken, 'user-alice')).resolves.toMatchObject({
        emailVerified: true,
      });
      await expect(verifier.verifyAccessToken(before.accessToken)).resolves.toMatchObject({
        sub: 'user-alice',
      });
    } finally {
      vi.useRealTimers();
      await idp.close();
    }
  });

  it('refetches at once when the cooldown is configured to 0', async () => {
    const idp = await startTestProvider();
    try {
      const verifier = verifierFor(idp, { jwksCooldownMs: 0 });
      await verifier.verifyAccessToken((await idp.login({ sub: 'user-bob' })).accessToken);

      idp.rotateKeys();
      const { accessToken } = await idp.login({ sub: 'user-bob' });

      await expect(verifier.verifyAccessToken(accessToken)).resolves.toMatchObject({ sub: 'user-bob' });
    } finally {
      await idp.close();
    }
  });
});
