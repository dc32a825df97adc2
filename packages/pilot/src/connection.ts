import {
  type AssembledFrame,
  type ControlChannel,
  ControlLineReader,
  type ControlMessage,
  encodeControlMessage,
  peekChannel,
  Reassembler,
  WireError,
} from '@svc/wire';
import { reportListenerError } from './listener.js';
import { type PlayerPaintReport, VideoChannelPlayer } from './video/player.js';
import type { VideoStatsSnapshot } from './video/stats.js';

/** How to reach a robot directly. Until signalling exists, the daemon prints both in dev mode. */
export interface DirectConnectOptions {
  /** `https://<robot>:<quic_port>/` */
  readonly url: string;
  /** SHA-256 of the robot's certificate, hex (what `serverCertificateHashes` pins). */
  readonly certificateHashes: readonly string[];
  /** Pilot session token for `hello`. */
  readonly token: string;
  /** Where the channels' videos go: one child element per video channel. */
  readonly container: HTMLElement;
  /** Overrides the profile's presentation delay (0 paints as soon as decoded). */
  readonly presentationDelayMs?: number;
  /** Reconnect after the session drops (default true), with backoff. */
  readonly reconnect?: boolean;
  /** Connection state changes. */
  readonly onState?: (state: PilotConnectionState, detail?: string) => void;
  /** Every whole frame, as the reassembler hands it over (before decoding). */
  readonly onFrame?: (channel: number, frame: AssembledFrame) => void;
  /** Every painted frame. */
  readonly onPaint?: (channel: number, report: PlayerPaintReport) => void;
}

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
  readonly robot: Record<string, Record<string, number>>;
}

interface ChannelPlayback {
  readonly channel: ControlChannel;
  readonly player: VideoChannelPlayer;
  readonly reassembler: Reassembler;
  lastKeyframeRequest: number;
}

/** At most one keyframe request per channel this often (the robot rate-limits too). */
const KEYFRAME_REQUEST_INTERVAL_MS = 250;
const PING_INTERVAL_MS = 1000;
const TICK_INTERVAL_MS = 20;

/**
 * A pilot's direct session with one robot: WebTransport pinned to the robot's certificate hash,
 * the control-stream handshake, one reassembler and player per video channel, clock-offset pings,
 * keyframe requests, and reconnection after the robot restarts or the link drops.
 */
export class PilotConnection {
  readonly #options: DirectConnectOptions;
  #state: PilotConnectionState = 'connecting';
  #transport: WebTransport | undefined;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #playback = new Map<number, ChannelPlayback>();
  #sessions = 0;
  #rttMs: number | undefined;
  #clockOffsetMs: number | undefined;
  #malformed = 0;
  #timers: ReturnType<typeof setInterval>[] = [];
  #closed = false;
  #lastStats: Record<string, VideoStatsSnapshot & { reassembler: Reassembler['stats'] }> = {};
  #robotStats: Record<string, Record<string, number>> = {};

  private constructor(options: DirectConnectOptions) {
    this.#options = options;
  }

  /** Connects and keeps the connection up until {@link close}. */
  static connect(options: DirectConnectOptions): PilotConnection {
    const connection = new PilotConnection(options);
    void connection.#run();
    return connection;
  }

  get state(): PilotConnectionState {
    return this.#state;
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
        this.#setState('reconnecting', String(err));
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
    const hashes = this.#options.certificateHashes.map((h) => ({ algorithm: 'sha-256', value: fromHex(h) }));
    const transport = new WebTransport(this.#options.url, { serverCertificateHashes: hashes });
    this.#transport = transport;
    await transport.ready;
    const control = await transport.createBidirectionalStream();
    this.#writer = control.writable.getWriter();
    await this.#send({ type: 'hello', v: 1, token: this.#options.token });
    const datagrams = this.#readDatagrams(transport);
    const controlDone = this.#readControl(control.readable);
    this.#timers.push(
      setInterval(() => void this.#send({ type: 'ping', t: performance.now() }), PING_INTERVAL_MS),
    );
    this.#timers.push(
      setInterval(() => {
        const now = performance.now();
        for (const p of this.#playback.values()) p.reassembler.handleTick(now);
      }, TICK_INTERVAL_MS),
    );
    await Promise.race([transport.closed, controlDone, datagrams]);
    await transport.closed.catch(() => undefined);
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
        for (const channel of message.channels) {
          if (channel.kind !== 'video') continue;
          await this.#startChannel(
            channel,
            this.#options.presentationDelayMs ?? message.qos.presentation_delay_ms,
            message.qos.profile,
          );
        }
        this.#setState('connected', message.session_id);
        return;
      }
      case 'denied':
        this.#setState('denied', message.reason);
        this.#transport?.close({ closeCode: 1, reason: 'denied' });
        return;
      case 'agent-stats':
        this.#robotStats = message.channels;
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

  async #startChannel(channel: ControlChannel, presentationDelayMs: number, profile: string): Promise<void> {
    const area = document.createElement('div');
    area.dataset.svcChannel = String(channel.id);
    this.#options.container.append(area);
    const playback: ChannelPlayback = {
      channel,
      lastKeyframeRequest: Number.NEGATIVE_INFINITY,
      player: new VideoChannelPlayer({
        container: area,
        codec: channel.codec,
        presentationDelayMs,
        lossPolicy: profile === 'quality' ? 'freeze' : 'continue',
        ...(this.#clockOffsetMs !== undefined && { clockOffsetMs: this.#clockOffsetMs }),
        onRequestKeyframe: () => this.#requestKeyframe(playback),
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
    await playback.player.start();
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
      const playback = this.#playback.get(peekChannel(value) ?? 0);
      if (playback === undefined) continue;
      try {
        playback.reassembler.handleDatagram(value, performance.now());
      } catch (err) {
        if (!(err instanceof WireError)) throw err;
        this.#malformed++;
      }
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
