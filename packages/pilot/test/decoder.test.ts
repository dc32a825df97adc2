import type { AssembledFrame } from '@svc/wire';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type DecodedFrameMeta,
  type KeyframeRequestReason,
  type LossPolicy,
  VideoChannelDecoder,
  type VideoChannelDecoderState,
} from '../src/index.js';

/** Stand-ins for the WebCodecs classes, recording what the decoder does with them. */
class FakeChunk {
  readonly type: 'key' | 'delta';
  readonly timestamp: number;
  readonly data: Uint8Array;
  constructor(init: { type: 'key' | 'delta'; timestamp: number; data: Uint8Array }) {
    this.type = init.type;
    this.timestamp = init.timestamp;
    this.data = init.data;
  }
}

class FakeDecoder {
  static instances: FakeDecoder[] = [];
  static support: boolean | Error = true;
  static configs: unknown[] = [];
  static async isConfigSupported(config: unknown): Promise<{ supported: boolean }> {
    FakeDecoder.configs.push(config);
    if (FakeDecoder.support instanceof Error) throw FakeDecoder.support;
    return { supported: FakeDecoder.support };
  }
  readonly chunks: FakeChunk[] = [];
  state: 'unconfigured' | 'configured' | 'closed' = 'unconfigured';
  decodeQueueSize = 0;
  throwOnDecode = false;
  readonly #init: { output: (frame: unknown) => void; error: (err: unknown) => void };
  constructor(init: { output: (frame: unknown) => void; error: (err: unknown) => void }) {
    this.#init = init;
    FakeDecoder.instances.push(this);
  }
  configure(config: unknown): void {
    FakeDecoder.configs.push(config);
    this.state = 'configured';
  }
  decode(chunk: FakeChunk): void {
    if (this.state !== 'configured' || this.throwOnDecode) throw new Error('decode failed');
    this.chunks.push(chunk);
  }
  close(): void {
    this.state = 'closed';
  }
  /** Emits the picture of the chunk with this timestamp; returns the fake frame. */
  output(timestamp: number): { timestamp: number; closed: boolean; close(): void } {
    const frame = {
      timestamp,
      closed: false,
      close() {
        this.closed = true;
      },
    };
    this.#init.output(frame);
    return frame;
  }
  fail(): void {
    this.state = 'closed';
    this.#init.error(new Error('EncodingError: decoding error'));
  }
}

const WRAP = 0x1_0000_0000;

/** A GOP-structured stream: keyframe every `gop` frames, capture 33 ms apart, starting near the wrap. */
function frame(i: number, gop = 30, extra: Partial<AssembledFrame> = {}): AssembledFrame {
  return {
    channel: 1,
    frameId: i & 0xffff,
    keyframe: i % gop === 0,
    captureTimestampUs: (WRAP - 5 * 33_000 + i * 33_000) % WRAP,
    gopPosition: i % gop,
    captureClockUs: 0,
    data: new Uint8Array([0, 0, 0, 1, i & 0xff]),
    chunksRecovered: 0,
    senderTimestampUs: (i * 33_000 + 7) % WRAP,
    lastSenderTimestampUs: (i * 33_000 + 507) % WRAP,
    firstArrivalMs: 1000 + i * 33 - 2,
    completedMs: 1000 + i * 33,
    ...extra,
  };
}

function setup(lossPolicy: LossPolicy = 'continue', codec = 'avc1.42E01E') {
  let now = 5000;
  const requests: KeyframeRequestReason[] = [];
  const states: VideoChannelDecoderState[] = [];
  const frames: { frame: unknown; meta: DecodedFrameMeta }[] = [];
  const decoder = new VideoChannelDecoder({
    codec,
    lossPolicy,
    now: () => now,
    onFrame: (f, meta) => frames.push({ frame: f, meta }),
    onRequestKeyframe: (reason) => requests.push(reason),
    onStateChange: (state) => states.push(state),
  });
  return {
    decoder,
    requests,
    states,
    frames,
    setNow: (ms: number) => {
      now = ms;
    },
    current: () => FakeDecoder.instances.at(-1)!,
    decodedIds: () => FakeDecoder.instances.flatMap((d) => d.chunks.map((c) => c.data[4])),
  };
}

