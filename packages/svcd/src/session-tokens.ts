/**
 * The robot's own check of pilot session tokens (spec 5.2): ES256 JWTs minted by the service, whose
 * public keys it publishes at `/.well-known/svc-session-jwks.json`. The keys are cached on disk so
 * sessions keep working while the service is unreachable.
 */

import { randomBytes } from 'node:crypto';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import {
  type Clock,
  CodedError,
  codedErrorGuard,
  type Logger,
  redactUrl,
  systemClock,
  type TimerHandle,
} from '@svc/runtime';
import {
  createLocalJWKSet,
  decodeProtectedHeader,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
  errors as joseErrors,
  jwtVerify,
} from 'jose';
import { z } from 'zod';

/**
 * Stable codes of {@link SessionTokenError}. Callers branch on `code`, never on the message.
 *
 * - `malformed`: not a compact JWS pilot session token (header, `typ`, `kid`, claims `sub`, `jti`,
 *   `exp`), or not valid yet (`nbf`).
 * - `bad-alg`: any algorithm other than ES256 (`none`, HMAC, RSA, ...).
 * - `unknown-key`: no published key has the token's `kid`, even after fetching the keys again.
 * - `bad-signature`: the signature does not verify with the key its `kid` names.
 * - `expired`: `exp` is in the past beyond the clock tolerance.
 * - `wrong-robot`: `aud` is not this robot's id.
 * - `wrong-issuer`: `iss` is not the service this robot is enrolled with.
 * - `bad-scope`: `scope` is neither `drive` nor `observe`.
 */
export type SessionTokenErrorCode =
  | 'malformed'
  | 'bad-alg'
  | 'unknown-key'
  | 'bad-signature'
  | 'expired'
  | 'wrong-robot'
  | 'wrong-issuer'
  | 'bad-scope';

/**
 * A refused pilot session token. The message is a short reason fit to send to the pilot in
 * `denied`; it never contains the token or key material.
 */
export class SessionTokenError extends CodedError<SessionTokenErrorCode> {
  override readonly name = 'SessionTokenError';
}

/** True when `err` is a {@link SessionTokenError}, optionally with the given code. */
export const isSessionTokenError = codedErrorGuard(SessionTokenError);

/** Scopes a pilot session token may carry. */
export const SESSION_SCOPES = ['drive', 'observe'] as const;
/** A session token's scope: `drive` may hold the driver slot, `observe` only watches. */
export type SessionScope = (typeof SESSION_SCOPES)[number];

/** The claims of a verified pilot session token that the daemon acts on. */
export interface SessionClaims {
  /** The pilot (user id, or whatever the minting backend names). */
  readonly sub: string;
  readonly scope: SessionScope;
  /** Token id, unique per token. */
  readonly jti: string;
  /** Expiry, seconds since the epoch. */
  readonly exp: number;
  /** The organisation the session was granted in, when the token names one. */
  readonly org?: string;
  /**
   * Who minted the token on the pilot's behalf (e.g. a customer backend's API key): the `act`
   * claim when it is a string, or its `sub` when it is an RFC 8693 actor object.
   */
  readonly act?: string;
}

/** The JOSE `typ` of pilot session tokens. */
export const SESSION_TOKEN_TYPE = 'svc-session+jwt';
/** Path of the service's session-token JWKS below its base URL. */
export const SESSION_JWKS_PATH = '/.well-known/svc-session-jwks.json';

/** Options of {@link SessionTokenVerifier}. */
export interface SessionTokenVerifierOptions {
  /** The service's base URL (e.g. from `enrolmentBaseUrl`); tokens must carry it as `iss`. */
  baseUrl: string;
  /** `agent.robot_id`; tokens must carry it as `aud`. */
  robotId: string;
  /** Where the last good JWKS is kept between runs (public keys only, mode 0644). */
  cacheFile: string;
  logger: Logger;
  /** Fetch implementation. Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /**
   * Time and timers: token expiry against the wall clock, the refetch cooldown and the refresh
   * period on the monotonic one. Default `systemClock`.
   */
  clock?: Clock;
  /** Period of the background refresh, in milliseconds. Default 300000 (5 min). */
  refreshIntervalMs?: number;
  /** Shortest time between two fetches caused by an unknown `kid`, in milliseconds. Default 10000. */
  unknownKidCooldownMs?: number;
  /** Time limit of each JWKS request, in milliseconds. Default 10000. */
  timeoutMs?: number;
}

