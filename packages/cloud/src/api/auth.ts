import { timingSafeEqual } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import { type ApiKey, apiKeys, type CloudDb, hashSecret, type User, users } from '../db/index.js';
import { type IdentityError, isIdentityError, type OidcVerifier } from '../identity/index.js';
import { ApiError } from './errors.js';

/** Text every API key starts with, so a leaked key is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = 'svc_key_';
/** Length of the looked-up part of a key: the prefix and 8 hex characters. */
const API_KEY_LOOKUP_LENGTH = API_KEY_PREFIX.length + 8;
/** `last_used_at` is written at most this often per key, so a busy backend does not write on every call. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** How long a cached API key stays valid, ms: a revoked key stops working on cached routes within this. */
export const API_KEY_CACHE_MS = 5_000;
/** How long a key that was not recognised stays refused without asking the database again, ms. */
export const API_KEY_NEGATIVE_CACHE_MS = 1_000;
/** Most API keys (recognised or not) held in the cache; past it, expired entries go, then all. */
const API_KEY_CACHE_ENTRIES = 10_000;

/** A cached answer for one presented key, keyed by its SHA-256. Pending while the lookup runs. */
interface CachedKey {
  readonly at: number;
  readonly lookup: Promise<ApiKey | null>;
  /** `undefined` while pending; `null` when the key was not recognised. */
  result: ApiKey | null | undefined;
}

/** Options of {@link Authenticator.caller}. */
export interface CallerOptions {
  /**
   * Accept an API key from a cache of at most {@link API_KEY_CACHE_MS} (and refuse an unknown one
   * from a cache of {@link API_KEY_NEGATIVE_CACHE_MS}) instead of asking the database each time. For
   * hot paths (minting pilot session tokens); a revoked key then keeps working for up to 5 s there.
   */
  readonly cacheApiKeys?: boolean;
}

/** Who is calling. */
export type Caller =
  | { readonly kind: 'user'; readonly user: User; readonly claims: Record<string, unknown> }
  | { readonly kind: 'api-key'; readonly key: ApiKey }
  | { readonly kind: 'anonymous' };

/** The bearer token of a request, or `undefined` without an `Authorization: Bearer` header. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match === null) {
    throw new ApiError('unauthenticated', 'the Authorization header must be "Bearer <token>"');
  }
  return match[1];
}

/** The lookup part of an API key (`svc_key_` and 8 hex characters), or `undefined` if it is not one. */
export function apiKeyLookup(token: string): string | undefined {
  if (!token.startsWith(API_KEY_PREFIX) || token.length < API_KEY_LOOKUP_LENGTH + 20) return undefined;
  const lookup = token.slice(0, API_KEY_LOOKUP_LENGTH);
  return /^[0-9a-f]{8}$/.test(lookup.slice(API_KEY_PREFIX.length)) ? lookup : undefined;
}

/** Turns an identity error into the API's answer: a bad token is 401, an unreachable provider 502. */
export function identityFailure(err: IdentityError, what: string): ApiError {
  if (
    err.code === 'provider-unreachable' ||
    err.code === 'discovery-failed' ||
    err.code === 'userinfo-failed'
  ) {
    return new ApiError('provider-unavailable', `the identity provider could not be asked: ${err.message}`, {
      cause: err,
    });
  }
  return new ApiError('unauthenticated', `${what} rejected (${err.code}): ${err.message}`, { cause: err });
}

/**
 * Resolves callers: API keys by their lookup prefix and hash, humans by their verified OIDC access
 * token and the user row keyed on (issuer, subject).
 */
export class Authenticator {
  readonly #db: CloudDb;
  readonly #verifier: OidcVerifier;
  readonly #issuer: string;
  readonly #now: () => number;
  readonly #keyCache = new Map<string, CachedKey>();

  constructor(options: { db: CloudDb; verifier: OidcVerifier; issuer: string; now?: () => number }) {
    this.#db = options.db;
    this.#verifier = options.verifier;
    this.#issuer = options.issuer;
    this.#now = options.now ?? Date.now;
  }

  /** The configured issuer (users are keyed on it with their subject). */
  get issuer(): string {
    return this.#issuer;
  }

  /** The verifier, for `GET /api/v1/me`. */
  get verifier(): OidcVerifier {
    return this.#verifier;
  }

