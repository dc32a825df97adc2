import type { CertificateMaterial, CertificateSource } from '../../src/cert/index.js';
import type { QuicConnection } from '../../src/quic/index.js';

/** A certificate source whose certificate the test switches by hand. */
export class SwitchableCertificates implements CertificateSource {
  #current: CertificateMaterial;

  constructor(first: CertificateMaterial) {
    this.#current = first;
  }

  /** The certificate new connections get. */
  current(): CertificateMaterial {
    return this.#current;
  }

  /** Makes `next` the certificate for new connections. */
  use(next: CertificateMaterial): void {
    this.#current = next;
  }
}

/**
 * Makes `conn` echo: every byte read on a stream is written back on the same stream (FIN with
 * FIN), waiting for capacity when flow control is short; every datagram is sent back.
 *
 * @param errors - Receives what the echo could not do, for the test to assert on.
 */
export function echo(conn: QuicConnection, errors: unknown[]): void {
  const pending = new Map<number, { queue: Uint8Array[]; fin: boolean; busy: boolean }>();
  const pump = async (id: number): Promise<void> => {
    const state = pending.get(id);
    if (state === undefined || state.busy) return;
    state.busy = true;
    try {
      while (state.queue.length > 0 || state.fin) {
        const chunk = state.queue[0] ?? new Uint8Array(0);
        const last = state.queue.length <= 1 && state.fin;
        const written = conn.streamSend(id, chunk, last);
        if (written === chunk.byteLength) {
          state.queue.shift();
          if (last) {
            pending.delete(id);
            return;
          }
          continue;
        }
        state.queue[0] = chunk.subarray(written);
        // Any room at all: waiting for a large block can outlast a small congestion window.
        await conn.waitWritable(id);
      }
    } finally {
      state.busy = false;
    }
  };
  conn.on('streamReadable', (id) => {
    let state = pending.get(id);
    if (state === undefined) {
      state = { queue: [], fin: false, busy: false };
      pending.set(id, state);
    }
    for (;;) {
      const read = conn.streamRecv(id);
      if (read === null || read.type === 'reset') break;
      if (read.data.byteLength > 0) state.queue.push(read.data);
      if (read.fin) {
        state.fin = true;
        break;
      }
    }
    pump(id).catch((err: unknown) => errors.push(err));
  });
  conn.on('datagram', (bytes) => {
    if (!conn.datagramSend(bytes)) errors.push(new Error('datagram queue full'));
  });
}
