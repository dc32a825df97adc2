import type { QuicConnection } from '../quic/connection.js';

/**
 * Writes bytes to one QUIC stream in order, waiting for flow control when quiche takes only part
 * of a chunk. Writes after the connection closed are dropped.
 */
export class StreamWriter {
  readonly #conn: QuicConnection;
  readonly #streamId: number;
  readonly #chunks: Uint8Array[] = [];
  #fin = false;
  #flushing = false;

  constructor(conn: QuicConnection, streamId: number) {
    this.#conn = conn;
    this.#streamId = streamId;
  }

  /** Queues `bytes`; with `fin`, the stream ends after them. */
  write(bytes: Uint8Array, fin = false): void {
    if (this.#fin) return;
    if (bytes.byteLength > 0) this.#chunks.push(bytes);
    this.#fin = fin;
    void this.#flush();
  }

  async #flush(): Promise<void> {
    if (this.#flushing) return;
    this.#flushing = true;
    try {
      while (!this.#conn.closed) {
        const chunk = this.#chunks[0];
        const last = this.#chunks.length <= 1 && this.#fin;
        if (chunk === undefined) {
          if (last) this.#conn.streamSend(this.#streamId, new Uint8Array(0), true);
          return;
        }
        const sent = this.#conn.streamSend(this.#streamId, chunk, last);
        if (sent === chunk.byteLength) {
          this.#chunks.shift();
          if (last) return;
          continue;
        }
        this.#chunks[0] = chunk.subarray(sent);
        await this.#conn.waitWritable(this.#streamId);
      }
    } catch {
      // The stream or connection is gone (reset, stopped, closed): nothing left to deliver to.
      this.#chunks.length = 0;
    } finally {
      this.#flushing = false;
    }
  }
}
