/**
 * Signing in at an OpenID provider the way a browser does, without a browser: the authorization
 * code flow with PKCE over HTTP, through the provider's own login page (svc-cloud's development
 * login page: one `sub` button per known user, and a `name` field). For tests and benchmarks that
 * need real tokens from a real provider.
 *
 * @packageDocumentation
 */
import { createHash, randomBytes } from 'node:crypto';

/** Who {@link login} logs in: a known user's button, or a typed name. */
export type LoginAs = { sub: string } | { name: string };

/** Options of one {@link login}. */
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
  const text = html
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
  throw new Error(`the login page offers no way to log in ${JSON.stringify(user)}; it says: ${text}`);
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
