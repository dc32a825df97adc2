/**
 * A joining pilot's first picture: the robot replays the latest keyframe and what followed so the
 * pilot paints the current picture without waiting for the source's next keyframe; over the
 * replay bound it gets the keyframe alone, marked not live, and the publisher is asked for an IDR.
 * Real GStreamer publishers (one that ignores publisher control, one that answers it), real
 * svc-cloud and svcd, the pilot SDK in Chromium.
 */
import { createSocket } from 'node:dgram';
import { fileURLToPath } from 'node:url';
import { freeUdpPort, type RunningPublisher, startPublisher } from '@svc/testkit';
import { describe, expect, it } from 'vitest';
import type { WatchResult } from './fixtures/pilot-page.js';
import { useBrowserFleet } from './support/browser-fleet.js';
import type { FleetRobot } from './support/fleet.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));
/** Ten seconds at 30 fps: no natural keyframe comes while a test watches. */
const GOP_FRAMES = 300;

const t = useBrowserFleet();

/** A publisher streaming to a new RTP port, and a robot of alice's org ingesting it. */
async function publishedRobot(
  robotId: string,
  publisher: { answer: boolean; answerDelayMs?: number; pattern?: 'ball' | 'snow'; fixedBitrate?: boolean },
  channelExtra: string[] = [],
): Promise<{ robot: FleetRobot; camera: RunningPublisher }> {
  const port = await freeUdpPort();
  const camera = await startPublisher({
    port,
    answer: publisher.answer,
    ...(publisher.answerDelayMs !== undefined && { answerDelayMs: publisher.answerDelayMs }),
    ...(publisher.fixedBitrate !== undefined && { fixedBitrate: publisher.fixedBitrate }),
    gopFrames: GOP_FRAMES,
    ...(publisher.pattern !== undefined && { pattern: publisher.pattern }),
  });
  t.defer(() => camera.stop());
  const robot = await t.fleet.robot(
    robotId,
    [
      '[[channel]]',
      'kind = "video"',
      'name = "front"',
      `input = "rtp://127.0.0.1:${port}"`,
      'codec = "avc1.42c00d"',
      'fps = 30',
      ...channelExtra,
    ],
    { publisherControl: camera.controlAddress },
  );
  t.defer(() => robot.remove());
  return { robot, camera };
}

const watch = async (robot: FleetRobot, seconds: number) =>
  t.chromium.run<WatchResult>({
    entry: page,
    exportName: 'watch',
    args: [t.fleet.cloud.signalUrl, robot.files.robotId, await robot.token('observe'), seconds],
    timeoutMs: 60_000,
  });

const video = (r: WatchResult) => Object.values(r.stats.channels)[0]!;

describe('first picture at join', () => {
  it('a publisher that ignores requests, 10 s GOP: joining mid-GOP, the pilot decodes the replay and paints from the current picture on, never waiting for a keyframe', async () => {
    // Publisher control goes to a socket that only listens: nobody acts on it.
    const control = createSocket('udp4');
    const heard: Record<string, unknown>[] = [];
    control.on('message', (m) => heard.push(JSON.parse(m.toString('utf8')) as Record<string, unknown>));
    await new Promise<void>((resolve) => control.bind(0, '127.0.0.1', resolve));
    t.defer(() => new Promise<void>((resolve) => control.close(() => resolve())));
    const port = await freeUdpPort();
    const robot = await t.fleet.robot(
      'replay-live',
      [
        '[[channel]]',
        'kind = "video"',
        'name = "front"',
        `input = "rtp://127.0.0.1:${port}"`,
        'codec = "avc1.42c00d"',
        'fps = 30',
      ],
      { publisherControl: `127.0.0.1:${control.address().port}` },
    );
    t.defer(() => robot.remove());
    // The robot listens before the camera starts, so it has the GOP's keyframe.
    const camera = await startPublisher({ port, answer: false, gopFrames: GOP_FRAMES });
    t.defer(() => camera.stop());
    const result = await watch(robot, 3);
    const stats = video(result);
    expect(stats.replayed, JSON.stringify(result.stats)).toBeGreaterThan(0); // frames before the current one: decoded, not painted
    expect(stats.waitingForKeyframe).toBe(0);
    expect(stats.painted, JSON.stringify(result.stats)).toBeGreaterThanOrEqual(45);
    expect(result.badges).toEqual([]);
    // The join asked for an IDR; nobody answered, and the stream went on.
    expect(heard).toContainEqual({ type: 'recovery-request', channel: 1, kind: 'idr', reason: 'join' });
  });

  it('over the replay bound: the keyframe alone, badged as not live, until the IDR the publisher sends on request makes it live', async () => {
    // 100 kbit/s lowers the replay bound to 25 KB: a few seconds of noise at the encoder's fixed
    // 1000 kbit/s exceed it (the rate controller's request would keep it far below). The IDR
    // comes 500 ms after the request, as from an encoder behind a slow link: one answering at once
    // can overtake the replayed keyframe, and the pilot then rightly paints the live picture first.
    const { robot, camera } = await publishedRobot(
      'replay-bound',
      { answer: true, answerDelayMs: 500, pattern: 'snow', fixedBitrate: true },
      ['max_bitrate_kbps = 100'],
    );
    // A first pilot watches for a while (its join brings an IDR too), so the GOP grows past the bound.
    await watch(robot, 3);
    // A recovery request near the end of that watch (loss on a loaded machine) forces a keyframe,
    // and a GOP younger than the bound would replay live: join once a second has passed without one.
    const forced = () => camera.actions().filter((a) => a.event === 'keyframe-forced').length;
    let quietSince = Date.now();
    for (let seen = forced(); Date.now() - quietSince < 1_000; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (forced() !== seen) [seen, quietSince] = [forced(), Date.now()];
    }
    const forcedBefore = forced();
    const result = await watch(robot, 3);
    const stats = video(result);
    expect(
      result.badges.some((text) => text.startsWith('Not live')),
      JSON.stringify(result.stats),
    ).toBe(true);
    expect(result.badgeAtEnd).toBe(false);
    expect(stats.painted).toBeGreaterThanOrEqual(30);
    expect(camera.actions().filter((a) => a.event === 'keyframe-forced').length).toBeGreaterThan(
      forcedBefore,
    );
  });
});
