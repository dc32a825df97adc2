import { FakeClock } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import { PacedSendQueue } from '../src/send-queue.js';

const datagrams = (count: number, size = 1000) =>
  Array.from({ length: count }, (_, i) => new Uint8Array(size).fill(i));

describe('PacedSendQueue', () => {
  it('sends a burst at once, then the rest of a keyframe at the pacing rate', () => {
    const time = new FakeClock();
    const sent: { at: number; first: number }[] = [];
    const queue = new PacedSendQueue({
      send: (d) => sent.push({ at: time.now(), first: d[0]! }) > 0,
      rateBps: 8_000_000, // 1000 bytes per ms
      burstBytes: 4000,
      clock: time,
    });
    expect(queue.enqueueFrame(datagrams(40), true)).toBe(true);
    expect(sent.length).toBe(4);
    expect(queue.occupancy).toEqual({ datagrams: 36, bytes: 36_000, frames: 1 });
    time.advance(10);
    expect(sent.length).toBe(14);
    time.advance(100);
    expect(sent.map((s) => s.first)).toEqual([...Array(40).keys()]);
    expect(sent.at(-1)!.at).toBeCloseTo(36, 0);
    expect(queue.occupancy).toEqual({ datagrams: 0, bytes: 0, frames: 0 });
  });

  it('holds at least one timer tick of the pacing rate, so a fast rate is kept with 1 ms timers', () => {
    const time = new FakeClock();
    const sent: number[] = [];
    const queue = new PacedSendQueue({
      send: () => sent.push(time.now()) > 0,
      rateBps: 80_000_000, // 10 000 bytes per ms: more than the 4000-byte burst each tick
      burstBytes: 4000,
      clock: time,
    });
    expect(queue.enqueueFrame(datagrams(100), true)).toBe(true);
    expect(sent.length).toBe(10);
    time.advance(10);
    // 100 kB at 10 kB/ms: gone within 10 ms, not 25 (which a 4000-byte bucket would allow).
    expect(sent.length).toBe(100);
    expect(sent.at(-1)!).toBeCloseTo(9, 0);
    queue.setRate(8_000_000);
    expect(queue.rateBps).toBe(8_000_000);
    expect(queue.enqueueFrame(datagrams(10), true)).toBe(true);
    expect(sent.length).toBe(104);
  });

  it('refuses a frame whole when it does not fit, and never tears one', () => {
    const time = new FakeClock();
    let sent = 0;
    const queue = new PacedSendQueue({
      send: () => ++sent > 0,
      rateBps: 800_000,
      burstBytes: 1000,
      maxQueuedBytes: 11_000,
      clock: time,
    });
    expect(queue.enqueueFrame(datagrams(8), true)).toBe(true);
    expect(queue.enqueueFrame(datagrams(5), false)).toBe(false);
    expect(queue.stats.refusedFrames).toBe(1);
    expect(queue.occupancy.datagrams).toBe(7);
    expect(queue.enqueueFrame(datagrams(2), false)).toBe(true);
    expect(queue.enqueueFrame(datagrams(2), false)).toBe(true);
    // The keyframe has started leaving: only the deltas behind it can be dropped, whole.
    expect(queue.dropQueued(true)).toBe(2);
    expect(queue.occupancy).toEqual({ datagrams: 7, bytes: 7000, frames: 1 });
    time.advance(1000);
    expect(sent).toBe(8);
  });

  it('waits for a busy transport instead of skipping datagrams', () => {
    const time = new FakeClock();
    const delivered: number[] = [];
    let busy = true;
    const queue = new PacedSendQueue({
      send: (d) => {
        if (busy) return false;
        delivered.push(d[0]!);
        return true;
      },
      rateBps: 80_000_000,
      clock: time,
    });
    queue.enqueueFrame(datagrams(3), false);
    time.advance(5);
    expect(delivered).toEqual([]);
    expect(queue.stats.transportBusy).toBeGreaterThan(1);
    busy = false;
    time.advance(2);
    expect(delivered).toEqual([0, 1, 2]);
  });

  it('follows rate changes and stops on close', () => {
    const time = new FakeClock();
    let sent = 0;
    const queue = new PacedSendQueue({
      send: () => ++sent > 0,
      rateBps: 8_000_000,
      burstBytes: 1000,
      clock: time,
    });
    queue.enqueueFrame(datagrams(20), false);
    time.advance(5);
    expect(sent).toBe(6);
    queue.setRate(800_000); // ten times slower
    time.advance(10);
    expect(sent).toBe(7);
    queue.close();
    time.advance(1000);
    expect(sent).toBe(7);
    expect(queue.enqueueFrame(datagrams(1), false)).toBe(false);
    expect(() => queue.setRate(0)).toThrow(TypeError);
  });
});
