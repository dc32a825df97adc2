import { qosProfile } from '@svc/qos';
import type { Clock, Logger, TimerHandle, TypedEmitter } from '@svc/runtime';
import {
  type ControlCatchUp,
  type ControlChannel,
  type ControlMessage,
  type ControlRole,
  FramePacker,
  peekChannel,
  Reassembler,
  WireError,
  wrapU32,
} from '@svc/wire';
import type { LossPolicy } from '../video/decoder.js';
import { type PlayerPaintReport, VideoChannelPlayer } from '../video/player.js';
import type { Link } from './link.js';
import type { PilotChannelStats, PilotConnectionEvents, QosProfileName } from './options.js';

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
const PING_INTERVAL_MS = 1000;
/** `loss` and `pilot-stats` go to the robot this often (its rate controller runs once a second). */
const REPORT_INTERVAL_MS = 1000;
/** Reassembler deadlines are checked this often. */
const TICK_INTERVAL_MS = 20;

interface ChannelPlayback {
  readonly channel: ControlChannel;
  readonly player: VideoChannelPlayer;
  readonly reassembler: Reassembler;
  lastKeyframeRequest: number;
  /** Reassembler counters at the last `loss` report. */
  reported: { expected: number; arrived: number; framesLost: number };
}

interface CommandTarget {
  readonly channel: ControlChannel;
  readonly packer: FramePacker;
}

/** What a {@link Session} is built with. */
export interface SessionOptions {
  readonly welcome: Welcome;
  readonly link: Link;
  /** Where the video channels' areas go. */
  readonly container: HTMLElement;
  /** Overrides the profile's presentation delay. */
  readonly presentationDelayMs: number | undefined;
  /** Local clock minus the robot's, when known already. */
  readonly clockOffsetMs: number | undefined;
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
  readonly role: ControlRole;
  /** The channels the robot announced. */
  readonly channels: readonly ControlChannel[];
  readonly #options: SessionOptions;
  readonly #playback = new Map<number, ChannelPlayback>();
  readonly #sensors = new Map<number, Reassembler>();
  /** Command channels, by id and by name. */
  readonly #commands = new Map<number | string, CommandTarget>();
  readonly #timers: TimerHandle[] = [];
  #closed = false;

  constructor(options: SessionOptions) {
    this.#options = options;
    const { welcome } = options;
    this.id = welcome.session_id;
    this.role = welcome.role;
    this.channels = welcome.channels;
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

  /**
   * Starts the timers and every player's codec check (frames handed in meanwhile wait in the
   * decoders). Resolves once every player has started.
   */
  start(): Promise<void> {
    const { clock, link } = this.#options;
    this.#timers.push(
      clock.setInterval(() => link.send({ type: 'ping', t: clock.now() }), PING_INTERVAL_MS),
      clock.setInterval(() => this.#report(), REPORT_INTERVAL_MS),
      clock.setInterval(() => this.#tick(), TICK_INTERVAL_MS),
    );
    return Promise.all([...this.#playback.values()].map((p) => p.player.start())).then(() => undefined);
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
   * Sends one command as datagrams (see `PilotConnection.sendCommand`). Returns `false`, sending
   * nothing, when this session observes.
   *
   * @throws {TypeError} for a channel that is not a command channel of the robot, or a payload
   *   over {@link MAX_COMMAND_BYTES}.
   */
  sendCommand(channel: string | number, payload: string | Uint8Array): boolean {
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
    if (this.role !== 'driver') return false;
    const now = wrapU32(this.#options.clock.now() * 1000);
    const packed = target.packer.pack(
      { data, keyframe: true, captureTimestampUs: now, gopPosition: 0, parity: COMMAND_PARITY },
      now,
    );
    for (const datagram of packed.datagrams) this.#options.link.sendDatagram(datagram);
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
      lastKeyframeRequest: Number.NEGATIVE_INFINITY,
      reported: { expected: 0, arrived: 0, framesLost: 0 },
      player: new VideoChannelPlayer({
        container: area,
        codec: channel.codec,
        presentationDelayMs: this.#options.presentationDelayMs ?? welcome.qos.presentation_delay_ms,
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
        onPaint: (report: PlayerPaintReport) => events.safeEmit('paint', channel.id, report),
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
      packer: new FramePacker({
        channel: channel.id,
        maxDatagramBytes: Math.min(MAX_OUTGOING_DATAGRAM_BYTES, this.#options.link.maxDatagramSize),
        // A fresh random start per session, so the robot never takes new commands for old ones.
        firstFrameId: Math.floor(this.#options.random() * 0x10000),
      }),
    };
    this.#commands.set(channel.id, target);
    this.#commands.set(channel.name, target);
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
    const { link } = this.#options;
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
      };
    }
    if (Object.keys(stats).length > 0) link.send({ type: 'pilot-stats', channels: stats });
  }

  #requestKeyframe(playback: ChannelPlayback): void {
    const now = this.#options.clock.now();
    if (now - playback.lastKeyframeRequest < KEYFRAME_REQUEST_INTERVAL_MS) return;
    playback.lastKeyframeRequest = now;
    this.#options.link.send({ type: 'request-keyframe', channel: playback.channel.id });
  }
}

/** What the pilot does after a frame it cannot repair: the profile's `onUnrecoverableLoss`. */
function lossPolicyOf(profile: QosProfileName): LossPolicy {
  return qosProfile(profile).onUnrecoverableLoss;
}
