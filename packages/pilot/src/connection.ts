import {
  type AssembledFrame,
  type ControlCatchUp,
  type ControlChannel,
  ControlLineReader,
  type ControlMessage,
  type ControlRole,
  encodeControlMessage,
  FramePacker,
  peekChannel,
  Reassembler,
  WireError,
  wrapU32,
} from '@svc/wire';
import { reportListenerError } from './listener.js';
import { OfferError, type RobotOffer, requestOffer } from './signalling.js';
import type { LossPolicy } from './video/decoder.js';
import { type PlayerPaintReport, VideoChannelPlayer } from './video/player.js';
import type { VideoStatsSnapshot } from './video/stats.js';

/** A pilot session token, or a function that gets a current one (called before every attempt). */
export type PilotToken = string | (() => string | Promise<string>);

/**
 * How to reach a robot as an offer gives it: candidate URLs in the robot's order of preference,
 * its certificate hashes, and the session id the signalling server assigned.
 */
export interface RobotAddress {
  /** `https://<address>:<quic_port>/` per candidate. */
  readonly urls: readonly string[];
  /** SHA-256 of the robot's certificates, hex (what `serverCertificateHashes` pins). */
  readonly certificateHashes: readonly string[];
  /** Session id from the offer, sent in `hello` (the robot matches it with the server's notice). */
  readonly sessionId?: string;
}

/** Where the robot's address comes from. */
export type RobotAddressSource =
  | {
      /** `wss://<host>/ws` of svc-cloud: an offer is asked for before every attempt. */
      readonly signalUrl: string;
      readonly robotId: string;
    }
  | {
      /** An offer received earlier (for example while svc-cloud is unreachable): used as it is. */
      readonly offer: RobotAddress;
    };

/** Options of {@link PilotConnection.connect}. */
export type PilotConnectOptions = RobotAddressSource & {
  /** Pilot session token for signalling and `hello` (`POST /api/v1/session-tokens`). */
  readonly token: PilotToken;
  /** Where the channels' videos go: one child element per video channel. */
  readonly container: HTMLElement;
  /** Overrides the profile's presentation delay (0 paints as soon as decoded). */
  readonly presentationDelayMs?: number;
  /** Reconnect after the session drops (default true), with backoff and a fresh offer. */
  readonly reconnect?: boolean;
  /** How long to wait for a candidate before also trying the next one (default 250 ms). */
  readonly candidateStaggerMs?: number;
  /** Connection state changes. */
  readonly onState?: (state: PilotConnectionState, detail?: string) => void;
  /** Every offer svc-cloud made (once per attempt). */
  readonly onOffer?: (offer: RobotOffer) => void;
  /** Every whole frame, as the reassembler hands it over (before decoding). */
  readonly onFrame?: (channel: number, frame: AssembledFrame) => void;
  /** Every painted frame. */
  readonly onPaint?: (channel: number, report: PlayerPaintReport) => void;
  /** Every sensor message, whole (one UDP datagram the robot received), with its channel's id and name. */
  readonly onSensor?: (channel: number, bytes: Uint8Array, name: string) => void;
};

/**
 * Longest command {@link PilotConnection.sendCommand} takes (bytes; a string counts as its UTF-8
 * bytes). The robot drops longer ones.
 */
export const MAX_COMMAND_BYTES = 16 * 1024;

/** Browser-to-server WebTransport datagrams are at most this long (Chromium). */
const MAX_OUTGOING_DATAGRAM_BYTES = 1199;

/** Each command block gets one parity chunk, so one lost datagram of a command is repaired. */
const COMMAND_PARITY = Object.freeze({ rate: 0, minPerBlock: 1 });

/** Where a {@link PilotConnection} is. */
export type PilotConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'denied' | 'closed';

/** Statistics of the whole connection. */
export interface PilotConnectionStats {
  readonly state: PilotConnectionState;
  readonly sessions: number;
  readonly rttMs: number | undefined;
  /** Local clock minus the robot's, ms. */
  readonly clockOffsetMs: number | undefined;
  readonly malformedDatagrams: number;
  readonly channels: Record<string, VideoStatsSnapshot & { reassembler: Reassembler['stats'] }>;
  /** The robot's latest `agent-stats`, per channel id. */
  readonly robot: Record<string, Record<string, number | string>>;
  /** The robot's QoS profile (the driver may change it: {@link PilotConnection.setQos}). */
  readonly profile?: QosProfileName;
}

