import { type LOG_LEVELS, type LogFn, type Logger, splitLogCall } from '../logger.js';
import { redactFields, redactText } from '../redact.js';

/** One line a {@link memoryLogger} kept, redacted as every logger redacts. */
export interface LogRecord {
  readonly level: (typeof LOG_LEVELS)[number];
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

/** A logger that keeps every line in `records`, for tests that assert what a user would read. */
export function memoryLogger(
  records: LogRecord[] = [],
  bindings: Record<string, unknown> = {},
): Logger & { readonly records: LogRecord[] } {
  const method = (level: LogRecord['level']): LogFn =>
    ((first: object | string, message?: string) => {
      const [own, text] = splitLogCall(first, message);
      records.push({
        level,
        message: redactText(text),
        fields: redactFields({ ...bindings, ...own }) as Record<string, unknown>,
      });
    }) as LogFn;
  return {
    records,
    trace: method('trace'),
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
    fatal: method('fatal'),
    child: (more) => memoryLogger(records, { ...bindings, ...more }),
  };
}
