/**
 * `@svc/media`: the robot daemon's view of its cameras. RTP over UDP and RTSP in, whole access
 * units out (Annex B for H.264/H.265, complete JPEGs for Motion JPEG), without ever decoding.
 */
export { splitAnnexB } from './annexb.js';
export { checkVideoInput, codecFamily, MJPEG_BANDWIDTH_WARNING, RTP_ENCODING_NAMES } from './codec.js';
export { applyRtspCredentials, type RtspCredentialEnv } from './credentials.js';
export { isMediaError, MediaError, type MediaErrorCode } from './errors.js';
export { H264Depacketizer, type H264DepacketizerOptions } from './h264/depacketizer.js';
export { h264CodecString } from './h264/sps.js';
export { H265Depacketizer, type H265DepacketizerOptions } from './h265/depacketizer.js';
export { h265CodecString } from './h265/sps.js';
export {
  DEFAULT_NO_DATA_AFTER_MS,
  RtpPipeline,
  type RtpPipelineOptions,
  VideoIngest,
  type VideoIngestOptions,
  type VideoIngestStats,
} from './ingest.js';
export { JpegDepacketizer, type JpegDepacketizerOptions } from './jpeg/depacketizer.js';
export {
  CaptureClock,
  type CaptureClockOptions,
  type CaptureClockStats,
  DEFAULT_MAX_CAPTURE_SKEW_MS,
} from './rtp/capture-clock.js';
export { RtpClock } from './rtp/clock.js';
export { isRtcp, parseRtpPacket, RTP_HEADER_BYTES } from './rtp/packet.js';
export { ReorderBuffer, type ReorderOptions, type ReorderSink, type ReorderStats } from './rtp/reorder.js';
export {
  ntpToUnixMs,
  parseRtcpCompound,
  RTCP_SENDER_REPORT,
  type RtcpCompound,
  type SenderReport,
} from './rtp/rtcp.js';
export { parseRtpUrl, type RtpEndpoint, UdpRtpSource, type UdpRtpSourceOptions } from './rtp/udp-source.js';
export {
  RtspClient,
  type RtspClientOptions,
  type RtspOptions,
  RtspSource,
  type RtspSourceOptions,
  type RtspSourceState,
  type RtspSourceStateDetail,
} from './rtsp/index.js';
export {
  decodeSpropParameterSets,
  parseSdp,
  resolveControlUrl,
  type SdpMedia,
  type SessionDescription,
} from './sdp.js';
export {
  SourceMonitor,
  type SourceMonitorOptions,
  type SourceState,
  type SourceStatus,
} from './source-monitor.js';
export type {
  AccessUnit,
  AccessUnitDetails,
  CaptureTime,
  CodecFamily,
  Depacketizer,
  DepacketizerStats,
  RtpPacket,
} from './types.js';