describe('VideoChannelDecoder (WebCodecs stubbed)', () => {
  beforeEach(() => {
    FakeDecoder.instances = [];
    FakeDecoder.configs = [];
    FakeDecoder.support = true;
    vi.stubGlobal('VideoDecoder', FakeDecoder);
    vi.stubGlobal('EncodedVideoChunk', FakeChunk);
  });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('checks support with the codec string unchanged, no description, optimised for latency', async () => {
    const t = setup('continue', 'hvc1.1.6.L93.B0');
    expect(await t.decoder.start()).toEqual({ kind: 'waiting-keyframe', reason: 'join' });
    expect(FakeDecoder.configs).toEqual([{ codec: 'hvc1.1.6.L93.B0', optimizeForLatency: true }]);
    expect(t.states.map((s) => s.kind)).toEqual(['starting', 'waiting-keyframe']);
  });

  it('reports an H.264 profile the browser cannot decode as unsupported, with a reason', async () => {
    FakeDecoder.support = false;
    const t = setup();
    expect(await t.decoder.start()).toEqual({
      kind: 'unsupported',
      codec: 'avc1.42E01E',
      reason: 'this browser has no decoder for H.264 with this profile and level',
      message: 'Cannot decode H.264 (avc1.42E01E): this browser has no decoder for this profile and level.',
    });
    t.decoder.handleFrame(frame(0));
    expect(FakeDecoder.instances).toHaveLength(0);
    expect(t.decoder.stats.snapshot()).toMatchObject({ framesReceived: 1, decoded: 0 });
  });

  it('reports a codec string the browser rejects as unsupported, quoting the browser', async () => {
    FakeDecoder.support = new TypeError('Invalid codec string');
    const t = setup('continue', 'avc1.zz');
    const state = await t.decoder.start();
    expect(state).toMatchObject({
      kind: 'unsupported',
      reason: 'the browser rejected the codec string: Invalid codec string',
    });
  });

  it('reports a browser without WebCodecs as unsupported', async () => {
    vi.stubGlobal('VideoDecoder', undefined);
    const t = setup();
    expect(await t.decoder.start()).toMatchObject({ kind: 'unsupported' });
    expect((t.decoder.state as { message: string }).message).toMatch(/no WebCodecs video decoding/);
  });

  it('feeds key and delta chunks with monotonic capture timestamps across the 32-bit wrap', async () => {
    const t = setup();
    await t.decoder.start();
    for (let i = 0; i < 12; i++) t.decoder.handleFrame(frame(i, 10));
    const chunks = t.current().chunks;
    expect(chunks.map((c) => c.type)).toEqual(['key', ...Array<string>(9).fill('delta'), 'key', 'delta']);
    const stamps = chunks.map((c) => c.timestamp);
    // Frame 5 crosses the wrap; the timestamps keep rising by 33 ms.
    expect(stamps.slice(1).map((s, i) => s - stamps[i]!)).toEqual(Array<number>(11).fill(33_000));
    expect(chunks[0]!.data).toEqual(frame(0).data);
  });

  it('hands each decoded frame over with its meta and records the decode time', async () => {
    const t = setup();
    await t.decoder.start();
    t.setNow(6000);
    t.decoder.handleFrame(frame(0));
    t.setNow(6004.5);
    const out = t.current().output(t.current().chunks[0]!.timestamp);
    expect(t.frames).toHaveLength(1);
    expect(t.frames[0]!.frame).toBe(out);
    expect(t.frames[0]!.meta).toEqual({
      frameId: 0,
      keyframe: true,
      captureTimestampUs: WRAP - 5 * 33_000,
      senderTimestampUs: 7,
      captureClockUs: 0,
      receivedMs: 1000,
      submittedMs: 6000,
      decodedMs: 6004.5,
      replayed: false,
    });
    expect(t.decoder.stats.snapshot().decodeTime).toEqual({ lastMs: 4.5, meanMs: 4.5 });
  });

  it('waits for the first keyframe, asking for one once', async () => {
    const t = setup();
    await t.decoder.start();
    for (let i = 3; i < 12; i++) t.decoder.handleFrame(frame(i, 10));
    expect(t.requests).toEqual(['join']);
    expect(t.decodedIds()).toEqual([10, 11]);
    expect(t.decoder.stats.snapshot().waitingForKeyframe).toBe(7);
  });

  it('after a decoder error, asks for a keyframe and resumes on a fresh decoder there', async () => {
    const t = setup();
    await t.decoder.start();
    for (let i = 0; i < 3; i++) t.decoder.handleFrame(frame(i, 10));
    const first = t.current();
    first.fail();
    expect(t.requests).toEqual(['decoder-error']);
    expect(t.decoder.state).toEqual({ kind: 'waiting-keyframe', reason: 'decoder-error' });
    for (let i = 3; i < 12; i++) t.decoder.handleFrame(frame(i, 10));
    expect(FakeDecoder.instances).toHaveLength(2);
    expect(first.state).toBe('closed');
    expect(t.current().chunks.map((c) => c.data[4])).toEqual([10, 11]);
    // A late output of the old decoder is released, not shown.
    const stale = first.output(first.chunks[1]!.timestamp);
    expect(stale.closed).toBe(true);
    expect(t.frames).toHaveLength(0);
    expect(t.decoder.stats.snapshot()).toMatchObject({
      decodeErrors: 1,
      waitingForKeyframe: 7,
      keyframeRequests: 1,
    });
  });

  it('treats decode() throwing like the error callback', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0));
    t.current().throwOnDecode = true;
    t.decoder.handleFrame(frame(1));
    expect(t.requests).toEqual(['decoder-error']);
    expect(t.decoder.state).toEqual({ kind: 'waiting-keyframe', reason: 'decoder-error' });
  });

  it('gives up with an on-screen reason when the decoder keeps failing without a picture', async () => {
    const t = setup();
    await t.decoder.start();
    for (let k = 0; k < 3; k++) {
      t.decoder.handleFrame(frame(0));
      t.current().fail();
    }
    expect(t.decoder.state).toMatchObject({
      kind: 'unsupported',
      message:
        'Cannot decode H.264 (avc1.42E01E): the H.264 decoder keeps failing without producing a picture (EncodingError: decoding error).',
    });
    expect(t.requests).toEqual(['decoder-error', 'decoder-error']);
  });

  it('a picture between failures keeps it trying', async () => {
    const t = setup();
    await t.decoder.start();
    for (let k = 0; k < 5; k++) {
      t.decoder.handleFrame(frame(0));
      t.current().output(t.current().chunks[0]!.timestamp);
      t.current().fail();
    }
    expect(t.decoder.state.kind).toBe('waiting-keyframe');
  });

  it("with 'continue', a GOP gap asks for a keyframe and decoding goes on", async () => {
    const t = setup('continue');
    await t.decoder.start();
    for (const i of [0, 1, 2, 4, 5]) t.decoder.handleFrame(frame(i));
    expect(t.requests).toEqual(['gop-gap']);
    expect(t.decodedIds()).toEqual([0, 1, 2, 4, 5]);
  });

  it("with 'freeze', a loss stops deltas until the keyframe; the gap it leaves is not asked about twice", async () => {
    const t = setup('freeze');
    await t.decoder.start();
    for (const i of [0, 1, 2]) t.decoder.handleFrame(frame(i, 10));
    t.decoder.handleLoss({
      channel: 1,
      frameId: 3,
      count: 2,
      keyframe: undefined,
      reason: 'missing',
      chunksReceived: 0,
    });
    for (let i = 5; i < 12; i++) t.decoder.handleFrame(frame(i, 10));
    expect(t.requests).toEqual(['frame-lost']);
    expect(t.decodedIds()).toEqual([0, 1, 2, 10, 11]);
    expect(t.decoder.stats.snapshot()).toMatchObject({ framesLost: 2, waitingForKeyframe: 5 });
  });

  it('a GOP position saturated at 65535 is no gap', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0));
    t.decoder.handleFrame(frame(1, 30, { gopPosition: 65534 }));
    const requestsBefore = t.requests.length;
    t.decoder.handleFrame(frame(2, 30, { gopPosition: 65535 }));
    t.decoder.handleFrame(frame(3, 30, { gopPosition: 65535 }));
    expect(t.requests.length).toBe(requestsBefore);
  });

  it('drops deltas until the next keyframe when more than maxDecodeQueue chunks spanning over 300 ms of video wait in the decoder', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0, 20));
    t.current().output(t.current().chunks[0]!.timestamp); // running: the bound applies
    t.current().decodeQueueSize = 4;
    // Nothing comes out: frames 1..10 wait (297 ms of video), frame 11 would make it 330 ms.
    for (let i = 1; i < 20; i++) t.decoder.handleFrame(frame(i, 20));
    t.decoder.handleFrame(frame(20, 20)); // keyframes always go in
    t.current().decodeQueueSize = 0;
    t.decoder.handleFrame(frame(21, 20));
    expect(t.requests).toEqual(['backpressure']);
    expect(t.decodedIds()).toEqual([...Array.from({ length: 11 }, (_, i) => i), 20, 21]);
    expect(t.decoder.stats.snapshot()).toMatchObject({ dropped: 9, skippedBehind: 9, waitingForKeyframe: 0 });
  });

  it('carries the robot-clock capture time of each frame to its meta', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0, 30, { captureClockUs: 4_000_000_123 }));
    t.current().output(t.current().chunks[0]!.timestamp);
    expect(t.frames[0]!.meta.captureClockUs).toBe(4_000_000_123);
  });

  it('catches up when the decoder is truly behind: a frame with newer chunks more than the ceiling past it still decoding is decoded, not handed over, and counted', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0));
    const d = t.current();
    d.output(d.chunks[0]!.timestamp); // caught up since its start
    // A decoder stall: frames 1-6 (166 ms of video) all wait in it, then come out together.
    for (let i = 1; i <= 6; i++) t.decoder.handleFrame(frame(i));
    for (const chunk of d.chunks.slice(1)) d.output(chunk.timestamp);
    // Frames 1 and 2 came out with frame 6, 165 and 132 ms newer, still decoding: more than the
    // 100 ms ceiling (the default), so they would only be replaced before anyone saw them. From
    // frame 3 on the rest is within the ceiling and shown, oldest first.
    expect(t.frames.map((f) => f.meta.frameId)).toEqual([0, 3, 4, 5, 6]);
    expect(t.decoder.stats.snapshot()).toMatchObject({ decoded: 7, skippedBehind: 2, dropped: 2 });
    // Nothing was skipped before decoding: no keyframe is needed for that.
    expect(t.requests).toEqual([]);
    // Another ceiling (the profile changed) applies from the next output on.
    t.decoder.setCatchUpAfter(40);
    for (let i = 7; i <= 9; i++) t.decoder.handleFrame(frame(i));
    for (const chunk of d.chunks.slice(7)) d.output(chunk.timestamp);
    expect(t.frames.map((f) => f.meta.frameId).slice(5)).toEqual([8, 9]);
    expect(() => t.decoder.setCatchUpAfter(-1)).toThrow(TypeError);
  });

  it('a queue of two or three frames in the decoder is normal, not behind: every frame is handed over', async () => {
    const t = setup();
    await t.decoder.start();
    const d = () => t.current();
    // A slow machine: frames arrive in threes (a burst repaired by parity, a late timer) and the
    // decoder gives each out only after the next ones were handed in.
    t.decoder.handleFrame(frame(0));
    d().output(d().chunks[0]!.timestamp);
    for (let i = 1; i < 91; i += 3) {
      for (let j = i; j < i + 3; j++) t.decoder.handleFrame(frame(j));
      for (let j = i; j < i + 3; j++) d().output(d().chunks[j]!.timestamp);
    }
    expect(t.frames).toHaveLength(91);
    expect(t.decoder.stats.snapshot()).toMatchObject({ decoded: 91, skippedBehind: 0, dropped: 0 });
  });

  it('a chunk the decoder gives no picture for (a delta whose reference was lost) does not make the frames after it look behind', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0));
    const d = t.current();
    d.output(d.chunks[0]!.timestamp);
    // Frames 1 and 2 go in and never come out (the browser's decoder swallows them).
    t.decoder.handleFrame(frame(1));
    t.decoder.handleFrame(frame(2));
    // Every later frame comes out as soon as it is handed in.
    for (let i = 3; i < 60; i++) {
      t.decoder.handleFrame(frame(i));
      d.output(d.chunks.at(-1)!.timestamp);
    }
    expect(t.frames.map((f) => f.meta.frameId)).toEqual([0, ...Array.from({ length: 57 }, (_, k) => k + 3)]);
    // The two swallowed frames are accounted for, not as skipped to catch up.
    expect(t.decoder.stats.snapshot()).toMatchObject({ decoded: 58, skippedBehind: 0, dropped: 2 });
  });

  it('a decoder that has not caught up since its start is starting, not behind: deltas wait for it up to a second of video', async () => {
    const t = setup();
    t.decoder.catchUp(9);
    await t.decoder.start();
    // The robot's replay (keyframe 0, deltas 1..9), then live frames while a slow start works.
    for (let i = 0; i < 10; i++) t.decoder.handleFrame(frame(i, 300));
    const d = t.current();
    for (let i = 10; i < 39; i++) {
      d.decodeQueueSize = i;
      t.decoder.handleFrame(frame(i, 300));
    }
    expect(t.decodedIds()).toHaveLength(39);
    expect(t.requests).toEqual([]);
    // The replay is out, but the live frames behind it still wait: not caught up yet.
    d.decodeQueueSize = 20;
    for (const chunk of d.chunks.slice(0, 10)) d.output(chunk.timestamp);
    d.decodeQueueSize = 29;
    t.decoder.handleFrame(frame(39, 300));
    expect(t.requests).toEqual([]);
    // Beyond a second of waiting it counts as falling behind.
    d.decodeQueueSize = 31;
    t.decoder.handleFrame(frame(40, 300));
    expect(t.requests).toEqual(['backpressure']);
    expect(t.decodedIds()).toHaveLength(40);
  });

  it('a replay at join and the live frames that queued behind it are all handed over, none skipped to catch up or dropped for backpressure', async () => {
    const t = setup();
    t.decoder.catchUp(29);
    await t.decoder.start();
    // The robot's replay (keyframe 0, deltas 1..29) in a burst, and live frames 30..39 that arrive
    // while the decoder works through it (a slow machine: 330 ms of video behind).
    for (let i = 0; i < 40; i++) t.decoder.handleFrame(frame(i, 300));
    const d = t.current();
    d.decodeQueueSize = 10;
    for (const chunk of d.chunks.slice(0, 30)) d.output(chunk.timestamp);
    // The replay is out; the live frames behind it come out one by one while more arrive, the
    // queue shrinking through 4 and 3.
    for (let i = 40; i < 50; i++) {
      d.decodeQueueSize = Math.max(2, 10 - (i - 40));
      t.decoder.handleFrame(frame(i, 300));
      d.output(d.chunks[i - 10]!.timestamp);
    }
    for (const chunk of d.chunks.slice(40)) d.output(chunk.timestamp);
    expect(t.requests).toEqual([]);
    expect(t.frames.filter((f) => !f.meta.replayed).map((f) => f.meta.frameId)).toEqual(
      Array.from({ length: 21 }, (_, k) => k + 29),
    );
    expect(t.decoder.stats.snapshot()).toMatchObject({ decoded: 50, skippedBehind: 0, dropped: 0 });
  });

  it('once caught up, a decoder stall on a loaded machine (five chunks waiting, 165 ms of video) is not falling behind: no GOP is dropped', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0, 300));
    const d = t.current();
    d.output(d.chunks[0]!.timestamp); // caught up
    d.decodeQueueSize = 5;
    for (let i = 1; i <= 6; i++) t.decoder.handleFrame(frame(i, 300));
    expect(t.requests).toEqual([]);
    expect(t.decodedIds()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // Past 300 ms of video waiting, with more than three chunks, it is behind.
    for (let i = 7; i <= 12; i++) t.decoder.handleFrame(frame(i, 300));
    expect(t.requests).toEqual(['backpressure']);
    expect(t.decodedIds()).toHaveLength(11);
  });

  it('a replay at join: frames that come during the codec check are held, all are decoded despite the queue, only the last is marked to paint', async () => {
    const t = setup();
    t.decoder.catchUp(4);
    const starting = t.decoder.start();
    // The robot's replay (keyframe 0, deltas 1..4) arrives while the codec check runs.
    for (let i = 0; i <= 4; i++) t.decoder.handleFrame(frame(i));
    await starting;
    expect(t.decodedIds()).toEqual([0, 1, 2, 3, 4]);
    const d = t.current();
    d.decodeQueueSize = 5; // all five still decoding: the replay does not count as falling behind
    t.decoder.handleFrame(frame(5));
    expect(t.decodedIds()).toEqual([0, 1, 2, 3, 4, 5]);
    d.decodeQueueSize = 0; // it works through them
    for (const chunk of d.chunks) d.output(chunk.timestamp);
    expect(t.frames.map((f) => [f.meta.frameId, f.meta.replayed])).toEqual([
      [0, true],
      [1, true],
      [2, true],
      [3, true],
      [4, false],
      [5, false],
    ]);
    expect(t.requests).toEqual([]);
    // Once the replay is out, a decoder that is really behind drops deltas again.
    d.decodeQueueSize = 4;
    for (let i = 6; i < 20; i++) t.decoder.handleFrame(frame(i));
    expect(t.requests).toEqual(['backpressure']);
    expect(() => t.decoder.catchUp(70_000)).toThrow(TypeError);
  });

  it('a keyframe-alone replay (not live): the keyframe is painted, the deltas after it wait for the IDR whatever the loss policy', async () => {
    const t = setup('continue');
    await t.decoder.start();
    // The robot's GOP started at frame 0; it replays keyframe 0 as frame id 40, the id just
    // before the live stream's next frame, whose deltas refer to frames 1..40 this pilot never had.
    t.decoder.catchUp(40, false);
    t.decoder.handleFrame(frame(0, 300, { frameId: 40 }));
    for (let i = 41; i < 50; i++) t.decoder.handleFrame(frame(i, 300));
    expect(t.decodedIds()).toEqual([0]);
    expect(t.decoder.state).toEqual({ kind: 'waiting-keyframe', reason: 'not-live' });
    // The join already asked the robot for an IDR: no request of the pilot's own for the jump.
    expect(t.requests).toEqual([]);
    t.decoder.handleFrame(frame(50, 300, { keyframe: true, gopPosition: 0 }));
    t.decoder.handleFrame(frame(51, 300, { gopPosition: 1 }));
    expect(t.decodedIds()).toEqual([0, 50, 51]);
    expect(t.decoder.state).toEqual({ kind: 'decoding' });
    const d = t.current();
    for (const chunk of d.chunks) d.output(chunk.timestamp);
    expect(t.frames.map((f) => [f.meta.frameId, f.meta.replayed])).toEqual([
      [40, false],
      [50, false],
      [51, false],
    ]);
    expect(t.decoder.stats.snapshot()).toMatchObject({ waitingForKeyframe: 9 });
  });

  it('close() releases the decoder, ignores further input and releases late output', async () => {
    const t = setup();
    await t.decoder.start();
    t.decoder.handleFrame(frame(0));
    const d = t.current();
    t.decoder.close();
    expect(d.state).toBe('closed');
    expect(t.decoder.state).toEqual({ kind: 'closed' });
    t.decoder.handleFrame(frame(1));
    expect(d.chunks).toHaveLength(1);
    expect(d.output(d.chunks[0]!.timestamp).closed).toBe(true);
    expect(t.frames).toHaveLength(0);
  });

  it('start() twice is a caller mistake', async () => {
    const t = setup();
    await t.decoder.start();
    await expect(t.decoder.start()).rejects.toThrow(TypeError);
  });

  it('rejects an unknown loss policy', () => {
    expect(() => setup('pause' as LossPolicy)).toThrow(TypeError);
  });
});
