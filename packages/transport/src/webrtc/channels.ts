import type { DataChannelInitConfig, PeerConnection } from 'node-datachannel';

/**
 * The data channels of a WebRTC session, negotiated out of band (fixed ids on both sides, no
 * in-band open handshake), so they exist the moment DTLS and SCTP are up (`docs/protocol/webrtc.md`).
 */
export const CHANNELS = {
  /** The control stream: reliable and ordered; its messages are read as one byte stream. */
  control: { label: 'control', id: 0, config: { negotiated: true, id: 0 } },
  /** Datagrams (video and sensor chunks, commands): unordered, never retransmitted. */
  datagrams: {
    label: 'datagrams',
    id: 1,
    config: { negotiated: true, id: 1, unordered: true, maxRetransmits: 0 },
  },
  /** The session's own messages (its close, with a code and a reason): reliable and ordered. */
  session: { label: 'session', id: 2, config: { negotiated: true, id: 2 } },
} as const satisfies Record<string, { label: string; id: number; config: DataChannelInitConfig }>;

/**
 * Largest datagram payload: one SCTP DATA chunk in one DTLS record in one UDP datagram on a path
 * of 1280-byte IPv6 packets (40 IP + 8 UDP + 13 DTLS header + up to 50 of DTLS cipher overhead and
 * padding + 12 SCTP common header + 16 DATA chunk header, rounded down). A larger message would be
 * split across packets, and an unreliable one is lost whole when any of them is.
 */
export const MAX_DATAGRAM_BYTES = 1140;

/** Control bytes are sent in messages of at most this many bytes (below every stack's limit). */
export const MAX_CONTROL_MESSAGE_BYTES = 16 * 1024;

/**
 * `fn` made safe to hand to libdatachannel: an exception thrown in a callback that native code
 * called ends the process (`terminate`), so it is caught here and passed to `onError` (by default
 * thrown again from a fresh tick, where Node reports it with its stack like any other).
 */
export function nativeCallback<A extends unknown[]>(
  fn: (...args: A) => void,
  onError: (err: unknown) => void = (err) =>
    process.nextTick(() => {
      throw err;
    }),
): (...args: A) => void {
  return (...args) => {
    try {
      fn(...args);
    } catch (err) {
      onError(err);
    }
  };
}

/** The three channels of `pc`, created with the same ids on either side. */
export function createChannels(pc: PeerConnection) {
  return {
    control: pc.createDataChannel(CHANNELS.control.label, CHANNELS.control.config),
    datagrams: pc.createDataChannel(CHANNELS.datagrams.label, CHANNELS.datagrams.config),
    session: pc.createDataChannel(CHANNELS.session.label, CHANNELS.session.config),
  };
}

export type SessionChannels = ReturnType<typeof createChannels>;
