import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { RelayRefusal } from '@svc/wire';

/**
 * Relay tokens: short-lived, one party, one session, one use. svc-cloud mints one for the pilot
 * (in the offer) and one for the robot (in `relay-open`); the relay checks it when the party
 * allocates or attaches. They are HMAC-SHA-256 over their claims with a key that lives in this
 * process only: the node that mints them is the node whose relay they open (a relayed session
 * is pinned to one node), so no other party ever needs to verify one, and a restart, which drops
 * every allocation anyway, makes the old ones worthless.
 *
 * Text form: `svr1.<claims, base64url JSON>.<HMAC, base64url>` (printable ASCII, about 200 bytes).
 */

/** Who a relay token is for. */
export type RelayParty = 'pilot' | 'robot';

/** What a relay token says. */
export interface RelayTokenClaims {
  /** The session it opens a relay for. */
  readonly sid: string;
  /** The robot of that session. */
  readonly rid: string;
  readonly party: RelayParty;
  /** Unique id: a token is used once. */
  readonly jti: string;
  /** Expiry, ms since the epoch. */
  readonly exp: number;
}

/** A token that did not pass, with a reason that never contains the token. */
export interface RelayTokenProblem {
  readonly code: Extract<RelayRefusal, 'bad-token' | 'expired'>;
  readonly message: string;
}

const PREFIX = 'svr1';
const MAX_TOKEN_CHARS = 1024;

/** Mints and checks relay tokens with a key of this process. */
export class RelayTokens {
  readonly #key: Buffer;
  readonly #now: () => number;

  /** @param now - Wall clock, ms since the epoch. */
  constructor(now: () => number, key: Uint8Array = randomBytes(32)) {
    if (key.byteLength < 32) throw new TypeError('a relay token key is at least 32 bytes');
    this.#key = Buffer.from(key);
    this.#now = now;
  }

  /** A token for `party` on session `sid` of robot `rid`, valid until `exp` (ms since the epoch). */
  mint(claims: Omit<RelayTokenClaims, 'jti'>): string {
    const body = Buffer.from(JSON.stringify({ ...claims, jti: randomUUID() })).toString('base64url');
    return `${PREFIX}.${body}.${this.#mac(body).toString('base64url')}`;
  }

  /** The token's claims when its MAC verifies and it has not expired; otherwise why not. */
  check(token: string): RelayTokenClaims | RelayTokenProblem {
    if (token.length > MAX_TOKEN_CHARS) return bad('the relay token is too long');
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== PREFIX) return bad('not a relay token');
    const [, body, mac] = parts as [string, string, string];
    const given = Buffer.from(mac, 'base64url');
    const expected = this.#mac(body);
    if (given.byteLength !== expected.byteLength || !timingSafeEqual(given, expected)) {
      return bad('the relay token does not verify (signed by another node, or altered)');
    }
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return bad('the relay token carries no claims');
    }
    if (!isClaims(claims)) return bad('the relay token carries invalid claims');
    if (claims.exp <= this.#now()) return { code: 'expired', message: 'the relay token has expired' };
    return claims;
  }

  #mac(body: string): Buffer {
    return createHmac('sha256', this.#key).update(`${PREFIX}.${body}`).digest();
  }
}

function bad(message: string): RelayTokenProblem {
  return { code: 'bad-token', message };
}

function isClaims(value: unknown): value is RelayTokenClaims {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.sid === 'string' &&
    typeof c.rid === 'string' &&
    (c.party === 'pilot' || c.party === 'robot') &&
    typeof c.jti === 'string' &&
    typeof c.exp === 'number' &&
    Number.isFinite(c.exp)
  );
}

/** Whether a check gave claims rather than a problem. */
export function isRelayTokenProblem(value: RelayTokenClaims | RelayTokenProblem): value is RelayTokenProblem {
  return 'code' in value;
}
