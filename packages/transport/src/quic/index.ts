/**
 * The QUIC layer of the WebTransport server: quiche through the `@matrixai/quic` native binding,
 * with this package owning the UDP socket.
 *
 * @packageDocumentation
 */
export {
  CONGESTION_CONTROLLERS,
  type CongestionControl,
  DEFAULT_TRANSPORT_OPTIONS,
  type QuicTransportOptions,
  type ResolvedTransportOptions,
  resolveTransportOptions,
} from './config.js';
export { QuicConnection } from './connection.js';
export {
  QuicEndpoint,
  type QuicEndpointCounters,
  type QuicEndpointEvents,
  type QuicEndpointOptions,
} from './endpoint.js';
export { type PacketHeader, type PacketType, parsePacketHeader } from './header.js';
export type {
  CloseInitiator,
  QuicCloseInfo,
  QuicConnectionEvents,
  QuicConnectionStats,
  SocketAddress,
  StreamRead,
} from './types.js';
