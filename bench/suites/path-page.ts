/** Runs in Chromium for the `path` suite: a pilot that records when each frame completes and is painted. */
import { PilotConnection } from '@svc/pilot';
import { seqDiff32, wrapU32 } from '@svc/wire';

export interface PathSample {
  /** Connect (asking svc-cloud for the offer) to first painted frame, ms. */
  readonly connectToFirstPaintMs: number | null;
  /**
   * Per frame, ms (one clock: the machine's): the send of the datagram that completed it →
   * reassembled in the page.
   */
  readonly sendToAssembledMs: number[];
  /** Per frame, ms: the send of its first datagram → reassembled (adds the frame's pacing spread). */
  readonly firstSendToAssembledMs: number[];
  /** Per painted frame: capture timestamp (µs, 32-bit) and paint time (epoch ms). */
  readonly paints: [number, number][];
  readonly decoded: number;
  readonly lost: number;
  /** The transport the session ran on. */
  readonly backend: string | undefined;
  /** The robot's last `agent-stats` for the video channel (parity, drops, packets sent). */
  readonly robot: Record<string, number | string> | null;
}

const epochMs = () => performance.timeOrigin + performance.now();

/**
 * Asks svc-cloud for an offer and connects with presentation delay 0, watches for `seconds` after
 * connecting, reports.
 */
export async function measurePath(
  signalUrl: string,
  robotId: string,
  token: string,
  seconds: number,
  backend: 'webtransport' | 'webrtc' = 'webtransport',
): Promise<PathSample> {
  const sendToAssembledMs: number[] = [];
  const firstSendToAssembledMs: number[] = [];
  const paints: [number, number][] = [];
  const started = epochMs();
  let firstPaint: number | null = null;
  const area = document.createElement('div');
  document.body.append(area);
  const connection = PilotConnection.connect({
    signalUrl,
    robotId,
    token,
    backend,
    container: area,
    presentationDelayMs: 0,
    onFrame: (_channel, frame) => {
      const nowUs = wrapU32(epochMs() * 1000);
      sendToAssembledMs.push(seqDiff32(nowUs, frame.lastSenderTimestampUs) / 1000);
      firstSendToAssembledMs.push(seqDiff32(nowUs, frame.senderTimestampUs) / 1000);
    },
    onPaint: (_channel, report) => {
      const paintedAt = performance.timeOrigin + report.paintMs;
      firstPaint ??= paintedAt - started;
      paints.push([report.meta.captureTimestampUs % 0x1_0000_0000, paintedAt]);
    },
  });
  const deadline = performance.now() + 15_000;
  while (connection.state !== 'connected' && performance.now() < deadline) await sleep(10);
  await sleep(seconds * 1000);
  const stats = connection.stats();
  const channel = Object.values(stats.channels)[0];
  const robot = Object.entries(stats.robot).find(([id]) => id !== '0')?.[1] ?? null;
  connection.close();
  return {
    connectToFirstPaintMs: firstPaint,
    sendToAssembledMs,
    firstSendToAssembledMs,
    paints,
    decoded: channel?.decoded ?? 0,
    lost: channel?.reassembler.framesLost ?? 0,
    backend: stats.backend,
    robot,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
