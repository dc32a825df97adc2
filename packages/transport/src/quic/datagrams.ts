/** The unreliable datagrams of a QUIC connection (RFC 9221), sent through quiche. */
import { TransportError } from '../errors.js';
import { type NativeConnection, quicheError } from './binding.js';
import { QUIC_ERROR_CODES } from './streams.js';

/**
 * The largest datagram payload that fits in one packet now; 0 before the handshake completes or
 * when the peer does not accept datagrams.
 */
export function maxDatagramSize(native: NativeConnection): number {
  return native.dgramMaxWritableLen() ?? 0;
}

/**
 * Queues one datagram in quiche, which copies the bytes.
 *
 * @returns false when quiche's datagram send queue is full (the datagram was dropped).
 * @throws TransportError `datagram-too-large` when `bytes` does not fit in one packet,
 *   `datagram-unavailable` when datagrams are not available.
 */
export function sendDatagram(native: NativeConnection, bytes: Uint8Array): boolean {
  const max = maxDatagramSize(native);
  if (max === 0) {
    throw new TransportError(
      QUIC_ERROR_CODES.datagramUnavailable,
      'datagrams are not available on this connection (handshake incomplete or not enabled by the peer)',
    );
  }
  if (bytes.byteLength > max) {
    throw new TransportError(
      QUIC_ERROR_CODES.datagramTooLarge,
      `datagram of ${bytes.byteLength} bytes exceeds the ${max} bytes that fit in one packet`,
    );
  }
  let queued: undefined | null;
  try {
    queued = native.dgramSend(bytes) as undefined | null;
  } catch (err) {
    const kind = quicheError(err)?.kind;
    if (kind === 'BufferTooShort') {
      throw new TransportError(
        QUIC_ERROR_CODES.datagramTooLarge,
        `datagram of ${bytes.byteLength} bytes does not fit in one packet`,
        { cause: err },
      );
    }
    throw new TransportError(
      QUIC_ERROR_CODES.datagramUnavailable,
      `datagram refused by quiche (${String(kind)})`,
      {
        cause: err,
      },
    );
  }
  // quiche answers Done (null) when its send queue is full.
  return queued !== null;
}
