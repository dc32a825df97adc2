/**
 * Test-side RTP/JPEG packetiser (RFC 2435), written independently of the depacketiser so the two
 * check each other: it lays out the main, restart marker and quantisation table headers byte by byte.
 */

/** What the RTP JPEG headers of one frame say. */
export interface RtpJpegFrameSpec {
  readonly type: number;
  readonly q: number;
  /** Pixels; written as width ÷ 8. */
  readonly width: number;
  /** Pixels; written as height ÷ 8. */
  readonly height: number;
  readonly typeSpecific?: number;
  /** Restart marker header, written into every packet (types 64..127). */
  readonly restart?: { readonly interval: number; readonly count?: number };
  /** Quantisation table header of the first packet (Q ≥ 128); empty data means "reuse". */
  readonly tables?: { readonly precision: number; readonly data: Uint8Array };
  /** Scan bytes per packet (default 1000). */
  readonly scanBytesPerPacket?: number;
}

/** Splits `scan` into RTP/JPEG payloads, each with its headers. */
export function packetizeJpeg(scan: Uint8Array, spec: RtpJpegFrameSpec): Uint8Array[] {
  const step = spec.scanBytesPerPacket ?? 1000;
  const payloads: Uint8Array[] = [];
  let offset = 0;
  do {
    const piece = scan.subarray(offset, offset + step);
    const header: number[] = [
      spec.typeSpecific ?? 0,
      (offset >> 16) & 0xff,
      (offset >> 8) & 0xff,
      offset & 0xff,
      spec.type,
      spec.q,
      spec.width / 8,
      spec.height / 8,
    ];
    if (spec.restart !== undefined) {
      const count = spec.restart.count ?? 0x3fff;
      // F and L both set: this packetiser does not align packets to restart intervals.
      header.push(
        spec.restart.interval >> 8,
        spec.restart.interval & 0xff,
        0xc0 | (count >> 8),
        count & 0xff,
      );
    }
    if (offset === 0 && spec.tables !== undefined) {
      const length = spec.tables.data.length;
      header.push(0, spec.tables.precision, length >> 8, length & 0xff, ...spec.tables.data);
    }
    const payload = new Uint8Array(header.length + piece.length);
    payload.set(header);
    payload.set(piece, header.length);
    payloads.push(payload);
    offset += piece.length;
  } while (offset < scan.length);
  return payloads;
}

/** Table entries with 16-bit precision: each byte of `entries8` as a big-endian 16-bit value. */
export function widenTable(entries8: Uint8Array): Uint8Array {
  const wide = new Uint8Array(entries8.length * 2);
  entries8.forEach((value, i) => {
    wide[2 * i + 1] = value;
  });
  return wide;
}
