import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link IdentityError}. Callers branch on `code`, never on the message.
 *
 * - `token-missing`: no token was presented.
 * - `token-malformed`: the token is not a compact JWS with a JSON header and claims set.
 * - `token-invalid`: the signature does not verify, or the token names an algorithm the verifier never
 *   accepts (`none`, HMAC), or an algorithm its key cannot be used with.
 * - `token-expired`: `exp` lies in the past, beyond the clock tolerance.
 * - `token-not-yet-valid`: `nbf` (or `iat`) lies in the future, beyond the clock tolerance.
 * - `wrong-issuer`: `iss` is not the configured issuer.
 * - `wrong-audience`: `aud` is not the API resource (access token) or the client id (ID token).
 * - `unknown-key`: no key of the issuer's JWKS matches the token's `kid` and algorithm, even after a
 *   refetch of the JWKS (or the refetch is still in its cooldown).
 * - `claim-invalid`: a claim the verifier needs is missing or has the wrong type (`sub`, `azp`).
 * - `subject-mismatch`: the ID token belongs to another subject than the access token.
 * - `provider-unreachable`: the identity provider did not answer (network error or timeout).
 * - `discovery-failed`: the provider answered, but its discovery document or JWKS is unusable.
 * - `userinfo-failed`: the userinfo endpoint answered with something other than claims or a refusal.
 * - `dev-state-corrupt`: a file the development provider keeps in the data folder (its keys, its
 *   sessions) cannot be read as what it should hold; the message names the file and what to do.
 * - `dev-state-unavailable`: the development provider's folder or one of its files cannot be created,
 *   read or written (permissions, a full disk); the message names the path.
 */
export type IdentityErrorCode =
  | 'token-missing'
  | 'token-malformed'
  | 'token-invalid'
  | 'token-expired'
  | 'token-not-yet-valid'
  | 'wrong-issuer'
  | 'wrong-audience'
  | 'unknown-key'
  | 'claim-invalid'
  | 'subject-mismatch'
  | 'provider-unreachable'
  | 'discovery-failed'
  | 'userinfo-failed'
  | 'dev-state-corrupt'
  | 'dev-state-unavailable';

/**
 * The one error class of svc-cloud's identity layer: a rejected token, an unusable identity provider,
 * or development provider state that cannot be used.
 * Messages say what was wrong and never contain a token.
 */
export class IdentityError extends CodedError<IdentityErrorCode> {
  override readonly name = 'IdentityError';
}

/** True when `err` is an {@link IdentityError}, optionally with the given code. */
export const isIdentityError = codedErrorGuard(IdentityError);
