/**
 * Log lines as these tests read them, `level: message {fields}`: from a memory logger in the
 * test process, and from the JSON lines a `svcd` process writes to a pipe.
 */
import type { LogRecord } from '@svc/runtime/testing';
import { memoryLogger } from '@svc/runtime/testing';

/** One record as a line: `warn: the message {"field":1}`. */
export function formatRecord(record: LogRecord): string {
  return `${record.level}: ${record.message} ${JSON.stringify(record.fields)}`;
}

/** A memory logger, and its lines so far. */
export function capturingLogger(): { logger: ReturnType<typeof memoryLogger>; lines: () => string[] } {
  const logger = memoryLogger();
  return { logger, lines: () => logger.records.map(formatRecord) };
}

const PINO_LEVELS: Readonly<Record<number, string>> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

/**
 * A process's stderr with every JSON log line written as `level: message {fields}` (pino's own
 * `time`, `pid`, `hostname` and `name` left out); other lines (a command's own messages) as they
 * are.
 */
export function readableLog(stderr: string): string {
  return stderr
    .split('\n')
    .map((line) => {
      if (!line.startsWith('{')) return line;
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return line;
      }
      const { level, msg, time: _time, pid: _pid, hostname: _hostname, name: _name, ...fields } = parsed;
      return `${PINO_LEVELS[Number(level)] ?? String(level)}: ${String(msg)} ${JSON.stringify(fields)}`;
    })
    .join('\n');
}
