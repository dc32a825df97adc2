/** svc-cloud: the service's public surface. */

export { mayManageRole, PERMISSIONS, type Permission } from './api/authz.js';
export { type AppDependencies, buildApp, cloudLogger } from './app.js';
export {
  type CloudConfig,
  CloudConfigError,
  type CloudConfigErrorCode,
  type ConfigIssue,
  isCloudConfigError,
  loadCloudConfig,
  PROVISIONING_POLICIES,
  type ProvisioningPolicy,
  ROLES,
  type Role,
} from './config.js';
export {
  DEMO_ROBOT_ID,
  DEMO_ROBOT_NAME,
  DEMO_TOKEN_FILE,
  type DemoOptions,
  type DemoState,
  demoRobotDir,
  prepareDemo,
} from './demo.js';
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
  type InvitationProviderErrorCode,
  isInvitationProviderError,
  LogtoInvitationProvider,
  type Mailer,
  type MailMessage,
  noInvitationProvider,
} from './invitations/index.js';
export {
  type AllocationGrant,
  type AllocationRefused,
  type AllocationRequest,
  RelayServer,
  type RelayServerOptions,
} from './relay/index.js';
export { DEV_USERS, type RunningCloud, startCloud } from './server.js';
