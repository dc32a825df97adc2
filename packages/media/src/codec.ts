import { MediaError } from './errors.js';
import type { CodecFamily } from './types.js';

/**
 * The RTP framing a channel's `codec` value selects (spec 2.3 rule 1): `avc1.*` H.264,
 * `hev1.*`/`hvc1.*` H.265, `mjpeg` Motion JPEG. Throws `MediaError('bad-codec')` otherwise.
 */
export function codecFamily(codec: string): CodecFamily {
  if (/^avc1\.[0-9a-f]{6}$/i.test(codec)) return 'h264';
  if (/^(hev1|hvc1)\.[0-9a-z.]+$/i.test(codec)) return 'h265';
  if (codec === 'mjpeg') return 'mjpeg';
  throw new MediaError(
    'bad-codec',
    `codec "${codec}" is not one this service carries: use a WebCodecs string avc1.<6 hex digits> (H.264), ` +
      'hev1.<...> or hvc1.<...> (H.265), or mjpeg (Motion JPEG)',
  );
}

/** The RTP encoding names (SDP `rtpmap`) of each framing. */
export const RTP_ENCODING_NAMES: Readonly<Record<CodecFamily, string>> = {
  h264: 'H264',
  h265: 'H265',
  mjpeg: 'JPEG',
};

/**
 * Checks a video channel's `input` against its `codec` before anything starts (spec 2.3 rule 4):
 * the URL scheme must be `rtsp://` or `rtp://`, and Motion JPEG must come over RTSP. Returns the
 * codec family. Throws `MediaError` (`bad-url`, `bad-codec`, `mjpeg-over-rtp`) with an explanation.
 */
export function checkVideoInput(input: string, codec: string): CodecFamily {
  const family = codecFamily(codec);
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(input)?.[1]?.toLowerCase();
  if (scheme !== 'rtsp' && scheme !== 'rtp') {
    throw new MediaError(
      'bad-url',
      `video input must be an rtsp:// or rtp:// URL, got "${scheme ?? 'no scheme'}:"`,
    );
  }
  if (family === 'mjpeg' && scheme === 'rtp') {
    throw new MediaError(
      'mjpeg-over-rtp',
      'Motion JPEG cannot be taken from a bare rtp:// input: RTP/JPEG (RFC 2435) strips the JPEG headers and ' +
        'the stream description needed to rebuild them travels only over RTSP, so the channel would deliver ' +
        'nothing. Serve the camera over RTSP and set input = "rtsp://..."',
    );
  }
  return family;
}

/** Log text for the Motion JPEG bandwidth warning (spec 2.3 rule 3). */
export const MJPEG_BANDWIDTH_WARNING =
  'Motion JPEG uses several times the bandwidth of H.264 at equal quality; on a constrained link prefer an ' +
  'H.264 stream from the camera (codec = "avc1.<profile-level>")';
