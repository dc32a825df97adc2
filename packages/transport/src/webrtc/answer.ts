import { randomBytes } from 'node:crypto';
import nodeDataChannel, { type DescriptionType, type IceServer } from 'node-datachannel';
import { TransportError } from '../errors.js';
import { createChannels, type SessionChannels } from './channels.js';
import { WebRtcSession } from './session.js';

/** A STUN or TURN server, as svc-cloud hands it out (`docs/protocol/webrtc.md`). */
export interface WebRtcIceServer {
  /** `stun:host:port`, `turn:host:port?transport=udp|tcp` or `turns:host:port`. */
  readonly url: string;
  readonly username?: string;
  readonly credential?: string;
}

/** What {@link answerWebRtc} needs. */
export interface WebRtcAnswerOptions {
  /** The pilot's SDP offer, as signalling carried it (its DTLS fingerprint is checked against it). */
  readonly offerSdp: string;
  /** The request path the session stands for (as the WebTransport CONNECT's). */
  readonly path: string;
  readonly iceServers?: readonly WebRtcIceServer[];
  /** Local address to gather host candidates on (default all). */
  readonly bindAddress?: string;
  /** UDP ports ICE may use (default the system's). */
  readonly portRange?: { readonly min: number; readonly max: number };
  /** Each local ICE candidate, to trickle to the pilot. */
  readonly onCandidate: (candidate: string, mid: string) => void;
  /** Give up when the channels are not open this long after the answer, ms (default 15 000). */
  readonly connectTimeoutMs?: number;
}

/** The robot's side of one WebRTC session being set up. */
export interface WebRtcAnswer {
  /** The SDP answer for the pilot. */
  readonly sdp: string;
  /** A candidate the pilot trickled. Ignored once the session is up or gone. */
  addRemoteCandidate(candidate: string, mid: string): void;
  /** The session, once its channels are open; rejects with a `TransportError` when it cannot be. */
  readonly session: Promise<WebRtcSession>;
  /** Abandons the setup (the session, if it opened, is closed). */
  close(): void;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;

/**
 * Answers a pilot's WebRTC offer: a peer connection with the three negotiated channels of
 * `docs/protocol/webrtc.md`, its local candidates trickled through `onCandidate`. DTLS is checked
 * against the fingerprint in the offer, which svc-cloud's authenticated signalling carried, so a
 * peer that is not the one who made the offer cannot finish the handshake.
 */
export async function answerWebRtc(options: WebRtcAnswerOptions): Promise<WebRtcAnswer> {
  const pc = new nodeDataChannel.PeerConnection(`svcd-${randomBytes(4).toString('hex')}`, {
    iceServers: (options.iceServers ?? []).map(toIceServer),
    ...(options.bindAddress !== undefined && { bindAddress: options.bindAddress }),
    ...(options.portRange !== undefined && {
      portRangeBegin: options.portRange.min,
      portRangeEnd: options.portRange.max,
    }),
  });
  const answered = new Promise<{ sdp: string; type: DescriptionType }>((resolve) => {
    pc.onLocalDescription((sdp, type) => resolve({ sdp, type }));
  });
  pc.onLocalCandidate((candidate, mid) => options.onCandidate(candidate, mid));
  let channels: SessionChannels;
  try {
    pc.setRemoteDescription(options.offerSdp, 'offer');
    channels = createChannels(pc);
  } catch (err) {
    pc.close();
    throw new TransportError(
      'message-error',
      `the pilot's WebRTC offer cannot be used: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const answer = await answered;
  let settled = false;
  let abandon: (reason: string) => void = () => undefined;
  const session = new Promise<WebRtcSession>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        abandon(
          `no WebRTC connection within ${options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS} ms (ICE found no path, or DTLS failed)`,
        ),
      options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    );
    timer.unref();
    abandon = (reason) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      pc.close();
      reject(new TransportError('closed', reason));
    };
    let open = 0;
    const opened = () => {
      if (++open < 3 || settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(new WebRtcSession(`rtc-${randomBytes(4).toString('hex')}`, options.path, pc, channels));
    };
    for (const channel of Object.values(channels)) channel.onOpen(opened);
    pc.onStateChange((state) => {
      if (state === 'failed' || state === 'closed')
        abandon(`the WebRTC connection ${state} before its channels opened`);
    });
  });
  session.catch(() => undefined);
  return {
    sdp: answer.sdp,
    session,
    addRemoteCandidate(candidate, mid) {
      if (settled) return;
      try {
        pc.addRemoteCandidate(candidate, mid);
      } catch {
        // A candidate that does not parse is one path fewer, not a failed session.
      }
    },
    close() {
      if (settled) {
        session.then(
          (s) => s.close(0, 'closed by the robot'),
          () => undefined,
        );
      } else abandon('closed by the robot');
    },
  };
}

/** node-datachannel's form of a STUN or TURN server. */
function toIceServer(server: WebRtcIceServer): string | IceServer {
  const m = /^(stuns?|turns?):([^:?]+|\[[^\]]+\]):(\d+)(?:\?transport=(udp|tcp))?$/.exec(server.url);
  if (m === null)
    throw new TransportError(
      'message-error',
      `"${server.url}" is not a STUN or TURN URL like turn:host:3478`,
    );
  const [, scheme, host, port, transport] = m;
  if (scheme === 'stun' || scheme === 'stuns') return `stun:${host}:${port}`;
  return {
    hostname: host!.replace(/^\[|\]$/g, ''),
    port: Number(port),
    ...(server.username !== undefined && { username: server.username }),
    ...(server.credential !== undefined && { password: server.credential }),
    relayType: scheme === 'turns' ? 'TurnTls' : transport === 'tcp' ? 'TurnTcp' : 'TurnUdp',
  };
}
