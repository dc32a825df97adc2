import {
  type AccessUnit,
  checkVideoInput,
  h264CodecString,
  h265CodecString,
  MediaError,
  splitAnnexB,
  VideoIngest,
} from '@svc/media';
import { type Logger, redactUrl } from '@svc/runtime';

/** Options of {@link probeInput}. */
export interface ProbeOptions {
  readonly input: string;
  readonly codec: string;
  /** How long to watch the stream (default 5 s). */
  readonly seconds?: number;
  readonly rtspTransport?: 'tcp' | 'udp';
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Called with each access unit as it arrives (for the per-unit lines). */
  readonly onAccessUnit?: (au: AccessUnit, line: ProbeLine) => void;
  readonly logger?: Logger;
}

/** What `svcd probe-input` prints for one access unit. */
export interface ProbeLine {
  /** Seconds since the first access unit, on the source's clock. */
  readonly t: number;
  readonly bytes: number;
  readonly keyframe: boolean;
  readonly nalTypes: readonly number[];
  readonly slices: number;
}

/** What the stream looked like. */
export interface ProbeSummary {
  readonly input: string;
  readonly configuredCodec: string;
  /** The codec string the stream's SPS implies (H.264/H.265), `mjpeg`, or undefined without SPS. */
  readonly streamCodec: string | undefined;
  readonly codecMatches: boolean;
  readonly accessUnits: number;
  readonly keyframes: number;
  readonly seconds: number;
  readonly fps: number;
  readonly bitrateKbps: number;
  /** Mean frames from one keyframe to the next (undefined with fewer than two keyframes). */
  readonly keyframeIntervalFrames: number | undefined;
  readonly bFrames: boolean;
  readonly multipleSlices: boolean;
  readonly inBandParameterSets: boolean;
  readonly packetsLost: number;
  readonly packetsMalformed: number;
}

/**
 * Connects to a video input the way a channel would, watches it for a while and describes it. The
 * first thing a user runs when video does not show, so every failure is a `MediaError` that names
 * its cause: unreachable host, 401, no such mount, no packets, codec mismatch, Motion JPEG over
 * bare RTP.
 */
export async function probeInput(options: ProbeOptions): Promise<ProbeSummary> {
  checkVideoInput(options.input, options.codec);
  const seconds = options.seconds ?? 5;
  const units: ProbeLine[] = [];
  const keyIndexes: number[] = [];
  let streamCodec: string | undefined;
  let bFrames = false;
  let inBand = false;
  let firstUs: number | undefined;
  let lastUs = 0;
  let bytes = 0;

  let fail: (err: MediaError) => void = () => {};
  const failed = new Promise<never>((_, reject) => {
    fail = reject;
  });
  const ingest = await VideoIngest.start({
    input: options.input,
    codec: options.codec,
    ...(options.rtspTransport !== undefined && { rtspTransport: options.rtspTransport }),
    ...(options.env !== undefined && { env: options.env }),
    ...(options.logger !== undefined && { logger: options.logger }),
    rtsp: { stallTimeoutMs: seconds * 1000 + 1000 },
    onError: (err) => fail(err),
    onStateChange: (state, detail) => {
      if (state === 'backoff' && detail?.error !== undefined) fail(detail.error);
    },
    onAccessUnit: (au) => {
      firstUs ??= au.captureTimeUs;
      lastUs = au.captureTimeUs;
      bytes += au.data.byteLength;
      if (au.keyframe) keyIndexes.push(units.length);
      bFrames ||= au.details.bSlice;
      inBand ||= au.details.inBandParameterSets;
      streamCodec ??= impliedCodec(au, options.codec);
      const line: ProbeLine = {
        t: (au.captureTimeUs - firstUs) / 1e6,
        bytes: au.data.byteLength,
        keyframe: au.keyframe,
        nalTypes: au.details.nalTypes,
        slices: au.details.slices,
      };
      units.push(line);
      options.onAccessUnit?.(au, line);
    },
  });
  try {
    await Promise.race([failed, new Promise((resolve) => setTimeout(resolve, seconds * 1000))]);
  } finally {
    await ingest.stop();
  }

  const where = redactUrl(options.input);
  const received = ingest.stats.received - ingest.stats.rtcp;
  if (units.length === 0) {
    if (received === 0) {
      throw new MediaError(
        'timeout',
        `no RTP packets arrived from ${where} within ${seconds} s: check that the source is running and sends to ` +
          'this address and port (firewall, multicast route, the camera stream enabled)',
      );
    }
    throw new MediaError(
      'codec-mismatch',
      `${received} packets arrived from ${where} but none formed a ${ingest.family.toUpperCase()} access unit ` +
        `(${ingest.stats.foreignPayloadType} of another payload type, ${JSON.stringify(ingest.stats.depacketizer().skipped)} ` +
        `skipped): is the stream really ${options.codec}?`,
    );
  }
  const span = (lastUs - (firstUs ?? lastUs)) / 1e6;
  const gaps = keyIndexes.slice(1).map((index, i) => index - keyIndexes[i]!);
  return {
    input: where,
    configuredCodec: options.codec,
    streamCodec,
    codecMatches: streamCodec === undefined || streamCodec.toLowerCase() === options.codec.toLowerCase(),
    accessUnits: units.length,
    keyframes: keyIndexes.length,
    seconds: span,
    fps: span > 0 ? (units.length - 1) / span : 0,
    bitrateKbps: span > 0 ? (bytes * 8) / span / 1000 : 0,
    keyframeIntervalFrames: gaps.length > 0 ? gaps.reduce((a, b) => a + b, 0) / gaps.length : undefined,
    bFrames,
    multipleSlices: units.some((u) => u.slices > 1),
    inBandParameterSets: inBand,
    packetsLost: ingest.stats.reorder.lost,
    packetsMalformed: ingest.stats.malformed,
  };
}

/** The codec string an access unit's SPS implies, in the configured string's sample entry. */
function impliedCodec(au: AccessUnit, configured: string): string | undefined {
  if (configured === 'mjpeg') return 'mjpeg';
  for (const nal of splitAnnexB(au.data)) {
    try {
      if (configured.startsWith('avc1.') && (nal[0]! & 0x1f) === 7) return h264CodecString(nal);
      if (!configured.startsWith('avc1.') && ((nal[0]! >> 1) & 0x3f) === 33) {
        return h265CodecString(nal, configured.startsWith('hvc1') ? 'hvc1' : 'hev1');
      }
    } catch {
      return undefined;
    }
  }
  return undefined;
}
