import {
  type LOG_LEVELS,
  type LogFn,
  type Logger,
  type LogLevel,
  levelRank,
  splitLogCall,
} from './logger.js';
import { redactFields, redactText } from './redact.js';

/** The console methods {@link consoleLogger} writes through (the browser's `console` by default). */
export interface ConsoleLike {
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/** Options of {@link consoleLogger}. */
export interface ConsoleLoggerOptions {
  /** Lowest level written. Default `info`. */
  readonly level?: LogLevel;
  /** Fields added to every line. */
  readonly bindings?: Record<string, unknown>;
  /** Where lines go. Default the global `console`. */
  readonly console?: ConsoleLike;
}

const METHOD: Record<(typeof LOG_LEVELS)[number], keyof ConsoleLike> = {
  trace: 'debug',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'error',
};

/**
 * The browser's logger: the {@link Logger} interface over `console`, with the same redaction as
 * pino in Node. Each line is the message, then the (redacted) fields as one object, so the
 * browser's console shows them expandable.
 */
export function consoleLogger(options: ConsoleLoggerOptions = {}): Logger {
  const target = options.console ?? globalThis.console;
  const minimum = levelRank(options.level ?? 'info');
  const bindings = options.bindings ?? {};
  const method = (level: (typeof LOG_LEVELS)[number]): LogFn => {
    if (levelRank(level) < minimum) return () => {};
    const write = target[METHOD[level]].bind(target);
    return ((first: object | string, message?: string) => {
      const [own, text] = splitLogCall(first, message);
      const fields = { ...bindings, ...own };
      if (Object.keys(fields).length === 0) write(redactText(text));
      else write(redactText(text), redactFields(fields));
    }) as LogFn;
  };
  return {
    trace: method('trace'),
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
    fatal: method('fatal'),
    child: (more) => consoleLogger({ ...options, bindings: { ...bindings, ...more } }),
  };
}