interface SensorInput {
  readonly channel: ControlChannel;
  readonly reassembler: Reassembler;
}

interface ChannelPlayback {
  readonly channel: ControlChannel;
  readonly player: VideoChannelPlayer;
  readonly reassembler: Reassembler;
  lastKeyframeRequest: number;
  /** Reassembler counters at the last `loss` report. */
  reported: { expected: number; arrived: number; framesLost: number };
}

/** At most one keyframe request per channel this often (the robot rate-limits too). */
const KEYFRAME_REQUEST_INTERVAL_MS = 250;
const PING_INTERVAL_MS = 1000;
/** `loss` and `pilot-stats` go to the robot this often (its rate controller runs once a second). */
const REPORT_INTERVAL_MS = 1000;
/** Datagrams kept while `welcome` is on its way (a replay of about 1 MB, with parity). */
const MAX_EARLY_DATAGRAMS = 2048;
const TICK_INTERVAL_MS = 20;

/** Default wait for a candidate before the next one is tried as well (Happy Eyeballs style). */
const CANDIDATE_STAGGER_MS = 250;

/** A refusal that ends the connection: reconnecting with the same token cannot help. */
class Refusal extends Error {}

/**
 * A pilot's session with one robot: an offer from svc-cloud's signalling (or one given), the
 * robot's candidates raced, WebTransport pinned to the robot's certificate hashes, the
 * control-stream handshake, one reassembler and player per video channel, clock-offset pings,
 * keyframe requests, and reconnection (with a fresh offer) after the robot restarts or the link
 * drops.
 */
export class PilotConnection {
  readonly #options: PilotConnectOptions;
  #offer: RobotOffer | undefined;
  #state: PilotConnectionState = 'connecting';
  #transport: WebTransport | undefined;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #playback = new Map<number, ChannelPlayback>();
  #sensors = new Map<number, SensorInput>();
  /** Command channels of the current session, by id and by name, each with its packer. */
  #commands = new Map<number | string, { readonly channel: ControlChannel; readonly packer: FramePacker }>();
  #datagramWriter: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #role: ControlRole | undefined;
  /** The robot's QoS profile, from `welcome` and each `qos` since. */
  #profile: QosProfileName | undefined;
  #channels: readonly ControlChannel[] = [];
  #sessions = 0;
  #rttMs: number | undefined;
  #clockOffsetMs: number | undefined;
  #malformed = 0;
  #timers: ReturnType<typeof setInterval>[] = [];
  #closed = false;
  /** Datagrams that came before `welcome` was handled (the robot's replay follows it closely). */
  #early: Uint8Array[] = [];
  #welcomed = false;
  #lastStats: Record<string, VideoStatsSnapshot & { reassembler: Reassembler['stats'] }> = {};
  #robotStats: Record<string, Record<string, number | string>> = {};

  private constructor(options: PilotConnectOptions) {
    this.#options = options;
  }

  /** Connects and keeps the connection up until {@link close}. */
  static connect(options: PilotConnectOptions): PilotConnection {
    const connection = new PilotConnection(options);
    void connection.#run();
    return connection;
  }

  get state(): PilotConnectionState {
    return this.#state;
  }

  /** The latest offer from svc-cloud (`undefined` with a given offer, or before the first). */
  get offer(): RobotOffer | undefined {
    return this.#offer;
  }

  /** This session's role from `welcome` (`undefined` while not connected). */
  get role(): ControlRole | undefined {
    return this.#role;
  }

  /** The channels the robot announced in `welcome` (empty while not connected). */
  get channels(): readonly ControlChannel[] {
    return this.#channels;
  }

