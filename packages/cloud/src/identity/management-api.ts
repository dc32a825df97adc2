import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import { normalizeEmail } from './accounts.js';
import { readBody, sendJson } from './http.js';
import { MAX_ONE_TIME_TOKEN_TTL_SEC, type OneTimeTokens } from './one-time-tokens.js';

/**
 * The machine-to-machine client of the provider's Logto-compatible management API: with it the
 * provider also serves `POST <issuer>/api/one-time-tokens`, and `<issuer>/oidc/token` as a second
 * path of its token endpoint, so svc-cloud's Logto invitation step works against it unchanged with
 * `SVC_LOGTO_ENDPOINT=<issuer>`.
 */
export interface ManagementApiOptions {
  /** Client id of the M2M client (client credentials, `client_secret_basic` or `client_secret_post`). */
  readonly clientId: string;
  readonly clientSecret: string;
  /**
   * Resource indicator of the management API, the `aud` of the M2M client's access token (scope `all`).
   * Default {@link DEFAULT_MANAGEMENT_RESOURCE}, as svc-cloud's `SVC_LOGTO_MANAGEMENT_RESOURCE`.
   */
  readonly resource?: string | undefined;
}

/** Default resource indicator of the management API: Logto's, so svc-cloud's default fits. */
export const DEFAULT_MANAGEMENT_RESOURCE = 'https://default.logto.app/api';
/** The one scope of the management API, the one Logto's M2M apps ask for. */
export const MANAGEMENT_SCOPE = 'all';
/** Path of the one-time token endpoint below the issuer. */
export const ONE_TIME_TOKENS_PATH = '/api/one-time-tokens';
/** Path below the issuer where Logto keeps its token endpoint (`<endpoint>/oidc/token`). */
export const LOGTO_TOKEN_PATH = '/oidc/token';

/** Logto's default lifetime of a one-time token when the request names none, seconds. */
const DEFAULT_EXPIRES_IN_SEC = 600;
const MAX_BODY_BYTES = 8 * 1024;

/**
 * `POST <issuer>/api/one-time-tokens` `{email, expiresIn?}` with `Authorization: Bearer <M2M access
 * token>`: answers 201 `{id, token, email, status, context, expiresAt, createdAt}` (Logto's shape,
 * times in epoch ms). Without a valid M2M access token for the management resource: 401 before the
 * body is read. Errors are Logto-shaped `{code, message}` and never echo a token.
 */
export async function handleOneTimeTokenRequest(
  req: IncomingMessage,
  res: ServerResponse,
  context: {
    readonly provider: Provider;
    readonly clientId: string;
    readonly resource: string;
    readonly tokens: OneTimeTokens;
    readonly now: () => number;
  },
): Promise<void> {
  if (req.method !== 'POST') {
    req.resume();
    sendJson(res, 405, { code: 'request.method_not_allowed', message: 'use POST' }, { allow: 'POST' });
    return;
  }
  const bearer = /^Bearer ([^\s]+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const credential = bearer === undefined ? undefined : await context.provider.ClientCredentials.find(bearer);
  if (
    credential === undefined ||
    credential.clientId !== context.clientId ||
    credential.aud !== context.resource
  ) {
    req.resume();
    sendJson(
      res,
      401,
      {
        code: 'auth.unauthorized',
        message:
          bearer === undefined
            ? 'an M2M access token is required: Authorization: Bearer <token>'
            : 'the access token is not a valid M2M token for the management API',
      },
      { 'www-authenticate': 'Bearer error="invalid_token"' },
    );
    return;
  }
  const text = await readBody(req, MAX_BODY_BYTES);
  if (text === undefined) {
    sendJson(res, 413, { code: 'request.too_large', message: `the body is over ${MAX_BODY_BYTES} bytes` });
    return;
  }
  const input = parseInput(text);
  if (typeof input === 'string') {
    sendJson(res, 400, { code: 'guard.invalid_input', message: input });
    return;
  }
  const createdAt = context.now();
  const token = await context.tokens.issue(input.email, input.expiresIn);
  sendJson(res, 201, {
    id: randomUUID(),
    token,
    email: input.email,
    status: 'active',
    context: {},
    expiresAt: createdAt + input.expiresIn * 1000,
    createdAt,
  });
}

/** The request body, or a message saying what is wrong with it. */
function parseInput(text: string): { email: string; expiresIn: number } | string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'the body is not JSON';
  }
  if (typeof body !== 'object' || body === null) return 'the body is not a JSON object';
  const { email: emailText, expiresIn } = body as { email?: unknown; expiresIn?: unknown };
  const email = typeof emailText === 'string' ? normalizeEmail(emailText) : undefined;
  if (email === undefined) return 'email: expected an email address';
  if (expiresIn === undefined) return { email, expiresIn: DEFAULT_EXPIRES_IN_SEC };
  if (
    typeof expiresIn !== 'number' ||
    !Number.isInteger(expiresIn) ||
    expiresIn < 1 ||
    expiresIn > MAX_ONE_TIME_TOKEN_TTL_SEC
  ) {
    return `expiresIn: expected whole seconds in 1..${MAX_ONE_TIME_TOKEN_TTL_SEC}`;
  }
  return { email, expiresIn };
}