  /**
   * The caller of a request: `anonymous` without credentials; a 401 for a credential that does not
   * verify; a 403 `not-registered` for a valid login that never went through `GET /api/v1/me`.
   */
  async caller(request: FastifyRequest, options: CallerOptions = {}): Promise<Caller> {
    const token = bearerToken(request);
    if (token === undefined) return { kind: 'anonymous' };
    if (token.startsWith(API_KEY_PREFIX)) {
      const key = options.cacheApiKeys === true ? await this.#cachedApiKey(token) : await this.#apiKey(token);
      return { kind: 'api-key', key };
    }
    const verified = await this.verifyAccessToken(token);
    const [user] = await this.#db
      .select()
      .from(users)
      .where(and(eq(users.oidcIssuer, this.#issuer), eq(users.oidcSubject, verified.sub)));
    if (user === undefined) {
      throw new ApiError(
        'not-registered',
        'this login is not known yet: sign in through the console first (GET /api/v1/me)',
      );
    }
    return { kind: 'user', user, claims: verified.claims };
  }

  /** Verifies an OIDC access token, as the API's answer on failure. */
  async verifyAccessToken(token: string): Promise<{ sub: string; claims: Record<string, unknown> }> {
    try {
      return await this.#verifier.verifyAccessToken(token);
    } catch (err) {
      if (isIdentityError(err)) throw identityFailure(err, 'access token');
      throw err;
    }
  }

  async #apiKey(token: string): Promise<ApiKey> {
    const key = await this.#findApiKey(token, hashSecret(token));
    if (key === null) throw invalidApiKey();
    return this.#touch(key);
  }

  /** The key row for `token` (not revoked, hash equal), or `null`. */
  async #findApiKey(token: string, hash: string): Promise<ApiKey | null> {
    const lookup = apiKeyLookup(token);
    if (lookup === undefined) return null;
    const [key] = await this.#db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.prefix, lookup), isNull(apiKeys.revokedAt)));
    if (key === undefined) return null;
    const presented = Buffer.from(hash, 'hex');
    const stored = Buffer.from(key.secretHash, 'hex');
    if (presented.length !== stored.length || !timingSafeEqual(presented, stored)) return null;
    return key;
  }

  /** Records a use (at most once a minute per key); returns the key as now stored. */
  async #touch(key: ApiKey): Promise<ApiKey> {
    const now = this.#now();
    if (key.lastUsedAt !== null && now - key.lastUsedAt.getTime() <= LAST_USED_RESOLUTION_MS) return key;
    await this.#db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now) })
      .where(eq(apiKeys.id, key.id));
    return { ...key, lastUsedAt: new Date(now) };
  }

  /**
   * {@link Authenticator.#apiKey} through the cache, keyed by the SHA-256 of the presented key (the
   * key itself is never kept). Concurrent requests with one key share one lookup.
   */
  async #cachedApiKey(token: string): Promise<ApiKey> {
    const hash = hashSecret(token);
    const now = this.#now();
    let entry = this.#keyCache.get(hash);
    if (entry !== undefined && !fresh(entry, now)) {
      this.#keyCache.delete(hash);
      entry = undefined;
    }
    if (entry === undefined) {
      const lookup = this.#findApiKey(token, hash);
      const created: CachedKey = { at: now, lookup, result: undefined };
      this.#keyCache.set(hash, created);
      this.#pruneKeyCache(now);
      lookup.then(
        (result) => {
          created.result = result;
        },
        () => {
          // A failed lookup is not an answer: the next request asks again.
          if (this.#keyCache.get(hash) === created) this.#keyCache.delete(hash);
        },
      );
      entry = created;
    }
    const key = await entry.lookup;
    if (key === null) throw invalidApiKey();
    // `result` holds the latest `last_used_at` this process wrote, so the next write is a minute on.
    const touched = await this.#touch(entry.result ?? key);
    if (entry.result !== undefined) entry.result = touched;
    return touched;
  }

  #pruneKeyCache(now: number): void {
    if (this.#keyCache.size <= API_KEY_CACHE_ENTRIES) return;
    for (const [hash, entry] of this.#keyCache) if (!fresh(entry, now)) this.#keyCache.delete(hash);
    if (this.#keyCache.size > API_KEY_CACHE_ENTRIES) this.#keyCache.clear();
  }
}

/** Whether a cache entry may still answer at `now` (a clock moved backwards expires it too). */
function fresh(entry: CachedKey, now: number): boolean {
  if (now < entry.at) return false;
  if (entry.result === undefined) return true;
  return now - entry.at < (entry.result === null ? API_KEY_NEGATIVE_CACHE_MS : API_KEY_CACHE_MS);
}

function invalidApiKey(): ApiError {
  return new ApiError(
    'unauthenticated',
    'API key not recognised, or revoked; create a new key in the console',
  );
}
