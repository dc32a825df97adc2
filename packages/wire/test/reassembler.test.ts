import { describe, expect, it } from 'vitest';
import { FramePacker, NO_PARITY, type ParityPolicy, stampSenderTimestamp, WireError } from '../src/index.js';
import { headerOf, packOne, recordingReassembler, shuffled, testFrame } from './support/helpers.js';

const FEC: ParityPolicy = { rate: 0.25, minPerBlock: 2 };

describe('Reassembler', () => {
  it('delivers a frame whose datagrams arrive in any order, duplicated, with its info', () => {
    const frame = testFrame(9000, FEC, { keyframe: true, gopPosition: 0, captureTimestampUs: 777 });
    const packed = packOne(frame);
    const { reassembler, frames, losses } = recordingReassembler();
    const arrivals = shuffled([...packed.datagrams, ...packed.datagrams.slice(0, 3)], 1);
    for (const d of arrivals) reassembler.handleDatagram(d, 5);
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({
      frameId: 0,
      keyframe: true,
      captureTimestampUs: 777,
      gopPosition: 0,
      senderTimestampUs: 1000,
      firstArrivalMs: 5,
    });
    expect(frames[0]!.data).toEqual(frame.data);
    expect(losses).toEqual([]);
    // A block completes as soon as any k of its chunks are in; the rest are surplus or duplicates.
    expect(reassembler.stats.duplicates + reassembler.stats.surplus).toBe(packed.datagrams.length + 3 - 8);
  });

  it('reports the earliest and the latest send time of a paced frame, across a wrap', () => {
    const packed = packOne(testFrame(9000, FEC));
    const { reassembler, frames } = recordingReassembler();
    // A pacer restamps each datagram as it leaves: 0xffff_fff0, then 100 µs apart (wrapping).
    packed.datagrams.forEach((d, i) => {
      stampSenderTimestamp(d, 0xffff_fff0 + i * 100);
    });
    let completing = -1;
    packed.datagrams.forEach((d, i) => {
      reassembler.handleDatagram(d, 5);
      if (completing < 0 && frames.length === 1) completing = i;
    });
    expect(completing).toBeGreaterThan(0);
    expect(frames[0]!.senderTimestampUs).toBe(0xffff_fff0);
    expect(frames[0]!.lastSenderTimestampUs).toBe((0xffff_fff0 + completing * 100) >>> 0);
  });

  it('needs no repair when the data arrives in order', () => {
    const frame = testFrame(9000, FEC);
    const { reassembler, frames } = recordingReassembler();
    for (const d of packOne(frame).datagrams) reassembler.handleDatagram(d, 5);
    expect(frames.map((f) => [f.chunksRecovered, f.data])).toEqual([[0, frame.data]]);
    expect(reassembler.stats.framesRepaired).toBe(0);
    expect(reassembler.stats.surplus).toBe(2);
  });

  it('counts the chunks the sender sent of every block it saw, so the pilot can tell chunk loss', () => {
    const frame = testFrame(6000, { rate: 0, minPerBlock: 3 });
    const packed = packOne(frame);
    const { reassembler } = recordingReassembler();
    // Two of the frame's chunks are lost on the way.
    packed.datagrams.forEach((d, i) => {
      if (i !== 1 && i !== 4) reassembler.handleDatagram(d, 0);
    });
    const { chunksExpected, datagrams, duplicates, malformed } = reassembler.stats;
    expect(chunksExpected).toBe(packed.datagrams.length);
    expect(chunksExpected - (datagrams - duplicates - malformed)).toBe(2);
  });

  it('repairs any m lost chunks of a block', () => {
    const frame = testFrame(6000, { rate: 0, minPerBlock: 3 });
    const packed = packOne(frame);
    const n = packed.datagrams.length;
    for (let a = 0; a < n; a++) {
      for (let b = a + 1; b < n; b++) {
        for (let c = b + 1; c < n; c++) {
          const { reassembler, frames } = recordingReassembler();
          packed.datagrams.forEach((d, i) => {
            if (i !== a && i !== b && i !== c) reassembler.handleDatagram(d, 0);
          });
          expect(frames.map((f) => f.data)).toEqual([frame.data]);
        }
      }
    }
  });

  it('survives three consecutive losses when blocks of two parity chunks are interleaved', () => {
    const frame = testFrame(30_000, { rate: 0, minPerBlock: 2 });
    const packed = packOne(frame, { maxBlockData: 9 });
    expect(packed.blocks).toBeGreaterThanOrEqual(3);
    for (let start = 0; start + 3 <= packed.datagrams.length; start++) {
      const { reassembler, frames } = recordingReassembler();
      packed.datagrams.forEach((d, i) => {
        if (i < start || i >= start + 3) reassembler.handleDatagram(d, 0);
      });
      expect(frames.length, `burst at ${start}`).toBe(1);
      expect(frames[0]!.data).toEqual(frame.data);
    }
  });

  it('never hands over half a frame: an unrecoverable frame is given up at its deadline', () => {
    const packed = packOne(testFrame(5000, { rate: 0, minPerBlock: 1 }, { keyframe: true }));
    const { reassembler, frames, losses } = recordingReassembler({ frameDeadlineMs: 100 });
    for (const d of packed.datagrams.slice(2)) reassembler.handleDatagram(d, 10);
    expect(frames).toEqual([]);
    expect(reassembler.nextDeadlineMs()).toBe(110);
    reassembler.handleTick(109);
    expect(losses).toEqual([]);
    reassembler.handleTick(110);
    expect(losses).toEqual([
      {
        channel: 1,
        frameId: 0,
        count: 1,
        keyframe: true,
        reason: 'deadline',
        chunksReceived: packed.datagrams.length - 2,
      },
    ]);
    expect(reassembler.pendingFrames).toBe(0);
    // Its late chunks are now stale.
    reassembler.handleDatagram(packed.datagrams[0]!, 120);
    expect(reassembler.stats.stale).toBe(1);
    expect(frames).toEqual([]);
  });

  it('accounts for every frame id once, in order: superseded, missing, delivered', () => {
    const packer = new FramePacker({ channel: 1 });
    const frames = [0, 1, 2, 3, 4].map((i) =>
      packer.pack(testFrame(3000, NO_PARITY, { keyframe: i === 2 }, i), 0),
    );
    const { reassembler, frames: out, losses } = recordingReassembler();
    reassembler.handleDatagram(frames[0]!.datagrams[0]!, 0); // frame 0: part only
    for (const d of frames[1]!.datagrams) reassembler.handleDatagram(d, 1); // frame 1 whole
    reassembler.handleDatagram(frames[2]!.datagrams[1]!, 2); // frame 2 (keyframe): part only
    // frame 3: nothing at all
    for (const d of frames[4]!.datagrams) reassembler.handleDatagram(d, 4); // frame 4 whole
    expect(out.map((f) => f.frameId)).toEqual([1, 4]);
    expect(
      losses.map(({ frameId, count, keyframe, reason }) => ({ frameId, count, keyframe, reason })),
    ).toEqual([
      { frameId: 0, count: 1, keyframe: false, reason: 'superseded' },
      { frameId: 2, count: 1, keyframe: true, reason: 'superseded' },
      { frameId: 3, count: 1, keyframe: undefined, reason: 'missing' },
    ]);
    expect(reassembler.stats.framesLost).toBe(3);
    // Frames older than the newest delivered are dropped and counted.
    for (const d of frames[3]!.datagrams) reassembler.handleDatagram(d, 5);
    expect(out).toHaveLength(2);
    expect(reassembler.stats.stale).toBe(frames[3]!.datagrams.length);
  });

  it('reports a long gap as one run', () => {
    const packer = new FramePacker({ channel: 1 });
    const sent = Array.from({ length: 200 }, (_, i) => packer.pack(testFrame(50, NO_PARITY, {}, i), 0));
    const { reassembler, losses } = recordingReassembler();
    reassembler.handleDatagram(sent[0]!.datagrams[0]!, 0);
    reassembler.handleDatagram(sent[199]!.datagrams[0]!, 1);
    expect(losses).toEqual([
      { channel: 1, frameId: 1, count: 198, keyframe: undefined, reason: 'missing', chunksReceived: 0 },
    ]);
  });

  it('orders wrap-around frame ids correctly', () => {
    const packer = new FramePacker({ channel: 1, firstFrameId: 0xfffe });
    const sent = [0, 1, 2, 3].map((i) => packer.pack(testFrame(100, NO_PARITY, {}, i), 0));
    const { reassembler, frames, losses } = recordingReassembler();
    for (const i of [0, 1, 3]) reassembler.handleDatagram(sent[i]!.datagrams[0]!, i);
    reassembler.handleDatagram(sent[2]!.datagrams[0]!, 4);
    expect(frames.map((f) => f.frameId)).toEqual([0xfffe, 0xffff, 1]);
    expect(losses.map((l) => [l.frameId, l.reason])).toEqual([[0, 'missing']]);
  });

  it('takes a sender restart or a long silence as a fresh stream', () => {
    const { reassembler, frames } = recordingReassembler();
    const before = new FramePacker({ channel: 1, firstFrameId: 5000 });
    for (let i = 0; i < 3; i++)
      reassembler.handleDatagram(before.pack(testFrame(100, NO_PARITY), 0).datagrams[0]!, i);
    const restarted = new FramePacker({ channel: 1, firstFrameId: 0 });
    reassembler.handleDatagram(restarted.pack(testFrame(100, NO_PARITY), 0).datagrams[0]!, 10);
    expect(frames.map((f) => f.frameId)).toEqual([5000, 5001, 5002, 0]);
    // 4990 is only 10 behind 5000: stale while the stream is live, fresh after a silence.
    const older = new FramePacker({ channel: 1, firstFrameId: 4990 });
    const { reassembler: r2, frames: f2 } = recordingReassembler({ idleResetMs: 500 });
    r2.handleDatagram(before.pack(testFrame(100, NO_PARITY), 0).datagrams[0]!, 0);
    const late = older.pack(testFrame(100, NO_PARITY), 0).datagrams[0]!;
    r2.handleDatagram(late, 100);
    expect(f2).toHaveLength(1);
    r2.handleDatagram(late, 700);
    expect(f2.map((f) => f.frameId)).toEqual([5003, 4990]);
  });

  it('gives up the oldest frame when too many are incomplete', () => {
    const packer = new FramePacker({ channel: 1 });
    const { reassembler, losses } = recordingReassembler({ maxPendingFrames: 4 });
    for (let i = 0; i < 6; i++) {
      reassembler.handleDatagram(packer.pack(testFrame(3000, NO_PARITY, {}, i), 0).datagrams[0]!, i);
    }
    expect(reassembler.pendingFrames).toBe(4);
    expect(losses.map((l) => [l.frameId, l.reason])).toEqual([
      [0, 'overflow'],
      [1, 'overflow'],
    ]);
  });

  it('refuses inconsistent or foreign datagrams with coded errors and keeps the frame', () => {
    const frame = testFrame(5000, FEC);
    const packed = packOne(frame);
    const { reassembler, frames } = recordingReassembler();
    const forged = packed.datagrams[1]!.slice();
    forged[6] = 9; // data count differs from the block's
    reassembler.handleDatagram(packed.datagrams[0]!, 0);
    expect(() => reassembler.handleDatagram(forged, 0)).toThrow(
      expect.objectContaining({ code: 'chunk-mismatch' }),
    );
    const flipped = packed.datagrams[1]!.slice();
    flipped[0]! ^= 0x08; // keyframe flag differs from the frame's
    expect(() => reassembler.handleDatagram(flipped, 0)).toThrow(
      expect.objectContaining({ code: 'chunk-mismatch' }),
    );
    const otherChannel = packed.datagrams[1]!.slice();
    otherChannel[1] = 2;
    expect(() => reassembler.handleDatagram(otherChannel, 0)).toThrow(
      expect.objectContaining({ code: 'bad-channel' }),
    );
    expect(() => reassembler.handleDatagram(new Uint8Array(3), 0)).toThrow(WireError);
    for (const d of packed.datagrams.slice(1)) reassembler.handleDatagram(d, 0);
    expect(frames.map((f) => f.data)).toEqual([frame.data]);
    expect(reassembler.stats.malformed).toBe(4);
  });

  it('drops a frame larger than the limit and reports it corrupt', () => {
    const packed = packOne(testFrame(20_000, NO_PARITY));
    const { reassembler, frames, losses } = recordingReassembler({
      maxFrameBytes: 10_000,
      frameDeadlineMs: 50,
    });
    expect(() => {
      for (const d of packed.datagrams) reassembler.handleDatagram(d, 0);
    }).toThrow(expect.objectContaining({ code: 'frame-too-large' }));
    reassembler.handleTick(100);
    expect(frames).toEqual([]);
    expect(losses.map((l) => l.reason)).toEqual(['corrupt']);
  });

  it('refuses bad options', () => {
    expect(() => recordingReassembler({ channel: 0 })).toThrow(TypeError);
    expect(() => recordingReassembler({ frameDeadlineMs: 0 })).toThrow(TypeError);
  });

  it('reports a keyframe lost at its deadline with its id and flag, among repaired neighbours', () => {
    const packer = new FramePacker({ channel: 1 });
    const { reassembler, frames, losses } = recordingReassembler({ frameDeadlineMs: 50 });
    const key = packer.pack(testFrame(12_000, { rate: 0, minPerBlock: 1 }, { keyframe: true }), 0);
    for (const d of key.datagrams.slice(2)) reassembler.handleDatagram(d, 0);
    reassembler.handleTick(60);
    const delta = packer.pack(testFrame(2000, FEC), 0);
    for (const d of delta.datagrams.slice(1)) reassembler.handleDatagram(d, 70);
    expect(losses.map((l) => [l.frameId, l.keyframe, l.reason])).toEqual([[0, true, 'deadline']]);
    expect(frames.map((f) => [f.frameId, f.chunksRecovered])).toEqual([[1, 1]]);
    expect(headerOf(key.datagrams[0]!).keyframe).toBe(true);
  });
});
