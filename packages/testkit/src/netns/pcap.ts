/**
 * A small reader for the classic pcap files tcpdump writes (`-w`), and a decoder of the UDP
 * datagrams in them, over IPv4 and IPv6.
 */

/** Link-layer header types (tcpdump.org "LINK-LAYER HEADER TYPES") the decoder understands. */
export const LinkType = {
  /** Ethernet: veth interfaces, and `lo` on Linux. */
  EN10MB: 1,
  /** Raw IP, no link header. */
  RAW: 101,
  /** Linux "cooked" capture v1 (`tcpdump -i any` before libpcap 1.10). */
  LINUX_SLL: 113,
  /** Raw IPv4. */
  IPV4: 228,
  /** Raw IPv6. */
  IPV6: 229,
  /** Linux "cooked" capture v2 (`tcpdump -i any` with libpcap 1.10 and later). */
  LINUX_SLL2: 276,
} as const;

/** One record of a pcap file: when it was captured and the bytes captured. */
export interface PcapRecord {
  /** Capture time in milliseconds since the Unix epoch (fractional). */
  readonly time: number;
  /** Length of the packet on the wire; more than `data.length` when the snap length cut it. */
  readonly originalLength: number;
  /** The captured bytes, starting with the link-layer header. */
  readonly data: Uint8Array;
}

/** The contents of a pcap file. */
export interface PcapFile {
  /** The link-layer header type of every record ({@link LinkType}). */
  readonly linkType: number;
  readonly records: readonly PcapRecord[];
  /**
   * True when the bytes end inside a record (a file still being written): the records before it
   * are returned, the partial one is not.
   */
  readonly incompleteTail: boolean;
}

/** One UDP datagram seen in a capture. */
export interface UdpPacket {
  /** Capture time in milliseconds since the Unix epoch (fractional). */
  readonly time: number;
  readonly family: 4 | 6;
  /** Source address, in the form Node prints (`198.19.0.2`, `fd00:19::2`). */
  readonly src: string;
  readonly dst: string;
  readonly srcPort: number;
  readonly dstPort: number;
  /** The UDP payload. */
  readonly payload: Uint8Array;
}

const GLOBAL_HEADER_BYTES = 24;
const RECORD_HEADER_BYTES = 16;
const MAGIC_MICROSECONDS = 0xa1b2c3d4;
const MAGIC_NANOSECONDS = 0xa1b23c4d;
/** Larger records are rejected before anything is allocated: no capture here has such packets. */
const MAX_RECORD_BYTES = 1 << 20;

/**
 * Parses a classic pcap file (not pcapng).
 *
 * ```
 * Global header (24 bytes), in the writer's byte order, told by the magic number:
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |          magic (a1b2c3d4: µs, a1b23c4d: ns timestamps)        |  0
 * |     version major (2)         |     version minor (4)         |  4
 * |                   reserved (thiszone)                         |  8
 * |                   reserved (sigfigs)                          | 12
 * |                   snap length                                 | 16
 * |                   link type                                   | 20
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * Record: header (16 bytes), then `captured length` bytes of packet data:
 * |                   timestamp, seconds                          |  0
 * |                   timestamp, µs or ns                         |  4
 * |                   captured length                             |  8
 * |                   original length                             | 12
 * ```
 *
 * @throws Error when the bytes are not a pcap file, or a record is implausibly large.
 */
