/**
 * The send path at a join, on fake time over a simulated link: the live frames queued behind the
 * replay at join are not backlog while the link drains it (a replay is not congestion), and a link
 * slower than the stream still has its delta frames dropped for backlog.
 */
import { qosProfile } from '@svc/qos';
import { silentLogger } from '@svc/runtime';
import { FakeClock } from '@svc/runtime/testing';
import type { SessionStats } from '@svc/transport';
import { FramePacker, type PackedFrame } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import type { VideoChannelConfig } from '../src/config.js';
import { VideoSend } from '../src/pilot-session/video-send.js';
import { VideoChannel } from '../src/video-channel.js';
import { FakeSession } from './support/fake-session.js';

const config: VideoChannelConfig = {
  kind: 'video',
  id: 1,
  name: 'front',
  input: 'rtp://127.0.0.1:5004',
  codec: 'avc1.42c00d',
  fps: 30,
  max_bitrate_kbps: 0,
  layer: [],
};

/** A transport whose datagrams leave at `bytesPerMs` of the fake clock; the rest waits in its queue. */
class LinkSession extends FakeSession {
  readonly #clock: FakeClock;
  readonly #bytesPerMs: number;
  #queued = 0;
  #at = 0;

  constructor(clock: FakeClock, bytesPerMs: number) {
    super();
    this.#clock = clock;
    this.#bytesPerMs = bytesPerMs;
    this.#at = clock.now();
  }
  override sendDatagram(payload: Uint8Array): boolean {
    this.queuedDatagramBytes();
    this.#queued += payload.byteLength;
    return true;
  }
  override queuedDatagramBytes(): number {
    const now = this.#clock.now();
    this.#queued = Math.max(0, this.#queued - (now - this.#at) * this.#bytesPerMs);
    this.#at = now;
    return this.#queued;
  }
  override stats(): SessionStats {
    return { ...super.stats(), rttMs: 20, cwndBytes: 16_000 };
  }
}

/** `count` frames of `bytes` each (a keyframe first), packed as the channel packs them. */
function frames(packer: FramePacker, count: number, bytes: number): PackedFrame[] {
  return Array.from({ length: count }, (_, i) =>
    packer.pack(
      {
        data: new Uint8Array(bytes).fill(i),
        keyframe: i === 0,
        captureTimestampUs: i * 33_333,
        gopPosition: i,
        parity: { rate: 0.15, minPerBlock: 3 },
      },
      0,
    ),
  );
}

/**
 * A pilot joins mid-GOP (45 frames of 10 KB replayed: 2.4 Mbit/s), then 90 live frames come at
 * 30 fps over a link of `linkMbps`: what the send path did with them.
 */
function join(linkMbps: number) {
  const clock = new FakeClock(0);
  const profile = qosProfile('balanced');
  const channel = new VideoChannel(config, profile, silentLogger);
  const session = new LinkSession(clock, (linkMbps * 1e6) / 8 / 1000);
  const send = new VideoSend({
    session,
    channels: [channel],
    profile,
    clock,
    onBacklogDrop: () => {},
  });
  const packer = new FramePacker({ channel: 1 });
  const subscriber = send.subscriber(channel, frames(packer, 45, 10_000));
  for (const frame of frames(packer, 91, 10_000).slice(1)) {
    clock.advance(33);
    subscriber.handleFrame(frame, false);
  }
  clock.advance(5000);
  return send.agentStats(undefined)['1']!;
}

describe('admission at a join', () => {
  it('a link three times the stream: every live frame behind the replay goes out', () => {
    const stats = join(7.5);
    expect(stats).toMatchObject({
      frames_replayed: 45,
      frames_sent: 90,
      frames_dropped_backlog: 0,
      frames_dropped_waiting: 0,
    });
  });

  it('a link slower than the stream: delta frames are still dropped for backlog', () => {
    const stats = join(1.5);
    expect(stats.frames_replayed).toBe(45);
    expect(Number(stats.frames_dropped_backlog)).toBeGreaterThan(0);
    expect(Number(stats.frames_sent)).toBeLessThan(90);
  });
});
