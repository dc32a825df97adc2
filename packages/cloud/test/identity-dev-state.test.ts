/**
 * What the development provider keeps: the state store's expiry and grant revocation, and the folder
 * `openDevelopmentProvider` keeps keys and state in (every change on disk once answered, damaged files
 * refused by name).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { discover, type LoginTarget } from '@svc/testkit';
import type { AdapterPayload } from 'oidc-provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEV_STATE_FILES,
  type DevelopmentProviderOptions,
  type EmbeddedOidcProvider,
  isIdentityError,
  openDevelopmentProvider,
  StateStore,
} from '../src/identity/index.js';
import { authorize } from './support/authorize.js';
import { serve, TEST_AUDIENCE, TEST_CLIENT_ID, TEST_REDIRECT_URI } from './support/oidc.js';

describe('StateStore', () => {
  it('forgets records whose lifetime is over, also those saved before a restart', async () => {
    const now = Date.now();
    const store = new StateStore({
      records: [
        ['Session:old', { payload: { accountId: 'a' }, expiresAt: now - 1 }],
        ['Session:live', { payload: { accountId: 'b' }, expiresAt: now + 60_000 }],
      ],
    });
    await store.set('Interaction:gone', { uid: 'x' }, Date.now() - 1);

    expect(store.get('Session:old')).toBeUndefined();
    expect(store.get('Interaction:gone')).toBeUndefined();
    expect(store.get('Session:live')).toEqual({ accountId: 'b' });
    expect(store.records().map(([key]) => key)).toEqual(['Session:live']);
  });

  it('revoking a grant removes the tokens it issued, not the session nor a sign-in in progress', async () => {
    const store = new StateStore();
    const adapter = store.adapter();
    const grant: AdapterPayload = { grantId: 'g1' };
    const ttl = 600;
    await adapter('RefreshToken').upsert('rt', grant, ttl);
    await adapter('AuthorizationCode').upsert('code', grant, ttl);
    await adapter('Session').upsert('s', { ...grant, uid: 'u' }, ttl);
    await adapter('Interaction').upsert('i', grant, ttl);

    await adapter('RefreshToken').revokeByGrantId('g1');

    expect(await adapter('RefreshToken').find('rt')).toBeUndefined();
    expect(await adapter('AuthorizationCode').find('code')).toBeUndefined();
    expect(await adapter('Session').findByUid('u')).toBeDefined();
    expect(await adapter('Interaction').find('i')).toBeDefined();
  });
});

describe('the folder of the development provider', () => {
  /** The issuer never changes; where it is served does (the endpoints follow the request's host). */
  const issuer = 'http://svc.test/dev-oidc';
  let stateDir: string;
  const closers: (() => Promise<void>)[] = [];
  const serverErrors: Error[] = [];

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'svc-dev-state-'));
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await rm(stateDir, { recursive: true, force: true });
    expect(serverErrors.splice(0)).toEqual([]);
  });

  const options = (): DevelopmentProviderOptions => ({
    stateDir,
    issuer,
    audience: TEST_AUDIENCE,
    clientId: TEST_CLIENT_ID,
    redirectUris: [TEST_REDIRECT_URI],
    allowTypedNames: true,
    onServerError: (err) => serverErrors.push(err),
  });

  /** Opens the provider on the folder and serves it on a free port. */
  async function open(): Promise<{ provider: EmbeddedOidcProvider; target: LoginTarget }> {
    const provider = await openDevelopmentProvider(options());
    const server = await serve(provider.handler);
    closers.push(async () => {
      await server.close();
      await provider.close();
    });
    const endpoints = await discover(`${server.origin}/dev-oidc`);
    return {
      provider,
      target: {
        authorizationEndpoint: endpoints.authorizationEndpoint,
        tokenEndpoint: endpoints.tokenEndpoint,
        clientId: TEST_CLIENT_ID,
        redirectUri: TEST_REDIRECT_URI,
        audience: TEST_AUDIENCE,
      },
    };
  }

  /** Closes what {@link open} opened, as a stopping service does. */
  async function closeAll(): Promise<void> {
    for (const close of closers.splice(0).reverse()) await close();
  }

  it('reuses its keys, and has every change made at once on disk when closed', async () => {
    const first = await open();
    const emails = ['a', 'b', 'c', 'd', 'e'].map((name) => `${name}@company.test`);
    const tokens = await Promise.all(
      emails.map((email) => first.provider.issueOneTimeToken(email, { expiresInSec: 600 })),
    );
    const keys = first.provider.publicKeys();
    await closeAll();

    const second = await open();

    expect(second.provider.publicKeys()).toEqual(keys);
    for (const [i, token] of tokens.entries()) {
      const outcome = await authorize(second.target, { one_time_token: token, login_hint: emails[i]! });
      expect(outcome.kind, emails[i]).toBe('callback');
    }
    expect(await readFile(join(stateDir, DEV_STATE_FILES.state), 'utf8')).not.toContain(tokens[0]);
  });

  it('stops with an error naming a damaged state file', async () => {
    await open();
    await closeAll();
    const stateFile = join(stateDir, DEV_STATE_FILES.state);
    await writeFile(stateFile, '{"version":1,"records":[["Session:x"]]}');

    const err = await openDevelopmentProvider(options()).catch((e: unknown) => e);

    expect(isIdentityError(err, 'dev-state-corrupt')).toBe(true);
    expect((err as Error).message).toContain(stateFile);
    expect((err as Error).message).toMatch(/Delete it/);
  });

  it.each([
    ['not JSON', 'keys'],
    ['{"version":2,"signingKeys":[],"cookieKeys":["k"]}', 'another version'],
    ['{"version":1,"signingKeys":[{"kty":"EC","kid":"k","alg":"ES256"}],"cookieKeys":["k"]}', 'a public key'],
    ['{"version":1,"signingKeys":[],"cookieKeys":["k"]}', 'no key'],
  ])('stops with an error naming the keys file when it holds %s (%s)', async (text) => {
    await open();
    await closeAll();
    const keysFile = join(stateDir, DEV_STATE_FILES.keys);
    await writeFile(keysFile, text);

    const err = await openDevelopmentProvider(options()).catch((e: unknown) => e);

    expect(isIdentityError(err, 'dev-state-corrupt')).toBe(true);
    expect((err as Error).message).toContain(keysFile);
  });
});
