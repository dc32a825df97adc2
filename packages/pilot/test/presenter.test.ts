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
function harness(presentationDelayMs: number, extra: { maxQueued?: number; rampDelay?: boolean } = {}) {
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
    rampDelay: false,
    ...extra,
  });
  const frames: FakeFrame[] = [];
  return {
    presenter,
    canvas,
    draws,
    paints,
    frames,
    stats: () => stats.snapshot(),
    /** Presents frame `id` captured at `captureMs`, arriving at `atMs`. */
    arrive(id: number, captureMs: number, atMs: number, size: [number, number] = [320, 240]): FakeFrame {
      nowMs = atMs;
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
      presenter.present(frame as unknown as PresentableFrame, { id, captureTimestampUs: captureMs * 1000 });
      return frame;
    },
    /** Runs the paint opportunity at `atMs`. */
    paintAt(atMs: number): void {
      nowMs = atMs;
      const callbacks = pending;
      pending = [];
      for (const cb of callbacks) cb(atMs);
    },
    scheduled: () => pending.length,
    painted: () => paints.map((p) => p.meta.id),
  };
}

describe('CanvasPresenter', () => {
  it('paints each frame presentationDelayMs after the arrival its capture time predicts', () => {
    const h = harness(100);
    h.arrive(0, 0, 1000);
    h.arrive(1, 33.5, 1033.5);
    h.paintAt(1099);
    expect(h.painted()).toEqual([]);
    h.paintAt(1100);
    expect(h.painted()).toEqual([0]);
    h.paintAt(1120);
    expect(h.painted()).toEqual([0]);
    h.paintAt(1133.5);
    expect(h.painted()).toEqual([0, 1]);
    expect(h.paints.map((p) => [p.paintMs, p.dueMs, p.late])).toEqual([
      [1100, 1100, false],
      [1133.5, 1133.5, false],
    ]);
    // Jitter within the delay does not move the schedule: frame 2 arrives 40 ms late, still on time.
    h.arrive(2, 66.5, 1106.5);
    h.paintAt(1166);
    expect(h.painted()).toEqual([0, 1]);
    h.paintAt(1166.5);
    expect(h.painted()).toEqual([0, 1, 2]);
    expect(h.stats()).toMatchObject({ painted: 3, late: 0, dropped: 0, reanchors: 0 });
    expect(h.frames.map((f) => f.closes)).toEqual([1, 1, 1]);
    expect(h.scheduled()).toBe(0);
  });

  it('paints the first frame at once and builds the delay up by playing a quarter slower (rampDelay, the default)', () => {
    const h = harness(100, { rampDelay: true });
    h.arrive(0, 0, 1000);
    h.paintAt(1000);
    expect(h.painted()).toEqual([0]);
    // Frames keep arriving on time; each is due a little later than its arrival, until 100 ms.
    const due: number[] = [];
    for (let i = 1; i <= 30; i++) {
      h.arrive(i, i * 33.3, 1000 + i * 33.3);
      h.paintAt(1000 + i * 33.3 + 200);
      due.push(h.paints.at(-1)!.dueMs - (1000 + i * 33.3));
    }
    expect(due[0]).toBeCloseTo(33.3 * 0.25, 1);
    expect(due.every((d, i) => i === 0 || d >= due[i - 1]!)).toBe(true);
    expect(due.at(-1)).toBe(100);
    expect(h.stats()).toMatchObject({ painted: 31, late: 0, dropped: 0 });
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

  it('paints a frame that arrives after its time at the next opportunity and counts it late', () => {
    const h = harness(50);
    h.arrive(0, 0, 0);
    h.paintAt(50);
    h.arrive(1, 33, 120); // due 83: 37 ms late on arrival
    expect(h.stats().late).toBe(1);
    h.paintAt(121);
    expect(h.painted()).toEqual([0, 1]);
    expect(h.paints[1]).toMatchObject({ late: true, paintMs: 121 });
    expect(h.paints[1]!.dueMs).toBeLessThanOrEqual(121);
  });

  it('closes and counts a frame superseded by a newer due one before it was painted', () => {
    const h = harness(100);
    const f0 = h.arrive(0, 0, 0);
    h.arrive(1, 33, 33);
    h.arrive(2, 66, 66);
    // No paint opportunity until both 0 (due 100) and 1 (due 133) are due.
    h.paintAt(140);
    expect(h.painted()).toEqual([1]);
    expect(f0.closes).toBe(1);
    expect(h.draws.map((d) => d.id)).toEqual([1]);
    expect(h.stats().dropped).toBe(1);
    expect(h.presenter.queued).toBe(1);
    h.paintAt(166);
    expect(h.painted()).toEqual([1, 2]);
    expect(h.frames.map((f) => f.closes)).toEqual([1, 1, 1]);
  });

  it('moves the mapping, and the frames still waiting, to a frame that arrives far earlier than predicted', () => {
    const h = harness(100);
    h.arrive(0, 0, 80); // a large keyframe, 80 ms in transit: the mapping starts there
    h.arrive(1, 33, 90); // 23 ms earlier than predicted: within the 50 ms allowed
    h.arrive(2, 66, 100); // 46 ms earlier
    expect(h.stats().reanchors).toBe(0);
    h.arrive(3, 99, 110); // 69 ms earlier: the mapping moves here
    expect(h.stats().reanchors).toBe(1);
    // Without the move frame 3 would wait until 279; now every frame is 69 ms sooner, in order.
    h.paintAt(110.9);
    expect(h.painted()).toEqual([]);
    h.paintAt(111);
    h.paintAt(144);
    h.paintAt(177);
    h.paintAt(209);
    expect(h.painted()).toEqual([0, 1, 2]);
    h.paintAt(210);
    expect(h.painted()).toEqual([0, 1, 2, 3]);
    expect(h.paints.map((p) => p.paintMs)).toEqual([111, 144, 177, 210]);
    expect(h.stats()).toMatchObject({ dropped: 0, late: 0 });
  });

  it('moves the mapping after 10 consecutive late frames, so lateness does not persist', () => {
    const h = harness(50);
    h.arrive(0, 0, 0);
    h.paintAt(50);
    // From frame 1 on, every frame is 60 ms later than the mapping predicts: 10 ms past its time.
    for (let i = 1; i <= 10; i++) {
      h.arrive(i, 33 * i, 33 * i + 60);
      h.paintAt(33 * i + 60);
    }
    expect(h.stats()).toMatchObject({ late: 10, reanchors: 1 });
    expect(h.painted()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Frame 10 moved the mapping: it and the frames after it are on time again, 50 ms after arrival.
    h.paintAt(33 * 10 + 60 + 50);
    expect(h.painted().at(-1)).toBe(10);
    for (let i = 11; i <= 15; i++) {
      h.arrive(i, 33 * i, 33 * i + 60);
      h.paintAt(33 * i + 60 + 50);
    }
    expect(h.painted().slice(-5)).toEqual([11, 12, 13, 14, 15]);
    expect(h.paints.slice(-5).every((p) => !p.late && p.paintMs - p.dueMs === 0)).toBe(true);
    expect(h.stats()).toMatchObject({ late: 10, reanchors: 1, dropped: 0 });
  });

  it('a few late frames are counted but do not move the mapping', () => {
    const h = harness(50);
    h.arrive(0, 0, 0);
    h.arrive(1, 33, 33 + 70); // late
    h.arrive(2, 66, 66 + 10); // on time again
    expect(h.stats()).toMatchObject({ late: 1, reanchors: 0 });
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
    expect(h.stats()).toMatchObject({ painted: 3, dropped: 1, late: 0, reanchors: 0 });
  });

  it('bounds the frames waiting when paints stop, closing the oldest', () => {
    const h = harness(0, { maxQueued: 4 });
    for (let i = 0; i < 10; i++) h.arrive(i, i * 33, i * 33);
    expect(h.presenter.queued).toBe(4);
    expect(h.frames.slice(0, 6).every((f) => f.closes === 1)).toBe(true);
    expect(h.stats().dropped).toBe(6);
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
    h.arrive(0, 0, 0);
    let drained = false;
    const done = h.presenter.drain().then(() => {
      drained = true;
    });
    h.paintAt(50);
    await Promise.resolve();
    expect(drained).toBe(false);
    h.paintAt(100);
    await done;
    expect(drained).toBe(true);
  });

  it('rejects a negative delay', () => {
    expect(() => harness(-1)).toThrow(TypeError);
  });
});
