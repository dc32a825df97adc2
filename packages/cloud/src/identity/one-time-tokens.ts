import { createHash, randomBytes } from 'node:crypto';
import { type Clock, systemClock } from '@svc/runtime';
import { normalizeEmail } from './accounts.js';
import type { StateStore } from './state-store.js';

/** Longest lifetime of a one-time sign-in token, seconds (the longest invitation: 90 days). */
export const MAX_ONE_TIME_TOKEN_TTL_SEC = 90 * 86_400;

/** Why a one-time sign-in token was not accepted. */
export type OneTimeTokenRefusal =
  /** No such token was ever issued here (or it was forgotten long ago). */
  | 'unknown'
  /** Its lifetime is over. */
  | 'expired'
  /** It already signed someone in. */
  | 'used'
  /** It was issued for another email address than the one presented with it. */
  | 'other-email';

/** The outcome of {@link OneTimeTokens.redeem}. */
export type OneTimeTokenRedemption =
  | { readonly ok: true; readonly email: string }
  | { readonly ok: false; readonly reason: OneTimeTokenRefusal };

/** What is stored per token: never the token, only its hash (the key). */
interface TokenRecord {
  readonly email: string;
  /** Epoch ms on the tokens' clock. */
  readonly expiresAt: number;
  /** Epoch ms on the tokens' clock, once used. */
  usedAt?: number;
}

/** Key prefix of the records in the {@link StateStore} (beside oidc-provider's own models). */
const KEY_PREFIX = 'svc.OneTimeToken:';
/** How long a used or expired token is remembered after its lifetime, to say why it is refused. */
const REMEMBERED_AFTER_EXPIRY_MS = 30 * 86_400_000;

/**
 * The development provider's one-time sign-in tokens (spec 5.1.7): a random token for an email,
 * single use, with a lifetime. Only a SHA-256 hash of each token is stored, in the provider's
 * {@link StateStore} (so tokens survive a restart when the store does). Expiry is read on the injected
 * clock's `wallNow()`.
 */
export class OneTimeTokens {
  readonly #store: StateStore;
  readonly #clock: Clock;

  constructor(store: StateStore, clock: Clock = systemClock) {
    this.#store = store;
    this.#clock = clock;
  }

  /**
   * Mints a token for `email`, valid `expiresInSec`. Resolves once it is stored.
   *
   * @throws {TypeError} when `email` is not an email address or `expiresInSec` is not a whole number
   *   in 1..{@link MAX_ONE_TIME_TOKEN_TTL_SEC}.
   */
  async issue(email: string, expiresInSec: number): Promise<string> {
    const normalized = normalizeEmail(email);
    if (normalized === undefined) throw new TypeError('one-time token: expected an email address');
    if (!Number.isInteger(expiresInSec) || expiresInSec < 1 || expiresInSec > MAX_ONE_TIME_TOKEN_TTL_SEC) {
      throw new TypeError(
        `one-time token: expiresInSec ${expiresInSec} is not a whole number in 1..${MAX_ONE_TIME_TOKEN_TTL_SEC}`,
      );
    }
    const token = randomBytes(32).toString('base64url');
    const record: TokenRecord = {
      email: normalized,
      expiresAt: this.#clock.wallNow() + expiresInSec * 1000,
    };
    await this.#store.set(
      keyOf(token),
      { ...record },
      Date.now() + expiresInSec * 1000 + REMEMBERED_AFTER_EXPIRY_MS,
    );
    return token;
  }

  /**
   * Uses `token` for `email`: succeeds once, for the email it was issued for, within its lifetime. A
   * token presented with another email is not used up. The check and the marking happen in one step,
   * so two concurrent redemptions cannot both succeed; resolves once the use is stored.
   */
  async redeem(token: string, email: string): Promise<OneTimeTokenRedemption> {
    const record = this.#store.get(keyOf(token)) as TokenRecord | undefined;
    if (record === undefined) return { ok: false, reason: 'unknown' };
    const now = this.#clock.wallNow();
    if (record.usedAt !== undefined) return { ok: false, reason: 'used' };
    if (record.expiresAt <= now) return { ok: false, reason: 'expired' };
    if (normalizeEmail(email) !== record.email) return { ok: false, reason: 'other-email' };
    record.usedAt = now;
    await this.#store.touched();
    return { ok: true, email: record.email };
  }
}

function keyOf(token: string): string {
  return `${KEY_PREFIX}${createHash('sha256').update(token).digest('base64url')}`;
}
