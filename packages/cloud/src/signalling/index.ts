/**
 * Signalling v2 (`/ws`) and presence: robots prove their key and announce themselves, pilots get
 * offers, the server keeps each robot's presence, sessions and driver slot.
 *
 * @packageDocumentation
 */
export { LastSeenWriter, RobotKeyLoader, type RobotKeyRow } from './batching.js';
export {
  type Announcement,
  offlineView,
  type PilotLink,
  type PresenceView,
  RobotPresence,
  type SessionRecord,
  type SessionRole,
  type SessionView,
} from './presence.js';
export {
  SIGNAL_PATH,
  type SignallingHandle,
  type SignallingLogger,
  type SignallingOptions,
  SignallingServer,
  type SignallingStats,
  type VerifiedSessionToken,
  type VerifySessionToken,
} from './server.js';
