/** Human identity of svc-cloud: OIDC token verification and the embedded development provider. */
export { IdentityError, type IdentityErrorCode, isIdentityError } from './errors.js';
export { type DevUser, escapeHtml, type LoginPageInput, renderLoginPage, TYPED_NAME } from './login-page.js';
export {
  createOidcProvider,
  DEFAULT_GROUP_CLAIM,
  type EmbeddedOidcProvider,
  generateSigningKey,
  type OidcProviderOptions,
  type SigningAlgorithm,
} from './provider.js';
export {
  OidcVerifier,
  type OidcVerifierOptions,
  type VerifiedAccessToken,
  type VerifiedEmailInput,
  type VerifiedIdToken,
  verifiedEmailClaim,
} from './verifier.js';
