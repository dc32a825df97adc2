/** Path statistics of a session's transport. */
export interface SessionStats {
  /** Smoothed round-trip time, ms. */
  readonly rttMs: number;
  /** Congestion window, bytes. */
  readonly cwndBytes: number;
  /** Delivery-rate estimate, bits per second. */
  readonly deliveryRateBps: number;
  /** Packets declared lost since the session began. */
  readonly lostPackets: number;
  /** Packets sent since the session began. */
  readonly sentPackets: number;
  /** Datagrams waiting in the transport below this session. */
  readonly transportQueuedDatagrams: number;
}

/** Why a session ended. */
export interface SessionCloseInfo {
  /** WebTransport application error code (0 for a clean close). */
  readonly code: number;
  readonly reason: string;
  /** Which side ended it: `local`, `peer`, or `transport` (connection lost or idle). */
  readonly by: 'local' | 'peer' | 'transport';
}

/** Handlers a session owner installs. */
export interface SessionHandlers {
  /** One datagram from the peer (a fresh buffer). */
  readonly onDatagram?: (payload: Uint8Array) => void;
  /** Bytes on the reliable control stream, in order. */
  readonly onControlData?: (bytes: Uint8Array) => void;
  /** The session ended; called once. */
  readonly onClose?: (info: SessionCloseInfo) => void;
}

/**
 * One pilot's session, whatever carries it: WebTransport on the direct path today, the cloud relay
 * later. Datagrams are unreliable and unordered; the control stream is the first bidirectional
 * stream the pilot opens, reliable and ordered.
 */
export interface Session {
  /** Unique within the process, for logs. */
  readonly id: string;
  readonly kind: 'direct' | 'relay';
  /** What carries it: WebTransport over QUIC, or WebRTC data channels. */
  readonly backend: 'quic' | 'webrtc';
  /** The peer's address, `host:port`. */
  readonly remoteAddress: string;
  /** The request path the session was opened on. */
  readonly path: string;
  /** Largest datagram payload that fits now (0 before the transport is ready). */
  maxDatagramBytes(): number;
  /** Sends one datagram; `false` when the transport's queue is full and it was not sent. */
  sendDatagram(payload: Uint8Array): boolean;
  /** Queues bytes on the control stream (reliable, ordered). */
  writeControl(bytes: Uint8Array): void;
  /** Installs the handlers; data that arrived before is delivered now. */
  setHandlers(handlers: SessionHandlers): void;
  /** Ends the session with a WebTransport application error code and a reason. */
  close(code?: number, reason?: string): void;
  readonly closed: boolean;
  stats(): SessionStats;
  /**
   * Bytes of datagrams the transport has taken but not yet put on the wire (waiting for the
   * congestion window): cheap enough to read for every frame, unlike {@link stats}.
   */
  queuedDatagramBytes(): number;
}