/** Longest token looked at; a real one is well under 1 KB, and a pilot must not make the robot parse megabytes. */
const MAX_TOKEN_CHARS = 8192;

/** Leeway on `exp` and `nbf`, in seconds. */
const CLOCK_TOLERANCE_SEC = 5;

/** One published key as the verifier keeps it: an ES256 (EC P-256) public JWK with a `kid`. */
const publicKeySchema = z.object({
  kty: z.literal('EC'),
  crv: z.literal('P-256'),
  x: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
  y: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
  kid: z.string().min(1),
  alg: z.literal('ES256').optional(),
  use: z.literal('sig').optional(),
});

type PublicKeyJwk = z.infer<typeof publicKeySchema>;

const jwksSchema = z.object({ keys: z.array(z.unknown()) });

/**
 * Verifies pilot session tokens with the service's published keys, pinned to ES256.
 *
 * Keys: {@link SessionTokenVerifier.start} loads the cache file, then fetches
 * `<baseUrl>/.well-known/svc-session-jwks.json`; the keys are fetched again every 5 minutes and when
 * a token names an unknown `kid` (at most once per 10 s, so made-up `kid`s cannot flood the
 * service). A failed fetch is logged and the keys already held stay in use.
 *
 * Cache file format: `{ "baseUrl": <service>, "fetchedAt": <ISO time>, "keys": [<public JWKs>] }`,
 * only the members of each key that verification needs; a cache written for another service is
 * ignored.
 */
export class SessionTokenVerifier {
  readonly #baseUrl: string;
  readonly #robotId: string;
  readonly #cacheFile: string;
  readonly #logger: Logger;
  readonly #fetch: typeof fetch;
  readonly #clock: Clock;
  readonly #refreshIntervalMs: number;
  readonly #cooldownMs: number;
  readonly #timeoutMs: number;
  #keys: readonly PublicKeyJwk[] = [];
  #keySet: ReturnType<typeof createLocalJWKSet> | undefined;
  #inflight: Promise<boolean> | undefined;
  #lastUnknownKidFetch = Number.NEGATIVE_INFINITY;
  #timer: TimerHandle | undefined;

  constructor(options: SessionTokenVerifierOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]/.test(this.#baseUrl))
      throw new TypeError(`baseUrl must be an http(s) URL, got ${redactUrl(options.baseUrl)}`);
    if (options.robotId === '') throw new TypeError('robotId must not be empty');
    this.#robotId = options.robotId;
    this.#cacheFile = options.cacheFile;
    this.#logger = options.logger;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#clock = options.clock ?? systemClock;
    this.#refreshIntervalMs = options.refreshIntervalMs ?? 300_000;
    this.#cooldownMs = options.unknownKidCooldownMs ?? 10_000;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** The `kid`s of the keys currently trusted. */
  get keyIds(): readonly string[] {
    return this.#keys.map((k) => k.kid);
  }

  /**
   * Loads the cached keys, fetches the current ones (a failure is logged, not thrown), and starts the
   * periodic refresh. Resolves once both have been tried.
   */
  async start(): Promise<void> {
    await this.#loadCache();
    await this.refresh();
    if (this.#timer === undefined) {
      this.#timer = this.#clock.setInterval(() => void this.refresh(), this.#refreshIntervalMs);
    }
  }

  /** Stops the periodic refresh. */
  stop(): void {
    this.#clock.clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Fetches the published keys now (concurrent calls share one request).
   * @returns true when usable keys arrived; false when the fetch failed (logged) and the old keys stay.
   */
  refresh(): Promise<boolean> {
    if (this.#inflight === undefined) {
      this.#inflight = this.#fetchKeys().finally(() => {
        this.#inflight = undefined;
      });
    }
    return this.#inflight;
  }

