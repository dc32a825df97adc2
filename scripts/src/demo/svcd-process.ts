/**
 * The demo robot's `svcd` as a supervised child process: started, its log lines passed on to the
 * launcher's logger (and watched for "signalling online"), restarted with backoff when it dies, and
 * given up on when it dies again and again without ever coming online (a refused enrolment, a
 * broken configuration: restarting would only repeat the same message).
 *
 * @packageDocumentation
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import {
  assertTransition,
  Backoff,
  type BackoffPolicy,
  type Clock,
  LOG_LEVELS,
  type Logger,
  type LogLevel,
  type TimerHandle,
  type TransitionTable,
  TypedEmitter,
} from '@svc/runtime';

/** Restarts after a crash: 1 s doubling up to 30 s, with full jitter. */
export const SVCD_RESTART_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 1000, capMs: 30_000 });
/** SIGTERM, then SIGKILL after this long. */
const STOP_GRACE_MS = 10_000;
/** Lines of svcd's output kept for the report of its death. */
const TAIL_LINES = 8;
/** The message svcd logs each time svc-cloud accepts its signalling connection. */
const ONLINE_MESSAGE = 'signalling online';

/** What happened when svcd ended on its own. */
export interface SvcdExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** It had come online in this run. */
  readonly wasOnline: boolean;
  /** Its last lines of output, oldest first. */
  readonly tail: readonly string[];
  /** When it is started again, ms from now; undefined when the supervisor gives up. */
  readonly restartInMs: number | undefined;
}

/** Events of {@link SvcdSupervisor}. */
export type SvcdEvents = {
  /** svc-cloud accepted the robot (each time, reconnections included). */
  online: (firstTime: boolean) => void;
  exit: (exit: SvcdExit) => void;
  /** The supervisor stopped trying; `reason` says why, for a person. */
  'gave-up': (reason: string) => void;
};

/** Options of {@link SvcdSupervisor}. */
export interface SvcdSupervisorOptions {
  /** The `svcd` executable. */
  readonly command: string;
  readonly args: readonly string[];
  /**
   * The environment of the next start, read before each one (the enrolment token may be there on
   * the first start only). A rejection gives up, with its message as the reason.
   */
  readonly environment: () => Promise<NodeJS.ProcessEnv>;
  /** Where svcd's own lines go, at their level. */
  readonly svcdLogger: Logger;
  readonly clock: Clock;
  readonly random: () => number;
  /** Exits in a row without coming online after which the supervisor gives up. */
  readonly maxFailedStarts: number;
}

type State =
  | { readonly kind: 'idle' }
  | { readonly kind: 'starting' }
  | {
      readonly kind: 'running';
      readonly child: ChildProcess;
      readonly tail: string[];
      online: boolean;
    }
  | { readonly kind: 'waiting'; readonly timer: TimerHandle }
  | { readonly kind: 'stopping'; readonly exited: Promise<void> }
  | { readonly kind: 'gave-up'; readonly reason: string }
  /** It exited 0: svcd does so only when told to stop by a signal (Ctrl-C in its terminal, a kill). */
  | { readonly kind: 'ended' }
  | { readonly kind: 'stopped' };

const TRANSITIONS: TransitionTable<State['kind']> = {
  idle: ['starting', 'stopped'],
  starting: ['running', 'gave-up', 'stopped'],
  running: ['waiting', 'gave-up', 'ended', 'stopping'],
  waiting: ['starting', 'stopped'],
  stopping: ['stopped'],
  'gave-up': ['stopped'],
  ended: ['stopped'],
  stopped: [],
};

/** Runs `svcd`, restarts it when it dies, and stops it on {@link SvcdSupervisor.stop}. */
export class SvcdSupervisor extends TypedEmitter<SvcdEvents> {
  readonly #options: SvcdSupervisorOptions;
  readonly #backoff: Backoff;
  #state: State = { kind: 'idle' };
  #failedStarts = 0;
  #everOnline = false;

  constructor(options: SvcdSupervisorOptions) {
    super(options.svcdLogger);
    this.#options = options;
    this.#backoff = new Backoff(SVCD_RESTART_BACKOFF, options.random);
  }

  /** `idle`, `starting`, `running`, `waiting` (to restart), `stopping`, `gave-up`, `ended` or `stopped`. */
  get state(): State['kind'] {
    return this.#state.kind;
  }

  /** The running process's id, if one runs. */
  get pid(): number | undefined {
    return this.#state.kind === 'running' ? this.#state.child.pid : undefined;
  }

  /** Starts svcd. */
  start(): void {
    void this.#start();
  }

