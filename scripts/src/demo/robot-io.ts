/**
 * The demo robot's own programs on its side of `svcd`'s UDP interfaces: a heartbeat on the sensor
 * channel's input, and a listener on the command channel's output whose log a held key cannot
 * flood.
 *
 * @packageDocumentation
 */
import dgram from 'node:dgram';
import type { Clock, Logger, TimerHandle } from '@svc/runtime';
import type { UdpTarget } from './rtp-looper.js';

/** One line of the command log: the latest command, and how many arrived since the line before. */
export interface CommandLine {
  /** The latest command's datagram as text, cut to {@link MAX_SHOWN_CHARS}. */
  readonly text: string;
  /** Commands this line stands for (the latest and those held back before it). */
  readonly count: number;
  /** Commands received since the log started. */
  readonly total: number;
}

/** A command shown in a log line is cut to this many characters. */
export const MAX_SHOWN_CHARS = 160;

/** Options of {@link CommandLog}. */
export interface CommandLogOptions {
  readonly clock: Clock;
  /** At most one line per this many ms; commands in between are counted, the latest is shown. */
  readonly intervalMs: number;
  readonly write: (line: CommandLine) => void;
}

/**
 * Turns a stream of commands into at most one line per interval: the first command of a quiet
 * spell is written at once; while commands keep coming (a held key sends many a second), one line
 * at the end of each interval shows the latest with the count. The last command is always written,
 * so the log ends on what the robot was last told (the zero command after a key is released).
 */
export class CommandLog {
  readonly #options: CommandLogOptions;
  #total = 0;
  #held = 0;
  #latest = '';
  #lastLineAt = Number.NEGATIVE_INFINITY;
  #timer: TimerHandle | undefined;

  constructor(options: CommandLogOptions) {
    this.#options = options;
  }

  /** Commands received so far. */
  get total(): number {
    return this.#total;
  }

  /** The latest command as text, or `undefined` before the first. */
  get latest(): string | undefined {
    return this.#total === 0 ? undefined : this.#latest;
  }

  /** Takes one command datagram. */
  handleCommand(datagram: Uint8Array): void {
    this.#total++;
    this.#held++;
    const text = Buffer.from(datagram.buffer, datagram.byteOffset, datagram.byteLength).toString('utf8');
    this.#latest = text.length > MAX_SHOWN_CHARS ? `${text.slice(0, MAX_SHOWN_CHARS)}…` : text;
    if (this.#timer !== undefined) return;
    const { clock, intervalMs } = this.#options;
    const wait = this.#lastLineAt + intervalMs - clock.now();
    if (wait <= 0) this.#flush();
    else this.#timer = clock.setTimeout(() => this.#flush(), wait);
  }

  /** Writes what is held back and stops the timer. */
  close(): void {
    this.#options.clock.clearTimeout(this.#timer);
    this.#flush();
  }

  #flush(): void {
    this.#timer = undefined;
    if (this.#held === 0) return;
    this.#lastLineAt = this.#options.clock.now();
    const line: CommandLine = { text: this.#latest, count: this.#held, total: this.#total };
    this.#held = 0;
    this.#options.write(line);
  }
}

/** A bound UDP socket that hands every datagram it receives to a callback. */
export interface CommandListener {
  readonly port: number;
  close(): Promise<void>;
}

/** Listens on `host`, a free port, for the command channel's datagrams. */
export async function listenForCommands(
  host: string,
  onDatagram: (datagram: Uint8Array) => void,
  logger: Logger,
): Promise<CommandListener> {
  const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  socket.on('error', (err) => logger.warn({ err }, 'demo robot: command socket error'));
  socket.on('message', (datagram) => onDatagram(datagram));
  return {
    port: socket.address().port,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** What one heartbeat says; sent as JSON, one datagram each. */
export interface Heartbeat {
  readonly type: 'heartbeat';
  /** Counts up from 1. */
  readonly seq: number;
  /** The robot's wall clock, ISO 8601. */
  readonly time: string;
  /** Commands the robot received so far. */
  readonly commands: number;
  /** The latest command as the robot got it, or null. */
  readonly lastCommand: string | null;
}

/** Options of {@link startHeartbeat}. */
export interface HeartbeatOptions {
  readonly target: UdpTarget;
  readonly clock: Clock;
  readonly periodMs: number;
  /** What the heartbeat reports besides its count and time. */
  readonly status: () => Pick<Heartbeat, 'commands' | 'lastCommand'>;
  readonly logger: Logger;
}

/** A running heartbeat. */
export interface HeartbeatSender {
  /** Heartbeats sent so far. */
  readonly sent: number;
  stop(): Promise<void>;
}

/** Sends a {@link Heartbeat} to `target` every `periodMs`, the first at once. */
export async function startHeartbeat(options: HeartbeatOptions): Promise<HeartbeatSender> {
  const { target, clock, logger } = options;
  const socket = dgram.createSocket(target.host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  socket.on('error', (err) => logger.warn({ err }, 'demo robot: heartbeat socket error'));
  let seq = 0;
  const beat = () => {
    const heartbeat: Heartbeat = {
      type: 'heartbeat',
      seq: ++seq,
      time: new Date(clock.wallNow()).toISOString(),
      ...options.status(),
    };
    // Fire and forget: before svcd binds its input, or while it restarts, a beat is simply lost.
    socket.send(JSON.stringify(heartbeat), target.port, target.host, () => undefined);
  };
  beat();
  const timer = clock.setInterval(beat, options.periodMs);
  return {
    get sent() {
      return seq;
    },
    stop() {
      clock.clearInterval(timer);
      return new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}
