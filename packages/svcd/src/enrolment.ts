/**
 * Enrolment (spec 3, 4, 7): the robot sends its public key with a one-time enrolment token to
 * `POST <base>/api/v1/enrol`, and the service registers the key for the robot's id.
 */

import { createHash } from 'node:crypto';
import { readFile, unlink } from 'node:fs/promises';
import { CodedError, codedErrorGuard, type Logger, redactText, redactUrl } from '@svc/runtime';
import { writePrivateFile } from '@svc/runtime/node';
import { z } from 'zod';
import type { DaemonConfig } from './config.js';
import { loadOrCreateCredential, type RobotCredential } from './credential.js';

/**
 * Stable codes of {@link EnrolmentError}. Callers branch on `code`, never on the message.
 *
 * - `token-used`: the token was already redeemed (HTTP 410).
 * - `token-expired`: the token is past its lifetime (HTTP 410).
 * - `token-revoked`: an admin revoked the token (HTTP 410).
 * - `token-invalid`: the service does not know the token (HTTP 401), or it is not shaped like one
 *   (`svc_enr_...`, checked before anything is sent).
 * - `robot-enrolled`: the robot id is enrolled in another org or with another key (HTTP 409).
 * - `rejected`: the service refused the request for another reason (400, 404, a redirect, ...).
 * - `rate-limited`: the service asked the robot to slow down (HTTP 429).
 * - `unreachable`: no answer (connection refused, DNS, TLS, timeout).
 * - `server-error`: the service failed (5xx) or answered something that does not fit the contract.
 * - `bad-url`: the signalling or base URL the enrolment address is derived from cannot be used.
 */
export type EnrolmentErrorCode =
  | 'token-used'
  | 'token-expired'
  | 'token-revoked'
  | 'token-invalid'
  | 'robot-enrolled'
  | 'rejected'
  | 'rate-limited'
  | 'unreachable'
  | 'server-error'
  | 'bad-url';

/** An enrolment that did not happen. The message says what to do; it never contains the token. */
export class EnrolmentError extends CodedError<EnrolmentErrorCode> {
  override readonly name = 'EnrolmentError';
}

/** True when `err` is an {@link EnrolmentError}, optionally with the given code. */
export const isEnrolmentError = codedErrorGuard(EnrolmentError);

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const DEFAULT_TIMEOUT_MS = 15_000;
const NEW_TOKEN =
  'create a new one in the console (Fleet, Create enrolment token) and run svcd enrol --token <new token>';

/**
 * The base URL of the service's HTTP API, derived from a signalling URL (spec 4): `wss://<host>/ws`
 * gives `https://<host>`, `ws://` gives `http://` (loopback hosts only, for development). A path in
 * front of the final `/ws` is kept (`wss://h/svc/ws` gives `https://h/svc`); query and fragment are
 * dropped.
 *
 * @param signalUrl `agent.signal_url` from the configuration.
 * @param override `--signal-url`: a signalling URL derived the same way, or an `https://` base URL.
 * @throws {EnrolmentError} `bad-url` when the URL is not one of those, or uses cleartext to a host
 *   other than loopback (the token would travel unencrypted).
 */
