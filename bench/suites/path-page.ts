/** Runs in Chromium for the `path` suite: a pilot that records when each frame completes and is painted. */
import { PilotConnection } from '@svc/pilot';
import { seqDiff32, wrapU32 } from '@svc/wire';

export interface PathSample {
  /** Connect to first painted frame, ms. */
  readonly connectToFirstPaintMs: number | null;
  /** Daemon send → reassembled in the page, ms, per frame (one clock: the machine's). */
  readonly sendToAssembledMs: number[];
  /** Per painted frame: capture timestamp (µs, 32-bit) and paint time (epoch ms). */
  readonly paints: [number, number][];
  readonly decoded: number;
  readonly lost: number;
}

const epochMs = () => performance.timeOrigin + performance.now();

/** Connects with presentation delay 0, watches for `seconds` after connecting, reports. */
export async function measurePath(url: string, hash: string, seconds: number): Promise<PathSample> {
  const sendToAssembledMs: number[] = [];
  const paints: [number, number][] = [];
  const started = epochMs();
  let firstPaint: number | null = null;
  const area = document.createElement('div');
  document.body.append(area);
  const connection = PilotConnection.connect({
    url,
    certificateHashes: [hash],
    token: 'bench',
    container: area,
    presentationDelayMs: 0,
    onFrame: (_channel, frame) =>
      sendToAssembledMs.push(seqDiff32(wrapU32(epochMs() * 1000), frame.senderTimestampUs) / 1000),
    onPaint: (_channel, report) => {
      const paintedAt = performance.timeOrigin + report.paintMs;
      firstPaint ??= paintedAt - started;
      paints.push([report.meta.captureTimestampUs % 0x1_0000_0000, paintedAt]);
    },
  });
  const deadline = performance.now() + 15_000;
  while (connection.state !== 'connected' && performance.now() < deadline) await sleep(10);
  await sleep(seconds * 1000);
  const channel = Object.values(connection.stats().channels)[0];
  connection.close();
  return {
    connectToFirstPaintMs: firstPaint,
    sendToAssembledMs,
    paints,
    decoded: channel?.decoded ?? 0,
    lost: channel?.reassembler.framesLost ?? 0,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
