/**
 * What svc-cloud's log says about requests: each request by method and path, and never a
 * credential, whether it came in a header, the query string or a body, or in the message of an
 * error that quotes one.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { createLogger } from '@svc/runtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InvitationProvider } from '../src/invitations/index.js';
import { startApi, type TestApi } from './support/api.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

describe('the request log', () => {
  let provider: TestProvider;
  let api: TestApi;
  const lines: string[] = [];
  /** A credential of the invitation provider that its failure quotes (a library echoing its request). */
  const providerSecret = randomBytes(16).toString('hex');
  const failingProvider: InvitationProvider = {
    name: 'failing',
    async oneTimeToken() {
      throw new Error(
        `POST https://idp.test/api/one-time-tokens?api_key=${providerSecret} failed; Authorization: Bearer ${providerSecret}`,
      );
    },
  };

  beforeAll(async () => {
    provider = await startTestProvider();
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));
    api = await startApi({
      backend: databaseBackends[0]!,
      provider,
      invitationProvider: failingProvider,
      logger: createLogger({ name: 'svc-cloud', level: 'trace', destination, pretty: false }),
    });
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  it('shows each request by method and path, and no token from its headers, query, body or errors', async () => {
    const login = await provider.login({ name: 'logged' });
    const querySecret = randomBytes(16).toString('base64url');
    const enrolmentToken = `svc_enr_${randomBytes(32).toString('base64url')}`;
    const apiKey = `svc_key_0123abcd_${randomBytes(32).toString('base64url')}`;
    const invitationToken = `svc_inv_${randomBytes(32).toString('base64url')}`;

    const me = await api.call('GET', `/api/v1/me?token=${querySecret}`, {
      token: login.accessToken,
      idToken: login.idToken,
    });
    expect(me.status).toBe(200);
    const orgId = me.body.orgs[0].id as string;
    const refused = await api.call('POST', '/api/v1/enrol', {
      body: { robotId: 'logged-robot', publicKey: 'not-a-key', token: enrolmentToken },
    });
    expect(refused.status).toBe(400);
    expect((await api.call('GET', '/api/v1/robots', { token: apiKey })).status).toBe(401);
    const accepted = await api.call('POST', '/api/v1/invitations/accept', {
      token: login.accessToken,
      body: { token: invitationToken },
    });
    expect(accepted.status).toBe(404);
    // The invitation provider fails with an error that quotes its credential: a 500, logged.
    const invited = await api.call('POST', `/api/v1/orgs/${orgId}/invitations`, {
      token: login.accessToken,
      body: { email: 'someone@example.test', role: 'viewer' },
    });
    expect(invited.status).toBe(500);
    expect(invited.body.error.code).toBe('internal');

    const log = lines.join('');
    const records = log
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const requests = records
      .filter((r) => r.msg === 'incoming request')
      .map((r) => {
        const req = r.req as { method: string; url: string };
        return `${req.method} ${req.url}`;
      });
    expect(requests).toEqual([
      'GET /api/v1/me',
      'POST /api/v1/enrol',
      'GET /api/v1/robots',
      'POST /api/v1/invitations/accept',
      `POST /api/v1/orgs/${orgId}/invitations`,
    ]);
    expect(
      records
        .filter((r) => r.msg === 'request completed')
        .map((r) => (r.res as { statusCode: number }).statusCode),
    ).toEqual([200, 400, 401, 404, 500]);
    const failure = records.find((r) => r.msg === 'request failed');
    expect(JSON.stringify(failure?.err)).toContain('one-time-tokens');
    for (const secret of [
      login.accessToken,
      login.idToken,
      querySecret,
      enrolmentToken,
      apiKey.slice('svc_key_0123abcd_'.length),
      invitationToken,
      providerSecret,
    ]) {
      expect(log).not.toContain(secret);
    }
  });
});
