import { createHash, createPublicKey, type JsonWebKey, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importJWK, type JWK, type JWTHeaderParameters, type JWTPayload, SignJWT } from 'jose';
import {
  createOidcProvider,
  type DevUser,
  type EmbeddedOidcProvider,
  generateSigningKey,
  type SigningAlgorithm,
} from '../../src/identity/index.js';

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
}

/** Who {@link TestProvider.login} logs in: a known user's button, or a typed name. */
export type LoginAs = { sub: string } | { name: string };

/** Options of one {@link TestProvider.login}. */
export interface LoginOptions {
  /** `resource` sent with the authorization and token requests; `false` sends none. Default: the audience. */
  resource?: string | false;
  /** Default `openid email profile`. */
  scope?: string;
}

/** What the token endpoint gave. */
export interface LoginResult {
  accessToken: string;
  idToken: string;
  /** The whole token response. */
  response: Record<string, unknown>;
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
  const port = await listen(server);
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
    onServerError: (err) => serverErrors.push(err),
  });
  dev = provider;
  // Discovery through the real address: the endpoints it names follow the request's host.
  const endpoints = await discover(baseUrl).catch(async (err: unknown) => {
    await close(server);
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
      await close(server);
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
  const port = await listen(server);
  return { origin: `http://127.0.0.1:${port}`, server, close: () => close(server) };
}

/** An origin on 127.0.0.1 where nothing listens (a port that was free a moment ago). */
export async function deadOrigin(): Promise<string> {
  const server = createServer();
  const port = await listen(server);
  await close(server);
  return `http://127.0.0.1:${port}`;
}

/** Where {@link login} talks to: a provider's endpoints and its client. */
export interface LoginTarget {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  clientId: string;
  redirectUri: string;
  audience: string;
}

/**
 * The real authorization-code + PKCE flow over HTTP: the authorization request, the login page's own
 * form (cookies kept, redirects followed), the callback's `code`, and the token request.
 */
export async function login(
  target: LoginTarget,
  user: LoginAs,
  options: LoginOptions = {},
): Promise<LoginResult> {
  const jar = new CookieJar(target.redirectUri);
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const state = randomBytes(16).toString('base64url');
  const resource = options.resource === undefined ? target.audience : options.resource;

  const authorize = new URL(target.authorizationEndpoint);
  authorize.search = new URLSearchParams({
    client_id: target.clientId,
    response_type: 'code',
    redirect_uri: target.redirectUri,
    scope: options.scope ?? 'openid email profile',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    nonce: randomBytes(16).toString('base64url'),
    ...(resource === false ? {} : { resource }),
  }).toString();

  const page = await jar.follow(authorize.href);
  if (page.kind !== 'page') throw new Error('the authorization request did not lead to the login page');
  const form = chooseForm(page.html, user);
  const submitted = await jar.follow(new URL(form.action, page.url).href, {
    method: 'POST',
    body: new URLSearchParams(form.fields),
  });
  if (submitted.kind !== 'callback') {
    throw new Error(
      `the login did not come back to the client (HTTP ${submitted.status}): ${submitted.html}`,
    );
  }
  const params = submitted.url.searchParams;
  if (params.get('state') !== state) throw new Error('the callback carries another state');
  const code = params.get('code');
  if (code === null) throw new Error(`the callback carries no code: ${params.toString()}`);

  const response = await fetch(target.tokenEndpoint, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: target.redirectUri,
      client_id: target.clientId,
      code_verifier: verifier,
      ...(resource === false ? {} : { resource }),
    }),
  });
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200)
    throw new Error(`token endpoint answered ${response.status}: ${JSON.stringify(body)}`);
  const { access_token: accessToken, id_token: idToken } = body;
  if (typeof accessToken !== 'string' || typeof idToken !== 'string') {
    throw new Error('token response lacks access_token or id_token');
  }
  return { accessToken, idToken, response: body };
}

/** The authorization request of a fresh login, up to the page it leads to (the login page). */
export async function openLoginPage(
  target: LoginTarget,
): Promise<{ url: URL; status: number; html: string; jar: CookieJar }> {
  const jar = new CookieJar(target.redirectUri);
  const authorize = new URL(target.authorizationEndpoint);
  authorize.search = new URLSearchParams({
    client_id: target.clientId,
    response_type: 'code',
    redirect_uri: target.redirectUri,
    scope: 'openid email',
    code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
    code_challenge_method: 'S256',
    resource: target.audience,
  }).toString();
  const page = await jar.follow(authorize.href);
  if (page.kind !== 'page') throw new Error('the authorization request did not lead to a page');
  return { url: page.url, status: page.status, html: page.html, jar };
}

