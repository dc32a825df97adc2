/**
 * `@svc/pilot`: the browser pilot SDK. It asks svc-cloud for an offer (keeping the signalling
 * connection open for the driver slot's news and handover), connects straight to the robot over
 * WebTransport, sends the driver's commands and receives sensors, and decodes a robot's
 * video channels (WebCodecs for H.264 and H.265, image decoding for Motion JPEG), paints them on a
 * canvas with an adaptive hold, watches for a frozen picture, and keeps their statistics. The
 * custom elements `<svc-pilot>` and `<svc-video>` are in `@svc/pilot/elements`. Browser code only:
 * no Node-only API.
 *
 * @packageDocumentation
 */

export {
  CLOCK_OFFSET_SAMPLES,
  type ClockOffsetEstimate,
  ClockOffsetEstimator,
  type ClockSample,
} from './connection/clock-offset.js';
export { PilotConnection } from './connection/connection.js';
export {
  PILOT_RECONNECT_BACKOFF,
  type PilotChannelStats,
  type PilotConnectionDependencies,
  type PilotConnectionEvents,
  type PilotConnectionStats,
  type PilotConnectOptions,
  type PilotPictureState,
  type PilotSourceState,
  type PilotToken,
  type PilotTransport,
  type RobotAddress,
  type RobotAddressSource,
  type TransportFactory,
} from './connection/options.js';
export {
  type FetchSessionTokenOptions,
  fetchSessionToken,
  isPilotTokenError,
  PILOT_REFUSAL_CODES,
  type PilotRefusal,
  type PilotRefusalCode,
  PilotTokenError,
  type PilotTokenErrorCode,
  refusalOfTokenError,
  tokenScope,
} from './connection/refusal.js';
export {
  openRtcTransport,
  type RtcSignalling,
  type RtcTransportOptions,
} from './connection/rtc-transport.js';
export { MAX_COMMAND_BYTES, type SendCommandOptions } from './connection/session.js';
export {
  type ControlPending,
  type ControlRequest,
  type ControlResult,
  type DriverSlot,
  type HandoverAvailability,
  type HandoverUnavailableReason,
  OFFER_TIMEOUT_MS,
  SIGNAL_RECONNECT_BACKOFF,
  SIGNAL_SILENCE_HEARTBEATS,
  SignalSession,
  type SignalSessionEvents,
  type SignalSessionOptions,
  type SlotUser,
} from './connection/signal-session.js';
export type { PilotConnectionState } from './connection/state.js';
export {
  candidateUrl,
  isOfferError,
  OfferError,
  type OfferErrorCode,
  type RequestOfferOptions,
  type RobotOffer,
  requestOffer,
} from './signalling.js';
export {
  codecFamily,
  codecLabel,
  explainUnsupported,
  type UnsupportedCodec,
  type VideoCodecFamily,
} from './video/codec.js';
export {
  type DecodedFrameMeta,
  type KeyframeRequestReason,
  type KeyframeWaitReason,
  type LossPolicy,
  VideoChannelDecoder,
  type VideoChannelDecoderOptions,
  type VideoChannelDecoderState,
} from './video/decoder.js';
export {
  type ArrivalVerdict,
  JitterEstimator,
  type JitterEstimatorOptions,
  type JitterTuning,
} from './video/jitter.js';
export {
  clearVideoBadge,
  clearVideoMessage,
  showVideoBadge,
  showVideoMessage,
  VIDEO_BADGE_ATTRIBUTE,
  VIDEO_MESSAGE_ATTRIBUTE,
} from './video/message.js';
export {
  type PlayerPaintReport,
  VideoChannelPlayer,
  type VideoChannelPlayerOptions,
} from './video/player.js';
export {
  CanvasPresenter,
  type CanvasPresenterOptions,
  type PaintReport,
  type PresentableFrame,
  type PresentMeta,
  type RequestFrame,
} from './video/presenter.js';
export {
  DEFAULT_STALE_AFTER_MS,
  type PictureState,
  type PictureStateKind,
  StaleWatch,
  type StaleWatchClock,
  type StaleWatchOptions,
} from './video/stale.js';
export {
  type DecodeTimeSnapshot,
  type LatencySnapshot,
  pictureAgeAtPaintMs,
  sendToPaintMs,
  VideoStats,
  type VideoStatsOptions,
  type VideoStatsSnapshot,
} from './video/stats.js';
