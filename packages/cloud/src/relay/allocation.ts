import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { UdpBatchReceiver, UdpBatchSender, type UdpDestination } from '@svc/udp-batch';
import {
  decodeRelayControl,
  encodeRelayControl,
  isRelayControl,
  isWireError,
  type RelayRefusal,
} from '@svc/wire';

/**
 * One relayed session's two UDP ports: the pilot's WebTransport (QUIC) connection arrives on the
 * pilot-facing port and leaves, unchanged, from the robot-facing port to the robot's attached
 * address; the robot's answers take the way back. Nothing is decrypted or parsed but the first
 * byte (relay control datagrams start with 0, QUIC packets never do). Datagrams are read with
 * `recvmmsg` and forwarded with `sendmmsg` (`@svc/udp-batch`), one copy each.
 */

/** Ports the relay may bind, inclusive; absent: any free port. */
export interface PortRange {
  readonly min: number;
  readonly max: number;
}

/** What the relay decided about a robot's attach. */
export type AttachDecision =
  | { readonly ok: true; readonly expiresInMs: number }
  | { readonly ok: false; readonly code: RelayRefusal; readonly message: string };

/** Options of {@link RelayAllocation.open}. */
export interface RelayAllocationOptions {
  readonly sessionId: string;
  readonly robotId: string;
  /** Address both ports bind: `::` (dual stack), `0.0.0.0`, or a literal. */
  readonly bindHost: string;
  readonly ports?: PortRange;
  /** Bytes a second the robot may send the pilot, and the pilot the robot (token buckets). */
  readonly rate: { readonly toPilot: number; readonly toRobot: number };
  /** Monotonic clock, ms. */
  readonly now: () => number;
  /** Checks a robot's attach token from `from`; the server keeps the one-use rule. */
  readonly authorizeAttach: (token: string, from: UdpDestination) => AttachDecision;
  /** The robot attached (first time from this address). */
  readonly onAttached?: (from: UdpDestination) => void;
  /** The pilot's first packet came from `from`: the pilot-facing port now takes only its packets. */
  readonly onPilot?: (from: UdpDestination) => void;
}

/** What one allocation forwarded and dropped. */
export interface RelayAllocationStats {
  packetsToRobot: number;
  bytesToRobot: number;
  packetsToPilot: number;
  bytesToPilot: number;
  /** Dropped: over the rate. */
  overRate: number;
  /** Dropped: from an address that is not the allocation's pilot or robot. */
  strangers: number;
  /** Pilot packets held while the robot had not attached yet, beyond what is kept. */
  overflow: number;
  /** Relay control datagrams that did not decode. */
  malformed: number;
}

/** Packets of the pilot kept until the robot attaches (its first flight: a QUIC Initial or two). */
const MAX_HELD = 32;
/** Longest datagram forwarded (QUIC on paths up to a 1500-byte MTU, and loopback's 1472-byte packets). */
const MAX_PACKET = 2048;
/** Kernel buffers of each port: a few frames of video at the rates a session may use. */
const SOCKET_BUFFER = 1 << 20;
/** A bucket holds this long at its rate (a keyframe leaves in a burst). */
const BURST_SECONDS = 0.5;
/** And at least this many bytes. */
const MIN_BURST = 256 * 1024;

/** One relayed session: see the module comment. */
export class RelayAllocation {
  readonly sessionId: string;
  readonly robotId: string;
  readonly stats: RelayAllocationStats = {
    packetsToRobot: 0,
    bytesToRobot: 0,
    packetsToPilot: 0,
    bytesToPilot: 0,
    overRate: 0,
    strangers: 0,
    overflow: 0,
    malformed: 0,
  };
  readonly #pilotSocket: Socket;
  readonly #robotSocket: Socket;
  readonly #toRobot: UdpBatchSender;
  readonly #toPilot: UdpBatchSender;
  readonly #pilotReceiver: UdpBatchReceiver;
  readonly #robotReceiver: UdpBatchReceiver;
  readonly #options: RelayAllocationOptions;
  readonly #robotBucket: ByteBucket;
  readonly #pilotBucket: ByteBucket;
  #pilot: UdpDestination | undefined;
  #robot: UdpDestination | undefined;
  #held: Uint8Array[] = [];
  #closed: Promise<void> | undefined;