  /**
   * Sends one command on a command channel (by name or id) as datagrams: one frame, one parity
   * chunk per block, so one lost datagram is repaired; a newer command supersedes an older one
   * still in flight. Returns `false`, sending nothing, when not connected or when this session
   * observes (the robot would drop it). Throws `TypeError` for a channel that is not a command
   * channel of the robot, or a payload over {@link MAX_COMMAND_BYTES}.
   */
  sendCommand(channel: string | number, payload: string | Uint8Array): boolean {
    const writer = this.#datagramWriter;
    if (this.#state !== 'connected' || writer === undefined) return false;
    const target = this.#commands.get(channel);
    if (target === undefined) {
      const known = this.#channels.filter((c) => c.kind === 'command').map((c) => c.name);
      throw new TypeError(
        `${JSON.stringify(channel)} is not a command channel of this robot (command channels: ${known.join(', ') || 'none'})`,
      );
    }
    const data = typeof payload === 'string' ? new TextEncoder().encode(payload) : payload;
    if (data.byteLength > MAX_COMMAND_BYTES) {
      throw new TypeError(`command of ${data.byteLength} bytes exceeds ${MAX_COMMAND_BYTES}`);
    }
    if (this.#role !== 'driver') return false;
    const now = wrapU32(performance.now() * 1000);
    const packed = target.packer.pack(
      { data, keyframe: true, captureTimestampUs: now, gopPosition: 0, parity: COMMAND_PARITY },
      now,
    );
    for (const datagram of packed.datagrams) {
      // A datagram the browser cannot queue is lost like one lost on the path; parity covers one.
      writer.write(datagram).catch(() => undefined);
    }
    return true;
  }

  /**
   * Asks the robot for another QoS profile (`set-qos`): the driver's choice of what the link is
   * used for. Returns `false`, sending nothing, when not connected or when this session observes.
   */
  setQos(profile: QosProfileName): boolean {
    if (this.#state !== 'connected' || this.#role !== 'driver') return false;
    void this.#send({ type: 'set-qos', profile });
    return true;
  }

  /** A snapshot of every channel's statistics. */
  stats(): PilotConnectionStats {
    const channels = { ...this.#lastStats };
    for (const [id, p] of this.#playback)
      channels[String(id)] = { ...p.player.stats(), reassembler: { ...p.reassembler.stats } };
    return {
      state: this.#state,
      sessions: this.#sessions,
      rttMs: this.#rttMs,
      clockOffsetMs: this.#clockOffsetMs,
      malformedDatagrams: this.#malformed,
      channels,
      robot: this.#robotStats,
      ...(this.#profile !== undefined && { profile: this.#profile }),
    };
  }

  /** Ends the session and stops reconnecting. */
  close(): void {
    this.#closed = true;
    this.#setState('closed');
    void this.#send({ type: 'bye' });
    this.#transport?.close({ closeCode: 0, reason: 'pilot closed' });
    this.#teardown();
  }

  async #run(): Promise<void> {
    let attempt = 0;
    while (!this.#closed) {
      const started = performance.now();
      try {
        await this.#session();
      } catch (err) {
        if (err instanceof Refusal) this.#setState('denied', err.message);
        else this.#setState('reconnecting', err instanceof Error ? err.message : String(err));
      }
      this.#teardown();
      if (this.#closed || this.#options.reconnect === false || this.#state === 'denied') break;
      if (performance.now() - started > 10_000) attempt = 0;
      const delay = Math.min(5000, 250 * 2 ** attempt++) * (0.5 + Math.random() / 2);
      this.#setState('reconnecting', `retrying in ${Math.round(delay)} ms`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    if (this.#state !== 'denied') this.#setState('closed');
  }

  async #session(): Promise<void> {
    const token = typeof this.#options.token === 'string' ? this.#options.token : await this.#options.token();
    const address = await this.#address(token);
    if (this.#closed) return;
    const transport = await this.#dial(address);
    this.#transport = transport;
    if (this.#closed) {
      transport.close({ closeCode: 0, reason: 'pilot closed' });
      return;
    }
    const control = await transport.createBidirectionalStream();
    this.#writer = control.writable.getWriter();
    this.#datagramWriter = transport.datagrams.writable.getWriter();
    await this.#send({
      type: 'hello',
      v: 1,
      token,
      ...(address.sessionId !== undefined && { session_id: address.sessionId }),
    });
    const datagrams = this.#readDatagrams(transport);
    const controlDone = this.#readControl(control.readable);
    this.#timers.push(
      setInterval(() => void this.#send({ type: 'ping', t: performance.now() }), PING_INTERVAL_MS),
      setInterval(() => this.#report(), REPORT_INTERVAL_MS),
    );
    this.#timers.push(
      setInterval(() => {
        const now = performance.now();
        for (const p of this.#playback.values()) p.reassembler.handleTick(now);
        for (const sensor of this.#sensors.values()) sensor.reassembler.handleTick(now);
      }, TICK_INTERVAL_MS),
    );
    await Promise.race([transport.closed, controlDone, datagrams]);
    await transport.closed.catch(() => undefined);
  }

  /** The robot's address: the given offer, or a new one from svc-cloud for this attempt. */
  async #address(token: string): Promise<RobotAddress> {
    const options = this.#options;
    if ('offer' in options) return options.offer;
    this.#setState(this.#state === 'connecting' ? 'connecting' : 'reconnecting', 'asking for an offer');
    let offer: RobotOffer;
    try {
      offer = await requestOffer({ signalUrl: options.signalUrl, robotId: options.robotId, token });
    } catch (err) {
      // A refused token or a missing grant stays refused; an offline robot or a network problem passes.
      if (err instanceof OfferError && (err.code === 'bad-token' || err.code === 'forbidden'))
        throw new Refusal(err.message, { cause: err });
      throw err;
    }
    this.#offer = offer;
    try {
      options.onOffer?.(offer);
    } catch (err) {
      reportListenerError(err);
    }
    if (offer.urls.length === 0)
      throw new Error(`robot ${offer.robotId} announced no address it can be reached at`);
    return offer;
  }

  /**
   * Opens WebTransport to the first candidate that answers: the robot's first candidate at once,
   * each next one when the previous failed or after the stagger, the losers closed.
   */
  async #dial(address: RobotAddress): Promise<WebTransport> {
    const hashes = address.certificateHashes.map((h) => ({ algorithm: 'sha-256', value: fromHex(h) }));
    const stagger = this.#options.candidateStaggerMs ?? CANDIDATE_STAGGER_MS;
    const attempts: WebTransport[] = [];
    const failures: string[] = [];
    return new Promise<WebTransport>((resolve, reject) => {
      let next = 0;
      let winner: WebTransport | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settleIfAllFailed = () => {
        if (winner === undefined && failures.length === address.urls.length)
          reject(new Error(`no candidate of the robot answered: ${failures.join('; ')}`));
      };
      const start = () => {
        clearTimeout(timer);
        if (winner !== undefined || next >= address.urls.length) return;
        const url = address.urls[next++]!;
        let transport: WebTransport;
        try {
          transport = new WebTransport(url, { serverCertificateHashes: hashes });
        } catch (err) {
          failures.push(`${url}: ${err instanceof Error ? err.message : String(err)}`);
          start();
          settleIfAllFailed();
          return;
        }
        attempts.push(transport);
        transport.closed.catch(() => undefined);
        transport.ready.then(
          () => {
            if (winner !== undefined) {
              transport.close({ closeCode: 0, reason: 'another candidate answered first' });
              return;
            }
            winner = transport;
            clearTimeout(timer);
            for (const other of attempts)
              if (other !== transport)
                other.close({ closeCode: 0, reason: 'another candidate answered first' });
            resolve(transport);
          },
          (err: unknown) => {
            failures.push(`${url}: ${err instanceof Error ? err.message : String(err)}`);
            start();
            settleIfAllFailed();
          },
        );
        if (next < address.urls.length) timer = setTimeout(start, stagger);
      };
      start();
    });
  }

  async #readControl(readable: ReadableStream<Uint8Array>): Promise<void> {
    const reader = readable.getReader();
    const lines = new ControlLineReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      for (const message of lines.push(value)) {
        if (message instanceof WireError) continue;
        await this.#control(message);
      }
    }
  }

  async #control(message: ControlMessage): Promise<void> {
    switch (message.type) {
      case 'welcome': {
        this.#sessions++;
        this.#role = message.role;
        this.#profile = message.qos.profile;
        this.#channels = message.channels;
        const starting: Promise<void>[] = [];
        for (const channel of message.channels) {
          if (channel.kind === 'sensor') this.#startSensor(channel);
          if (channel.kind === 'command') this.#startCommand(channel);
          if (channel.kind !== 'video') continue;
          starting.push(
            this.#startChannel(
              channel,
              this.#options.presentationDelayMs ?? message.qos.presentation_delay_ms,
              message.qos.profile,
              message.catch_up?.find((c) => c.channel === channel.id),
            ),
          );
        }
        // Every reassembler exists now: what arrived early goes in first, in order (each
        // decoder holds frames until its codec check is done).
        this.#welcomed = true;
        // The clock offset at once, not after the first ping interval: the replay paints early.
        void this.#send({ type: 'ping', t: performance.now() });
        for (const datagram of this.#early.splice(0)) this.#datagram(datagram);
        await Promise.all(starting);
        this.#setState('connected', message.session_id);
        return;
      }
      case 'denied':
        this.#setState('denied', message.reason);
        this.#transport?.close({ closeCode: 1, reason: 'denied' });
        return;
      case 'bye':
        // The robot ends the session (revoked, or shutting down): close now rather than wait for
        // its close; the session loop reconnects if it should.
        this.#setState('reconnecting', message.reason ?? 'the robot ended the session');
        this.#transport?.close({ closeCode: 0, reason: 'bye' });
        return;
      case 'agent-stats':
        this.#robotStats = message.channels;
        return;
      case 'qos':
        // The driver changed the profile: every pilot of the robot follows it.
        this.#profile = message.profile;
        for (const p of this.#playback.values()) {
          p.player.setQos(
            this.#options.presentationDelayMs ?? message.presentation_delay_ms,
            lossPolicyOf(message.profile),
          );
        }
        return;
      case 'pong': {
        const now = performance.now();
        this.#rttMs = now - message.t;
        this.#clockOffsetMs = message.t + this.#rttMs / 2 - message.robot_time;
        for (const p of this.#playback.values()) p.player.setClockOffset(this.#clockOffsetMs);
        return;
      }
      default:
        return;
    }
  }

  async #startChannel(
    channel: ControlChannel,
    presentationDelayMs: number,
    profile: string,
    catchUp: ControlCatchUp | undefined,
  ): Promise<void> {
    const area = document.createElement('div');
    area.dataset.svcChannel = String(channel.id);
    const lossPolicy = lossPolicyOf(profile);
    this.#options.container.append(area);
    const playback: ChannelPlayback = {
      channel,
      lastKeyframeRequest: Number.NEGATIVE_INFINITY,
      reported: { expected: 0, arrived: 0, framesLost: 0 },
      player: new VideoChannelPlayer({
        container: area,
        codec: channel.codec,
        presentationDelayMs,
        lossPolicy,
        ...(this.#clockOffsetMs !== undefined && { clockOffsetMs: this.#clockOffsetMs }),
        onRequestKeyframe: (reason) => {
          // With 'continue' a broken chain decodes on: the loss report drives the robot's
          // recovery ladder (ltr first); an IDR for every loss would waste the link.
          if (lossPolicy === 'continue' && (reason === 'frame-lost' || reason === 'gop-gap')) return;
          this.#requestKeyframe(playback);
        },
        ...(this.#options.onPaint !== undefined && {
          onPaint: (report: PlayerPaintReport) => this.#options.onPaint?.(channel.id, report),
        }),
      }),
      reassembler: new Reassembler({
        channel: channel.id,
        onFrame: (frame) => {
          this.#options.onFrame?.(channel.id, frame);
          playback.player.handleFrame(frame);
        },
        onFrameLost: (loss) => playback.player.handleLoss(loss),
      }),
    };
    this.#playback.set(channel.id, playback);
    if (catchUp !== undefined) playback.player.catchUp(catchUp.last_frame, catchUp.live);
    await playback.player.start();
  }

  #startSensor(channel: ControlChannel): void {
    this.#sensors.set(channel.id, {
      channel,
      reassembler: new Reassembler({
        channel: channel.id,
        onFrame: (frame) => {
          try {
            this.#options.onSensor?.(channel.id, frame.data, channel.name);
          } catch (err) {
            reportListenerError(err);
          }
        },
      }),
    });
  }

  #startCommand(channel: ControlChannel): void {
    const maxDatagramSize = this.#transport?.datagrams.maxDatagramSize ?? MAX_OUTGOING_DATAGRAM_BYTES;
    const entry = {
      channel,
      packer: new FramePacker({
        channel: channel.id,
        maxDatagramBytes: Math.min(MAX_OUTGOING_DATAGRAM_BYTES, maxDatagramSize),
        // A fresh random start per session, so the robot never takes new commands for old ones.
        firstFrameId: Math.floor(Math.random() * 0x10000),
      }),
    };
    this.#commands.set(channel.id, entry);
    this.#commands.set(channel.name, entry);
  }

  /**
   * Once a second, per video channel: `loss` (chunk loss on the path and frames given up since
   * the last report, what the robot's rate controller and recovery ladder run on) and
   * `pilot-stats` (what was decoded and painted).
   */
  #report(): void {
    const stats: Record<string, Record<string, number>> = {};
    for (const [id, p] of this.#playback) {
      const r = p.reassembler.stats;
      const arrived = r.datagrams - r.duplicates - r.malformed;
      const expected = r.chunksExpected - p.reported.expected;
      const lost = Math.max(0, expected - (arrived - p.reported.arrived));
      void this.#send({
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
    if (Object.keys(stats).length > 0) void this.#send({ type: 'pilot-stats', channels: stats });
  }

  #requestKeyframe(playback: ChannelPlayback): void {
    const now = performance.now();
    if (now - playback.lastKeyframeRequest < KEYFRAME_REQUEST_INTERVAL_MS) return;
    playback.lastKeyframeRequest = now;
    void this.#send({ type: 'request-keyframe', channel: playback.channel.id });
  }

  /** One reader loop for datagrams, as long as the session lasts. */
  async #readDatagrams(transport: WebTransport): Promise<void> {
    const reader = transport.datagrams.readable.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      if (!this.#welcomed) {
        if (this.#early.length < MAX_EARLY_DATAGRAMS) this.#early.push(value);
        continue;
      }
      this.#datagram(value);
    }
  }

  #datagram(value: Uint8Array): void {
    const id = peekChannel(value) ?? 0;
    const reassembler = this.#playback.get(id)?.reassembler ?? this.#sensors.get(id)?.reassembler;
    if (reassembler === undefined) return;
    try {
      reassembler.handleDatagram(value, performance.now());
    } catch (err) {
      if (!(err instanceof WireError)) throw err;
      this.#malformed++;
    }
  }

  async #send(message: ControlMessage): Promise<void> {
    try {
      await this.#writer?.write(encodeControlMessage(message));
    } catch {
      // The session is closing; its end is handled by the session loop.
    }
  }

  #teardown(): void {
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
    for (const [id, p] of this.#playback) {
      this.#lastStats[String(id)] = { ...p.player.stats(), reassembler: { ...p.reassembler.stats } };
      p.player.close();
      p.player.canvas.parentElement?.remove();
    }
    this.#playback.clear();
    this.#sensors.clear();
    this.#commands.clear();
    this.#datagramWriter?.releaseLock();
    this.#datagramWriter = undefined;
    this.#role = undefined;
    this.#channels = [];
    this.#welcomed = false;
    this.#early = [];
    this.#writer = undefined;
  }

  #setState(state: PilotConnectionState, detail?: string): void {
    if (this.#state === state && detail === undefined) return;
    this.#state = state;
    try {
      this.#options.onState?.(state, detail);
    } catch (err) {
      reportListenerError(err);
    }
  }
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const pairs = hex.match(/[0-9a-f]{2}/gi) ?? [];
  return Uint8Array.from(pairs.map((p) => Number.parseInt(p, 16)));
}

type QosProfileName = Extract<ControlMessage, { type: 'set-qos' }>['profile'];

/** What the pilot does after a frame it cannot repair, per profile (architecture page). */
function lossPolicyOf(profile: string): LossPolicy {
  return profile === 'quality' ? 'freeze' : 'continue';
}
