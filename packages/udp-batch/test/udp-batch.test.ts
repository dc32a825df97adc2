import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  isUdpBatchError,
  nativeSupport,
  UdpBatchError,
  UdpBatchSender,
  type UdpSendMode,
} from '../src/index.js';
import { packet, type Receiver, receiver, sender } from './support.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function pair(type: 'udp4' | 'udp6' = 'udp4', host = '127.0.0.1') {
  const rx = await receiver(host);
  const socket = await sender(type, type === 'udp6' ? '::' : '127.0.0.1');
  cleanup.push(() => rx.close());
  cleanup.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return { rx, socket };
}

/** Checks that `got` are exactly packets 0..sizes.length-1 of the given sizes, in order. */
function expectPackets(got: Buffer[], sizes: number[]): void {
  expect(got.map((p) => p.length)).toEqual(sizes);
  got.forEach((p, i) => {
    expect(p.readUInt32BE(0)).toBe(i);
    expect(Buffer.from(packet(i, sizes[i]!)).equals(p)).toBe(true);
  });
}

describe('the native addon', () => {
  it('is built by npm install on Linux, so the daemon batches its sends', () => {
    expect(nativeSupport()).toEqual({ available: true });
  });
});

describe.each([
  ['gso', {}],
  ['sendmmsg', { gso: false }],
  ['dgram', { native: false }],
] as [UdpSendMode, { gso?: boolean; native?: boolean }][])('UdpBatchSender in mode %s', (mode, options) => {
  it('delivers every packet of a batch intact and in order, written in place', async () => {
    const { rx, socket } = await pair();
    const batch = new UdpBatchSender(socket, options);
    expect(batch.mode).toBe(mode);
    const sizes = [...Array<number>(40).fill(1200), 500];
    const to = { host: '127.0.0.1', port: rx.port };
    sizes.forEach((size, i) => {
      const buffer = batch.packetBuffer(1350);
      buffer.set(packet(i, size));
      batch.commit(size, to);
    });
    expect(batch.queued).toBe(sizes.length);
    batch.send();
    expect(batch.queued).toBe(0);
    expectPackets(await rx.until(sizes.length), sizes);
    await batch.drained();
    expect(batch.stats.sendErrors).toBe(0);
  });

  it('keeps each datagram its own size when sizes change within a run (GSO cuts only equal runs)', async () => {
    const { rx, socket } = await pair();
    const batch = new UdpBatchSender(socket, options);
    const sizes = [1000, 1000, 1300, 1300, 200, 1300, 64, 64, 64, 1400];
    const to = { host: '127.0.0.1', port: rx.port };
    for (const [i, size] of sizes.entries()) batch.add(packet(i, size), to);
    batch.send();
    expectPackets(await rx.until(sizes.length), sizes);
  });

  it('sends to several destinations in one batch, each getting its own packets in order', async () => {
    const { rx, socket } = await pair();
    const rx2 = await receiver();
    cleanup.push(() => rx2.close());
    const batch = new UdpBatchSender(socket, options);
    const a = { host: '127.0.0.1', port: rx.port };
    const b = { host: '127.0.0.1', port: rx2.port };
    for (let i = 0; i < 30; i++) {
      batch.add(packet(i, 1100), a);
      batch.add(packet(i, 900), b);
    }
    batch.send();
    expectPackets(await rx.until(30), Array<number>(30).fill(1100));
    expectPackets(await rx2.until(30), Array<number>(30).fill(900));
  });

  it('sends a batch by itself when the next packet does not fit, keeping the order', async () => {
    const { rx, socket } = await pair();
    const batch = new UdpBatchSender(socket, { ...options, capacityBytes: 8000 });
    const to = { host: '127.0.0.1', port: rx.port };
    const sizes = Array<number>(25).fill(1300);
    for (const [i, size] of sizes.entries()) batch.add(packet(i, size), to);
    batch.send();
    expectPackets(await rx.until(sizes.length), sizes);
    expect(batch.stats.batches).toBe(5);
  });

  it('reports a closed socket as an error, not a crash', async () => {
    const { rx, socket } = await pair();
    const batch = new UdpBatchSender(socket, options);
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    cleanup.splice(cleanup.length - 1); // closed already
    batch.add(packet(0, 100), { host: '127.0.0.1', port: rx.port });
    let error: unknown;
    try {
      batch.send();
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UdpBatchError);
    expect((error as UdpBatchError).code).toBe('closed');
    expect((error as UdpBatchError).name).toBe('UdpBatchError');
    expect(isUdpBatchError(error, 'closed')).toBe(true);
    expect(isUdpBatchError(error, 'batch-full')).toBe(false);
    expect(isUdpBatchError(new Error('closed'))).toBe(false);
    expect(batch.queued).toBe(0);
  });
});

