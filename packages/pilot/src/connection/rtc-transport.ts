import {
  decodeRtcClose,
  encodeRtcClose,
  RTC_CHANNELS,
  RTC_DATAGRAM_BUFFER_LIMIT,
  RTC_MAX_CONTROL_MESSAGE_BYTES,
  RTC_MAX_DATAGRAM_BYTES,
} from '@svc/wire';
import type { PilotTransport } from './options.js';

/** How the WebRTC transport's offer, answer and candidates travel (svc-cloud's signalling). */
export interface RtcSignalling {
  /** Sends the SDP offer; resolves with the robot's answer, rejects with why there is none. */
  exchange(offerSdp: string): Promise<string>;
  /** Sends one local ICE candidate to the robot. */
  sendCandidate(candidate: string, mid: string): void;
  /** Calls `listener` with each candidate the robot trickles; returns how to stop. */
  onCandidate(listener: (candidate: string, mid: string) => void): () => void;
}

/** Options of {@link openRtcTransport}. */
export interface RtcTransportOptions {
  readonly signalling: RtcSignalling;
  /** STUN and TURN servers from the offer. */
  readonly iceServers?: readonly RTCIceServer[];
  /** The browser's `RTCPeerConnection` by default. */
  readonly RTCPeerConnectionImpl?: typeof RTCPeerConnection;
}

/** A WebRTC {@link PilotTransport}, which can also say how its packets travel. */
export interface RtcPilotTransport extends PilotTransport {
  /**
   * `relay` when the candidate pair ICE selected goes through a TURN server (a relay candidate on
   * either side), `direct` otherwise; read from the connection's statistics.
   */
  path(): Promise<'direct' | 'relay'>;
}

/** How long the closing side keeps the connection for its close message to leave, ms. */
const CLOSE_LINGER_MS = 100;

/**
 * A session to the robot on WebRTC data channels (`docs/protocol/webrtc.md`) behind the same
 * {@link PilotTransport} face as WebTransport, so the link, the reassembly, decoding and the
 * presenter run unchanged: the `datagrams` channel (unordered, never retransmitted) carries the
 * datagrams, the `control` channel is the one bidirectional stream, and the `session` channel
 * carries the close with its code and reason.
 */
