/**
 * A welcomed session's command side: one inbox per command channel (age, order and role checks,
 * then the output) and, for a driver, the command watchdog that reports a driver who sends
 * nothing (`docs/safety.md`).
 */
import { type Clock, type Logger, safeCall } from '@svc/runtime';
import { type CommandChannel, type CommandInbox, CommandWatchdog } from '../command-channel.js';
import type { OpenSession } from '../session-registry.js';

/** `[agent] max_command_age_ms` when none is given. */
export const DEFAULT_MAX_COMMAND_AGE_MS = 500;

/** What {@link sessionCommands} needs. */
export interface SessionCommandsOptions {
  readonly open: OpenSession;
  readonly commands: readonly CommandChannel[];
  readonly clock: Clock;
  readonly logger: Logger;
  /** The transport session's id, for the log. */
  readonly transportId: string;
  /** `[agent] max_command_age_ms` (default {@link DEFAULT_MAX_COMMAND_AGE_MS}). */
  readonly maxCommandAgeMs: number | undefined;
  /** `[agent] command_timeout_ms`: with `onDriverIdle`, a driver's watchdog. */
  readonly commandTimeoutMs: number | undefined;
  readonly onDriverIdle: ((sessionId: string, idleMs: number) => void) | undefined;
  /** A command was written (the session tells its current watchdog, whichever role it has now). */
  readonly onWritten: () => void;
}

/** A session's inboxes by command channel id, and its watchdog (a driver on a robot with commands). */
export interface SessionCommands {
  readonly inboxes: ReadonlyMap<number, CommandInbox>;
  readonly watchdog: CommandWatchdog | undefined;
}

/** Builds a welcomed session's inboxes and, for a driver, its command watchdog. */
export function sessionCommands(options: SessionCommandsOptions): SessionCommands {
  const watchdog = driverWatchdog(options);
  const inboxes = new Map<number, CommandInbox>();
  for (const command of options.commands) {
    inboxes.set(
      command.config.id,
      command.inbox({
        role: options.open.role,
        maxCommandAgeMs: options.maxCommandAgeMs ?? DEFAULT_MAX_COMMAND_AGE_MS,
        onWritten: options.onWritten,
      }),
    );
  }
  return { inboxes, watchdog };
}

/**
 * The command watchdog of a session that drives on a robot with command channels (and a
 * `command_timeout_ms` with someone to tell); `undefined` otherwise.
 */
export function driverWatchdog(options: SessionCommandsOptions): CommandWatchdog | undefined {
  const { open, commands, clock, logger, onDriverIdle, commandTimeoutMs } = options;
  if (open.role !== 'driver' || commands.length === 0 || onDriverIdle === undefined) return undefined;
  if (commandTimeoutMs === undefined) return undefined;
  return new CommandWatchdog({
    timeoutMs: commandTimeoutMs,
    clock,
    onIdle: (idleMs) => {
      logger.info(
        { session: options.transportId, session_id: open.sessionId, idleMs },
        'the driver sends no commands',
      );
      safeCall(logger, 'onDriverIdle', () => onDriverIdle(open.sessionId, idleMs));
    },
  });
}
