/**
 * The media send path of one pilot session: every video channel's frames through one paced send
 * queue, delta admission against the backlog, the pacing rate from the path, and what the
 * channel's rate controller needs measured. Runs per frame and per datagram: nothing here
 * allocates per datagram.
 */
import { type AbrSample, DeltaAdmission, type QosProfile } from '@svc/qos';
import type { Clock } from '@svc/runtime';
import { PacedSendQueue, type Session } from '@svc/transport';
import { type PackedFrame, stampSenderTimestamp, wrapU32 } from '@svc/wire';
import type { ChannelQos } from '../channel-qos.js';
import type { FrameSubscriber, VideoChannel } from '../video-channel.js';

/** What one session sent of one video channel, and what it measured for its rate controller. */
interface ChannelSend {
  frames: number;
  skipped: number;
  refused: number;
  replayed: number;
  /** Delta frames dropped because the backlog was over the threshold (each starts a wait). */
  droppedBacklog: number;
  /** Delta frames dropped while waiting for a recovery point. */
  droppedWaiting: number;
  admission: DeltaAdmission;
  /** Since the last sample: backlog drops, the pilot's reported frames lost and its chunk loss. */
  period: { backlogDrops: number; framesLost: number; chunkLoss: number; rttMin: number };
  /**
   * Frames this session dropped that the pilot has not yet reported lost: the pilot cannot tell a
   * frame the robot dropped from one the network lost, so its reports are net of these.
   */
  dropsUnreported: number;
  /** Transport counters at the last sample. */
  last: { sentPackets: number; lostPackets: number };
}

/** The pacing rate never goes below this (bits/s), so a keyframe leaves within a few frame times. */
const MIN_PACING_BPS = 12_000_000;
/** Pacing runs at least this many times faster than the stream's own bitrate. */
const PACING_HEADROOM = 3;
/**
 * And at this multiple of what the path has shown it delivers and of what the congestion
 * controller lets out per round trip (its window over the smoothed RTT: quiche's own pacing rate,
 * which the binding cannot hand over).
 */
const PACING_GAIN = 1.25;
/** The pacing rate is recomputed at every keyframe and at most this often otherwise (ms). */
const PACING_UPDATE_MS = 100;
/** The binding reports the RTT in whole milliseconds (0 on loopback): no less than this is used. */
const MIN_PACING_RTT_MS = 1;
/** Bytes that may leave back to back: a typical delta frame goes at once, a keyframe is spread. */
const PACING_BURST_BYTES = 32 * 1024;
/** The minimum RTT is the lowest smoothed RTT seen over this window (quiche gives no minimum), ms. */
const MIN_RTT_WINDOW_MS = 10_000;
/**
 * Live frames queued behind the replay at join are part of its burst, not backlog, while the
 * path drains it: during the first {@link REPLAY_FOLLOW_GRACE_MS} (a new connection's congestion
 * window opens over a few round trips), then as long as the path has put more on the wire since
 * the replay than the live frames added (the queue is shrinking), at most
 * {@link REPLAY_FOLLOW_MAX_MS}. A path slower than the stream fails that test, and the frames
 * behind the replay count as backlog again.
 */
const REPLAY_FOLLOW_GRACE_MS = 250;
/** See {@link REPLAY_FOLLOW_GRACE_MS}, ms: the replay holds at most two seconds of video. */
const REPLAY_FOLLOW_MAX_MS = 3000;

/** A replay at join being drained, with the live frames queued behind it. */
interface ReplayDrain {
  /** Clock ms when the replay was queued. */
  readonly startedAt: number;
  /** What was on the wire then (see `VideoSend.#wire`), bytes. */
  readonly sentAtStart: number;
  /** Bytes of the live frames queued behind it since. */
  followed: number;
}

/** Options of {@link VideoSend}. */
export interface VideoSendOptions {
  readonly session: Session;
  /** The robot's video channels (their configuration sets each channel's admission). */
  readonly channels: readonly VideoChannel[];
  readonly profile: QosProfile;
  /** The clock of the sender timestamps, of pacing decisions and of the paced queue's timers. */
  readonly clock: Clock;
  /** A delta frame was dropped for backlog: the channel's recovery ladder should hear of it. */
  readonly onBacklogDrop: (channelId: number) => void;
}

