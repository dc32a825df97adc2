/**
 * Unwraps a 32-bit RTP timestamp into a monotonic count and converts it to µs, so a stream that
 * runs past the wrap (13 hours at 90 kHz) keeps increasing capture times.
 */
export class RtpClock {
  readonly clockRate: number;
  #last: number | undefined;
  #extended = 0;

  constructor(clockRate: number) {
    if (!(clockRate > 0)) throw new TypeError(`RTP clock rate must be positive, got ${clockRate}`);
    this.clockRate = clockRate;
  }

  /** Capture time in µs of `timestamp`, counted from timestamp 0 of the first wrap seen. */
  toMicros(timestamp: number): number {
    if (this.#last === undefined) {
      this.#extended = timestamp;
    } else {
      this.#extended += (timestamp - this.#last) | 0;
    }
    this.#last = timestamp;
    return Math.round((this.#extended * 1e6) / this.clockRate);
  }

  /** Forgets the history (a new stream). */
  reset(): void {
    this.#last = undefined;
  }
}