  /**
   * Verifies a pilot session token: ES256 only, a key from the service's JWKS by `kid`, `iss` = the
   * service, `aud` = this robot, `exp` (5 s tolerance), `typ` `svc-session+jwt`, and a `scope` of
   * `drive` or `observe`.
   *
   * @throws {SessionTokenError} with a code naming what was wrong and a reason for the pilot.
   */
  async verify(token: string): Promise<SessionClaims> {
    if (typeof token !== 'string' || token === '')
      throw new SessionTokenError('malformed', 'no session token was presented');
    if (token.length > MAX_TOKEN_CHARS)
      throw new SessionTokenError(
        'malformed',
        `the session token is longer than ${MAX_TOKEN_CHARS} characters`,
      );
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      if (token.split('.').length !== 3) throw new TypeError('not three parts');
      header = decodeProtectedHeader(token);
    } catch (cause) {
      throw new SessionTokenError('malformed', 'the session token is not a compact JWS', { cause });
    }
    if (header.alg !== 'ES256') {
      const alg = typeof header.alg === 'string' ? header.alg.slice(0, 20) : 'missing';
      throw new SessionTokenError('bad-alg', `session token algorithm ${alg} is not accepted; ES256 only`);
    }
    if (header.typ !== SESSION_TOKEN_TYPE)
      throw new SessionTokenError(
        'malformed',
        `not a pilot session token (typ must be ${SESSION_TOKEN_TYPE})`,
      );
    const kid = header.kid;
    if (typeof kid !== 'string' || kid === '')
      throw new SessionTokenError('malformed', 'the session token header names no key (kid)');
    if (!this.#keys.some((k) => k.kid === kid)) {
      const now = this.#clock.now();
      if (this.#inflight !== undefined || now - this.#lastUnknownKidFetch >= this.#cooldownMs) {
        if (this.#inflight === undefined) this.#lastUnknownKidFetch = now;
        await this.refresh();
      }
      if (!this.#keys.some((k) => k.kid === kid)) {
        throw new SessionTokenError(
          'unknown-key',
          this.#keys.length === 0
            ? 'the robot has no session keys yet (the service was unreachable)'
            : 'the session token was signed with a key this robot does not know',
        );
      }
    }
    let payload: JWTPayload;
    try {
      const keySet = this.#keySet;
      if (keySet === undefined) throw new joseErrors.JWKSNoMatchingKey();
      ({ payload } = await jwtVerify(token, keySet, {
        algorithms: ['ES256'],
        audience: this.#robotId,
        issuer: [this.#baseUrl, `${this.#baseUrl}/`],
        typ: SESSION_TOKEN_TYPE,
        clockTolerance: CLOCK_TOLERANCE_SEC,
        currentDate: new Date(this.#clock.wallNow()),
        requiredClaims: ['exp', 'sub', 'jti'],
      }));
    } catch (cause) {
      throw toSessionTokenError(cause);
    }
    return claimsOf(payload);
  }

  async #fetchKeys(): Promise<boolean> {
    const url = `${this.#baseUrl}${SESSION_JWKS_PATH}`;
    const shown = redactUrl(url);
    let body: unknown;
    try {
      const response = await this.#fetch(url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        this.#logger.warn(
          { url: shown, status: response.status },
          'cannot refresh the session-token keys; keeping the keys held',
        );
        return false;
      }
      body = await response.json();
    } catch (err) {
      this.#logger.warn(
        { url: shown, err: describeError(err) },
        'cannot refresh the session-token keys; keeping the keys held',
      );
      return false;
    }
    const keys = usableKeys(body);
    if (keys === undefined) {
      this.#logger.warn(
        { url: shown },
        'the service published no usable ES256 session-token key; keeping the keys held',
      );
      return false;
    }
    const changed = JSON.stringify(keys) !== JSON.stringify(this.#keys);
    this.#setKeys(keys);
    if (changed) {
      this.#logger.info({ kids: keys.map((k) => k.kid) }, 'session-token keys updated');
      await this.#writeCache(keys);
    }
    return true;
  }

  #setKeys(keys: readonly PublicKeyJwk[]): void {
    this.#keys = keys;
    const jwks: JSONWebKeySet = { keys: keys.map((k) => ({ ...k, alg: 'ES256', use: 'sig' }) as JWK) };
    this.#keySet = createLocalJWKSet(jwks);
  }

  async #loadCache(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.#cacheFile, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#logger.warn(
          { file: this.#cacheFile, err: describeError(err) },
          'cannot read the session-key cache',
        );
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const baseUrl = (parsed as { baseUrl?: unknown } | undefined)?.baseUrl;
    const keys = usableKeys(parsed);
    if (keys === undefined || baseUrl !== this.#baseUrl) {
      this.#logger.warn(
        { file: this.#cacheFile },
        'ignoring the session-key cache (unreadable, or written for another service)',
      );
      return;
    }
    this.#setKeys(keys);
  }

  async #writeCache(keys: readonly PublicKeyJwk[]): Promise<void> {
    const file = this.#cacheFile;
    const temporary = path.join(
      path.dirname(file),
      `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
    );
    const text = `${JSON.stringify({ baseUrl: this.#baseUrl, fetchedAt: new Date(this.#clock.wallNow()).toISOString(), keys }, null, 2)}\n`;
    try {
      const handle = await open(temporary, 'wx', 0o644);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, file);
    } catch (err) {
      this.#logger.warn(
        { file, err: describeError(err) },
        'cannot write the session-key cache; sessions will need the service after a restart',
      );
    } finally {
      await unlink(temporary).catch(() => {});
    }
  }
}

