import { describe, expect, it } from 'vitest';
import {
  CanvasPresenter,
  type PaintReport,
  type PresentableFrame,
  type PresentMeta,
  VideoStats,
} from '../src/index.js';

/** A stand-in for `VideoFrame` that records how often it was closed. */
interface FakeFrame {
  readonly id: number;
  displayWidth: number;
  displayHeight: number;
  closes: number;
  close(): void;
}

interface Meta extends PresentMeta {
  readonly id: number;
}

/** A presenter on a fake canvas with a hand-driven clock and paint scheduler. */
function harness(presentationDelayMs: number, extra: { maxQueued?: number } = {}) {
  let nowMs = 0;
  let pending: ((t: number) => void)[] = [];
  const draws: { id: number; args: number[] }[] = [];
  const paints: PaintReport<Meta>[] = [];
  const canvas = {
    width: 300,
    height: 150,
    getContext: () => ({
      drawImage: (frame: FakeFrame, ...args: number[]) => {
        if (frame.closes > 0) throw new Error(`frame ${frame.id} drawn after close`);
        draws.push({ id: frame.id, args });
      },
    }),
  };
  const stats = new VideoStats({ now: () => nowMs });
  const presenter = new CanvasPresenter<Meta>({
    canvas: canvas as unknown as HTMLCanvasElement,
    presentationDelayMs,
    now: () => nowMs,
    requestFrame: (cb) => pending.push(cb),
    stats,
    onPaint: (report) => paints.push(report),
    ...extra,
  });
  const frames: FakeFrame[] = [];
  let nextVsync = 0;
  return {
    presenter,
    canvas,
    draws,
    paints,
    frames,
    stats: () => stats.snapshot(),
    /**
     * Frame `id` captured at `captureMs` becomes whole at `atMs` and is presented (decoded)
     * `decodeMs` later.
     */
    arrive(
      id: number,
      captureMs: number,
      atMs: number,
      size: [number, number] = [320, 240],
      decodeMs = 0,
    ): FakeFrame {
      nowMs = atMs + decodeMs;
      const frame: FakeFrame = {
        id,
        displayWidth: size[0],
        displayHeight: size[1],
        closes: 0,
        close() {
          this.closes++;
        },
      };
      frames.push(frame);
      presenter.present(frame as unknown as PresentableFrame, {
        id,
        captureTimestampUs: captureMs * 1000,
        receivedMs: atMs,
      });
      return frame;
    },
    /** Runs the paint opportunity at `atMs`. */
    paintAt(atMs: number): void {
      nowMs = atMs;
      const callbacks = pending;
      pending = [];
      for (const cb of callbacks) cb(atMs);
    },
    /** Runs the paint opportunities of a 60 Hz display up to `untilMs`. */
    vsyncTo(untilMs: number): void {
      while (nextVsync <= untilMs) {
        this.paintAt(Math.max(nextVsync, nowMs));
        nextVsync += VSYNC_MS;
      }
    },
    scheduled: () => pending.length,
    painted: () => paints.map((p) => p.meta.id),
  };
}

const FRAME_MS = 1000 / 30;
const VSYNC_MS = 1000 / 60;

/** A small seeded generator (mulberry32), so every run sees the same "random" jitter. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
}

/**
 * Plays frames `from..to-1` of a 30 fps source on a 60 Hz display: frame i is captured at
 * i × 33.3 ms, becomes whole `1000 + capture + lateness(i)` and is decoded `decodeMs` later.
 */
function play(
  h: ReturnType<typeof harness>,
  from: number,
  to: number,
  lateness: (i: number) => number = () => 0,
  decodeMs = 4,
): void {
  for (let i = from; i < to; i++) {
    const captureMs = i * FRAME_MS;
    const atMs = 1000 + captureMs + lateness(i);
    h.vsyncTo(atMs + decodeMs);
    h.arrive(i, captureMs, atMs, [320, 240], decodeMs);
  }
}

/** How long each painted frame waited after it was decoded, ms, by frame id. */
function waits(h: ReturnType<typeof harness>, decodeMs = 4): Map<number, number> {
  return new Map(
    h.paints.map((p) => {
      const arrived = p.meta.receivedMs ?? 0;
      return [p.meta.id, p.paintMs - (arrived + decodeMs)];
    }),
  );
}

