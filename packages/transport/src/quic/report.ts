/**
 * Where the emitters of the QUIC layer send a listener's exception: to the endpoint's `error`
 * event (and from there to the server's `onError`), not to a log the transport does not have.
 */
import type { LogFn, Logger } from '@svc/runtime';

const discard: LogFn = () => {};

/**
 * A {@link Logger} for `TypedEmitter`: what it is given at `error` or `fatal` (the `err` field
 * `safeEmit` logs, or else the message as an `Error`) goes to `report`; other levels are dropped.
 */
export function reportingLogger(report: (err: unknown) => void): Logger {
  const toReport = ((first: object | string, message?: string) => {
    const err = typeof first === 'object' && first !== null && 'err' in first ? first.err : undefined;
    report(err ?? new Error(typeof first === 'string' ? first : (message ?? 'a listener failed')));
  }) as LogFn;
  const logger: Logger = {
    trace: discard,
    debug: discard,
    info: discard,
    warn: discard,
    error: toReport,
    fatal: toReport,
    child: () => logger,
  };
  return logger;
}
