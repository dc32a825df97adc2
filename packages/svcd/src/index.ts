/**
 * `@svc/svcd`: the robot daemon. The input probe behind `svcd probe-input`, the pilot sessions
 * and their registry, and the robot-side UDP interfaces (sensor input, command output, publisher
 * control).
 */

export {
  type CandidateSourceOptions,
  candidateSource,
  type HostCandidateOptions,
  hostCandidates,
  type InterfaceTable,
} from './candidates.js';
export {
  CommandChannel,
  type CommandChannelStats,
  CommandInbox,
  type CommandInboxStats,
  MAX_COMMAND_BYTES,
} from './command-channel.js';
export {
  CREDENTIAL_FILE_HEADER,
  CredentialError,
  type CredentialErrorCode,
  type CredentialOptions,
  isCredentialError,
  loadOrCreateCredential,
  RobotCredential,
} from './credential.js';
export {
  EnrolmentError,
  type EnrolmentErrorCode,
  type EnrolmentRecord,
  type EnrolmentResult,
  type EnrolOnStartOptions,
  type EnrolOptions,
  enrol,
  enrolmentBaseUrl,
  enrolmentRecordPath,
  enrolOnStart,
  isEnrolmentError,
  type RedeemOptions,
  type RedeemOutcome,
  readEnrolmentRecord,
  redeemEnrolmentToken,
  type StartEnrolment,
} from './enrolment.js';
export {
  PilotSession,
  type PilotSessionDatagramStats,
  type PilotSessionOptions,
} from './pilot-session/session.js';
export { PILOT_SESSION_MOVES, type PilotSessionState } from './pilot-session/state.js';
export { type ProbeLine, type ProbeOptions, type ProbeSummary, probeInput } from './probe.js';
export {
  PublisherControl,
  type PublisherControlOptions,
  type PublisherControlStats,
  videoConfigFor,
} from './publisher-control.js';
export {
  ChannelError,
  type ChannelErrorCode,
  isChannelError,
  SENSOR_PARITY,
  SensorChannel,
  type SensorChannelStats,
  type SensorSubscriber,
} from './sensor-channel.js';
export {
  type AcceptedGrant,
  type Admission,
  type AdmissionRefusalCode,
  type AdmitRequest,
  type AuthorizeSession,
  type OpenSession,
  type SessionEvent,
  type SessionGrant,
  type SessionHello,
  SessionRegistry,
  type SessionRegistryEvents,
  type SessionRegistryOptions,
  type SessionRole,
} from './session-registry.js';
export {
  isSessionTokenError,
  SESSION_JWKS_PATH,
  SESSION_SCOPES,
  SESSION_TOKEN_TYPE,
  type SessionClaims,
  type SessionScope,
  SessionTokenError,
  type SessionTokenErrorCode,
  SessionTokenVerifier,
  type SessionTokenVerifierOptions,
} from './session-tokens.js';
export type { AnnounceState, SignallingSession } from './signalling/announce.js';
export {
  type SessionOpenMessage,
  type SessionRevokedMessage,
  SIGNALLING_TIMING,
  SignallingClient,
  type SignallingClientOptions,
  type SignallingCredential,
  type SignallingIgnored,
} from './signalling/client.js';
export { remedyFor } from './signalling/remedies.js';
export { SIGNALLING_MOVES, type SignallingState } from './signalling/state.js';
