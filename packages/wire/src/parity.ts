import { MAX_BLOCK_CHUNKS } from './fec/reed-solomon.js';

/**
 * How many parity chunks a block gets: `rate` of its data chunks (rounded up) but never fewer than
 * `minPerBlock`. A rate alone gives a 3-chunk frame zero or one parity chunk, which a single loss
 * burst kills; the floor is what protects small frames. Chosen per frame by the caller (QoS).
 */
export interface ParityPolicy {
  /** Parity as a fraction of the data chunks, e.g. 0.15 for 15 %. */
  readonly rate: number;
  /** Floor on parity chunks in each block (0 disables FEC when `rate` is 0 too). */
  readonly minPerBlock: number;
}

/** No FEC at all. */
export const NO_PARITY: ParityPolicy = Object.freeze({ rate: 0, minPerBlock: 0 });

/** Parity chunks for a block of `dataCount` data chunks under `policy`, capped by the code's limit. */
export function parityCountFor(dataCount: number, policy: ParityPolicy): number {
  if (!(policy.rate >= 0) || !Number.isInteger(policy.minPerBlock) || policy.minPerBlock < 0) {
    throw new TypeError(`invalid parity policy rate=${policy.rate} minPerBlock=${policy.minPerBlock}`);
  }
  // The epsilon keeps 0.15 * 20 = 3.0000000000000004 from rounding up to 4.
  const byRate = Math.ceil(policy.rate * dataCount - 1e-9);
  return Math.min(MAX_BLOCK_CHUNKS - dataCount, Math.max(policy.minPerBlock, byRate));
}
