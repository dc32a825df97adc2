import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Clock } from '@svc/runtime';
import {
  closeServer,
  discover,
  type LoginAs,
  type LoginOptions,
  type LoginResult,
  type LoginTarget,
  listenLocal,
  login,
} from '@svc/testkit';
import { importJWK, type JWK, type JWTHeaderParameters, type JWTPayload, SignJWT } from 'jose';
import {
  createOidcProvider,
  type DevUser,
  type EmbeddedOidcProvider,
  generateSigningKey,
  type ManagementApiOptions,
  type SigningAlgorithm,
} from '../../src/identity/index.js';

// The login flow lives in @svc/testkit (the benchmarks use it too); re-exported for the tests.
export {
  CookieJar,
  discover,
  type LoginAs,
  type LoginOptions,
  type LoginResult,
  type LoginTarget,
  login,
  openLoginPage,
} from '@svc/testkit';

/** The users every test provider knows. Carol's email is not verified. */
export const TEST_USERS: readonly DevUser[] = [
  { sub: 'user-alice', email: 'Alice@Example.test', emailVerified: true, groups: ['admins'], name: 'Alice' },
  { sub: 'user-bob', email: 'bob@example.test', emailVerified: true, groups: ['operators'], name: 'Bob' },
  { sub: 'user-carol', email: 'carol@example.test', emailVerified: false, name: 'Carol' },
];

/** Options of {@link startTestProvider}. */
export interface TestProviderOptions {
  /** Path the provider is mounted under. Default `/dev-oidc`, as in svc-cloud. */
  mountPath?: string;
  users?: readonly DevUser[];
  /** Default true. */
  allowTypedNames?: boolean;
  signingAlgorithm?: SigningAlgorithm;
  /** See `OidcProviderOptions.resourceByDefault`. Default true. */
  resourceByDefault?: boolean;
  groupClaim?: string;
  /**
   * Origin of the issuer identifier instead of the server's own, e.g. one where nothing listens: the
   * case of spec 5.1.5 where the issuer's `iss` is not reachable from the API.
   */
  issuerOrigin?: string;
  /** Serve the Logto-compatible management API for one-time tokens with this M2M client. */
  managementApi?: ManagementApiOptions;
  /** The clock one-time tokens expire on. */
  clock?: Clock;
}

/** Tokens made without the provider, for the negative tests. Each is for `sub`, valid unless said. */
export interface Forgeries {
  /** Header `alg: none`, the provider's `kid`, empty signature. */
  algNone(sub: string): string;
  /** HS256 with the provider's public key (SPKI PEM bytes) as the HMAC secret. */
  hs256WithPublicKey(sub: string): Promise<string>;
  /** Signed by a foreign key of the same algorithm, with the provider's `kid`. */
  foreignKey(sub: string): Promise<string>;
  /** Signed by the provider's key, `iss` another issuer. */
  wrongIssuer(sub: string): Promise<string>;
  /** Signed by the provider's key, `aud` another resource. */
  wrongAudience(sub: string): Promise<string>;
  /** Signed by the provider's key, expired an hour ago. */
  expired(sub: string): Promise<string>;
  /** Signed by the provider's key, valid from an hour ahead. */
  notYetValid(sub: string): Promise<string>;
}

/** A running provider on 127.0.0.1 with a free port. */
export interface TestProvider extends LoginTarget {
  /** The issuer identifier, the `iss` of every token (see `issuerOrigin`). */
  readonly issuer: string;
  /** Where the provider really answers: `http://127.0.0.1:PORT/dev-oidc`. Equal to `issuer` by default. */
  readonly baseUrl: string;
  readonly jwksUri: string;
  readonly userinfoUri: string;
  readonly provider: EmbeddedOidcProvider;
  /** The real authorization-code + PKCE flow over HTTP, through the login page's own form. */
  login(user: LoginAs, options?: LoginOptions): Promise<LoginResult>;
  /** Starts signing with a new key (new `kid`). Returns the kid. */
  rotateKeys(): string;
  /** Signs `claims` with the provider's current key (header `alg`, `kid` of that key unless overridden). */
  signWith(claims: JWTPayload, header?: Partial<JWTHeaderParameters>): Promise<string>;
  /** Access-token claims for `sub`: this issuer and audience, valid for ten minutes. */
  accessClaims(sub: string): JWTPayload;
  readonly forge: Forgeries;
  /** Errors the provider reported as server errors; {@link TestProvider.close} fails when there are any. */
  readonly serverErrors: readonly Error[];
  close(): Promise<void>;
}

/** Client id of the test providers' public client. */
export const TEST_CLIENT_ID = 'svc-console-test';
/** The API resource of the test providers. */
export const TEST_AUDIENCE = 'https://api.svc.test';
/** Redirect URI of the test client; never contacted, the login stops at the redirect to it. */
export const TEST_REDIRECT_URI = 'http://127.0.0.1/console/callback';

