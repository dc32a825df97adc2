import { createPrivateKey, sign as cryptoSign, type JsonWebKey, type KeyObject } from 'node:crypto';
import { type Clock, type Logger, silentLogger, systemClock, type TimerHandle } from '@svc/runtime';
import { lte, sql } from 'drizzle-orm';
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWSHeaderParameters,
  jwtVerify,
} from 'jose';
import { MAX_SESSION_TOKEN_TTL_SECONDS } from '../config.js';
import { type CloudDb, type SessionSigningKey, sessionSigningKeys } from '../db/index.js';
import {
  SESSION_TOKEN_ALG,
  SESSION_TOKEN_TYP,
  type SessionTokenClaims,
  SessionTokenError,
  sessionTokenClaimsSchema,
} from './tokens.js';

/**
 * Key of the transaction advisory lock held while a key is created, so that several svc-cloud nodes
 * sharing one PostgreSQL database create one key between them, not one each.
 */
export const SESSION_KEY_LOCK = 0x53cc5e5;
/** How often the store reloads its keys and rotates them (a timer of the injected clock). */
export const SESSION_KEY_REFRESH_MS = 60_000;
/**
 * How long before the signing key retires its successor is created and published. Longer than a
 * refresh interval plus the JWKS's `max-age`, so every node and every robot knows the new key before
 * it signs anything.
 */
export const NEXT_KEY_LEAD_MS = 10 * 60_000;
/** A retired key stays published this long after its last token can have expired (clock skew). */
export const KEY_EXPIRY_MARGIN_MS = 60_000;
/** After a token names an unknown `kid`, the store reloads its keys at most this often. */
const UNKNOWN_KID_RELOAD_COOLDOWN_MS = 5_000;

/** Options of {@link SessionKeyStore}. */
export interface SessionKeyStoreOptions {
  readonly db: CloudDb;
  /** `iss` of every token: the service's public URL. */
  readonly issuer: string;
  /** How long a key signs, hours (`SVC_SESSION_KEY_ROTATION_HOURS`). */
  readonly rotationHours: number;
  /**
   * Every key time is read on the clock's `wallNow()`, and the reload timer is its interval.
   * Default {@link systemClock}.
   */
  readonly clock?: Clock;
  /** Where key creation, deletion and failed reloads are logged. Default: nothing. */
  readonly log?: Logger;
  /** Interval of the reload timer, ms. Default {@link SESSION_KEY_REFRESH_MS}. */
  readonly refreshIntervalMs?: number;
}

/** A public key of the session JWKS. */
export interface SessionPublicJwk extends JWK {
  readonly kid: string;
  readonly alg: typeof SESSION_TOKEN_ALG;
  readonly use: 'sig';
}

/** Options of {@link SessionKeyStore.verify}. */
export interface VerifySessionTokenOptions {
  /** The robot id the token must be for (`aud`). Without it any audience passes. */
  readonly audience?: string;
}

/** One key, loaded: its imported halves and its times in ms. */
interface LoadedKey {
  readonly kid: string;
  readonly publicJwk: SessionPublicJwk;
  /** A node:crypto key: signing with it is synchronous and cheaper than a WebCrypto job. */
  readonly privateKey: KeyObject;
  readonly publicKey: CryptoKey;
  /** The protected header, base64url, the same for every token of this key. */
  readonly header: string;
  readonly createdAt: number;
  readonly retiresAt: number;
  readonly expiresAt: number;
}

/**
 * The service's ES256 keys for pilot session tokens, kept in `session_signing_keys` so that every
 * node signs with the same key and publishes the same JWKS.
 *
 * A key signs until its `retiresAt` (created + the rotation period). Its successor is created
 * {@link NEXT_KEY_LEAD_MS} earlier and published at once, but signs only once the older key retires.
 * A retired key stays in the JWKS until `expiresAt` (retirement + the longest token lifetime + a
 * margin), after which its row is deleted. A timer reloads the keys every minute (picking up keys
 * other nodes made) and rotates them; {@link SessionKeyStore.sign} also reloads when it finds no key
 * that may sign, so a moved clock never signs with a retired key.
 */
