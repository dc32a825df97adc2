/**
 * `@svc/qos`: the QoS profiles and the rules of the closed loop that keeps video live on a bad
 * link: the rate and FEC controller, the recovery ladder, delta-frame admission, the simulcast
 * layer choice and the `video-config` they lead to. Pure: no timers, no I/O, time passed in.
 */
export {
  ABR_REASONS,
  ABR_TUNING,
  type AbrAgentStats,
  AbrController,
  type AbrDecision,
  type AbrMove,
  type AbrOptions,
  type AbrParity,
  type AbrReason,
  type AbrSample,
  abrAgentStats,
} from './abr.js';
export {
  type AdmissionVerdict,
  DeltaAdmission,
  type DeltaAdmissionOptions,
  type DeltaAdmissionStats,
  type FrameToAdmit,
} from './admission.js';
export {
  LAYER_UP_HOLD_MS,
  LAYER_UP_MARGIN,
  LayerSelector,
  type LayerSelectorOptions,
  type SimulcastLayer,
} from './layer-selector.js';
export { parityBytesPerFrame, parityKbpsFor } from './parity-budget.js';
export {
  DEFAULT_QOS_PROFILE,
  PARITY_FLOOR,
  QOS_PROFILE_NAMES,
  QOS_PROFILES,
  type QosProfile,
  type QosProfileName,
  qosProfile,
} from './profiles.js';
export { type BitrateRange, channelBitrateRange } from './range.js';
export {
  LADDER_QUIET_RESET_MS,
  RECOVERY_REQUEST_INTERVAL_MS,
  type RecoveryKind,
  RecoveryLadder,
  type RecoveryLadderOptions,
  type RecoveryLadderStats,
  type RecoveryRequest,
} from './recovery-ladder.js';
export { type VideoConfigInput, type VideoConfigReason, videoConfigFor } from './video-config.js';
