/**
 * API suite: requests per second and p99 latency of svc-cloud's HTTP API under load, in one process
 * on the embedded database (PGlite, in memory) with a real OpenID provider (svc-cloud's embedded
 * one, on its own port). Tokens come from the real code + PKCE login. autocannon fires the requests
 * from a worker thread, so the server's event loop is the app's alone.
 *
 * - `GET /api/v1/me`: verifies the access token and the ID token (JWKS cached), signs the user in
 *   (one transaction, `last_login_at` written) and lists their orgs.
 * - `GET /api/v1/orgs/:org/members`: verifies the access token, looks the user and their role up,
 *   lists the members.
 */
import { createServer } from 'node:http';
import {
  buildApp,
  createOidcProvider,
  type DevUser,
  loadCloudConfig,
  noInvitationProvider,
  OidcVerifier,
} from '@svc/cloud';
import { openDatabase } from '@svc/cloud/db';
import { closeServer, discover, type LoginResult, type LoginTarget, listenLocal, login } from '@svc/testkit';
import autocannon, { type Result } from 'autocannon';
import type { BenchSuite } from '../types.js';

const DURATION_SEC = 10;
const CONNECTIONS = 10;
const WORKERS = 1;
const AUDIENCE = 'https://api.svc.bench';
const CLIENT_ID = 'svc-console-bench';
const REDIRECT_URI = 'http://127.0.0.1/console/';
const RATE_LIMIT_PER_MINUTE = 1_000_000;

/** The org's owner and the members they invite. */
const USERS: DevUser[] = ['owner', 'ana', 'ben', 'chloe', 'dev'].map((name) => ({
  sub: `bench-${name}`,
  email: `${name}@bench.test`,
  emailVerified: true,
  name,
}));

export const suite: BenchSuite = {
  description: 'svc-cloud API on PGlite with a real OIDC provider: requests/s and p99 latency per endpoint',
  parameters: {
    durationSec: DURATION_SEC,
    connections: CONNECTIONS,
    pipelining: 1,
    loadGenerator: `autocannon in ${WORKERS} worker thread`,
    database: 'PGlite, in memory, in the server process',
    provider: 'svc-cloud embedded OIDC provider (oidc-provider 9), ES256, same process',
    provisioning: 'self-serve',
    members: USERS.length,
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
  },
  async run(report) {
    const closers: (() => Promise<void>)[] = [];
    try {
      // The database first: opening it keeps the event loop busy for seconds, long enough for the
      // provider's server to drop an idle keep-alive connection that a later request would reuse.
      const database = await openDatabase({ dataDir: 'memory://' });
      closers.unshift(() => database.close());

      // The provider, on its own port.
      const providerServer = createServer();
      closers.unshift(() => closeServer(providerServer));
      const providerPort = await listenLocal(providerServer);
      const issuer = `http://127.0.0.1:${providerPort}/dev-oidc`;
      const provider = createOidcProvider({
        issuer,
        audience: AUDIENCE,
        clientId: CLIENT_ID,
        redirectUris: [REDIRECT_URI],
        users: USERS,
        onServerError: (err) => console.error('provider:', err),
      });
      providerServer.on('request', provider.handler);
      const endpoints = await discover(issuer);
      const target: LoginTarget = {
        authorizationEndpoint: endpoints.authorizationEndpoint,
        tokenEndpoint: endpoints.tokenEndpoint,
        clientId: CLIENT_ID,
        redirectUri: REDIRECT_URI,
        audience: AUDIENCE,
      };

      // The app, on the embedded database.
      const config = loadCloudConfig({
        SVC_OIDC_ISSUER: issuer,
        SVC_OIDC_AUDIENCE: AUDIENCE,
        SVC_OIDC_CLIENT_ID: CLIENT_ID,
        SVC_PROVISIONING: 'self-serve',
        // One token makes every request: the limiter stays in the path, set high enough never to trip.
        SVC_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE),
      });
      const app = await buildApp({
        config,
        database,
        verifier: new OidcVerifier({
          issuer,
          audience: AUDIENCE,
          clientId: CLIENT_ID,
          jwksUri: endpoints.jwksUri,
        }),
        invitationProvider: noInvitationProvider,
        mail: { send: async () => {} },
        logger: false,
      });
      closers.unshift(() => app.close());
      const address = await app.listen({ host: '127.0.0.1', port: 0 });

      // The owner signs in (and gets an org), invites the others, who sign in and join it.
      const [owner, ...others] = USERS;
      const ownerTokens = await login(target, { sub: owner!.sub });
      const me = await call<{ orgs: { id: string }[] }>(address, 'GET', '/api/v1/me', ownerTokens);
      const orgId = me.orgs[0]!.id;
      for (const user of others) {
        await call(address, 'POST', `/api/v1/orgs/${orgId}/invitations`, ownerTokens, {
          email: user.email,
          role: 'operator',
        });
        await call(address, 'GET', '/api/v1/me', await login(target, { sub: user.sub }));
      }
      const members = await call<{ members: unknown[] }>(
        address,
        'GET',
        `/api/v1/orgs/${orgId}/members`,
        ownerTokens,
      );
      if (members.members.length !== USERS.length) {
        throw new Error(`expected ${USERS.length} members, the API lists ${members.members.length}`);
      }

      const scenarios = [
        {
          name: 'GET /api/v1/me (access + ID token)',
          path: '/api/v1/me',
          headers: {
            authorization: `Bearer ${ownerTokens.accessToken}`,
            'x-svc-id-token': ownerTokens.idToken,
          },
        },
        {
          name: `GET /api/v1/orgs/:org/members (${USERS.length} members)`,
          path: `/api/v1/orgs/${orgId}/members`,
          headers: { authorization: `Bearer ${ownerTokens.accessToken}` },
        },
      ];
      for (const scenario of scenarios) {
        const result = await autocannon({
          url: `${address}${scenario.path}`,
          headers: scenario.headers,
          duration: DURATION_SEC,
          connections: CONNECTIONS,
          workers: WORKERS,
        });
        const params = paramsOf(result);
        if (result.non2xx > 0 || result.errors > 0) {
          throw new Error(`${scenario.name}: ${JSON.stringify(params)}; the figures would not mean anything`);
        }
        report({
          name: `${scenario.name}: requests`,
          value: result.requests.average,
          unit: 'req/s',
          better: 'higher',
          params,
        });
        report({
          name: `${scenario.name}: latency p99`,
          value: result.latency.p99,
          unit: 'ms',
          better: 'lower',
          params,
        });
      }
    } finally {
      for (const close of closers) await close();
    }
  },
};

/** The figures of a run worth keeping beside the reported ones. */
function paramsOf(result: Result): Record<string, unknown> {
  return {
    seconds: result.duration,
    requests: result.requests.total,
    latencyP50Ms: result.latency.p50,
    latencyMeanMs: result.latency.average,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/** One request with the user's tokens; fails unless it answers 2xx. */
async function call<T = unknown>(
  address: string,
  method: 'GET' | 'POST',
  path: string,
  tokens: LoginResult,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`${address}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${tokens.accessToken}`,
      'x-svc-id-token': tokens.idToken,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}
