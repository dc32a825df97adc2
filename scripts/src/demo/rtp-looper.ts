/**
 * The demo robot's camera: an H.264 clip played in a loop as one endless RTP stream, as a camera
 * on the robot's network would send it. Sequence numbers and 90 kHz timestamps continue across the
 * end of the clip, so the receiver sees one stream that never restarts; every pass starts at the
 * clip's IDR with its SPS and PPS, so a pilot joining at any pass decodes from there.
 *
 * {@link RtpLooper} makes the packets (no I/O, no time); {@link startRtpLoop} sends them on a UDP
 * socket at the clip's frame rate, on an injected clock. It listens to nothing: the stream is all it
 * does (no RTCP, no answers).
 *
 * @packageDocumentation
 */
import dgram from 'node:dgram';
import { type Clock, type Logger, systemClock } from '@svc/runtime';
import { seqNext16, wrapU32 } from '@svc/wire';
import { type H264Clip, h264Payloads, rtpPacket } from './h264-rtp.js';

/** The RTP clock rate of video payload formats (RFC 6184 §8.2.1). */
export const VIDEO_CLOCK_RATE = 90_000;
/** Dynamic payload type of the stream. */
export const DEMO_PAYLOAD_TYPE = 96;
/**
 * Largest RTP payload: 1200-byte packets with the 12-byte header, as the project's ffmpeg sources
 * send (`pkt_size=1200`), well inside a loopback or Ethernet MTU.
 */
export const DEFAULT_MAX_PAYLOAD = 1188;

/** Options of {@link RtpLooper}. */
export interface RtpLooperOptions {
  readonly clip: H264Clip;
  /** Frames per second of the clip: each frame's timestamp is 90000 / fps after the one before. */
  readonly fps: number;
  /** Uniform in [0, 1): the random SSRC, first sequence number and first timestamp (RFC 3550 §5.1). */
  readonly random?: () => number;
  readonly maxPayload?: number;
  readonly payloadType?: number;
}

/** The packets of one frame and where it sits in the loop. */
export interface LoopedFrame {
  readonly packets: readonly Uint8Array[];
  /** Frames sent before this one, over every pass. */
  readonly index: number;
  /** The pass of the loop (0 for the first). */
  readonly pass: number;
  /** Its position in the clip. */
  readonly frameInClip: number;
  readonly keyframe: boolean;
  readonly timestamp: number;
}

/** Makes the RTP packets of a clip played in a loop, frame after frame (no I/O, no clock). */
export class RtpLooper {
  readonly ssrc: number;
  readonly #options: RtpLooperOptions;
  readonly #maxPayload: number;
  readonly #payloadType: number;
  readonly #firstTimestamp: number;
  #nextSequenceNumber: number;
  #index = 0;

  /** @throws {TypeError} for an empty clip or a frame rate that is not positive. */
  constructor(options: RtpLooperOptions) {
    if (options.clip.frames.length === 0) throw new TypeError('RtpLooper: the clip has no frames');
    if (!(options.fps > 0 && Number.isFinite(options.fps)))
      throw new TypeError(`RtpLooper: fps must be positive, got ${options.fps}`);
    const random = options.random ?? Math.random;
    this.#options = options;
    this.#maxPayload = options.maxPayload ?? DEFAULT_MAX_PAYLOAD;
    this.#payloadType = options.payloadType ?? DEMO_PAYLOAD_TYPE;
    this.ssrc = Math.floor(random() * 0x1_0000_0000) >>> 0;
    this.#nextSequenceNumber = Math.floor(random() * 0x1_0000);
    this.#firstTimestamp = Math.floor(random() * 0x1_0000_0000);
  }

  /** Frames made so far. */
  get framesMade(): number {
    return this.#index;
  }

