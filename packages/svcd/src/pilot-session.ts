import { type AbrSample, DeltaAdmission, type QosProfile, type QosProfileName } from '@svc/qos';
import type { Logger } from '@svc/runtime';
import { PacedSendQueue, type Session } from '@svc/transport';
import {
  type ControlCatchUp,
  type ControlChannel,
  ControlLineReader,
  type ControlMessage,
  type ControlRole,
  encodeControlMessage,
  type PackedFrame,
  peekChannel,
  stampSenderTimestamp,
  WireError,
  wrapU32,
} from '@svc/wire';
import type { ChannelQos, SessionQosProbe } from './channel-qos.js';
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
  /** The profile in force when the session opens; {@link PilotSession.profileChanged} moves it. */
  readonly profile: QosProfile;
  /** Each video channel's rate controller, by channel id: the session feeds its measurements. */
  readonly qos?: ReadonlyMap<number, ChannelQos>;
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
  /**
   * The send path dropped a delta frame for backlog and stopped the channel's deltas until a
   * recovery point: the channel's recovery ladder should hear of it.
   */
  readonly onBacklogDrop?: (channelId: number) => void;
  /** The driver asked for another QoS profile (`set-qos`). */
  readonly onProfileRequest?: (profile: QosProfileName, sessionId: string) => void;
  /** The session ended (after its own cleanup). */
  readonly onClose?: () => void;
}

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
/** The minimum RTT is the lowest smoothed RTT seen over this window (quiche gives no minimum), ms. */
const MIN_RTT_WINDOW_MS = 10_000;

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
export class PilotSession implements SessionQosProbe {
  readonly #options: PilotSessionOptions;
  readonly #session: Session;
  readonly #reader = new ControlLineReader();
  readonly #queue: PacedSendQueue;
  readonly #unsubscribe: (() => void)[] = [];
  readonly #sent = new Map<number, ChannelSend>();
  #profile: QosProfile;
  /** Transport-sent byte count at which the latest keyframe will have left, and its size. */
  #keyframeDue = { at: 0, bytes: 0 };
  /** Smoothed RTT samples of the last {@link MIN_RTT_WINDOW_MS}, lowest first (a monotonic queue). */
  readonly #rttWindow: { at: number; rtt: number }[] = [];
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
    this.#profile = options.profile;
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
        options.onClose?.();
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

  /** The session's role (an observer until admitted). */
  get role(): ControlRole {
    return this.#open?.role ?? 'observer';
  }

