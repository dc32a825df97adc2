/**
 * Refusals the page can name (`PilotConnection.refusal` and the `state` event's third argument),
 * and the token source's failures: a 4xx but 429 is final, the rest is retried and said so.
 */
import { describe, expect, it } from 'vitest';
import {
  fetchSessionToken,
  isPilotTokenError,
  OfferError,
  PILOT_REFUSAL_CODES,
  type PilotRefusal,
  PilotTokenError,
  tokenScope,
} from '../src/index.js';
import { harness, settle, toConnected, toHandshake, WELCOME } from './support/connection-harness.js';

/** A JWT-shaped token with these claims (unsigned: the SDK only reads `scope`; the robot verifies). */
const jwt = (claims: object) =>
  `eyJhbGciOiJFUzI1NiJ9.${btoa(JSON.stringify(claims)).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')}.sig`;

/** Connects with a token function that fails with `err` and reports what the connection did. */
async function tokenFails(err: unknown) {
  const h = harness({
    token: () => {
      throw err;
    },
  });
  const refusals: (PilotRefusal | undefined)[] = [];
  h.connection.on('state', (_state, _detail, refusal) => refusals.push(refusal));
  h.connection.connect();
  await settle();
  return { h, refusals };
}

describe('refusals', () => {
  it.each([
    [403, 'forbidden', 'you may not start sessions on robot r1: no grant', /^no access to this robot: /],
    [
      404,
      'unknown-robot',
      'no robot r1 that you may start sessions on',
      /^no such robot, or none you may see: /,
    ],
    [401, 'signed-out', 'expired access token', /^your sign-in is over or not valid; sign in again/],
    [400, 'request-refused', 'invalid body: scope', /^the session token was refused: /],
  ] as const)(
    'a token endpoint answer %i is final: denied %s with the server’s words',
    async (status, code, said, words) => {
      const { h, refusals } = await tokenFails(new PilotTokenError('http', said, { status, apiCode: 'x' }));
      expect(h.connection.state).toBe('denied');
      expect(h.connection.refusal?.code).toBe(code);
      expect(h.connection.refusal?.message).toMatch(words);
      expect(h.connection.refusal?.message).toContain(said);
      expect(refusals.at(-1)).toEqual(h.connection.refusal);
      expect(h.clock.pendingTimers).toBe(0);
      expect(h.offers).toHaveLength(0);
    },
  );

  it('any error carrying a 4xx status counts (a page’s own fetch wrapper)', async () => {
    const { h } = await tokenFails(Object.assign(new Error('nope'), { status: 403 }));
    expect(h.connection.refusal?.code).toBe('forbidden');
  });

  it.each([
    ['429', new PilotTokenError('http', 'slow down', { status: 429 })],
    ['503', new PilotTokenError('http', 'maintenance', { status: 503 })],
    ['a network error', new PilotTokenError('network', 'svc-cloud could not be reached')],
    ['an error without a status', new Error('who knows')],
  ])('%s is retried with backoff, and the state says so', async (_what, err) => {
    const { h } = await tokenFails(err);
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)?.[1]).toMatch(/^cannot get a session token: .+; retrying in \d+ ms$/);
    expect(h.connection.refusal).toBeUndefined();
  });

  it.each([
    ['bad-token', 'token-refused'],
    ['forbidden', 'forbidden'],
  ] as const)('signalling %s → denied %s', async (offerCode, code) => {
    const h = harness();
    h.connection.connect();
    await settle();
    h.offers[0]!.answer.reject(new OfferError(offerCode, 'the session token is not usable: it has expired'));
    await settle();
    expect(h.connection.refusal).toEqual({
      code,
      message: 'the session token is not usable: it has expired',
    });
  });

  it("the robot's denied → robot-denied with its reason", async () => {
    const h = harness();
    const transport = await toHandshake(h);
    transport.say({
      type: 'denied',
      reason: 'robot busy: 4 of 4 sessions in use (max_sessions)',
      code: 'busy',
    });
    await settle();
    expect(h.connection.refusal).toEqual({
      code: 'robot-denied',
      message: 'robot busy: 4 of 4 sessions in use (max_sessions)',
    });
  });

  it.each([
    ['token-refused', 'token-refused'],
    ['token-revoked', 'token-refused'],
    ['token-in-use', 'robot-denied'],
    [undefined, 'robot-denied'],
  ] as const)(
    "the robot's denied with code %s → %s (a robot before codes: robot-denied)",
    async (given, code) => {
      const h = harness();
      const transport = await toHandshake(h);
      const reason = 'pilot session token refused (expired): the token has expired';
      transport.say({ type: 'denied', reason, ...(given !== undefined && { code: given }) });
      await settle();
      expect(h.connection.state).toBe('denied');
      expect(h.connection.refusal).toEqual({ code, message: reason });
    },
  );

  it('a drive token admitted as an observer stays connected and says the driver slot is held', async () => {
    const h = harness({ token: jwt({ sub: 'user:bob', scope: 'drive' }) });
    const refusals: (PilotRefusal | undefined)[] = [];
    h.connection.on('state', (_s, _d, refusal) => refusals.push(refusal));
    await toConnected(h, { ...WELCOME, role: 'observer' });
    expect(h.connection.state).toBe('connected');
    expect(h.connection.refusal?.code).toBe('driver-slot-held');
    expect(refusals.at(-1)?.code).toBe('driver-slot-held');

    const watcher = harness({ token: jwt({ sub: 'user:bob', scope: 'observe' }) });
    await toConnected(watcher, { ...WELCOME, role: 'observer' });
    expect(watcher.connection.refusal).toBeUndefined();
    const driver = harness({ token: jwt({ scope: 'drive' }) });
    await toConnected(driver);
    expect(driver.connection.refusal).toBeUndefined();
  });

  it('lists every code for pages to map to words', () => {
    expect(PILOT_REFUSAL_CODES).toEqual([
      'forbidden',
      'unknown-robot',
      'robot-offline',
      'token-refused',
      'signed-out',
      'request-refused',
      'robot-denied',
      'driver-slot-held',
    ]);
  });
});

