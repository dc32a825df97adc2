/**
 * `@svc/shaper`: the link shaper, a seeded UDP impairment relay (rate, queue, delay, jitter,
 * independent and burst loss per direction) to put between a pilot and a daemon in tests,
 * benchmarks and trials of a bad link. The command line is `svc-shaper` (docs/shaper.md).
 *
 * @packageDocumentation
 */
export { isShaperError, ShaperError, type ShaperErrorCode, type ShaperIssue } from './errors.js';
export { type DropCause, ImpairedLink, type LinkStats } from './link.js';
export {
  type BurstLoss,
  type Endpoint,
  IMPAIRMENT_DEFAULTS,
  type Impairment,
  type LinkShaperOptions,
  type ResolvedImpairment,
  type ResolvedShaperOptions,
  SHAPER_DEFAULTS,
} from './options.js';
export { type Random, seededRandom } from './random.js';
export {
  type DirectionStats,
  formatEndpoint,
  LinkShaper,
  type ShaperAddress,
  type ShaperStats,
} from './shaper.js';
