import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from '@svc/runtime';
import type { UdpAddress } from './config.js';
import { ChannelError } from './sensor-channel.js';

/** Longest a close waits for sends still in flight. */
const DRAIN_LIMIT_MS = 2000;
/** Send errors are logged at most this often per sender. */
const SEND_ERROR_LOG_INTERVAL_MS = 60_000;

/** Counters of a {@link UdpSender}. */
export interface UdpSenderStats {
  /** Datagrams the socket reported sent. */
  sent: number;
  /** Datagrams the socket reported as not sent. */
  sendErrors: number;
}

/** Options of {@link UdpSender.open}. */
export interface UdpSenderOptions {
  readonly address: UdpAddress;
  readonly logger: Logger;
  /** What sends, for the log and errors: `command channel "drive"`, `publisher control`. */
  readonly what: string;
  /** Clock in ms for the log rate limit (default `Date.now`). */
  readonly now?: () => number;
}

/**
 * A fire-and-forget UDP sender to one address (command output, publisher control): one datagram
 * per call, nothing ever thrown at the caller for a failed send (errors are counted and logged at
 * most once a minute), and a close that lets the sends in flight finish (so the last `session
 * ended` of a shutdown still goes out), waiting at most 2 s in case an address lookup hangs.
 */
export class UdpSender {
  readonly address: UdpAddress;
  readonly stats: UdpSenderStats = { sent: 0, sendErrors: 0 };
  readonly #socket: Socket;
  readonly #options: UdpSenderOptions;
  readonly #now: () => number;
  #lastErrorLogMs = Number.NEGATIVE_INFINITY;
  #closed = false;
  #inFlight = 0;
  #drained: (() => void) | undefined;

  private constructor(options: UdpSenderOptions, socket: Socket) {
    this.address = options.address;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#socket = socket;
    socket.on('error', (err) => this.#failed(err));
  }

  /** Binds an ephemeral port of the address's family. Rejects with {@link ChannelError} `bind-failed`. */
  static async open(options: UdpSenderOptions): Promise<UdpSender> {
    const socket = createSocket(options.address.host.includes(':') ? 'udp6' : 'udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(0, () => {
          socket.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      socket.close();
      throw new ChannelError(
        'bind-failed',
        `${options.what}: cannot open a UDP socket to send to ${options.address.host}:${options.address.port}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    socket.unref();
    return new UdpSender(options, socket);
  }

  /** Sends one datagram, best effort; `false` once closed. */
  send(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    this.#inFlight++;
    try {
      this.#socket.send(bytes, this.address.port, this.address.host, (err) => {
        if (err) this.#failed(err);
        else this.stats.sent++;
        this.#settled();
      });
    } catch (err) {
      this.#failed(err as Error);
      this.#settled();
    }
    return true;
  }

  /** Lets the sends in flight finish (at most 2 s), then closes the socket; later sends are ignored. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, DRAIN_LIMIT_MS);
        timer.unref();
        this.#drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }

  #settled(): void {
    if (--this.#inFlight === 0) this.#drained?.();
  }

  #failed(err: Error): void {
    this.stats.sendErrors++;
    const now = this.#now();
    if (now - this.#lastErrorLogMs < SEND_ERROR_LOG_INTERVAL_MS) return;
    this.#lastErrorLogMs = now;
    this.#options.logger.warn(
      {
        to: `${this.address.host}:${this.address.port}`,
        err: err.message,
        errors: this.stats.sendErrors,
      },
      `${this.#options.what}: cannot send a datagram (logged at most once a minute)`,
    );
  }
}