/** The endpoints a provider's discovery document names. */
export async function discover(issuer: string): Promise<{
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
  userinfoUri: string;
  issuer: string;
}> {
  const response = await fetch(`${issuer}/.well-known/openid-configuration`);
  if (response.status !== 200) throw new Error(`discovery of ${issuer} answered ${response.status}`);
  const document = (await response.json()) as Record<string, unknown>;
  const endpoint = (name: string): string => {
    const value = document[name];
    if (typeof value !== 'string') throw new Error(`discovery lacks ${name}`);
    return value;
  };
  return {
    issuer: endpoint('issuer'),
    authorizationEndpoint: endpoint('authorization_endpoint'),
    tokenEndpoint: endpoint('token_endpoint'),
    jwksUri: endpoint('jwks_uri'),
    userinfoUri: endpoint('userinfo_endpoint'),
  };
}

interface PageForm {
  action: string;
  fields: [string, string][];
}

/** Finds the form on the login page a person would use to log in `user`, with the values it submits. */
function chooseForm(html: string, user: LoginAs): PageForm {
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)) {
    const action = attribute(match[1] ?? '', 'action');
    const inner = match[2] ?? '';
    if (action === undefined || !/\bmethod="post"/i.test(match[1] ?? '')) continue;
    if ('sub' in user) {
      for (const button of inner.matchAll(/<button\b([^>]*)>/g)) {
        const attrs = button[1] ?? '';
        if (attribute(attrs, 'name') === 'sub' && attribute(attrs, 'value') === user.sub) {
          return { action, fields: [['sub', user.sub]] };
        }
      }
    } else if (/<input\b[^>]*\bname="name"/.test(inner)) {
      return { action, fields: [['name', user.name]] };
    }
  }
  throw new Error(`the login page offers no way to log in ${JSON.stringify(user)}`);
}

function attribute(attrs: string, name: string): string | undefined {
  const match = new RegExp(`\\b${name}="([^"]*)"`).exec(attrs);
  return match?.[1] === undefined ? undefined : unescapeHtml(match[1]);
}

function unescapeHtml(text: string): string {
  return text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
}

type FollowResult =
  | { kind: 'page'; url: URL; status: number; html: string }
  | { kind: 'callback'; url: URL; status: number; html: string };

/** Cookies of one user agent, honouring `Path`, `Max-Age` and `Expires`. */
export class CookieJar {
  readonly #redirectUri: string;
  readonly #cookies = new Map<string, { name: string; value: string; path: string; expires: number }>();

  constructor(redirectUri: string) {
    this.#redirectUri = redirectUri;
  }

  /** Requests `url`, then follows redirects (as GET) until a page, or a redirect to the client's callback. */
  async follow(url: string, init: { method?: string; body?: URLSearchParams } = {}): Promise<FollowResult> {
    let current = new URL(url);
    let method = init.method ?? 'GET';
    let body = init.body;
    for (let hop = 0; hop < 20; hop += 1) {
      const headers: Record<string, string> = {};
      const cookie = this.#header(current);
      if (cookie !== '') headers.cookie = cookie;
      const response = await fetch(current, {
        method,
        headers,
        redirect: 'manual',
        ...(body ? { body } : {}),
      });
      this.#store(current, response.headers.getSetCookie());
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel();
        current = new URL(location, current);
        if (current.href.startsWith(this.#redirectUri)) {
          return { kind: 'callback', url: current, status: response.status, html: '' };
        }
        method = 'GET';
        body = undefined;
        continue;
      }
      return { kind: 'page', url: current, status: response.status, html: await response.text() };
    }
    throw new Error('too many redirects');
  }

  #header(url: URL): string {
    const now = Date.now();
    return [...this.#cookies.values()]
      .filter((c) => c.expires > now && pathMatches(url.pathname, c.path))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  #store(url: URL, setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair = '', ...attrs] = line.split(';').map((part) => part.trim());
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = url.pathname.replace(/\/[^/]*$/, '') || '/';
      let expires = Number.POSITIVE_INFINITY;
      for (const attr of attrs) {
        const [key = '', val = ''] = attr.split('=', 2);
        switch (key.toLowerCase()) {
          case 'path':
            path = val || '/';
            break;
          case 'expires':
            expires = Math.min(expires, Date.parse(val));
            break;
          case 'max-age':
            expires = Date.now() + Number(val) * 1000;
            break;
          default:
        }
      }
      const id = `${name};${path}`;
      if (expires <= Date.now() || value === '') this.#cookies.delete(id);
      else this.#cookies.set(id, { name, value, path, expires });
    }
  }
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath.charAt(cookiePath.length) === '/';
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
}