export function enrolmentBaseUrl(signalUrl: string, override?: string): string {
  const source = override ?? signalUrl;
  const what = override === undefined ? 'signal_url' : '--signal-url';
  let url: URL;
  try {
    url = new URL(source);
  } catch (cause) {
    throw new EnrolmentError(
      'bad-url',
      `${what} "${redactUrl(source)}" is not a URL; give the signalling address, wss://<host>/ws`,
      { cause },
    );
  }
  const protocol = { 'wss:': 'https:', 'ws:': 'http:', 'https:': 'https:', 'http:': 'http:' }[url.protocol];
  if (protocol === undefined) {
    throw new EnrolmentError(
      'bad-url',
      `${what} "${redactUrl(source)}" has scheme ${url.protocol}; give the signalling address, wss://<host>/ws`,
    );
  }
  if (protocol === 'http:' && !LOOPBACK.has(url.hostname)) {
    throw new EnrolmentError(
      'bad-url',
      `${what} "${redactUrl(source)}" is not encrypted; use wss:// (ws:// and http:// only for localhost)`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new EnrolmentError(
      'bad-url',
      `${what} "${redactUrl(source)}" must not carry a user name or password`,
    );
  }
  let pathname = url.pathname.replace(/\/+$/, '');
  if (url.protocol === 'wss:' || url.protocol === 'ws:') pathname = pathname.replace(/\/ws$/, '');
  return `${protocol}//${url.host}${pathname}`;
}

/** Options of {@link enrol}. */
export interface EnrolOptions {
  /** The service's base URL, e.g. from {@link enrolmentBaseUrl}. */
  baseUrl: string;
  /** `agent.robot_id`. */
  robotId: string;
  /** The robot's key; only the public half is sent. */
  credential: Pick<RobotCredential, 'publicKey'>;
  /** The one-time enrolment token, `svc_enr_...`. */
  token: string;
  /** Fetch implementation. Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Time limit of the request, in milliseconds. Default 15000. */
  timeoutMs?: number;
}

/** What the service answered to a successful enrolment. */
export interface EnrolmentResult {
  readonly robotId: string;
  readonly orgId: string;
  /** ISO 8601 time of the enrolment, as the service reported it. */
  readonly enrolledAt: string;
  /** The base URL the robot enrolled with. */
  readonly baseUrl: string;
}

const successSchema = z.object({
  robotId: z.string().min(1),
  orgId: z.string().min(1),
  enrolledAt: z.string().min(1),
});

const errorSchema = z.object({
  error: z.object({ code: z.string(), message: z.string().optional() }),
});

/**
 * Redeems `token` for the robot: `POST <baseUrl>/api/v1/enrol` with `{ robotId, publicKey, token }`.
 *
 * @throws {EnrolmentError} with a code naming what went wrong and a message saying what to do.
 */
export async function enrol(options: EnrolOptions): Promise<EnrolmentResult> {
  const { robotId, token } = options;
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  if (!/^svc_enr_\S+$/.test(token)) {
    throw new EnrolmentError(
      'token-invalid',
      'the enrolment token is not shaped like one (it starts with svc_enr_); copy it again from the console ' +
        '(Fleet, Create enrolment token)',
    );
  }
  const endpoint = `${baseUrl}/api/v1/enrol`;
  const shown = redactUrl(endpoint);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const doFetch = options.fetch ?? globalThis.fetch;
  let response: Response;
  let text: string;
  try {
    response = await doFetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ robotId, publicKey: options.credential.publicKey, token }),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await response.text();
  } catch (cause) {
    const reason =
      (cause as Error).name === 'TimeoutError'
        ? `no answer within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}`
        : describeNetworkError(cause);
    throw new EnrolmentError(
      'unreachable',
      `cannot reach ${shown} (${scrub(reason, token)}); check signal_url (or --signal-url) and the robot's network, then try again`,
      { cause },
    );
  }
  const status = response.status;
  if (status === 200 || status === 201) {
    const parsed = successSchema.safeParse(parseJson(text));
    if (!parsed.success) {
      throw new EnrolmentError(
        'server-error',
        `${shown} answered ${status} without { robotId, orgId, enrolledAt }; is signal_url the address of svc-cloud?`,
      );
    }
    if (parsed.data.robotId !== robotId) {
      throw new EnrolmentError(
        'server-error',
        `${shown} answered for robot "${parsed.data.robotId}" instead of "${robotId}"; the enrolment is not trusted`,
      );
    }
    return { ...parsed.data, baseUrl };
  }
  const body = errorSchema.safeParse(parseJson(text));
  const serverCode = body.success ? body.data.error.code : undefined;
  const serverMessage = body.success ? body.data.error.message : undefined;
  const said =
    serverMessage === undefined || serverMessage === ''
      ? ''
      : ` (the service said: ${scrub(serverMessage, token).slice(0, 300)})`;
  switch (status) {
    case 410:
      if (serverCode === 'enrolment-token-expired')
        throw new EnrolmentError('token-expired', `this enrolment token has expired; ${NEW_TOKEN}`);
      if (serverCode === 'enrolment-token-revoked')
        throw new EnrolmentError('token-revoked', `this enrolment token was revoked; ${NEW_TOKEN}`);
      throw new EnrolmentError('token-used', `this enrolment token was already used; ${NEW_TOKEN}`);
    case 401:
      throw new EnrolmentError(
        'token-invalid',
        `the service at ${redactUrl(baseUrl)} does not know this enrolment token (mistyped, or made on another ` +
          `service); copy it again from the console or ${NEW_TOKEN}`,
      );
    case 409:
      throw new EnrolmentError(
        'robot-enrolled',
        `robot "${robotId}" is already enrolled in another organisation or with another key; delete it in the ` +
          'console (Fleet) and enrol again with a new token',
      );
    case 400:
      throw new EnrolmentError('rejected', `the service refused the enrolment request as invalid${said}`);
    case 429: {
      const after = response.headers.get('retry-after');
      const wait = after !== null && /^\d+$/.test(after) ? `${after} s` : 'a minute';
      throw new EnrolmentError(
        'rate-limited',
        `the service is receiving too many enrolment requests; wait ${wait} and try again`,
      );
    }
    case 404:
      throw new EnrolmentError(
        'rejected',
        `${shown} does not exist (404); check that signal_url (or --signal-url) names the svc-cloud service`,
      );
    default:
      if (status >= 500) {
        throw new EnrolmentError(
          'server-error',
          `the service failed (HTTP ${status})${said}; try again later, and report it if it persists`,
        );
      }
      if (status >= 300 && status < 400) {
        const location = response.headers.get('location');
        throw new EnrolmentError(
          'rejected',
          `${shown} redirects (HTTP ${status}${location === null ? '' : ` to ${redactUrl(location)}`}); ` +
            'set --signal-url to the service address itself',
        );
      }
      throw new EnrolmentError('rejected', `the service refused the enrolment (HTTP ${status})${said}`);
  }
}

