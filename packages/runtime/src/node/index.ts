/** The Node half of `@svc/runtime`: the process logger on pino. */
export { createLogger, type LogDestination, loggerOptions, type NodeLoggerOptions } from './logger.js';
