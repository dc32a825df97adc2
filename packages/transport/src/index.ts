/**
 * `@svc/transport`: the robot side of the direct path. WebTransport over HTTP/3 on QUIC (quiche
 * through the `@matrixai/quic` native binding, this package owning the UDP socket), self-signed
 * certificates with rotation, and the paced datagram send queue.
 */
export * from './cert/index.js';
export { isTransportError, TransportError, type TransportErrorCode } from './errors.js';
export { type QuicBinding, quicBinding } from './quic/binding.js';
export * from './quic/index.js';
export {
  RELAY_ATTACH_RETRY_MS,
  type RelayAttachRequest,
  type RelayAttachResult,
  RelayLegs,
  type RelayLegsOptions,
} from './relay/leg.js';
export {
  PacedSendQueue,
  type PacedSendQueueOptions,
  type QueueOccupancy,
  type SendQueueStats,
} from './send-queue.js';
export type { Session, SessionCloseInfo, SessionHandlers, SessionStats } from './session.js';
export {
  answerWebRtc,
  closeWebRtc,
  offerWebRtc,
  type WebRtcAnswer,
  type WebRtcAnswerOptions,
  type WebRtcIceServer,
  type WebRtcOffer,
} from './webrtc/peer.js';
export { WebRtcSession } from './webrtc/session.js';
export { WebTransportServer, type WebTransportServerOptions } from './webtransport/server.js';
