/**
 * Runs in Chromium for the `path` suite's glass figures: a pilot on the default profile (the
 * presenter's hold as it is shipped) that reads the glass source's pixel code back from every
 * painted picture, and notes the HUD's picture age and the frames it received.
 */
import { type JitterTuning, PilotConnection, requestOffer } from '@svc/pilot';
import { activeFecKernel } from '@svc/wire';
import { BLOCK, CODE_BLOCKS, CODE_MODULUS, codeDiffMs, readGlassCode } from '../glass-code.js';

/** What {@link measureGlass} is asked to do. */
export interface GlassParams {
  readonly signalUrl: string;
  readonly robotId: string;
  readonly token: string;
  /** How long to watch after the first picture, s. */
  readonly seconds: number;
  /** Connect through these URLs (a link shaper) instead of the robot's own candidates. */
  readonly viaUrls?: readonly string[];
  /** Tuning of the adaptive hold other than the SDK's defaults (for trying other settings). */
  readonly jitter?: JitterTuning;
  /** The SDK's `relay` option (`'only'`: through svc-cloud's relay, `false`: never through it). */
  readonly relay?: boolean | 'only';
  /** The SDK's `backend` option (default: its own choice, WebTransport here). */
  readonly backend?: 'webtransport' | 'webrtc';
}

/** One painted picture. */
export type GlassPaint = [
  /** The capture time the picture carries (epoch ms modulo 2^24). */
  code: number,
  /** Capture → painted, ms, from the pixels. */
  glassMs: number,
  /** The picture's age as the SDK computes it for the HUD (NaN when it has none). */
  pictureAgeMs: number,
  /** Painted later than its due time (1) or on time (0). */
  late: number,
  /** Painted at, ms after the first picture. */
  atMs: number,
  /** A keyframe (1) or not (0). */
  keyframe: number,
  /** Capture → the frame whole at the pilot, ms (machine clock: the source and the page share it). */
  wholeMs: number,
  /** Whole → decoded, ms. */
  decodeMs: number,
  /** The hold the frame's due time was set with, ms. */
  holdMs: number,
  /** Paint − due, ms (how late a late frame was; 0 or a paint opportunity's slack otherwise). */
  afterDueMs: number,
];

/** What {@link measureGlass} saw. */
export interface GlassSample {
  readonly paints: GlassPaint[];
  /** Painted pictures whose code could not be read. */
  readonly unreadable: number;
  /** Video frame ids the reassembler delivered, in order, with their arrival (ms after the first). */
  readonly frames: [frameId: number, atMs: number][];
  readonly connectToFirstPaintMs: number | null;
  /** The channel's statistics at the end. */
  readonly stats: unknown;
  /** The FEC kernel the page used. */
  readonly kernel: string;
  /** The connection's statistics at the end (path, robot-side counters). */
  readonly connection: unknown;
  /** The robot's counters of the first channel every 250 ms: [ms after the first picture, counters]. */
  readonly robotSeries: [number, unknown][];
  /** `performance.timeOrigin` of the page: the connection's times (`pathSwitches[].atMs`) plus it are epoch ms. */
  readonly timeOrigin: number;
  /** When the first picture was painted, epoch ms. */
  readonly firstPaintEpochMs: number;
}

const epochMs = () => performance.timeOrigin + performance.now();

