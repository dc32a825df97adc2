import { describe, expect, it } from 'vitest';
import { type DropCause, ImpairedLink } from '../src/link.js';
import { IMPAIRMENT_DEFAULTS, type ResolvedImpairment } from '../src/options.js';
import { seededRandom } from '../src/random.js';

const link = (change: Partial<ResolvedImpairment>, seed = 1) =>
  new ImpairedLink<number>({ ...IMPAIRMENT_DEFAULTS, ...change }, seededRandom(seed));

/** Release times of every datagram, stepping the clock by `step` ms until the link is idle. */
function drain(l: ImpairedLink<number>, from: number, step = 0.25): Map<number, number> {
  const released = new Map<number, number>();
  for (let t = from; l.nextWakeAt() !== undefined; t += step) {
    for (const item of l.release(t)) released.set(item, t);
  }
  return released;
}

/** Offers `n` datagrams of `bytes` at time 0 and returns each one's fate. */
function offerMany(l: ImpairedLink<number>, n: number, bytes = 100, now = 0): (DropCause | undefined)[] {
  return Array.from({ length: n }, (_, i) => l.offer(i, bytes, now));
}

describe('ImpairedLink (pure, injected clock)', () => {
  it('a clean link releases every datagram at once and in order', () => {
    const l = link({});
    expect(offerMany(l, 5)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(l.release(0)).toEqual([0, 1, 2, 3, 4]);
    expect(l.nextWakeAt()).toBeUndefined();
    expect(l.stats(0)).toMatchObject({
      datagramsIn: 5,
      forwarded: 5,
      bytesIn: 500,
      bytesForwarded: 500,
      inFlight: 0,
    });
  });

  it('serialises at the rate on a virtual clock: 1000 B at 800 kbit/s is one every 10 ms', () => {
    const l = link({ rateKbps: 800 });
    offerMany(l, 5, 1000);
    expect(l.stats(0).queuedBytes).toBe(5000);
    expect(l.release(9.99)).toEqual([]);
    expect(l.nextWakeAt()).toBe(10);
    expect(l.release(10)).toEqual([0]);
    expect(l.stats(10).queuedBytes).toBe(4000);
    // A caller that looks late gets everything due, and the link keeps its own clock.
    expect(l.release(35)).toEqual([1, 2]);
    expect(l.nextWakeAt()).toBe(40);
    expect(l.release(50)).toEqual([3, 4]);
  });

  it('drops at the tail when the queue is full, and accepts again once the link has sent', () => {
    const l = link({ rateKbps: 800, queueBytes: 3000 });
    expect(offerMany(l, 5, 1000)).toEqual([undefined, undefined, undefined, 'queue', 'queue']);
    expect(l.offer(5, 1000, 10)).toBeUndefined();
    expect(l.stats(10).dropped).toEqual({ random: 0, burst: 0, queue: 2 });
    expect([...drain(l, 10).keys()]).toEqual([0, 1, 2, 5]);
  });

  it('an unlimited link never queues, whatever the queue size', () => {
    const l = link({ queueBytes: 1500 });
    expect(offerMany(l, 3, 60_000)).toEqual([undefined, undefined, undefined]);
  });

  it('delays by delayMs after serialisation; jitter stays within ± jitterMs and keeps the order', () => {
    const l = link({ delayMs: 50, jitterMs: 10 });
    const sent = new Map<number, number>();
    for (let i = 0; i < 500; i++) {
      l.offer(i, 100, i * 0.5);
      sent.set(i, i * 0.5);
    }
    const released = drain(l, 0);
    expect(released.size).toBe(500);
    const delays = [...released].map(([i, t]) => t - sent.get(i)!);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(40);
    // Order kept: a datagram may wait for the one ahead, never past the latest draw (60 ms).
    expect(Math.max(...delays)).toBeLessThanOrEqual(60.25);
    expect([...released.keys()]).toEqual([...Array(500).keys()]);
  });

  it('with reorder, jitter lets datagrams overtake, each delayed within ± jitterMs', () => {
    const l = link({ delayMs: 50, jitterMs: 10, reorder: true });
    for (let i = 0; i < 500; i++) l.offer(i, 100, i * 0.5);
    const released = drain(l, 0);
    const order = [...released.keys()];
    expect(order).not.toEqual([...Array(500).keys()]);
    for (const [i, t] of released) {
      expect(t - i * 0.5).toBeGreaterThanOrEqual(40);
      expect(t - i * 0.5).toBeLessThanOrEqual(60.25);
    }
  });

  it('a rate change applies to what is still queued; the datagram on the link finishes at the old rate', () => {
    const l = link({ rateKbps: 800 });
    offerMany(l, 6, 1000);
    expect(l.release(20)).toEqual([0, 1]);
    l.setImpairment({ ...IMPAIRMENT_DEFAULTS, rateKbps: 400 });
    const released = drain(l, 20);
    expect([...released.values()]).toEqual([30, 50, 70, 90]);
  });

  it('independent loss of 5 % over 200 000 datagrams lands within 0.25 % of 5 %', () => {
    const l = link({ loss: 0.05 }, 99);
    const n = 200_000;
    let lost = 0;
    for (let i = 0; i < n; i++) if (l.offer(i, 10, 0) === 'random') lost++;
    // Standard deviation of the fraction: sqrt(0.05 * 0.95 / n) = 0.049 %.
    expect(Math.abs(lost / n - 0.05)).toBeLessThan(0.0025);
  });

  it('Gilbert-Elliott burst loss gives the requested long-run rate and mean burst length', () => {
    const l = link({ burstLoss: { rate: 0.05, meanBurst: 3 } }, 5);
    const n = 400_000;
    const lost = Array.from({ length: n }, (_, i) => l.offer(i, 10, 0) === 'burst');
    const { rate, meanBurst, lossAfterLoss } = lossShape(lost);
    expect(Math.abs(rate - 0.05)).toBeLessThan(0.004);
    expect(Math.abs(meanBurst - 3)).toBeLessThan(0.15);
    // In bursts of 3 a loss follows a loss two times in three; independent loss would give 5 %.
    expect(Math.abs(lossAfterLoss - 2 / 3)).toBeLessThan(0.03);
  });

  it('the same seed and datagrams give the same losses whatever the timing, rate and queue', () => {
    const fates = (seed: number, change: Partial<ResolvedImpairment>, spacing: number) => {
      const l = link({ loss: 0.1, burstLoss: { rate: 0.05, meanBurst: 4 }, ...change }, seed);
      return Array.from({ length: 5000 }, (_, i) => {
        const fate = l.offer(i, 1000, i * spacing);
        return fate === 'queue' ? undefined : fate;
      });
    };
    const reference = fates(42, {}, 1);
    expect(fates(42, { rateKbps: 100, queueBytes: 5000, delayMs: 30, jitterMs: 5 }, 0.1)).toEqual(reference);
    expect(fates(43, {}, 1)).not.toEqual(reference);
  });
});

/** Loss fraction, mean run length of consecutive losses, and P(loss | previous lost). */
function lossShape(lost: readonly boolean[]): { rate: number; meanBurst: number; lossAfterLoss: number } {
  let losses = 0;
  let bursts = 0;
  let afterLoss = 0;
  for (let i = 0; i < lost.length; i++) {
    if (!lost[i]) continue;
    losses++;
    if (i === 0 || !lost[i - 1]) bursts++;
    else afterLoss++;
  }
  return { rate: losses / lost.length, meanBurst: losses / bursts, lossAfterLoss: afterLoss / losses };
}
