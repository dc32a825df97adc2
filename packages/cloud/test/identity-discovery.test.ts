import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type IdentityErrorCode, isIdentityError, OidcVerifier } from '../src/identity/index.js';
import { deadOrigin, serve, startTestProvider, type TestProvider } from './support/oidc.js';

async function codeOf(promise: Promise<unknown>): Promise<IdentityErrorCode | 'resolved' | 'other'> {
  try {
    await promise;
    return 'resolved';
  } catch (err) {
    return isIdentityError(err) ? err.code : 'other';
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

describe('OidcVerifier when the issuer is not reachable from the API', () => {
  let idp: TestProvider;
  let tokens: { accessToken: string; idToken: string };

  beforeAll(async () => {
    // The provider answers on its own port, but the issuer identifier names a port where nothing listens.
    idp = await startTestProvider({ issuerOrigin: await deadOrigin() });
    tokens = await idp.login({ sub: 'user-bob' });
  });
  afterAll(async () => {
    await idp.close();
  });

  it('fails with provider-unreachable without overrides', async () => {
    const verifier = new OidcVerifier({ issuer: idp.issuer, audience: idp.audience, clientId: idp.clientId });

    expect(await codeOf(verifier.verifyAccessToken(tokens.accessToken))).toBe('provider-unreachable');
    expect(await codeOf(verifier.userinfo(tokens.accessToken))).toBe('provider-unreachable');
  });

  it('verifies through the jwksUri and userinfoUri overrides, never asking the issuer address', async () => {
    const hosts: string[] = [];
    const verifier = new OidcVerifier({
      issuer: idp.issuer,
      audience: idp.audience,
      clientId: idp.clientId,
      jwksUri: idp.jwksUri,
      userinfoUri: idp.userinfoUri,
      fetch: (input, init) => {
        hosts.push(new URL(String(input)).origin);
        return fetch(input, init);
      },
    });

    await expect(verifier.verifyAccessToken(tokens.accessToken)).resolves.toMatchObject({ sub: 'user-bob' });
    await expect(verifier.verifiedEmail({ sub: 'user-bob', ...tokens })).resolves.toBe('bob@example.test');
    expect(await verifier.userinfo(tokens.accessToken)).toBeNull();
    expect(new Set(hosts)).toEqual(new Set([new URL(idp.baseUrl).origin]));
    expect(hosts).not.toContain(new URL(idp.issuer).origin);
  });

  it('fails with provider-unreachable when the JWKS override does not answer either', async () => {
    const verifier = new OidcVerifier({
      issuer: idp.issuer,
      audience: idp.audience,
      clientId: idp.clientId,
      jwksUri: `${await deadOrigin()}/jwks`,
    });

    expect(await codeOf(verifier.verifyAccessToken(tokens.accessToken))).toBe('provider-unreachable');
  });
});

describe('OidcVerifier discovery', () => {
  it('tries discovery again after a failure instead of keeping the failure', async () => {
    const idp = await startTestProvider();
    try {
      let failNext = true;
      const verifier = new OidcVerifier({
        issuer: idp.issuer,
        audience: idp.audience,
        clientId: idp.clientId,
        // One attempt per request, so the first request fails with the discovery it needs.
        attempts: 1,
        fetch: (input, init) => {
          if (failNext && String(input).endsWith('/.well-known/openid-configuration')) {
            failNext = false;
            return Promise.reject(new TypeError('fetch failed'));
          }
          return fetch(input, init);
        },
      });
      const { accessToken } = await idp.login({ sub: 'user-alice' });

      expect(await codeOf(verifier.verifyAccessToken(accessToken))).toBe('provider-unreachable');
      await expect(verifier.verifyAccessToken(accessToken)).resolves.toMatchObject({ sub: 'user-alice' });
    } finally {
      await idp.close();
    }
  });

  it('fails with discovery-failed on an unusable discovery document or JWKS', async () => {
    const idp = await startTestProvider();
    const { accessToken } = await idp.login({ sub: 'user-alice' });
    // A fake provider whose answers depend on the first path segment.
    const fake = await serve((req, res) => {
      const [, mode] = (req.url ?? '').split('/');
      const issuer = `${fake.origin}/${mode}`;
      if (req.url?.endsWith('/.well-known/openid-configuration')) {
        if (mode === 'no-discovery') json(res, 404, { error: 'not found' });
        else if (mode === 'other-issuer') json(res, 200, { issuer: idp.issuer, jwks_uri: `${issuer}/jwks` });
        else if (mode === 'no-jwks-uri') json(res, 200, { issuer });
        else json(res, 200, { issuer, jwks_uri: `${issuer}/jwks` });
      } else if (mode === 'jwks-500') json(res, 500, {});
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": [');
    });
    try {
      for (const mode of ['no-discovery', 'other-issuer', 'no-jwks-uri', 'jwks-500', 'jwks-not-json']) {
        const verifier = new OidcVerifier({
          issuer: `${fake.origin}/${mode}`,
          audience: idp.audience,
          clientId: idp.clientId,
        });
        expect([mode, await codeOf(verifier.verifyAccessToken(accessToken))]).toEqual([
          mode,
          'discovery-failed',
        ]);
      }
    } finally {
      await fake.close();
      await idp.close();
    }
  });

  it('gives up on a provider that does not answer within timeoutMs', async () => {
    const silent = await serve(() => {
      // Holds every request; closing the server ends them.
    });
    try {
      const verifier = new OidcVerifier({
        issuer: silent.origin,
        audience: 'https://api.svc.test',
        clientId: 'console',
        timeoutMs: 100,
      });

      expect(await codeOf(verifier.verifyAccessToken('eyJhbGciOiJFUzI1NiJ9.e30.c2ln'))).toBe(
        'provider-unreachable',
      );
    } finally {
      await silent.close();
    }
  });

  it('asks again after a network error or a 5xx answer, and answers the request', async () => {
    const idp = await startTestProvider();
    const { accessToken } = await idp.login({ sub: 'user-alice' });
    // Between the verifier and the provider, a proxy whose first answer to each path fails: the
    // discovery request loses its connection, the JWKS request gets a 503.
    const seen = new Map<string, number>();
    const proxy = await serve((req, res) => {
      const path = req.url ?? '/';
      const count = (seen.get(path) ?? 0) + 1;
      seen.set(path, count);
      if (count === 1 && path.endsWith('/.well-known/openid-configuration')) req.socket.destroy();
      else if (count === 1) json(res, 503, { error: 'temporarily_unavailable' });
      else {
        fetch(new URL(path, idp.baseUrl)).then(
          async (answer) => json(res, answer.status, await answer.json()),
          () => res.writeHead(502).end(),
        );
      }
    });
    const providerOrigin = new URL(idp.baseUrl).origin;
    try {
      const verifier = new OidcVerifier({
        issuer: idp.issuer,
        audience: idp.audience,
        clientId: idp.clientId,
        // No wait between attempts: nothing here depends on time passing.
        retryBackoff: { baseMs: 1, capMs: 1 },
        fetch: (input, init) => fetch(String(input).replace(providerOrigin, proxy.origin), init),
      });

      await expect(verifier.verifyAccessToken(accessToken)).resolves.toMatchObject({ sub: 'user-alice' });
      expect(seen).toEqual(
        new Map([
          [new URL(`${idp.baseUrl}/.well-known/openid-configuration`).pathname, 2],
          [new URL(idp.jwksUri).pathname, 2],
        ]),
      );
    } finally {
      await proxy.close();
      await idp.close();
    }
  });

  it('never asks again after a 4xx answer, and gives up after its attempts on a provider that keeps failing', async () => {
    let requests = 0;
    const failing = await serve((req, res) => {
      requests += 1;
      const mode = (req.url ?? '').split('/')[1];
      json(res, mode === 'gone' ? 404 : 500, { error: 'no' });
    });
    try {
      const make = (mode: string) =>
        new OidcVerifier({
          issuer: `${failing.origin}/${mode}`,
          audience: 'https://api.svc.test',
          clientId: 'console',
          attempts: 2,
          retryBackoff: { baseMs: 1, capMs: 1 },
        });
      expect(await codeOf(make('gone').verifyAccessToken('eyJhbGciOiJFUzI1NiJ9.e30.c2ln'))).toBe(
        'discovery-failed',
      );
      expect(requests).toBe(1);
      expect(await codeOf(make('broken').verifyAccessToken('eyJhbGciOiJFUzI1NiJ9.e30.c2ln'))).toBe(
        'discovery-failed',
      );
      expect(requests).toBe(3);
    } finally {
      await failing.close();
    }
  });

  it('refuses options that cannot work, naming the option', () => {
    const base = { issuer: 'https://id.example.test', audience: 'https://api', clientId: 'console' };

    expect(() => new OidcVerifier({ ...base, issuer: 'id.example.test' })).toThrow(/issuer/);
    expect(() => new OidcVerifier({ ...base, jwksUri: 'ftp://id.example.test/jwks' })).toThrow(/jwksUri/);
    expect(() => new OidcVerifier({ ...base, audience: '' })).toThrow(/audience/);
    expect(() => new OidcVerifier({ ...base, clockToleranceSec: -1 })).toThrow(/clockToleranceSec/);
    expect(() => new OidcVerifier({ ...base, attempts: 0 })).toThrow(/attempts/);
  });
});