export class SessionKeyStore {
  readonly #db: CloudDb;
  readonly #issuer: string;
  readonly #rotationMs: number;
  readonly #leadMs: number;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #refreshIntervalMs: number;
  /** Sorted by `retiresAt`, oldest first. */
  #keys: readonly LoadedKey[] = [];
  #refreshing: Promise<void> | undefined;
  /** When a token's unknown `kid` last caused a reload (monotonic ms). */
  #lastUnknownKidReload = Number.NEGATIVE_INFINITY;
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(options: SessionKeyStoreOptions) {
    if (!Number.isFinite(options.rotationHours) || options.rotationHours <= 0) {
      throw new TypeError(
        `SessionKeyStore option rotationHours: expected a positive number, got ${options.rotationHours}`,
      );
    }
    if (typeof options.issuer !== 'string' || options.issuer === '') {
      throw new TypeError('SessionKeyStore option issuer: expected the service URL');
    }
    this.#db = options.db;
    this.#issuer = options.issuer;
    this.#rotationMs = options.rotationHours * 3_600_000;
    this.#leadMs = Math.min(NEXT_KEY_LEAD_MS, this.#rotationMs / 2);
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log ?? silentLogger;
    this.#refreshIntervalMs = options.refreshIntervalMs ?? SESSION_KEY_REFRESH_MS;
  }

  /** `iss` of the tokens this store signs and accepts. */
  get issuer(): string {
    return this.#issuer;
  }

