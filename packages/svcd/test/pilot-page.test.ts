/**
 * The plain pilot page svc-cloud serves at `/pilot/`, in headless Chromium: a person opens it with
 * a robot id and a pilot session token in the fragment, sees the camera and drives with the keys.
 */
import { createSocket } from 'node:dgram';
import { ffmpegRtpSource, freeUdpPort, type LaunchedChromium, launchChromium } from '@svc/testkit';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { videoChannel } from './support/channels.js';
import { type Fleet, startFleet } from './support/fleet.js';

let chromium: LaunchedChromium;
let fleet: Fleet;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  [chromium, fleet] = await Promise.all([launchChromium(), startFleet()]);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await chromium?.close();
  await fleet?.stop();
});

async function openPage(fragment: string): Promise<Page> {
  const context = await chromium.browser.newContext();
  cleanups.push(() => context.close());
  const page = await context.newPage();
  await page.goto(`${fleet.cloud.address}/pilot/#${fragment}`);
  return page;
}

/** A UDP socket standing in for the robot's motor controller: every datagram it receives, as JSON. */
async function commandOutput() {
  const socket = createSocket('udp4');
  const received: unknown[] = [];
  socket.on('message', (m) => received.push(JSON.parse(m.toString('utf8'))));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return { port: socket.address().port, received };
}

describe('the plain pilot page at /pilot/', () => {
  it('with #robot and #token: the camera plays, the token leaves the address bar, the arrow key drives and its release stops', async () => {
    const rtpPort = await freeUdpPort();
    const motors = await commandOutput();
    const robot = await fleet.robot('pilot-page-robot', [
      ...videoChannel(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d'),
      '[[channel]]',
      'kind = "command"',
      'name = "drive"',
      `output = "udp://127.0.0.1:${motors.port}"`,
      'codec = "json"',
    ]);
    cleanups.push(() => robot.remove());
    void robot.daemon.waitForLog('pilot session opened').then(
      () => {
        const source = ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 600, gop: 30 });
        cleanups.push(() => source.stop());
      },
      () => undefined,
    );
    const token = await robot.token('drive');
    const page = await openPage(`robot=pilot-page-robot&token=${encodeURIComponent(token)}`);

    await page.locator('#state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#role').textContent()).toBe('driver');
    expect(page.url()).not.toContain(token.split('.')[2]!);
    expect(new URL(page.url()).hash).toBe('');
    // Frames decode and paint on the page's canvas.
    await page.locator('#stats', { hasText: /painted [1-9]\d{1,}/ }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#video canvas').count()).toBe(1);

    await page.keyboard.down('ArrowUp');
    await expect.poll(() => motors.received.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await page.keyboard.up('ArrowUp');
    await expect.poll(() => motors.received.at(-1), { timeout: 10_000 }).toEqual({ linear: 0, angular: 0 });
    expect(motors.received[0]).toEqual({ linear: 0.5, angular: 0 });
  });

  it('says what is missing without a robot or a token, and shows the refusal of a forged token', async () => {
    const noRobot = await openPage('');
    await noRobot.locator('#state', { hasText: 'No robot' }).waitFor();
    expect(await noRobot.locator('#state').getAttribute('class')).toBe('error');

    const noToken = await openPage('robot=anything');
    await noToken.locator('#state', { hasText: 'No pilot session token' }).waitFor();

    const robot = await fleet.robot('pilot-page-refused', []);
    cleanups.push(() => robot.remove());
    const [header, payload, signature] = (await robot.token('drive')).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = [
      header,
      Buffer.from(JSON.stringify({ ...claims, scope: 'drive', sub: 'user:mallory' })).toString('base64url'),
      signature,
    ].join('.');
    const refused = await openPage(`robot=pilot-page-refused&token=${encodeURIComponent(forged)}`);
    await refused.locator('#state', { hasText: 'denied' }).waitFor({ timeout: 30_000 });
    expect(await refused.locator('#state').textContent()).toMatch(/refused|token/i);
  });
});
