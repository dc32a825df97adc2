/**
 * Memory handed out again and again, grown to the largest size asked for: where the depacketisers
 * write lent access units (`lendAccessUnits`).
 */
export class ReusedBuffer {
  #bytes = new Uint8Array(0);

  /** `size` bytes of the buffer, valid until the next call; contents are whatever was there. */
  take(size: number): Uint8Array {
    if (size > this.#bytes.length) this.#bytes = new Uint8Array(Math.max(size, this.#bytes.length * 2));
    return this.#bytes.subarray(0, size);
  }
}
