import { createSocket } from 'node:dgram';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { isShaperError } from '../src/errors.js';
import type { LinkShaperOptions } from '../src/options.js';
import { LinkShaper } from '../src/shaper.js';
import { indexOf, numbered, TestSocket, until } from './support/udp.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const handle of open.splice(0).reverse()) await handle.close();
});

async function socket(echo = false): Promise<TestSocket> {
  const s = await TestSocket.open(echo);
  open.push(s);
  return s;
}

/** A shaper on 127.0.0.1, any port, in front of `target`. */
async function shaper(target: TestSocket, options: Partial<LinkShaperOptions> = {}): Promise<LinkShaper> {
  const s = await LinkShaper.start({
    listen: { address: '127.0.0.1', port: 0 },
    target: { address: '127.0.0.1', port: target.port },
    ...options,
  });
  open.push(s);
  return s;
}

/**
 * Sends datagrams 0..n-1 up through the shaper in batches, each batch once the shaper has taken
 * the previous one in (so no socket buffer overflows and the n-th datagram is the n-th seen),
 * then waits until everything the shaper forwarded has arrived. Returns the indices that arrived.
 */
async function sendThrough(
  client: TestSocket,
  relay: LinkShaper,
  sink: TestSocket,
  n: number,
): Promise<number[]> {
  const port = relay.address().port;
  const { datagramsIn: before, forwarded: forwardedBefore } = relay.stats().up;
  const arrivedBefore = sink.arrivals.length;
  for (let sent = 0; sent < n; ) {
    const batch = Math.min(250, n - sent);
    for (let i = 0; i < batch; i++) void client.send(numbered(sent + i), port);
    sent += batch;
    await until(
      () => relay.stats().up.datagramsIn - before >= sent,
      `the shaper to take in ${sent} datagrams`,
    );
  }
  await until(() => {
    const { up } = relay.stats();
    return up.inFlight === 0 && sink.arrivals.length - arrivedBefore === up.forwarded - forwardedBefore;
  }, 'every forwarded datagram to arrive');
  return sink.arrivals.slice(arrivedBefore).map((a) => indexOf(a.data));
}

/** Indices 0..n-1 missing from `arrived`, in order. */
function missing(arrived: readonly number[], n: number): number[] {
  const seen = new Set(arrived);
  return [...Array(n).keys()].filter((i) => !seen.has(i));
}