/** The file in which a successful enrolment is remembered: `<credential_path>.enrolled`. */
export function enrolmentRecordPath(credentialPath: string): string {
  return `${credentialPath}.enrolled`;
}

/**
 * A successful enrolment, remembered next to the credential so that a token left in the
 * configuration is not redeemed again at the next start (it would fail: tokens are single use).
 * Holds the SHA-256 of the token, never the token.
 */
export interface EnrolmentRecord extends EnrolmentResult {
  /** The public key that was registered. */
  readonly publicKey: string;
  /** SHA-256 of the redeemed token, hex. */
  readonly tokenSha256: string;
}

const recordSchema = z.object({
  robotId: z.string(),
  orgId: z.string(),
  enrolledAt: z.string(),
  baseUrl: z.string(),
  publicKey: z.string(),
  tokenSha256: z.string().regex(/^[0-9a-f]{64}$/),
});

/** Reads the enrolment record, or `undefined` when there is none or it is unreadable. */
export async function readEnrolmentRecord(file: string): Promise<EnrolmentRecord | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const parsed = recordSchema.safeParse(parseJson(text));
  return parsed.success ? parsed.data : undefined;
}

/** Options of {@link redeemEnrolmentToken}. */
export interface RedeemOptions extends Omit<EnrolOptions, 'credential'> {
  /** The robot's key; the record is kept next to its file. */
  credential: Pick<RobotCredential, 'publicKey' | 'path'>;
  /** Where to report a record that cannot be written. */
  logger?: Logger;
}

/** What {@link redeemEnrolmentToken} did. */
export interface RedeemOutcome {
  /** `enrolled`: the token was redeemed now; `already-redeemed`: an earlier run redeemed it. */
  readonly status: 'enrolled' | 'already-redeemed';
  readonly record: EnrolmentRecord;
}

/**
 * Enrols once per token: when the record next to the credential shows that this token already
 * enrolled this robot id and key with this service, nothing is sent; otherwise {@link enrol} runs
 * and its success is recorded (mode 0600, written atomically).
 *
 * @throws {EnrolmentError} as {@link enrol}.
 */
export async function redeemEnrolmentToken(options: RedeemOptions): Promise<RedeemOutcome> {
  const { credential, robotId } = options;
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const tokenSha256 = createHash('sha256').update(options.token).digest('hex');
  const file = enrolmentRecordPath(credential.path);
  const earlier = await readEnrolmentRecord(file);
  if (
    earlier !== undefined &&
    earlier.tokenSha256 === tokenSha256 &&
    earlier.robotId === robotId &&
    earlier.baseUrl === baseUrl &&
    earlier.publicKey === credential.publicKey
  ) {
    return { status: 'already-redeemed', record: earlier };
  }
  const result = await enrol({ ...options, baseUrl });
  const record: EnrolmentRecord = { ...result, publicKey: credential.publicKey, tokenSha256 };
  try {
    await writePrivateFile(file, `${JSON.stringify(record, null, 2)}\n`);
  } catch (err) {
    options.logger?.warn(
      { file, err: String(err) },
      'enrolled, but the record of it cannot be written; a later start will try the (now used) token again',
    );
  }
  return { status: 'enrolled', record };
}

/** Options of {@link enrolOnStart}. */
export interface EnrolOnStartOptions {
  /** The daemon configuration; its `agent.enrolment_token` already holds `SVC_ENROLMENT_TOKEN` when set. */
  config: DaemonConfig;
  /** The credential file. Default `config.agent.credential_path`. */
  credentialPath?: string;
  logger: Logger;
  /** A signalling URL (or base URL) overriding `agent.signal_url` for the enrolment address. */
  signalUrl?: string;
  /** Fetch implementation. Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Time limit of the enrolment request, in milliseconds. Default 15000. */
  timeoutMs?: number;
}

