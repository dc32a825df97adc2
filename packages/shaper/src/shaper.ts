/**
 * `LinkShaper`: a UDP relay between clients (pilots) and one target (the daemon's `quic_port`)
 * that impairs each direction with an {@link ImpairedLink}. Like a NAT it gives every client
 * address its own upstream socket, so the target's replies find their way back and several
 * clients work at once; a client silent for `idleTimeoutMs` loses its mapping.
 */
import { createSocket, type RemoteInfo, type Socket, type SocketType } from 'node:dgram';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ShaperError } from './errors.js';
import { ImpairedLink, type LinkStats } from './link.js';
import {
  type Endpoint,
  type Impairment,
  type LinkShaperOptions,
  type ResolvedImpairment,
  type ResolvedShaperOptions,
  resolveShaperOptions,
  resolveUpdate,
} from './options.js';
import { seededRandom } from './random.js';

/** Receive buffer asked of the kernel for every socket (it may grant less), so bursts fit. */
const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

/** Counters of one direction: the link's, plus datagrams the operating system refused to send. */
export interface DirectionStats extends LinkStats {
  /** Datagrams released by the link that the socket failed to send. */
  readonly sendErrors: number;
}

/** What {@link LinkShaper.stats} returns. */
export interface ShaperStats {
  /** Client → target (pilot → robot). */
  readonly up: DirectionStats;
  /** Target → client (robot → pilot). */
  readonly down: DirectionStats;
  /** Clients mapped now. */
  readonly clients: number;
  /** Datagrams refused because `maxClients` clients were already mapped. */
  readonly clientsRefused: number;
  /** Datagrams that reached an upstream socket from another address than the target (ignored). */
  readonly foreign: number;
}

/** The address a {@link LinkShaper} listens on. */
export interface ShaperAddress extends Endpoint {
  readonly family: 'IPv4' | 'IPv6';
}

interface Client {
  readonly key: string;
  readonly address: string;
  readonly port: number;
  readonly socket: Socket;
  lastActive: number;
  /** Datagrams of this client inside either link; the mapping is kept while any remain. */
  inFlight: number;
}

interface Packet {
  readonly client: Client;
  readonly data: Buffer;
}

interface Direction {
  readonly link: ImpairedLink<Packet>;
  readonly send: (packet: Packet) => void;
  timer: NodeJS.Timeout | undefined;
  timerAt: number;
  sendErrors: number;
}

/** A running link shaper; see the module comment. Start one with {@link LinkShaper.start}. */
export class LinkShaper {
  readonly #options: ResolvedShaperOptions;
  readonly #listen: Socket;
  readonly #onError: ((err: ShaperError) => void) | undefined;
  readonly #clients = new Map<string, Client>();
  readonly #up: Direction;
  readonly #down: Direction;
  readonly #sweep: NodeJS.Timeout;
  #clientsRefused = 0;
  #foreign = 0;
  #closed = false;

