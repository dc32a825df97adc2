/**
 * The demo robot's camera without svcd: the bundled clip, the RFC 6184 payloads, the RTP header,
 * the loop's sequence numbers and timestamps across the end of the clip, and what `@svc/media`'s
 * own receiving pipeline makes of the stream (the same code svcd ingests it with).
 */
import dgram from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { type AccessUnit, parseRtpPacket, RtpPipeline, splitAnnexB } from '@svc/media';
import { type Clock, silentLogger } from '@svc/runtime';
import { FakeClock } from '@svc/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { isDemoError } from '../src/demo/errors.js';
import { h264Payloads, nalType, parseH264Clip, rtpPacket } from '../src/demo/h264-rtp.js';
import { DEMO_CLIP, DEMO_CLIP_FPS } from '../src/demo/robot.js';
import { DEFAULT_MAX_PAYLOAD, RtpLooper, startRtpLoop } from '../src/demo/rtp-looper.js';

const clip = parseH264Clip(new Uint8Array(await readFile(DEMO_CLIP)));

/** A `random` that returns `values` in turn: the looper draws SSRC, first sequence number, first timestamp. */
function draws(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

/** Sequence number and timestamp of a packet. */
function header(packet: Uint8Array) {
  const parsed = parseRtpPacket(packet);
  return { seq: parsed.sequenceNumber, ts: parsed.timestamp, marker: parsed.marker, ssrc: parsed.ssrc };
}

describe('the bundled clip', () => {
  it('is 3 s of 640x360 constrained-baseline H.264 at 30 fps, a keyframe every second, small', async () => {
    const bytes = await readFile(DEMO_CLIP);
    expect(bytes.length).toBeLessThan(300 * 1024);
    expect(clip.codec).toBe('avc1.42c01e'); // profile 66 (baseline), constraint flags 0xc0, level 3.0
    expect(clip.frames).toHaveLength(3 * DEMO_CLIP_FPS);
    const keyframes = clip.frames.flatMap((frame, i) => (frame.keyframe ? [i] : []));
    expect(keyframes).toEqual([0, 30, 60]);
    // Each keyframe carries its SPS and PPS, so a pilot can join at any of them.
    for (const i of keyframes)
      expect(clip.frames[i]!.nals.map(nalType)).toEqual(expect.arrayContaining([7, 8, 5]));
    // One slice per picture (sliced-threads=0), no B-frames in baseline.
    for (const frame of clip.frames)
      expect(frame.nals.filter((n) => [1, 5].includes(nalType(n)))).toHaveLength(1);
  });

  it('refuses a stream that does not start with parameter sets and an IDR', () => {
    const annexB = (nals: readonly Uint8Array[]) =>
      new Uint8Array(Buffer.concat(nals.flatMap((n) => [Buffer.of(0, 0, 0, 1), Buffer.from(n)])));
    const [sps, pps] = clip.frames[0]!.nals.filter((n) => nalType(n) === 7 || nalType(n) === 8);
    const bad = [
      new Uint8Array(0), // nothing
      annexB(clip.frames[1]!.nals), // a P-frame first
      annexB([sps!, pps!, ...clip.frames[1]!.nals]), // parameter sets, but no IDR
    ];
    for (const bytes of bad)
      expect(
        isDemoError(
          catchError(() => parseH264Clip(bytes)),
          'bad-clip',
        ),
      ).toBe(true);
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('RFC 6184 payloads', () => {
  it('sends a NAL unit that fits as it is (single NAL unit packet)', () => {
    const nal = Uint8Array.of(0x67, 1, 2, 3);
    expect(h264Payloads(nal, 4)).toEqual([nal]);
  });

  it('cuts a bigger one into FU-A fragments (golden bytes)', () => {
    // An IDR slice (F=0, NRI=3, type 5) with 5 bytes after its header, at most 4 bytes a payload.
    const nal = Uint8Array.of(0x65, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5);
    expect(h264Payloads(nal, 4)).toEqual([
      // FU indicator: F=0, NRI=3 (0x60), type 28 -> 0x7c; FU header: S=1, E=0, type 5 -> 0x85
      Uint8Array.of(0x7c, 0x85, 0xa1, 0xa2),
      // middle: S=0, E=0 -> 0x05
      Uint8Array.of(0x7c, 0x05, 0xa3, 0xa4),
      // last: S=0, E=1 -> 0x45
      Uint8Array.of(0x7c, 0x45, 0xa5),
    ]);
  });

  it('splits the biggest NAL unit of the clip so that every payload fits and the pieces make the NAL unit again', () => {
    const biggest = clip.frames.flatMap((f) => f.nals).reduce((a, b) => (b.length > a.length ? b : a));
    expect(biggest.length).toBeGreaterThan(2 * DEFAULT_MAX_PAYLOAD);
    const payloads = h264Payloads(biggest, DEFAULT_MAX_PAYLOAD);
    expect(payloads.length).toBe(Math.ceil((biggest.length - 1) / (DEFAULT_MAX_PAYLOAD - 2)));
    for (const payload of payloads) expect(payload.length).toBeLessThanOrEqual(DEFAULT_MAX_PAYLOAD);
    const rebuilt = Buffer.concat([Buffer.of(biggest[0]!), ...payloads.map((p) => p.subarray(2))]);
    expect(rebuilt.equals(Buffer.from(biggest))).toBe(true);
  });

  it('refuses an empty NAL unit or a payload limit too small for a fragment', () => {
    expect(() => h264Payloads(new Uint8Array(0), 100)).toThrow(TypeError);
    expect(() => h264Payloads(Uint8Array.of(0x65, 1, 2), 2)).toThrow(TypeError);
  });
});

describe('the RTP fixed header', () => {
  it('is written as RFC 3550 lays it out (golden bytes)', () => {
    const packet = rtpPacket(
      { marker: true, payloadType: 96, sequenceNumber: 0xbeef, timestamp: 0x01020304, ssrc: 0xcafebabe },
      Uint8Array.of(0x65, 0x88),
    );
    expect([...packet]).toEqual([
      0x80, // V=2, P=0, X=0, CC=0
      0xe0, // M=1, PT=96
      0xbe,
      0xef, // sequence number
      0x01,
      0x02,
      0x03,
      0x04, // timestamp
      0xca,
      0xfe,
      0xba,
      0xbe, // SSRC
      0x65,
      0x88, // payload
    ]);
    expect(() =>
      rtpPacket({ marker: false, payloadType: 128, sequenceNumber: 0, timestamp: 0, ssrc: 0 }, packet),
    ).toThrow(TypeError);
    expect(() =>
      rtpPacket({ marker: false, payloadType: 96, sequenceNumber: 65536, timestamp: 0, ssrc: 0 }, packet),
    ).toThrow(TypeError);
  });
});

describe('RtpLooper', () => {
  it('continues sequence numbers and 90 kHz timestamps across the end of the clip and their own wrap', () => {
    // Sequence numbers start 10 before 2^16 and timestamps 45 frames before 2^32: both wrap in the first pass.
    const looper = new RtpLooper({
      clip,
      fps: DEMO_CLIP_FPS,
      random: draws(0.5, (0x1_0000 - 10) / 0x1_0000, (0x1_0000_0000 - 45 * 3000) / 0x1_0000_0000),
    });
    const frames = Array.from({ length: 2 * clip.frames.length + 5 }, () => looper.nextFrame());
    const packets = frames.flatMap((f) => f.packets.map(header));
    expect(packets[0]!.seq).toBe(0x1_0000 - 10);
    for (let i = 1; i < packets.length; i++) {
      expect(packets[i]!.seq, `packet ${i}`).toBe((packets[i - 1]!.seq + 1) % 0x1_0000);
      expect(packets[i]!.ssrc).toBe(looper.ssrc);
    }
    for (let i = 1; i < frames.length; i++) {
      expect(frames[i]!.timestamp, `frame ${i}`).toBe((frames[i - 1]!.timestamp + 3000) % 0x1_0000_0000);
    }
    // The end of the clip: frame 89 of pass 0, then frame 0 of pass 1 (an IDR), 3000 ticks later.
    const boundary = frames[clip.frames.length]!;
    expect(boundary).toMatchObject({ pass: 1, frameInClip: 0, keyframe: true });
    expect(frames[clip.frames.length - 1]).toMatchObject({ pass: 0, frameInClip: clip.frames.length - 1 });
    // One marker per frame, on its last packet.
    for (const frame of frames) {
      expect(frame.packets.map((p) => header(p).marker)).toEqual(
        frame.packets.map((_, i) => i === frame.packets.length - 1),
      );
    }
  });

  it("is one stream that @svc/media's ingest turns back into the clip's access units, pass after pass", () => {
    const looper = new RtpLooper({ clip, fps: DEMO_CLIP_FPS });
    const received: AccessUnit[] = [];
    const clock = new FakeClock();
    const pipeline = new RtpPipeline({
      codec: clip.codec,
      family: 'h264',
      clock,
      logger: silentLogger,
      onAccessUnit: (au) => received.push({ ...au, data: au.data.slice() }),
    });
    const sent = 2 * clip.frames.length + 31;
    for (let i = 0; i < sent; i++) {
      for (const packet of looper.nextFrame().packets) pipeline.handleRtp(packet, clock.now());
      clock.advance(1000 / DEMO_CLIP_FPS);
    }
    expect(pipeline.stats.depacketizer().droppedAccessUnits).toBe(0);
    expect(received.length).toBeGreaterThanOrEqual(sent - 1); // the last may wait for the next frame's first packet
    received.forEach((au, i) => {
      const frame = clip.frames[i % clip.frames.length]!;
      expect(au.keyframe, `access unit ${i}`).toBe(frame.keyframe);
      expect(splitAnnexB(au.data).map((n) => Buffer.from(n).toString('hex'))).toEqual(
        // The ingest may put cached parameter sets in front of a keyframe that lacks them; this clip has its own.
        frame.nals.map((n) => Buffer.from(n).toString('hex')),
      );
      // Fresh timestamps: capture time keeps rising by one frame across every pass.
      if (i > 0)
        expect(
          Math.abs(au.captureTimeUs - received[i - 1]!.captureTimeUs - 1e6 / DEMO_CLIP_FPS),
        ).toBeLessThanOrEqual(1);
    });
  });
});

describe('startRtpLoop', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('sends each frame at its time on real UDP, and after a stall sends on from now instead of bursting', async () => {
    const receiver = dgram.createSocket('udp4');
    const packets: Buffer[] = [];
    receiver.on('message', (m) => packets.push(m));
    await new Promise<void>((resolve) => receiver.bind(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    // Fake time, and a stall: `lag` ms during which the process ran nothing (timers fire that late).
    const fake = new FakeClock();
    let lag = 0;
    const clock: Clock = {
      now: () => fake.now() + lag,
      wallNow: () => fake.wallNow() + lag,
      setTimeout: (callback, ms) => fake.setTimeout(callback, ms),
      clearTimeout: (handle) => fake.clearTimeout(handle),
      setInterval: (callback, ms) => fake.setInterval(callback, ms),
      clearInterval: (handle) => fake.clearInterval(handle),
    };
    const loop = await startRtpLoop({
      clip,
      fps: DEMO_CLIP_FPS,
      target: { host: '127.0.0.1', port: receiver.address().port },
      clock,
      logger: silentLogger,
    });
    cleanups.push(() => loop.stop());

    fake.advance(0);
    expect(loop.stats.frames).toBe(1);
    fake.advance(1010);
    expect(loop.stats.frames).toBe(31); // one at 0 ms, then one every 33.3 ms
    await expect.poll(() => packets.length).toBe(loop.stats.packets);

    lag = 2000;
    const beforeStall = loop.stats.frames;
    fake.advance(1000);
    // Not the 60 frames the stall missed in a burst: the late one, one more at once, then the rate.
    expect(loop.stats.resyncs).toBe(1);
    expect(loop.stats.frames - beforeStall).toBeLessThanOrEqual(32);
    expect(loop.stats.frames - beforeStall).toBeGreaterThanOrEqual(30);
    await expect.poll(() => packets.length).toBe(loop.stats.packets);
    await loop.stop();
    expect(fake.pendingTimers).toBe(0);
  });
});
