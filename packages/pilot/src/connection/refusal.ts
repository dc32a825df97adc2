/**
 * Why a pilot cannot have the session it asked for, as stable codes a page maps to words, and the
 * token source's errors: which are final (a refusal) and which pass (retried with backoff).
 */
import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of a {@link PilotRefusal}. Pages branch on these, never on the message.
 *
 * - `forbidden`: no access to this robot (the token endpoint's 403, or signalling's `forbidden`);
 * - `unknown-robot`: no such robot, or none the person may see (the token endpoint's 404);
 * - `robot-offline`: the robot has not been connected to the service since the page asked (not a
 *   denial: the connection asks again after each backoff, and is denied only with `reconnect: false`);
 * - `token-refused`: the pilot session token is expired, revoked or not valid;
 * - `signed-out`: the person's sign-in is over (the token endpoint's 401): sign in again;
 * - `request-refused`: the token endpoint refused the request otherwise (another 4xx but 429);
 * - `robot-denied`: the robot refused the session (busy, token in use, ...: its reason is the message);
 * - `driver-slot-held`: not a denial: a `drive` session admitted as an observer because someone
 *   else holds the driver slot (the connection stays up; see `PilotConnection.refusal`).
 */
export const PILOT_REFUSAL_CODES = [
  'forbidden',
  'unknown-robot',
  'robot-offline',
  'token-refused',
  'signed-out',
  'request-refused',
  'robot-denied',
  'driver-slot-held',
] as const;

/** One of {@link PILOT_REFUSAL_CODES}. */
export type PilotRefusalCode = (typeof PILOT_REFUSAL_CODES)[number];

/** A refusal: its stable code and a message that says what happened and what to do. */
export interface PilotRefusal {
  readonly code: PilotRefusalCode;
  readonly message: string;
}

/** Codes of {@link PilotTokenError}. */
export type PilotTokenErrorCode =
  /** The token endpoint answered with an error status (see `status`). */
  | 'http'
  /** The token endpoint could not be reached. */
  | 'network'
  /** It answered 2xx without a token. */
  | 'protocol';

/**
 * A token source failed (`PilotToken` as a function). Throw it from your own token function to
 * say whether the failure is final: with a `status` of 400..499 other than 429 the connection is
 * `denied`; without one, or with 429 or 5xx, it retries with backoff and says so.
 */
export class PilotTokenError extends CodedError<PilotTokenErrorCode> {
  override readonly name = 'PilotTokenError';
  /** The HTTP status, for `http`. */
  readonly status: number | undefined;
  /** The service's error code (`error.code` of its body), when it sent one. */
  readonly apiCode: string | undefined;

  constructor(
    code: PilotTokenErrorCode,
    message: string,
    options: { status?: number; apiCode?: string; cause?: unknown } = {},
  ) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.apiCode = options.apiCode;
  }
}

/** Whether `err` is a {@link PilotTokenError}, optionally with one `code`. */
export const isPilotTokenError = codedErrorGuard(PilotTokenError);

/**
 * The refusal a token source's error means, or `undefined` when it may pass (retry). A 4xx
 * status other than 429 is final: on a {@link PilotTokenError}, or on any error object carrying
 * a numeric `status` (a page's own fetch wrapper).
 */
export function refusalOfTokenError(err: unknown): PilotRefusal | undefined {
  const status =
    typeof err === 'object' && err !== null && typeof (err as { status?: unknown }).status === 'number'
      ? (err as { status: number }).status
      : undefined;
  if (status === undefined || status < 400 || status > 499 || status === 429) return undefined;
  const said = err instanceof Error && err.message !== '' ? err.message : `HTTP ${status}`;
  switch (status) {
    case 401:
      return { code: 'signed-out', message: `your sign-in is over or not valid; sign in again (${said})` };
    case 403:
      return { code: 'forbidden', message: `no access to this robot: ${said}` };
    case 404:
      return { code: 'unknown-robot', message: `no such robot, or none you may see: ${said}` };
    default:
      return { code: 'request-refused', message: `the session token was refused: ${said}` };
  }
}

/** Options of {@link fetchSessionToken}. */
export interface FetchSessionTokenOptions {
  readonly robotId: string;
  readonly scope: 'drive' | 'observe';
  /** The person's access token (console sign-in) or an API key, sent as a bearer token. */
  readonly accessToken?: string;
  /** svc-cloud's origin (default: the page's own, a relative URL). */
  readonly baseUrl?: string;
  /** Default `globalThis.fetch`. */
  readonly fetch?: typeof fetch;
}

/**
 * Mints a pilot session token (`POST /api/v1/session-tokens`), for use as the connection's token
 * function: `token: () => fetchSessionToken({ robotId, scope, accessToken })`.
 *
 * @throws {PilotTokenError} `network` when svc-cloud cannot be reached, `http` with the status and
 *   the service's code and message when it refuses, `protocol` when it answers without a token.
 */
export async function fetchSessionToken(options: FetchSessionTokenOptions): Promise<string> {
  const doFetch = options.fetch ?? globalThis.fetch;
  const url = `${options.baseUrl ?? ''}/api/v1/session-tokens`;
  let response: Response;
  try {
    response = await doFetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(options.accessToken !== undefined && { authorization: `Bearer ${options.accessToken}` }),
      },
      body: JSON.stringify({ robotId: options.robotId, scope: options.scope }),
    });
  } catch (err) {
    throw new PilotTokenError(
      'network',
      `svc-cloud could not be reached for a session token (${err instanceof Error ? err.message : String(err)}); check the network`,
      { cause: err },
    );
  }
  const body = (await response.json().catch(() => ({}))) as {
    token?: unknown;
    error?: { code?: unknown; message?: unknown };
  };
  if (!response.ok) {
    const apiCode = typeof body.error?.code === 'string' ? body.error.code : undefined;
    const message = typeof body.error?.message === 'string' ? body.error.message : `HTTP ${response.status}`;
    throw new PilotTokenError('http', message, {
      status: response.status,
      ...(apiCode !== undefined && { apiCode }),
    });
  }
  if (typeof body.token !== 'string' || body.token === '') {
    throw new PilotTokenError('protocol', `svc-cloud answered ${response.status} without a session token`);
  }
  return body.token;
}

/** The claims of a JWT, read without verifying it (the robot verifies): `undefined` when unreadable. */
function tokenClaims(token: string): Record<string, unknown> | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined || payload === '') return undefined;
  try {
    const base64 = payload.replace(/-/g, '+').replace(/_/g, '/');
    const claims: unknown = JSON.parse(atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4)));
    return typeof claims === 'object' && claims !== null ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `scope` claim of a pilot session token (a JWT), read without verifying it (the robot
 * verifies): `undefined` when it cannot be read.
 */
export function tokenScope(token: string): 'drive' | 'observe' | undefined {
  const scope = tokenClaims(token)?.scope;
  return scope === 'drive' || scope === 'observe' ? scope : undefined;
}

/** A pilot session token's `exp` claim in ms since the epoch, read without verifying it; `undefined` when unreadable. */
export function tokenExpiryMs(token: string): number | undefined {
  const exp = tokenClaims(token)?.exp;
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}
