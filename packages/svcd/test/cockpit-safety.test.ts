/**
 * What the cockpit (`<svc-pilot>` on `/pilot/`) does when the camera lets the driver down, in
 * headless Chromium with a real svc-cloud, svcd and ffmpeg camera: a frozen picture is covered and
 * its age shown, the driver's commands stop reaching the robot while the stop command still does,
 * and a camera that sends nothing is named with the daemon's reason.
 */
import { ffmpegRtpSource, freeUdpPort } from '@svc/testkit';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { useCockpitFleet } from './support/cockpit-fleet.js';

const t = useCockpitFleet();

function videoLines(port: number): string[] {
  return [
    '[[channel]]',
    'kind = "video"',
    'name = "front"',
    `input = "rtp://127.0.0.1:${port}"`,
    'codec = "avc1.42c01e"',
    'fps = 30',
  ];
}

async function openCockpit(robotId: string, token: string): Promise<Page> {
  const { page } = await t.openPilotPage(`robot=${robotId}&token=${encodeURIComponent(token)}`, {
    viewport: { width: 1280, height: 900 },
  });
  await page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
  return page;
}

/** The overlay's text over the front camera (title and detail). */
function overlayText(page: Page): Promise<string> {
  return page
    .locator('svc-video[data-name="front"] .overlay')
    .textContent()
    .then((t) => t ?? '');
}

/** The largest "N ms" / "N.N s" age in a text, ms. */
function ageIn(text: string): number {
  const ages = [...text.matchAll(/(\d+(?:\.\d+)?) (ms|s)\b/g)].map(([, n, unit]) =>
    unit === 's' ? Number(n) * 1000 : Number(n),
  );
  return ages.length === 0 ? Number.NaN : Math.max(...ages);
}

describe('the cockpit when the camera fails', () => {
  it('covers a frozen picture with its growing age and holds the driver commands, the stop still goes; the picture comes back with the camera', async () => {
    const port = await freeUdpPort();
    const motors = await t.robotProgram();
    const robot = await t.fleet.robot('cockpit-frozen', [
      ...videoLines(port),
      '[[channel]]',
      'kind = "command"',
      'name = "drive"',
      `output = "udp://127.0.0.1:${motors.port}"`,
      'codec = "json"',
    ]);
    t.defer(() => robot.remove());
    let camera = ffmpegRtpSource({ codec: 'h264', port, frames: 100_000 });
    t.defer(() => camera.stop());
    const page = await openCockpit('cockpit-frozen', await robot.token('drive'));
    const video = page.locator('svc-video[data-name="front"]');
    await page.locator('svc-video[data-name="front"][picture="live"]').waitFor({ timeout: 30_000 });
    const drives = () => motors.received.map((m) => JSON.parse(m) as { type: string; linear?: number });

    // Driving: commands reach the robot while the picture is live.
    await page.keyboard.down('ArrowUp');
    await expect
      .poll(() => drives().filter((c) => c.linear === 0.5).length, { timeout: 10_000 })
      .toBeGreaterThan(2);

    // The camera stops: the picture freezes, the overlay says so with an age that grows.
    await camera.stop();
    await page.locator('svc-video[data-name="front"][picture="stale"]').waitFor({ timeout: 10_000 });
    const heldAt = drives().length;
    const firstAge = ageIn(await overlayText(page));
    expect(firstAge).toBeGreaterThanOrEqual(300);
    await expect
      .poll(async () => ageIn(await overlayText(page)), { timeout: 10_000 })
      .toBeGreaterThan(firstAge + 500);
    // The key is still held, the page keeps making commands, none reached the robot since.
    expect(
      drives()
        .slice(heldAt + 1)
        .filter((c) => c.linear === 0.5),
    ).toEqual([]);
    // The HUD turns red: the cockpit carries the stale state.
    expect(await page.locator('svc-pilot').getAttribute('stale')).not.toBeNull();
    // The daemon names the camera's silence, with its reason, over the frozen picture.
    await expect.poll(() => video.getAttribute('overlay'), { timeout: 10_000 }).toBe('no-data');
    expect(await overlayText(page)).toMatch(/No video from the camera[\s\S]*no RTP packets[\s\S]*old/i);

    // The stop button still reaches the robot.
    await page.getByRole('button', { name: 'Stop the robot' }).click();
    await expect.poll(() => drives().at(-1)?.type, { timeout: 10_000 }).toBe('stop');
    const afterStop = drives().length;

    // The camera comes back: the picture is live, the overlay gone, driving resumes.
    camera = ffmpegRtpSource({ codec: 'h264', port, frames: 100_000 });
    await page.locator('svc-video[data-name="front"][picture="live"]').waitFor({ timeout: 30_000 });
    await expect.poll(() => video.getAttribute('overlay'), { timeout: 10_000 }).toBe('none');
    // The stop ended the drive: the driver presses again.
    await page.keyboard.up('ArrowUp');
    await page.keyboard.down('ArrowUp');
    await expect
      .poll(
        () =>
          drives()
            .slice(afterStop)
            .filter((c) => c.linear === 0.5).length,
        { timeout: 10_000 },
      )
      .toBeGreaterThan(0);
    await page.keyboard.up('ArrowUp');
  });

  it('names a camera that sends nothing (a wrong port) with the daemon reason, never a black picture as live', async () => {
    const configured = await freeUdpPort();
    const robot = await t.fleet.robot('cockpit-wrong-port', videoLines(configured));
    t.defer(() => robot.remove());
    // The camera sends to another port than the robot listens on.
    const elsewhere = await freeUdpPort();
    const camera = ffmpegRtpSource({ codec: 'h264', port: elsewhere, frames: 100_000 });
    t.defer(() => camera.stop());
    const page = await openCockpit('cockpit-wrong-port', await robot.token('observe'));
    const video = page.locator('svc-video[data-name="front"]');
    await expect.poll(() => video.getAttribute('overlay'), { timeout: 15_000 }).toBe('no-data');
    const text = await overlayText(page);
    expect(text).toMatch(/No video from the camera/);
    expect(text).toContain(String(configured));
    expect(await video.getAttribute('picture')).toBe('waiting');
    expect(
      await page
        .locator('svc-pilot .state')
        .textContent()
        .then((t) => t ?? ''),
    ).toMatch(/connected/);
  });
});
