/**
 * The relay of last resort (`docs/protocol/relay.md`): UDP ports per relayed session that forward
 * the pilot's end-to-end QUIC packets to the robot's attached address and back.
 *
 * @packageDocumentation
 */
export {
  type AttachDecision,
  ByteBucket,
  type PortRange,
  RelayAllocation,
  type RelayAllocationOptions,
  type RelayAllocationStats,
} from './allocation.js';
export {
  type AllocationGrant,
  type AllocationRefused,
  type AllocationRequest,
  DEFAULT_MAX_ALLOCATIONS,
  PILOT_GRANT_MS,
  RELAY_SWEEP_MS,
  type RelayAllocationView,
  RelayServer,
  type RelayServerOptions,
  ROBOT_GRANT_MS,
  UNUSED_ALLOCATION_MS,
} from './server.js';
export {
  isRelayTokenProblem,
  type RelayParty,
  type RelayTokenClaims,
  type RelayTokenProblem,
  RelayTokens,
} from './tokens.js';
