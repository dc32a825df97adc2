/**
 * How RTP reaches an RTSP client: interleaved on the RTSP connection, or on a UDP port pair the
 * client binds (RTP on an even port, RTCP on the next one). The Transport header of SETUP asks
 * for one and the camera's answer is checked against it.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { isIP } from 'node:net';
import { type Logger, redactText } from '@svc/runtime';
import { MediaError } from '../errors.js';
import type { TransportHeader } from './headers.js';
import { normalizeAddress } from './url.js';

/** Attempts at binding an even RTP port with the odd RTCP port above it. */
const UDP_BIND_ATTEMPTS = 32;

/** True when `packet` looks like RTP (version 2, header present) and not RTCP (PT 200-204). */
export function isRtp(packet: Uint8Array): boolean {
  if (packet.length < 12 || (packet[0] ?? 0) >> 6 !== 2) return false;
  const type = (packet[1] ?? 0) & 0x7f;
  return type < 72 || type > 76;
}

/** The Transport header of SETUP: interleaved channels 0-1, or the client ports of `udp`. */
export function requestedTransport(udp: RtpUdpPair | undefined): string {
  return udp === undefined
    ? 'RTP/AVP/TCP;unicast;interleaved=0-1'
    : `RTP/AVP;unicast;client_port=${udp.port}-${udp.port + 1}`;
}

/**
 * Checks the camera's Transport answer against what was asked: the interleaved channels of RTP
 * and RTCP over TCP; over UDP, the camera's `source` address is let in as well.
 *
 * @returns the interleaved RTP and RTCP channels (RTCP is the next channel when the camera names
 *   only one; 0 and 1 over UDP, where they are unused).
 * @throws MediaError `malformed-rtsp` when the camera chose the other transport.
 */
export function acceptTransport(
  answer: TransportHeader,
  udp: RtpUdpPair | undefined,
): { readonly rtp: number; readonly rtcp: number } {
  const asked = udp === undefined ? 'tcp' : 'udp';
  if (answer.tcp !== (udp === undefined)) {
    throw new MediaError(
      'malformed-rtsp',
      `asked for RTP over ${asked.toUpperCase()} but the camera chose ${answer.protocol}`,
    );
  }
  if (answer.tcp) {
    const rtp = answer.interleaved?.[0] ?? 0;
    return { rtp, rtcp: answer.interleaved?.[1] ?? rtp + 1 };
  }
  if (answer.source !== undefined && isIP(answer.source) !== 0) udp?.allow(answer.source);
  return { rtp: 0, rtcp: 1 };
}

/** What a {@link RtpUdpPair} tells its owner. */
export interface RtpUdpHandlers {
  /** An RTP datagram from the camera (a view valid during the call). Runs per packet. */
  readonly onPacket: (packet: Uint8Array) => void;
  /** A datagram from the camera on the RTCP port (a view valid during the call). */
  readonly onRtcp?: (packet: Uint8Array) => void;
  /** A socket failed. */
  readonly onError: (error: MediaError) => void;
}

/**
 * The UDP sockets of a session: RTP on an even port and RTCP on the next. Only datagrams from the
 * camera's addresses are handed on; the first from elsewhere is logged, the rest dropped quietly.
 */
export class RtpUdpPair {
  /** The RTP port (RTCP is the next one). */
  readonly port: number;
  readonly #rtp: UdpSocket;
  readonly #rtcp: UdpSocket;
  readonly #allowed = new Set<string>();
  #closed: Promise<void> | undefined;
  #foreignLogged = false;

  private constructor(rtp: UdpSocket, rtcp: UdpSocket, port: number) {
    this.#rtp = rtp;
    this.#rtcp = rtcp;
    this.port = port;
  }

  /**
   * Binds the pair on `localAddress` (the RTSP connection's), letting in `cameraAddress`.
   *
   * @throws MediaError `unreachable` when no socket binds, or no even/odd pair is free.
   */
  static async bind(
    localAddress: string,
    cameraAddress: string,
    handlers: RtpUdpHandlers,
    logger: Logger,
  ): Promise<RtpUdpPair> {
    const local = normalizeAddress(localAddress);
    const type = isIP(local) === 6 ? 'udp6' : 'udp4';
    for (let attempt = 0; attempt < UDP_BIND_ATTEMPTS; attempt++) {
      const rtp = createSocket(type);
      try {
        await bind(rtp, local, 0);
      } catch (err) {
        await close(rtp);
        throw new MediaError(
          'unreachable',
          `cannot bind a UDP socket on ${local}: ${redactText(String(err))}`,
          { cause: err },
        );
      }
      const port = rtp.address().port;
      if (port % 2 === 0 && port < 65535) {
        const rtcp = createSocket(type);
        try {
          await bind(rtcp, local, port + 1);
          const pair = new RtpUdpPair(rtp, rtcp, port);
          pair.allow(cameraAddress);
          pair.#listen(handlers, logger);
          return pair;
        } catch {
          await close(rtcp);
        }
      }
      await close(rtp);
    }
    throw new MediaError(
      'unreachable',
      `no free even/odd UDP port pair on ${local} after ${UDP_BIND_ATTEMPTS} attempts`,
    );
  }

  /** Lets datagrams from `address` in. */
  allow(address: string): void {
    this.#allowed.add(normalizeAddress(address));
  }

  /** Closes both sockets; resolves once they are closed. Safe to call repeatedly. */
  close(): Promise<void> {
    this.#closed ??= Promise.all([close(this.#rtp), close(this.#rtcp)]).then(() => undefined);
    return this.#closed;
  }

  #listen(handlers: RtpUdpHandlers, logger: Logger): void {
    this.#rtp.on('message', (packet, remote) => {
      if (!this.#allowed.has(normalizeAddress(remote.address))) {
        if (!this.#foreignLogged) {
          this.#foreignLogged = true;
          logger.warn({ from: remote.address }, 'RTP from an address other than the camera dropped');
        }
        return;
      }
      handlers.onPacket(new Uint8Array(packet.buffer, packet.byteOffset, packet.length));
    });
    const onRtcp = handlers.onRtcp;
    if (onRtcp !== undefined) {
      this.#rtcp.on('message', (packet, remote) => {
        if (this.#allowed.has(normalizeAddress(remote.address)))
          onRtcp(new Uint8Array(packet.buffer, packet.byteOffset, packet.length));
      });
    }
    for (const udp of [this.#rtp, this.#rtcp]) {
      udp.on('error', (err) => {
        handlers.onError(
          new MediaError('unreachable', `UDP receive failed: ${redactText(err.message)}`, { cause: err }),
        );
      });
    }
  }
}

function bind(socket: UdpSocket, address: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, address, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}

function close(socket: UdpSocket): Promise<void> {
  return new Promise((resolve) => socket.close(() => resolve()));
}
