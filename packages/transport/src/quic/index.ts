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
export {
  type CloseInitiator,
  type QuicCloseInfo,
  QuicConnection,
  type QuicConnectionEvents,
  type QuicConnectionStats,
  type SocketAddress,
  type StreamRead,
} from './connection.js';
export type { EventMap, Listener } from './emitter.js';
export {
  QuicEndpoint,
  type QuicEndpointCounters,
  type QuicEndpointEvents,
  type QuicEndpointOptions,
} from './endpoint.js';
export { type PacketHeader, type PacketType, parsePacketHeader } from './header.js';
