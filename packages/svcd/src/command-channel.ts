import type { Logger } from '@svc/runtime';
import { type AssembledFrame, Reassembler, WireError } from '@svc/wire';
import type { CommandChannelConfig } from './config.js';
import type { SessionRole } from './session-registry.js';
import { UdpSender } from './udp-sender.js';

/** Largest command message (bytes, frame info excluded); the pilot SDK refuses longer ones. */
export const MAX_COMMAND_BYTES = 16 * 1024;

/** Counters of a {@link CommandChannel}, over all sessions. */
export interface CommandChannelStats {
  /** Datagrams the output socket sent. */
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
  readonly #sender: UdpSender;

  private constructor(config: CommandChannelConfig, sender: UdpSender) {
    this.config = config;
    this.#sender = sender;
  }

  /** Opens the channel's sending socket (an ephemeral port of the output's family). */
  static async open(config: CommandChannelConfig, logger: Logger): Promise<CommandChannel> {
    const sender = await UdpSender.open({
      address: config.address,
      logger,
      what: `command channel "${config.name}"`,
    });
    logger.info(
      { channel: config.name, id: config.id, output: `${config.address.host}:${config.address.port}` },
      'command channel ready',
    );
    return new CommandChannel(config, sender);
  }

  /** Counters over all sessions. */
  get stats(): CommandChannelStats {
    return { written: this.#sender.stats.sent, sendErrors: this.#sender.stats.sendErrors };
  }

  /** Writes one command as one datagram; returns `false` once the channel is closed. */
  write(message: Uint8Array): boolean {
    return this.#sender.send(message);
  }

  /** A per-session receiver of this channel's command datagrams. */
  inbox(role: SessionRole): CommandInbox {
    return new CommandInbox(this, role);
  }

  /** Lets the commands in flight go out, then closes the socket. */
  close(): Promise<void> {
    return this.#sender.close();
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