  private constructor(pilotSocket: Socket, robotSocket: Socket, options: RelayAllocationOptions) {
    this.sessionId = options.sessionId;
    this.robotId = options.robotId;
    this.#options = options;
    this.#pilotSocket = pilotSocket;
    this.#robotSocket = robotSocket;
    this.#toRobot = new UdpBatchSender(robotSocket, { capacityBytes: 64 * 1024 });
    this.#toPilot = new UdpBatchSender(pilotSocket, { capacityBytes: 64 * 1024 });
    const now = options.now();
    this.#pilotBucket = new ByteBucket(options.rate.toPilot, now);
    this.#robotBucket = new ByteBucket(options.rate.toRobot, now);
    // A send error (an unreachable pilot, a full buffer) loses that packet only; QUIC repairs it.
    pilotSocket.on('error', () => undefined);
    robotSocket.on('error', () => undefined);
    this.#pilotReceiver = new UdpBatchReceiver(pilotSocket, {
      maxPacketBytes: MAX_PACKET,
      onPacket: (packet, from) => this.#fromPilot(packet, from),
      onBatchEnd: () => flush(this.#toRobot),
    });
    this.#robotReceiver = new UdpBatchReceiver(robotSocket, {
      maxPacketBytes: MAX_PACKET,
      onPacket: (packet, from) => this.#fromRobot(packet, from),
      onBatchEnd: () => {
        flush(this.#toPilot);
        flush(this.#toRobot);
      },
    });
  }

  /**
   * Binds the two ports.
   *
   * @throws the socket's system error when no port can be bound (`EADDRINUSE` across the whole
   *   range, `EADDRNOTAVAIL`, …).
   */
  static async open(options: RelayAllocationOptions): Promise<RelayAllocation> {
    const pilotSocket = await bindIn(options.bindHost, options.ports);
    let robotSocket: Socket;
    try {
      robotSocket = await bindIn(options.bindHost, options.ports);
    } catch (err) {
      pilotSocket.close();
      throw err;
    }
    return new RelayAllocation(pilotSocket, robotSocket, options);
  }

  /** The port the pilot connects to. */
  get pilotPort(): number {
    return this.#pilotSocket.address().port;
  }

  /** The port the robot attaches to. */
  get robotPort(): number {
    return this.#robotSocket.address().port;
  }

  /** Whether the robot has attached. */
  get attached(): boolean {
    return this.#robot !== undefined;
  }

  /** The pilot's address, once its first packet came. */
  get pilot(): UdpDestination | undefined {
    return this.#pilot;
  }

  /** How the ports send: `gso`/`sendmmsg` in batches, or `dgram`. */
  get sendMode(): string {
    return this.#toPilot.mode;
  }

  /** Stops forwarding and closes both ports. Safe to call more than once. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#held = [];
      this.#pilotReceiver.close();
      this.#robotReceiver.close();
      await Promise.all([closeSocket(this.#pilotSocket), closeSocket(this.#robotSocket)]);
    })();
    return this.#closed;
  }

  #fromPilot(packet: Uint8Array, from: UdpDestination): void {
    if (this.#closed !== undefined) return;
    if (this.#pilot === undefined) {
      // The first sender is the pilot: its allocation was asked for over its authenticated
      // signalling connection, and its QUIC handshake with the robot follows at once.
      this.#pilot = { host: from.host, port: from.port };
      this.#options.onPilot?.(this.#pilot);
    } else if (!same(from, this.#pilot)) {
      this.stats.strangers++;
      return;
    }
    if (this.#robot === undefined) {
      if (this.#held.length < MAX_HELD) this.#held.push(packet.slice());
      else this.stats.overflow++;
      return;
    }
    if (!this.#robotBucket.take(packet.byteLength, this.#options.now())) {
      this.stats.overRate++;
      return;
    }
    this.#toRobot.add(packet, this.#robot);
    this.stats.packetsToRobot++;
    this.stats.bytesToRobot += packet.byteLength;
  }

  #fromRobot(packet: Uint8Array, from: UdpDestination): void {
    if (this.#closed !== undefined) return;
    const robot = this.#robot;
    if (robot !== undefined && same(from, robot) && !isRelayControl(packet)) {
      const pilot = this.#pilot;
      if (pilot === undefined) return;
      if (!this.#pilotBucket.take(packet.byteLength, this.#options.now())) {
        this.stats.overRate++;
        return;
      }
      this.#toPilot.add(packet, pilot);
      this.stats.packetsToPilot++;
      this.stats.bytesToPilot += packet.byteLength;
      return;
    }
    if (!isRelayControl(packet)) {
      this.stats.strangers++;
      return;
    }
    const message = decodeRelayControl(packet);
    if (isWireError(message) || message.type !== 'attach') {
      this.stats.malformed++;
      return;
    }
    const decision = this.#options.authorizeAttach(message.token, from);
    const to = { host: from.host, port: from.port };
    if (!decision.ok) {
      this.#toRobot.add(
        encodeRelayControl({ type: 'refused', code: decision.code, message: decision.message }),
        to,
      );
      return;
    }
    this.#toRobot.add(encodeRelayControl({ type: 'attached', expiresInMs: decision.expiresInMs }), to);
    if (robot !== undefined) return;
    this.#robot = to;
    this.#options.onAttached?.(to);
    const held = this.#held;
    this.#held = [];
    for (const early of held) {
      this.#toRobot.add(early, to);
      this.stats.packetsToRobot++;
      this.stats.bytesToRobot += early.byteLength;
    }
  }
}

/** A token bucket of bytes: `rate` a second, holding {@link BURST_SECONDS} of it. */
export class ByteBucket {
  readonly #rate: number;
  readonly #depth: number;
  #tokens: number;
  #at: number;

