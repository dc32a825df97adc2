import dgram from 'node:dgram';
import { isIP } from 'node:net';
import { type Clock, type Logger, silentLogger, systemClock } from '@svc/runtime';
import { UdpBatchReceiver, type UdpReceiveMode } from '@svc/udp-batch';
import { MediaError } from '../errors.js';

/** Where an `rtp://` input listens. */
export interface RtpEndpoint {
  /** Address to bind (the unicast address, or the wildcard for a multicast group). */
  readonly bindAddress: string;
  readonly port: number;
  /** Multicast group to join, when the URL names one. */
  readonly group?: string;
  /** Local interface address for the multicast join (`?interface=` in the URL). */
  readonly interfaceAddress?: string;
  /**
   * Where the source's RTCP (its sender reports) comes: `?rtcp=<port>` in the URL, by convention
   * (RFC 3550 §11) the RTP port + 1; `undefined` with `?rtcp=none` or above port 65534.
   */
  readonly rtcpPort: number | undefined;
  readonly family: 4 | 6;
}

/**
 * Parses `rtp://<addr>:<port>` (IPv4, `[IPv6]`, unicast or multicast group, optional
 * `?interface=<local address>` for the multicast join, optional `?rtcp=<port>|none` for the RTCP
 * port, default the RTP port + 1). Throws `MediaError('bad-url')` naming what is wrong.
 */