export function openRtcTransport(options: RtcTransportOptions): RtcPilotTransport {
  const Impl = options.RTCPeerConnectionImpl ?? globalThis.RTCPeerConnection;
  if (typeof Impl !== 'function') {
    throw new TypeError(
      'this browser has no RTCPeerConnection (WebRTC), which this robot needs; use a current Chromium, Firefox or Safari',
    );
  }
  const pc = new Impl({ iceServers: [...(options.iceServers ?? [])] });
  const open = (spec: (typeof RTC_CHANNELS)[keyof typeof RTC_CHANNELS]) => {
    const channel = pc.createDataChannel(spec.label, {
      negotiated: true,
      id: spec.id,
      ordered: spec.ordered,
      ...('maxRetransmits' in spec && { maxRetransmits: spec.maxRetransmits }),
    });
    channel.binaryType = 'arraybuffer';
    return channel;
  };
  const control = open(RTC_CHANNELS.control);
  const datagrams = open(RTC_CHANNELS.datagrams);
  const session = open(RTC_CHANNELS.session);

  let closeInfo: WebTransportCloseInfo | undefined;
  let settleClosed: (info: WebTransportCloseInfo) => void = () => undefined;
  const closed = new Promise<WebTransportCloseInfo>((resolve) => {
    settleClosed = resolve;
  });
  let failReady: (err: Error) => void = () => undefined;
  const end = (info: WebTransportCloseInfo, error?: Error) => {
    if (closeInfo !== undefined) return;
    closeInfo = info;
    stopCandidates();
    failReady(error ?? new Error(info.reason ?? 'the WebRTC session closed'));
    settleClosed(info);
    for (const controller of readers) {
      try {
        controller.close();
      } catch {
        // Already closed or errored.
      }
    }
    setTimeout(() => pc.close(), CLOSE_LINGER_MS);
  };

  const ready = new Promise<void>((resolve, reject) => {
    failReady = reject;
    let opened = 0;
    for (const channel of [control, datagrams, session]) {
      channel.addEventListener('open', () => {
        if (++opened === 3) resolve();
      });
    }
  });
  ready.catch(() => undefined);

  session.addEventListener('message', (event) => {
    const close = decodeRtcClose(
      typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data),
    );
    if (close !== undefined) end({ closeCode: close.code, reason: close.reason });
  });
  pc.addEventListener('connectionstatechange', () => {
    const state = pc.connectionState;
    if (state === 'failed' || state === 'closed')
      end({ closeCode: 0, reason: `the WebRTC connection ${state}` });
  });
  control.addEventListener('close', () => end({ closeCode: 0, reason: 'the control channel closed' }));

  // ICE: the robot's candidates wait for its answer; ours go out as they are found.
  const early: [string, string][] = [];
  let described = false;
  const addRemote = (candidate: string, mid: string) => {
    pc.addIceCandidate({ candidate, sdpMid: mid }).catch(() => undefined);
  };
  const stopCandidates = options.signalling.onCandidate((candidate, mid) => {
    if (described) addRemote(candidate, mid);
    else early.push([candidate, mid]);
  });
  pc.addEventListener('icecandidate', (event) => {
    if (event.candidate !== null && event.candidate.candidate !== '')
      options.signalling.sendCandidate(event.candidate.candidate, event.candidate.sdpMid ?? '0');
  });
  void (async () => {
    try {
      await pc.setLocalDescription(await pc.createOffer());
      const answer = await options.signalling.exchange(pc.localDescription!.sdp);
      await pc.setRemoteDescription({ type: 'answer', sdp: answer });
      described = true;
      for (const [candidate, mid] of early.splice(0)) addRemote(candidate, mid);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      end({ closeCode: 0, reason: why }, err instanceof Error ? err : new Error(why));
    }
  })();

  /** Stream controllers to close when the session ends. */
  const readers: ReadableStreamDefaultController<Uint8Array>[] = [];
  const readable = (channel: RTCDataChannel) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        readers.push(controller);
        channel.addEventListener('message', (event) => {
          if (closeInfo !== undefined) return;
          const data = event.data;
          controller.enqueue(
            typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data),
          );
        });
      },
    });
  const datagramsReadable = readable(datagrams);
  let controlTaken = false;

  return {
    ready,
    closed,
    path: async () => selectedPath(await pc.getStats()),
    datagrams: {
      readable: datagramsReadable,
      writable: new WritableStream<Uint8Array>({
        write(chunk) {
          // As a full QUIC datagram queue does: what the channel cannot take now is dropped.
          if (closeInfo !== undefined || datagrams.readyState !== 'open') return;
          if (datagrams.bufferedAmount > RTC_DATAGRAM_BUFFER_LIMIT) return;
          datagrams.send(chunk as Uint8Array<ArrayBuffer>);
        },
      }),
      maxDatagramSize: RTC_MAX_DATAGRAM_BYTES,
    },
    async createBidirectionalStream() {
      await ready;
      if (controlTaken)
        throw new Error('the WebRTC transport has one bidirectional stream, the control stream');
      controlTaken = true;
      return {
        readable: readable(control),
        writable: new WritableStream<Uint8Array>({
          write(chunk) {
            if (closeInfo !== undefined || control.readyState !== 'open') return;
            for (let at = 0; at < chunk.byteLength; at += RTC_MAX_CONTROL_MESSAGE_BYTES) {
              control.send(chunk.subarray(at, at + RTC_MAX_CONTROL_MESSAGE_BYTES) as Uint8Array<ArrayBuffer>);
            }
          },
        }),
      };
    },
    close(info = { closeCode: 0, reason: '' }) {
      if (closeInfo !== undefined) return;
      if (session.readyState === 'open') {
        session.send(encodeRtcClose({ code: info.closeCode ?? 0, reason: info.reason ?? '' }));
      }
      end(info);
    },
  };
}

/**
 * `relay` when the selected candidate pair has a relay candidate on either side. The pair is the
 * transport's `selectedCandidatePairId`, or failing that (older browsers) the nominated pair that
 * succeeded.
 */
export function selectedPath(report: RTCStatsReport): 'direct' | 'relay' {
  const stats = [...report.values()] as (Record<string, unknown> & { type: string; id: string })[];
  const selectedId = stats.find((s) => s.type === 'transport')?.selectedCandidatePairId;
  const pair =
    stats.find((s) => s.type === 'candidate-pair' && s.id === selectedId) ??
    stats.find((s) => s.type === 'candidate-pair' && s.nominated === true && s.state === 'succeeded');
  if (pair === undefined) return 'direct';
  const typeOf = (id: unknown) => stats.find((s) => s.id === id)?.candidateType;
  return typeOf(pair.localCandidateId) === 'relay' || typeOf(pair.remoteCandidateId) === 'relay'
    ? 'relay'
    : 'direct';
}
