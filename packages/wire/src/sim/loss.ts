import type { Random } from './random.js';

/** Decides, datagram by datagram, which ones a simulated link loses. */
export interface LossModel {
  /** True when the next datagram is lost. */
  lose(): boolean;
  /** Human-readable description for reports. */
  readonly label: string;
}

/** Each datagram lost with probability `rate`, independently. */
export function independentLoss(rate: number, random: Random): LossModel {
  checkRate(rate);
  return { label: `${pct(rate)} independent`, lose: () => random() < rate };
}

/**
 * Losses in bursts of exactly `burstLength` consecutive datagrams, bursts starting at random, so
 * that the long-run fraction lost is `rate`. A burst starts at a datagram with probability
 * q = rate / (L(1 - rate) + rate), which makes L·q / (L·q + 1 - q) = rate.
 */
export function burstLoss(rate: number, burstLength: number, random: Random): LossModel {
  checkRate(rate);
  if (!Number.isInteger(burstLength) || burstLength < 1) {
    throw new TypeError(`burstLength must be a positive integer, got ${burstLength}`);
  }
  const start = rate / (burstLength * (1 - rate) + rate);
  let remaining = 0;
  return {
    label: `${pct(rate)} in bursts of ${burstLength}`,
    lose: () => {
      if (remaining === 0 && random() < start) remaining = burstLength;
      if (remaining === 0) return false;
      remaining--;
      return true;
    },
  };
}

function checkRate(rate: number): void {
  if (!(rate >= 0 && rate < 1)) throw new TypeError(`loss rate must be in [0, 1), got ${rate}`);
}

function pct(rate: number): string {
  return `${Math.round(rate * 1000) / 10} %`;
}
