import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link MediaError}. Callers branch on `code`, never on the message.
 *
 * - `bad-url`: an input URL that cannot be used (scheme, host, port).
 * - `bad-codec`: a `codec` value that names no supported framing.
 * - `mjpeg-over-rtp`: Motion JPEG configured on a bare `rtp://` input (RFC 2435 strips the JPEG
 *   headers; only RTSP carries what is needed to rebuild them).
 * - `malformed-rtp`: an RTP packet that does not parse.
 * - `malformed-rtcp`: an RTCP compound packet that does not parse (counted and dropped by the ingest).
 * - `malformed-payload`: an RTP payload the depacketiser cannot use.
 * - `malformed-sdp`: a session description that does not parse or lacks a usable video stream.
 * - `malformed-rtsp`: an RTSP response that does not parse.
 * - `unreachable`: the host refused or did not answer the connection.
 * - `unauthorized`: the camera answered 401 (missing or wrong credentials).
 * - `not-found`: the camera answered 404 (no such mount or stream).
 * - `rtsp-status`: any other non-success RTSP status.
 * - `timeout`: no answer or no packets within the allotted time.
 * - `codec-mismatch`: the stream carries another codec than the one configured.
 * - `closed`: the source was stopped.
 */
export type MediaErrorCode =
  | 'bad-url'
  | 'bad-codec'
  | 'mjpeg-over-rtp'
  | 'malformed-rtp'
  | 'malformed-rtcp'
  | 'malformed-payload'
  | 'malformed-sdp'
  | 'malformed-rtsp'
  | 'unreachable'
  | 'unauthorized'
  | 'not-found'
  | 'rtsp-status'
  | 'timeout'
  | 'codec-mismatch'
  | 'closed';

/** The one error class of `@svc/media`. Messages never contain credentials (URLs are redacted). */
export class MediaError extends CodedError<MediaErrorCode> {
  override readonly name = 'MediaError';
}

/** True when `err` is a {@link MediaError}, optionally with the given code. */
export const isMediaError = codedErrorGuard(MediaError);
