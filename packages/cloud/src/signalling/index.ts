/**
 * Signalling v2 (`/ws`) and presence: robots prove their key and announce themselves, pilots get
 * offers, the server keeps each robot's presence, sessions and driver slot (who drives, handover,
 * takeover, and their audit).
 *
 * @packageDocumentation
 */
export {
  DenialWriter,
  type DenialWriterOptions,
  LastSeenWriter,
  ROBOT_DENY_AUDIT,
  RobotKeyLoader,
  type RobotKeyLoaderOptions,
  type RobotKeyRow,
} from './batching.js';
export {
  type ConnectionEvent,
  type ConnectionRole,
  type ConnectionState,
  nextState,
  type OpenState,
  type PilotClaims,
  type PilotState,
  RateBucket,
  type RatePolicy,
  type RateVerdict,
  SignalConnection,
  type SignalConnectionOptions,
  type SignalSocket,
} from './connection.js';
export {
  CONTROL_REFUSAL_COOLDOWN_MS,
  CONTROL_REQUEST_TIMEOUT_MS,
  type ControlOutcome,
  DRIVER_SLOT_AUDIT,
  DriverControl,
  type DriverControlOptions,
  type ReleaseHow,
} from './control.js';
export { PeopleDirectory, type SignalPerson, subjectOf } from './people.js';
export type { VerifiedSessionToken, VerifySessionToken } from './pilot-handlers.js';
export {
  type Announcement,
  type ControlRequest,
  offlineView,
  type PilotLink,
  type PresenceView,
  type RobotLink,
  RobotPresence,
  type SessionRecord,
  type SessionRole,
  type SessionView,
} from './presence.js';
export {
  type RobotChange,
  SIGNAL_PATH,
  type SignallingHandle,
  type SignallingOptions,
  SignallingServer,
  type SignallingStats,
} from './server.js';
