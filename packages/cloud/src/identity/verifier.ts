import { type BackoffPolicy, type Clock, retry, systemClock } from '@svc/runtime';
import {
  createRemoteJWKSet,
  customFetch,
  decodeProtectedHeader,
  type FetchImplementation,
  type JWTPayload,
  jwtVerify,
} from 'jose';
import { z } from 'zod';
import { IdentityError } from './errors.js';

/** Options of {@link OidcVerifier}. */
export interface OidcVerifierOptions {
  /** Issuer identifier, compared exactly with `iss`; discovery is fetched from below it. */
  issuer: string;
  /** The API resource: the `aud` an access token must carry. */
  audience: string;
  /** The console's client id: the `aud` an ID token must carry. */
  clientId: string;
  /** JWKS address used instead of the discovered one (when the issuer is not reachable from the API). */
  jwksUri?: string | undefined;
  /** Userinfo address used instead of the discovered one, same reason. */
  userinfoUri?: string | undefined;
  /** Leeway on `exp`, `nbf` and `iat`, in seconds. Default 30. */
  clockToleranceSec?: number | undefined;
  /**
   * Shortest time between two JWKS fetches caused by an unknown `kid`, in milliseconds. Default 5000.
   * jose's own default (30 s) would reject tokens signed with a freshly rotated key for up to 30 s after
   * the last fetch; a few seconds still stops a stream of made-up `kid`s from hammering the provider.
   */
  jwksCooldownMs?: number | undefined;
  /**
   * Time limit of each request to the provider (discovery, JWKS, userinfo), its retries included,
   * in milliseconds. Default 5000.
   */
  timeoutMs?: number | undefined;
  /**
   * Attempts of each request, the first included: a network error or a 5xx answer is tried again
   * (within `timeoutMs`), a 4xx answer never. Default 3.
   */
  attempts?: number | undefined;
  /** Waits between attempts (full jitter). Default 100 ms doubling up to 1 s. */
  retryBackoff?: BackoffPolicy | undefined;
  /** The timers of those waits. Default `systemClock`. */
  clock?: Clock | undefined;
  /** Fetch implementation for every request to the provider. Default `globalThis.fetch`. */
  fetch?: typeof fetch | undefined;
}

/** A verified access token: its subject and its whole claims set. */
export interface VerifiedAccessToken {
  sub: string;
  claims: JWTPayload;
}

/** A verified ID token. `email` is the claim as sent (not normalised) and is present only when it is a string. */
export interface VerifiedIdToken {
  email?: string;
  emailVerified: boolean;
  claims: JWTPayload;
}

/** What {@link OidcVerifier.verifiedEmail} looks at. */
export interface VerifiedEmailInput {
  /** The subject of the already verified access token. */
  sub: string;
  /** The access token, for the userinfo fallback. */
  accessToken?: string | undefined;
  /** The ID token the console sent along (`x-svc-id-token`). */
  idToken?: string | undefined;
}

const DEFAULT_CLOCK_TOLERANCE_SEC = 30;
const DEFAULT_JWKS_COOLDOWN_MS = 5_000;
const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_ATTEMPTS = 3;
/** Short waits: a request of the API is waiting on the provider's answer. */
const DEFAULT_RETRY_BACKOFF: BackoffPolicy = { baseMs: 100, capMs: 1_000 };

const discoverySchema = z.object({
  issuer: z.string(),
  jwks_uri: z.url(),
  userinfo_endpoint: z.url().optional(),
});

const userinfoSchema = z.looseObject({ sub: z.string().min(1) });

interface ProviderMetadata {
  jwksUri: string;
  userinfoUri: string | undefined;
}

type RemoteKeySet = ReturnType<typeof createRemoteJWKSet>;

/**
 * Verifies the tokens of one OpenID Connect provider for svc-cloud (spec 5.1): resource-scoped access
 * tokens, the console's ID token, and the verified email of a user.
 *
 * Keys come from the issuer's JWKS (discovered lazily, or `jwksUri`), cached and refetched when a token
 * names an unknown `kid`. No algorithm is pinned: any asymmetric JWS algorithm the key allows is accepted;
 * `none` and HMAC algorithms are always rejected.
 */
export class OidcVerifier {
  readonly #issuer: string;
  readonly #audience: string;
  readonly #clientId: string;
  readonly #jwksUri: string | undefined;
  readonly #userinfoUri: string | undefined;
  readonly #clockToleranceSec: number;
  readonly #jwksCooldownMs: number;
  readonly #timeoutMs: number;
  readonly #attempts: number;
  readonly #retryBackoff: BackoffPolicy;
  readonly #clock: Clock;
  readonly #fetch: typeof fetch;
  #discovery: Promise<ProviderMetadata> | undefined;
  #keySet: Promise<RemoteKeySet> | undefined;

