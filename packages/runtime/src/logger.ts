/**
 * The logger every package takes: pino's call shape (`log.warn({ fields }, 'message')`), so the
 * same code logs through pino in Node (`@svc/runtime/node`) and through the console in the
 * browser ({@link consoleLogger}).
 */

/** Levels, lowest first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/** One level of {@link LOG_LEVELS}, or `silent` to log nothing. */
export type LogLevel = (typeof LOG_LEVELS)[number] | 'silent';

/** One level's method: fields then message, or a message alone. */
export interface LogFn {
  (fields: object, message: string): void;
  (message: string): void;
}

/** A structured logger (pino-compatible call shape). Every line it writes is redacted. */
export interface Logger {
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  /** A logger that adds `bindings` to every line (`{ component: 'signalling' }`). */
  child(bindings: Record<string, unknown>): Logger;
}

/** True when `value` names a level (`silent` included). */
export function isLogLevel(value: unknown): value is LogLevel {
  return value === 'silent' || (LOG_LEVELS as readonly unknown[]).includes(value);
}

/** The rank of a level in {@link LOG_LEVELS}; `silent` is above every level. */
export function levelRank(level: LogLevel): number {
  return level === 'silent' ? LOG_LEVELS.length : LOG_LEVELS.indexOf(level);
}

/**
 * The fields and the message of one call of a {@link LogFn}, as pino reads them: an `Error` given
 * in place of the fields is logged under `err`. For the loggers of this package; not exported
 * from the package.
 */
export function splitLogCall(first: object | string, message: string | undefined): [object, string] {
  if (typeof first === 'string') return [{}, first];
  if (first instanceof Error) return [{ err: first }, message ?? first.message];
  return [first, message ?? ''];
}

const discard: LogFn = () => {};

/** A logger that discards everything. */
export const silentLogger: Logger = Object.freeze({
  trace: discard,
  debug: discard,
  info: discard,
  warn: discard,
  error: discard,
  fatal: discard,
  child: () => silentLogger,
});
