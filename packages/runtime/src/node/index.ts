/** The Node half of `@svc/runtime`: the process logger on pino, and files that hold secrets. */

export { writePrivateFile } from './files.js';
export { createLogger, type LogDestination, loggerOptions, type NodeLoggerOptions } from './logger.js';