/** The ES256 keys of a JWKS (other members of each key dropped), or `undefined` when there are none. */
function usableKeys(body: unknown): PublicKeyJwk[] | undefined {
  const jwks = jwksSchema.safeParse(body);
  if (!jwks.success) return undefined;
  const keys: PublicKeyJwk[] = [];
  for (const candidate of jwks.data.keys) {
    const key = publicKeySchema.safeParse(candidate);
    if (!key.success) continue;
    const { kty, crv, x, y, kid } = key.data;
    if (!keys.some((k) => k.kid === kid)) keys.push({ kty, crv, x, y, kid });
  }
  return keys.length === 0 ? undefined : keys;
}

function claimsOf(payload: JWTPayload): SessionClaims {
  const { sub, jti, exp, scope, org, act } = payload;
  if (typeof sub !== 'string' || sub === '')
    throw new SessionTokenError('malformed', 'the session token names no pilot (sub)');
  if (typeof jti !== 'string' || jti === '')
    throw new SessionTokenError('malformed', 'the session token has no id (jti)');
  if (typeof exp !== 'number')
    throw new SessionTokenError('malformed', 'the session token has no expiry (exp)');
  if (!SESSION_SCOPES.includes(scope as SessionScope))
    throw new SessionTokenError('bad-scope', 'the session token scope must be drive or observe');
  const actor =
    typeof act === 'string'
      ? act
      : typeof act === 'object' && act !== null && typeof (act as { sub?: unknown }).sub === 'string'
        ? (act as { sub: string }).sub
        : undefined;
  return {
    sub,
    jti,
    exp,
    scope: scope as SessionScope,
    ...(typeof org === 'string' && { org }),
    ...(actor !== undefined && { act: actor }),
  };
}

function toSessionTokenError(err: unknown): SessionTokenError {
  if (err instanceof SessionTokenError) return err;
  if (err instanceof joseErrors.JWTExpired)
    return new SessionTokenError('expired', 'the session token has expired', { cause: err });
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'aud':
        return new SessionTokenError('wrong-robot', 'the session token is for another robot', { cause: err });
      case 'iss':
        return new SessionTokenError('wrong-issuer', 'the session token was issued by another service', {
          cause: err,
        });
      case 'nbf':
        return new SessionTokenError('malformed', 'the session token is not valid yet', { cause: err });
      case 'typ':
        return new SessionTokenError(
          'malformed',
          `not a pilot session token (typ must be ${SESSION_TOKEN_TYPE})`,
          {
            cause: err,
          },
        );
      default:
        return new SessionTokenError('malformed', `the session token claim ${err.claim} is ${err.reason}`, {
          cause: err,
        });
    }
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed)
    return new SessionTokenError('bad-signature', 'the session token signature does not verify', {
      cause: err,
    });
  if (err instanceof joseErrors.JOSEAlgNotAllowed)
    return new SessionTokenError('bad-alg', 'the session token algorithm is not accepted; ES256 only', {
      cause: err,
    });
  if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys)
    return new SessionTokenError(
      'unknown-key',
      'the session token was signed with a key this robot does not know',
      {
        cause: err,
      },
    );
  return new SessionTokenError('malformed', 'the session token cannot be read', { cause: err });
}

function describeError(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if ((err as Error).name === 'TimeoutError') return 'timeout';
  return redactUrl(err instanceof Error ? err.message : String(err));
}
