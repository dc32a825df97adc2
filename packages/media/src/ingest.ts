import {
  type Clock,
  type Logger,
  redactUrl,
  silentLogger,
  systemClock,
  type TimerHandle,
} from '@svc/runtime';
import { checkVideoInput, MJPEG_BANDWIDTH_WARNING, RTP_ENCODING_NAMES } from './codec.js';
import { applyRtspCredentials } from './credentials.js';
import { MediaError } from './errors.js';
import { H264Depacketizer } from './h264/depacketizer.js';
import { H265Depacketizer } from './h265/depacketizer.js';
import { JpegDepacketizer } from './jpeg/depacketizer.js';
import { CaptureClock, type CaptureClockStats } from './rtp/capture-clock.js';
import { RtpClock } from './rtp/clock.js';
import { isRtcp, parseRtpPacket } from './rtp/packet.js';
import { ReorderBuffer, type ReorderOptions, type ReorderStats } from './rtp/reorder.js';
import { parseRtcpCompound, type RtcpCompound } from './rtp/rtcp.js';
import { parseRtpUrl, UdpRtpSource } from './rtp/udp-source.js';
import { RtspSource, type RtspSourceState, type RtspSourceStateDetail } from './rtsp/source.js';
import { decodeSpropParameterSets, type SdpMedia } from './sdp.js';
import { SourceMonitor, type SourceStatus } from './source-monitor.js';
import type {
  AccessUnit,
  CaptureTime,
  CodecFamily,
  Depacketizer,
  DepacketizerStats,
  RtpPacket,
} from './types.js';

/** Options of {@link VideoIngest}. */
export interface VideoIngestOptions {
  /** `rtsp://...` or `rtp://<addr>:<port>` (spec 2.2 `input`). */
  readonly input: string;
  /** The channel's WebCodecs codec string (spec 2.3), carried unchanged on every access unit. */
  readonly codec: string;
  /** Every whole access unit, in order, with when it was captured (see {@link CaptureTime}). */
  readonly onAccessUnit: (au: AccessUnit, capture: CaptureTime) => void;
  /** RTP packets were lost: the access unit in progress was dropped (a recovery point is needed). */
  readonly onLoss?: (packets: number) => void;
  /**
   * A fatal error: the stream cannot be used as configured (the camera sends another codec). The
   * ingest has stopped itself.
   */
  readonly onError?: (error: MediaError) => void;
  /** RTSP connection state, with the error that caused a `backoff`. */
  readonly onStateChange?: (state: RtspSourceState, detail?: RtspSourceStateDetail) => void;
  /** Every change of the source's {@link SourceStatus} (`live`, `no-data`, `offline`, and why). */
  readonly onSourceStatus?: (status: SourceStatus) => void;
  /**
   * No access unit for this long makes the source `no-data` (default 1000 ms; a channel passes
   * the larger of that and three frame intervals).
   */
  readonly noDataAfterMs?: number;
  /** RTP carried over the RTSP connection (default) or over UDP. */
  readonly rtspTransport?: 'tcp' | 'udp';
  /** Source of `SVC_RTSP_USER` / `SVC_RTSP_PASSWORD` (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly logger?: Logger;
  readonly reorder?: ReorderOptions;
  /**
   * Hand out every access unit in memory that the next one reuses: `AccessUnit.data` is valid
   * during `onAccessUnit` only, and the caller copies what it keeps. Saves an allocation (outside
   * the JavaScript heap) per access unit.
   */
  readonly lendAccessUnits?: boolean;
  /** Time and timers (RTSP answers and retries, loss deadlines); the process's by default. */
  readonly clock?: Clock;
  /** RTSP tuning passed to the source (timeouts, backoff), mostly for tests. */
  readonly rtsp?: {
    readonly timeoutMs?: number;
    readonly stallTimeoutMs?: number;
    readonly backoffBaseMs?: number;
  };
}

/** Counters of a {@link VideoIngest}. */
export interface VideoIngestStats {
  /** Datagrams or interleaved frames received, RTCP included. */
  received: number;
  /** RTCP compound packets received (on the RTP port, the RTCP port or the RTCP channel). */
  rtcp: number;
  /** RTCP compound packets that did not parse (dropped; logged at most once a minute). */
  malformedRtcp: number;
  malformed: number;
  /** Packets of a payload type other than the stream's. */
  foreignPayloadType: number;
  readonly reorder: ReorderStats;
  readonly depacketizer: () => DepacketizerStats;
  /** How access units were timed: by sender report or by arrival. */
  readonly capture: () => CaptureClockStats;
}

