import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from '@svc/media';
import { type AssembledFrame, Reassembler, WireError } from '@svc/wire';
import type { CommandChannelConfig } from './config.js';
import { ChannelError } from './sensor-channel.js';
import type { SessionRole } from './session-registry.js';

/** Largest command message (bytes, frame info excluded); the pilot SDK refuses longer ones. */
export const MAX_COMMAND_BYTES = 16 * 1024;

/** Longest a close waits for sends still in flight. */
const DRAIN_LIMIT_MS = 2000;

/** Send errors are logged at most this often per channel. */
const SEND_ERROR_LOG_INTERVAL_MS = 60_000;

/** Counters of a {@link CommandChannel}, over all sessions. */
export interface CommandChannelStats {
  /** Datagrams handed to the output socket. */
  written: number;
  /** Datagrams the socket reported as not sent. */
  sendErrors: number;
}

/**
 * One `kind = "command"` channel's output: each driver command is written as ONE UDP datagram to
 * the configured `output` address, holding exactly the message bytes (no prefix). Sending is fire
 * and forget; a send error is counted and logged at most once a minute, never thrown.
 */
export class CommandChannel {
  readonly config: CommandChannelConfig;
  readonly stats: CommandChannelStats = { written: 0, sendErrors: 0 };
  readonly #socket: Socket;
  readonly #logger: Logger;
  #lastErrorLogMs = Number.NEGATIVE_INFINITY;
  #closed = false;
  /** Sends not yet completed, and who waits for them to drain. */
  #inFlight = 0;
  #drained: (() => void) | undefined;

  private constructor(config: CommandChannelConfig, socket: Socket, logger: Logger) {
    this.config = config;
    this.#socket = socket;
    this.#logger = logger;
  }

  /** Opens the channel's sending socket (bound to an ephemeral port of the output's family). */
  static async open(config: CommandChannelConfig, logger: Logger): Promise<CommandChannel> {
    const socket = createSocket(config.address.host.includes(':') ? 'udp6' : 'udp4');
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
        `command channel "${config.name}": cannot open a UDP socket to send to ${config.output}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const channel = new CommandChannel(config, socket, logger);
    socket.on('error', (err) => channel.#sendFailed(err));
    socket.unref();
    logger.info(
      { channel: config.name, id: config.id, output: `${config.address.host}:${config.address.port}` },
      'command channel ready',
    );
    return channel;
  }

  /** Writes one command as one datagram; returns `false` once the channel is closed. */
  write(message: Uint8Array): boolean {
    if (this.#closed) return false;
    this.stats.written++;
    this.#inFlight++;
    try {
      this.#socket.send(message, this.config.address.port, this.config.address.host, (err) => {
        if (err) this.#sendFailed(err);
        this.#settled();
      });
    } catch (err) {
      this.#sendFailed(err as Error);
      this.#settled();
    }
    return true;
  }

  /** A per-session receiver of this channel's command datagrams. */
  inbox(role: SessionRole): CommandInbox {
    return new CommandInbox(this, role);
  }

  /** Closes the socket. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await drainSends(this.#inFlight, (resolve) => {
      this.#drained = resolve;
    });
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }

  #settled(): void {
    if (--this.#inFlight === 0) this.#drained?.();
  }

  #sendFailed(err: Error): void {
    this.stats.sendErrors++;
    const now = Date.now();
    if (now - this.#lastErrorLogMs < SEND_ERROR_LOG_INTERVAL_MS) return;
    this.#lastErrorLogMs = now;
    this.#logger.warn(
      { channel: this.config.name, err: err.message, errors: this.stats.sendErrors },
      'cannot send a command datagram (logged at most once a minute)',
    );
  }
}

/** Counters of one session on one command channel (reported in `agent-stats`). */
export interface CommandInboxStats {
  /** Commands written to the output. */
  commands_sent: number;
  /** Whole commands from an observer, dropped. */
  commands_dropped_observer: number;
  /** Commands given up: superseded by a newer one, incomplete past the deadline, or too long. */
  commands_lost: number;
  /** Datagrams refused as malformed or inconsistent. */
  datagrams_malformed: number;
}

/**
 * One session's receiver on one command channel: a {@link Reassembler} (latest wins: an older
 * command that completes after a newer one is reported `superseded` and never written), then the
 * role check: a driver's command goes to the output, an observer's is dropped and counted.
 */
export class CommandInbox {
  readonly stats: CommandInboxStats = {
    commands_sent: 0,
    commands_dropped_observer: 0,
    commands_lost: 0,
    datagrams_malformed: 0,
  };
  readonly #channel: CommandChannel;
  readonly #role: SessionRole;
  readonly #reassembler: Reassembler;

  constructor(channel: CommandChannel, role: SessionRole) {
    this.#channel = channel;
    this.#role = role;
    this.#reassembler = new Reassembler({
      channel: channel.config.id,
      onFrame: (frame) => this.#command(frame),
      onFrameLost: (loss) => {
        this.stats.commands_lost += loss.count;
      },
      maxPendingFrames: 8,
      // Received chunk bytes of one frame: the message, its frame info, and at most a chunk of parity.
      maxFrameBytes: MAX_COMMAND_BYTES + 2 * 1200,
    });
  }

  /** One datagram of this channel; malformed ones are counted, never thrown. */
  handleDatagram(datagram: Uint8Array, nowMs: number): void {
    try {
      this.#reassembler.handleDatagram(datagram, nowMs);
    } catch (err) {
      if (!(err instanceof WireError)) throw err;
      this.stats.datagrams_malformed++;
    }
  }

  #command(frame: AssembledFrame): void {
    if (frame.data.byteLength > MAX_COMMAND_BYTES) {
      this.stats.commands_lost++;
      return;
    }
    if (this.#role !== 'driver') {
      this.stats.commands_dropped_observer++;
      return;
    }
    if (this.#channel.write(frame.data)) this.stats.commands_sent++;
  }
}

/**
 * Waits for `inFlight` sends to complete (the last `session ended` or command of a shutdown is
 * still delivered), at most {@link DRAIN_LIMIT_MS} in case an address lookup hangs. Shared with
 * the publisher-control socket; not part of the package's surface.
 */
export function drainSends(inFlight: number, register: (resolve: () => void) => void): Promise<void> {
  if (inFlight === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, DRAIN_LIMIT_MS);
    timer.unref();
    register(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
