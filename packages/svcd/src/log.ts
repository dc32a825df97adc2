import type { Logger } from '@svc/media';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * A logger writing one plain line per message to stderr (`warn: message {"key":"value"}`), for the
 * command-line tools. Callers pass already-redacted values; nothing here adds secrets.
 */
export function stderrLogger(minimum: Level = 'info'): Logger {
  const write = (level: Level) => (obj: object, msg: string) => {
    if (ORDER[level] < ORDER[minimum]) return;
    const fields = Object.keys(obj).length > 0 ? ` ${JSON.stringify(obj)}` : '';
    process.stderr.write(`${level}: ${msg}${fields}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
