import { qosProfile } from '@svc/qos';
import type { Clock, Logger, TimerHandle, TypedEmitter } from '@svc/runtime';
import {
  type ControlCatchUp,
  type ControlChannel,
  type ControlMessage,
  type ControlRole,
  captureClockFromMs,
  FramePacker,
  peekChannel,
  Reassembler,
  WireError,
  wrapU32,
} from '@svc/wire';
import type { LossPolicy } from '../video/decoder.js';
import type { JitterTuning } from '../video/jitter.js';
import { type PlayerPaintReport, VideoChannelPlayer } from '../video/player.js';
import type { Link } from './link.js';
import type {
  PilotChannelStats,
  PilotConnectionEvents,
  PilotPictureState,
  PilotSourceState,
  QosProfileName,
} from './options.js';

/** The robot's `welcome`. */
export type Welcome = Extract<ControlMessage, { type: 'welcome' }>;

/**
 * Longest command {@link Session.sendCommand} takes (bytes; a string counts as its UTF-8 bytes).
 * The robot drops longer ones.
 */
export const MAX_COMMAND_BYTES = 16 * 1024;

/** Browser-to-server WebTransport datagrams are at most this long (Chromium). */
const MAX_OUTGOING_DATAGRAM_BYTES = 1199;
/** Each command block gets one parity chunk, so one lost datagram of a command is repaired. */
const COMMAND_PARITY = Object.freeze({ rate: 0, minPerBlock: 1 });
/** At most one keyframe request per channel this often (the robot rate-limits too). */
const KEYFRAME_REQUEST_INTERVAL_MS = 250;
/** Clock-offset pings: a burst of this many right after `welcome` (the first sent with it)... */
export const PING_BURST = 5;
/** ...this far apart... */
export const PING_BURST_INTERVAL_MS = 50;
/** ...then one this often. */
export const PING_INTERVAL_MS = 1000;
/** The robot is gone when no control line came for this many heartbeat periods. */
export const ROBOT_SILENCE_HEARTBEATS = 3;
/** `loss` and `pilot-stats` go to the robot this often (its rate controller runs once a second). */
const REPORT_INTERVAL_MS = 1000;
/** Reassembler deadlines are checked this often. */
const TICK_INTERVAL_MS = 20;

interface ChannelPlayback {
  readonly channel: ControlChannel;
  readonly player: VideoChannelPlayer;
  readonly reassembler: Reassembler;
  /** The picture state last told in a `picture` event. */
  picture: PilotPictureState['kind'];
  lastKeyframeRequest: number;
  /** Reassembler counters at the last `loss` report. */
  reported: { expected: number; arrived: number; framesLost: number };
}

interface CommandTarget {
  readonly channel: ControlChannel;
  readonly packer: FramePacker;
  /** Send time (robot clock, ms) of the last command stamped from the clock, kept increasing. */
  lastSentAtMs: number;
}

/** Options of `PilotConnection.sendCommand`. */
export interface SendCommandOptions {
  /**
   * Send even while commands are held (`holdCommands`): for the stop command and the dead-man
   * zero command, which must always go out.
   */
  readonly always?: boolean;
  /**
   * FOR TESTS ONLY: the send time to stamp, on the robot's clock (ms), instead of now; used to
   * prove that the robot drops stale and out-of-order commands. A page never sets it.
   */
  readonly sentAtRobotMs?: number;
}

/** Why {@link Session.sendCommand} sent nothing. */
export type CommandNotSent = 'observer' | 'held' | 'no-clock';

/** What a {@link Session} is built with. */
export interface SessionOptions {
  readonly welcome: Welcome;
  readonly link: Link;
  /** Where the video channels' areas go. */
  readonly container: HTMLElement;
  /** Overrides the profile's presentation delay. */
  readonly presentationDelayMs: number | undefined;
  /** Tuning of the adaptive hold. */
  readonly jitter: JitterTuning | undefined;
  /** Local clock minus the robot's, when known already. */
  readonly clockOffsetMs: number | undefined;
  /** The robot's clock now (ms), once the clock offset is known. */
  readonly robotClockMs: () => number | undefined;
  /** Why commands are held now (`PilotConnection.holdCommands`), if they are. */
  readonly commandHold: () => string | undefined;
  /** Hold commands while a video channel's picture is stale (`PilotConnectOptions`). */
  readonly holdCommandsWhileStale: boolean;
  /** The robot went silent (no control line for 3 heartbeats): the connection drops the session. */
  readonly onRobotSilent: (reason: string) => void;
  readonly clock: Clock;
  readonly random: () => number;
  /** The connection's emitter: frames, paints and sensor messages go out through it. */
  readonly events: TypedEmitter<PilotConnectionEvents>;
  readonly logger: Logger;
}

