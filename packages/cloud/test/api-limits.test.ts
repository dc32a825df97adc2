import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orgs, robots } from '../src/db/index.js';
import { startApi, type TestApi } from './support/api.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

describe('request limits', () => {
  let provider: TestProvider;
  let api: TestApi;

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({
      backend: databaseBackends[0]!,
      provider,
      env: { SVC_RATE_LIMIT_PER_MINUTE: '5' },
    });
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  it('answers 429 rate-limited past the per-client budget, and counts each credential apart', async () => {
    const alice = await provider.login({ name: 'limit-alice' });
    const bob = await provider.login({ name: 'limit-bob' });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push(
        (await api.call('GET', '/api/v1/me', { token: alice.accessToken, idToken: alice.idToken })).status,
      );
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = await api.call('GET', '/api/v1/me', { token: alice.accessToken });
    expect(refused.body.error.code).toBe('rate-limited');
    expect(refused.body.error.message).toMatch(/retry in \d+ s/);
    expect(
      (await api.call('GET', '/api/v1/me', { token: bob.accessToken, idToken: bob.idToken })).status,
    ).toBe(200);
  });

  it('refuses a body over 64 KiB with 413 and the error shape', async () => {
    const answer = await api.call('POST', '/api/v1/orgs', { body: { name: 'x'.repeat(70 * 1024) } });
    expect(answer.status).toBe(413);
    expect(answer.body.error.code).toBe('invalid-request');
  });
});

describe('SVC_DEV_ALLOW_ANONYMOUS=1', () => {
  let provider: TestProvider;
  let api: TestApi;
  let plain: TestApi;

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend: databaseBackends[0]!, provider, env: { SVC_DEV_ALLOW_ANONYMOUS: '1' } });
    plain = await startApi({ backend: databaseBackends[0]!, provider, database: api.database });
  });
  afterAll(async () => {
    await plain?.dispose();
    await api?.dispose();
    await provider?.close();
  });

  it('lists every robot to a caller without an account, and only then', async () => {
    const [org] = await api.db.insert(orgs).values({ name: 'fleet' }).returning();
    await api.db.insert(robots).values([
      { robotId: 'r-org', orgId: org!.id, publicKey: 'pk-1' },
      { robotId: 'r-none', orgId: null, publicKey: 'pk-2' },
    ]);
    const open = await api.call('GET', '/api/v1/robots');
    expect(open.status).toBe(200);
    expect(open.body.robots.map((r: { robotId: string }) => r.robotId)).toEqual(['r-none', 'r-org']);
    // The same database without the flag: nothing is public, so nothing is listed.
    expect((await plain.call('GET', '/api/v1/robots')).body.robots).toEqual([]);
  });
});
