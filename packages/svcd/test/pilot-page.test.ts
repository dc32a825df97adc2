/**
 * The plain pilot page svc-cloud serves at `/pilot/`, in headless Chromium: a person opens it with
 * a robot id and a pilot session token in the fragment and sees the camera in the cockpit
 * (`<svc-pilot>`; the cockpit's own behaviour is in `cockpit-page.test.ts`).
 */
import { ffmpegRtpSource, freeUdpPort } from '@svc/testkit';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { videoChannel } from './support/channels.js';
import { useCockpitFleet } from './support/cockpit-fleet.js';

const t = useCockpitFleet();

async function openPage(fragment: string): Promise<Page> {
  return (await t.openPilotPage(fragment)).page;
}

describe('the plain pilot page at /pilot/', () => {
  it('with #robot and #token: the cockpit plays the camera, the token leaves the address bar for session storage, and a reload resumes', async () => {
    const rtpPort = await freeUdpPort();
    const robot = await t.fleet.robot('pilot-page-robot', [
      ...videoChannel(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d'),
    ]);
    t.defer(() => robot.remove());
    const source = ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 3000, gop: 30 });
    t.defer(() => source.stop());
    const token = await robot.token('drive');
    const page = await openPage(`robot=pilot-page-robot&token=${encodeURIComponent(token)}`);

    await page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    await page.locator('svc-pilot dd[data-key="role"]', { hasText: 'driver' }).waitFor({ timeout: 10_000 });
    expect(page.url()).not.toContain(token.split('.')[2]!);
    expect(new URL(page.url()).hash).toBe('');
    expect(await page.evaluate(() => sessionStorage.getItem('svc.pilot'))).toContain(token);
    // Frames decode and paint on the channel's canvas, inside its <svc-video>.
    await page
      .locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ })
      .waitFor({ timeout: 30_000 });
    expect(await page.locator('svc-video canvas[data-svc-video-canvas]').count()).toBe(1);

    // A reload (no fragment any more) connects again with the kept token.
    await page.reload();
    await page.locator('svc-pilot .robot', { hasText: 'pilot-page-robot' }).waitFor();
    await page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    // Leave forgets it.
    await page.getByRole('button', { name: 'Leave' }).click();
    await page.locator('#message', { hasText: 'You left' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('svc.pilot'))).toBeNull();
  });

  it('says what is missing without a robot or a token', async () => {
    const noRobot = await openPage('');
    await noRobot.locator('#message', { hasText: 'No robot' }).waitFor();

    const noToken = await openPage('robot=anything');
    const refusal = noToken.locator('svc-pilot .refusal');
    await refusal.waitFor();
    expect(await refusal.getAttribute('data-code')).toBe('no-token');
    expect(await refusal.textContent()).toContain('#robot=<id>&token=<token>');
  });
});