/** Default of {@link VideoIngestOptions.noDataAfterMs}. */
export const DEFAULT_NO_DATA_AFTER_MS = 1000;

/** The 90 kHz clock of every video payload format here (RFC 6184, 7798, 2435). */
const VIDEO_CLOCK_RATE = 90_000;

/** A malformed RTCP packet is logged at most this often (ms); the rest are counted. */
const MALFORMED_RTCP_LOG_INTERVAL_MS = 60_000;

/** Options of {@link RtpPipeline}. */
export interface RtpPipelineOptions {
  readonly codec: string;
  readonly family: CodecFamily;
  /** Every whole access unit, with its capture time. */
  readonly onAccessUnit: (au: AccessUnit, capture: CaptureTime) => void;
  /**
   * The clock of the `receivedAtMs` handed in, and of the wall clock arrivals are turned into
   * (`wallNow`); the process's by default.
   */
  readonly clock?: Clock;
  readonly onLoss?: (packets: number) => void;
  readonly logger?: Logger;
  readonly reorder?: ReorderOptions;
  /** See {@link VideoIngestOptions.lendAccessUnits}. */
  readonly lendAccessUnits?: boolean;
}

/**
 * Raw RTP in, access units out, with no I/O: parse, filter the stream's payload type, reorder,
 * depacketise, and time-stamp (RTP time, and the capture wall-clock time from the source's RTCP
 * sender reports or the arrival). Sources feed it; the benchmark drives it directly.
 */
export class RtpPipeline {
  readonly stats: VideoIngestStats;
  readonly #options: RtpPipelineOptions;
  readonly #logger: Logger;
  readonly #reorder: ReorderBuffer;
  readonly #clock = new RtpClock(VIDEO_CLOCK_RATE);
  readonly #wallClock: Clock;
  #captureClock: CaptureClock;
  #depacketizer: Depacketizer;
  /** Payload type of the stream; without a description it is learned from the first packet. */
  #payloadType: number | undefined;
  /** SSRC of the latest packet handed to the depacketiser. */
  #ssrc: number | undefined;
  /**
   * RTP timestamps of the access unit in progress and of the one before it, with the arrival of
   * their first packets (an access unit without a marker completes at the next one's first packet).
   */
  #currentTs = -1;
  #currentAt = 0;
  #previousTs = -1;
  #previousAt = 0;
  #malformedRtcpLoggedAt = Number.NEGATIVE_INFINITY;