  private constructor(options: ResolvedShaperOptions, listen: Socket, onError?: (err: ShaperError) => void) {
    this.#options = options;
    this.#listen = listen;
    this.#onError = onError;
    const { target } = options;
    this.#up = this.#direction(options.up, 0, (p) =>
      p.client.socket.send(p.data, target.port, target.address, (err) => this.#sent(this.#up, err, 'up')),
    );
    this.#down = this.#direction(options.down, 1, (p) =>
      listen.send(p.data, p.client.port, p.client.address, (err) => this.#sent(this.#down, err, 'down')),
    );
    listen.on('message', (data, from) => this.#fromClient(data, from));
    listen.on('error', (err) =>
      this.#report(new ShaperError('socket-error', `listening socket: ${err.message}`, { cause: err })),
    );
    const period = Math.min(5000, Math.max(5, options.idleTimeoutMs / 4));
    this.#sweep = setInterval(() => this.#expire(), period);
  }

  /**
   * Checks the options, binds the listening socket and starts relaying. Rejects with
   * {@link ShaperError} `invalid-options` (naming each bad option) or `bind-failed`.
   */
  static async start(options: LinkShaperOptions): Promise<LinkShaper> {
    const resolved = resolveShaperOptions(options);
    const { listen } = resolved;
    const socket = createSocket({ type: socketType(listen.address), recvBufferSize: RECEIVE_BUFFER_BYTES });
    await new Promise<void>((resolve, reject) => {
      const failed = (err: Error) => {
        socket.close();
        reject(
          new ShaperError(
            'bind-failed',
            `cannot listen on ${formatEndpoint(listen)}: ${err.message} (give a free port, or 0 for any, on a local address)`,
            { cause: err },
          ),
        );
      };
      socket.once('error', failed);
      socket.bind(listen.port, listen.address, () => {
        socket.off('error', failed);
        resolve();
      });
    });
    return new LinkShaper(resolved, socket, options.onError);
  }

  /** The address and port the shaper listens on (the bound port when started with port 0). */
  address(): ShaperAddress {
    const { address, port, family } = this.#listen.address();
    return { address, port, family: family === 'IPv6' ? 'IPv6' : 'IPv4' };
  }

  /** Where the shaper forwards to. */
  get target(): Endpoint {
    return this.#options.target;
  }

  /** The seed the random draws started from. */
  get seed(): number {
    return this.#options.seed;
  }

  /** The impairments in force. */
  impairments(): { up: ResolvedImpairment; down: ResolvedImpairment } {
    return { up: this.#up.link.impairment, down: this.#down.link.impairment };
  }

  /**
   * Changes impairments while running; a field not given keeps its value. Datagrams already on
   * their way keep their timing, later ones meet the new values. Throws {@link ShaperError}
   * `invalid-options` (and changes nothing) or `closed`.
   */
  update(change: { up?: Impairment; down?: Impairment }): void {
    if (this.#closed) throw new ShaperError('closed', 'update() after close(): start a new shaper');
    const next = resolveUpdate(this.impairments(), change);
    this.#up.link.setImpairment(next.up);
    this.#down.link.setImpairment(next.down);
    this.#pump(this.#up);
    this.#pump(this.#down);
  }

  /** Counters per direction and the client mappings. */
  stats(): ShaperStats {
    const now = performance.now();
    return {
      up: { ...this.#up.link.stats(now), sendErrors: this.#up.sendErrors },
      down: { ...this.#down.link.stats(now), sendErrors: this.#down.sendErrors },
      clients: this.#clients.size,
      clientsRefused: this.#clientsRefused,
      foreign: this.#foreign,
    };
  }

  /** Stops relaying, drops what is still queued or delayed, and closes every socket. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweep);
    for (const direction of [this.#up, this.#down]) {
      clearTimeout(direction.timer);
      direction.timer = undefined;
      direction.link.clear();
    }
    const sockets = [this.#listen, ...[...this.#clients.values()].map((c) => c.socket)];
    this.#clients.clear();
    await Promise.all(sockets.map(closeSocket));
  }

  #direction(impairment: ResolvedImpairment, stream: number, send: (packet: Packet) => void): Direction {
    const link = new ImpairedLink<Packet>(impairment, seededRandom(this.#options.seed, stream));
    return { link, send, timer: undefined, timerAt: Number.POSITIVE_INFINITY, sendErrors: 0 };
  }

  #fromClient(data: Buffer, from: RemoteInfo): void {
    if (this.#closed) return;
    const client = this.#client(from);
    if (client === undefined) return;
    this.#offer(this.#up, client, data);
  }

  #fromTarget(client: Client, data: Buffer, from: RemoteInfo): void {
    if (this.#closed) return;
    const { target } = this.#options;
    if (from.port !== target.port || !sameAddress(from.address, target.address)) {
      this.#foreign++;
      return;
    }
    this.#offer(this.#down, client, data);
  }

  #offer(direction: Direction, client: Client, data: Buffer): void {
    const now = performance.now();
    client.lastActive = now;
    if (direction.link.offer({ client, data }, data.length, now) === undefined) client.inFlight++;
    this.#pump(direction);
  }

  /** Sends everything due, then arms the direction's one timer for the next due datagram. */
  #pump(direction: Direction): void {
    if (this.#closed) return;
    const now = performance.now();
    for (const packet of direction.link.release(now)) {
      packet.client.inFlight--;
      direction.send(packet);
    }
    const next = direction.link.nextWakeAt();
    if (next === undefined || next >= direction.timerAt) return;
    clearTimeout(direction.timer);
    direction.timerAt = next;
    // Node timers count whole milliseconds and may fire a little early: the pump re-checks the
    // clock and re-arms, so a datagram is never sent before it is due.
    direction.timer = setTimeout(
      () => {
        direction.timer = undefined;
        direction.timerAt = Number.POSITIVE_INFINITY;
        this.#pump(direction);
      },
      Math.max(1, Math.ceil(next - now)),
    );
  }

  #sent(direction: Direction, err: Error | null, name: 'up' | 'down'): void {
    if (err === null) return;
    direction.sendErrors++;
    this.#report(new ShaperError('send-failed', `${name}: ${err.message}`, { cause: err }));
  }

  #client(from: RemoteInfo): Client | undefined {
    const key = `${from.address}|${from.port}`;
    const known = this.#clients.get(key);
    if (known !== undefined) return known;
    if (this.#clients.size >= this.#options.maxClients) {
      this.#clientsRefused++;
      return undefined;
    }
    const { target } = this.#options;
    const socket = createSocket({ type: socketType(target.address), recvBufferSize: RECEIVE_BUFFER_BYTES });
    const client: Client = {
      key,
      address: from.address,
      port: from.port,
      socket,
      lastActive: 0,
      inFlight: 0,
    };
    socket.on('message', (data, source) => this.#fromTarget(client, data, source));
    socket.on('error', (err) =>
      this.#report(
        new ShaperError(
          'socket-error',
          `upstream socket of client ${from.address}:${from.port}: ${err.message}`,
          {
            cause: err,
          },
        ),
      ),
    );
    // Sends made before the bind completes wait for it (node:dgram queues them). A loopback
    // target gets a loopback source, so the relay opens nothing on other interfaces.
    socket.bind(0, loopbackOf(target.address));
    this.#clients.set(key, client);
    return client;
  }

  #expire(): void {
    const now = performance.now();
    for (const client of this.#clients.values()) {
      if (client.inFlight > 0 || now - client.lastActive < this.#options.idleTimeoutMs) continue;
      this.#clients.delete(client.key);
      void closeSocket(client.socket);
    }
  }

  #report(err: ShaperError): void {
    try {
      this.#onError?.(err);
    } catch {
      // A throwing error handler must not take the relay down; the stats still count the error.
    }
  }
}

function socketType(address: string): SocketType {
  return isIP(address) === 6 ? 'udp6' : 'udp4';
}

/** The loopback address of `address`'s family when `address` is loopback, else the wildcard. */
function loopbackOf(address: string): string | undefined {
  if (address === '::1') return '::1';
  return address.startsWith('127.') ? '127.0.0.1' : undefined;
}

function sameAddress(a: string, b: string): boolean {
  return a === b || a === `::ffff:${b}` || b === `::ffff:${a}`;
}

/** `127.0.0.1:4433`, `[::1]:4433`. */
export function formatEndpoint(endpoint: Endpoint): string {
  return isIP(endpoint.address) === 6
    ? `[${endpoint.address}]:${endpoint.port}`
    : `${endpoint.address}:${endpoint.port}`;
}

function closeSocket(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve();
    }
  });
}
