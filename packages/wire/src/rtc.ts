/**
 * The data channels of a session on WebRTC, as both sides create them (`docs/protocol/webrtc.md`):
 * negotiated out of band with fixed ids, so no in-band open handshake is needed.
 */
export const RTC_CHANNELS = {
  /** The control stream: reliable and ordered; its messages are read as one byte stream. */
  control: { label: 'control', id: 0, ordered: true },
  /** Datagrams (video and sensor chunks, commands): unordered, never retransmitted. */
  datagrams: { label: 'datagrams', id: 1, ordered: false, maxRetransmits: 0 },
  /** The session's own messages (its close, with a code and a reason): reliable and ordered. */
  session: { label: 'session', id: 2, ordered: true },
} as const;

/**
 * Largest datagram payload: one SCTP DATA chunk in one DTLS record in one UDP datagram on a path
 * of 1280-byte IPv6 packets (40 IP + 8 UDP + 13 DTLS header + up to 50 of DTLS cipher overhead and
 * padding + 12 SCTP common header + 16 DATA chunk header, rounded down). A larger message would be
 * split across packets, and an unreliable one is lost whole when any of them is.
 */
export const RTC_MAX_DATAGRAM_BYTES = 1140;

/** Control bytes are sent in messages of at most this many bytes (below every stack's limit). */
export const RTC_MAX_CONTROL_MESSAGE_BYTES = 16 * 1024;

/** A sender refuses datagrams while this many bytes wait in its datagram channel. */
export const RTC_DATAGRAM_BUFFER_LIMIT = 256 * 1024;

/** Longest close reason, in UTF-16 code units. */
const MAX_CLOSE_REASON = 512;

/** A session's close, as the `session` channel carries it. */
export interface RtcClose {
  /** The WebTransport application error code the session ends with (0: a clean close). */
  readonly code: number;
  readonly reason: string;
}

/** The `session` channel's text for a close (its reason cut to 512 characters). */
export function encodeRtcClose(close: RtcClose): string {
  return JSON.stringify({ type: 'close', code: close.code, reason: close.reason.slice(0, MAX_CLOSE_REASON) });
}

/**
 * A `session` channel message as a close; `undefined` for anything else (not JSON, another
 * `type`), which the receiver ignores.
 */
export function decodeRtcClose(text: string): RtcClose | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof message !== 'object' || message === null) return undefined;
  const { type, code, reason } = message as { type?: unknown; code?: unknown; reason?: unknown };
  if (type !== 'close') return undefined;
  return {
    code: typeof code === 'number' && Number.isInteger(code) && code >= 0 ? code : 0,
    reason: typeof reason === 'string' ? reason.slice(0, MAX_CLOSE_REASON) : '',
  };
}