export function parseRtpUrl(input: string): RtpEndpoint {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new MediaError('bad-url', `"${input}" is not a URL; expected rtp://<address>:<port>`);
  }
  if (url.protocol !== 'rtp:')
    throw new MediaError('bad-url', `expected an rtp:// URL, got ${url.protocol}//`);
  if (url.username !== '' || url.password !== '') {
    throw new MediaError(
      'bad-url',
      'an rtp:// input takes no credentials (RTP over UDP has no authentication)',
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  if (family === 0) {
    throw new MediaError(
      'bad-url',
      `rtp:// needs an IP address to listen on, got "${host}" (use 0.0.0.0 or [::] for any)`,
    );
  }
  const port = Number(url.port);
  if (url.port === '' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new MediaError('bad-url', `rtp:// needs a port in 1..65535, got "${url.port}"`);
  }
  const interfaceAddress = url.searchParams.get('interface') ?? undefined;
  if (interfaceAddress !== undefined && isIP(interfaceAddress) !== family) {
    throw new MediaError('bad-url', `interface=${interfaceAddress} is not an IPv${family} address`);
  }
  const rtcp = url.searchParams.get('rtcp');
  let rtcpPort: number | undefined = port < 65535 ? port + 1 : undefined;
  if (rtcp === 'none') {
    rtcpPort = undefined;
  } else if (rtcp !== null) {
    rtcpPort = Number(rtcp);
    if (!/^\d+$/.test(rtcp) || rtcpPort < 1 || rtcpPort > 65535 || rtcpPort === port) {
      throw new MediaError(
        'bad-url',
        `rtcp=${rtcp} must be a port in 1..65535 other than the RTP port ${port}, or "none"`,
      );
    }
  }
  const multicast = family === 4 ? isMulticast4(host) : host.toLowerCase().startsWith('ff');
  const wildcard = family === 4 ? '0.0.0.0' : '::';
  return {
    bindAddress: multicast ? wildcard : host,
    port,
    rtcpPort,
    family: family as 4 | 6,
    ...(multicast && { group: host }),
    ...(interfaceAddress !== undefined && { interfaceAddress }),
  };
}

function isMulticast4(address: string): boolean {
  const first = Number(address.split('.')[0]);
  return first >= 224 && first <= 239;
}

/** Options of {@link UdpRtpSource}. */
export interface UdpRtpSourceOptions {
  readonly url: string;
  /** One datagram; `packet` is valid during the call only (the next read reuses its memory). */
  readonly onRtp: (packet: Uint8Array, receivedAtMs: number) => void;
  /**
   * One datagram on the RTCP port (see {@link RtpEndpoint.rtcpPort}); without it no RTCP socket is
   * opened. A port that cannot be bound is logged and done without.
   */
  readonly onRtcp?: (packet: Uint8Array, receivedAtMs: number) => void;
  readonly logger?: Logger;
  /** The clock of `receivedAtMs`; the process's by default. */
  readonly clock?: Clock;
  /** Kernel receive buffer; a keyframe arrives as a burst (default 4 MiB). */
  readonly receiveBufferBytes?: number;
  /**
   * Read every datagram waiting in one system call (`recvmmsg`, `@svc/udp-batch`) when its addon
   * is built (default true); false takes them one by one from `message` events.
   */
  readonly batchedReceives?: boolean;
}

/**
 * Receives RTP over UDP on an `rtp://` endpoint, joining the multicast group when there is one.
 * Datagrams are read in batches into memory that is reused: `onRtp` gets each packet for the
 * duration of the call only.
 */
export class UdpRtpSource {
  readonly endpoint: RtpEndpoint;
  readonly #socket: dgram.Socket;
  readonly #rtcp: dgram.Socket | undefined;
  readonly #options: UdpRtpSourceOptions;
  readonly #receiver: UdpBatchReceiver;

  private constructor(
    endpoint: RtpEndpoint,
    socket: dgram.Socket,
    rtcp: dgram.Socket | undefined,
    options: UdpRtpSourceOptions,
  ) {
    this.endpoint = endpoint;
    this.#socket = socket;
    this.#rtcp = rtcp;
    this.#options = options;
    const clock = options.clock ?? systemClock;
    this.#receiver = new UdpBatchReceiver(socket, {
      native: options.batchedReceives ?? true,
      onPacket: (packet) => options.onRtp(packet, clock.now()),
    });
    const onRtcp = options.onRtcp;
    if (rtcp !== undefined && onRtcp !== undefined) {
      rtcp.on('message', (packet) =>
        onRtcp(new Uint8Array(packet.buffer, packet.byteOffset, packet.byteLength), clock.now()),
      );
    }
  }

  /** Binds the socket and starts delivering packets. */
  static async open(options: UdpRtpSourceOptions): Promise<UdpRtpSource> {
    const endpoint = parseRtpUrl(options.url);
    const logger = options.logger ?? silentLogger;
    const socket = dgram.createSocket({
      type: endpoint.family === 4 ? 'udp4' : 'udp6',
      reuseAddr: endpoint.group !== undefined,
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(bindError(endpoint, err));
      socket.once('error', onError);
      socket.bind(endpoint.port, endpoint.bindAddress, () => {
        socket.off('error', onError);
        resolve();
      });
    });
    try {
      socket.setRecvBufferSize(options.receiveBufferBytes ?? 4 * 1024 * 1024);
    } catch (err) {
      logger.warn(
        { err: (err as Error).message },
        'could not enlarge the UDP receive buffer; keyframe bursts may be dropped',
      );
    }
    if (endpoint.group !== undefined) {
      try {
        socket.addMembership(endpoint.group, endpoint.interfaceAddress);
      } catch (err) {
        socket.close();
        throw new MediaError(
          'bad-url',
          `cannot join multicast group ${endpoint.group}: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    socket.on('error', (err) => logger.error({ err: err.message }, 'RTP socket error'));
    const rtcp = options.onRtcp === undefined ? undefined : await openRtcp(endpoint, logger);
    const source = new UdpRtpSource(endpoint, socket, rtcp, options);
    logger.info(
      { input: options.url, ...(rtcp !== undefined && { rtcpPort: endpoint.rtcpPort }) },
      'listening for RTP',
    );
    return source;
  }

  /** The locally bound port (useful when the URL asked for a port another process picks). */
  get port(): number {
    return this.#socket.address().port;
  }

  /** How datagrams are read: `recvmmsg` in batches, or `dgram` one by one. */
  get receiveMode(): UdpReceiveMode {
    return this.#receiver.mode;
  }

  /** The locally bound RTCP port, when an RTCP socket is open. */
  get rtcpPort(): number | undefined {
    return this.#rtcp?.address().port;
  }

  /** Stops receiving and closes the sockets. */
  async close(): Promise<void> {
    this.#receiver.close();
    const rtcp = this.#rtcp;
    await Promise.all([
      new Promise<void>((resolve) => this.#socket.close(() => resolve())),
      rtcp === undefined ? undefined : new Promise<void>((resolve) => rtcp.close(() => resolve())),
    ]);
    this.#options.logger?.debug({ input: this.#options.url }, 'RTP socket closed');
  }
}

/**
 * The RTCP socket of `endpoint`, joined to its multicast group; `undefined` (logged) when there is
 * no RTCP port or it cannot be bound: RTCP only improves capture times, so the stream goes on.
 */
async function openRtcp(endpoint: RtpEndpoint, logger: Logger): Promise<dgram.Socket | undefined> {
  const port = endpoint.rtcpPort;
  if (port === undefined) return undefined;
  const socket = dgram.createSocket({
    type: endpoint.family === 4 ? 'udp4' : 'udp6',
    reuseAddr: endpoint.group !== undefined,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, endpoint.bindAddress, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    if (endpoint.group !== undefined) socket.addMembership(endpoint.group, endpoint.interfaceAddress);
  } catch (err) {
    socket.close();
    logger.warn(
      {
        rtcp: `${endpoint.bindAddress}:${port}`,
        err: bindError({ ...endpoint, port }, err as Error).message,
      },
      'no RTCP socket: capture times come from arrival, not from the camera’s sender reports ' +
        '(free the port, or name another with ?rtcp=<port> in the input)',
    );
    return undefined;
  }
  socket.on('error', (err) => logger.warn({ err: err.message }, 'RTCP socket error'));
  return socket;
}

function bindError(endpoint: RtpEndpoint, err: Error): MediaError {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${endpoint.bindAddress}:${endpoint.port}`;
  const why =
    code === 'EADDRINUSE'
      ? 'the port is already in use by another process'
      : code === 'EADDRNOTAVAIL'
        ? 'that address is not one of this machine’s'
        : code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges)'
          : err.message;
  return new MediaError('bad-url', `cannot listen for RTP on ${where}: ${why}`, { cause: err });
}
