import { FramePacker } from '../packer.js';
import type { ParityPolicy } from '../parity.js';
import { type AssembledFrame, type FrameLoss, Reassembler } from '../reassembler.js';
import { wrapU32 } from '../seq.js';
import type { LossModel } from './loss.js';
import { type Random, randomBytes, randomInt } from './random.js';

/** A synthetic video stream pushed through packer, a lossy link and the reassembler. */
export interface StreamSimOptions {
  /** Frames to send. */
  readonly frames: number;
  readonly fps: number;
  /** A keyframe every this many frames (the first frame is one). */
  readonly keyframeInterval: number;
  readonly keyframeBytes: number;
  /** Delta frame sizes, uniform in [min, max] bytes. */
  readonly deltaBytes: readonly [number, number];
  readonly keyParity: ParityPolicy;
  readonly deltaParity: ParityPolicy;
  readonly loss: LossModel;
  /** Frame sizes and contents. */
  readonly random: Random;
  readonly maxDatagramBytes?: number;
  readonly maxBlockData?: number;
}

/** What reached the far end. */
export interface StreamSimResult {
  readonly framesSent: number;
  readonly framesDelivered: number;
  readonly keyframesSent: number;
  readonly keyframesDelivered: number;
  /** Delivered frames that needed parity. */
  readonly framesRepaired: number;
  /** Delivered frames whose bytes differ from what was sent (must be 0). */
  readonly framesCorrupted: number;
  /** Frames reported lost by the reassembler (sum of loss counts). */
  readonly framesReportedLost: number;
  readonly datagramsSent: number;
  readonly datagramsLost: number;
  /** Bytes of parity payload over bytes of data payload, in percent. */
  readonly parityOverheadPct: number;
  /** `framesDelivered / framesSent`, in percent. */
  readonly deliveredPct: number;
}

/**
 * Runs the stream on a virtual clock: frame i leaves at i / fps, its datagrams 50 µs apart, each
 * arriving 20 ms later unless the loss model drops it.
 */
export function simulateStream(options: StreamSimOptions): StreamSimResult {
  const { random } = options;
  const packer = new FramePacker({
    channel: 1,
    ...(options.maxDatagramBytes !== undefined && { maxDatagramBytes: options.maxDatagramBytes }),
    ...(options.maxBlockData !== undefined && { maxBlockData: options.maxBlockData }),
  });
  const sent = new Map<number, Uint8Array>();
  let delivered = 0;
  let keyDelivered = 0;
  let corrupted = 0;
  let reportedLost = 0;
  const reassembler = new Reassembler({
    channel: 1,
    onFrame: (frame: AssembledFrame) => {
      delivered++;
      if (frame.keyframe) keyDelivered++;
      if (!equalBytes(sent.get(frame.frameId), frame.data)) corrupted++;
      sent.delete(frame.frameId);
    },
    onFrameLost: (loss: FrameLoss) => {
      reportedLost += loss.count;
      for (let i = 0; i < loss.count; i++) sent.delete((loss.frameId + i) & 0xffff);
    },
  });

  let datagramsSent = 0;
  let datagramsLost = 0;
  let keyframesSent = 0;
  let dataBytes = 0;
  let parityBytes = 0;
  const frameIntervalMs = 1000 / options.fps;
  for (let i = 0; i < options.frames; i++) {
    const keyframe = i % options.keyframeInterval === 0;
    if (keyframe) keyframesSent++;
    const size = keyframe
      ? options.keyframeBytes
      : randomInt(random, options.deltaBytes[0], options.deltaBytes[1]);
    const data = randomBytes(random, size);
    const sentAtMs = i * frameIntervalMs;
    const packed = packer.pack(
      {
        data,
        keyframe,
        captureTimestampUs: wrapU32(sentAtMs * 1000),
        gopPosition: i % options.keyframeInterval,
        parity: keyframe ? options.keyParity : options.deltaParity,
      },
      wrapU32(sentAtMs * 1000),
    );
    sent.set(packed.frameId, data);
    parityBytes += packed.parityBytes;
    dataBytes += size;
    packed.datagrams.forEach((datagram, n) => {
      datagramsSent++;
      if (options.loss.lose()) {
        datagramsLost++;
        return;
      }
      reassembler.handleDatagram(datagram, sentAtMs + 20 + n * 0.05);
    });
  }
  reassembler.handleTick(options.frames * frameIntervalMs + 10_000);

  return {
    framesSent: options.frames,
    framesDelivered: delivered,
    keyframesSent,
    keyframesDelivered: keyDelivered,
    framesRepaired: reassembler.stats.framesRepaired,
    framesCorrupted: corrupted,
    framesReportedLost: reportedLost,
    datagramsSent,
    datagramsLost,
    parityOverheadPct: (100 * parityBytes) / dataBytes,
    deliveredPct: (100 * delivered) / options.frames,
  };
}

function equalBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  if (a === undefined || a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