describe('LinkShaper over real UDP sockets', () => {
  it('a clean relay delivers everything both ways, to two clients at once', async () => {
    const target = await socket(true);
    const relay = await shaper(target);
    const a = await socket();
    const b = await socket();
    const port = relay.address().port;
    for (let i = 0; i < 300; i++) {
      await a.send(Buffer.from(`a:${i}`), port);
      await b.send(Buffer.from(`b:${i}`), port);
    }
    await until(
      () => a.arrivals.length === 300 && b.arrivals.length === 300,
      'both clients to get 300 replies',
    );
    expect(a.arrivals.map((x) => x.data.toString())).toEqual([...Array(300).keys()].map((i) => `a:${i}`));
    expect(b.arrivals.map((x) => x.data.toString())).toEqual([...Array(300).keys()].map((i) => `b:${i}`));
    expect(new Set(target.arrivals.map((x) => x.from.port)).size).toBe(2);
    expect(relay.stats()).toMatchObject({
      up: { datagramsIn: 600, forwarded: 600, dropped: { random: 0, burst: 0, queue: 0 } },
      down: { datagramsIn: 600, forwarded: 600 },
      clients: 2,
    });
  });

  it('independent loss of 5 % over 20 000 datagrams lands within five standard deviations', async () => {
    const target = await socket();
    const relay = await shaper(target, { up: { loss: 0.05 }, seed: 11 });
    const arrived = await sendThrough(await socket(), relay, target, 20_000);
    const lost = missing(arrived, 20_000).length;
    // Binomial: mean 1000, standard deviation 30.8.
    expect(lost).toBeGreaterThan(846);
    expect(lost).toBeLessThan(1154);
    expect(relay.stats().up.dropped).toEqual({ random: lost, burst: 0, queue: 0 });
  });

  it('burst loss of 5 % in bursts of 3 gives that rate and mean burst length over 20 000 datagrams', async () => {
    const target = await socket();
    const relay = await shaper(target, { up: { burstLoss: { rate: 0.05, meanBurst: 3 } }, seed: 12 });
    const arrived = await sendThrough(await socket(), relay, target, 20_000);
    const lost = missing(arrived, 20_000);
    const bursts = lost.filter((index, k) => k === 0 || lost[k - 1] !== index - 1).length;
    // Bursts make the count vary more than independent loss: about 67 datagrams for one standard
    // deviation of the total, 0.13 for the mean burst length of about 330 bursts.
    expect(lost.length / 20_000).toBeGreaterThan(0.035);
    expect(lost.length / 20_000).toBeLessThan(0.065);
    expect(lost.length / bursts).toBeGreaterThan(2.4);
    expect(lost.length / bursts).toBeLessThan(3.6);
    expect(relay.stats().up.dropped.burst).toBe(lost.length);
  });

  it('the same seed gives the same drops, another seed other drops', async () => {
    const run = async (seed: number) => {
      const target = await socket();
      const relay = await shaper(target, {
        up: { loss: 0.1, burstLoss: { rate: 0.05, meanBurst: 4 } },
        seed,
      });
      return missing(await sendThrough(await socket(), relay, target, 3000), 3000);
    };
    const first = await run(42);
    expect(first.length).toBeGreaterThan(200);
    expect(await run(42)).toEqual(first);
    expect(await run(43)).not.toEqual(first);
  });

  it('a burst above the rate is spread out at the rate, not delivered at once', async () => {
    const target = await socket();
    // 800 kbit/s is 100 bytes a millisecond: 40 datagrams of 1000 bytes take 400 ms.
    const relay = await shaper(target, { up: { rateKbps: 800 } });
    const client = await socket();
    for (let i = 0; i < 40; i++) await client.send(numbered(i, 1000), relay.address().port);
    await until(() => target.arrivals.length === 40, 'all 40 datagrams');
    const times = target.arrivals.map((a) => a.at);
    const spread = times[39]! - times[0]!;
    // The first leaves after 10 ms, the last 390 ms later; a late timer only shortens that by
    // how late it fired, so half is a safe floor.
    expect(spread).toBeGreaterThan(195);
    // No 200 ms window carries much more than 200 ms worth of the rate (20 000 bytes).
    const windowBytes = times.map(
      (start) => times.filter((t) => t >= start && t < start + 200).length * 1000,
    );
    expect(Math.max(...windowBytes)).toBeLessThanOrEqual(31_000);
    expect(relay.stats().up).toMatchObject({ forwarded: 40, dropped: { queue: 0 } });
  });

  it('a full queue drops the excess and counts it as queue overflow', async () => {
    const target = await socket();
    const relay = await shaper(target, { up: { rateKbps: 800, queueBytes: 10_000 } });
    const client = await socket();
    const port = relay.address().port;
    await Promise.all(Array.from({ length: 30 }, (_, i) => client.send(numbered(i, 1000), port)));
    await until(
      () => relay.stats().up.datagramsIn === 30 && relay.stats().up.inFlight === 0,
      'the queue to drain',
    );
    const { up } = relay.stats();
    // Ten fit in the queue; a few more if the link sent some while the burst was still arriving.
    expect(up.dropped.queue).toBeGreaterThanOrEqual(10);
    expect(up.dropped.queue).toBeLessThanOrEqual(20);
    expect(up.forwarded + up.dropped.queue).toBe(30);
    await until(() => target.arrivals.length === up.forwarded, 'every forwarded datagram');
    expect(up.queuedBytes).toBe(0);
  });

  it('delays every datagram by at least the delay, both ways', async () => {
    const target = await socket(true);
    const relay = await shaper(target, { up: { delayMs: 40 }, down: { delayMs: 30 } });
    const client = await socket();
    const sentAt = new Map<number, number>();
    for (let i = 0; i < 20; i++) {
      sentAt.set(i, performance.now());
      await client.send(numbered(i), relay.address().port);
    }
    await until(() => client.arrivals.length === 20, 'the 20 echoes');
    for (const [k, arrival] of target.arrivals.entries()) {
      expect(arrival.at - sentAt.get(k)!).toBeGreaterThanOrEqual(40);
    }
    for (const arrival of client.arrivals) {
      expect(arrival.at - sentAt.get(indexOf(arrival.data))!).toBeGreaterThanOrEqual(70);
    }
  });

  it('jitter keeps the order unless reorder is on, and never goes below delay - jitter', async () => {
    const arrivals = async (reorder: boolean) => {
      const target = await socket();
      const relay = await shaper(target, { up: { delayMs: 30, jitterMs: 20, reorder }, seed: 3 });
      const client = await socket();
      const start = performance.now();
      await Promise.all(
        Array.from({ length: 200 }, (_, i) => client.send(numbered(i), relay.address().port)),
      );
      await until(() => target.arrivals.length === 200, '200 datagrams');
      expect(Math.min(...target.arrivals.map((a) => a.at - start))).toBeGreaterThanOrEqual(10);
      return target.arrivals.map((a) => indexOf(a.data));
    };
    expect(await arrivals(false)).toEqual([...Array(200).keys()]);
    expect(await arrivals(true)).not.toEqual([...Array(200).keys()]);
  });

  it('update() changes the impairment while running, and refuses a bad value without changing anything', async () => {
    const target = await socket();
    const relay = await shaper(target);
    const client = await socket();
    expect(await sendThrough(client, relay, target, 50)).toHaveLength(50);
    relay.update({ up: { loss: 1 } });
    await sendThrough(client, relay, target, 50);
    expect(target.arrivals).toHaveLength(50);
    expect(relay.stats().up.dropped.random).toBe(50);
    relay.update({ up: { loss: 0, delayMs: 5 } });
    expect(await sendThrough(client, relay, target, 50)).toHaveLength(50);
    expect(() => relay.update({ up: { rateKbps: -5 } })).toThrow(/up\.rateKbps: got -5/);
    expect(relay.impairments().up).toMatchObject({ loss: 0, delayMs: 5, rateKbps: 0 });
  });

  it('forgets an idle client and maps it again when it returns', async () => {
    const target = await socket();
    const relay = await shaper(target, { idleTimeoutMs: 50 });
    const client = await socket();
    await client.send(numbered(0), relay.address().port);
    await until(() => target.arrivals.length === 1, 'the first datagram');
    expect(relay.stats().clients).toBe(1);
    await until(() => relay.stats().clients === 0, 'the idle mapping to expire');
    await client.send(numbered(1), relay.address().port);
    await until(() => target.arrivals.length === 2, 'the second datagram');
    expect(relay.stats().clients).toBe(1);
  });

  it('ignores datagrams reaching an upstream socket from anyone but the target', async () => {
    const target = await socket(true);
    const relay = await shaper(target);
    const client = await socket();
    const stranger = await socket();
    await client.send(numbered(0), relay.address().port);
    await until(() => client.arrivals.length === 1, 'the echo');
    await stranger.send(Buffer.from('not the target'), target.arrivals[0]!.from.port);
    await until(() => relay.stats().foreign === 1, 'the stranger to be counted');
    expect(client.arrivals).toHaveLength(1);
  });

  it('rejects bad options by name, and a taken port as bind-failed', async () => {
    const target = await socket();
    await expect(shaper(target, { up: { loss: 1.5 } })).rejects.toMatchObject({
      code: 'invalid-options',
      issues: [{ option: 'up.loss', message: expect.stringContaining('got 1.5') }],
    });
    const taken = createSocket('udp4');
    await new Promise<void>((resolve) => taken.bind(0, '127.0.0.1', resolve));
    try {
      const err = await shaper(target, {
        listen: { address: '127.0.0.1', port: taken.address().port },
      }).catch((e: unknown) => e);
      expect(isShaperError(err, 'bind-failed')).toBe(true);
      expect((err as Error).message).toContain(`127.0.0.1:${taken.address().port}`);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it('close() releases the port and refuses later updates', async () => {
    const target = await socket();
    const relay = await LinkShaper.start({
      listen: { address: '127.0.0.1', port: 0 },
      target: { address: '127.0.0.1', port: target.port },
    });
    const { port } = relay.address();
    await relay.close();
    await relay.close();
    expect(() => relay.update({ up: { loss: 0.1 } })).toThrow(expect.objectContaining({ code: 'closed' }));
    const again = await shaper(target, { listen: { address: '127.0.0.1', port } });
    expect(again.address().port).toBe(port);
  });
});
