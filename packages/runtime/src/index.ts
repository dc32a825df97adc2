/**
 * `@svc/runtime`, the lowest layer: the plumbing every package shares, written once. Runs in Node
 * and the browser (the pino logger is in `@svc/runtime/node`, fake time in `@svc/runtime/testing`).
 */
export {
  Backoff,
  type BackoffPolicy,
  backoffDelayMs,
  RECONNECT_BACKOFF,
  type RetryOptions,
  retry,
} from './backoff.js';
export { type Clock, delay, systemClock, type TimerHandle } from './clock.js';
export { type ConsoleLike, type ConsoleLoggerOptions, consoleLogger } from './console-logger.js';
export { type EventMap, safeCall, TypedEmitter } from './emitter.js';
export { CodedError, codedErrorGuard } from './errors.js';
export {
  isLogLevel,
  LOG_LEVELS,
  type LogFn,
  type Logger,
  type LogLevel,
  levelRank,
  silentLogger,
} from './logger.js';
export {
  isSecretFieldName,
  isSecretParameterName,
  redactFields,
  redactText,
  redactUrl,
  SECRET_FIELD_NAMES,
} from './redact.js';
export { assertTransition, type TransitionTable } from './transitions.js';