  constructor(ratePerSecond: number, now: number) {
    if (!(ratePerSecond > 0)) throw new TypeError(`a relay rate must be positive, got ${ratePerSecond}`);
    this.#rate = ratePerSecond / 1000;
    this.#depth = Math.max(ratePerSecond * BURST_SECONDS, MIN_BURST);
    this.#tokens = this.#depth;
    this.#at = now;
  }

  /** Takes `bytes` when the bucket holds them; false (nothing taken) when it does not. */
  take(bytes: number, now: number): boolean {
    if (now > this.#at) {
      this.#tokens = Math.min(this.#depth, this.#tokens + (now - this.#at) * this.#rate);
      this.#at = now;
    }
    if (this.#tokens < bytes) return false;
    this.#tokens -= bytes;
    return true;
  }
}

function same(a: UdpDestination, b: UdpDestination): boolean {
  return a.port === b.port && a.host === b.host;
}

function flush(sender: UdpBatchSender): void {
  try {
    sender.send();
  } catch {
    // The socket closed under the batch: the allocation is ending, its packets with it.
  }
}

async function bindIn(host: string, ports: PortRange | undefined): Promise<Socket> {
  if (ports === undefined) return bind(host, 0);
  const span = ports.max - ports.min + 1;
  const start = Math.floor(Math.random() * span);
  let last: unknown;
  // Random start, then upwards: a busy range fails after trying each port once at most.
  for (let i = 0; i < Math.min(span, 64); i++) {
    try {
      return await bind(host, ports.min + ((start + i) % span));
    } catch (err) {
      last = err;
      if ((err as { code?: unknown }).code !== 'EADDRINUSE') throw err;
    }
  }
  throw last;
}

function bind(host: string, port: number): Promise<Socket> {
  const socket = createSocket({
    type: isIP(host) === 6 ? 'udp6' : 'udp4',
    ipv6Only: false,
    recvBufferSize: SOCKET_BUFFER,
    sendBufferSize: SOCKET_BUFFER,
  });
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      socket.close();
      reject(err);
    };
    socket.once('error', onError);
    socket.bind({ address: host, port, exclusive: true }, () => {
      socket.off('error', onError);
      resolve(socket);
    });
  });
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