/**
 * One session's video send path. Frames are packed once for every session; each datagram is
 * stamped with its send time as it leaves this session's queue (the transport copies it
 * synchronously), so the pilot sees send times.
 */
export class VideoSend {
  readonly #options: VideoSendOptions;
  readonly #session: Session;
  readonly #clock: Clock;
  readonly #queue: PacedSendQueue;
  readonly #sent = new Map<number, ChannelSend>();
  #profile: QosProfile;
  /** Transport-sent byte count at which the latest keyframe will have left, and its size. */
  #keyframeDue = { at: 0, bytes: 0 };
  /** The replay at join whose burst live frames join while it drains: {@link REPLAY_FOLLOW_GRACE_MS}. */
  #replayDrain: ReplayDrain | undefined;
  /** Smoothed RTT samples of the last {@link MIN_RTT_WINDOW_MS}, lowest first (a monotonic queue). */
  readonly #rttWindow: { at: number; rtt: number }[] = [];
  #pacedAt = Number.NEGATIVE_INFINITY;

  constructor(options: VideoSendOptions) {
    this.#options = options;
    this.#session = options.session;
    this.#clock = options.clock;
    this.#profile = options.profile;
    const session = options.session;
    const clock = options.clock;
    this.#queue = new PacedSendQueue({
      send: (d) => {
        stampSenderTimestamp(d, wrapU32(clock.now() * 1000));
        return session.sendDatagram(d);
      },
      rateBps: MIN_PACING_BPS,
      burstBytes: PACING_BURST_BYTES,
      clock,
    });
  }

  /** The driver changed the profile: every channel's admission follows it. */
  setProfile(profile: QosProfile): void {
    this.#profile = profile;
    for (const [id, send] of this.#sent) send.admission = this.#admission(id);
  }

  /**
   * The pilot reported `framesLost` frames lost on `channelId` (its `loss` line): returns how
   * many of them the network lost, net of the frames this session dropped itself.
   */
  lossReported(channelId: number, framesLost: number, chunkLoss: number): number {
    const send = this.#sent.get(channelId);
    if (send === undefined) return framesLost;
    const explained = Math.min(framesLost, send.dropsUnreported);
    send.dropsUnreported -= explained;
    const lost = framesLost - explained;
    send.period.framesLost += lost;
    send.period.chunkLoss = Math.max(send.period.chunkLoss, chunkLoss);
    return lost;
  }

  /** Stops sending: what is queued is dropped, later frames are refused. */
  close(): void {
    this.#queue.close();
  }

  /**
   * The session's measurements of `channelId` since the previous call: see
   * `PilotSession.qosSample`.
   */
  qosSample(channelId: number, now: number): AbrSample {
    const send = this.#sent.get(channelId);
    const path = this.#session.stats();
    const rtt = Math.min(send?.period.rttMin ?? Number.POSITIVE_INFINITY, path.rttMs);
    const minRttMs = this.#minRtt(rtt, now);
    if (send === undefined) {
      return {
        smoothedRttMs: rtt,
        minRttMs,
        deliveryRateKbps: 0,
        packetsSent: 0,
        packetsLost: 0,
        backlogDrops: 0,
        pilotChunkLoss: 0,
        unrecoveredFrames: 0,
      };
    }
    const sample: AbrSample = {
      smoothedRttMs: rtt,
      minRttMs,
      deliveryRateKbps: path.deliveryRateBps / 1000 / Math.max(1, this.#sent.size),
      packetsSent: Math.max(0, path.sentPackets - send.last.sentPackets),
      packetsLost: Math.max(0, path.lostPackets - send.last.lostPackets),
      backlogDrops: send.period.backlogDrops,
      pilotChunkLoss: send.period.chunkLoss,
      unrecoveredFrames: send.period.framesLost,
    };
    send.last = { sentPackets: path.sentPackets, lostPackets: path.lostPackets };
    send.period = { backlogDrops: 0, framesLost: 0, chunkLoss: 0, rttMin: Number.POSITIVE_INFINITY };
    return sample;
  }

  /** Each video channel's counters for `agent-stats`, with its rate controller's fields. */
  agentStats(
    qos: ReadonlyMap<number, ChannelQos> | undefined,
  ): Record<string, Record<string, number | string>> {
    const channels: Record<string, Record<string, number | string>> = {};
    const s = this.#session.stats();
    const queued = this.#queue.occupancy.bytes;
    const transportQueued = this.#session.queuedDatagramBytes();
    for (const [id, counts] of this.#sent) {
      const channelQos = qos?.get(id);
      const channel = this.#options.channels.find((c) => c.config.id === id);
      const admission = counts.admission.stats;
      channels[String(id)] = {
        frames_sent: counts.frames,
        frames_skipped: counts.skipped,
        frames_refused: counts.refused,
        frames_replayed: counts.replayed,
        frames_dropped_backlog: counts.droppedBacklog,
        frames_dropped_waiting: counts.droppedWaiting,
        keyframes_over_backlog: admission.keyframesOverThreshold,
        queue_bytes: queued,
        transport_queue_bytes: transportQueued,
        pacing_kbps: Math.round(this.#queue.rateBps / 1000),
        rtt_ms: s.rttMs,
        cwnd_bytes: s.cwndBytes,
        delivery_rate_kbps: Math.round(s.deliveryRateBps / 1000),
        sent_packets: s.sentPackets,
        lost_packets: s.lostPackets,
        ...(channel !== undefined && { source_state: channel.sourceStatus.state }),
        ...channelQos?.agentStats(),
        ...(channelQos !== undefined &&
          channelQos.channel.layers.length > 0 && { layer: channelQos.channel.layerIndex }),
      };
    }
    return channels;
  }

  /**
   * The session's subscriber to `channel`: it queues `replay` at once (the latest keyframe and
   * what followed), then every live frame the admission lets through; without a replay it starts
   * at the next keyframe.
   */
  subscriber(channel: VideoChannel, replay: readonly PackedFrame[] | undefined): FrameSubscriber {
    const id = channel.config.id;
    const path = this.#session.stats();
    const counts: ChannelSend = {
      frames: 0,
      skipped: 0,
      refused: 0,
      replayed: 0,
      droppedBacklog: 0,
      droppedWaiting: 0,
      admission: this.#admission(id),
      period: { backlogDrops: 0, framesLost: 0, chunkLoss: 0, rttMin: Number.POSITIVE_INFINITY },
      dropsUnreported: 0,
      last: { sentPackets: path.sentPackets, lostPackets: path.lostPackets },
    };
    this.#sent.set(id, counts);
    let started = false;
    if (replay !== undefined && replay.length > 0) {
      this.#pace(channel);
      // The replay is a chain from its keyframe: after a refused frame the rest is useless, and
      // the live stream starts at the next keyframe instead.
      for (const [index, frame] of replay.entries()) {
        if (!this.#enqueue(frame, index === 0, true)) {
          counts.refused++;
          break;
        }
        counts.replayed++;
      }
      started = counts.replayed === replay.length;
      // A replay is not congestion: the live frames that arrive while it drains wait behind it
      // and are part of the same burst (the pilot shows every one of them).
      this.#replayDrain = { startedAt: this.#clock.now(), sentAtStart: this.#wire().sent, followed: 0 };
    }
    return {
      maxDatagramBytes: () => this.#session.maxDatagramBytes(),
      handleFrame: (frame: PackedFrame, keyframe: boolean) => {
        started ||= keyframe;
        if (!started) {
          counts.skipped++;
          return;
        }
        const now = this.#clock.now();
        if (keyframe || now - this.#pacedAt >= PACING_UPDATE_MS) this.#pace(channel);
        const wire = this.#wire();
        // Behind a replay the path is draining: part of its burst, not backlog.
        const drain = this.#drainingReplay(wire, now);
        const verdict = counts.admission.admit({ keyframe, bytes: frame.bytes }, this.#backlog(wire), now);
        if (verdict === 'drop') {
          counts.dropsUnreported++;
          if (counts.admission.waitStarted) {
            counts.droppedBacklog++;
            counts.period.backlogDrops++;
            this.#options.onBacklogDrop(id);
          } else {
            counts.droppedWaiting++;
          }
          return;
        }
        if (this.#enqueue(frame, keyframe, keyframe || drain !== undefined)) {
          counts.frames++;
          if (drain !== undefined) drain.followed += frame.bytes;
        } else {
          counts.refused++;
        }
      },
    };
  }

  /**
   * The replay at join, while live frames still join its burst ({@link REPLAY_FOLLOW_GRACE_MS});
   * `undefined`, for good, once it is on the wire or the path does not keep up with it.
   */
  #drainingReplay(wire: { sent: number }, now: number): ReplayDrain | undefined {
    const drain = this.#replayDrain;
    if (drain === undefined) return undefined;
    const elapsed = now - drain.startedAt;
    const keepingUp = elapsed <= REPLAY_FOLLOW_GRACE_MS || wire.sent - drain.sentAtStart > drain.followed;
    if (this.#burstLeft(wire.sent) > 0 && keepingUp && elapsed <= REPLAY_FOLLOW_MAX_MS) return drain;
    this.#replayDrain = undefined;
    return undefined;
  }

  /** Delta admission of `channelId` under the session's profile. */
  #admission(channelId: number): DeltaAdmission {
    const channel = this.#options.channels.find((c) => c.config.id === channelId);
    return new DeltaAdmission({
      profile: this.#profile,
      fps: channel?.config.fps ?? 30,
      maxBitrateKbps: channel?.config.max_bitrate_kbps ?? 0,
    });
  }

  /**
   * Queues one frame. The bytes of a `burst` (a keyframe, any frame of the replay at join, or a
   * live frame queued behind a replay the path is draining) are remembered, added to what is
   * left of the previous burst, so they do not count as backlog.
   */
  #enqueue(frame: PackedFrame, keyframe: boolean, burst = keyframe): boolean {
    if (burst) {
      const wire = this.#wire();
      this.#keyframeDue = {
        at: wire.sent + wire.queued + frame.bytes,
        bytes: this.#burstLeft(wire.sent) + frame.bytes,
      };
    }
    return this.#queue.enqueueFrame(frame.datagrams, keyframe);
  }

  /** Bytes of the latest burst not yet on the wire, when `wireSent` bytes have gone. */
  #burstLeft(wireSent: number): number {
    return Math.min(this.#keyframeDue.bytes, Math.max(0, this.#keyframeDue.at - wireSent));
  }

  /**
   * Bytes waiting to go on the wire (this session's paced queue and the transport's datagram
   * queue), less what is left of the latest burst: a keyframe, or the replay at join with the live
   * frames that queued behind it while the path drained it. A burst is expected, never
   * dropped; what waits beyond it is backlog.
   */
  #backlog(wire = this.#wire()): number {
    return Math.max(0, wire.queued - this.#burstLeft(wire.sent));
  }

  /**
   * What this session has put on the wire (handed to the transport, less the transport's queue)
   * and what waits for it (its paced queue and the transport's queue), in bytes; the transport's
   * queue is read once.
   */
  #wire(): { sent: number; queued: number } {
    const transportQueued = this.#session.queuedDatagramBytes();
    return {
      sent: this.#queue.stats.sentBytes - transportQueued,
      queued: this.#queue.occupancy.bytes + transportQueued,
    };
  }

  /** The lowest smoothed RTT of the last {@link MIN_RTT_WINDOW_MS}, with `rtt` measured at `now`. */
  #minRtt(rtt: number, now: number): number {
    const window = this.#rttWindow;
    while (window.length > 0 && window[window.length - 1]!.rtt >= rtt) window.pop();
    window.push({ at: now, rtt });
    while (window[0]!.at <= now - MIN_RTT_WINDOW_MS) window.shift();
    return window[0]!.rtt;
  }

  /**
   * Sets the pacing rate (before each keyframe, and every {@link PACING_UPDATE_MS}) from the
   * stream's bitrate and the path: fast enough that a frame leaves well within a frame time, and
   * as fast as the congestion controller judges the path (its window per round trip, or what it
   * has measured delivered). On a short fast path (loopback, a LAN) a keyframe leaves at once; on
   * a long or slow one it is spread.
   */
  #pace(channel: VideoChannel): void {
    this.#pacedAt = this.#clock.now();
    const path = this.#session.stats();
    for (const send of this.#sent.values()) send.period.rttMin = Math.min(send.period.rttMin, path.rttMs);
    const delivered = path.deliveryRateBps * PACING_GAIN;
    const perRoundTrip = ((path.cwndBytes * 8000) / Math.max(path.rttMs, MIN_PACING_RTT_MS)) * PACING_GAIN;
    this.#queue.setRate(
      Math.max(MIN_PACING_BPS, channel.stats.bitrateBps * PACING_HEADROOM, delivered, perRoundTrip),
    );
  }
}
