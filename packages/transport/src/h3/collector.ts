import { varintLengthOfFirstByte } from './varint.js';

/**
 * Gathers the bytes of one varint that may arrive split across stream chunks (internal helper of
 * the incremental readers). Holds at most 8 bytes.
 */
export class VarintCollector {
  readonly #bytes = new Uint8Array(8);
  #length = 0;
  #needed = 0;

  /** Takes bytes from `chunk` at `offset` until the varint is whole; returns the offset after them. */
  take(chunk: Uint8Array, offset: number): number {
    if (offset >= chunk.length) return offset;
    if (this.#length === 0) this.#needed = varintLengthOfFirstByte(chunk[offset]!);
    const count = Math.min(this.#needed - this.#length, chunk.length - offset);
    this.#bytes.set(chunk.subarray(offset, offset + count), this.#length);
    this.#length += count;
    return offset + count;
  }

  /** The varint is whole. */
  get done(): boolean {
    return this.#length > 0 && this.#length === this.#needed;
  }

  /** Some bytes of a varint have arrived. */
  get started(): boolean {
    return this.#length > 0;
  }

  /** The collected bytes (valid until the next `reset`). */
  bytes(): Uint8Array {
    return this.#bytes.subarray(0, this.#length);
  }

  /** Forgets the collected bytes, ready for the next varint. */
  reset(): void {
    this.#length = 0;
    this.#needed = 0;
  }
}
