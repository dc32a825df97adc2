import type { Logger } from '@svc/runtime';
import { createLogger } from '@svc/runtime/node';

/**
 * The logger of the `svcd` commands: `@svc/runtime`'s process logger on stderr (JSON lines under
 * systemd or a pipe, readable lines on a terminal), every line redacted.
 */
export function stderrLogger(minimum: 'debug' | 'info' | 'warn' | 'error' = 'info'): Logger {
  return createLogger({ name: 'svcd', level: minimum });
}