/** What {@link Session.handleDatagram} made of a datagram. */
export type DatagramOutcome = 'taken' | 'malformed' | 'unknown-channel';

/**
 * One session with the robot, from its `welcome` to its end: a reassembler and player per video
 * channel, a reassembler per sensor channel, a packer per command channel, the pings, the
 * once-a-second reports and the reassemblers' ticks.
 */
export class Session {
  /** The session id from `welcome`. */
  readonly id: string;
  #role: ControlRole;
  /** The channels the robot announced. */
  readonly channels: readonly ControlChannel[];
  readonly #options: SessionOptions;
  /** What the robot last said of each video channel's camera (`source`). */
  readonly sources = new Map<number, PilotSourceState>();
  readonly #playback = new Map<number, ChannelPlayback>();
  readonly #sensors = new Map<number, Reassembler>();
  /** Command channels, by id and by name. */
  readonly #commands = new Map<number | string, CommandTarget>();
  readonly #timers: TimerHandle[] = [];
  /** Pilot clock of the last control line from the robot, and of the last liveness check. */
  #lastHeardMs: number;
  #lastCheckMs: number;
  #lastCheckLate = false;
  #closed = false;
  /** The link the session sends on: the robot's, until the session moves to another path. */
  #link: Link;

  constructor(options: SessionOptions) {
    this.#options = options;
    this.#link = options.link;
    const { welcome } = options;
    this.id = welcome.session_id;
    this.#role = welcome.role;
    this.channels = welcome.channels;
    this.#lastHeardMs = options.clock.now();
    this.#lastCheckMs = this.#lastHeardMs;
    for (const channel of welcome.channels) {
      switch (channel.kind) {
        case 'video':
          this.#addVideo(channel, welcome);
          break;
        case 'sensor':
          this.#addSensor(channel);
          break;
        case 'command':
          this.#addCommand(channel);
          break;
        default:
          channel.kind satisfies never;
      }
    }
  }

  /** The session moved to another path: from now on it sends on `link`. */
  useLink(link: Link): void {
    this.#link = link;
  }

