import { createSocket, type Socket } from 'node:dgram';

/** A UDP socket on loopback that collects what arrives. */
export interface Receiver {
  readonly socket: Socket;
  readonly port: number;
  readonly packets: Buffer[];
  /** Resolves once `count` packets have arrived. */
  until(count: number): Promise<Buffer[]>;
  close(): Promise<void>;
}

/** Binds a receiver on `host` (port 0: the kernel picks a free one). */
export async function receiver(host = '127.0.0.1'): Promise<Receiver> {
  const socket = createSocket({
    type: host.includes(':') ? 'udp6' : 'udp4',
    recvBufferSize: 4 * 1024 * 1024,
  });
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  const packets: Buffer[] = [];
  let waiting: { count: number; resolve: (p: Buffer[]) => void } | undefined;
  socket.on('message', (msg) => {
    packets.push(msg);
    if (waiting !== undefined && packets.length >= waiting.count) waiting.resolve(packets);
  });
  return {
    socket,
    port: socket.address().port,
    packets,
    until(count) {
      if (packets.length >= count) return Promise.resolve(packets);
      return new Promise((resolve) => {
        waiting = { count, resolve };
      });
    },
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

/** A bound sending socket. */
export async function sender(type: 'udp4' | 'udp6' = 'udp4', host = '127.0.0.1'): Promise<Socket> {
  const socket = createSocket({ type });
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  return socket;
}

/** Packet `i` of a test: `size` bytes, a 4-byte index then a pattern derived from it. */
export function packet(i: number, size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  new DataView(bytes.buffer).setUint32(0, i);
  for (let k = 4; k < size; k++) bytes[k] = (i * 31 + k) & 0xff;
  return bytes;
}
