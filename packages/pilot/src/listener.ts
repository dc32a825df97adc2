/**
 * Reports an error thrown by a caller's callback without letting it unwind the pilot's own
 * state: `reportError` where the platform has it (browsers), otherwise an uncaught exception on a
 * microtask. Either way it reaches the global error handlers instead of vanishing.
 */
export function reportListenerError(err: unknown): void {
  if (typeof reportError === 'function') {
    reportError(err);
  } else {
    queueMicrotask(() => {
      throw err;
    });
  }
}