  constructor(options: RtpPipelineOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#wallClock = options.clock ?? systemClock;
    this.#captureClock = new CaptureClock({ clockRate: VIDEO_CLOCK_RATE, logger: this.#logger });
    this.#depacketizer = this.#createDepacketizer(undefined);
    this.#reorder = new ReorderBuffer(
      {
        onPacket: (packet, receivedAtMs) => {
          this.#ssrc = packet.ssrc;
          if (packet.timestamp !== this.#currentTs) {
            this.#previousTs = this.#currentTs;
            this.#previousAt = this.#currentAt;
            this.#currentTs = packet.timestamp;
            this.#currentAt = receivedAtMs;
          }
          for (const au of this.#depacketizer.handlePacket(packet, receivedAtMs))
            options.onAccessUnit(au, this.#captureTime(au));
        },
        onLoss: (count) => {
          this.#depacketizer.handleLoss();
          options.onLoss?.(count);
        },
        onRestart: (reason) => {
          this.#logger.info({ reason }, 'RTP stream restarted');
          this.#depacketizer.reset();
          this.#clock.reset();
        },
      },
      options.reorder,
    );
    this.stats = {
      received: 0,
      rtcp: 0,
      malformedRtcp: 0,
      malformed: 0,
      foreignPayloadType: 0,
      reorder: this.#reorder.stats,
      depacketizer: () => this.#depacketizer.stats,
      capture: () => this.#captureClock.stats,
    };
  }

  /**
   * Takes one raw RTP (or RTCP) packet. `bytes` is used during the call only (what must wait is
   * copied), so the caller may reuse its memory for the next packet.
   */
  handleRtp(bytes: Uint8Array, receivedAtMs: number): void {
    this.stats.received++;
    if (isRtcp(bytes)) {
      // RTCP multiplexed on the RTP port (RFC 5761).
      this.#rtcp(bytes, receivedAtMs);
      return;
    }
    let packet: RtpPacket;
    try {
      packet = parseRtpPacket(bytes);
    } catch (err) {
      this.stats.malformed++;
      if (this.stats.malformed === 1 || this.stats.malformed % 1000 === 0) {
        this.#logger.warn(
          { count: this.stats.malformed, reason: (err as Error).message },
          'dropping malformed RTP',
        );
      }
      return;
    }
    if (this.#payloadType === undefined && this.#acceptsFirst(packet.payloadType))
      this.#payloadType = packet.payloadType;
    if (packet.payloadType !== this.#payloadType) {
      this.stats.foreignPayloadType++;
      return;
    }
    this.#reorder.handlePacket(packet, receivedAtMs);
  }

  /**
   * Takes one RTCP compound packet (from the RTCP port or channel): its sender reports time the
   * access units from then on. A malformed one is counted and dropped, never thrown.
   */
  handleRtcp(bytes: Uint8Array, receivedAtMs: number): void {
    this.stats.received++;
    this.#rtcp(bytes, receivedAtMs);
  }

  #rtcp(bytes: Uint8Array, receivedAtMs: number): void {
    this.stats.rtcp++;
    let compound: RtcpCompound;
    try {
      compound = parseRtcpCompound(bytes);
    } catch (err) {
      this.stats.malformedRtcp++;
      if (receivedAtMs - this.#malformedRtcpLoggedAt >= MALFORMED_RTCP_LOG_INTERVAL_MS) {
        this.#malformedRtcpLoggedAt = receivedAtMs;
        this.#logger.warn(
          { count: this.stats.malformedRtcp, reason: (err as Error).message },
          'dropping malformed RTCP (logged at most once a minute)',
        );
      }
      return;
    }
    for (const report of compound.senderReports) this.#captureClock.handleSenderReport(report);
  }

  /** The capture time of `au`: mapped by a sender report, or its first packet's arrival. */
  #captureTime(au: AccessUnit): CaptureTime {
    const firstAt =
      au.rtpTimestamp === this.#currentTs
        ? this.#currentAt
        : au.rtpTimestamp === this.#previousTs
          ? this.#previousAt
          : au.receivedAtMs;
    const arrivalWallMs = this.#wallClock.wallNow() - (this.#wallClock.now() - firstAt);
    return this.#captureClock.captureTime(this.#ssrc, au.rtpTimestamp, arrivalWallMs);
  }

  /** Declares overdue gaps lost; see {@link nextDeadlineMs}. */
  handleTick(nowMs: number): void {
    this.#reorder.handleTick(nowMs);
  }

  /** When {@link handleTick} next has work, if any. */
  nextDeadlineMs(): number | undefined {
    return this.#reorder.nextDeadlineMs();
  }

  /** A (new) stream description from RTSP: payload type, parameter sets; restarts depacketising. */
  describe(media: SdpMedia): void {
    this.#payloadType = media.payloadType;
    this.#depacketizer = this.#createDepacketizer(media);
    this.#clock.reset();
    this.#captureClock = new CaptureClock({
      clockRate: media.clockRate > 0 ? media.clockRate : VIDEO_CLOCK_RATE,
      logger: this.#logger,
    });
  }

  /** A bare RTP stream has no description: take the first payload type that fits the codec. */
  #acceptsFirst(payloadType: number): boolean {
    return this.#options.family === 'mjpeg' ? payloadType === 26 : payloadType >= 96 && payloadType <= 127;
  }

  #createDepacketizer(media: SdpMedia | undefined): Depacketizer {
    const common = {
      codec: this.#options.codec,
      logger: this.#logger,
      toCaptureTimeUs: (ts: number) => this.#clock.toMicros(ts),
      lendAccessUnits: this.#options.lendAccessUnits === true,
    };
    const fmtp = media?.fmtp;
    switch (this.#options.family) {
      case 'h264':
        return new H264Depacketizer({ ...common, parameterSets: sprop(fmtp, ['sprop-parameter-sets']) });
      case 'h265':
        return new H265Depacketizer({
          ...common,
          parameterSets: sprop(fmtp, ['sprop-vps', 'sprop-sps', 'sprop-pps']),
          donlPresent: Number(fmtp?.get('sprop-max-don-diff') ?? 0) > 0,
        });
      case 'mjpeg':
        return new JpegDepacketizer(common);
      default: {
        const never: never = this.#options.family;
        throw new TypeError(`unknown codec family ${String(never)}`);
      }
    }
  }
}