  /** @throws {TypeError} naming the option, when one cannot work (not a URL, empty, negative). */
  constructor(options: OidcVerifierOptions) {
    this.#issuer = requireHttpUrl(options.issuer, 'issuer');
    this.#audience = requireNonEmpty(options.audience, 'audience');
    this.#clientId = requireNonEmpty(options.clientId, 'clientId');
    this.#jwksUri = options.jwksUri === undefined ? undefined : requireHttpUrl(options.jwksUri, 'jwksUri');
    this.#userinfoUri =
      options.userinfoUri === undefined ? undefined : requireHttpUrl(options.userinfoUri, 'userinfoUri');
    this.#clockToleranceSec = requireNonNegative(
      options.clockToleranceSec ?? DEFAULT_CLOCK_TOLERANCE_SEC,
      'clockToleranceSec',
    );
    this.#jwksCooldownMs = requireNonNegative(
      options.jwksCooldownMs ?? DEFAULT_JWKS_COOLDOWN_MS,
      'jwksCooldownMs',
    );
    this.#timeoutMs = requireNonNegative(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'timeoutMs');
    this.#attempts = options.attempts ?? DEFAULT_ATTEMPTS;
    if (!Number.isInteger(this.#attempts) || this.#attempts < 1) {
      throw new TypeError(
        `OidcVerifier option attempts: expected a whole number >= 1, got ${this.#attempts}`,
      );
    }
    this.#retryBackoff = options.retryBackoff ?? DEFAULT_RETRY_BACKOFF;
    this.#clock = options.clock ?? systemClock;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * Verifies an access token issued for the API resource: signature from the issuer's JWKS, `iss`, `aud`
   * (the configured audience), `exp`/`nbf` with the clock tolerance, and a `sub`.
   *
   * @throws {IdentityError} with the code naming what was wrong.
   */
  async verifyAccessToken(token: string | undefined): Promise<VerifiedAccessToken> {
    const claims = await this.#verify(token, this.#audience, 'access token');
    return { sub: requireSub(claims, 'access token'), claims };
  }

  /**
   * Verifies an ID token against the same JWKS with `aud` equal to the client id, and checks that it
   * belongs to `expectedSub` (the access token's subject), so nobody claims a colleague's email.
   *
   * @throws {IdentityError} `subject-mismatch` when the ID token is another user's; other codes as for
   *   {@link OidcVerifier.verifyAccessToken}.
   */
  async verifyIdToken(token: string | undefined, expectedSub: string): Promise<VerifiedIdToken> {
    const claims = await this.#verify(token, this.#clientId, 'ID token');
    if (Array.isArray(claims.aud) && claims.aud.length > 1 && claims.azp !== this.#clientId) {
      throw new IdentityError(
        'wrong-audience',
        'ID token has several audiences and its azp is not the client id',
      );
    }
    const sub = requireSub(claims, 'ID token');
    if (sub !== expectedSub) {
      throw new IdentityError(
        'subject-mismatch',
        'ID token belongs to another subject than the access token',
      );
    }
    const verified: VerifiedIdToken = { emailVerified: isTrue(claims.email_verified), claims };
    if (typeof claims.email === 'string') verified.email = claims.email;
    return verified;
  }

  /**
   * Asks the provider's userinfo endpoint about the holder of `accessToken`.
   *
   * @returns the claims, or `null` when the provider refuses the token (401/403: providers reject
   *   resource-scoped tokens there, spec 5.1.4) or has no userinfo endpoint.
   * @throws {IdentityError} `provider-unreachable`, `discovery-failed` or `userinfo-failed`.
   */
  async userinfo(accessToken: string): Promise<JWTPayload | null> {
    const endpoint = this.#userinfoUri ?? (await this.#metadata()).userinfoUri;
    if (endpoint === undefined) return null;
    const response = await this.#request(endpoint, 'userinfo', {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
    });
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      return null;
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new IdentityError('userinfo-failed', `userinfo at ${endpoint} answered HTTP ${response.status}`);
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch (cause) {
      throw new IdentityError('userinfo-failed', `userinfo at ${endpoint} did not answer JSON`, { cause });
    }
    const parsed = userinfoSchema.safeParse(body);
    if (!parsed.success) {
      throw new IdentityError('userinfo-failed', `userinfo at ${endpoint} answered an object without sub`, {
        cause: parsed.error,
      });
    }
    return parsed.data as JWTPayload;
  }

  /**
   * The user's email, lowercased, when the provider vouches for it: taken from the ID token first (which
   * must verify and belong to `sub`), else from userinfo (whose `sub` must also match). An email whose
   * `email_verified` is not true is never returned.
   *
   * @returns the email, or `undefined` when neither source gives a verified one.
   * @throws {IdentityError} when the ID token is rejected (`subject-mismatch` among others), or the
   *   provider cannot be asked.
   */
  async verifiedEmail(input: VerifiedEmailInput): Promise<string | undefined> {
    if (input.idToken !== undefined) {
      const idToken = await this.verifyIdToken(input.idToken, input.sub);
      const email = verifiedEmailClaim(idToken.claims);
      if (email !== undefined) return email;
    }
    if (input.accessToken === undefined) return undefined;
    const info = await this.userinfo(input.accessToken);
    if (info === null || info.sub !== input.sub) return undefined;
    return verifiedEmailClaim(info);
  }

  async #verify(token: string | undefined, audience: string, what: string): Promise<JWTPayload> {
    if (token === undefined || token === '') {
      throw new IdentityError('token-missing', `no ${what} was presented`);
    }
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch (cause) {
      throw new IdentityError('token-malformed', `${what} is not a JWS with a JSON header`, { cause });
    }
    if (typeof alg !== 'string' || alg === 'none' || alg.startsWith('HS')) {
      throw new IdentityError(
        'token-invalid',
        `${what} names algorithm ${describeAlg(alg)}; only asymmetric signatures are accepted`,
      );
    }
    const keySet = await this.#remoteKeySet();
    try {
      const { payload } = await jwtVerify(token, keySet, {
        issuer: this.#issuer,
        audience,
        clockTolerance: this.#clockToleranceSec,
      });
      return payload;
    } catch (cause) {
      throw joseToIdentityError(cause, what);
    }
  }

  #remoteKeySet(): Promise<RemoteKeySet> {
    if (this.#keySet === undefined) {
      const pending = this.#createKeySet();
      this.#keySet = pending;
      pending.catch(() => {
        if (this.#keySet === pending) this.#keySet = undefined;
      });
    }
    return this.#keySet;
  }

  async #createKeySet(): Promise<RemoteKeySet> {
    const uri = this.#jwksUri ?? (await this.#metadata()).jwksUri;
    const fetchJwks: FetchImplementation = async (url, init) => {
      const response = await this.#request(url, 'JWKS', init);
      const text = await response.text();
      if (response.status !== 200) {
        throw new IdentityError('discovery-failed', `JWKS at ${url} answered HTTP ${response.status}`);
      }
      try {
        JSON.parse(text);
      } catch (cause) {
        throw new IdentityError('discovery-failed', `JWKS at ${url} is not JSON`, { cause });
      }
      return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
    };
    return createRemoteJWKSet(new URL(uri), {
      cooldownDuration: this.#jwksCooldownMs,
      timeoutDuration: this.#timeoutMs,
      [customFetch]: fetchJwks,
    });
  }

  /** Discovery, fetched once; a failure is not kept, so the next call tries again. */
  #metadata(): Promise<ProviderMetadata> {
    if (this.#discovery === undefined) {
      const pending = this.#discover();
      this.#discovery = pending;
      pending.catch(() => {
        if (this.#discovery === pending) this.#discovery = undefined;
      });
    }
    return this.#discovery;
  }

  async #discover(): Promise<ProviderMetadata> {
    const url = `${this.#issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const response = await this.#request(url, 'discovery', { headers: { accept: 'application/json' } });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new IdentityError('discovery-failed', `discovery at ${url} answered HTTP ${response.status}`);
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch (cause) {
      throw new IdentityError('discovery-failed', `discovery at ${url} is not JSON`, { cause });
    }
    const parsed = discoverySchema.safeParse(body);
    if (!parsed.success) {
      throw new IdentityError('discovery-failed', `discovery at ${url} lacks a usable issuer or jwks_uri`, {
        cause: parsed.error,
      });
    }
    if (parsed.data.issuer !== this.#issuer) {
      throw new IdentityError(
        'discovery-failed',
        `discovery at ${url} names issuer ${parsed.data.issuer}, expected ${this.#issuer}`,
      );
    }
    return { jwksUri: parsed.data.jwks_uri, userinfoUri: parsed.data.userinfo_endpoint };
  }

  /**
   * One GET to the provider, tried again after a network error or a 5xx answer (the last attempt's
   * answer is returned whatever its status); a network failure or the time limit becomes
   * `provider-unreachable`.
   */
  async #request(url: string, what: string, init: RequestInit): Promise<Response> {
    const signal = init.signal ?? AbortSignal.timeout(this.#timeoutMs);
    const attempts = this.#attempts;
    try {
      return await retry(
        async (attempt) => {
          const response = await this.#fetch(url, { ...init, method: 'GET', redirect: 'manual', signal });
          if (response.status >= 500 && attempt + 1 < attempts) {
            await response.body?.cancel();
            throw new IdentityError(
              'provider-unreachable',
              `${what} at ${url} answered HTTP ${response.status}`,
            );
          }
          return response;
        },
        {
          attempts,
          policy: this.#retryBackoff,
          clock: this.#clock,
          signal,
          // Out of time: the request has waited long enough.
          retryable: () => !signal.aborted,
        },
      );
    } catch (cause) {
      throw new IdentityError('provider-unreachable', `${what} at ${url} did not answer`, { cause });
    }
  }
}