export function readPcap(bytes: Uint8Array): PcapFile {
  if (bytes.length < GLOBAL_HEADER_BYTES) {
    throw new Error(`not a pcap file: ${bytes.length} bytes, a pcap header has ${GLOBAL_HEADER_BYTES}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magicBig = view.getUint32(0, false);
  const magicLittle = view.getUint32(0, true);
  let littleEndian: boolean;
  let nanoseconds: boolean;
  if (magicLittle === MAGIC_MICROSECONDS || magicLittle === MAGIC_NANOSECONDS) {
    littleEndian = true;
    nanoseconds = magicLittle === MAGIC_NANOSECONDS;
  } else if (magicBig === MAGIC_MICROSECONDS || magicBig === MAGIC_NANOSECONDS) {
    littleEndian = false;
    nanoseconds = magicBig === MAGIC_NANOSECONDS;
  } else {
    throw new Error(`not a pcap file: magic number 0x${magicBig.toString(16).padStart(8, '0')}`);
  }
  const linkType = view.getUint32(20, littleEndian);
  const records: PcapRecord[] = [];
  let offset = GLOBAL_HEADER_BYTES;
  while (offset < bytes.length) {
    if (bytes.length - offset < RECORD_HEADER_BYTES) {
      return { linkType, records, incompleteTail: true };
    }
    const seconds = view.getUint32(offset, littleEndian);
    const fraction = view.getUint32(offset + 4, littleEndian);
    const capturedLength = view.getUint32(offset + 8, littleEndian);
    const originalLength = view.getUint32(offset + 12, littleEndian);
    if (capturedLength > MAX_RECORD_BYTES) {
      throw new Error(
        `pcap record at byte ${offset} claims ${capturedLength} bytes (more than ${MAX_RECORD_BYTES})`,
      );
    }
    const start = offset + RECORD_HEADER_BYTES;
    if (bytes.length - start < capturedLength) {
      return { linkType, records, incompleteTail: true };
    }
    records.push({
      time: seconds * 1000 + (nanoseconds ? fraction / 1e6 : fraction / 1e3),
      originalLength,
      data: bytes.subarray(start, start + capturedLength),
    });
    offset = start + capturedLength;
  }
  return { linkType, records, incompleteTail: false };
}

const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_IPV6 = 0x86dd;
const ETHERTYPE_VLAN = 0x8100;
const ETHERTYPE_QINQ = 0x88a8;
const IP_PROTOCOL_UDP = 17;
const UDP_HEADER_BYTES = 8;

/** Where the IP packet starts in a record, and its ethertype; undefined for other protocols. */
function ipStart(linkType: number, data: Uint8Array): { offset: number; etherType: number } | undefined {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  switch (linkType) {
    case LinkType.EN10MB: {
      // destination MAC (6), source MAC (6), ethertype (2); 802.1Q tags (4 each) before the type.
      let offset = 12;
      for (;;) {
        if (data.length < offset + 2) return undefined;
        const etherType = view.getUint16(offset, false);
        if (etherType !== ETHERTYPE_VLAN && etherType !== ETHERTYPE_QINQ)
          return { offset: offset + 2, etherType };
        offset += 4;
      }
    }
    case LinkType.LINUX_SLL:
      // packet type (2), ARPHRD type (2), address length (2), address (8), protocol (2).
      if (data.length < 16) return undefined;
      return { offset: 16, etherType: view.getUint16(14, false) };
    case LinkType.LINUX_SLL2:
      // protocol (2), reserved (2), interface index (4), ARPHRD type (2), packet type (1),
      // address length (1), address (8).
      if (data.length < 20) return undefined;
      return { offset: 20, etherType: view.getUint16(0, false) };
    case LinkType.RAW: {
      if (data.length < 1) return undefined;
      const version = (data[0] ?? 0) >> 4;
      if (version === 4) return { offset: 0, etherType: ETHERTYPE_IPV4 };
      if (version === 6) return { offset: 0, etherType: ETHERTYPE_IPV6 };
      return undefined;
    }
    case LinkType.IPV4:
      return { offset: 0, etherType: ETHERTYPE_IPV4 };
    case LinkType.IPV6:
      return { offset: 0, etherType: ETHERTYPE_IPV6 };
    default:
      return undefined;
  }
}

/** The transport header of an IP packet, and the addresses; undefined unless unfragmented UDP. */
interface UdpLocation {
  readonly family: 4 | 6;
  readonly src: string;
  readonly dst: string;
  /** Offset of the UDP header in the record. */
  readonly udp: number;
  /** Where the IP packet ends in the record (its stated length, or the captured end). */
  readonly end: number;
}

/**
 * IPv4 header (RFC 791): version and IHL (1), DSCP/ECN (1), total length (2), identification (2),
 * flags and fragment offset (2), TTL (1), protocol (1), checksum (2), source (4), destination (4),
 * options (IHL × 4 − 20).
 */
function locateUdpInIpv4(data: Uint8Array, offset: number): UdpLocation | undefined {
  if (data.length < offset + 20) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const first = data[offset] ?? 0;
  const headerBytes = (first & 0x0f) * 4;
  if (first >> 4 !== 4 || headerBytes < 20 || data.length < offset + headerBytes) return undefined;
  const totalLength = view.getUint16(offset + 2, false);
  const fragment = view.getUint16(offset + 6, false);
  // More-fragments flag, or a fragment offset: a piece of a datagram, skipped.
  if ((fragment & 0x3fff) !== 0) return undefined;
  if (data[offset + 9] !== IP_PROTOCOL_UDP) return undefined;
  return {
    family: 4,
    src: data.subarray(offset + 12, offset + 16).join('.'),
    dst: data.subarray(offset + 16, offset + 20).join('.'),
    udp: offset + headerBytes,
    end: Math.min(data.length, offset + Math.max(totalLength, headerBytes)),
  };
}

const IPV6_HEADER_BYTES = 40;
const IPV6_HOP_BY_HOP = 0;
const IPV6_ROUTING = 43;
const IPV6_FRAGMENT = 44;
const IPV6_AUTH = 51;
const IPV6_DESTINATION = 60;

/**
 * IPv6 header (RFC 8200): version, class and flow label (4), payload length (2), next header (1),
 * hop limit (1), source (16), destination (16); then extension headers up to UDP.
 */
function locateUdpInIpv6(data: Uint8Array, offset: number): UdpLocation | undefined {
  if (data.length < offset + IPV6_HEADER_BYTES || (data[offset] ?? 0) >> 4 !== 6) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const end = Math.min(data.length, offset + IPV6_HEADER_BYTES + view.getUint16(offset + 4, false));
  let next = data[offset + 6] ?? 0;
  let at = offset + IPV6_HEADER_BYTES;
  for (;;) {
    if (next === IP_PROTOCOL_UDP) break;
    if (next === IPV6_FRAGMENT) return undefined;
    if (
      next !== IPV6_HOP_BY_HOP &&
      next !== IPV6_ROUTING &&
      next !== IPV6_DESTINATION &&
      next !== IPV6_AUTH
    ) {
      return undefined;
    }
    if (end < at + 2) return undefined;
    const length = data[at + 1] ?? 0;
    next = data[at] ?? 0;
    at += next === IPV6_AUTH ? (length + 2) * 4 : (length + 1) * 8;
  }
  return {
    family: 6,
    src: formatIpv6(data.subarray(offset + 8, offset + 24)),
    dst: formatIpv6(data.subarray(offset + 24, offset + 40)),
    udp: at,
    end,
  };
}

/**
 * Decodes the UDP datagram in one record, or returns undefined when the record holds something
 * else (another protocol, an IP fragment, or a datagram the snap length cut short).
 *
 * ```
 * UDP header (RFC 768): source port (2), destination port (2), length (2, header included),
 * checksum (2), then the payload.
 * ```
 */
export function decodeUdp(linkType: number, record: PcapRecord): UdpPacket | undefined {
  const { data } = record;
  const ip = ipStart(linkType, data);
  if (ip === undefined) return undefined;
  let location: UdpLocation | undefined;
  if (ip.etherType === ETHERTYPE_IPV4) location = locateUdpInIpv4(data, ip.offset);
  else if (ip.etherType === ETHERTYPE_IPV6) location = locateUdpInIpv6(data, ip.offset);
  if (location === undefined || location.end < location.udp + UDP_HEADER_BYTES) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const udpLength = view.getUint16(location.udp + 4, false);
  if (udpLength < UDP_HEADER_BYTES || location.udp + udpLength > location.end) return undefined;
  return {
    time: record.time,
    family: location.family,
    src: location.src,
    dst: location.dst,
    srcPort: view.getUint16(location.udp, false),
    dstPort: view.getUint16(location.udp + 2, false),
    payload: data.slice(location.udp + UDP_HEADER_BYTES, location.udp + udpLength),
  };
}

/**
 * Every UDP datagram in a pcap file, in capture order.
 *
 * @throws Error when the bytes are not a pcap file (see {@link readPcap}).
 */
export function udpPacketsFromPcap(bytes: Uint8Array): UdpPacket[] {
  const file = readPcap(bytes);
  const packets: UdpPacket[] = [];
  for (const record of file.records) {
    const packet = decodeUdp(file.linkType, record);
    if (packet !== undefined) packets.push(packet);
  }
  return packets;
}

/** Formats 16 bytes as an IPv6 address the way RFC 5952 (and Node) does: `fd00:19::2`. */
export function formatIpv6(bytes: Uint8Array): string {
  if (bytes.length !== 16) throw new TypeError(`an IPv6 address has 16 bytes, not ${bytes.length}`);
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  // IPv4-mapped addresses print their last 32 bits as a dotted quad.
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return `::ffff:${bytes.subarray(12).join('.')}`;
  }
  // The longest run of two or more zero groups (the first of equal runs) becomes `::`.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
