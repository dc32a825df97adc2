/**
 * The rate controller end to end: a real GStreamer publisher, a real svcd, the pilot SDK in
 * Chromium watching through the link shaper. Under loss the controller moves parity up and the
 * video request down, and gives the bytes back once the link is clean; on a link capped below the
 * stream it lowers the request until the backlog stops growing; a publisher that ignores every
 * datagram still reaches the pilot; the driver's profile change reaches the publisher and every
 * pilot.
 */
import { fileURLToPath } from 'node:url';
import type { QosProfileName } from '@svc/qos';
import type { Impairment, LinkShaper } from '@svc/shaper';
import { freeUdpPort, type RunningPublisher, startPublisher } from '@svc/testkit';
import { describe, expect, it } from 'vitest';
import type { TimelinePoint, TimelineResult } from './fixtures/pilot-page.js';
import { useBrowserFleet } from './support/browser-fleet.js';
import { twoLayerVideoChannel, videoChannel } from './support/channels.js';
import { type ShapedRobot, shapedRobot } from './support/shaped-robot.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));

const t = useBrowserFleet();

interface Setup {
  readonly camera: RunningPublisher;
  readonly shaper: LinkShaper;
  readonly watch: (
    seconds: number,
    setQos?: { atSeconds: number; profile: QosProfileName },
  ) => Promise<TimelineResult>;
}

/** A publisher, a robot whose publisher control reaches it, and a shaper in front of the robot. */
async function setUp(
  name: string,
  publisher: { bitrateKbps: number; answer?: boolean },
  down: Impairment,
  scope: 'drive' | 'observe' = 'observe',
): Promise<Setup> {
  const port = await freeUdpPort();
  const camera = await startPublisher({ port, gopFrames: 300, pattern: 'snow', ...publisher });
  t.defer(() => camera.stop());
  const shaped = await shapedRobot(t, {
    robotId: name,
    channels: videoChannel(`rtp://127.0.0.1:${port}`, 'avc1.42c00d'),
    publisherControl: camera.controlAddress,
    down,
    seed: 11,
    scope,
  });
  return {
    camera,
    shaper: shaped.shaper,
    watch: (seconds, setQos) => watchTimeline(shaped, seconds, setQos),
  };
}

/** The pilot in Chromium watches `shaped` through its shaper for `seconds`. */
function watchTimeline(
  shaped: ShapedRobot,
  seconds: number,
  setQos?: { atSeconds: number; profile: QosProfileName },
): Promise<TimelineResult> {
  return t.chromium.run<TimelineResult>({
    entry: page,
    exportName: 'watchTimeline',
    args: [shaped.urls, shaped.offer.certificateHashes, shaped.token, seconds, setQos],
    timeoutMs: (seconds + 30) * 1000,
  });
}

/** The publisher's `video-config` datagrams, in order. */
function videoConfigs(camera: RunningPublisher): Record<string, unknown>[] {
  return camera.received().filter((m) => m.type === 'video-config');
}

/** Points of the timeline between `from` and `to` (epoch ms). */
function between(timeline: readonly TimelinePoint[], from: number, to = Number.POSITIVE_INFINITY) {
  return timeline.filter((p) => p.at >= from && p.at < to);
}

/** Longest gap between painted frames from `from` on, ms. */
function longestFreeze(paints: readonly number[], from: number): number {
  const after = paints.filter((at) => at >= from);
  let longest = 0;
  for (let i = 1; i < after.length; i++) longest = Math.max(longest, after[i]! - after[i - 1]!);
  return longest;
}

const num = (point: TimelinePoint, key: string) => Number(point.robot[key] ?? Number.NaN);

