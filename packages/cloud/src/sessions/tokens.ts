import { CodedError, codedErrorGuard } from '@svc/runtime';
import { z } from 'zod';

/** The only algorithm of pilot session tokens (spec 5.2 and 9: the service's own tokens are fixed to ES256). */
export const SESSION_TOKEN_ALG = 'ES256';
/** The `typ` header of every pilot session token, so no other JWT of the service passes for one. */
export const SESSION_TOKEN_TYP = 'svc-session+jwt';
/** Where the public keys of pilot session tokens are published. */
export const SESSION_JWKS_PATH = '/.well-known/svc-session-jwks.json';

/** What a pilot session token allows on its robot: send commands (`drive`), or only watch (`observe`). */
export const SESSION_SCOPES = ['drive', 'observe'] as const;
/** One of {@link SESSION_SCOPES}. */
export type SessionScope = (typeof SESSION_SCOPES)[number];

/**
 * The claims of a pilot session token.
 *
 * - `iss`: the service's public URL.
 * - `sub`: `user:<user id>`, `key:<API key id>`, or `anonymous` (development mode only).
 * - `act`: for an API key, the customer's own user id it named (`subject` of the request).
 * - `aud`: the robot id; the robot accepts only tokens for itself.
 * - `scope`: `drive` or `observe`.
 * - `org`: the robot's org id; absent for a robot without an org.
 * - `iat`, `exp`: seconds since the epoch.
 * - `jti`: a random UUID naming this token (the audit log records it).
 */
export interface SessionTokenClaims {
  readonly iss: string;
  readonly sub: string;
  readonly act?: string;
  readonly aud: string;
  readonly scope: SessionScope;
  readonly org?: string;
  readonly iat: number;
  readonly exp: number;
  readonly jti: string;
}

/** Schema of {@link SessionTokenClaims}, applied to every verified token. */
export const sessionTokenClaimsSchema = z.object({
  iss: z.string().min(1),
  sub: z.string().min(1),
  act: z.string().min(1).optional(),
  aud: z.string().min(1),
  scope: z.enum(SESSION_SCOPES),
  org: z.string().min(1).optional(),
  iat: z.number().int(),
  exp: z.number().int(),
  jti: z.string().min(1),
});

/**
 * Stable codes of {@link SessionTokenError}. Callers branch on `code`, never on the message.
 *
 * - `token-malformed`: not a compact JWS with a JSON header and claims set.
 * - `token-invalid`: the signature does not verify, the header is not `alg: ES256` with the session
 *   token `typ`, or the token names no `kid`.
 * - `unknown-key`: no published session key has the token's `kid` (never ours, or expired and deleted).
 * - `token-expired`: `exp` lies in the past.
 * - `claim-invalid`: `iss` is not this service, `aud` is not the expected robot, or a claim is missing
 *   or of the wrong type.
 * - `no-signing-key`: the store holds no key that may sign now, even after reloading (database down).
 */
export type SessionTokenErrorCode =
  | 'token-malformed'
  | 'token-invalid'
  | 'unknown-key'
  | 'token-expired'
  | 'claim-invalid'
  | 'no-signing-key';

/** A pilot session token that does not verify, or a key store that cannot sign. Never carries a token. */
export class SessionTokenError extends CodedError<SessionTokenErrorCode> {
  override readonly name = 'SessionTokenError';
}

/** True when `err` is a {@link SessionTokenError}, optionally with the given code. */
export const isSessionTokenError = codedErrorGuard(SessionTokenError);
