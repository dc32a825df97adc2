import type { Logger } from '@svc/media';
import type { QosProfile } from '@svc/qos';
import { PacedSendQueue, type Session } from '@svc/transport';
import {
  type ControlCatchUp,
  type ControlChannel,
  ControlLineReader,
  type ControlMessage,
  encodeControlMessage,
  type PackedFrame,
  peekChannel,
  stampSenderTimestamp,
  WireError,
  wrapU32,
} from '@svc/wire';
import { daemonClockMs } from './clock.js';
import type { CommandChannel, CommandInbox } from './command-channel.js';
import type { SensorChannel } from './sensor-channel.js';
import type {
  AcceptedGrant,
  AuthorizeSession,
  OpenSession,
  SessionGrant,
  SessionRegistry,
} from './session-registry.js';
import type { FrameSubscriber, VideoChannel } from './video-channel.js';

/** Options of {@link PilotSession}. */
export interface PilotSessionOptions {
  readonly session: Session;
  /** Video channels. */
  readonly channels: readonly VideoChannel[];
  /** Sensor channels: their messages go to the session once it is welcomed. */
  readonly sensors?: readonly SensorChannel[];
  /** Command channels: the session's commands reach their outputs when it drives. */
  readonly commands?: readonly CommandChannel[];
  /** The robot's sessions: limit, driver slot, token reuse and revocation. */
  readonly registry: SessionRegistry;
  /**
   * Checks the `hello` token (the pilot session token verifier). A rejected promise denies the
   * session.
   */
  readonly authorize: AuthorizeSession;
  readonly profile: QosProfile;
  readonly logger: Logger;
  /** Clock in ms, the clock of the chunk sender timestamps (default {@link daemonClockMs}). */
  readonly now?: () => number;
  /**
   * How long a session the robot ends (`denied`, or `bye` on revocation) stays open after the
   * reason was written, in ms (default 0: closed at once). A browser drops what it has not yet
   * read of a stream when the session closes, and the close travels on another stream than the
   * control line, so an immediate close can swallow the reason; the pilot closes the session
   * itself on reading it, this is the bound. Media and commands stop at once.
   */
  readonly closeGraceMs?: number;
  /**
   * A video channel needs a recovery point from the publisher: a session joined (`join`) or the
   * pilot sent `request-keyframe` (`pilot-request`). The caller rate-limits per channel.
   */
  readonly onRecoveryNeeded?: (channelId: number, reason: 'join' | 'pilot-request') => void;
  /** The pilot reported frames it gave up on a video channel (its `loss` line, frames lost > 0). */
  readonly onLossReported?: (channelId: number, framesLost: number, chunkLoss: number) => void;
}

/** Session-wide datagram counters, reported in `agent-stats` under channel key `"0"`. */
export interface PilotSessionDatagramStats {
  /** Datagrams shorter than a chunk header or otherwise unreadable. */
  datagrams_malformed: number;
  /** Datagrams on a channel id that is not a command channel of this robot. */
  datagrams_unknown_channel: number;
  /** Datagrams that arrived before the session was welcomed. */
  datagrams_before_welcome: number;
  /** Sensor datagrams the transport refused (its queue was full). */
  sensor_datagrams_refused: number;
}

/** Longest `denied`/`bye` reason the control schema takes. */
const MAX_REASON_CHARS = 256;
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

/**
 * The robot's side of one pilot session: the control-stream handshake (`hello` checked by the
 * injected `authorize`, then admitted by the {@link SessionRegistry}, which decides the role),
 * then every video channel's frames through a paced send queue, starting at the next keyframe;
 * sensor messages as they come; the session's command datagrams reassembled and, for a driver,
 * written to the command outputs; `ping`/`pong` for the pilot's clock offset and `agent-stats`
 * once a second.
 *
 * Sensor datagrams go straight to `sendDatagram`, not through the paced queue: they are small and
 * must not wait behind a keyframe, and the queue never tears a video frame whatever else is sent
 * (its frames stay whole and in order; other channels' datagrams between them are reassembled
 * separately). A sensor datagram the transport refuses is counted; parity covers a single loss.
 */