describe('UdpBatchSender on IPv6', () => {
  it('sends to ::1 and, on a dual-stack socket, to an IPv4 peer', async () => {
    const rx6 = await receiver('::1');
    const rx4 = await receiver('127.0.0.1');
    const socket = await sender('udp6', '::');
    cleanup.push(
      () => rx6.close(),
      () => rx4.close(),
    );
    cleanup.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
    const batch = new UdpBatchSender(socket);
    for (let i = 0; i < 5; i++) {
      batch.add(packet(i, 1200), { host: '::1', port: rx6.port });
      batch.add(packet(i, 1200), { host: '127.0.0.1', port: rx4.port });
    }
    batch.send();
    expectPackets(await rx6.until(5), Array<number>(5).fill(1200));
    expectPackets(await rx4.until(5), Array<number>(5).fill(1200));
  });
});

describe('UdpBatchSender input checks', () => {
  let rx: Receiver;
  it('refuses bad lengths, destinations and oversized packets with clear errors', async () => {
    ({ rx } = await pair());
    const { socket } = await pair();
    const batch = new UdpBatchSender(socket, { capacityBytes: 4096 });
    batch.packetBuffer(100);
    expect(() => batch.commit(0, { host: '127.0.0.1', port: rx.port })).toThrow(/length must be a positive/);
    expect(() => batch.commit(10, { host: 'localhost', port: rx.port })).toThrow(/IP address literal/);
    expect(() => batch.commit(10, { host: '127.0.0.1', port: 0 })).toThrow(/port from 1 to 65535/);
    expect(() => batch.packetBuffer(5000)).toThrow(UdpBatchError);
    expect(() => new UdpBatchSender(socket, { capacityBytes: 10 })).toThrow(/capacityBytes/);
    expect(batch.queued).toBe(0);
  });
});

describe('a full socket send buffer (EAGAIN)', () => {
  it('finishes the batch through dgram.send, and the next batch waits behind it, in order', async () => {
    // A network namespace of its own, whose loopback queues packets in a slow tbf qdisc: they
    // hold the sender's small send buffer, so the kernel answers EAGAIN part way through.
    const tsx = import.meta.resolve('tsx');
    const script = path.join(here, 'fixtures/would-block.ts');
    const child = spawn(
      'unshare',
      [
        '--net',
        'sh',
        '-c',
        'ip link set lo up && tc qdisc add dev lo root tbf rate 20mbit burst 4kb limit 2mb && exec "$0" --conditions=source --import "$1" "$2"',
        process.execPath,
        tsx,
        script,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code, `the fixture failed (needs root for unshare and tc):\n${err}`).toBe(0);
    const result = JSON.parse(out.trim().split('\n').at(-1)!) as {
      mode: string;
      afterFirst: { wouldBlock: number; fallbackPackets: number; batchedPackets: number };
      stats: { fallbackPackets: number; sendErrors: number };
      inOrder: boolean;
      intact: boolean;
      received: number;
    };
    expect(result.mode).toBe('gso');
    expect(result.afterFirst.wouldBlock).toBe(1);
    expect(result.afterFirst.batchedPackets).toBeGreaterThan(0);
    expect(result.afterFirst.fallbackPackets).toBeGreaterThan(0);
    expect(result.afterFirst.batchedPackets + result.afterFirst.fallbackPackets).toBe(200);
    // The second batch went behind the queued packets, whole.
    expect(result.stats.fallbackPackets).toBe(result.afterFirst.fallbackPackets + 50);
    expect(result.received).toBe(250);
    expect(result.inOrder).toBe(true);
    expect(result.intact).toBe(true);
    expect(result.stats.sendErrors).toBe(0);
  });
});