describe('fetchSessionToken', () => {
  const answer = (status: number, body: unknown) =>
    (async () => new Response(JSON.stringify(body), { status })) as unknown as typeof fetch;

  it('posts the robot and scope with the bearer token and returns the token', async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    const fetchImpl = (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return new Response(JSON.stringify({ token: 'tok' }), { status: 201 });
    }) as unknown as typeof fetch;
    const token = await fetchSessionToken({
      robotId: 'r1',
      scope: 'drive',
      accessToken: 'acc',
      baseUrl: 'https://cloud.example',
      fetch: fetchImpl,
    });
    expect(token).toBe('tok');
    expect(calls[0]!.url).toBe('https://cloud.example/api/v1/session-tokens');
    expect(calls[0]!.init).toMatchObject({ method: 'POST', body: '{"robotId":"r1","scope":"drive"}' });
    expect((calls[0]!.init.headers as Record<string, string>).authorization).toBe('Bearer acc');
  });

  it('throws a coded error with the status, the service’s code and message on a refusal', async () => {
    const err = await fetchSessionToken({
      robotId: 'r1',
      scope: 'drive',
      fetch: answer(403, { error: { code: 'forbidden', message: 'you may only observe robot r1' } }),
    }).catch((e: unknown) => e);
    expect(isPilotTokenError(err, 'http')).toBe(true);
    expect(err).toMatchObject({
      status: 403,
      apiCode: 'forbidden',
      message: 'you may only observe robot r1',
    });
  });

  it('throws network when svc-cloud cannot be reached, protocol without a token', async () => {
    const unreachable = (async () => {
      throw new TypeError('Failed to fetch');
    }) as unknown as typeof fetch;
    const down = await fetchSessionToken({ robotId: 'r1', scope: 'drive', fetch: unreachable }).catch(
      (e) => e,
    );
    expect(isPilotTokenError(down, 'network')).toBe(true);
    expect((down as Error).message).toMatch(/could not be reached .*Failed to fetch.*check the network/);
    const empty = await fetchSessionToken({ robotId: 'r1', scope: 'drive', fetch: answer(201, {}) }).catch(
      (e) => e,
    );
    expect(isPilotTokenError(empty, 'protocol')).toBe(true);
  });
});

describe('tokenScope', () => {
  it('reads the scope claim, and nothing from what is not a JWT', () => {
    expect(tokenScope(jwt({ scope: 'drive' }))).toBe('drive');
    expect(tokenScope(jwt({ scope: 'observe' }))).toBe('observe');
    expect(tokenScope(jwt({ scope: 'admin' }))).toBeUndefined();
    expect(tokenScope('tok')).toBeUndefined();
    expect(tokenScope('a.!!!.c')).toBeUndefined();
  });
});