/**
 * The email of a claims set (ID token or userinfo), trimmed and lowercased, when `email_verified` is true;
 * `undefined` otherwise. Accepts `"true"` as well, which some providers send in userinfo.
 */
export function verifiedEmailClaim(claims: JWTPayload): string | undefined {
  if (!isTrue(claims.email_verified) || typeof claims.email !== 'string') return undefined;
  const email = claims.email.trim().toLowerCase();
  return email === '' ? undefined : email;
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}

function requireSub(claims: JWTPayload, what: string): string {
  if (typeof claims.sub !== 'string' || claims.sub === '') {
    throw new IdentityError('claim-invalid', `${what} has no sub claim`);
  }
  return claims.sub;
}

function describeAlg(alg: unknown): string {
  if (typeof alg !== 'string') return '(none given)';
  return JSON.stringify(alg.length > 16 ? `${alg.slice(0, 16)}…` : alg);
}

/** Maps a jose verification error to the identity code; errors that are not jose's pass through. */
function joseToIdentityError(err: unknown, what: string): unknown {
  if (err instanceof IdentityError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_J')) return err;
  const claim = (err as { claim?: unknown }).claim;
  const options = { cause: err };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return new IdentityError('token-expired', `${what} has expired`, options);
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      switch (claim) {
        case 'iss':
          return new IdentityError('wrong-issuer', `${what} was issued by another issuer`, options);
        case 'aud':
          return new IdentityError('wrong-audience', `${what} is meant for another audience`, options);
        case 'nbf':
        case 'iat':
          return new IdentityError('token-not-yet-valid', `${what} is not valid yet (${claim})`, options);
        default:
          return new IdentityError('claim-invalid', `${what} has an invalid ${String(claim)} claim`, options);
      }
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return new IdentityError('unknown-key', `no key of the issuer's JWKS matches the ${what}`, options);
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return new IdentityError('unknown-key', `${what} names no kid and several JWKS keys match`, options);
    case 'ERR_JWKS_TIMEOUT':
      return new IdentityError('provider-unreachable', 'the issuer JWKS did not answer in time', options);
    case 'ERR_JWKS_INVALID':
    case 'ERR_JWK_INVALID':
    case 'ERR_JOSE_GENERIC':
      return new IdentityError('discovery-failed', "the issuer's JWKS is unusable", options);
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return new IdentityError('token-invalid', `${what} signature does not verify`, options);
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return new IdentityError('token-invalid', `${what} uses an algorithm its key does not allow`, options);
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return new IdentityError('token-malformed', `${what} is not a well-formed JWT`, options);
    default:
      return new IdentityError('token-invalid', `${what} was rejected (${code})`, options);
  }
}

function requireHttpUrl(value: string, key: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch (cause) {
    throw new TypeError(`OidcVerifier option ${key}: ${JSON.stringify(value)} is not a URL`, { cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`OidcVerifier option ${key}: ${JSON.stringify(value)} is not an http(s) URL`);
  }
  return value;
}

function requireNonEmpty(value: string, key: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(
      `OidcVerifier option ${key}: expected a non-empty string, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function requireNonNegative(value: number, key: string): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new TypeError(`OidcVerifier option ${key}: expected a non-negative number, got ${value}`);
  }
  return value;
}