  /** Frames given up so far, over every video channel (a path switch's cost is the difference). */
  framesLost(): number {
    let lost = 0;
    for (const p of this.#playback.values()) lost += p.reassembler.stats.framesLost;
    return lost;
  }

  /**
   * Starts the timers and every player's codec check (frames handed in meanwhile wait in the
   * decoders). Resolves once every player has started.
   */
  start(): Promise<void> {
    const { clock, welcome } = this.#options;
    const ping = () => this.#link.send({ type: 'ping', t: clock.now() });
    // The first ping goes with welcome (the connection sends it); the rest of the burst follows,
    // then one a second: the clock offset is the best of the last samples.
    let burst = 1;
    const burstTimer = clock.setInterval(() => {
      ping();
      if (++burst < PING_BURST) return;
      clock.clearInterval(burstTimer);
      this.#timers.push(clock.setInterval(ping, PING_INTERVAL_MS));
    }, PING_BURST_INTERVAL_MS);
    this.#timers.push(
      burstTimer,
      clock.setInterval(() => this.#report(), REPORT_INTERVAL_MS),
      clock.setInterval(() => this.#tick(), TICK_INTERVAL_MS),
    );
    const heartbeatMs = welcome.heartbeat_ms;
    if (heartbeatMs !== undefined) {
      this.#timers.push(clock.setInterval(() => this.#checkRobot(heartbeatMs), heartbeatMs));
    }
    return Promise.all([...this.#playback.values()].map((p) => p.player.start())).then(() => undefined);
  }

  /**
   * This session's role: from `welcome`, then from each `role` line (svc-cloud moved the driver
   * slot). Only a driver's commands are sent.
   */
  get role(): ControlRole {
    return this.#role;
  }

  /** The robot changed this session's role (`role` on the control stream). */
  setRole(role: ControlRole): void {
    this.#role = role;
  }

  /** A control line came from the robot: it is alive. */
  heardRobot(): void {
    this.#lastHeardMs = this.#options.clock.now();
  }

  /** Routes one datagram to its channel's reassembler. */
  handleDatagram(bytes: Uint8Array): DatagramOutcome {
    const id = peekChannel(bytes) ?? 0;
    const reassembler = this.#playback.get(id)?.reassembler ?? this.#sensors.get(id);
    if (reassembler === undefined) return 'unknown-channel';
    try {
      reassembler.handleDatagram(bytes, this.#options.clock.now());
      return 'taken';
    } catch (err) {
      if (!(err instanceof WireError)) throw err;
      return 'malformed';
    }
  }

  /**
   * Sends one command as datagrams (see `PilotConnection.sendCommand`), its frame info stamped
   * with the send time on the robot's clock; returns why nothing was sent otherwise: this session
   * observes, commands are held (and `always` is not set), or the clock offset is not known yet.
   *
   * @throws {TypeError} for a channel that is not a command channel of the robot, or a payload
   *   over {@link MAX_COMMAND_BYTES}.
   */
  sendCommand(
    channel: string | number,
    payload: string | Uint8Array,
    options: SendCommandOptions = {},
  ): true | CommandNotSent {
    const target = this.#commands.get(channel);
    if (target === undefined) {
      const known = this.channels.filter((c) => c.kind === 'command').map((c) => c.name);
      throw new TypeError(
        `${JSON.stringify(channel)} is not a command channel of this robot (command channels: ${known.join(', ') || 'none'})`,
      );
    }
    const data = typeof payload === 'string' ? new TextEncoder().encode(payload) : payload;
    if (data.byteLength > MAX_COMMAND_BYTES) {
      throw new TypeError(`command of ${data.byteLength} bytes exceeds ${MAX_COMMAND_BYTES}`);
    }
    if (this.role !== 'driver') return 'observer';
    if (options.always !== true && (this.#options.commandHold() ?? this.staleHold()) !== undefined)
      return 'held';
    let sentAtMs = options.sentAtRobotMs;
    if (sentAtMs === undefined) {
      const robotNow = this.#options.robotClockMs();
      if (robotNow === undefined) return 'no-clock';
      // Never behind the last one: a new clock-offset estimate must not make a command look older
      // than the one before it (the robot drops those as out of order).
      sentAtMs = Math.max(robotNow, target.lastSentAtMs + 0.001);
      target.lastSentAtMs = sentAtMs;
    }
    const now = wrapU32(this.#options.clock.now() * 1000);
    const packed = target.packer.pack(
      {
        data,
        keyframe: true,
        captureTimestampUs: now,
        gopPosition: 0,
        captureClockUs: captureClockFromMs(sentAtMs),
        parity: COMMAND_PARITY,
      },
      now,
    );
    for (const datagram of packed.datagrams) this.#link.sendDatagram(datagram);
    return true;
  }

  /** The robot's profile changed: every player follows it. */
  applyQos(profile: QosProfileName, presentationDelayMs: number): void {
    const delay = this.#options.presentationDelayMs ?? presentationDelayMs;
    for (const p of this.#playback.values()) p.player.setQos(delay, lossPolicyOf(profile));
  }

  /** Local clock minus the robot's, for the latencies measured from now on. */
  setClockOffset(clockOffsetMs: number): void {
    for (const p of this.#playback.values()) p.player.setClockOffset(clockOffsetMs);
  }

  /** Every video channel's statistics, by channel id. */
  stats(): Record<string, PilotChannelStats> {
    const channels: Record<string, PilotChannelStats> = {};
    for (const [id, p] of this.#playback)
      channels[String(id)] = { ...p.player.stats(), reassembler: { ...p.reassembler.stats } };
    return channels;
  }

  /**
   * Why the driver's commands are held for a stale picture now, or `undefined` (also when
   * `holdCommandsWhileStale` is off).
   */
  staleHold(): string | undefined {
    if (!this.#options.holdCommandsWhileStale) return undefined;
    for (const p of this.#playback.values()) {
      if (!p.player.stale) continue;
      const age = p.player.pictureAgeMs;
      const old = Number.isFinite(age) ? `, ${Math.round(age)} ms old` : '';
      return `the picture of "${p.channel.name}" is frozen${old}: commands wait for a live picture`;
    }
    return undefined;
  }

  /** Stops the timers and the players and removes their areas; returns the last statistics. */
  close(): Record<string, PilotChannelStats> {
    const last = this.stats();
    if (this.#closed) return last;
    this.#closed = true;
    for (const timer of this.#timers.splice(0)) this.#options.clock.clearInterval(timer);
    for (const p of this.#playback.values()) {
      p.player.close();
      p.player.canvas.parentElement?.remove();
    }
    return last;
  }

  #addVideo(channel: ControlChannel, welcome: Welcome): void {
    const { container, events, logger } = this.#options;
    const catchUp: ControlCatchUp | undefined = welcome.catch_up?.find((c) => c.channel === channel.id);
    const area = container.ownerDocument.createElement('div');
    area.dataset.svcChannel = String(channel.id);
    const lossPolicy = lossPolicyOf(welcome.qos.profile);
    container.append(area);
    const clockOffsetMs = this.#options.clockOffsetMs;
    const playback: ChannelPlayback = {
      channel,
      picture: 'waiting',
      lastKeyframeRequest: Number.NEGATIVE_INFINITY,
      reported: { expected: 0, arrived: 0, framesLost: 0 },
      player: new VideoChannelPlayer({
        container: area,
        codec: channel.codec,
        presentationDelayMs: this.#options.presentationDelayMs ?? welcome.qos.presentation_delay_ms,
        ...(this.#options.jitter !== undefined && { jitter: this.#options.jitter }),
        lossPolicy,
        logger,
        // The reassembler's clock: frame completion and paint times on one time line.
        now: () => this.#options.clock.now(),
        ...(clockOffsetMs !== undefined && { clockOffsetMs }),
        onRequestKeyframe: (reason) => {
          // With 'continue' a broken chain decodes on: the loss report drives the robot's
          // recovery ladder (ltr first); an IDR for every loss would waste the link.
          if (lossPolicy === 'continue' && (reason === 'frame-lost' || reason === 'gop-gap')) return;
          this.#requestKeyframe(playback);
        },
        clock: this.#options.clock,
        onStaleChange: (_stale, ageMs) => this.#pictureChanged(playback, ageMs),
        onPaint: (report: PlayerPaintReport) => {
          events.safeEmit('paint', channel.id, report);
          if (playback.picture !== 'live') this.#pictureChanged(playback);
        },
      }),
      reassembler: new Reassembler({
        channel: channel.id,
        onFrame: (frame) => {
          events.safeEmit('frame', channel.id, frame);
          playback.player.handleFrame(frame);
        },
        onFrameLost: (loss) => playback.player.handleLoss(loss),
      }),
    };
    this.#playback.set(channel.id, playback);
    if (catchUp !== undefined) playback.player.catchUp(catchUp.last_frame, catchUp.live);
  }

  #addSensor(channel: ControlChannel): void {
    const { events } = this.#options;
    this.#sensors.set(
      channel.id,
      new Reassembler({
        channel: channel.id,
        onFrame: (frame) => events.safeEmit('sensor', channel.id, frame.data, channel.name),
      }),
    );
  }

  #addCommand(channel: ControlChannel): void {
    const target: CommandTarget = {
      channel,
      lastSentAtMs: Number.NEGATIVE_INFINITY,
      packer: new FramePacker({
        channel: channel.id,
        maxDatagramBytes: Math.min(MAX_OUTGOING_DATAGRAM_BYTES, this.#link.maxDatagramSize),
        // A fresh random start per session, so the robot never takes new commands for old ones.
        firstFrameId: Math.floor(this.#options.random() * 0x10000),
      }),
    };
    this.#commands.set(channel.id, target);
    this.#commands.set(channel.name, target);
  }

  /**
   * Every heartbeat period: the robot is gone when no control line came for 3 periods. A check
   * that comes late after timely ones (a busy page) gives no verdict: lines may be waiting to be
   * read; the next check decides.
   */
  #checkRobot(heartbeatMs: number): void {
    const now = this.#options.clock.now();
    const late = now - this.#lastCheckMs > 2 * heartbeatMs;
    // Late checks in a row are a throttled background tab (timers once a second), where the
    // reader still runs: those decide. One late check after timely ones is a busy page: wait.
    const wait = late && !this.#lastCheckLate;
    this.#lastCheckMs = now;
    this.#lastCheckLate = late;
    const silentMs = now - this.#lastHeardMs;
    const limitMs = ROBOT_SILENCE_HEARTBEATS * heartbeatMs;
    if (wait || silentMs <= limitMs || this.#closed) return;
    this.#options.onRobotSilent(`the robot went silent: no control message for ${Math.round(silentMs)} ms`);
  }

  #tick(): void {
    const now = this.#options.clock.now();
    for (const p of this.#playback.values()) p.reassembler.handleTick(now);
    for (const reassembler of this.#sensors.values()) reassembler.handleTick(now);
  }

  /**
   * Once a second, per video channel: `loss` (chunk loss on the path and frames given up since
   * the last report, what the robot's rate controller and recovery ladder run on) and
   * `pilot-stats` (what was decoded and painted).
   */
  #report(): void {
    const link = this.#link;
    const stats: Record<string, Record<string, number>> = {};
    for (const [id, p] of this.#playback) {
      const r = p.reassembler.stats;
      const arrived = r.datagrams - r.duplicates - r.malformed;
      const expected = r.chunksExpected - p.reported.expected;
      const lost = Math.max(0, expected - (arrived - p.reported.arrived));
      link.send({
        type: 'loss',
        channel: id,
        chunk_loss: expected > 0 ? Math.min(1, lost / expected) : 0,
        frames_lost: r.framesLost - p.reported.framesLost,
      });
      p.reported = { expected: r.chunksExpected, arrived, framesLost: r.framesLost };
      const v = p.player.stats();
      stats[String(id)] = {
        frames_received: v.framesReceived,
        frames_repaired: v.framesRepaired,
        frames_lost: v.framesLost,
        decoded: v.decoded,
        dropped: v.dropped,
        late: v.late,
        painted: v.painted,
        bitrate_bps: Math.round(v.bitrateBps),
        ...(v.latency.p50Ms !== null && { latency_p50_ms: v.latency.p50Ms }),
        ...(v.pictureAge.lastMs !== null &&
          Number.isFinite(v.pictureAge.lastMs) && { picture_age_ms: v.pictureAge.lastMs }),
        ...(v.pictureAge.p50Ms !== null && { picture_age_p50_ms: v.pictureAge.p50Ms }),
        ...(v.pictureAge.p95Ms !== null && { picture_age_p95_ms: v.pictureAge.p95Ms }),
        frames_skipped_behind: v.skippedBehind,
        hold_ms: v.holdMs,
        ...(v.jitterMs !== null && { jitter_ms: v.jitterMs }),
      };
    }
    if (Object.keys(stats).length > 0) link.send({ type: 'pilot-stats', channels: stats });
  }

  /** Tells `picture` listeners when a channel's picture moved between waiting, live and stale. */
  #pictureChanged(playback: ChannelPlayback, ageMs = playback.player.pictureAgeMs): void {
    const { player } = playback;
    const kind: PilotPictureState['kind'] =
      player.picture.kind === 'no-picture' ? 'waiting' : player.stale ? 'stale' : 'live';
    if (kind === playback.picture) return;
    playback.picture = kind;
    if (kind === 'stale') {
      this.#options.logger.warn(
        { channel: playback.channel.id, ageMs },
        'the picture is frozen: commands held until it is live again',
      );
    }
    this.#options.events.safeEmit('picture', playback.channel.id, { kind, ageMs });
  }

  #requestKeyframe(playback: ChannelPlayback): void {
    const now = this.#options.clock.now();
    if (now - playback.lastKeyframeRequest < KEYFRAME_REQUEST_INTERVAL_MS) return;
    playback.lastKeyframeRequest = now;
    this.#link.send({ type: 'request-keyframe', channel: playback.channel.id });
  }
}

/** What the pilot does after a frame it cannot repair: the profile's `onUnrecoverableLoss`. */
function lossPolicyOf(profile: QosProfileName): LossPolicy {
  return qosProfile(profile).onUnrecoverableLoss;
}
