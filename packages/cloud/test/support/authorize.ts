/**
 * The steps of a browser sign-in one at a time, for tests that look between them: an authorization
 * request with extra parameters (`login_hint`, `one_time_token`), the code exchange, and the refresh
 * grant a console's silent renewal sends.
 */
import { createHash, randomBytes } from 'node:crypto';
import { CookieJar, type LoginTarget } from '@svc/testkit';

/** Where an authorization request ended: back at the client with a code, or on a page of the provider. */
export type AuthorizeOutcome =
  | { readonly kind: 'callback'; readonly code: string; readonly verifier: string; readonly jar: CookieJar }
  | {
      readonly kind: 'page';
      readonly status: number;
      readonly html: string;
      readonly url: URL;
      readonly jar: CookieJar;
      /** Where {@link submitLogin} goes on. */
      readonly pending: { readonly verifier: string; readonly state: string };
    };

/** Tokens of a token response. */
export interface Tokens {
  readonly accessToken: string;
  readonly idToken: string;
  readonly refreshToken: string;
  readonly response: Record<string, unknown>;
}

/**
 * Sends an authorization request (code + PKCE, scope `openid email profile`, `resource` the audience)
 * with `extra` parameters, following redirects with the cookies of `jar` (a new browser by default).
 */
export async function authorize(
  target: LoginTarget,
  extra: Record<string, string> = {},
  jar = new CookieJar(target.redirectUri),
): Promise<AuthorizeOutcome> {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const url = new URL(target.authorizationEndpoint);
  url.search = new URLSearchParams({
    client_id: target.clientId,
    response_type: 'code',
    redirect_uri: target.redirectUri,
    scope: 'openid email profile',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state,
    nonce: randomBytes(16).toString('base64url'),
    resource: target.audience,
    ...extra,
  }).toString();
  let result = await jar.follow(url.href);
  // oidc-provider's own pages that a browser's script submits at once (the end of another person's
  // session when someone else signs in in the same browser): submitted as a browser would.
  for (let hop = 0; result.kind === 'page' && hop < 5; hop += 1) {
    const form = autoSubmittedForm(result.html);
    if (form === undefined) break;
    result = await jar.follow(new URL(form.action, result.url).href, { method: 'POST', body: form.fields });
  }
  if (result.kind === 'page') return { ...result, kind: 'page', jar, pending: { verifier, state } };
  return callback(result.url, { verifier, state }, jar);
}

/** Submits the login page's form (the first one) with `fields`, as a person clicking a button does. */
export async function submitLogin(
  outcome: AuthorizeOutcome,
  fields: Record<string, string>,
): Promise<AuthorizeOutcome> {
  if (outcome.kind !== 'page') throw new Error('not on the login page');
  const action = /<form method="post" action="([^"]*)"/.exec(outcome.html)?.[1];
  if (action === undefined) throw new Error('the page has no form');
  const result = await outcome.jar.follow(new URL(action, outcome.url).href, {
    method: 'POST',
    body: new URLSearchParams(fields),
  });
  if (result.kind === 'page') return { ...result, kind: 'page', jar: outcome.jar, pending: outcome.pending };
  return callback(result.url, outcome.pending, outcome.jar);
}

function callback(url: URL, pending: { verifier: string; state: string }, jar: CookieJar): AuthorizeOutcome {
  const code = url.searchParams.get('code');
  if (code === null || url.searchParams.get('state') !== pending.state) {
    throw new Error(`the callback carries no code or another state: ${url.search}`);
  }
  return { kind: 'callback', code, verifier: pending.verifier, jar };
}

/** Exchanges the code of an {@link authorize} that came back, with `resource` the audience. */
export async function exchangeCode(target: LoginTarget, outcome: AuthorizeOutcome): Promise<Tokens> {
  if (outcome.kind !== 'callback') {
    throw new Error(`the sign-in stopped on a page (HTTP ${outcome.status}): ${outcome.html}`);
  }
  return tokenRequest(target.tokenEndpoint, {
    grant_type: 'authorization_code',
    code: outcome.code,
    redirect_uri: target.redirectUri,
    client_id: target.clientId,
    code_verifier: outcome.verifier,
    resource: target.audience,
  });
}

/** The refresh grant as a public client sends it; `resource` when given. */
export async function refresh(
  target: LoginTarget,
  refreshToken: string,
  resource?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(target.tokenEndpoint, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: target.clientId,
      ...(resource === undefined ? {} : { resource }),
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** {@link refresh} that must succeed, as tokens. */
export async function refreshTokens(
  target: LoginTarget,
  refreshToken: string,
  resource?: string,
): Promise<Tokens> {
  const { status, body } = await refresh(target, refreshToken, resource);
  if (status !== 200) throw new Error(`the refresh grant answered ${status}: ${JSON.stringify(body)}`);
  return asTokens(body);
}

async function tokenRequest(tokenEndpoint: string, form: Record<string, string>): Promise<Tokens> {
  const response = await fetch(tokenEndpoint, { method: 'POST', body: new URLSearchParams(form) });
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200)
    throw new Error(`the token endpoint answered ${response.status}: ${JSON.stringify(body)}`);
  return asTokens(body);
}

function asTokens(body: Record<string, unknown>): Tokens {
  const { access_token: accessToken, id_token: idToken, refresh_token: refreshToken } = body;
  if (typeof accessToken !== 'string' || typeof idToken !== 'string' || typeof refreshToken !== 'string') {
    throw new Error(`the token response lacks a token: ${Object.keys(body).join(', ')}`);
  }
  return { accessToken, idToken, refreshToken, response: body };
}

/** The text of the login page's alert, if any. */
export function alertOf(html: string): string | undefined {
  return /<p role="alert">([^<]*)<\/p>/.exec(html)?.[1];
}

/** The form of a page whose script submits it on load, with its hidden fields. */
function autoSubmittedForm(html: string): { action: string; fields: URLSearchParams } | undefined {
  if (!html.includes('document.forms[0].submit()')) return undefined;
  const action = /<form method="post" action="([^"]*)"/.exec(html)?.[1];
  if (action === undefined) return undefined;
  const fields = new URLSearchParams();
  for (const input of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"\/?>/g)) {
    fields.append(input[1] ?? '', input[2] ?? '');
  }
  return { action, fields };
}