// The presentation delay of the profile is the ceiling of an adaptive hold: these tests no longer
// expect every frame to wait the whole delay, as they did when the delay was a constant.
describe('CanvasPresenter', () => {
  it('paints the first frame at once, then holds frames only as long as the calm link needs, keeping their spacing', () => {
    const h = harness(100);
    h.arrive(0, 0, 1000, [320, 240], 4);
    h.paintAt(1004);
    expect(h.paints[0]).toMatchObject({ paintMs: 1004, dueMs: 1004, late: false, holdMs: 0 });
    play(h, 1, 91);
    h.vsyncTo(5000);
    const snap = h.stats();
    expect(snap).toMatchObject({ painted: 91, late: 0, dropped: 0, skippedBehind: 0 });
    // It covers the 4 ms decode, and stays far below the 100 ms ceiling.
    expect(snap.holdMs).toBeGreaterThanOrEqual(4);
    expect(snap.holdMs).toBeLessThanOrEqual(20);
    // After the start's first second (the hold learns nothing from it), frames are due one capture
    // interval apart, each a few ms after it was ready.
    const dues = h.paints.slice(31).map((p) => p.dueMs);
    for (let i = 1; i < dues.length; i++) expect(dues[i]! - dues[i - 1]!).toBeCloseTo(FRAME_MS, 6);
    for (const p of h.paints.slice(31)) expect(p.dueMs - (p.meta.receivedMs! + 4)).toBeLessThanOrEqual(20);
    expect(h.frames.every((f) => f.closes === 1)).toBe(true);
  });

  it('paints each frame at the paint opportunity nearest its due time, not the first one after it', () => {
    const h = harness(100);
    // 25 fps on a 60 Hz display, so due times fall at every phase of the display's interval; every
    // other frame 20 ms late: the hold covers it, and on-time frames wait well past ready.
    const decodeMs = 4;
    for (let i = 0; i < 150; i++) {
      const atMs = 1000 + i * 40 + (i % 2) * 20;
      h.vsyncTo(atMs + decodeMs);
      h.arrive(i, i * 40, atMs, [320, 240], decodeMs);
    }
    h.vsyncTo(8000);
    const waiting = h.paints.slice(40).filter((p) => p.dueMs - (p.meta.receivedMs! + decodeMs) >= VSYNC_MS);
    expect(waiting.length).toBeGreaterThan(40);
    expect(waiting.every((p) => Math.abs(p.paintMs - p.dueMs) <= VSYNC_MS / 2 + 1e-6)).toBe(true);
    // Some go out a little before their time: waiting for the next opportunity would be later still.
    expect(waiting.some((p) => p.paintMs < p.dueMs)).toBe(true);
  });

  it('raises the hold to cover a jittery link, so few frames miss their time, and never above the ceiling', () => {
    const random = seeded(7);
    const h = harness(100);
    play(h, 0, 300, () => random() * 40);
    h.vsyncTo(20_000);
    const snap = h.stats();
    expect(snap.holdMs).toBeGreaterThanOrEqual(35);
    expect(snap.holdMs).toBeLessThanOrEqual(100);
    expect(snap.jitterMs).toBeGreaterThan(30);
    // After the first second of learning, at most 5 % of frames were ready after their due time.
    const lateAfterWarmUp = h.paints.filter((p) => p.meta.id >= 30 && p.late).length;
    expect(lateAfterWarmUp / 270).toBeLessThanOrEqual(0.05);
    expect(snap.painted + snap.dropped).toBe(300);
  });

  it('a lower ceiling (another profile) applies at once', () => {
    const random = seeded(8);
    const h = harness(100);
    play(h, 0, 150, () => random() * 60);
    expect(h.presenter.holdMs).toBeGreaterThan(40);
    h.presenter.setPresentationDelay(15);
    expect(h.presenter.holdMs).toBe(15);
    play(h, 150, 160, () => random() * 60);
    expect(h.paints.filter((p) => p.meta.id >= 150).every((p) => p.holdMs <= 15)).toBe(true);
    expect(() => h.presenter.setPresentationDelay(-5)).toThrow(TypeError);
  });

  it('sizes the canvas to the frame and draws over all of it, again when the size changes', () => {
    const h = harness(0);
    h.arrive(0, 0, 0, [320, 240]);
    h.paintAt(16);
    expect([h.canvas.width, h.canvas.height]).toEqual([320, 240]);
    expect(h.draws).toEqual([{ id: 0, args: [0, 0, 320, 240] }]);
    h.arrive(1, 33, 33, [640, 360]);
    h.paintAt(40);
    expect([h.canvas.width, h.canvas.height]).toEqual([640, 360]);
    expect(h.draws[1]).toEqual({ id: 1, args: [0, 0, 640, 360] });
  });

  it('paints a frame that is ready after its time at the next opportunity and counts it late', () => {
    const h = harness(100);
    play(h, 0, 60);
    h.vsyncTo(3100);
    const hold = h.presenter.holdMs;
    expect(hold).toBeLessThan(20);
    // Frame 60 comes 40 ms after its slot: more than the hold covers.
    h.arrive(60, 60 * FRAME_MS, 1000 + 60 * FRAME_MS + 40, [320, 240], 4);
    expect(h.stats().late).toBe(1);
    const readyMs = 1000 + 60 * FRAME_MS + 44;
    h.paintAt(readyMs + 1);
    expect(h.painted().at(-1)).toBe(60);
    expect(h.paints.at(-1)).toMatchObject({ late: true, paintMs: readyMs + 1 });
    expect(h.paints.at(-1)!.dueMs).toBeLessThan(readyMs);
  });

  it('a paint opportunity that comes late (a busy main thread) paints every frame that was due, oldest first, one per paint, none skipped', () => {
    const h = harness(100);
    h.arrive(0, 0, 0);
    h.paintAt(0);
    h.arrive(1, 33, 33);
    h.arrive(2, 66, 66);
    // No paint opportunity until both are due: they are 33 ms apart, within the 100 ms ceiling.
    h.paintAt(140);
    expect(h.painted()).toEqual([0, 1]);
    h.paintAt(156);
    expect(h.painted()).toEqual([0, 1, 2]);
    expect(h.draws.map((d) => d.id)).toEqual([0, 1, 2]);
    expect(h.stats()).toMatchObject({ painted: 3, dropped: 0, skippedBehind: 0 });
    expect(h.frames.every((f) => f.closes === 1)).toBe(true);
    expect(h.presenter.queued).toBe(0);
  });

  it('a 30 fps stream whose paints come in irregular pairs (a loaded machine) has every frame painted', () => {
    const random = seeded(3);
    const h = harness(100);
    for (let i = 0; i < 300; i++) {
      h.arrive(i, i * FRAME_MS, 1000 + i * FRAME_MS, [320, 240], 2);
      // Paint opportunities come only after every other frame, at a random moment before the next.
      if (i % 2 === 1) h.paintAt(1000 + i * FRAME_MS + 2 + random() * 20);
      if (i % 2 === 1) h.paintAt(1000 + i * FRAME_MS + 25 + random() * 8);
    }
    h.vsyncTo(1000 + 300 * FRAME_MS + 200);
    expect(h.stats()).toMatchObject({ painted: 300, skippedBehind: 0, dropped: 0 });
  });

  it('truly behind: when the frames due span more than the ceiling, only the newest is painted and the rest counted skipped behind', () => {
    const h = harness(100);
    const f0 = h.arrive(0, 0, 0);
    h.paintAt(0);
    for (let i = 1; i <= 5; i++) h.arrive(i, i * 33, i * 33);
    // No paint for 300 ms: frames 1..5 (132 ms of video) are due at once.
    h.paintAt(300);
    expect(h.painted()).toEqual([0, 5]);
    expect(f0.closes).toBe(1);
    expect(h.frames.every((f) => f.closes === 1)).toBe(true);
    expect(h.stats()).toMatchObject({ dropped: 4, skippedBehind: 4 });
    expect(h.presenter.queued).toBe(0);
  });

  it('after a start (the replay at join), the frames decoded behind the first picture are all painted in turn, and the hold does not learn from their wait', () => {
    const h = harness(100);
    // The first picture (the replay's last frame) and the live frames 1..9 that became whole while
    // the replay decoded come out of the decoder together, 300 ms after the first became whole.
    for (let i = 0; i < 10; i++)
      h.arrive(i, i * FRAME_MS, 1000 + i * FRAME_MS, [320, 240], 300 - i * FRAME_MS);
    // Then the stream runs on, each frame decoded in 4 ms.
    play(h, 10, 120);
    h.vsyncTo(6000);
    expect(h.painted()).toEqual(Array.from({ length: 120 }, (_, i) => i));
    expect(h.stats()).toMatchObject({ painted: 120, skippedBehind: 0, dropped: 0 });
    // The start's backlog is played out within a second; then frames wait only a few ms again.
    const w = waits(h);
    for (let i = 40; i < 120; i++) expect(w.get(i)).toBeLessThanOrEqual(20 + VSYNC_MS);
    expect(h.presenter.holdMs).toBeLessThan(20);
  });

  it('a start that is late for reasons of its own (frames queued behind the replay on the wire) teaches the hold nothing', () => {
    const h = harness(100);
    // The first picture comes at once; the next 20 frames were queued behind the replay on a new
    // connection and come 150 ms late, catching up by 7.5 ms a frame; then the link is calm.
    play(h, 0, 90, (i) => (i === 0 || i > 20 ? 0 : 150 - (i - 1) * 7.5));
    h.vsyncTo(4000);
    expect(h.stats()).toMatchObject({ painted: 90, skippedBehind: 0 });
    // Two seconds after the first picture the hold is what the calm link needs, not the start's
    // lateness on its way down from the ceiling.
    expect(h.presenter.holdMs).toBeLessThan(10);
    const w = waits(h);
    for (let i = 40; i < 90; i++) expect(w.get(i)).toBeLessThanOrEqual(10 + VSYNC_MS);
  });

  it('after the start, a backlog over the ceiling is truly behind again', () => {
    const h = harness(100);
    play(h, 0, 60);
    h.vsyncTo(3000);
    // The main thread is busy for 500 ms: frames 60..74 are decoded and wait with no paint.
    for (let i = 60; i < 75; i++) h.arrive(i, i * FRAME_MS, 1000 + i * FRAME_MS, [320, 240], 4);
    h.paintAt(1000 + 75 * FRAME_MS);
    expect(h.painted().slice(60)).toEqual([74]);
    expect(h.stats()).toMatchObject({ painted: 61, skippedBehind: 14 });
  });

  it('never creeps: after a 2 s stall and a burst it paints only the newest frame, counts the skips, and holds the next ones no longer than before', () => {
    const h = harness(100);
    play(h, 0, 60);
    h.vsyncTo(3100);
    const holdBefore = h.presenter.holdMs;
    const paintedBefore = h.stats().painted;
    // The link stalls for 2 s, then releases the 60 frames it held, decoded 1 ms apart.
    const burstAt = 1000 + 60 * FRAME_MS + 2000;
    for (let i = 60; i < 120; i++) h.arrive(i, i * FRAME_MS, burstAt + (i - 60), [320, 240], 1);
    h.paintAt(burstAt + 59 + 1 + holdBefore);
    expect(h.painted().slice(paintedBefore)).toEqual([119]);
    const snap = h.stats();
    expect(snap.skippedBehind).toBe(59);
    expect(snap.reanchors).toBe(1);
    expect(snap.painted + snap.dropped).toBe(120);
    // The link runs on as before: each later frame waits a few ms, as before the stall, not 2 s.
    const later = (i: number): number => burstAt + 60 + (i - 120) * FRAME_MS;
    for (let i = 120; i < 180; i++) {
      h.vsyncTo(later(i) + 4);
      h.arrive(i, i * FRAME_MS, later(i), [320, 240], 4);
    }
    h.vsyncTo(later(180) + 100);
    const after = h.paints.filter((p) => p.meta.id >= 120);
    expect(after).toHaveLength(60);
    expect(after.every((p) => !p.late && p.paintMs - (p.meta.receivedMs! + 4) <= holdBefore + VSYNC_MS)).toBe(
      true,
    );
    expect(h.presenter.holdMs).toBeLessThanOrEqual(holdBefore + 1);
  });

  it('a link that becomes slower for good costs a few late frames, then no lateness and no extra hold', () => {
    const h = harness(100);
    play(h, 0, 90);
    // From frame 90 on every frame comes 60 ms later than before (a longer route).
    play(h, 90, 300, (i) => (i >= 90 ? 60 : 0));
    h.vsyncTo(20_000);
    const lateIds = h.paints.filter((p) => p.late).map((p) => p.meta.id);
    expect(lateIds.length).toBeGreaterThan(0);
    expect(lateIds.every((id) => id < 100)).toBe(true);
    // Once the hold knows, frames wait only a few ms after they are ready.
    const w = waits(h);
    for (let i = 100; i < 300; i++) expect(w.get(i)).toBeLessThanOrEqual(20 + VSYNC_MS);
    expect(h.presenter.holdMs).toBeLessThan(20);
  });

  it('a frame that arrives earlier than the line moves it: it and the frames after it are due sooner', () => {
    const h = harness(100);
    h.arrive(0, 0, 80); // a large keyframe, 80 ms in transit: the line starts there
    h.paintAt(80);
    // The deltas after it take 10 ms: 70 ms earlier than the first frame's line predicts.
    h.arrive(1, 33, 43);
    h.arrive(2, 66, 76);
    expect(h.paints[0]!.dueMs).toBe(80);
    const hold = h.presenter.holdMs;
    h.paintAt(76 + hold);
    // Both are due by then, far sooner than the first frame's line (146 and 180 ms): the older
    // first, the other at the next paint.
    h.paintAt(76 + hold + VSYNC_MS);
    expect(h.painted()).toEqual([0, 1, 2]);
    for (const p of h.paints.slice(1)) expect(p.dueMs).toBeLessThanOrEqual(76 + hold);
    expect(h.stats()).toMatchObject({ late: 0, skippedBehind: 0 });
  });

  it('with delay 0 paints every frame at the next opportunity, the newest when several wait', () => {
    const h = harness(0);
    h.arrive(0, 0, 0);
    h.paintAt(1);
    expect(h.painted()).toEqual([0]);
    // Capture times do not matter: a frame captured "in the future" is not held back.
    h.arrive(1, 5000, 10);
    h.paintAt(11);
    expect(h.painted()).toEqual([0, 1]);
    h.arrive(2, 5033, 20);
    const f3 = h.arrive(3, 5066, 21);
    h.paintAt(22);
    expect(h.painted()).toEqual([0, 1, 3]);
    expect(h.frames[2]!.closes).toBe(1);
    expect(f3.closes).toBe(1);
    expect(h.stats()).toMatchObject({ painted: 3, dropped: 1, late: 0, reanchors: 0, holdMs: 0 });
  });

  it('bounds the frames waiting when paints stop, closing the oldest', () => {
    const h = harness(0, { maxQueued: 4 });
    for (let i = 0; i < 10; i++) h.arrive(i, i * 33, i * 33);
    expect(h.presenter.queued).toBe(4);
    expect(h.frames.slice(0, 6).every((f) => f.closes === 1)).toBe(true);
    expect(h.stats()).toMatchObject({ dropped: 6, skippedBehind: 6 });
  });

  it('close() releases waiting frames, stops painting, and closes frames presented later', async () => {
    const h = harness(100);
    h.arrive(0, 0, 0);
    h.arrive(1, 33, 33);
    const drained = h.presenter.drain();
    h.presenter.close();
    await drained;
    expect(h.frames.map((f) => f.closes)).toEqual([1, 1]);
    h.paintAt(500);
    expect(h.painted()).toEqual([]);
    const late = h.arrive(2, 66, 600);
    expect(late.closes).toBe(1);
    expect(h.scheduled()).toBe(0);
  });

  it('drain() resolves once every waiting frame has been painted or dropped', async () => {
    const h = harness(100);
    // Past the start's first second, so the hold has learnt the link: every other frame 30 ms late.
    play(h, 0, 60, (i) => (i % 2) * 30);
    h.vsyncTo(3000);
    const readyMs = 1000 + 60 * FRAME_MS + 4;
    h.arrive(60, 60 * FRAME_MS, readyMs - 4, [320, 240], 4);
    let drained = false;
    const done = h.presenter.drain().then(() => {
      drained = true;
    });
    h.paintAt(readyMs + 1);
    await Promise.resolve();
    expect(drained).toBe(false);
    h.paintAt(readyMs + 100);
    await done;
    expect(drained).toBe(true);
  });

  it('rejects a negative delay', () => {
    expect(() => harness(-1)).toThrow(TypeError);
  });
});