describe('rate controller', () => {
  it('under 5 % burst loss raises parity and lowers the video request within the ceiling, then gives the bytes back on a clean link', async () => {
    const s = await setUp('abr-loss', { bitrateKbps: 3000 }, {});
    // 4 s clean, 10 s of loss, then about 20 s clean: the request climbs back in additive steps,
    // and with two test files sharing the machine 16 s was sometimes one step short (1792 < 1999).
    const watching = s.watch(34);
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const lossFrom = Date.now();
    s.shaper.update({ down: { burstLoss: { rate: 0.05, meanBurst: 3 } } });
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const cleanFrom = Date.now();
    s.shaper.update({ down: { burstLoss: { rate: 0, meanBurst: 3 } } });
    const result = await watching;

    const clean = between(result.timeline, 0, lossFrom);
    const lossy = between(result.timeline, lossFrom + 2_000, cleanFrom);
    const after = between(result.timeline, cleanFrom);
    const start = clean.at(-1)!;
    expect(num(start, 'abr_ceiling_kbps')).toBe(3000);
    expect(num(start, 'abr_fec_delta')).toBeCloseTo(0.15);
    // Loss: more parity for delta frames, the video request lowered to make room for it.
    const worst = lossy.reduce((a, b) => (num(b, 'abr_fec_delta') > num(a, 'abr_fec_delta') ? b : a));
    expect(num(worst, 'abr_fec_delta')).toBeGreaterThan(0.15);
    expect(num(worst, 'abr_bitrate_kbps')).toBeLessThan(num(start, 'abr_bitrate_kbps'));
    // `loss`, or `residual` in a period where a frame could not be repaired.
    expect(lossy.some((p) => p.robot.abr_reason === 'loss' || p.robot.abr_reason === 'residual')).toBe(true);
    const down = videoConfigs(s.camera).find((m) => m.reason === 'abr-down');
    expect(down).toMatchObject({ channel: 1, profile: 'balanced' });
    expect(down!.maxBitrateKbps as number).toBeLessThan(num(start, 'abr_bitrate_kbps'));
    expect(s.camera.actions()).toEqual(
      expect.arrayContaining([expect.objectContaining({ event: 'bitrate-set', kbps: down!.maxBitrateKbps })]),
    );
    // Clean again: parity steps down and the request comes back up, told to the publisher.
    const last = after.at(-1)!;
    expect(num(last, 'abr_fec_delta')).toBeLessThan(num(worst, 'abr_fec_delta'));
    expect(num(last, 'abr_bitrate_kbps')).toBeGreaterThan(num(worst, 'abr_bitrate_kbps'));
    const ups = videoConfigs(s.camera).filter((m) => m.reason === 'abr-up');
    expect(ups.length).toBeGreaterThan(0);
    expect(result.stats.channels['1']?.painted).toBeGreaterThan(500); // of ~1000 in 34 s
  }, 120_000);

  it('on a link capped at 2 Mbit/s, lowers a 3 Mbit/s stream until the backlog stops growing, and the picture stays live', async () => {
    const s = await setUp('abr-cap', { bitrateKbps: 3000 }, { rateKbps: 2000, queueBytes: 256 * 1024 });
    const result = await s.watch(30);
    const settled = result.timeline.filter((p) => p.at >= result.timeline.at(-1)!.at - 8_000);

    const request = num(settled.at(-1)!, 'abr_bitrate_kbps');
    expect(request).toBeLessThan(2000);
    const down = videoConfigs(s.camera).filter((m) => m.reason === 'abr-down');
    expect(down.length).toBeGreaterThan(0);
    expect(
      s.camera
        .actions()
        .filter((a) => a.event === 'bitrate-set')
        .at(-1),
    ).toMatchObject({
      kbps: videoConfigs(s.camera).at(-1)!.maxBitrateKbps,
    });
    // Settled: the robot's backlog for this pilot stays small and does not grow.
    const backlog = settled.map((p) => num(p, 'queue_bytes') + num(p, 'transport_queue_bytes'));
    expect(Math.max(...backlog)).toBeLessThan(200_000);
    expect(settled.at(-1)!.painted - settled[0]!.painted).toBeGreaterThan(150); // of ~240 in 8 s
    expect(longestFreeze(result.paints, settled[0]!.at)).toBeLessThan(1_000);
  });

  it('keeps a publisher that ignores every datagram streaming to the pilot over a capped link, dropping delta frames instead of queueing them', async () => {
    const s = await setUp(
      'abr-deaf',
      { bitrateKbps: 3000, answer: false },
      { rateKbps: 2000, queueBytes: 256 * 1024 },
    );
    const result = await s.watch(20);
    const last = result.timeline.at(-1)!;

    expect(videoConfigs(s.camera).some((m) => m.reason === 'abr-down')).toBe(true); // asked
    expect(s.camera.actions().filter((a) => a.event !== 'ignored')).toEqual([]); // and ignored
    expect(num(last, 'frames_dropped_backlog')).toBeGreaterThan(0);
    // Pictures keep coming, in clumps: each backlog drop leaves deltas that refer to a frame the
    // pilot never got, the deaf publisher never sends the recovery point, and Chromium shows only
    // some of what follows (ADR 0018, "Liveness is driven by the robot"). Counted over the last
    // 15 s, because 8 s windows swing with the clumps (8 to 23 painted; 18 to 30 in 15 s, with
    // freezes of 1 to 7.5 s between clumps, none as long as the 10 s GOP).
    const tail = result.timeline.filter((p) => p.at >= last.at - 15_000);
    expect(tail.at(-1)!.painted - tail[0]!.painted).toBeGreaterThan(10);
    expect(longestFreeze(result.paints, tail[0]!.at)).toBeLessThan(10_000);
    const backlog = tail.map((p) => num(p, 'queue_bytes') + num(p, 'transport_queue_bytes'));
    expect(Math.max(...backlog)).toBeLessThan(1024 * 1024);
  });

  it("applies the driver's profile change: the publisher gets a pilot-request video-config and every pilot the new profile", async () => {
    const s = await setUp('abr-profile', { bitrateKbps: 3000 }, {}, 'drive');
    const result = await s.watch(8, { atSeconds: 2, profile: 'latency' });

    const change = videoConfigs(s.camera).find((m) => m.reason === 'pilot-request');
    expect(change).toMatchObject({ channel: 1, profile: 'latency', maxGopMs: 10_000 });
    expect(change!.maxBitrateKbps as number).toBeLessThanOrEqual(1500);
    const last = result.timeline.at(-1)!;
    expect(last.profile).toBe('latency');
    expect(num(last, 'abr_ceiling_kbps')).toBe(1500);
    expect(result.timeline.at(-1)!.painted).toBeGreaterThan(result.timeline[4]!.painted);
  });

  it('a simulcast pair switches down once when the link drops and back up once when it recovers, without flapping', async () => {
    const [lowPort, highPort] = [await freeUdpPort(), await freeUdpPort()];
    const camera = await startPublisher({
      layers: [
        { name: 'low', port: lowPort, width: 160, height: 120, bitrateKbps: 250 },
        { name: 'high', port: highPort, width: 640, height: 480, bitrateKbps: 1500 },
      ],
      gopFrames: 300,
      pattern: 'snow',
    });
    t.defer(() => camera.stop());
    const { shaper, ...shaped } = await shapedRobot(t, {
      robotId: 'abr-layers',
      channels: twoLayerVideoChannel({ lowPort, highPort, highMinBitrateKbps: 1200 }),
      publisherControl: camera.controlAddress,
      down: {},
      seed: 5,
    });
    const layerDatagrams = () =>
      camera
        .received()
        .filter((m) => m.type === 'layer')
        .map((m) => `${m.reason} ${m.layer} ${m.name}`);
    const watching = watchTimeline({ shaper, ...shaped }, 50);
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    shaper.update({ down: { rateKbps: 700, queueBytes: 64 * 1024 } });
    await camera.waitFor(() => layerDatagrams().length > 0, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    shaper.update({ down: { rateKbps: 0 } });
    const result = await watching;

    expect(layerDatagrams()).toEqual(['down 0 low', 'up 1 high']);
    // What the pilot was sent: the high layer, the low one while the link was narrow, then high again.
    const layers = result.timeline.map((p) => p.robot.layer).filter((l) => l !== undefined);
    const runs = layers.filter((l, i) => i === 0 || l !== layers[i - 1]);
    expect(runs).toEqual([1, 0, 1]);
    expect(camera.actions().filter((a) => a.event === 'keyframe-forced' && a.cause === 'layer')).toHaveLength(
      2,
    );
    expect(result.timeline.at(-1)!.painted).toBeGreaterThan(900); // of ~1500 in 50 s
  }, 120_000);
});
