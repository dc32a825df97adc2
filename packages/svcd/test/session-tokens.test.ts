import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '@svc/runtime';
import { FakeClock } from '@svc/runtime/testing';
import { closeServer, listenLocal } from '@svc/testkit';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  isSessionTokenError,
  type SessionTokenErrorCode,
  SessionTokenVerifier,
} from '../src/session-tokens.js';
import { capturingLogger } from './support/log-lines.js';

const ROBOT = 'rover-7';
const T0 = Date.UTC(2026, 10, 30, 10, 0, 0);

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/** The service's `/.well-known/svc-session-jwks.json`, serving whatever `keys` holds, counting requests. */
class JwksServer {
  readonly server: Server;
  keys: JWK[] = [];
  requests = 0;
  base = '';
  constructor() {
    this.server = createServer((req, res) => {
      if (req.url !== '/.well-known/svc-session-jwks.json') {
        res.writeHead(404).end();
        return;
      }
      this.requests++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: this.keys }));
    });
  }
  async start(): Promise<this> {
    this.base = `http://127.0.0.1:${await listenLocal(this.server)}`;
    return this;
  }
}

let primary: SigningKey;
let rotated: SigningKey;
let foreign: SigningKey;
beforeAll(async () => {
  [primary, rotated, foreign] = await Promise.all([signingKey('k1'), signingKey('k2'), signingKey('k1')]);
});

let jwks: JwksServer;
let dir: string;
let clock: FakeClock;
const verifiers: SessionTokenVerifier[] = [];
beforeEach(async () => {
  jwks = await new JwksServer().start();
  jwks.keys = [primary.jwk];
  dir = await mkdtemp(path.join(tmpdir(), 'svcd-session-keys-'));
  clock = new FakeClock(0, T0);
});
afterEach(async () => {
  for (const v of verifiers.splice(0)) v.stop();
  if (jwks.server.listening) await closeServer(jwks.server);
  await rm(dir, { recursive: true, force: true });
});

async function startVerifier(base = jwks.base, logger: Logger = capturingLogger().logger) {
  const verifier = new SessionTokenVerifier({
    baseUrl: base,
    robotId: ROBOT,
    cacheFile: path.join(dir, 'session-jwks.json'),
    logger,
    clock,
  });
  verifiers.push(verifier);
  await verifier.start();
  return verifier;
}

interface MintOptions {
  key?: SigningKey;
  /** Claims over the defaults; `undefined` removes one. */
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
}

function mint({ key = primary, claims = {}, header = {} }: MintOptions = {}): Promise<string> {
  const iat = Math.floor(T0 / 1000);
  return new SignJWT({
    iss: jwks.base,
    sub: 'user-42',
    aud: ROBOT,
    scope: 'drive',
    iat,
    exp: iat + 120,
    jti: 'jti-1',
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'svc-session+jwt', ...header })
    .sign(key.privateKey);
}