/** Starts {@link createOidcProvider} in a bare `node:http` server on 127.0.0.1, port 0, under `/dev-oidc`. */
export async function startTestProvider(options: TestProviderOptions = {}): Promise<TestProvider> {
  const mountPath = options.mountPath ?? '/dev-oidc';
  const keys: JWK[] = [generateSigningKey(options.signingAlgorithm ?? 'ES256')];
  const serverErrors: Error[] = [];
  let dev: EmbeddedOidcProvider | undefined;
  const server = createServer((req, res) => {
    if (dev === undefined) res.writeHead(503).end();
    else dev.handler(req, res);
  });
  const port = await listenLocal(server);
  const baseUrl = `http://127.0.0.1:${port}${mountPath}`;
  const issuer = `${options.issuerOrigin ?? `http://127.0.0.1:${port}`}${mountPath}`;
  const provider = createOidcProvider({
    issuer,
    audience: TEST_AUDIENCE,
    clientId: TEST_CLIENT_ID,
    redirectUris: [TEST_REDIRECT_URI],
    users: options.users ?? TEST_USERS,
    allowTypedNames: options.allowTypedNames ?? true,
    groupClaim: options.groupClaim,
    signingKeys: keys,
    resourceByDefault: options.resourceByDefault,
    managementApi: options.managementApi,
    clock: options.clock,
    onServerError: (err) => serverErrors.push(err),
  });
  dev = provider;
  // Discovery through the real address: the endpoints it names follow the request's host.
  const endpoints = await discover(baseUrl).catch(async (err: unknown) => {
    await closeServer(server);
    throw err;
  });

  const currentKey = (): JWK => {
    const key = keys[0];
    if (key === undefined) throw new Error('no signing key');
    return key;
  };
  const signWith = async (claims: JWTPayload, header: Partial<JWTHeaderParameters> = {}): Promise<string> => {
    const key = currentKey();
    const alg = key.alg as string;
    return new SignJWT(claims)
      .setProtectedHeader({ alg, kid: key.kid as string, ...header })
      .sign(await importJWK(key, alg));
  };
  const accessClaims = (sub: string): JWTPayload => {
    const now = Math.floor(Date.now() / 1000);
    return { iss: issuer, aud: TEST_AUDIENCE, sub, iat: now, exp: now + 600 };
  };
  const hour = 3600;

  const forge: Forgeries = {
    algNone: (sub) => {
      const header = { alg: 'none', kid: currentKey().kid };
      return `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(accessClaims(sub)))}.`;
    },
    hs256WithPublicKey: async (sub) => {
      const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = currentKey();
      const pem = createPublicKey({ key: pub as JsonWebKey, format: 'jwk' }).export({
        type: 'spki',
        format: 'pem',
      });
      return new SignJWT(accessClaims(sub))
        .setProtectedHeader({ alg: 'HS256', kid: currentKey().kid as string })
        .sign(new Uint8Array(Buffer.from(pem)));
    },
    foreignKey: async (sub) => {
      const key = currentKey();
      const alg = key.alg as SigningAlgorithm;
      return new SignJWT(accessClaims(sub))
        .setProtectedHeader({ alg, kid: key.kid as string })
        .sign(await importJWK(generateSigningKey(alg), alg));
    },
    wrongIssuer: (sub) => signWith({ ...accessClaims(sub), iss: `http://127.0.0.1:${port}/another-issuer` }),
    wrongAudience: (sub) => signWith({ ...accessClaims(sub), aud: 'https://another-api.svc.test' }),
    expired: (sub) => {
      const now = Math.floor(Date.now() / 1000);
      return signWith({ ...accessClaims(sub), iat: now - 2 * hour, exp: now - hour });
    },
    notYetValid: (sub) => {
      const now = Math.floor(Date.now() / 1000);
      return signWith({ ...accessClaims(sub), nbf: now + hour, exp: now + 2 * hour });
    },
  };

  const target: LoginTarget = {
    authorizationEndpoint: endpoints.authorizationEndpoint,
    tokenEndpoint: endpoints.tokenEndpoint,
    clientId: TEST_CLIENT_ID,
    redirectUri: TEST_REDIRECT_URI,
    audience: TEST_AUDIENCE,
  };
  return {
    ...target,
    issuer,
    baseUrl,
    jwksUri: endpoints.jwksUri,
    userinfoUri: endpoints.userinfoUri,
    provider,
    login: (user, loginOptions) => login(target, user, loginOptions),
    rotateKeys: () => {
      const key = generateSigningKey(currentKey().alg as SigningAlgorithm);
      keys.unshift(key);
      return provider.rotateKeys(key);
    },
    signWith,
    accessClaims,
    forge,
    serverErrors,
    close: async () => {
      await closeServer(server);
      if (serverErrors.length > 0) {
        throw new AggregateError(serverErrors, `the provider had ${serverErrors.length} server error(s)`);
      }
    },
  };
}

/**
 * Serves `handler` (a Node request handler) on 127.0.0.1, port 0, and returns the port and a closer.
 * For tests that mount the provider or fake an endpoint themselves.
 */
export async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ origin: string; server: Server; close(): Promise<void> }> {
  const server = createServer(handler);
  const port = await listenLocal(server);
  return { origin: `http://127.0.0.1:${port}`, server, close: () => closeServer(server) };
}

/** An origin on 127.0.0.1 where nothing listens (a port that was free a moment ago). */
export async function deadOrigin(): Promise<string> {
  const server = createServer();
  const port = await listenLocal(server);
  await closeServer(server);
  return `http://127.0.0.1:${port}`;
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}
