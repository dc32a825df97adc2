/** Test helpers of `@svc/runtime`: fake time, and a logger that keeps what it was given. */
export { FakeClock, flushMicrotasks } from './fake-clock.js';
export { type LogRecord, memoryLogger } from './memory-logger.js';
