/**
 * `@svc/wire`: the byte layer shared by the robot daemon and the browser pilot. Chunk header,
 * Reed-Solomon erasure code, frame packer and reassembler. Pure TypeScript, no Node-only API.
 */

export {
  captureClockAgeMs,
  captureClockFromMs,
  FRAME_INFO_BYTES,
  type FrameInfo,
  type FrameInfoInput,
  frameInfo,
} from './chunk/frame-info.js';
export {
  CHUNK_HEADER_BYTES,
  type ChunkHeader,
  chunkHeader,
  peekChannel,
  stampSenderTimestamp,
  WIRE_VERSION,
} from './chunk/header.js';
export {
  type ControlCatchUp,
  type ControlChannel,
  ControlLineReader,
  type ControlMessage,
  type ControlRole,
  type ControlSourceState,
  DENIED_CODES,
  type DeniedCode,
  encodeControlMessage,
  MAX_CONTROL_LINE_BYTES,
} from './control.js';
export { isWireError, WireError, type WireErrorCode } from './errors.js';
export {
  activeFecKernel,
  encodeParity,
  type FecKernelName,
  MAX_BLOCK_CHUNKS,
  recoverData,
} from './fec/reed-solomon.js';
export {
  DEFAULT_MAX_BLOCK_DATA,
  DEFAULT_MAX_DATAGRAM_BYTES,
  FramePacker,
  type FrameToPack,
  type PackedFrame,
  type PackerOptions,
} from './packer.js';
export { NO_PARITY, type ParityPolicy, parityCountFor } from './parity.js';
export {
  type DriverIdleMessage,
  decodePublisherControl,
  encodePublisherControl,
  type LayerMessage,
  MAX_PUBLISHER_CONTROL_BYTES,
  type PublisherControlMessage,
  RECOVERY_KINDS,
  type RecoveryRequestMessage,
  type SessionEventMessage,
  VIDEO_CONFIG_REASONS,
  type VideoConfigMessage,
} from './publisher-control.js';
export { QOS_PROFILE_NAMES, type QosProfileName } from './qos-profile.js';
export {
  type AssembledFrame,
  type FrameLoss,
  type FrameLossReason,
  Reassembler,
  type ReassemblerOptions,
  type ReassemblerStats,
} from './reassembler.js';
export {
  decodeRelayControl,
  encodeRelayControl,
  isRelayControl,
  MAX_RELAY_CONTROL_BYTES,
  MAX_RELAY_TOKEN_BYTES,
  RELAY_MAGIC,
  RELAY_REFUSALS,
  type RelayControl,
  type RelayRefusal,
} from './relay.js';
export {
  decodeRtcClose,
  encodeRtcClose,
  RTC_CHANNELS,
  RTC_DATAGRAM_BUFFER_LIMIT,
  RTC_MAX_CONTROL_MESSAGE_BYTES,
  RTC_MAX_DATAGRAM_BYTES,
  type RtcClose,
} from './rtc.js';
export { seqDiff16, seqDiff32, seqLess16, seqNext16, wrapU32 } from './seq.js';
export {
  CONTROL_OUTCOMES,
  type ControlOutcome,
  DENIAL_REASONS,
  type DenialReason,
  encodeSignalMessage,
  isRobotAuth,
  MAX_SIGNAL_MESSAGE_BYTES,
  type PilotAuthMessage,
  parseSignalClientMessage,
  parseSignalServerMessage,
  RELAY_ALLOCATION_REFUSALS,
  type RelayAllocationRefusal,
  ROBOT_ID_PATTERN,
  type RobotAuthMessage,
  RTC_REFUSALS,
  robotChallengePayload,
  SESSION_BACKENDS,
  type SessionBackend,
  type SessionPath,
  SIGNAL_CLOSE,
  SIGNAL_SUBPROTOCOL,
  type SignalCandidate,
  type SignalChannel,
  type SignalClientMessage,
  type SignalOffer,
  type SignalPerson,
  type SignalServerMessage,
} from './signalling.js';
