import { loadQuiche } from './binding.js';

/**
 * The part of a QUIC packet header the endpoint routes on (RFC 9000 §17).
 *
 * ```
 * Long header:  |1|1|T T|X X X X| Version (32) | DCID Len (8) | DCID (0..160) | SCID Len (8) | SCID (0..160) | ...
 * Short header: |0|1|S|R R|K|P P| DCID (length known only to the receiver) | Packet Number | ...
 * ```
 */
export interface PacketHeader {
  /** Packet type. */
  readonly type: PacketType;
  /** Version field of a long header; 0 for short headers and version negotiation. */
  readonly version: number;
  /** Destination connection id. */
  readonly dcid: Uint8Array;
  /** Source connection id (empty for short headers). */
  readonly scid: Uint8Array;
}

/** QUIC packet types as quiche names them. */
export type PacketType = 'initial' | 'retry' | 'handshake' | '0rtt' | 'version-negotiation' | 'short';

/** quiche's `Type` enum values, by name; read from the binding when a header is first parsed. */
let typeNames: Readonly<Record<number, PacketType>> | undefined;

function packetTypeNames(quiche: ReturnType<typeof loadQuiche>): Readonly<Record<number, PacketType>> {
  typeNames ??= {
    [quiche.Type.Initial]: 'initial',
    [quiche.Type.Retry]: 'retry',
    [quiche.Type.Handshake]: 'handshake',
    [quiche.Type.ZeroRTT]: '0rtt',
    [quiche.Type.VersionNegotiation]: 'version-negotiation',
    [quiche.Type.Short]: 'short',
  };
  return typeNames;
}

/**
 * Parses the header of the first packet of a UDP datagram with quiche's own parser
 * (`Header.fromSlice`). `shortDcidLength` is the length of the connection ids this endpoint
 * issues, needed because a short header does not carry it. The parser only reads `packet`; the
 * ids it returns are copies.
 *
 * @returns the header, or `null` when the bytes are not a QUIC packet header.
 */
export function parsePacketHeader(packet: Uint8Array, shortDcidLength: number): PacketHeader | null {
  if (packet.byteLength === 0) return null;
  const quiche = loadQuiche();
  let header: ReturnType<typeof quiche.Header.fromSlice>;
  try {
    header = quiche.Header.fromSlice(packet, shortDcidLength);
  } catch {
    return null;
  }
  const type = packetTypeNames(quiche)[header.ty];
  if (type === undefined) return null;
  return { type, version: header.version, dcid: header.dcid, scid: header.scid };
}
