import { fileURLToPath } from 'node:url';
import { ChromiumSession } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlayArgs, PlayReport } from './fixtures/decode-page.js';
import { makeTestMedia, type TestMedia } from './support/media.js';

const page = fileURLToPath(new URL('./fixtures/decode-page.ts', import.meta.url));

const H264 = 'avc1.42E01E';
const PIXELS = 320 * 240;
/** The page marks every frame with index % 7 === 3 as repaired: 9 of 60. */
const REPAIRED_OF_60 = 9;

describe('video channel player in headless Chromium', () => {
  let chromium: ChromiumSession;
  let media: TestMedia;
  let support: Record<string, boolean>;

  const play = (args: PlayArgs): Promise<PlayReport> =>
    chromium.run<PlayReport>({ entry: page, exportName: 'play', args: [args], timeoutMs: 30_000 });

  beforeAll(async () => {
    [chromium, media] = await Promise.all([ChromiumSession.open(), makeTestMedia(60)]);
    support = await chromium.run<Record<string, boolean>>({
      entry: page,
      exportName: 'decoderSupport',
      args: [[H264, 'hev1.1.6.L93.B0', 'hvc1.1.6.L93.B0']],
    });
  });
  afterAll(async () => {
    await chromium?.close();
  });

  it('has test streams of 60 access units with keyframes at 0 and 30', () => {
    for (const frames of [media.h264, media.h265]) {
      expect(frames).toHaveLength(60);
      expect(frames.flatMap((f, i) => (f.keyframe ? [i] : []))).toEqual([0, 30]);
    }
    expect(media.mjpeg).toHaveLength(60);
    // The H.264 decoder is there, as the specification says it is everywhere.
    expect(support[H264]).toBe(true);
  });

  it('decodes and paints every H.264 frame, with statistics', async () => {
    const r = await play({ codec: H264, frames: media.h264 });
    expect(r.stats.framesReceived).toBe(60);
    expect(r.stats.framesRepaired).toBe(REPAIRED_OF_60);
    expect(r.stats.decoded).toBe(60);
    expect(r.stats.decodeErrors).toBe(0);
    expect(r.stats.waitingForKeyframe).toBe(0);
    expect(r.keyframeRequests).toEqual([]);
    // Every decoded frame was either painted or superseded by a newer one: none leaked.
    expect(r.stats.painted).toBeGreaterThan(0);
    expect(r.stats.painted + r.stats.dropped).toBe(60);
    // The canvas took the picture's size and shows the test pattern, not black.
    expect([r.canvasWidth, r.canvasHeight]).toEqual([320, 240]);
    expect(r.nonBlackPixels).toBeGreaterThan(PIXELS * 0.9);
    // Latency is measured against the daemon clock through the offset: the page stamps each
    // frame as sent 5 ms before it arrives, so anything below 5 ms (or near the 12 s offset)
    // would mean the offset was ignored or applied the wrong way round.
    expect(r.stats.latency.samples).toBe(r.stats.painted);
    expect(r.stats.latency.p50Ms).toBeGreaterThanOrEqual(5);
    expect(r.stats.latency.p95Ms).toBeLessThan(5000);
    expect(r.stats.decodeTime.meanMs).not.toBeNull();
    expect(r.stats.bitrateBps).toBeGreaterThan(0);
    expect(r.stats.bytesReceived).toBeGreaterThan(0);
    expect(r.states.slice(0, 3)).toEqual(['starting', 'waiting:join', 'decoding']);
    expect(r.message).toBeNull();
    expect(r.cleanedUp).toBe(true);
  });

  it('reports each painted picture’s age through the clock offset, and turns stale with a growing age when the camera stops', async () => {
    // Each frame was captured 30 ms before it became whole, on a robot clock 12.3 s behind the page.
    const r = await play({ codec: H264, frames: media.h264, captureAgeMs: 30, watchStale: true });
    const ages = r.pictureAges;
    expect(ages).toHaveLength(r.stats.painted);
    // Never younger than the 30 ms it already had; an offset ignored or applied the wrong way round
    // would put it near ±12 s.
    expect(ages.every((a) => a !== null && a >= 30 && a < 5000)).toBe(true);
    expect(r.stats.pictureAge.samples).toBe(ages.length);
    expect(r.stats.pictureAge.p50Ms).toBeGreaterThanOrEqual(30);
    // The adaptive hold is reported, within its 50 ms ceiling.
    expect(r.stats.holdMs).toBeGreaterThan(0);
    expect(r.stats.holdMs).toBeLessThanOrEqual(50);

    const w = r.staleWatch!;
    expect(w.beforeFirst).toBe('no-picture');
    // The frames stopped: the picture turned stale once, more than 300 ms after its last paint.
    expect(w.changes[0]![0]).toBe(true);
    expect(w.changes[0]![1]).toBeGreaterThan(330);
    expect(w.atStale!.stale).toBe(true);
    // Its age keeps growing while nothing new comes.
    expect(w.ageLaterMs!).toBeGreaterThan(w.atStale!.ageMs + 150);
    // A new keyframe: live again, with a fresh age.
    expect(w.changes).toHaveLength(2);
    expect(w.changes[1]![0]).toBe(false);
    expect(w.changes[1]![1]).toBeGreaterThanOrEqual(30);
    expect(w.changes[1]![1]).toBeLessThan(w.changes[0]![1]);
    expect(w.after).toBe('live');
    expect(r.cleanedUp).toBe(true);
  });

  it('joining mid-stream skips deltas until the next keyframe and asks for one', async () => {
    const r = await play({ codec: H264, frames: media.h264, startAt: 5 });
    expect(r.stats.framesReceived).toBe(55);
    expect(r.stats.waitingForKeyframe).toBe(25);
    expect(r.stats.decoded).toBe(30);
    expect(r.stats.decodeErrors).toBe(0);
    expect(r.keyframeRequests).toEqual(['join']);
    expect(r.nonBlackPixels).toBeGreaterThan(PIXELS * 0.9);
  });

  it('recovers from a corrupted access unit at the next keyframe', async () => {
    const r = await play({ codec: H264, frames: media.h264, corrupt: [10] });
    expect(r.stats.decodeErrors).toBe(1);
    expect(r.keyframeRequests).toEqual(['decoder-error']);
    // Frames 0-9 before the damage, 30-59 after the keyframe.
    expect(r.stats.decoded).toBe(40);
    expect(r.stats.waitingForKeyframe).toBeGreaterThanOrEqual(18);
    expect(r.states).toContain('waiting:decoder-error');
    expect(r.states.lastIndexOf('decoding')).toBeGreaterThan(r.states.indexOf('waiting:decoder-error'));
    expect(r.stats.painted + r.stats.dropped).toBe(40);
    expect(r.nonBlackPixels).toBeGreaterThan(PIXELS * 0.9);
  });

  it("freezes after a lost frame with lossPolicy 'freeze' until the keyframe", async () => {
    const r = await play({ codec: H264, frames: media.h264, lose: [10], lossPolicy: 'freeze' });
    expect(r.stats.framesLost).toBe(1);
    expect(r.keyframeRequests).toEqual(['frame-lost']);
    expect(r.stats.waitingForKeyframe).toBe(19);
    expect(r.stats.decoded).toBe(40);
    expect(r.stats.decodeErrors).toBe(0);
  });

  it("decodes on after a lost frame with lossPolicy 'continue', still asking for a keyframe", async () => {
    const r = await play({ codec: H264, frames: media.h264, lose: [10], lossPolicy: 'continue' });
    expect(r.stats.framesLost).toBe(1);
    expect(r.keyframeRequests).toEqual(['frame-lost']);
    expect(r.stats.waitingForKeyframe).toBe(0);
    expect(r.stats.decoded).toBe(59);
  });

  it('treats a jump in GOP position like a lost frame', async () => {
    const r = await play({ codec: H264, frames: media.h264, skip: [10], lossPolicy: 'freeze' });
    expect(r.stats.framesLost).toBe(0);
    expect(r.keyframeRequests).toEqual(['gop-gap']);
    expect(r.stats.waitingForKeyframe).toBe(19);
    expect(r.stats.decoded).toBe(40);
  });

  it('drops deltas instead of queueing when frames come faster than the decoder takes them', async () => {
    // A decoder that has not caught up since its start may hold a second of frames: the flood
    // comes once it runs.
    const r = await play({ codec: H264, frames: media.h264, floodFrom: 5 });
    expect(r.stats.framesReceived).toBe(60);
    expect(r.stats.decoded).toBeLessThan(60);
    expect(r.stats.dropped).toBeGreaterThan(0);
    expect(r.keyframeRequests.length).toBeGreaterThan(0);
    expect(new Set(r.keyframeRequests)).toEqual(new Set(['backpressure']));
    // Both keyframes got through, so decoding resumed after each burst of drops.
    expect(r.states.filter((s) => s === 'decoding')).toHaveLength(2);
    // Every frame is accounted for: painted, or dropped before or after decoding.
    expect(r.stats.painted + r.stats.dropped).toBe(60);
    expect(r.nonBlackPixels).toBeGreaterThan(PIXELS * 0.9);
  });

  it('decodes and paints Motion JPEG through image decoding', async () => {
    const r = await play({ codec: 'mjpeg', frames: media.mjpeg });
    expect(r.stats.decoded).toBe(60);
    expect(r.stats.decodeErrors).toBe(0);
    expect(r.keyframeRequests).toEqual([]);
    expect(r.stats.painted).toBeGreaterThan(0);
    expect(r.stats.painted + r.stats.dropped).toBe(60);
    expect([r.canvasWidth, r.canvasHeight]).toEqual([320, 240]);
    expect(r.nonBlackPixels).toBeGreaterThan(PIXELS * 0.9);
    expect(r.stats.latency.p50Ms).toBeGreaterThanOrEqual(5);
  });

  it('shows why H.265 cannot be decoded over the video area (Chromium without a GPU has no HEVC decoder)', async () => {
    for (const codec of ['hev1.1.6.L93.B0', 'hvc1.1.6.L93.B0']) {
      // Without a decoder there is no point in pacing the frames like a camera.
      const r = await play({ codec, frames: media.h265, frameIntervalMs: support[codec] === true ? 33 : 0 });
      if (support[codec] === true) {
        // A browser with a hardware HEVC decoder: then it must simply work.
        expect(r.stats.decoded).toBe(60);
        expect(r.message).toBeNull();
        continue;
      }
      expect(r.state).toBe('unsupported');
      expect(r.message).toBe(
        `Cannot decode H.265 (${codec}): this browser has no decoder for it — Chromium decodes HEVC only with a hardware decoder.`,
      );
      expect(r.messageRole).toBe('status');
      expect(r.messageVisible).toBe(true);
      // The message covers the whole video area, in white on a dark panel.
      const m = r.messageBox!;
      expect(m.width).toBeGreaterThan(0);
      expect(m.height).toBeGreaterThan(0);
      expect(m.x).toBeLessThanOrEqual(r.canvasBox.x);
      expect(m.y).toBeLessThanOrEqual(r.canvasBox.y);
      expect(m.x + m.width).toBeGreaterThanOrEqual(r.canvasBox.x + r.canvasBox.width);
      expect(m.y + m.height).toBeGreaterThanOrEqual(r.canvasBox.y + r.canvasBox.height);
      expect(r.messageColours).toEqual({ color: 'rgb(255, 255, 255)', background: 'rgba(24, 26, 32, 0.92)' });
      // Frames keep being counted, nothing is decoded, and nobody is asked for keyframes.
      expect(r.stats.framesReceived).toBe(60);
      expect(r.stats.decoded).toBe(0);
      expect(r.keyframeRequests).toEqual([]);
      expect(r.cleanedUp).toBe(true);
    }
  });

  it('names a codec string it does not know on screen', async () => {
    const r = await play({ codec: 'vp8', frames: [] });
    expect(r.state).toBe('unsupported');
    expect(r.message).toBe(
      'Cannot decode “vp8”: it is not a codec the pilot decodes (expected avc1.*, hev1.*, hvc1.* or mjpeg).',
    );
    expect(r.messageVisible).toBe(true);
  });
});