async function refusal(verifier: SessionTokenVerifier, token: string) {
  const err = await verifier.verify(token).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isSessionTokenError(err)) throw new Error(`expected a SessionTokenError, got ${String(err)}`);
  return { code: err.code, message: err.message };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('pilot session token verifier', () => {
  it('returns the claims of a valid token', async () => {
    const verifier = await startVerifier();
    const token = await mint({ claims: { org: 'org-7', act: { sub: 'apikey:abc' }, scope: 'observe' } });
    expect(await verifier.verify(token)).toEqual({
      sub: 'user-42',
      scope: 'observe',
      jti: 'jti-1',
      exp: Math.floor(T0 / 1000) + 120,
      org: 'org-7',
      act: 'apikey:abc',
    });
    expect(await verifier.verify(await mint({ claims: { act: 'backend-1' } }))).toMatchObject({
      scope: 'drive',
      act: 'backend-1',
    });
    expect(jwks.requests).toBe(1);
  });

  it.each<[string, () => Promise<string>, SessionTokenErrorCode, RegExp]>([
    ['another robot', () => mint({ claims: { aud: 'rover-8' } }), 'wrong-robot', /for another robot/],
    [
      'another service',
      () => mint({ claims: { iss: 'https://evil.example' } }),
      'wrong-issuer',
      /another service/,
    ],
    ['a scope of admin', () => mint({ claims: { scope: 'admin' } }), 'bad-scope', /drive or observe/],
    ['no scope', () => mint({ claims: { scope: undefined } }), 'bad-scope', /drive or observe/],
    ['another typ', () => mint({ header: { typ: 'JWT' } }), 'malformed', /typ must be svc-session\+jwt/],
    ['no jti', () => mint({ claims: { jti: undefined } }), 'malformed', /jti/],
    ['garbage', async () => 'not.a.token', 'malformed', /not a compact JWS/],
    ['an empty string', async () => '', 'malformed', /no session token/],
    ['a huge token', () => mint({ claims: { pad: 'x'.repeat(10_000) } }), 'malformed', /longer than 8192/],
  ])('refuses a token for %s', async (_what, make, code, message) => {
    const verifier = await startVerifier();
    const result = await refusal(verifier, await make());
    expect(result.code).toBe(code);
    expect(result.message).toMatch(message);
  });

  it('refuses an expired token and accepts one within the 5 s clock tolerance', async () => {
    const verifier = await startVerifier();
    const token = await mint();
    clock.advanceTo(124_000); // exp + 4 s
    expect((await verifier.verify(token)).sub).toBe('user-42');
    clock.advanceTo(126_000); // exp + 6 s
    expect(await refusal(verifier, token)).toEqual({
      code: 'expired',
      message: 'the session token has expired',
    });
  });

  it('accepts only ES256: HS256, alg none and RS256 are refused as bad-alg', async () => {
    const verifier = await startVerifier();
    const claims = {
      iss: jwks.base,
      sub: 'user-42',
      aud: ROBOT,
      scope: 'drive',
      jti: 'j',
      exp: T0 / 1000 + 60,
    };
    const hs256 = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: 'k1', typ: 'svc-session+jwt' })
      .sign(new TextEncoder().encode('a shared secret of thirty-two bytes!'));
    const none = `${b64({ alg: 'none', kid: 'k1', typ: 'svc-session+jwt' })}.${b64(claims)}.`;
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const rs256 = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'svc-session+jwt' })
      .sign(rsa);
    // A token relabelled as ES256 around an HS256 signature still fails, on the signature.
    const relabelled = `${b64({ alg: 'ES256', kid: 'k1', typ: 'svc-session+jwt' })}.${hs256.split('.')[1]}.${hs256.split('.')[2]}`;
    for (const [token, alg] of [
      [hs256, 'HS256'],
      [none, 'none'],
      [rs256, 'RS256'],
    ] as const) {
      expect(await refusal(verifier, token)).toEqual({
        code: 'bad-alg',
        message: `session token algorithm ${alg} is not accepted; ES256 only`,
      });
    }
    expect((await refusal(verifier, relabelled)).code).toBe('bad-signature');
  });

  it('refuses a token signed with a foreign key: unknown kid, or a known kid with the wrong key', async () => {
    const verifier = await startVerifier();
    const stranger = { ...foreign, kid: 'nobody' };
    expect(await refusal(verifier, await mint({ key: stranger }))).toEqual({
      code: 'unknown-key',
      message: 'the session token was signed with a key this robot does not know',
    });
    expect(await refusal(verifier, await mint({ key: foreign }))).toEqual({
      code: 'bad-signature',
      message: 'the session token signature does not verify',
    });
  });

  it('fetches the keys again for an unknown kid, at most once per 10 s', async () => {
    const verifier = await startVerifier();
    expect(jwks.requests).toBe(1);
    // The service rotates: k2 is published; tokens signed with it verify after one refetch.
    jwks.keys = [primary.jwk, rotated.jwk];
    expect((await verifier.verify(await mint({ key: rotated }))).sub).toBe('user-42');
    expect(jwks.requests).toBe(2);
    expect(verifier.keyIds).toEqual(['k1', 'k2']);
    // Made-up kids do not make the robot hammer the service.
    const stranger = { ...foreign, kid: 'k3', jwk: { ...foreign.jwk, kid: 'k3' } };
    jwks.keys = [primary.jwk, rotated.jwk, stranger.jwk];
    expect((await refusal(verifier, await mint({ key: stranger }))).code).toBe('unknown-key');
    expect(jwks.requests).toBe(2);
    clock.advance(10_000);
    expect((await verifier.verify(await mint({ key: stranger }))).sub).toBe('user-42');
    expect(jwks.requests).toBe(3);
  });

  it('keeps verifying from the cache file after the service becomes unreachable', async () => {
    const first = await startVerifier();
    expect((await first.verify(await mint())).sub).toBe('user-42');
    const cacheFile = path.join(dir, 'session-jwks.json');
    expect((await stat(cacheFile)).mode & 0o777).toBe(0o644);
    const cached = JSON.parse(await readFile(cacheFile, 'utf8')) as { baseUrl: string; keys: JWK[] };
    expect(cached.baseUrl).toBe(jwks.base);
    expect(cached.keys.map((k) => k.kid)).toEqual(['k1']);
    expect(cached.keys[0]).not.toHaveProperty('d');
    first.stop();

    await closeServer(jwks.server);
    const { logger, lines } = capturingLogger();
    const second = await startVerifier(jwks.base, logger);
    expect(lines()).toEqual([
      expect.stringMatching(
        /^warn: cannot refresh the session-token keys; keeping the keys held .*ECONNREFUSED/,
      ),
    ]);
    expect(await second.verify(await mint({ claims: { jti: 'jti-2' } }))).toMatchObject({ jti: 'jti-2' });
  });

  it('without cache and without the service, refuses every token as unknown-key and says why', async () => {
    await closeServer(jwks.server);
    const verifier = await startVerifier();
    expect(await refusal(verifier, await mint())).toEqual({
      code: 'unknown-key',
      message: 'the robot has no session keys yet (the service was unreachable)',
    });
  });

  it('ignores a cache written for another service', async () => {
    const cacheFile = path.join(dir, 'session-jwks.json');
    await writeFile(cacheFile, JSON.stringify({ baseUrl: 'https://other.example', keys: [primary.jwk] }));
    await closeServer(jwks.server);
    const { logger, lines } = capturingLogger();
    const verifier = await startVerifier(jwks.base, logger);
    expect(lines()[0]).toMatch(/^warn: ignoring the session-key cache/);
    expect((await refusal(verifier, await mint())).code).toBe('unknown-key');
  });

  it('keeps its keys when the service publishes no usable key', async () => {
    const verifier = await startVerifier();
    jwks.keys = [{ kty: 'RSA', n: 'AQAB', e: 'AQAB', kid: 'r1' }];
    expect(await verifier.refresh()).toBe(false);
    expect(verifier.keyIds).toEqual(['k1']);
    expect((await verifier.verify(await mint())).sub).toBe('user-42');
  });
});
