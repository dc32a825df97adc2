import { describe, expect, it } from 'vitest';
import { sendToPaintMs, VideoStats } from '../src/index.js';
import { pictureAgeAtPaintMs } from '../src/video/stats.js';

describe('sendToPaintMs', () => {
  it('maps the daemon timestamp onto the local clock with the offset', () => {
    // Daemon clock = local − 2000 ms. Sent at daemon 10 s, painted at local 12.075 s: 75 ms.
    expect(sendToPaintMs(12_075, 10_000_000, 2000)).toBeCloseTo(75, 6);
    // The wrong sign of offset would give 4075 ms; an ignored one 2075 ms.
    expect(sendToPaintMs(12_075, 10_000_000, 0)).toBeCloseTo(2075, 6);
  });

  it('is right across the 32-bit wrap of the sender timestamp', () => {
    // Sent 20 ms before the daemon's µs counter wraps, painted 30 ms after it: 50 ms.
    const wrapMs = 0x1_0000_0000 / 1000;
    expect(sendToPaintMs(wrapMs + 30, 0x1_0000_0000 - 20_000, 0)).toBeCloseTo(50, 6);
    // And a day later (the daemon clock has wrapped many times): still 50 ms.
    const day = 86_400_000;
    const sentUs = (((day - 50) * 1000) % 0x1_0000_0000) >>> 0;
    expect(sendToPaintMs(day, sentUs, 0)).toBeCloseTo(50, 6);
  });
});

describe('pictureAgeAtPaintMs', () => {
  it('is paint time minus capture time on the robot clock, through the offset', () => {
    // The robot's clock is 250 ms behind the browser's. Captured at robot time 50 s (µs, wrapped),
    // painted at browser time 50.250 s + 42 ms: 42 ms old.
    const captured = 50_000_000;
    expect(pictureAgeAtPaintMs(50_292, captured, 250)).toBeCloseTo(42, 6);
    // The offset the wrong way round, or ignored, would say 542 or 292 ms.
    expect(pictureAgeAtPaintMs(50_292, captured, -250)).toBeCloseTo(542, 6);
  });

  it('is right across the 32-bit wrap of the capture clock', () => {
    const wrapMs = 0x1_0000_0000 / 1000;
    // Captured 10 ms before the robot's µs counter wraps, painted 25 ms after it.
    expect(pictureAgeAtPaintMs(wrapMs + 25, 0x1_0000_0000 - 10_000, 0)).toBeCloseTo(35, 6);
  });

  it('is NaN when the capture clock is unknown (0) or the offset is not known yet', () => {
    expect(pictureAgeAtPaintMs(1000, 0, 0)).toBeNaN();
    expect(pictureAgeAtPaintMs(1000, 900_000, undefined)).toBeNaN();
  });
});

describe('VideoStats', () => {
  it('counts frames, repairs and losses and reports plain JSON', () => {
    let now = 0;
    const stats = new VideoStats({ now: () => now });
    stats.recordReceived(1000, false);
    stats.recordReceived(500, true);
    stats.recordLost(3);
    stats.recordDecoded(4);
    stats.recordDecoded(8);
    stats.recordDropped();
    stats.recordLate();
    stats.recordWaitingForKeyframe();
    stats.recordKeyframeRequest();
    stats.recordPainted();
    now = 10;
    const snap = stats.snapshot();
    expect(JSON.parse(JSON.stringify(snap))).toEqual(snap);
    expect(snap).toMatchObject({
      framesReceived: 2,
      framesRepaired: 1,
      framesLost: 3,
      decoded: 2,
      dropped: 1,
      late: 1,
      waitingForKeyframe: 1,
      keyframeRequests: 1,
      painted: 1,
      bytesReceived: 1500,
      decodeTime: { lastMs: 8, meanMs: 6 },
      latency: { lastMs: null, p50Ms: null, p95Ms: null, samples: 0 },
      pictureAge: { lastMs: null, p50Ms: null, p95Ms: null, samples: 0 },
      skippedBehind: 0,
      holdMs: 0,
      jitterMs: null,
    });
  });

  it('counts frames skipped behind among the dropped, and reports the hold and jitter', () => {
    const stats = new VideoStats({ now: () => 0 });
    stats.recordDropped();
    stats.recordSkippedBehind(3);
    stats.recordHold(12.5, 4);
    expect(stats.snapshot()).toMatchObject({ dropped: 4, skippedBehind: 3, holdMs: 12.5, jitterMs: 4 });
  });

  it('gives the last, median and 95th percentile picture age over the window, leaving unknown ages out', () => {
    let now = 0;
    const stats = new VideoStats({ now: () => now, latencyWindowMs: 5000 });
    for (let k = 1; k <= 100; k++) stats.recordPictureAge(1000 + k * 10, k);
    stats.recordPictureAge(3000, Number.NaN);
    now = 2500;
    expect(stats.snapshot().pictureAge).toEqual({ lastMs: 100, p50Ms: 50, p95Ms: 95, samples: 100 });
    now = 6505; // the first half has left the 5 s window
    expect(stats.snapshot().pictureAge).toMatchObject({ samples: 50, p50Ms: 75 });
  });

  it('measures the bitrate over a sliding 1 s window', () => {
    let now = 0;
    const stats = new VideoStats({ now: () => now });
    stats.recordReceived(1000, false);
    now = 600;
    stats.recordReceived(500, false);
    now = 900;
    expect(stats.snapshot().bitrateBps).toBe(12_000);
    now = 1300; // the first 1000 bytes left the window
    expect(stats.snapshot().bitrateBps).toBe(4000);
    now = 5000;
    expect(stats.snapshot().bitrateBps).toBe(0);
    expect(stats.snapshot().bytesReceived).toBe(1500);
  });

  it('gives the last, median and 95th percentile latency over a sliding window, with the current offset', () => {
    let now = 0;
    const stats = new VideoStats({ now: () => now, clockOffsetMs: 100, latencyWindowMs: 5000 });
    // 100 paints 10 ms apart, each sent (k + 1) ms of latency earlier: latencies 1..100 ms.
    for (let k = 0; k < 100; k++) {
      const paintMs = 1000 + k * 10;
      stats.recordLatency(paintMs, (paintMs - 100 - (k + 1)) * 1000);
    }
    now = 2000;
    expect(stats.snapshot().latency).toEqual({ lastMs: 100, p50Ms: 50, p95Ms: 95, samples: 100 });
    // Five seconds after the first paint, the early samples have left the window.
    now = 6500;
    expect(stats.snapshot().latency).toMatchObject({ samples: 50, p50Ms: 75, lastMs: 100 });
    // A new offset applies to new samples.
    stats.clockOffsetMs = 0;
    expect(stats.recordLatency(7000, 6_990_000)).toBe(10);
  });

  it('rejects a window that is not positive', () => {
    expect(() => new VideoStats({ bitrateWindowMs: 0 })).toThrow(TypeError);
  });
});