/** Connects, watches for `seconds` after the first picture, reports. */
export async function measureGlass(params: GlassParams): Promise<GlassSample> {
  const paints: GlassPaint[] = [];
  const frames: [number, number][] = [];
  let unreadable = 0;
  const started = epochMs();
  let firstPaint: number | undefined;
  const area = document.createElement('div');
  document.body.append(area);
  const connection = PilotConnection.connect({
    ...(await addressOf(params)),
    token: params.token,
    container: area,
    reconnect: false,
    ...(params.jitter !== undefined && { jitter: params.jitter }),
    ...(params.relay !== undefined && { relay: params.relay }),
    ...(params.backend !== undefined && { backend: params.backend }),
    onFrame: (_channel, frame) => {
      frames.push([frame.frameId, epochMs() - started]);
    },
    onPaint: (channel, report) => {
      const paintedAt = performance.timeOrigin + report.paintMs;
      firstPaint ??= paintedAt;
      const canvas = area.querySelector<HTMLCanvasElement>(`[data-svc-channel="${channel}"] canvas`);
      const code = canvas === null ? undefined : readCanvas(canvas);
      if (code === undefined) {
        unreadable++;
        return;
      }
      const glassMs = codeDiffMs(Math.floor(paintedAt) % CODE_MODULUS, code) + (paintedAt % 1);
      const age = (report as { pictureAgeMs?: number }).pictureAgeMs;
      const meta = report.meta as { keyframe?: boolean; receivedMs?: number; decodedMs?: number };
      const receivedMs = meta.receivedMs ?? report.paintMs;
      const wholeMs = glassMs - (report.paintMs - receivedMs);
      paints.push([
        code,
        glassMs,
        age ?? Number.NaN,
        report.late ? 1 : 0,
        paintedAt - firstPaint,
        meta.keyframe === true ? 1 : 0,
        wholeMs,
        (meta.decodedMs ?? receivedMs) - receivedMs,
        report.holdMs,
        report.paintMs - report.dueMs,
      ]);
    },
  });
  const deadline = performance.now() + 20_000;
  while (firstPaint === undefined && performance.now() < deadline) await sleep(20);
  if (firstPaint === undefined) {
    connection.close();
    throw new Error(`no picture within 20 s (connection ${connection.state})`);
  }
  const robotSeries: [number, unknown][] = [];
  const sampler = setInterval(() => {
    const robot = Object.values(connection.stats().robot).find((r) => 'rtt_ms' in r);
    if (robot !== undefined && firstPaint !== undefined) robotSeries.push([epochMs() - firstPaint, robot]);
  }, 250);
  await sleep(params.seconds * 1000);
  clearInterval(sampler);
  const stats = connection.stats();
  connection.close();
  return {
    paints,
    unreadable,
    frames,
    connectToFirstPaintMs: firstPaint - started,
    stats: Object.values(stats.channels)[0] ?? null,
    kernel: activeFecKernel(),
    connection: { ...stats, channels: undefined },
    robotSeries,
    timeOrigin: performance.timeOrigin,
    firstPaintEpochMs: firstPaint,
  };
}

/**
 * Where to connect: through signalling, or (with `viaUrls`) the robot's offer with its candidates
 * replaced by the shaper's URLs.
 */
async function addressOf(params: GlassParams) {
  if (params.viaUrls === undefined) return { signalUrl: params.signalUrl, robotId: params.robotId };
  const offer = await requestOffer({
    signalUrl: params.signalUrl,
    token: params.token,
    robotId: params.robotId,
  });
  return {
    offer: { urls: params.viaUrls, certificateHashes: offer.certificateHashes, sessionId: offer.sessionId },
  };
}

/** Reads the code row from the canvas: the centre of each square. */
function readCanvas(canvas: HTMLCanvasElement): number | undefined {
  const ctx = canvas.getContext('2d');
  if (ctx === null || canvas.width < CODE_BLOCKS * BLOCK) return undefined;
  const row = ctx.getImageData(0, BLOCK / 2, CODE_BLOCKS * BLOCK, 1).data;
  return readGlassCode((square) => {
    const i = (square * BLOCK + BLOCK / 2) * 4;
    return 0.299 * row[i]! + 0.587 * row[i + 1]! + 0.114 * row[i + 2]!;
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Connects as the driver (through `viaUrls` when given), waits until connected, then stays
 * `holdSeconds` before returning when it did (epoch ms); the caller closes the page then.
 */
export async function holdDriver(params: GlassParams, holdSeconds: number): Promise<number> {
  const area = document.createElement('div');
  document.body.append(area);
  const connection = PilotConnection.connect({
    ...(await addressOf(params)),
    token: params.token,
    container: area,
    reconnect: false,
  });
  const deadline = performance.now() + 20_000;
  while (connection.state !== 'connected' && performance.now() < deadline) await sleep(20);
  if (connection.state !== 'connected') throw new Error(`not connected within 20 s (${connection.state})`);
  await sleep(holdSeconds * 1000);
  return epochMs();
}
