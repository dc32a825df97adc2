/**
 * The recovery ladder end to end: a real GStreamer publisher that answers `recovery-request` with
 * a forced keyframe, a real svcd, the pilot SDK in Chromium watching through the link shaper with
 * 5 % loss in bursts of 3 on the robot → pilot direction. The pilot's `loss` reports drive the
 * ladder: `ltr` first, climbing while loss continues past the grace, back to `ltr` after two
 * quiet seconds.
 */
import { fileURLToPath } from 'node:url';
import { LinkShaper } from '@svc/shaper';
import { freeUdpPort, startPublisher } from '@svc/testkit';
import { describe, expect, it } from 'vitest';
import type { OfferSummary, WatchResult } from './fixtures/pilot-page.js';
import { useBrowserFleet } from './support/browser-fleet.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));
const BURSTS = { burstLoss: { rate: 0.05, meanBurst: 3 } };

const t = useBrowserFleet();

describe('recovery ladder under burst loss', () => {
  it('climbs ltr → intra_refresh → idr while loss continues, the publisher answers, and after two quiet seconds starts at ltr again; the picture never freezes past the grace', async () => {
    const port = await freeUdpPort();
    const camera = await startPublisher({ port, gopFrames: 300, bitrateKbps: 1500, pattern: 'snow' });
    t.defer(() => camera.stop());
    const robot = await t.fleet.robot(
      'ladder',
      [
        '[[channel]]',
        'kind = "video"',
        'name = "front"',
        `input = "rtp://127.0.0.1:${port}"`,
        'codec = "avc1.42c00d"',
        'fps = 30',
      ],
      { publisherControl: camera.controlAddress },
    );
    t.defer(() => robot.remove());
    const shaper = await LinkShaper.start({
      listen: { address: '127.0.0.1', port: 0 },
      target: { address: '127.0.0.1', port: robot.files.quicPort },
      down: BURSTS,
      seed: 7,
    });
    t.defer(() => shaper.close());

    const token = await robot.token('observe');
    const { offer } = await t.chromium.run<{ offer: OfferSummary | null }>({
      entry: page,
      exportName: 'tryOffer',
      args: [t.fleet.cloud.signalUrl, 'ladder', token],
    });
    const requests = () =>
      camera
        .received()
        .filter((m) => m.type === 'recovery-request' && m.reason === 'pilot-loss')
        .map((m) => m.kind as string);

    const watching = t.chromium.run<WatchResult & { longestFreezeMs: number }>({
      entry: page,
      exportName: 'watchAt',
      args: [[`https://127.0.0.1:${shaper.address().port}/`], offer!.certificateHashes, token, 16],
      timeoutMs: 60_000,
    });
    // Loss until the ladder has reached its top rung.
    await camera.waitFor(() => requests().includes('idr'), 30_000);
    shaper.update({ down: { burstLoss: { rate: 0, meanBurst: 3 } } });
    const climbed = requests();
    // Two quiet seconds bring the ladder back to ltr: loss after them asks for ltr again.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    shaper.update({ down: BURSTS });
    await camera.waitFor(() => requests().length > climbed.length, 30_000);
    const result = await watching;

    expect(climbed[0]).toBe('ltr');
    expect(climbed).toContain('intra_refresh');
    expect(climbed.indexOf('intra_refresh')).toBeLessThan(climbed.indexOf('idr'));
    expect(requests()[climbed.length]).toBe('ltr');
    expect(camera.actions().filter((a) => a.event === 'keyframe-forced').length).toBeGreaterThanOrEqual(
      climbed.length,
    );
    const stats = Object.values(result.stats.channels)[0]!;
    expect(stats.reassembler.framesLost).toBeGreaterThan(0); // the loss was real
    expect(stats.painted).toBeGreaterThan(200);
    expect(result.longestFreezeMs).toBeLessThanOrEqual(900); // balanced: recovery_grace_ms
  });
});