  /**
   * Loads the keys (creating the first one when none may sign) and starts the reload timer.
   *
   * @throws The database's error when the keys cannot be read or written.
   */
  async start(): Promise<void> {
    await this.refresh();
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = this.#clock.setInterval(() => {
      this.refresh().catch((err: unknown) => {
        this.#log.error({ err }, 'reloading the session signing keys failed; retrying in a minute');
      });
    }, this.#refreshIntervalMs);
  }

  /**
   * Reloads the keys from the database: deletes expired ones, creates the next key when the newest
   * retires within {@link NEXT_KEY_LEAD_MS} (or none may sign), and picks up keys other nodes made.
   * Concurrent calls share one reload.
   */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#reload().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /** The public keys to publish now: every key not past its `expiresAt`, newest first. */
  jwks(): { keys: SessionPublicJwk[] } {
    const now = this.#clock.wallNow();
    return {
      keys: this.#keys
        .filter((k) => k.expiresAt > now)
        .sort((a, b) => b.createdAt - a.createdAt)
        .map((k) => ({ ...k.publicJwk })),
    };
  }

  /**
   * Signs a pilot session token (`iss` is set to the store's issuer) with the key that signs now.
   * Header: `{ alg: 'ES256', kid, typ: 'svc-session+jwt' }`.
   *
   * @throws {TypeError} When `exp` lies more than the longest token lifetime ahead, or not ahead at all.
   * @throws {SessionTokenError} `no-signing-key` when no key may sign, even after a reload.
   */
  async sign(claims: Omit<SessionTokenClaims, 'iss'>): Promise<string> {
    const now = this.#clock.wallNow();
    const left = claims.exp * 1000 - now;
    if (!(left > 0) || left > MAX_SESSION_TOKEN_TTL_SECONDS * 1000) {
      throw new TypeError(
        `SessionKeyStore.sign: exp must lie 1..${MAX_SESSION_TOKEN_TTL_SECONDS} s ahead, got ${Math.round(left / 1000)} s`,
      );
    }
    let key = this.#signer(now);
    if (key === undefined) {
      try {
        await this.refresh();
      } catch (err) {
        throw new SessionTokenError(
          'no-signing-key',
          'no session signing key may sign now and the keys could not be reloaded from the database',
          { cause: err },
        );
      }
      key = this.#signer(this.#clock.wallNow());
      if (key === undefined) {
        throw new SessionTokenError('no-signing-key', 'no session signing key may sign now');
      }
    }
    // A compact JWS (RFC 7515) by hand: the header is fixed per key, and node:crypto signs on
    // libuv's thread pool (ES256 wants the raw r || s signature, `ieee-p1363`), which keeps the
    // ECDSA work off the event loop at less cost than jose's WebCrypto job. Robots verify it with
    // any JOSE library; the tests use jose.
    const input = `${key.header}.${Buffer.from(JSON.stringify({ ...claims, iss: this.#issuer })).toString('base64url')}`;
    const signature = await new Promise<Buffer>((resolve, reject) => {
      cryptoSign(
        'sha256',
        Buffer.from(input),
        { key: key.privateKey, dsaEncoding: 'ieee-p1363' },
        (err, result) => (err === null ? resolve(result) : reject(err)),
      );
    });
    return `${input}.${signature.toString('base64url')}`;
  }

  /**
   * Verifies a pilot session token as a robot or the signalling server would: ES256 only, the
   * session `typ`, a published `kid`, `iss` this service, `exp` in the future, `aud` the given robot.
   *
   * @throws {SessionTokenError} With the reason as `code`; the message never contains the token.
   */
  async verify(token: string, options: VerifySessionTokenOptions = {}): Promise<SessionTokenClaims> {
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, (header) => this.#verificationKey(header), {
        algorithms: [SESSION_TOKEN_ALG],
        issuer: this.#issuer,
        typ: SESSION_TOKEN_TYP,
        requiredClaims: ['exp', 'iat', 'jti', 'sub', 'aud'],
        currentDate: new Date(this.#clock.wallNow()),
        clockTolerance: 0,
        ...(options.audience === undefined ? {} : { audience: options.audience }),
      }));
    } catch (err) {
      throw joseToSessionError(err);
    }
    const parsed = sessionTokenClaimsSchema.safeParse(payload);
    if (!parsed.success) {
      const claims = [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? '?')))];
      throw new SessionTokenError(
        'claim-invalid',
        `the session token has invalid claims: ${claims.join(', ')}`,
      );
    }
    const { act, org, ...rest } = parsed.data;
    return { ...rest, ...(act === undefined ? {} : { act }), ...(org === undefined ? {} : { org }) };
  }

  /** Stops the reload timer and waits for a reload under way. The loaded keys stay usable. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#clock.clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#refreshing?.catch(() => {});
  }

  /** The key that signs at `now`: of those not retired, the one retiring first. */
  #signer(now: number): LoadedKey | undefined {
    return this.#keys.find((k) => k.retiresAt > now);
  }

  /** Whether no key retires later than the lead time from now: the next key is due. */
  #nextKeyDue(rows: readonly SessionSigningKey[], now: number): boolean {
    return !rows.some((r) => r.retiresAt.getTime() > now + this.#leadMs);
  }

  async #reload(): Promise<void> {
    const now = this.#clock.wallNow();
    let rows = await this.#db.select().from(sessionSigningKeys);
    if (rows.some((r) => r.expiresAt.getTime() <= now)) {
      const gone = await this.#db
        .delete(sessionSigningKeys)
        .where(lte(sessionSigningKeys.expiresAt, new Date(now)))
        .returning({ kid: sessionSigningKeys.kid });
      if (gone.length > 0) {
        this.#log.info({ kids: gone.map((g) => g.kid) }, 'deleted expired session signing keys');
      }
      rows = rows.filter((r) => r.expiresAt.getTime() > now);
    }
    if (this.#nextKeyDue(rows, now)) {
      // Made before taking the lock, which is then held only for a read and an insert.
      const candidate = await this.#newKey(now);
      rows = await this.#db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${sql.raw(String(SESSION_KEY_LOCK))})`);
        const current = await tx.select().from(sessionSigningKeys);
        if (!this.#nextKeyDue(current, now)) return current;
        await tx.insert(sessionSigningKeys).values(candidate);
        this.#log.info(
          { kid: candidate.kid, retiresAt: candidate.retiresAt.toISOString() },
          'created a session signing key',
        );
        return [...current, candidate];
      });
    }
    await this.#install(rows);
  }

  async #newKey(now: number): Promise<SessionSigningKey> {
    const { privateKey, publicKey } = await generateKeyPair(SESSION_TOKEN_ALG, { extractable: true });
    const [privateJwk, bare] = await Promise.all([exportJWK(privateKey), exportJWK(publicKey)]);
    const kid = await calculateJwkThumbprint(bare);
    const publicJwk: SessionPublicJwk = { ...bare, kid, alg: SESSION_TOKEN_ALG, use: 'sig' };
    const retiresAt = now + this.#rotationMs;
    return {
      kid,
      privateJwk: { ...privateJwk, kid, alg: SESSION_TOKEN_ALG, use: 'sig' },
      publicJwk: { ...publicJwk },
      createdAt: new Date(now),
      retiresAt: new Date(retiresAt),
      expiresAt: new Date(retiresAt + MAX_SESSION_TOKEN_TTL_SECONDS * 1000 + KEY_EXPIRY_MARGIN_MS),
    };
  }

  /** Replaces the loaded keys with `rows`, importing only keys not loaded yet. */
  async #install(rows: readonly SessionSigningKey[]): Promise<void> {
    const loaded = new Map(this.#keys.map((k) => [k.kid, k]));
    const keys = await Promise.all(
      rows.map(async (row): Promise<LoadedKey> => {
        const known = loaded.get(row.kid);
        if (known !== undefined) return known;
        const publicJwk = row.publicJwk as unknown as SessionPublicJwk;
        const privateKey = createPrivateKey({ key: row.privateJwk as JsonWebKey, format: 'jwk' });
        const publicKey = await importJWK(publicJwk, SESSION_TOKEN_ALG);
        const header = { alg: SESSION_TOKEN_ALG, kid: row.kid, typ: SESSION_TOKEN_TYP };
        return {
          kid: row.kid,
          publicJwk: { ...publicJwk, kid: row.kid, alg: SESSION_TOKEN_ALG, use: 'sig' },
          privateKey,
          publicKey: publicKey as CryptoKey,
          header: Buffer.from(JSON.stringify(header)).toString('base64url'),
          createdAt: row.createdAt.getTime(),
          retiresAt: row.retiresAt.getTime(),
          expiresAt: row.expiresAt.getTime(),
        };
      }),
    );
    this.#keys = keys.sort((a, b) => a.retiresAt - b.retiresAt);
  }

  async #verificationKey(header: JWSHeaderParameters): Promise<CryptoKey> {
    const kid = header.kid;
    if (typeof kid !== 'string' || kid === '') {
      throw new SessionTokenError('token-invalid', 'the session token names no kid');
    }
    const find = () => {
      const now = this.#clock.wallNow();
      return this.#keys.find((k) => k.kid === kid && k.expiresAt > now);
    };
    let key = find();
    const now = this.#clock.now();
    if (key === undefined && now - this.#lastUnknownKidReload >= UNKNOWN_KID_RELOAD_COOLDOWN_MS) {
      // Another node may have created a key that this one has not loaded yet.
      this.#lastUnknownKidReload = now;
      await this.refresh();
      key = find();
    }
    if (key === undefined) {
      throw new SessionTokenError(
        'unknown-key',
        'the session token was signed with a key that is not published',
      );
    }
    return key.publicKey;
  }
}

/** Maps jose's verification errors to {@link SessionTokenError}; the store's own errors pass through. */
function joseToSessionError(err: unknown): unknown {
  if (err instanceof SessionTokenError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_J')) return err;
  const options = { cause: err };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return new SessionTokenError('token-expired', 'the session token has expired', options);
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const claim = String((err as { claim?: unknown }).claim);
      if (claim === 'typ') {
        return new SessionTokenError(
          'token-invalid',
          'the token is not a pilot session token (typ)',
          options,
        );
      }
      return new SessionTokenError(
        'claim-invalid',
        `the session token's ${claim} claim is not valid`,
        options,
      );
    }
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return new SessionTokenError('token-invalid', 'the session token signature does not verify', options);
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return new SessionTokenError('token-invalid', 'session tokens are signed with ES256 only', options);
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return new SessionTokenError('token-malformed', 'the session token is not a well-formed JWT', options);
    default:
      return new SessionTokenError('token-invalid', `the session token was rejected (${code})`, options);
  }
}
