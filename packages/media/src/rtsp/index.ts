/**
 * The RTSP client of the video ingest: one session ({@link RtspClient}), a self-healing feed
 * ({@link RtspSource}), and the protocol pieces they are built from.
 *
 * @packageDocumentation
 */
export {
  type AuthChallenge,
  type AuthenticatorOptions,
  type DigestAlgorithmName,
  type DigestInput,
  digestResponse,
  parseAuthenticateHeaders,
  RtspAuthenticator,
  type RtspCredentials,
} from './auth.js';
export {
  DEFAULT_RTSP_TIMEOUT_MS,
  RtspClient,
  type RtspClientOptions,
  type RtspClientState,
  type RtspOptions,
} from './client.js';
export {
  parsePublicHeader,
  parseSessionHeader,
  parseTransportHeader,
  type SessionHeader,
  type TransportHeader,
} from './headers.js';
export {
  type InterleavedFrame,
  RTSP_LIMITS,
  RtspHeaders,
  type RtspMessage,
  RtspMessageParser,
  type RtspRequest,
  type RtspResponse,
  type RtspServerRequest,
  serializeRequest,
  serializeResponse,
} from './message.js';
export {
  DEFAULT_HEALTHY_AFTER_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  RtspSource,
  type RtspSourceOptions,
  type RtspSourceState,
  type RtspSourceStateDetail,
} from './source.js';
export { DEFAULT_SESSION_TIMEOUT_S, keepAliveIntervalMs } from './timing.js';