/** What happened to the robot's identity at start. */
export type StartEnrolment =
  /** The token was redeemed now. */
  | { readonly status: 'enrolled'; readonly credential: RobotCredential; readonly record: EnrolmentRecord }
  /** An earlier start (or `svcd enrol`) redeemed this token; nothing was sent. */
  | {
      readonly status: 'already-redeemed';
      readonly credential: RobotCredential;
      readonly record: EnrolmentRecord;
    }
  /** No token is configured. */
  | { readonly status: 'no-token'; readonly credential: RobotCredential }
  /** Enrolment failed, but the robot has an earlier key: logged as a warning, the daemon goes on. */
  | { readonly status: 'failed'; readonly credential: RobotCredential; readonly error: EnrolmentError };

/** Codes after which the service has certainly not registered the key sent. */
const KEY_NOT_REGISTERED: ReadonlySet<EnrolmentErrorCode> = new Set([
  'token-used',
  'token-expired',
  'token-revoked',
  'token-invalid',
  'robot-enrolled',
  'rejected',
  'rate-limited',
  'bad-url',
]);

/**
 * The daemon's identity at start (spec 3 and 7): loads or creates the credential and, when an
 * enrolment token is configured, redeems it.
 *
 * - First run (this call created the credential file) and the enrolment fails: fatal, the
 *   {@link EnrolmentError} is thrown for the CLI to print before exiting non-zero. When the service
 *   certainly did not register the new key (any refusal; not a timeout or a 5xx), the new credential
 *   file is removed again, so the next start is a first run too and fails as loudly until the token
 *   is fixed, rather than running as an unenrolled robot.
 * - Existing credential and the enrolment fails: a warning, and the daemon continues (`failed`).
 * - Success is recorded in `<credential_path>.enrolled` (robot id, base URL, public key, SHA-256 of
 *   the token). A later start with the same token still in the configuration or environment finds the
 *   record and sends nothing (`already-redeemed`), so a used token never stops the daemon. The
 *   configuration file is not rewritten; the log says the token may be removed.
 * - No token: a new credential is logged with the remedy (the robot must be enrolled; until then the
 *   signalling server denies it with `unknown-robot`, unless it runs with open dev enrolment).
 *
 * @throws {CredentialError} when the credential file cannot be used; {@link EnrolmentError} on a
 *   first-run enrolment failure.
 */
export async function enrolOnStart(options: EnrolOnStartOptions): Promise<StartEnrolment> {
  const { config, logger } = options;
  const { robot_id: robotId, signal_url: signalUrl, enrolment_token: token } = config.agent;
  const credentialPath = options.credentialPath ?? config.agent.credential_path;
  const credential = await loadOrCreateCredential(credentialPath, { logger });
  if (token === undefined) {
    if (credential.created) {
      logger.warn(
        { robotId, file: credentialPath, publicKey: credential.publicKey },
        'created a new robot key; the robot is not enrolled yet and the signalling server will deny it ' +
          '(unknown-robot) unless it allows open dev enrolment: create an enrolment token in the console ' +
          '(Fleet, Create enrolment token), then run svcd --config <file> enrol --token <token>, or start with ' +
          'SVC_ENROLMENT_TOKEN=<token>',
      );
    }
    return { status: 'no-token', credential };
  }
  try {
    const baseUrl = enrolmentBaseUrl(signalUrl, options.signalUrl);
    const outcome = await redeemEnrolmentToken({
      baseUrl,
      robotId,
      credential,
      token,
      logger,
      ...(options.fetch !== undefined && { fetch: options.fetch }),
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    });
    const { record } = outcome;
    const fields = { robotId, orgId: record.orgId, service: redactUrl(record.baseUrl) };
    if (outcome.status === 'already-redeemed') {
      logger.info(
        { ...fields, enrolledAt: record.enrolledAt },
        'the configured enrolment token was redeemed earlier; it may be removed from the configuration',
      );
    } else {
      logger.info(
        fields,
        'robot enrolled; the enrolment token is used up and may be removed from the configuration',
      );
    }
    return { status: outcome.status, credential, record };
  } catch (err) {
    if (!isEnrolmentError(err)) throw err;
    if (credential.created) {
      if (KEY_NOT_REGISTERED.has(err.code)) await unlink(credential.path).catch(() => {});
      throw err;
    }
    logger.warn(
      { robotId, code: err.code },
      `enrolment failed; continuing with the existing robot key: ${err.message}`,
    );
    return { status: 'failed', credential, error: err };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A short reason for a failed request: the system error code, or the message. */
function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return redactText(message);
}

/** Removes the token from text that came from elsewhere (a server message, a library error). */
function scrub(text: string, token: string): string {
  return redactText(token === '' ? text : text.split(token).join('***'));
}
