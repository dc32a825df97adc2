/**
 * The recovery ladder end to end: a real GStreamer publisher that answers `recovery-request` with
 * a forced keyframe, a real svcd, the pilot SDK in Chromium watching through the link shaper with
 * 5 % loss in bursts of 3 on the robot → pilot direction. The pilot's `loss` reports, and any
 * delta frames the robot drops while lost packets hold its send queue back, drive the ladder:
 * `ltr` first, climbing while loss continues past the grace, back to `ltr` after two quiet
 * seconds.
 */
import { fileURLToPath } from 'node:url';
import { freeUdpPort, startPublisher } from '@svc/testkit';
import { describe, expect, it } from 'vitest';
import type { WatchResult } from './fixtures/pilot-page.js';
import { useBrowserFleet } from './support/browser-fleet.js';
import { shapedRobot } from './support/shaped-robot.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));
const BURSTS = { burstLoss: { rate: 0.05, meanBurst: 3 } };

const t = useBrowserFleet();

describe('recovery ladder under burst loss', () => {
  it('climbs ltr → intra_refresh → idr while loss continues, the publisher answers, and after two quiet seconds starts at ltr again; the picture never freezes past the grace', async () => {
    const port = await freeUdpPort();
    const camera = await startPublisher({ port, gopFrames: 300, bitrateKbps: 1500, pattern: 'snow' });
    t.defer(() => camera.stop());
    const { shaper, offer, token, urls } = await shapedRobot(t, {
      robotId: 'ladder',
      channels: [
        '[[channel]]',
        'kind = "video"',
        'name = "front"',
        `input = "rtp://127.0.0.1:${port}"`,
        'codec = "avc1.42c00d"',
        'fps = 30',
      ],
      publisherControl: camera.controlAddress,
      down: BURSTS,
      seed: 7,
    });
    // The ladder's requests: for the pilot's loss reports, and for delta frames the robot dropped
    // while loss held the send queue back (`backlog`); not the `idr` of a join.
    const requests = () =>
      camera
        .received()
        .filter((m) => m.type === 'recovery-request' && (m.reason === 'pilot-loss' || m.reason === 'backlog'))
        .map((m) => m.kind as string);

    const watching = t.chromium.run<WatchResult & { longestFreezeMs: number }>({
      entry: page,
      exportName: 'watchAt',
      // Long enough for a slow climb: the controller raises parity under this loss, so fewer frames
      // go unrepaired and the rungs' graces pass between loss reports.
      args: [urls, offer.certificateHashes, token, 55],
      timeoutMs: 100_000,
    });
    // Loss until the ladder has reached its top rung.
    await camera.waitFor(() => requests().includes('idr'), 30_000);
    shaper.update({ down: { burstLoss: { rate: 0, meanBurst: 3 } } });
    const climbed = requests();
    // Two quiet seconds bring the ladder back to ltr: loss after them asks for ltr again. Loss
    // signals still arrive after the shaper stops losing (the pilot's last lossy report, up to a
    // second later; delta frames dropped while the send queue drains, later still on a
    // loaded machine). The publisher answers every request with a keyframe, which frees the rung
    // to ask again at the next loss, so three seconds without a request are two without loss.
    const quiet = await requestsSettle(requests, 3_000, 30_000);
    shaper.update({ down: BURSTS });
    await camera.waitFor(() => requests().length > quiet.length, 30_000);
    const result = await watching;

    expect(climbed[0]).toBe('ltr');
    expect(climbed).toContain('intra_refresh');
    expect(climbed.indexOf('intra_refresh')).toBeLessThan(climbed.indexOf('idr'));
    expect(requests()[quiet.length]).toBe('ltr');
    expect(camera.actions().filter((a) => a.event === 'keyframe-forced').length).toBeGreaterThanOrEqual(
      quiet.length,
    );
    const stats = Object.values(result.stats.channels)[0]!;
    expect(stats.reassembler.framesLost).toBeGreaterThan(0); // the loss was real
    expect(stats.painted).toBeGreaterThan(200);
    expect(result.longestFreezeMs).toBeLessThanOrEqual(900); // balanced: recovery_grace_ms
  }, 120_000);
});

/** Resolves with the requests once none has come for `quietMs`; fails after `timeoutMs`. */
async function requestsSettle(
  requests: () => string[],
  quietMs: number,
  timeoutMs: number,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let seen = requests().length;
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline)
      throw new Error(`recovery requests still coming after ${timeoutMs} ms without loss`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const count = requests().length;
    if (count !== seen) {
      seen = count;
      since = Date.now();
    }
  }
  return requests();
}
