/**
 * The Logto invitation step's outbound calls against a local server: a network error or a 5xx
 * answer is tried again, a 4xx answer never, and the errors say which happened.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { isInvitationProviderError, LogtoInvitationProvider } from '../src/invitations/index.js';
import { deadOrigin, serve } from './support/oidc.js';

type Handler = (req: IncomingMessage, res: ServerResponse, count: number) => void;

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const issueToken: Handler = (_req, res) => json(res, 200, { access_token: 'm2m-1', expires_in: 3600 });
const issueOtt: Handler = (_req, res) => json(res, 201, { token: 'logto-ott-1' });

describe('LogtoInvitationProvider outbound calls', () => {
  let logto: Awaited<ReturnType<typeof serve>> | undefined;
  afterEach(async () => {
    await logto?.close();
    logto = undefined;
  });

  /** A Logto whose two endpoints answer with `token` and `ott`; counts the requests to each. */
  async function startLogto(token: Handler, ott: Handler) {
    const requests = { token: 0, ott: 0 };
    logto = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/oidc/token') token(req, res, ++requests.token);
        else if (req.url === '/api/one-time-tokens') ott(req, res, ++requests.ott);
        else json(res, 404, {});
      });
    });
    const provider = new LogtoInvitationProvider({
      endpoint: logto.origin,
      m2mClientId: 'm2m',
      m2mClientSecret: 's3cret',
      managementResource: 'https://default.logto.app/api',
      // No wait between attempts: nothing here depends on time passing.
      retryBackoff: { baseMs: 1, capMs: 1 },
    });
    return { provider, requests };
  }

  it('asks again when a call fails once (a 503, a lost connection), and gets the one-time token', async () => {
    const { provider, requests } = await startLogto(
      (req, res, count) => (count === 1 ? json(res, 503, {}) : issueToken(req, res, count)),
      (req, res, count) => (count === 1 ? req.socket.destroy() : issueOtt(req, res, count)),
    );
    await expect(provider.oneTimeToken('bob@example.test', { expiresInSec: 600 })).resolves.toBe(
      'logto-ott-1',
    );
    expect(requests).toEqual({ token: 2, ott: 2 });
  });

  it('never asks again after a 4xx answer', async () => {
    const { provider, requests } = await startLogto((_req, res) => json(res, 401, {}), issueOtt);
    const err = await provider
      .oneTimeToken('bob@example.test', { expiresInSec: 600 })
      .catch((e: unknown) => e);
    expect(isInvitationProviderError(err, 'provider-refused')).toBe(true);
    expect((err as Error).message).toMatch(/M2M credentials \(HTTP 401\)/);
    expect(requests).toEqual({ token: 1, ott: 0 });
  });

  it('gives up after three attempts on a Logto that keeps failing, with the last answer', async () => {
    const { provider, requests } = await startLogto(issueToken, (_req, res) => json(res, 500, {}));
    const err = await provider
      .oneTimeToken('bob@example.test', { expiresInSec: 600 })
      .catch((e: unknown) => e);
    expect(isInvitationProviderError(err, 'provider-refused')).toBe(true);
    expect((err as Error).message).toMatch(/one-time token \(HTTP 500\)/);
    expect(requests).toEqual({ token: 1, ott: 3 });
  });

  it('says provider-unreachable when nothing answers, after its attempts', async () => {
    const provider = new LogtoInvitationProvider({
      endpoint: await deadOrigin(),
      m2mClientId: 'm2m',
      m2mClientSecret: 's3cret',
      managementResource: 'https://default.logto.app/api',
      retryBackoff: { baseMs: 1, capMs: 1 },
    });
    const err = await provider
      .oneTimeToken('bob@example.test', { expiresInSec: 600 })
      .catch((e: unknown) => e);
    expect(isInvitationProviderError(err, 'provider-unreachable')).toBe(true);
    expect((err as Error).message).toMatch(/could not be reached/);
    expect((err as Error).message).not.toContain('s3cret');
  });

  it('refuses an attempt count that cannot work', () => {
    const options = {
      endpoint: 'http://logto.test',
      m2mClientId: 'm',
      m2mClientSecret: 's',
      managementResource: 'r',
    };
    expect(() => new LogtoInvitationProvider({ ...options, attempts: 0 })).toThrow(TypeError);
  });
});
