/**
 * The console's sign-in: the OpenID Connect authorization-code flow with PKCE against the issuer
 * of `GET /api/v1/console-config`, then `GET /api/v1/me` with the access token (issued for the
 * API resource) and the ID token in `x-svc-id-token`. Invitation links
 * (`#/invite?email=&token=&ott=`) start the login with `login_hint` and `one_time_token`, and
 * accept the invitation once signed in. Tokens live in `sessionStorage` only.
 */

interface ConsoleConfig {
  readonly issuer: string;
  readonly clientId: string;
  readonly apiResource: string;
  readonly scopes: readonly string[];
  readonly provisioning: string;
  readonly developmentProvider: boolean;
}

interface Me {
  readonly user: { id: string; email: string | null; name: string | null };
  readonly orgs: readonly { id: string; name: string; role: string }[];
  readonly status: 'ready' | 'no-organisation';
}

interface Tokens {
  readonly accessToken: string;
  readonly idToken: string;
}

interface PendingLogin {
  readonly state: string;
  readonly verifier: string;
  readonly invitationToken?: string;
}

const TOKENS_KEY = 'svc.tokens';
const PENDING_KEY = 'svc.pending-login';
const app = document.getElementById('app') as HTMLElement;

/** The page's own address without query or fragment: the redirect URI registered for the console. */
function redirectUri(): string {
  return `${location.origin}${location.pathname}`;
}

function base64url(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomText(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function challenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

async function json<T>(response: Response, what: string): Promise<T> {
  const body = (await response.json().catch(() => undefined)) as
    | (T & { error?: { message?: string } | string; error_description?: string })
    | undefined;
  if (!response.ok) {
    const reason =
      typeof body?.error === 'object'
        ? body.error.message
        : (body?.error_description ?? body?.error ?? `HTTP ${response.status}`);
    throw new Error(`${what} failed: ${reason}`);
  }
  return body as T;
}

async function discover(issuer: string): Promise<{ authorization_endpoint: string; token_endpoint: string }> {
  return json(
    await fetch(`${issuer}/.well-known/openid-configuration`),
    'discovery of the identity provider',
  );
}

function invitationFromHash(): URLSearchParams | undefined {
  if (!location.hash.startsWith('#/invite?')) return undefined;
  return new URLSearchParams(location.hash.slice('#/invite?'.length));
}

async function startLogin(config: ConsoleConfig): Promise<void> {
  const endpoints = await discover(config.issuer);
  const verifier = randomText();
  const state = randomText();
  const invitation = invitationFromHash();
  const pending: PendingLogin = {
    state,
    verifier,
    ...(invitation?.get('token') ? { invitationToken: invitation.get('token') as string } : {}),
  };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(endpoints.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: config.clientId,
    redirect_uri: redirectUri(),
    response_type: 'code',
    scope: config.scopes.join(' '),
    resource: config.apiResource,
    state,
    nonce: randomText(),
    code_challenge: await challenge(verifier),
    code_challenge_method: 'S256',
    ...(invitation?.get('email') ? { login_hint: invitation.get('email') as string } : {}),
    ...(invitation?.get('ott') ? { one_time_token: invitation.get('ott') as string } : {}),
  }).toString();
  location.assign(url.toString());
}

async function finishLogin(config: ConsoleConfig, params: URLSearchParams): Promise<PendingLogin> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null') as PendingLogin | null;
  sessionStorage.removeItem(PENDING_KEY);
  if (pending === null || params.get('state') !== pending.state) {
    throw new Error('the login answer does not belong to a login started here; sign in again');
  }
  const endpoints = await discover(config.issuer);
  const tokens = await json<{ access_token: string; id_token: string }>(
    await fetch(endpoints.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: params.get('code') ?? '',
        redirect_uri: redirectUri(),
        client_id: config.clientId,
        code_verifier: pending.verifier,
        resource: config.apiResource,
      }),
    }),
    'token exchange',
  );
  sessionStorage.setItem(
    TOKENS_KEY,
    JSON.stringify({ accessToken: tokens.access_token, idToken: tokens.id_token }),
  );
  history.replaceState(null, '', redirectUri());
  return pending;
}

function api(tokens: Tokens, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(path, {
    ...init,
    headers: {
      ...(init.headers as Record<string, string> | undefined),
      authorization: `Bearer ${tokens.accessToken}`,
      'x-svc-id-token': tokens.idToken,
    },
  });
}

function render(html: string): void {
  app.innerHTML = html;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function showSignIn(config: ConsoleConfig, message?: string): void {
  const dev = config.developmentProvider
    ? '<p class="muted">Development sign-in: pick or type any test user on the next page.</p>'
    : '';
  render(
    `${message ? `<p class="error">${escapeHtml(message)}</p>` : ''}<p><button id="sign-in">Sign in</button></p>${dev}`,
  );
  document.getElementById('sign-in')?.addEventListener('click', () => {
    startLogin(config).catch((err: unknown) => showSignIn(config, String((err as Error).message ?? err)));
  });
}

function showMe(me: Me, config: ConsoleConfig): void {
  const who = escapeHtml(me.user.email ?? me.user.name ?? me.user.id);
  const orgs =
    me.status === 'no-organisation'
      ? '<h2>No organisation yet</h2><p>You are signed in, but no organisation has given you access. Ask an administrator for an invitation.</p>'
      : `<h2>Your organisations</h2><table><tr><th>Organisation</th><th>Role</th></tr>${me.orgs
          .map((o) => `<tr><td>${escapeHtml(o.name)}</td><td>${escapeHtml(o.role)}</td></tr>`)
          .join('')}</table>`;
  render(
    `<p>Signed in as <strong id="who">${who}</strong>. <button id="sign-out">Sign out</button></p>${orgs}`,
  );
  document.getElementById('sign-out')?.addEventListener('click', () => {
    sessionStorage.removeItem(TOKENS_KEY);
    showSignIn(config);
  });
}

async function main(): Promise<void> {
  const config = await json<ConsoleConfig>(await fetch('/api/v1/console-config'), 'console configuration');
  const params = new URLSearchParams(location.search);
  if (params.has('error')) {
    showSignIn(
      config,
      `the identity provider refused the login: ${params.get('error_description') ?? params.get('error')}`,
    );
    return;
  }
  let invitationToken: string | undefined;
  if (params.has('code')) invitationToken = (await finishLogin(config, params)).invitationToken;
  const stored = sessionStorage.getItem(TOKENS_KEY);
  if (stored === null) {
    showSignIn(config);
    return;
  }
  const tokens = JSON.parse(stored) as Tokens;
  const meResponse = await api(tokens, '/api/v1/me');
  if (meResponse.status === 401) {
    sessionStorage.removeItem(TOKENS_KEY);
    showSignIn(config, 'your session ended; sign in again');
    return;
  }
  let me = await json<Me>(meResponse, 'GET /api/v1/me');
  if (invitationToken !== undefined) {
    const accepted = await api(tokens, '/api/v1/invitations/accept', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: invitationToken }),
    });
    // Already matched by email at sign-in answers 410: either way, /me shows the result.
    if (!accepted.ok && accepted.status !== 410) await json(accepted, 'accepting the invitation');
    me = await json<Me>(await api(tokens, '/api/v1/me'), 'GET /api/v1/me');
  }
  showMe(me, config);
}

main().catch((err: unknown) => {
  render(`<p class="error">${escapeHtml(String((err as Error).message ?? err))}</p>`);
});
