/** Human identity of svc-cloud: OIDC token verification and the embedded development provider. */
export {
  DEV_STATE_FILES,
  type DevelopmentProviderOptions,
  openDevelopmentProvider,
} from './dev-state.js';
export { IdentityError, type IdentityErrorCode, isIdentityError } from './errors.js';
export { type DevUser, escapeHtml, type LoginPageInput, renderLoginPage, TYPED_NAME } from './login-page.js';
export {
  DEFAULT_MANAGEMENT_RESOURCE,
  MANAGEMENT_SCOPE,
  type ManagementApiOptions,
} from './management-api.js';
export { MAX_ONE_TIME_TOKEN_TTL_SEC } from './one-time-tokens.js';
export {
  createOidcProvider,
  DEFAULT_GROUP_CLAIM,
  type EmbeddedOidcProvider,
  generateCookieKey,
  generateSigningKey,
  type OidcProviderOptions,
  ONE_TIME_TOKEN_PARAM,
  type SigningAlgorithm,
} from './provider.js';
export { StateStore, type StateStoreOptions, type StoredRecord } from './state-store.js';
export {
  OidcVerifier,
  type OidcVerifierOptions,
  type VerifiedAccessToken,
  type VerifiedEmailInput,
  type VerifiedIdToken,
  verifiedEmailClaim,
} from './verifier.js';
