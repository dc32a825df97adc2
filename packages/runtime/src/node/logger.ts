import { type LoggerOptions, type Logger as PinoLogger, pino } from 'pino';
import pretty from 'pino-pretty';
import type { LogLevel } from '../logger.js';
import { redactFields, redactText } from '../redact.js';

/** A writable stream, possibly a terminal. */
export interface LogDestination extends NodeJS.WritableStream {
  readonly isTTY?: boolean;
  readonly fd?: number;
}

/** Options of {@link createLogger}. */
export interface NodeLoggerOptions {
  /** The process or component, added to every line as `name`. */
  readonly name?: string;
  /** Lowest level written. Default `info`. */
  readonly level?: LogLevel;
  /** Where lines go. Default stderr (stdout stays free for a command's own output). */
  readonly destination?: LogDestination;
  /** Human-readable lines instead of JSON. Default: when the destination is a terminal. */
  readonly pretty?: boolean;
}

/**
 * pino options every process shares: the one redaction of `@svc/runtime` applied to each line's
 * fields and message (secret field names, URL credentials, tokens, keys), errors under `err`.
 * Fastify takes a logger made from these through `loggerInstance`.
 */
export function loggerOptions(options: Pick<NodeLoggerOptions, 'name' | 'level'> = {}): LoggerOptions {
  return {
    ...(options.name === undefined ? {} : { name: options.name }),
    level: options.level ?? 'info',
    formatters: {
      log: (fields) => redactFields(fields) as Record<string, unknown>,
      bindings: (bindings) => redactFields(bindings) as Record<string, unknown>,
    },
    // pino applies `formatters.bindings` to the root logger's bindings only, not to a child's.
    onChild: redactChildBindings,
    hooks: {
      // The message text too: a quoted URL or token in it is redacted like a field.
      logMethod(args, method) {
        const redacted = args.map((arg) => (typeof arg === 'string' ? redactText(arg) : arg));
        method.apply(this, redacted as Parameters<typeof method>);
      },
    },
  };
}

/** The serialised bindings pino prepends to each line of a logger: `,"name":"svcd","reqId":"r1"`. */
const CHINDINGS = pino.symbols.chindingsSym;

/**
 * Redacts a child logger's bindings (`log.child({ token })`) the way pino's `bindings` formatter
 * redacts the root's: pino keeps them as a serialised JSON fragment, which is read back, redacted
 * and written again, as pino's own `bindings()` reads it.
 */
function redactChildBindings(child: PinoLogger): void {
  const holder = child as unknown as Record<typeof CHINDINGS, string | undefined>;
  const serialised = holder[CHINDINGS];
  if (serialised === undefined || serialised.length === 0) return;
  const bindings = JSON.parse(`{${serialised.slice(1)}}`) as Record<string, unknown>;
  const redacted = JSON.stringify(redactFields(bindings)).slice(1, -1);
  holder[CHINDINGS] = redacted.length === 0 ? '' : `,${redacted}`;
}

/**
 * The logger of a Node process: pino, JSON lines when the destination is not a terminal (for
 * journald, containers and log shippers), readable lines on a terminal; every line redacted.
 */
export function createLogger(options: NodeLoggerOptions = {}): PinoLogger {
  const destination = options.destination ?? process.stderr;
  const readable = options.pretty ?? destination.isTTY === true;
  if (!readable) return pino(loggerOptions(options), destination);
  return pino(
    loggerOptions(options),
    pretty({
      destination,
      sync: true,
      colorize: destination.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    }),
  );
}