  /** The driver changed the profile: this session's admission follows it and the pilot hears of it. */
  profileChanged(profile: QosProfile): void {
    this.#profile = profile;
    if (!this.#welcomed || this.#ended) return;
    for (const [id, send] of this.#sent) send.admission = this.#admission(id);
    this.#send({ type: 'qos', profile: profile.name, presentation_delay_ms: profile.presentationDelayMs });
  }

  /**
   * This session's measurements of `channelId` since the previous call (for the channel's rate
   * controller): the path's RTT and delivery rate (shared evenly between the video channels),
   * QUIC packets sent and lost, frames dropped for backlog, and the pilot's `loss` reports (net
   * of the frames this session dropped itself).
   *
   * The RTT is the lowest smoothed RTT seen over the period (it is read with every pacing update,
   * about ten times a second): a standing queue keeps it high all period, while the queue a
   * keyframe makes for a moment does not count as congestion.
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
      case 'loss': {
        const send = this.#sent.get(message.channel);
        let framesLost = message.frames_lost;
        if (send !== undefined) {
          const explained = Math.min(framesLost, send.dropsUnreported);
          send.dropsUnreported -= explained;
          framesLost -= explained;
          send.period.framesLost += framesLost;
          send.period.chunkLoss = Math.max(send.period.chunkLoss, message.chunk_loss);
        }
        if (framesLost > 0 && this.#options.channels.some((c) => c.config.id === message.channel)) {
          try {
            this.#options.onLossReported?.(message.channel, framesLost, message.chunk_loss);
          } catch (err) {
            this.#options.logger.error({ err: String(err), channel: message.channel }, 'loss report failed');
          }
        }
        return;
      }
      case 'set-qos':
        this.#setQos(message.profile);
        return;
      case 'bye':
        this.#session.close(0, message.reason ?? 'bye');
        return;
      default:
        return; // pilot-stats: informative; the pilot's `loss` lines carry what the loop needs
    }
  }

  #setQos(profile: QosProfileName): void {
    if (this.#open?.role !== 'driver') {
      this.#options.logger.warn(
        { session: this.#session.id, profile },
        'an observer asked for another QoS profile; only the driver may change it',
      );
      return;
    }
    if (profile === this.#profile.name) return;
    this.#options.logger.info(
      { session: this.#session.id, from: this.#profile.name, to: profile },
      'the driver changed the QoS profile',
    );
    try {
      this.#options.onProfileRequest?.(profile, this.#open.sessionId);
    } catch (err) {
      this.#options.logger.error({ err: String(err), profile }, 'changing the QoS profile failed');
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
        profile: this.#profile.name,
        presentation_delay_ms: this.#profile.presentationDelayMs,
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
      const qos = this.#options.qos?.get(channel.config.id);
      if (qos !== undefined) this.#unsubscribe.push(qos.attach(this));
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
   * what followed), then every live frame the admission lets through; without a replay it starts
   * at the next keyframe.
   */
  #subscriber(channel: VideoChannel, replay: readonly PackedFrame[] | undefined): FrameSubscriber {
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
    }
    return {
      maxDatagramBytes: () => this.#session.maxDatagramBytes(),
      handleFrame: (frame: PackedFrame, keyframe: boolean) => {
        started ||= keyframe;
        if (!started) {
          counts.skipped++;
          return;
        }
        const now = this.#now();
        if (keyframe || now - this.#pacedAt >= PACING_UPDATE_MS) this.#pace(channel);
        const verdict = counts.admission.admit({ keyframe, bytes: frame.bytes }, this.#backlog(), now);
        if (verdict === 'drop') {
          counts.dropsUnreported++;
          if (counts.admission.waitStarted) {
            counts.droppedBacklog++;
            counts.period.backlogDrops++;
            this.#backlogDrop(id);
          } else {
            counts.droppedWaiting++;
          }
          return;
        }
        if (this.#enqueue(frame, keyframe)) counts.frames++;
        else counts.refused++;
      },
    };
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

  #backlogDrop(channelId: number): void {
    try {
      this.#options.onBacklogDrop?.(channelId);
    } catch (err) {
      this.#options.logger.error({ err: String(err), channel: channelId }, 'backlog drop report failed');
    }
  }

  /**
   * Queues one frame. The bytes of a `burst` (a keyframe, or any frame of the replay at join) are
   * remembered, added to what is left of the previous burst, so they do not count as backlog.
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
   * queue), less what is left of the latest keyframe (and of the replay at join): an expected
   * burst, never dropped, and the deltas behind it are not backlog while the path drains it.
   */
  #backlog(): number {
    const wire = this.#wire();
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
   * Sets the pacing rate (before each keyframe, and every {@link PACING_UPDATE_MS}) from the stream's bitrate and the path: fast enough
   * that a frame leaves well within a frame time, and as fast as the congestion controller
   * judges the path (its window per round trip, or what it has measured delivered). On a short
   * fast path (loopback, a LAN) a keyframe leaves at once; on a long or slow one it is spread.
   */
  #pace(channel: VideoChannel): void {
    this.#pacedAt = this.#now();
    const path = this.#session.stats();
    for (const send of this.#sent.values()) send.period.rttMin = Math.min(send.period.rttMin, path.rttMs);
    const delivered = path.deliveryRateBps * PACING_GAIN;
    const perRoundTrip = ((path.cwndBytes * 8000) / Math.max(path.rttMs, MIN_PACING_RTT_MS)) * PACING_GAIN;
    this.#queue.setRate(
      Math.max(MIN_PACING_BPS, channel.stats.bitrateBps * PACING_HEADROOM, delivered, perRoundTrip),
    );
  }

  #stats(): void {
    const channels: Record<string, Record<string, number | string>> = {};
    const s = this.#session.stats();
    const queued = this.#queue.occupancy.bytes;
    const transportQueued = this.#session.queuedDatagramBytes();
    for (const [id, counts] of this.#sent) {
      const qos = this.#options.qos?.get(id);
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
        ...qos?.agentStats(),
        ...(qos !== undefined && qos.channel.layers.length > 0 && { layer: qos.channel.layerIndex }),
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