  /**
   * The next frame's packets: one or more per NAL unit ({@link h264Payloads}), the marker bit on
   * the frame's last, one sequence number each (continuing across passes, wrapping at 2^16), and
   * the frame's timestamp, `first + index * 90000 / fps` modulo 2^32.
   */
  nextFrame(): LoopedFrame {
    const { clip, fps } = this.#options;
    const index = this.#index++;
    const frameInClip = index % clip.frames.length;
    const frame = clip.frames[frameInClip]!;
    const timestamp = wrapU32(this.#firstTimestamp + Math.round((index * VIDEO_CLOCK_RATE) / fps));
    const payloads = frame.nals.flatMap((nal) => h264Payloads(nal, this.#maxPayload));
    const packets = payloads.map((payload, i) => {
      const packet = rtpPacket(
        {
          marker: i === payloads.length - 1,
          payloadType: this.#payloadType,
          sequenceNumber: this.#nextSequenceNumber,
          timestamp,
          ssrc: this.ssrc,
        },
        payload,
      );
      this.#nextSequenceNumber = seqNext16(this.#nextSequenceNumber);
      return packet;
    });
    return {
      packets,
      index,
      pass: Math.floor(index / clip.frames.length),
      frameInClip,
      keyframe: frame.keyframe,
      timestamp,
    };
  }
}

/** Where the stream goes. */
export interface UdpTarget {
  readonly host: string;
  readonly port: number;
}

/** Options of {@link startRtpLoop}. */
export interface RtpLoopOptions extends RtpLooperOptions {
  readonly target: UdpTarget;
  readonly clock?: Clock;
  readonly logger: Logger;
}

/** Counters of a running loop. */
export interface RtpLoopStats {
  frames: number;
  packets: number;
  bytes: number;
  /** Sends the socket reported as failed (logged once a minute at most). */
  sendErrors: number;
  /** Times the loop fell more than {@link MAX_LAG_MS} behind (a stalled process) and did not catch up. */
  resyncs: number;
}

/** A running loop. */
export interface RtpLoop {
  readonly stats: RtpLoopStats;
  readonly ssrc: number;
  /** Stops sending and closes the socket. */
  stop(): Promise<void>;
}

/**
 * Behind its schedule by more than this (the process stalled), the loop sends the next frame now
 * and schedules from there, rather than bursting the frames it missed into the receiver.
 */
export const MAX_LAG_MS = 250;
const SEND_ERROR_LOG_INTERVAL_MS = 60_000;

/**
 * Sends `clip` in a loop to `target` at `fps`, each frame's packets at once at its time, from an
 * ephemeral port of its own. Frames are never skipped (a skipped frame would break the ones that
 * refer to it until the next IDR); after a stall the schedule starts again from now.
 */
export async function startRtpLoop(options: RtpLoopOptions): Promise<RtpLoop> {
  const clock = options.clock ?? systemClock;
  const { target, logger } = options;
  const looper = new RtpLooper(options);
  const socket = dgram.createSocket(target.host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  socket.on('error', (err) => logger.warn({ err }, 'demo camera: socket error'));
  const stats: RtpLoopStats = { frames: 0, packets: 0, bytes: 0, sendErrors: 0, resyncs: 0 };
  const periodMs = 1000 / options.fps;
  let errorLoggedAt = Number.NEGATIVE_INFINITY;
  let nextDue = clock.now();
  let stopped = false;
  let timer = clock.setTimeout(tick, 0);

  function onSent(err: Error | null): void {
    if (err === null) return;
    stats.sendErrors++;
    const now = clock.now();
    if (now - errorLoggedAt < SEND_ERROR_LOG_INTERVAL_MS) return;
    errorLoggedAt = now;
    logger.warn({ err, count: stats.sendErrors }, 'demo camera: RTP send failed (logged once a minute)');
  }

  function tick(): void {
    if (stopped) return;
    const frame = looper.nextFrame();
    for (const packet of frame.packets) {
      socket.send(packet, target.port, target.host, onSent);
      stats.packets++;
      stats.bytes += packet.length;
    }
    stats.frames++;
    const now = clock.now();
    nextDue += periodMs;
    if (nextDue < now - MAX_LAG_MS) {
      stats.resyncs++;
      nextDue = now;
    }
    timer = clock.setTimeout(tick, Math.max(0, nextDue - now));
  }

  return {
    stats,
    ssrc: looper.ssrc,
    stop() {
      if (stopped) return Promise.resolve();
      stopped = true;
      clock.clearTimeout(timer);
      return new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}
