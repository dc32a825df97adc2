/**
 * Joins that lose nothing (issue 16, item 2): a pilot joining a channel whose publisher ignores
 * recovery requests (2 s GOP at 30 fps) gets its first picture from the replay at join and then
 * every later frame. Real GStreamer publisher, real svc-cloud and svcd, the pilot SDK in Chromium.
 */
import { fileURLToPath } from 'node:url';
import { freeUdpPort, startPublisher } from '@svc/testkit';
import { describe, expect, it } from 'vitest';
import type { WatchResult } from './fixtures/pilot-page.js';
import { useBrowserFleet } from './support/browser-fleet.js';
import { videoChannel } from './support/channels.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));
/** Two seconds at 30 fps. */
const GOP_FRAMES = 60;
const WATCH_SECONDS = 10;

const t = useBrowserFleet();

describe('joins that lose nothing', () => {
  it('a publisher that ignores recovery requests, 2 s GOP: each pilot joining mid-GOP paints from the replay and then gets every frame for 10 s', async () => {
    const port = await freeUdpPort();
    // The camera is a publisher that hears recovery requests and acts on none.
    // Noise at 1.2 Mbit/s: a GOP of about 300 KB, so the replay at join is a burst far over the
    // backlog threshold (two frames at the balanced ceiling, 25 KB). A small picture keeps the
    // encoder light: on a machine busy with other tests a heavier one fell behind and made a
    // backlog of its own, which is congestion, not the join.
    const camera = await startPublisher({
      port,
      answer: false,
      gopFrames: GOP_FRAMES,
      pattern: 'snow',
      width: 320,
      height: 240,
      bitrateKbps: 1200,
    });
    t.defer(() => camera.stop());
    const robot = await t.fleet.robot(
      'join-keeps-all',
      videoChannel(`rtp://127.0.0.1:${port}`, 'avc1.42c00d'),
      {
        publisherControl: camera.controlAddress,
      },
    );
    t.defer(() => robot.remove());
    // Two joins at different points of the GOP (the second a while after the first ended).
    for (const pause of [2700, 1300]) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      const result = await t.chromium.run<WatchResult>({
        entry: page,
        exportName: 'watch',
        args: [t.fleet.cloud.signalUrl, robot.files.robotId, await robot.token('observe'), WATCH_SECONDS],
        timeoutMs: 60_000,
      });
      const stats = Object.values(result.stats.channels)[0]!;
      const robotSide = Object.values(result.stats.robot).find((c) => 'frames_sent' in c) ?? {};
      const context = JSON.stringify({ pilot: stats, robot: robotSide });
      // The first picture came from the replay at join (the GOP so far, decoded up to the current
      // picture), not from a keyframe the publisher was asked for: it ignores requests.
      expect(Number(robotSide.frames_replayed), context).toBeGreaterThan(0);
      expect(stats.painted, context).toBeGreaterThan(0);
      // Then every frame: none lost on the way, none dropped by the robot, none waiting for a
      // keyframe at the pilot.
      expect(stats.reassembler.framesLost, context).toBe(0);
      expect(stats.framesLost, context).toBe(0);
      expect(robotSide.frames_dropped_backlog, context).toBe(0);
      expect(robotSide.frames_dropped_waiting, context).toBe(0);
      expect(robotSide.frames_refused, context).toBe(0);
      expect(stats.waitingForKeyframe, context).toBe(0);
      expect(stats.decodeErrors, context).toBe(0);
      // Every frame after the replay reached the pilot: all the robot had sent by its last
      // statistics (a second old at most), and 10 s at 30 fps less that second.
      const live = stats.reassembler.framesDelivered - Number(robotSide.frames_replayed);
      expect(live, context).toBeGreaterThanOrEqual(Number(robotSide.frames_sent));
      expect(live, context).toBeGreaterThanOrEqual(WATCH_SECONDS * 30 - 30);
    }
  });
});
