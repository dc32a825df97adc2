/** The decoding paths of the pilot: WebCodecs for H.264 and H.265, image decoding for Motion JPEG. */
export type VideoCodecFamily = 'h264' | 'h265' | 'mjpeg';

/**
 * The family of a channel's `codec` string (section 2.3 of the specification): `avc1.*` is H.264,
 * `hev1.*` and `hvc1.*` are H.265, `mjpeg` is Motion JPEG; anything else is `undefined`.
 */
export function codecFamily(codec: string): VideoCodecFamily | undefined {
  if (codec.startsWith('avc1.')) return 'h264';
  if (codec.startsWith('hev1.') || codec.startsWith('hvc1.')) return 'h265';
  if (codec === 'mjpeg') return 'mjpeg';
  return undefined;
}

/** The name a person knows a codec by (`H.264`, `H.265`, `Motion JPEG`), or the string itself. */
export function codecLabel(codec: string): string {
  const family = codecFamily(codec);
  switch (family) {
    case 'h264':
      return 'H.264';
    case 'h265':
      return 'H.265';
    case 'mjpeg':
      return 'Motion JPEG';
    case undefined:
      return codec;
    default: {
      const unreachable: never = family;
      return unreachable;
    }
  }
}

/** Why a codec cannot be decoded here: a reason on its own, and the sentence to show on screen. */
export interface UnsupportedCodec {
  /** The reason as a clause, e.g. "this browser has no decoder for H.265 (HEVC) — …". */
  readonly reason: string;
  /** The full on-screen message, naming the codec string. */
  readonly message: string;
}

/**
 * Explains why `codec` cannot be decoded, given which part was missing.
 *
 * @param codec - The channel's codec string, unchanged.
 * @param missing - `decoder`: the browser has no decoder for this configuration;
 *   `webcodecs`: the browser lacks the API itself; `unknown-codec`: the string names no codec the
 *   pilot handles; `malformed`: the browser rejected the string (`detail` says how);
 *   `failing`: the decoder kept failing without producing a picture (`detail` says how).
 * @param detail - The browser's own error message, when there is one.
 */
export function explainUnsupported(
  codec: string,
  missing: 'decoder' | 'webcodecs' | 'unknown-codec' | 'malformed' | 'failing',
  detail?: string,
): UnsupportedCodec {
  const label = codecLabel(codec);
  const family = codecFamily(codec);
  const name = label === codec ? `“${codec}”` : `${label} (${codec})`;
  let reason: string;
  let clause: string;
  switch (missing) {
    case 'decoder':
      if (family === 'h265') {
        reason =
          'this browser has no decoder for H.265 (HEVC) — Chromium decodes it only with a hardware decoder';
        clause = 'this browser has no decoder for it — Chromium decodes HEVC only with a hardware decoder';
      } else {
        reason = `this browser has no decoder for ${label} with this profile and level`;
        clause = 'this browser has no decoder for this profile and level';
      }
      break;
    case 'webcodecs':
      reason =
        'this browser has no WebCodecs video decoding (it needs a recent Chromium, Edge or Safari, and a secure page: HTTPS or localhost)';
      clause = reason;
      break;
    case 'unknown-codec':
      reason = `“${codec}” is not a codec the pilot decodes (expected avc1.*, hev1.*, hvc1.* or mjpeg)`;
      clause = 'it is not a codec the pilot decodes (expected avc1.*, hev1.*, hvc1.* or mjpeg)';
      break;
    case 'malformed':
      reason = `the browser rejected the codec string${detail ? `: ${detail}` : ''}`;
      clause = reason;
      break;
    case 'failing':
      reason = `the ${label} decoder keeps failing without producing a picture${detail ? ` (${detail})` : ''}`;
      clause = reason;
      break;
    default: {
      const unreachable: never = missing;
      throw new TypeError(`unknown reason ${String(unreachable)}`);
    }
  }
  return { reason, message: `Cannot decode ${name}: ${clause}.` };
}
