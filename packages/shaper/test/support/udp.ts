import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { performance } from 'node:perf_hooks';

/** A datagram as a test socket received it. */
export interface Arrival {
  readonly data: Buffer;
  readonly from: RemoteInfo;
  /** `performance.now()` on arrival. */
  readonly at: number;
}

/** A UDP socket on 127.0.0.1 that records what it receives and can echo it back. */
export class TestSocket {
  readonly arrivals: Arrival[] = [];
  readonly #socket: Socket;

  private constructor(socket: Socket, echo: boolean) {
    this.#socket = socket;
    socket.on('message', (data, from) => {
      this.arrivals.push({ data, from, at: performance.now() });
      if (echo) socket.send(data, from.port, from.address);
    });
  }

  /** Binds 127.0.0.1, port 0; with `echo` every datagram goes back to its sender. */
  static async open(echo = false): Promise<TestSocket> {
    const socket = createSocket({ type: 'udp4', recvBufferSize: 4 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return new TestSocket(socket, echo);
  }

  get port(): number {
    return this.#socket.address().port;
  }

  send(data: Uint8Array, port: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.#socket.send(data, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())),
    );
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}

/** Resolves when `condition()` holds, checking every few ms; rejects naming `what` after `timeoutMs`. */
export async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A datagram carrying a 32-bit index (and `size` bytes in all, at least 4). */
export function numbered(index: number, size = 16): Buffer {
  const data = Buffer.alloc(Math.max(4, size));
  data.writeUInt32BE(index, 0);
  return data;
}

/** The index a {@link numbered} datagram carries. */
export function indexOf(data: Buffer): number {
  return data.readUInt32BE(0);
}