export class PilotSession {
  readonly #options: PilotSessionOptions;
  readonly #session: Session;
  readonly #reader = new ControlLineReader();
  readonly #queue: PacedSendQueue;
  readonly #unsubscribe: (() => void)[] = [];
  readonly #sent = new Map<number, { frames: number; skipped: number; refused: number; replayed: number }>();
  readonly #now: () => number;
  readonly #inboxes = new Map<number, CommandInbox>();
  readonly #datagramStats: PilotSessionDatagramStats = {
    datagrams_malformed: 0,
    datagrams_unknown_channel: 0,
    datagrams_before_welcome: 0,
    sensor_datagrams_refused: 0,
  };
  #helloSeen = false;
  #pacedAt = Number.NEGATIVE_INFINITY;
  #welcomed = false;
  #ended = false;
  #open: OpenSession | undefined;
  #statsTimer: ReturnType<typeof setInterval> | undefined;
  #closeTimer: ReturnType<typeof setTimeout> | undefined;

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
      onDatagram: (datagram) => this.#datagram(datagram),
      onClose: (info) => {
        this.#stop(info.reason);
        options.logger.info(
          { session: this.#session.id, code: info.code, reason: info.reason, by: info.by },
          'pilot session ended',
        );
      },
    });
  }

  /** The session as the registry admitted it (role, id); `undefined` until welcomed. */
  get admitted(): OpenSession | undefined {
    return this.#open;
  }

  /** Counters per command channel id, plus the session-wide ones under `0`. */
  commandStats(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = { '0': { ...this.#datagramStats } };
    for (const [id, inbox] of this.#inboxes) out[String(id)] = { ...inbox.stats };
    return out;
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
        'control message before the session was welcomed; ignored',
      );
      return;
    }
    switch (message.type) {
      case 'hello':
        this.#hello(message);
        return;
      case 'ping':
        this.#send({ type: 'pong', t: message.t, robot_time: this.#now() });
        return;
      case 'request-keyframe':
        this.#options.logger.debug(
          { session: this.#session.id, channel: message.channel },
          'pilot asked for a keyframe',
        );
        if (this.#options.channels.some((c) => c.config.id === message.channel))
          this.#recoveryNeeded(message.channel, 'pilot-request');
        return;
      case 'loss':
        if (message.frames_lost > 0 && this.#options.channels.some((c) => c.config.id === message.channel)) {
          try {
            this.#options.onLossReported?.(message.channel, message.frames_lost, message.chunk_loss);
          } catch (err) {
            this.#options.logger.error({ err: String(err), channel: message.channel }, 'loss report failed');
          }
        }
        return;
      case 'bye':
        this.#session.close(0, message.reason ?? 'bye');
        return;
      default:
        return; // set-qos, pilot-stats: consumed by the QoS controller when it lands
    }
  }

  #hello(hello: Extract<ControlMessage, { type: 'hello' }>): void {
    if (this.#helloSeen) return;
    this.#helloSeen = true;
    const request =
      hello.session_id === undefined
        ? { token: hello.token }
        : { token: hello.token, sessionId: hello.session_id };
    let pending: Promise<SessionGrant>;
    try {
      pending = this.#options.authorize(request);
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      (grant) => this.#admit(grant),
      (err: unknown) => {
        // The message of a verifier's error may quote what it was given: log only its kind.
        this.#options.logger.error(
          { session: this.#session.id, err: err instanceof Error ? err.name : typeof err },
          'checking the pilot session token failed',
        );
        this.#deny('the robot could not check the token; try again');
      },
    );
  }

  #admit(grant: SessionGrant): void {
    if (this.#ended || this.#session.closed) return;
    if (!grant.ok) {
      this.#deny(grant.reason);
      return;
    }
    const sessionId = grant.sessionId ?? this.#session.id;
    const admission = this.#options.registry.admit({
      sessionId,
      grant,
      close: (reason) => this.#revoked(reason),
    });
    if (!admission.ok) {
      this.#deny(admission.reason);
      return;
    }
    this.#open = admission.session;
    this.#welcome(admission.session, grant);
  }

  #deny(reason: string): void {
    if (this.#session.closed) return;
    this.#options.logger.info({ session: this.#session.id, reason }, 'pilot session denied');
    this.#endWith({ type: 'denied', reason: reason.slice(0, MAX_REASON_CHARS) }, 1, 'denied');
  }

  #revoked(reason: string): void {
    if (this.#session.closed) return;
    this.#options.logger.info({ session: this.#session.id, reason }, 'pilot session revoked');
    this.#endWith({ type: 'bye', reason: reason.slice(0, MAX_REASON_CHARS) }, 0, reason);
  }

  /** Writes why the robot ends the session, stops media and commands, and closes after the grace. */
  #endWith(message: ControlMessage, code: number, closeReason: string): void {
    if (this.#closeTimer !== undefined) return;
    this.#send(message);
    this.#inboxes.clear();
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    const delay = this.#options.closeGraceMs ?? 0;
    if (delay <= 0) {
      this.#session.close(code, closeReason);
      return;
    }
    this.#closeTimer = setTimeout(() => this.#session.close(code, closeReason), delay);
    this.#closeTimer.unref?.();
  }

  #welcome(open: OpenSession, grant: AcceptedGrant): void {
    this.#welcomed = true;
    const { sensors = [], commands = [] } = this.#options;
    const channels: ControlChannel[] = [...this.#options.channels, ...sensors, ...commands]
      .map(({ config }) => ({ id: config.id, name: config.name, kind: config.kind, codec: config.codec }))
      .sort((a, b) => a.id - b.id);
    // What each video channel replays to this session; taken now, with `welcome`, so the frames
    // named there are exactly those queued below, before any live frame.
    const replays = this.#options.channels.map((channel) => ({ channel, catchUp: channel.catchUp() }));
    const catchUp: ControlCatchUp[] = replays.flatMap(({ channel, catchUp }) =>
      catchUp === undefined
        ? []
        : [
            {
              channel: channel.config.id,
              last_frame: catchUp.lastFrameId,
              frames: catchUp.frames.length,
              live: catchUp.live,
            },
          ],
    );
    this.#send({
      type: 'welcome',
      session_id: open.sessionId,
      role: open.role,
      channels,
      qos: {
        profile: this.#options.profile.name,
        presentation_delay_ms: this.#options.profile.presentationDelayMs,
      },
      ...(catchUp.length > 0 && { catch_up: catchUp }),
    });
    this.#options.logger.info(
      {
        session: this.#session.id,
        session_id: open.sessionId,
        role: open.role,
        sub: grant.sub,
        scope: grant.scope,
      },
      'pilot session welcomed',
    );
    for (const command of commands) this.#inboxes.set(command.config.id, command.inbox(open.role));
    for (const { channel, catchUp } of replays) {
      const subscriber = this.#subscriber(channel, catchUp?.frames);
      this.#unsubscribe.push(channel.subscribe(subscriber));
      // The publisher is asked for a recovery point as well: the replay shows the current picture,
      // an IDR makes this session's stream independent of the replay (and is the only way to a
      // live picture when the replay was the keyframe alone, or when there was none).
      this.#recoveryNeeded(channel.config.id, 'join');
    }
    for (const sensor of sensors)
      this.#unsubscribe.push(sensor.subscribe({ handleSensorFrame: (frame) => this.#sendDirect(frame) }));
    this.#statsTimer = setInterval(() => this.#stats(), 1000);
    this.#statsTimer.unref();
  }

  #recoveryNeeded(channelId: number, reason: 'join' | 'pilot-request'): void {
    try {
      this.#options.onRecoveryNeeded?.(channelId, reason);
    } catch (err) {
      this.#options.logger.error({ err: String(err), channel: channelId }, 'recovery request failed');
    }
  }

  /** A sensor frame: its datagrams leave now, each stamped with its send time. */
  #sendDirect(frame: PackedFrame): void {
    for (const datagram of frame.datagrams) {
      stampSenderTimestamp(datagram, wrapU32(this.#now() * 1000));
      if (!this.#session.sendDatagram(datagram)) this.#datagramStats.sensor_datagrams_refused++;
    }
  }

  #datagram(datagram: Uint8Array): void {
    if (!this.#welcomed) {
      this.#datagramStats.datagrams_before_welcome++;
      return;
    }
    const channel = peekChannel(datagram);
    if (channel === undefined) {
      this.#datagramStats.datagrams_malformed++;
      return;
    }
    const inbox = this.#inboxes.get(channel);
    if (inbox === undefined) {
      this.#datagramStats.datagrams_unknown_channel++;
      return;
    }
    inbox.handleDatagram(datagram, this.#now());
  }

  /**
   * The session's subscriber to `channel`: it queues `replay` at once (the latest keyframe and
   * what followed), then every live frame; without a replay it starts at the next keyframe.
   */
  #subscriber(channel: VideoChannel, replay: readonly PackedFrame[] | undefined): FrameSubscriber {
    const counts = { frames: 0, skipped: 0, refused: 0, replayed: 0 };
    this.#sent.set(channel.config.id, counts);
    let started = false;
    if (replay !== undefined && replay.length > 0) {
      this.#pace(channel);
      // The replay is a chain from its keyframe: after a refused frame the rest is useless, and
      // the live stream starts at the next keyframe instead.
      for (const [index, frame] of replay.entries()) {
        if (!this.#queue.enqueueFrame(frame.datagrams, index === 0)) {
          counts.refused++;
          break;
        }
        counts.replayed++;
      }
      started = counts.replayed === replay.length;
    }
    return {
      maxDatagramBytes: () => this.#session.maxDatagramBytes(),
      handleFrame: (frame: PackedFrame, keyframe: boolean) => {
        started ||= keyframe;
        if (!started) {
          counts.skipped++;
          return;
        }
        if (keyframe || this.#now() - this.#pacedAt >= PACING_UPDATE_MS) this.#pace(channel);
        if (this.#queue.enqueueFrame(frame.datagrams, keyframe)) counts.frames++;
        else counts.refused++;
      },
    };
  }

  /**
   * Sets the pacing rate (before each keyframe, and every {@link PACING_UPDATE_MS}) from the stream's bitrate and the path: fast enough
   * that a frame leaves well within a frame time, and as fast as the congestion controller
   * judges the path (its window per round trip, or what it has measured delivered). On a short
   * fast path (loopback, a LAN) a keyframe leaves at once; on a long or slow one it is spread.
   */
  #pace(channel: VideoChannel): void {
    this.#pacedAt = this.#now();
    const path = this.#session.stats();
    const delivered = path.deliveryRateBps * PACING_GAIN;
    const perRoundTrip = ((path.cwndBytes * 8000) / Math.max(path.rttMs, MIN_PACING_RTT_MS)) * PACING_GAIN;
    this.#queue.setRate(
      Math.max(MIN_PACING_BPS, channel.stats.bitrateBps * PACING_HEADROOM, delivered, perRoundTrip),
    );
  }

  #stats(): void {
    const channels: Record<string, Record<string, number>> = {};
    const s = this.#session.stats();
    for (const [id, counts] of this.#sent) {
      channels[String(id)] = {
        frames_sent: counts.frames,
        frames_skipped: counts.skipped,
        frames_refused: counts.refused,
        frames_replayed: counts.replayed,
        queue_bytes: this.#queue.occupancy.bytes,
        rtt_ms: s.rttMs,
        lost_packets: s.lostPackets,
      };
    }
    Object.assign(channels, this.commandStats());
    this.#send({ type: 'agent-stats', channels });
  }

  #send(message: ControlMessage): void {
    this.#session.writeControl(encodeControlMessage(message));
  }

  #stop(reason: string): void {
    this.#ended = true;
    if (this.#open !== undefined) this.#options.registry.end(this.#open.sessionId, reason || 'closed');
    clearInterval(this.#statsTimer);
    clearTimeout(this.#closeTimer);
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#queue.close();
  }
}
