import {
  decodeRtcClose,
  encodeRtcClose,
  RTC_DATAGRAM_BUFFER_LIMIT,
  RTC_MAX_CONTROL_MESSAGE_BYTES,
  RTC_MAX_DATAGRAM_BYTES,
} from '@svc/wire';
import type { PeerConnection } from 'node-datachannel';
import type { Session, SessionCloseInfo, SessionHandlers, SessionStats } from '../session.js';
import { nativeCallback, type SessionChannels } from './channels.js';

/** How long a closing side keeps the connection for its close message to leave, ms. */
const CLOSE_LINGER_MS = 100;

/**
 * A pilot's session on WebRTC data channels (`docs/protocol/webrtc.md`): the same {@link Session}
 * the WebTransport backend gives, so the daemon's session code runs on either. Datagrams ride an
 * unordered channel that never retransmits; the control stream is a reliable ordered channel whose
 * messages are read as one byte stream; the close, with its code and reason, goes on a third
 * channel, as the CLOSE_WEBTRANSPORT_SESSION capsule does on the direct path.
 */
export class WebRtcSession implements Session {
  readonly id: string;
  readonly backend = 'webrtc' as const;
  readonly remoteAddress: string;
  readonly path: string;
  readonly #pc: PeerConnection;
  readonly #channels: SessionChannels;
  #handlers: SessionHandlers = {};
  /** Control bytes and datagrams that arrived before handlers were installed. */
  #pendingControl: Uint8Array[] = [];
  #pendingDatagrams: Uint8Array[] = [];
  #closed = false;
  #sent = 0;
  #lastRate = { at: 0, bytes: 0, bps: 0 };

  /**
   * `onError` takes an exception thrown by a handler (native code calls them; one that escaped
   * would end the process); by default it is thrown again on the next tick.
   */
  constructor(
    id: string,
    path: string,
    pc: PeerConnection,
    channels: SessionChannels,
    onError?: (err: unknown) => void,
  ) {
    this.id = id;
    this.path = path;
    this.#pc = pc;
    this.#channels = channels;
    const safe = <A extends unknown[]>(fn: (...args: A) => void) => nativeCallback(fn, onError);
    const pair = pc.getSelectedCandidatePair();
    this.remoteAddress =
      pair === null
        ? 'unknown'
        : pair.remote.address.includes(':')
          ? `[${pair.remote.address}]:${pair.remote.port}`
          : `${pair.remote.address}:${pair.remote.port}`;
    channels.control.onMessage(safe((msg) => this.#onControl(toBytes(msg))));
    channels.datagrams.onMessage(safe((msg) => this.#onDatagram(toBytes(msg))));
    channels.session.onMessage(safe((msg) => this.#onSessionMessage(toBytes(msg))));
    channels.control.onClosed(
      safe(() => this.#ended({ code: 0, reason: 'connection closed', by: 'transport' })),
    );
    pc.onStateChange(
      safe((state) => {
        if (state === 'failed' || state === 'closed' || state === 'disconnected') {
          this.#ended({ code: 0, reason: `peer connection ${state}`, by: 'transport' });
        }
      }),
    );
  }

  /** `relay` when the selected candidate pair runs through a TURN server, `direct` otherwise. */
  get kind(): 'direct' | 'relay' {
    const pair = this.#pc.getSelectedCandidatePair();
    return pair !== null && (pair.local.type === 'relay' || pair.remote.type === 'relay')
      ? 'relay'
      : 'direct';
  }

  get closed(): boolean {
    return this.#closed;
  }

  maxDatagramBytes(): number {
    if (this.#closed || !this.#channels.datagrams.isOpen()) return 0;
    return Math.min(RTC_MAX_DATAGRAM_BYTES, this.#channels.datagrams.maxMessageSize());
  }

  sendDatagram(payload: Uint8Array): boolean {
    if (this.#closed || !this.#channels.datagrams.isOpen()) return false;
    if (this.#channels.datagrams.bufferedAmount() > RTC_DATAGRAM_BUFFER_LIMIT) return false;
    const sent = this.#channels.datagrams.sendMessageBinary(payload);
    if (sent) this.#sent++;
    return sent;
  }

  queuedDatagramBytes(): number {
    return this.#closed ? 0 : this.#channels.datagrams.bufferedAmount();
  }

  writeControl(bytes: Uint8Array): void {
    if (this.#closed) return;
    for (let at = 0; at < bytes.byteLength; at += RTC_MAX_CONTROL_MESSAGE_BYTES) {
      this.#channels.control.sendMessageBinary(bytes.subarray(at, at + RTC_MAX_CONTROL_MESSAGE_BYTES));
    }
  }

  setHandlers(handlers: SessionHandlers): void {
    this.#handlers = handlers;
    const control = this.#pendingControl;
    const datagrams = this.#pendingDatagrams;
    this.#pendingControl = [];
    this.#pendingDatagrams = [];
    for (const bytes of control) handlers.onControlData?.(bytes);
    for (const bytes of datagrams) handlers.onDatagram?.(bytes);
  }

  close(code = 0, reason = ''): void {
    if (this.#closed) return;
    try {
      if (this.#channels.session.isOpen()) {
        this.#channels.session.sendMessage(encodeRtcClose({ code, reason }));
      }
    } catch {
      // The connection is going anyway.
    }
    this.#ended({ code, reason, by: 'local' });
    setTimeout(() => this.#pc.close(), CLOSE_LINGER_MS).unref();
  }

  stats(): SessionStats {
    const now = performance.now();
    const bytes = this.#pc.bytesSent();
    if (now - this.#lastRate.at >= 250) {
      const elapsed = (now - this.#lastRate.at) / 1000;
      this.#lastRate = {
        at: now,
        bytes,
        bps: this.#lastRate.at === 0 ? 0 : ((bytes - this.#lastRate.bytes) * 8) / elapsed,
      };
    }
    const rtt = this.#pc.rtt();
    return {
      rttMs: Math.max(rtt, 0),
      // SCTP's window is not exposed; the send buffer stands for what is in flight.
      cwndBytes: 0,
      deliveryRateBps: this.#lastRate.bps,
      lostPackets: 0,
      sentPackets: this.#sent,
      transportQueuedDatagrams: 0,
    };
  }

  #onControl(bytes: Uint8Array): void {
    if (this.#closed) return;
    if (this.#handlers.onControlData === undefined) this.#pendingControl.push(bytes);
    else this.#handlers.onControlData(bytes);
  }

  #onDatagram(bytes: Uint8Array): void {
    if (this.#closed) return;
    if (this.#handlers.onDatagram === undefined) {
      if (this.#pendingDatagrams.length < 2048) this.#pendingDatagrams.push(bytes);
    } else this.#handlers.onDatagram(bytes);
  }

  #onSessionMessage(bytes: Uint8Array): void {
    const close = decodeRtcClose(new TextDecoder().decode(bytes));
    if (close === undefined) return;
    this.#ended({ ...close, by: 'peer' });
    setTimeout(() => this.#pc.close(), CLOSE_LINGER_MS).unref();
  }

  #ended(info: SessionCloseInfo): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pendingControl = [];
    this.#pendingDatagrams = [];
    this.#handlers.onClose?.(info);
  }
}

/** A message as bytes (text messages, which this protocol does not send, as their UTF-8). */
function toBytes(msg: string | Buffer | ArrayBuffer): Uint8Array {
  if (typeof msg === 'string') return new TextEncoder().encode(msg);
  if (msg instanceof ArrayBuffer) return new Uint8Array(msg);
  return new Uint8Array(msg.buffer, msg.byteOffset, msg.byteLength);
}
