import type { Clock, Logger, TimerHandle } from '@svc/runtime';
import {
  type AssembledFrame,
  captureClockAgeMs,
  Reassembler,
  seqDiff16,
  seqDiff32,
  WireError,
} from '@svc/wire';
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
  inbox(options: CommandInboxOptions): CommandInbox {
    return new CommandInbox(this, options);
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
  /** Commands older than `max_command_age_ms` by their send time, dropped. */
  commands_dropped_stale: number;
  /** Commands without a send time (capture clock 0: their age is unknown), dropped. */
  commands_dropped_unknown_age: number;
  /** Commands not newer than the last one written (sequence number or send time), dropped. */
  commands_dropped_out_of_order: number;
  /** Commands given up: superseded by a newer one, incomplete past the deadline, or too long. */
  commands_lost: number;
  /** Datagrams refused as malformed or inconsistent. */
  datagrams_malformed: number;
}

/** What a {@link CommandInbox} is built with. */
export interface CommandInboxOptions {
  /** The session's role at welcome (only a driver's commands are written); {@link CommandInbox.role} moves it. */
  readonly role: SessionRole;
  /** `[agent] max_command_age_ms`: older commands are dropped. */
  readonly maxCommandAgeMs: number;
  /** A command was written to the output (the command watchdog's sign of life). */
  readonly onWritten?: () => void;
}

/**
 * One session's receiver on one command channel: a {@link Reassembler} (latest wins: an older
 * command that completes after a newer one is reported `superseded` and never written), then the
 * checks, each drop counted: an observer's command; a command with no send time (capture clock 0);
 * one older than `max_command_age_ms` (its capture clock, the pilot's send time on the robot's
 * clock, against the robot's clock now); one not newer than the last written, by sequence number
 * (the frame id, serial arithmetic) or by send time. What passes is written: the message bytes
 * alone, the frame info stripped.
 */
export class CommandInbox {
  readonly stats: CommandInboxStats = {
    commands_sent: 0,
    commands_dropped_observer: 0,
    commands_dropped_stale: 0,
    commands_dropped_unknown_age: 0,
    commands_dropped_out_of_order: 0,
    commands_lost: 0,
    datagrams_malformed: 0,
  };
  readonly #channel: CommandChannel;
  readonly #options: CommandInboxOptions;
  readonly #reassembler: Reassembler;
  /** The robot's clock at the datagram being handled (frames complete during `handleDatagram`). */
  #nowMs = 0;
  /** Sequence number and send time of the last command written. */
  #last: { readonly frameId: number; readonly captureClockUs: number } | undefined;
  #role: SessionRole;

  constructor(channel: CommandChannel, options: CommandInboxOptions) {
    this.#channel = channel;
    this.#options = options;
    this.#role = options.role;
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

  /** The session's role now: svc-cloud may move the driver slot mid-session (a handover). */
  get role(): SessionRole {
    return this.#role;
  }

  set role(role: SessionRole) {
    this.#role = role;
  }

  /**
   * One datagram of this channel at `nowMs` on the robot's clock (the clock of `pong.robot_time`);
   * malformed ones are counted, never thrown.
   */
  handleDatagram(datagram: Uint8Array, nowMs: number): void {
    this.#nowMs = nowMs;
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
    const ageMs = captureClockAgeMs(frame.captureClockUs, this.#nowMs);
    if (ageMs === undefined) {
      this.stats.commands_dropped_unknown_age++;
      return;
    }
    if (ageMs > this.#options.maxCommandAgeMs) {
      this.stats.commands_dropped_stale++;
      return;
    }
    const last = this.#last;
    if (
      last !== undefined &&
      (seqDiff16(frame.frameId, last.frameId) <= 0 ||
        seqDiff32(frame.captureClockUs, last.captureClockUs) < 0)
    ) {
      this.stats.commands_dropped_out_of_order++;
      return;
    }
    this.#last = { frameId: frame.frameId, captureClockUs: frame.captureClockUs };
    if (!this.#channel.write(frame.data)) return;
    this.stats.commands_sent++;
    this.#options.onWritten?.();
  }
}

/** What a {@link CommandWatchdog} is built with. */
export interface CommandWatchdogOptions {
  /** `[agent] command_timeout_ms`. */
  readonly timeoutMs: number;
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  /**
   * The driver has written no command for `timeoutMs` since the watch began or its last command;
   * `idleMs` is how long. Called once per silence: again only after a command and a new silence.
   */
  readonly onIdle: (idleMs: number) => void;
}

/**
 * The command watchdog of one driving session: it starts when the session is admitted as the
 * driver and reports once when no command has been written for `command_timeout_ms` since the
 * later of that start and the last command. One timer, moved forward lazily (a command only
 * notes its time; the timer, when it fires early, waits for the rest).
 */
export class CommandWatchdog {
  readonly #options: CommandWatchdogOptions;
  #sinceMs: number;
  #timer: TimerHandle | undefined;
  #stopped = false;

  constructor(options: CommandWatchdogOptions) {
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) {
      throw new TypeError(`CommandWatchdog timeoutMs must be a positive number, got ${options.timeoutMs}`);
    }
    this.#options = options;
    this.#sinceMs = options.clock.now();
    this.#arm(options.timeoutMs);
  }

  /** A command of the driver was written: the silence starts again from now. */
  commandWritten(): void {
    if (this.#stopped) return;
    this.#sinceMs = this.#options.clock.now();
    if (this.#timer === undefined) this.#arm(this.#options.timeoutMs);
  }

  /** Stops watching (the session ended). */
  stop(): void {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delayMs: number): void {
    this.#timer = this.#options.clock.setTimeout(() => this.#check(), delayMs);
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    const idleMs = this.#options.clock.now() - this.#sinceMs;
    const left = this.#options.timeoutMs - idleMs;
    if (left > 0) {
      this.#arm(left);
      return;
    }
    // Once per silence: the next command arms the timer again.
    this.#options.onIdle(Math.round(idleMs));
  }
}
