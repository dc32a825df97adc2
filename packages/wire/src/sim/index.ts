/**
 * `@svc/wire/sim`: seeded loss models and a stream simulation over the real packer and
 * reassembler, for tests and benchmarks in Node and in the browser.
 */
export { burstLoss, independentLoss, type LossModel } from './loss.js';
export { type Random, randomBytes, randomInt, seededRandom } from './random.js';
export { type StreamSimOptions, type StreamSimResult, simulateStream } from './stream.js';
