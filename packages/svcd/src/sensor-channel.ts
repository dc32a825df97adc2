import { createSocket, type Socket } from 'node:dgram';
import { CodedError, codedErrorGuard, type Logger } from '@svc/runtime';
import { captureClockFromMs, FramePacker, type PackedFrame, type ParityPolicy, wrapU32 } from '@svc/wire';
import { daemonClockMs } from './clock.js';
import type { SensorChannelConfig } from './config.js';

/** Stable codes of {@link ChannelError}. `bind-failed`: a channel's UDP socket could not be bound. */
export type ChannelErrorCode = 'bind-failed';

/** A robot-side UDP interface (sensor, command, publisher control) that cannot start. */
export class ChannelError extends CodedError<ChannelErrorCode> {
  override readonly name = 'ChannelError';
}

/** True when `err` is a {@link ChannelError}, optionally with the given code. */
export const isChannelError = codedErrorGuard(ChannelError);

/**
 * Parity of sensor frames: a quarter of the data chunks, at least one per block, so a single lost
 * datagram of a message is repaired. Sensor messages are small and latest-wins; the video profile's
 * heavier floor is not needed for them.
 */
export const SENSOR_PARITY: ParityPolicy = Object.freeze({ rate: 0.25, minPerBlock: 1 });

/** Something that takes each packed sensor message (one per welcomed pilot session). */
export interface SensorSubscriber {
  handleSensorFrame(frame: PackedFrame): void;
}

/** Counters of a {@link SensorChannel}. */
export interface SensorChannelStats {
  /** Datagrams received on the input socket. */
  received: number;
  /** Bytes received. */
  bytes: number;
  /** Messages packed and handed to sessions (received while at least one session watched). */
  fannedOut: number;
}

/**
 * One `kind = "sensor"` channel: a UDP socket bound on the channel's `input` address; each datagram
 * received (up to 64 KiB) becomes one frame on the channel's wire id, stamped with its arrival on
 * the daemon clock as its capture clock, packed once and handed to every welcomed session.
 */
export class SensorChannel {
  readonly config: SensorChannelConfig;
  readonly stats: SensorChannelStats = { received: 0, bytes: 0, fannedOut: 0 };
  readonly #socket: Socket;
  readonly #packer: FramePacker;
  readonly #subscribers = new Set<SensorSubscriber>();
  #closed = false;

  private constructor(config: SensorChannelConfig, socket: Socket) {
    this.config = config;
    this.#socket = socket;
    this.#packer = new FramePacker({ channel: config.id, firstFrameId: Math.floor(Math.random() * 0x10000) });
    socket.on('message', (message) => this.#message(message));
  }

  /**
   * Binds the input socket. Rejects with {@link ChannelError} (`bind-failed`) naming the channel
   * and the address when it cannot be bound (in use, not a local address).
   */
  static async open(config: SensorChannelConfig, logger: Logger): Promise<SensorChannel> {
    const { host, port } = config.address;
    const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    const socket = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 1 << 20 });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, host, () => {
          socket.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      socket.close();
      throw new ChannelError(
        'bind-failed',
        `sensor channel "${config.name}": cannot listen on udp://${where}: ${(err as Error).message}; ` +
          'check that the address is local and that no other process uses the port',
        { cause: err },
      );
    }
    socket.on('error', (err) =>
      logger.warn({ channel: config.name, err: err.message }, 'sensor socket error'),
    );
    logger.info({ channel: config.name, id: config.id, input: `udp://${where}` }, 'sensor channel listening');
    return new SensorChannel(config, socket);
  }

  /** The bound port (useful when the configuration asked for a port another process chose). */
  get port(): number {
    return this.#socket.address().port;
  }

  /** Adds a session; returns the function that removes it. */
  subscribe(subscriber: SensorSubscriber): () => void {
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }

  /** Closes the socket. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#subscribers.clear();
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }

  #message(message: Buffer): void {
    this.stats.received++;
    this.stats.bytes += message.byteLength;
    if (this.#subscribers.size === 0) return;
    const now = daemonClockMs();
    const packed = this.#packer.pack(
      {
        data: new Uint8Array(message.buffer, message.byteOffset, message.byteLength),
        // Every sensor message stands alone: nothing refers to an earlier one.
        keyframe: true,
        captureTimestampUs: wrapU32(now * 1000),
        // The message was made when it arrived, as far as the daemon knows: its age starts there.
        captureClockUs: captureClockFromMs(now),
        gopPosition: 0,
        parity: SENSOR_PARITY,
      },
      wrapU32(now * 1000),
    );
    this.stats.fannedOut++;
    for (const subscriber of this.#subscribers) subscriber.handleSensorFrame(packed);
  }
}
