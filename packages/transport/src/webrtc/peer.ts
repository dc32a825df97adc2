import { randomBytes } from 'node:crypto';
import nodeDataChannel, { type IceServer, type PeerConnection } from 'node-datachannel';
import { TransportError } from '../errors.js';
import { createChannels, nativeCallback, type SessionChannels } from './channels.js';
import { WebRtcSession } from './session.js';

/** A STUN or TURN server, as svc-cloud hands it out (`docs/protocol/webrtc.md`). */
export interface WebRtcIceServer {
  /** `stun:host:port`, `turn:host:port?transport=udp|tcp` or `turns:host:port`. */
  readonly url: string;
  readonly username?: string | undefined;
  readonly credential?: string | undefined;
}

/** Options of either side's peer connection. */
interface PeerOptions {
  /** The request path the session stands for (as the WebTransport CONNECT's). */
  readonly path: string;
  readonly iceServers?: readonly WebRtcIceServer[];
  /** Local address to gather host candidates on (default all). */
  readonly bindAddress?: string;
  /** UDP ports ICE may use (default the system's). */
  readonly portRange?: { readonly min: number; readonly max: number };
  /** Each local ICE candidate, to trickle to the other side. */
  readonly onCandidate: (candidate: string, mid: string) => void;
  /** Give up when the channels are not open this long after the description, ms (default 15 000). */
  readonly connectTimeoutMs?: number;
  /**
   * An exception thrown by `onCandidate` or by a session's handlers (which native code calls: one
   * that escaped would end the process). Default: thrown again on the next tick.
   */
  readonly onError?: (err: unknown) => void;
}

/** What {@link answerWebRtc} needs. */
export interface WebRtcAnswerOptions extends PeerOptions {
  /** The pilot's SDP offer, as signalling carried it (its DTLS fingerprint is checked against it). */
  readonly offerSdp: string;
}

/** One side of a WebRTC session being set up. */
interface WebRtcSetup {
  /** A candidate the other side trickled. Ignored once the session is up or gone. */
  addRemoteCandidate(candidate: string, mid: string): void;
  /** The session, once its channels are open; rejects with a `TransportError` when it cannot be. */
  readonly session: Promise<WebRtcSession>;
  /** Abandons the setup (the session, if it opened, is closed). */
  close(): void;
}

/** The robot's side of one WebRTC session being set up. */
export interface WebRtcAnswer extends WebRtcSetup {
  /** The SDP answer for the pilot. */
  readonly sdp: string;
}

/** The pilot's side of one WebRTC session being set up (a pilot in Node: tools, tests). */
export interface WebRtcOffer extends WebRtcSetup {
  /** The SDP offer for the robot. */
  readonly sdp: string;
  /** The robot's answer; a bad one is a `TransportError` `message-error`. */
  acceptAnswer(sdp: string): void;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;

/**
 * Answers a pilot's WebRTC offer: a peer connection with the three negotiated channels of
 * `docs/protocol/webrtc.md`, its local candidates trickled through `onCandidate`. DTLS is checked
 * against the fingerprint in the offer, which svc-cloud's authenticated signalling carried, so a
 * peer that is not the one who made the offer cannot finish the handshake.
 */
export async function answerWebRtc(options: WebRtcAnswerOptions): Promise<WebRtcAnswer> {
  const pc = newPeer('svcd', options);
  const answered = localDescription(pc);
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
  return { sdp: await answered, ...opening(pc, channels, options, 'closed by the robot') };
}

/**
 * Makes a pilot's WebRTC offer with the three negotiated channels (what the pilot SDK does in the
 * browser with `RTCPeerConnection`), for a pilot in Node.
 */
export async function offerWebRtc(options: PeerOptions): Promise<WebRtcOffer> {
  const pc = newPeer('pilot', options);
  const offered = localDescription(pc);
  const channels = createChannels(pc);
  const sdp = await offered;
  return {
    sdp,
    acceptAnswer(answer) {
      try {
        pc.setRemoteDescription(answer, 'answer');
      } catch (err) {
        throw new TransportError(
          'message-error',
          `the robot's WebRTC answer cannot be used: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    },
    ...opening(pc, channels, options, 'closed by the pilot'),
  };
}

/**
 * Releases libdatachannel's threads once every peer connection is closed; until then they keep
 * the process from exiting. A process that used WebRTC calls it when it stops.
 */
export function closeWebRtc(): void {
  nodeDataChannel.cleanup();
}

function newPeer(name: string, options: PeerOptions): PeerConnection {
  const pc = new nodeDataChannel.PeerConnection(`${name}-${randomBytes(4).toString('hex')}`, {
    iceServers: (options.iceServers ?? []).map(toIceServer),
    ...(options.bindAddress !== undefined && { bindAddress: options.bindAddress }),
    ...(options.portRange !== undefined && {
      portRangeBegin: options.portRange.min,
      portRangeEnd: options.portRange.max,
    }),
  });
  pc.onLocalCandidate(
    nativeCallback((candidate, mid) => options.onCandidate(candidate, mid), options.onError),
  );
  return pc;
}

function localDescription(pc: PeerConnection): Promise<string> {
  return new Promise<string>((resolve) => pc.onLocalDescription((sdp) => resolve(sdp)));
}

/** The session of `pc` once its three channels are open, and how to feed and abandon the setup. */
function opening(
  pc: PeerConnection,
  channels: SessionChannels,
  options: PeerOptions,
  closedBy: string,
): WebRtcSetup {
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  let settled = false;
  let abandon: (reason: string) => void = () => undefined;
  const session = new Promise<WebRtcSession>((resolve, reject) => {
    const timer = setTimeout(
      () => abandon(`no WebRTC connection within ${timeoutMs} ms (ICE found no path, or DTLS failed)`),
      timeoutMs,
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
      resolve(
        new WebRtcSession(
          `rtc-${randomBytes(4).toString('hex')}`,
          options.path,
          pc,
          channels,
          options.onError,
        ),
      );
    };
    for (const channel of Object.values(channels)) channel.onOpen(nativeCallback(opened, options.onError));
    pc.onStateChange(
      nativeCallback((state) => {
        if (state === 'failed' || state === 'closed')
          abandon(`the WebRTC connection ${state} before its channels opened`);
      }, options.onError),
    );
  });
  session.catch(() => undefined);
  return {
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
          (s) => s.close(0, closedBy),
          () => undefined,
        );
      } else abandon(closedBy);
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
