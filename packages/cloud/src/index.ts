/** svc-cloud: the service's public surface. */
export { type AppDependencies, buildApp, loggerOptions } from './app.js';
export {
  type CloudConfig,
  CloudConfigError,
  type ConfigIssue,
  loadCloudConfig,
  PROVISIONING_POLICIES,
  type ProvisioningPolicy,
  ROLES,
  type Role,
} from './config.js';
export {
  createOidcProvider,
  type DevUser,
  type EmbeddedOidcProvider,
  OidcVerifier,
  type OidcVerifierOptions,
} from './identity/index.js';
export {
  type InvitationProvider,
  InvitationProviderError,
  LogtoInvitationProvider,
  type Mailer,
  type MailMessage,
  noInvitationProvider,
} from './invitations/index.js';
export { DEV_USERS, type RunningCloud, startCloud } from './server.js';
