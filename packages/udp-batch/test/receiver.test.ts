import { Buffer } from 'node:buffer';
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { UdpBatchError, UdpBatchReceiver, type UdpDestination, type UdpReceiveMode } from '../src/index.js';
import { packet, sender } from './support.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function bound(type: 'udp4' | 'udp6', host: string): Promise<Socket> {
  const socket = createSocket({ type, recvBufferSize: 4 * 1024 * 1024 });
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        try {
          socket.close(() => resolve());
        } catch {
          resolve(); // closed by the test
        }
      }),
  );
  return socket;
}

async function tx(type: 'udp4' | 'udp6' = 'udp4', host = '127.0.0.1'): Promise<Socket> {
  const socket = await sender(type, host);
  cleanup.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return socket;
}

/** What a receiver delivered: copies of the packets, their sources, and the batches. */
function collector() {
  const packets: Buffer[] = [];
  const sources: UdpDestination[] = [];
  let batchEnds = 0;
  let waiting: { count: number; resolve: () => void } | undefined;
  return {
    packets,
    sources,
    get batchEnds() {
      return batchEnds;
    },
    onPacket(p: Uint8Array, from: UdpDestination) {
      packets.push(Buffer.from(p)); // a view valid only during the call: copied
      sources.push(from);
    },
    onBatchEnd() {
      batchEnds++;
      if (waiting !== undefined && packets.length >= waiting.count) waiting.resolve();
    },
    until(count: number): Promise<void> {
      if (packets.length >= count) return Promise.resolve();
      return new Promise((resolve) => {
        waiting = { count, resolve };
      });
    },
  };
}

describe.each([
  ['recvmmsg', {}],
  ['dgram', { native: false }],
] as [UdpReceiveMode, { native?: boolean }][])('UdpBatchReceiver in mode %s', (mode, options) => {
  it('hands over every datagram intact, in order, with its source, then ends the batch', async () => {
    const rx = await bound('udp4', '127.0.0.1');
    const got = collector();
    const receiver = new UdpBatchReceiver(rx, {
      ...options,
      onPacket: got.onPacket,
      onBatchEnd: got.onBatchEnd,
    });
    cleanup.push(() => receiver.close());
    expect(receiver.mode).toBe(mode);
    const socket = await tx();
    const sizes = Array.from({ length: 100 }, (_, i) => 20 + ((i * 37) % 1400));
    for (const [i, size] of sizes.entries()) socket.send(packet(i, size), rx.address().port, '127.0.0.1');
    await got.until(sizes.length);
    expect(got.packets.map((p) => p.length)).toEqual(sizes);
    for (const [i, p] of got.packets.entries())
      expect(Buffer.from(packet(i, sizes[i]!)).equals(p)).toBe(true);
    const from = { host: '127.0.0.1', port: socket.address().port };
    for (const source of got.sources) expect(source).toEqual(from);
    expect(receiver.stats.packets).toBe(sizes.length);
    expect(got.batchEnds).toBeGreaterThan(0);
    expect(got.batchEnds).toBeLessThanOrEqual(receiver.stats.reads);
  });

  it('reports IPv6 and IPv4-mapped sources the way Node does on a dual-stack socket', async () => {
    const rx = await bound('udp6', '::');
    const got = collector();
    const receiver = new UdpBatchReceiver(rx, {
      ...options,
      onPacket: got.onPacket,
      onBatchEnd: got.onBatchEnd,
    });
    cleanup.push(() => receiver.close());
    const v4 = await tx('udp4', '127.0.0.1');
    const v6 = await tx('udp6', '::1');
    v4.send(packet(0, 50), rx.address().port, '127.0.0.1');
    await got.until(1);
    v6.send(packet(1, 60), rx.address().port, '::1');
    await got.until(2);
    expect(got.sources).toEqual([
      { host: '::ffff:127.0.0.1', port: v4.address().port },
      { host: '::1', port: v6.address().port },
    ]);
  });

  it('gives the socket back on close: its message events deliver again', async () => {
    const rx = await bound('udp4', '127.0.0.1');
    const got = collector();
    const receiver = new UdpBatchReceiver(rx, {
      ...options,
      onPacket: got.onPacket,
      onBatchEnd: got.onBatchEnd,
    });
    const socket = await tx();
    socket.send(packet(0, 10), rx.address().port, '127.0.0.1');
    await got.until(1);
    receiver.close();
    receiver.close();
    const later = new Promise<Buffer>((resolve) => rx.once('message', resolve));
    socket.send(packet(1, 11), rx.address().port, '127.0.0.1');
    expect(Buffer.from(packet(1, 11)).equals(await later)).toBe(true);
    expect(got.packets).toHaveLength(1);
  });
});

describe('UdpBatchReceiver with the addon', () => {
  it('reads a burst in a few system calls, not one per datagram', async () => {
    const rx = await bound('udp4', '127.0.0.1');
    const got = collector();
    const socket = await tx();
    // The whole burst is queued in the kernel before the receiver starts reading.
    for (let i = 0; i < 200; i++) socket.send(packet(i, 1200), rx.address().port, '127.0.0.1');
    await new Promise<void>((resolve) =>
      socket.send(packet(200, 1200), rx.address().port, '127.0.0.1', () => resolve()),
    );
    const receiver = new UdpBatchReceiver(rx, {
      onPacket: got.onPacket,
      onBatchEnd: got.onBatchEnd,
      batchSize: 64,
    });
    cleanup.push(() => receiver.close());
    await got.until(201);
    expect(receiver.stats.reads).toBeLessThanOrEqual(8);
  });

  it('drops and counts a datagram longer than maxPacketBytes, and keeps the others', async () => {
    const rx = await bound('udp4', '127.0.0.1');
    const got = collector();
    const receiver = new UdpBatchReceiver(rx, {
      onPacket: got.onPacket,
      onBatchEnd: got.onBatchEnd,
      maxPacketBytes: 1500,
    });
    cleanup.push(() => receiver.close());
    const socket = await tx();
    socket.send(packet(0, 1500), rx.address().port, '127.0.0.1');
    socket.send(packet(1, 1501), rx.address().port, '127.0.0.1');
    socket.send(packet(2, 100), rx.address().port, '127.0.0.1');
    await got.until(2);
    expect(got.packets.map((p) => p.readUInt32BE(0))).toEqual([0, 2]);
    expect(receiver.stats.truncated).toBe(1);
  });

  it('stops when the socket is closed under it, and the port is free again', async () => {
    const rx = createSocket('udp4');
    await new Promise<void>((resolve) => rx.bind(0, '127.0.0.1', resolve));
    const port = rx.address().port;
    const got = collector();
    const receiver = new UdpBatchReceiver(rx, { onPacket: got.onPacket });
    expect(receiver.mode).toBe('recvmmsg');
    await new Promise<void>((resolve) => rx.close(() => resolve()));
    // The receiver's duplicate of the descriptor is closed too, or the port would stay taken.
    const reuse = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      reuse.once('error', reject);
      reuse.bind(port, '127.0.0.1', resolve);
    });
    reuse.close();
    expect(got.packets).toHaveLength(0);
  });

  it('refuses a socket that is not bound', () => {
    const socket = createSocket('udp4');
    cleanup.push(() => {
      socket.close();
    });
    expect(() => new UdpBatchReceiver(socket, { onPacket: () => {} })).toThrow(UdpBatchError);
    expect(() => new UdpBatchReceiver(socket, { onPacket: () => {} })).toThrow(/bind the UDP socket/);
  });
});
