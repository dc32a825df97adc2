import type { Logger } from '@svc/media';
import type { QosProfile } from '@svc/qos';
import { PacedSendQueue, type Session } from '@svc/transport';
import {
  ControlLineReader,
  type ControlMessage,
  encodeControlMessage,
  type PackedFrame,
  stampSenderTimestamp,
  WireError,
  wrapU32,
} from '@svc/wire';
import { daemonClockMs } from './clock.js';
import type { FrameSubscriber, VideoChannel } from './video-channel.js';

/** Options of {@link PilotSession}. */
export interface PilotSessionOptions {
  readonly session: Session;
  readonly channels: readonly VideoChannel[];
  readonly profile: QosProfile;
  readonly logger: Logger;
  /** Development mode: any `hello` token is accepted (there is no signalling yet to mint one). */
  readonly acceptAnyToken: boolean;
  /** Clock in ms, the clock of the chunk sender timestamps (default {@link daemonClockMs}). */
  readonly now?: () => number;
}

/** The pacing rate never goes below this (bits/s), so a keyframe leaves within a few frame times. */
const MIN_PACING_BPS = 12_000_000;
/** Pacing runs at least this many times faster than the stream's own bitrate. */
const PACING_HEADROOM = 3;
/** And at this multiple of what the path has shown it delivers (the congestion controller's view). */
const PACING_GAIN = 1.25;
/** Bytes that may leave back to back: a typical delta frame goes at once, a keyframe is spread. */
const PACING_BURST_BYTES = 32 * 1024;

/**
 * The robot's side of one pilot session: the control-stream handshake, then every video channel's
 * frames through a paced send queue, starting at the next keyframe; `ping`/`pong` for the pilot's
 * clock offset and `agent-stats` once a second.
 */
export class PilotSession {
  readonly #options: PilotSessionOptions;
  readonly #session: Session;
  readonly #reader = new ControlLineReader();
  readonly #queue: PacedSendQueue;
  readonly #unsubscribe: (() => void)[] = [];
  readonly #sent = new Map<number, { frames: number; skipped: number; refused: number }>();
  readonly #now: () => number;
  #welcomed = false;
  #statsTimer: ReturnType<typeof setInterval> | undefined;

  constructor(options: PilotSessionOptions) {
    this.#options = options;
    this.#session = options.session;
    this.#now = options.now ?? daemonClockMs;
    this.#queue = new PacedSendQueue({
      // Frames are packed once for every session; each datagram is stamped as it leaves this
      // session's queue (the transport copies it synchronously), so the pilot sees send times.
      send: (d) => {
        stampSenderTimestamp(d, wrapU32(this.#now() * 1000));
        return this.#session.sendDatagram(d);
      },
      rateBps: MIN_PACING_BPS,
      burstBytes: PACING_BURST_BYTES,
    });
    this.#session.setHandlers({
      onControlData: (bytes) => this.#control(bytes),
      onClose: (info) => {
        this.#stop();
        options.logger.info(
          { session: this.#session.id, code: info.code, reason: info.reason, by: info.by },
          'pilot session ended',
        );
      },
    });
  }

  #control(bytes: Uint8Array): void {
    for (const message of this.#reader.push(bytes)) {
      if (message instanceof WireError) {
        this.#options.logger.warn({ session: this.#session.id, code: message.code }, message.message);
        continue;
      }
      this.#handle(message);
    }
  }

  #handle(message: ControlMessage): void {
    if (!this.#welcomed && message.type !== 'hello') {
      this.#options.logger.warn(
        { session: this.#session.id, type: message.type },
        'control message before hello; ignored',
      );
      return;
    }
    switch (message.type) {
      case 'hello':
        this.#hello();
        return;
      case 'ping':
        this.#send({ type: 'pong', t: message.t, robot_time: this.#now() });
        return;
      case 'request-keyframe':
        // Publisher control (recovery requests) arrives with the QoS issue; until then the next
        // natural keyframe serves.
        this.#options.logger.debug(
          { session: this.#session.id, channel: message.channel },
          'pilot asked for a keyframe',
        );
        return;
      case 'bye':
        this.#session.close(0, message.reason ?? 'bye');
        return;
      default:
        return; // loss, set-qos, pilot-stats: consumed by the QoS controller when it lands
    }
  }

  #hello(): void {
    if (this.#welcomed) return;
    if (!this.#options.acceptAnyToken) {
      // Token verification arrives with signalling (ES256 pilot session tokens); refuse until then.
      this.#send({
        type: 'denied',
        reason: 'pilot session tokens are not verified yet; run svcd with --dev',
      });
      this.#session.close(1, 'denied');
      return;
    }
    this.#welcomed = true;
    const channels = this.#options.channels.map((c) => ({
      id: c.config.id,
      name: c.config.name,
      kind: 'video' as const,
      codec: c.config.codec,
    }));
    this.#send({
      type: 'welcome',
      session_id: this.#session.id,
      role: 'driver',
      channels,
      qos: {
        profile: this.#options.profile.name,
        presentation_delay_ms: this.#options.profile.presentationDelayMs,
      },
    });
    for (const channel of this.#options.channels)
      this.#unsubscribe.push(channel.subscribe(this.#subscriber(channel)));
    this.#statsTimer = setInterval(() => this.#stats(), 1000);
    this.#statsTimer.unref();
  }

  #subscriber(channel: VideoChannel): FrameSubscriber {
    const counts = { frames: 0, skipped: 0, refused: 0 };
    this.#sent.set(channel.config.id, counts);
    let started = false;
    return {
      handleFrame: (frame: PackedFrame, keyframe: boolean) => {
        started ||= keyframe;
        if (!started) {
          counts.skipped++;
          return;
        }
        if (keyframe) this.#pace(channel);
        if (this.#queue.enqueueFrame(frame.datagrams, keyframe)) counts.frames++;
        else counts.refused++;
      },
    };
  }

  /**
   * Sets the pacing rate from the stream's bitrate and the path's delivery rate: fast enough that
   * a frame leaves well within a frame time, never a burst bigger than the path has carried.
   */
  #pace(channel: VideoChannel): void {
    const delivered = this.#session.stats().deliveryRateBps * PACING_GAIN;
    this.#queue.setRate(Math.max(MIN_PACING_BPS, channel.stats.bitrateBps * PACING_HEADROOM, delivered));
  }

  #stats(): void {
    const channels: Record<string, Record<string, number>> = {};
    const s = this.#session.stats();
    for (const [id, counts] of this.#sent) {
      channels[String(id)] = {
        frames_sent: counts.frames,
        frames_skipped: counts.skipped,
        frames_refused: counts.refused,
        queue_bytes: this.#queue.occupancy.bytes,
        rtt_ms: s.rttMs,
        lost_packets: s.lostPackets,
      };
    }
    this.#send({ type: 'agent-stats', channels });
  }

  #send(message: ControlMessage): void {
    this.#session.writeControl(encodeControlMessage(message));
  }

  #stop(): void {
    clearInterval(this.#statsTimer);
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#queue.close();
  }
}
