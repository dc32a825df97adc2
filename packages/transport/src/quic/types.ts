/**
 * The shapes a QUIC connection shares with its endpoint and its users: addresses, close
 * information, stream reads, statistics and events.
 */

/** A UDP address as the binding passes it. */
export interface SocketAddress {
  /** IP address literal. */
  readonly host: string;
  /** UDP port. */
  readonly port: number;
}

/** Who ended a connection. */
export type CloseInitiator = 'local' | 'peer' | 'idle-timeout' | 'endpoint';

/** Why a connection ended. */
export interface QuicCloseInfo {
  /**
   * `local`: this side called {@link QuicConnection.close} or quiche closed on a protocol error;
   * `peer`: the peer sent CONNECTION_CLOSE; `idle-timeout`: nothing was heard for the idle
   * timeout; `endpoint`: the endpoint was closed.
   */
  readonly initiator: CloseInitiator;
  /** True when `code` is an application (HTTP/3) error code, false for a QUIC transport error code. */
  readonly applicationError: boolean;
  /** The error code from the CONNECTION_CLOSE frame (0 when none was exchanged). */
  readonly code: number;
  /** The reason phrase from the CONNECTION_CLOSE frame, decoded as UTF-8. */
  readonly reason: string;
}

/** What {@link QuicConnection.streamRecv} returns when there is something to report. */
export type StreamRead =
  | {
      /** Stream bytes, in order. */
      readonly type: 'data';
      /** The bytes read (a fresh copy owned by the caller; may be empty when only `fin` arrived). */
      readonly data: Uint8Array;
      /** True when this read reached the end of the stream. */
      readonly fin: boolean;
    }
  | {
      /** The peer reset its sending side (RESET_STREAM). */
      readonly type: 'reset';
      /** The application error code of the RESET_STREAM frame. */
      readonly errorCode: number;
    };

/** Congestion and loss figures of a connection's active path (quiche `path_stats` and `stats`). */
export interface QuicConnectionStats {
  /** Smoothed round-trip time in milliseconds. The binding truncates it to whole milliseconds. */
  readonly rttMs: number;
  /** Congestion window in bytes. */
  readonly cwndBytes: number;
  /** quiche's latest delivery-rate estimate, in bytes per second. */
  readonly deliveryRateBps: number;
  /** Packets declared lost. */
  readonly lostPackets: number;
  /** Packets sent. */
  readonly sentPackets: number;
  /** Packets received. */
  readonly recvPackets: number;
  /** Packets retransmitted. */
  readonly retransmittedPackets: number;
  /** Bytes sent. */
  readonly sentBytes: number;
  /** Bytes received. */
  readonly recvBytes: number;
  /** Bytes lost. */
  readonly lostBytes: number;
  /** Path MTU quiche currently uses, in bytes. */
  readonly pmtuBytes: number;
  /** Datagrams queued in quiche waiting for the congestion window. */
  readonly sendQueueDatagrams: number;
  /** Bytes of datagrams queued in quiche waiting for the congestion window. */
  readonly sendQueueBytes: number;
}

/** Events of a {@link QuicConnection}: each name with its listener's signature. */
export interface QuicConnectionEvents {
  /**
   * A stream has data, a FIN or a reset to read (also the first sign of a stream the peer
   * opened). Read it with {@link QuicConnection.streamRecv} until it returns `null`; a stream
   * left unread is announced again after the next packet.
   */
  streamReadable: (streamId: number) => void;
  /** A datagram arrived (a fresh buffer owned by the listener). */
  datagram: (bytes: Uint8Array) => void;
  /** The connection is gone; emitted once, after which every method throws or returns nothing. */
  closed: (info: QuicCloseInfo) => void;
}