  /** Stops svcd (SIGTERM, SIGKILL after 10 s) and any pending restart; resolves once it exited. */
  async stop(): Promise<void> {
    const state = this.#state;
    switch (state.kind) {
      case 'idle':
      case 'starting':
      case 'gave-up':
      case 'ended':
        this.#move({ kind: 'stopped' });
        return;
      case 'waiting':
        this.#options.clock.clearTimeout(state.timer);
        this.#move({ kind: 'stopped' });
        return;
      case 'running': {
        const { child } = state;
        const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
        this.#move({ kind: 'stopping', exited });
        child.kill('SIGTERM');
        const killer = this.#options.clock.setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        await exited;
        this.#options.clock.clearTimeout(killer);
        this.#move({ kind: 'stopped' });
        return;
      }
      case 'stopping':
        await state.exited;
        return;
      case 'stopped':
        return;
      default:
        return state satisfies never;
    }
  }

  #move(next: State): void {
    assertTransition('demo svcd', TRANSITIONS, this.#state.kind, next.kind);
    this.#state = next;
    if (next.kind === 'gave-up') this.safeEmit('gave-up', next.reason);
  }

  async #start(): Promise<void> {
    this.#move({ kind: 'starting' });
    let env: NodeJS.ProcessEnv;
    try {
      env = await this.#options.environment();
    } catch (err) {
      if (this.#state.kind === 'starting') this.#move({ kind: 'gave-up', reason: (err as Error).message });
      return;
    }
    if (this.#state.kind !== 'starting') return; // stopped meanwhile
    const { command, args } = this.#options;
    const child = spawn(command, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const running: Extract<State, { kind: 'running' }> = { kind: 'running', child, tail: [], online: false };
    this.#move(running);
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream!, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) =>
        this.#line(running, line),
      );
    }
    child.once('error', (err) => this.#options.svcdLogger.error({ err }, `cannot run ${command}`));
    child.once('close', (code, signal) => this.#exited(running, code, signal));
  }

  #line(run: Extract<State, { kind: 'running' }>, line: string): void {
    if (line.trim() === '') return;
    const { level, message, fields } = parseLogLine(line);
    run.tail.push(message);
    if (run.tail.length > TAIL_LINES) run.tail.shift();
    this.#options.svcdLogger[level](fields, message);
    if (message.startsWith(ONLINE_MESSAGE) && this.#state === run) {
      run.online = true;
      this.#failedStarts = 0;
      this.#backoff.reset();
      const first = !this.#everOnline;
      this.#everOnline = true;
      this.safeEmit('online', first);
    }
  }

  #exited(
    run: Extract<State, { kind: 'running' }>,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    if (this.#state !== run) return; // stopping: stop() finishes the move
    if (code === 0) {
      // Asked to stop by someone else (Ctrl-C reaches every process of the terminal): not a crash.
      this.safeEmit('exit', {
        code,
        signal,
        wasOnline: run.online,
        tail: [...run.tail],
        restartInMs: undefined,
      });
      this.#move({ kind: 'ended' });
      return;
    }
    this.#failedStarts = run.online ? 0 : this.#failedStarts + 1;
    const giveUp = this.#failedStarts >= this.#options.maxFailedStarts;
    const restartInMs = giveUp ? undefined : this.#backoff.next();
    this.safeEmit('exit', { code, signal, wasOnline: run.online, tail: [...run.tail], restartInMs });
    if (restartInMs === undefined) {
      this.#move({
        kind: 'gave-up',
        reason: `svcd exited ${this.#failedStarts} times in a row without coming online; its last words: ${run.tail.at(-1) ?? '(none)'}`,
      });
      return;
    }
    const timer = this.#options.clock.setTimeout(() => {
      if (this.#state.kind === 'waiting') void this.#start();
    }, restartInMs);
    this.#move({ kind: 'waiting', timer });
  }
}

/** One line of svcd's output: pino JSON (a pipe makes svcd write JSON), or plain text. */
export function parseLogLine(line: string): {
  level: Exclude<LogLevel, 'silent'>;
  message: string;
  fields: Record<string, unknown>;
} {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    parsed = undefined;
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    typeof (parsed as { msg?: unknown }).msg !== 'string'
  ) {
    // Plain text: the CLI's own messages (`error (...): ...` before it exits).
    return { level: /^error\b/.test(line) ? 'error' : 'info', message: line, fields: {} };
  }
  const {
    level,
    msg,
    time: _time,
    pid: _pid,
    hostname: _hostname,
    name: _name,
    ...fields
  } = parsed as {
    level?: unknown;
    msg: string;
  } & Record<string, unknown>;
  return { level: pinoLevel(level), message: msg, fields };
}

/** pino's numeric levels: 10 trace, 20 debug, 30 info, 40 warn, 50 error, 60 fatal. */
function pinoLevel(level: unknown): Exclude<LogLevel, 'silent'> {
  if (typeof level !== 'number') return 'info';
  const index = Math.min(Math.max(Math.floor(level / 10) - 1, 0), LOG_LEVELS.length - 1);
  return LOG_LEVELS[index]!;
}