/**
 * One video channel's ingest: a source (`rtp://` socket or RTSP session that reconnects by itself)
 * feeding an {@link RtpPipeline}. Validates input and codec before anything opens (Motion JPEG
 * over bare RTP is refused), warns about Motion JPEG's bandwidth, checks the camera's codec
 * against the configured one, and never lets a malformed packet stop the stream.
 */
export class VideoIngest {
  readonly family: CodecFamily;
  readonly #options: VideoIngestOptions;
  readonly #logger: Logger;
  readonly #pipeline: RtpPipeline;
  readonly #monitor: SourceMonitor;
  #udp: UdpRtpSource | undefined;
  #rtsp: RtspSource | undefined;
  readonly #clock: Clock;
  #tickTimer: TimerHandle | undefined;
  #stopped = false;
  /** The RTSP source's state before the latest change (a stall is a failure while playing). */
  #rtspState: RtspSourceState | undefined;

  private constructor(options: VideoIngestOptions, family: CodecFamily) {
    this.#options = options;
    this.family = family;
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? systemClock;
    const udp = options.input.toLowerCase().startsWith('rtp:');
    let where = redactUrl(options.input);
    if (udp) {
      const endpoint = parseRtpUrl(options.input);
      const host = endpoint.group ?? endpoint.bindAddress;
      where = `${endpoint.family === 6 ? `[${host}]` : host}:${endpoint.port}`;
    }
    this.#monitor = new SourceMonitor({
      kind: udp ? 'udp' : 'rtsp',
      where,
      codec: options.codec,
      noDataAfterMs: options.noDataAfterMs ?? DEFAULT_NO_DATA_AFTER_MS,
      clock: this.#clock,
      logger: this.#logger,
      ...(options.onSourceStatus !== undefined && { onChange: options.onSourceStatus }),
    });
    const monitor = this.#monitor;
    const onAccessUnit = options.onAccessUnit;
    this.#pipeline = new RtpPipeline({
      codec: options.codec,
      family,
      clock: this.#clock,
      onAccessUnit: (au, capture) => {
        monitor.handleAccessUnit(au.receivedAtMs);
        onAccessUnit(au, capture);
      },
      logger: this.#logger,
      ...(options.onLoss !== undefined && { onLoss: options.onLoss }),
      ...(options.reorder !== undefined && { reorder: options.reorder }),
      ...(options.lendAccessUnits !== undefined && { lendAccessUnits: options.lendAccessUnits }),
    });
  }

  /**
   * Checks the configuration and starts receiving. Rejects with a `MediaError` for a bad input or
   * codec, or an `rtp://` endpoint it cannot bind; RTSP failures show as state changes instead,
   * because the source keeps retrying.
   */
  static async start(options: VideoIngestOptions): Promise<VideoIngest> {
    const family = checkVideoInput(options.input, options.codec);
    const ingest = new VideoIngest(options, family);
    const logger = ingest.#logger;
    if (family === 'mjpeg')
      logger.warn({ codec: options.codec, input: redactUrl(options.input) }, MJPEG_BANDWIDTH_WARNING);
    if (options.input.toLowerCase().startsWith('rtp:')) {
      ingest.#udp = await UdpRtpSource.open({
        url: options.input,
        logger,
        clock: ingest.#clock,
        onRtp: (p, at) => ingest.#handleRtp(p, at),
        onRtcp: (p, at) => ingest.#handleRtcp(p, at),
      });
      ingest.#monitor.handleReachable();
    } else {
      const env = options.env ?? process.env;
      const url = applyRtspCredentials(options.input, {
        SVC_RTSP_USER: env.SVC_RTSP_USER,
        SVC_RTSP_PASSWORD: env.SVC_RTSP_PASSWORD,
      });
      ingest.#rtsp = new RtspSource({
        url,
        transport: options.rtspTransport ?? 'tcp',
        logger,
        clock: ingest.#clock,
        ...options.rtsp,
        onDescription: (media) => ingest.#describe(media),
        onRtp: (p, at) => ingest.#handleRtp(p, at),
        onRtcp: (p, at) => ingest.#handleRtcp(p, at),
        onStateChange: (state, detail) => ingest.#rtspStateChange(state, detail),
      });
      ingest.#rtsp.start();
    }
    return ingest;
  }

  /** Counters of the pipeline. */
  get stats(): VideoIngestStats {
    return this.#pipeline.stats;
  }

  /** The local UDP port of an `rtp://` input. */
  get udpPort(): number | undefined {
    return this.#udp?.port;
  }

  /** The local RTCP port of an `rtp://` input, when its RTCP socket is open. */
  get rtcpPort(): number | undefined {
    return this.#udp?.rtcpPort;
  }

  /** Whether the source is usable now, and if not why; see {@link VideoIngestOptions.onSourceStatus}. */
  get sourceStatus(): SourceStatus {
    return this.#monitor.status;
  }

  /** Stops the source and releases sockets and timers. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#monitor.stop();
    this.#clock.clearTimeout(this.#tickTimer);
    await Promise.all([this.#udp?.close(), this.#rtsp?.stop()]);
  }

  #handleRtp(bytes: Uint8Array, receivedAtMs: number): void {
    if (this.#stopped) return;
    this.#monitor.handlePacket(receivedAtMs);
    this.#pipeline.handleRtp(bytes, receivedAtMs);
    this.#scheduleTick();
  }

  #handleRtcp(bytes: Uint8Array, receivedAtMs: number): void {
    if (this.#stopped) return;
    this.#pipeline.handleRtcp(bytes, receivedAtMs);
  }

  /** Passes the RTSP state on, and tells the monitor when the camera became readable or failed. */
  #rtspStateChange(state: RtspSourceState, detail: RtspSourceStateDetail | undefined): void {
    const previous = this.#rtspState;
    this.#rtspState = state;
    if (state === 'playing') this.#monitor.handleReachable();
    const error = detail?.error;
    if (state === 'backoff' && error !== undefined) {
      this.#monitor.handleFailure(error, previous === 'playing' && error.code === 'timeout');
    }
    this.#options.onStateChange?.(state, detail);
  }

  #describe(media: SdpMedia): void {
    const expected = RTP_ENCODING_NAMES[this.family];
    const encoding = media.encodingName.toUpperCase() || (media.payloadType === 26 ? 'JPEG' : '');
    if (encoding !== expected) {
      const error = new MediaError(
        'codec-mismatch',
        `the camera at ${redactUrl(this.#options.input)} sends ${encoding || `payload type ${media.payloadType}`}, ` +
          `but the channel's codec "${this.#options.codec}" expects ${expected}: fix codec or input`,
      );
      this.#logger.error({ code: error.code }, error.message);
      this.#monitor.handleFatal(error.message);
      void this.stop();
      this.#options.onError?.(error);
      return;
    }
    this.#pipeline.describe(media);
  }

  /** Arms a timer so a gap is declared lost even when no further packet comes. */
  #scheduleTick(): void {
    const deadline = this.#pipeline.nextDeadlineMs();
    if (deadline === undefined || this.#tickTimer !== undefined || this.#stopped) return;
    this.#tickTimer = this.#clock.setTimeout(
      () => {
        this.#tickTimer = undefined;
        this.#pipeline.handleTick(this.#clock.now());
        this.#scheduleTick();
      },
      Math.max(0, deadline - this.#clock.now()),
    );
  }
}

/** Parameter sets from the SDP's `sprop-*` attributes, skipping any that do not decode. */
function sprop(fmtp: ReadonlyMap<string, string> | undefined, keys: readonly string[]): Uint8Array[] {
  const sets: Uint8Array[] = [];
  for (const key of keys) {
    const value = fmtp?.get(key);
    if (value === undefined) continue;
    try {
      sets.push(...decodeSpropParameterSets(value));
    } catch {
      // A camera's broken sprop is no reason to stop: in-band parameter sets still work.
    }
  }
  return sets;
}
