/**
 * Runs in Chromium for the `qos` suite: a pilot that reaches the robot through the link shaper
 * (the offer's certificate hashes and session id, the shaper's address) and records every paint
 * and every `agent-stats` the robot sent. Times are epoch ms read with sub-millisecond resolution,
 * the clock the suite's own process reads too.
 */
import { PilotConnection, type PilotConnectionStats, requestOffer, VIDEO_BADGE_ATTRIBUTE } from '@svc/pilot';

/** One painted frame: capture timestamp (µs, 32-bit, as the daemon derived it), paint time, send→paint latency (ms, NaN before the clock offset is known). */
export type QosPaint = [captureKey: number, paintedAt: number, latencyMs: number];

/** One `agent-stats` as received: when, and its channels (values read as the page got them). */
export interface RobotStatsSample {
  readonly at: number;
  readonly channels: Record<string, Record<string, unknown>>;
}

/** What {@link watchThroughShaper} saw. */
export interface QosWatch {
  /** When `PilotConnection.connect` was called (the offer in hand). */
  readonly connectAt: number;
  /** When the connection reported `connected` (`null`: never). */
  readonly connectedAt: number | null;
  readonly paints: QosPaint[];
  readonly robotStats: RobotStatsSample[];
  /** The SDK's statistics at the end. */
  readonly stats: PilotConnectionStats;
}

/** One join of {@link firstPictures}. */
export interface FirstPictureJoin {
  /** `PilotConnection.connect` called (offer in hand) → first painted frame, ms; `null`: none within the limit. */
  readonly connectToFirstPaintMs: number | null;
  /** → `connected` (welcome handled, channels started), ms. */
  readonly connectToConnectedMs: number | null;
  /** Whether the first painted frame carried the "not live" badge (the replay was the keyframe alone). */
  readonly firstPaintNotLive: boolean;
  /** Frames of the robot's replay decoded to reach the current picture. */
  readonly replayed: number;
}

const epochMs = () => performance.timeOrigin + performance.now();

/** How often the page looks for a new `agent-stats` (the robot sends one a second). */
const ROBOT_STATS_POLL_MS = 50;
/** Longest wait for `connected`. */
const CONNECT_LIMIT_MS = 15_000;
/** Longest wait for a join's first picture. */
const FIRST_PAINT_LIMIT_MS = 10_000;

/**
 * Asks svc-cloud for an offer for `robotId`, connects through `shaperUrl` with the offer's
 * certificate hashes and session id, watches for `seconds` after `connected`, and reports.
 * `presentationDelayMs` `null` keeps the profile's.
 */
export async function watchThroughShaper(
  signalUrl: string,
  robotId: string,
  token: string,
  shaperUrl: string,
  seconds: number,
  presentationDelayMs: number | null,
): Promise<QosWatch> {
  const offer = await requestOffer({ signalUrl, robotId, token });
  const paints: QosPaint[] = [];
  const robotStats: RobotStatsSample[] = [];
  let connectedAt: number | null = null;
  const connectAt = epochMs();
  const connection = PilotConnection.connect({
    offer: { urls: [shaperUrl], certificateHashes: offer.certificateHashes, sessionId: offer.sessionId },
    token,
    container: document.body,
    reconnect: false,
    ...(presentationDelayMs !== null && { presentationDelayMs }),
    onState: (state) => {
      if (state === 'connected') connectedAt ??= epochMs();
    },
    onPaint: (_channel, report) => {
      paints.push([
        report.meta.captureTimestampUs % 0x1_0000_0000,
        performance.timeOrigin + report.paintMs,
        report.latencyMs,
      ]);
    },
  });
  // The SDK replaces its `robot` object with each `agent-stats`: a new object is a new message.
  let lastRobot: unknown;
  const poll = setInterval(() => {
    const robot = connection.stats().robot;
    if (robot === lastRobot) return;
    lastRobot = robot;
    if (Object.keys(robot).length > 0) robotStats.push({ at: epochMs(), channels: structuredClone(robot) });
  }, ROBOT_STATS_POLL_MS);
  try {
    const deadline = performance.now() + CONNECT_LIMIT_MS;
    while (connection.state !== 'connected' && performance.now() < deadline) await sleep(10);
    if (connection.state !== 'connected')
      throw new Error(`the pilot did not connect through ${shaperUrl} within ${CONNECT_LIMIT_MS} ms`);
    await sleep(seconds * 1000);
    return { connectAt, connectedAt, paints, robotStats, stats: connection.stats() };
  } finally {
    clearInterval(poll);
    connection.close();
    document.body.replaceChildren();
  }
}

/**
 * Joins `tokens.length` times, one after the other, `gapMs` apart: for each, asks svc-cloud for
 * an offer first, then times `PilotConnection.connect` (through `shaperUrl`) to the first painted
 * frame, and closes.
 */
export async function firstPictures(
  signalUrl: string,
  robotId: string,
  tokens: readonly string[],
  shaperUrl: string,
  presentationDelayMs: number | null,
  gapMs: number,
): Promise<FirstPictureJoin[]> {
  const joins: FirstPictureJoin[] = [];
  for (const token of tokens) {
    const offer = await requestOffer({ signalUrl, robotId, token });
    const area = document.createElement('div');
    document.body.append(area);
    let firstPaintAt: number | null = null;
    let connectedAt: number | null = null;
    let firstPaintNotLive = false;
    const connectAt = performance.now();
    const connection = PilotConnection.connect({
      offer: { urls: [shaperUrl], certificateHashes: offer.certificateHashes, sessionId: offer.sessionId },
      token,
      container: area,
      reconnect: false,
      ...(presentationDelayMs !== null && { presentationDelayMs }),
      onState: (state) => {
        if (state === 'connected') connectedAt ??= performance.now();
      },
      onPaint: (_channel, report) => {
        if (firstPaintAt !== null) return;
        firstPaintAt = report.paintMs;
        // The player shows the badge before it reports the paint of the stale keyframe.
        firstPaintNotLive = area.querySelector(`[${VIDEO_BADGE_ATTRIBUTE}]`) !== null;
      },
    });
    const deadline = performance.now() + FIRST_PAINT_LIMIT_MS;
    while (firstPaintAt === null && connection.state !== 'closed' && performance.now() < deadline)
      await sleep(5);
    const video = Object.values(connection.stats().channels)[0];
    connection.close();
    area.remove();
    joins.push({
      connectToFirstPaintMs: firstPaintAt === null ? null : firstPaintAt - connectAt,
      connectToConnectedMs: connectedAt === null ? null : connectedAt - connectAt,
      firstPaintNotLive,
      replayed: video?.replayed ?? 0,
    });
    await sleep(gapMs);
  }
  return joins;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
