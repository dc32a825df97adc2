/**
 * Driver handover as people meet it, in headless Chromium on the plain pilot page (`/pilot/`, the
 * `<svc-pilot>` cockpit) with a real svc-cloud, a real svcd and an ffmpeg camera: an observer asks
 * for control and the driver grants it (the former driver's commands stop reaching the robot's
 * command port, the new driver's arrive, and every page shows who drives), a refusal, a request
 * nobody answers, a takeover refused to an API key's pilot and done by the org's owner, a release;
 * and the org's audit log has each change of hands.
 */
import { createSocket } from 'node:dgram';
import { ffmpegRtpSource, freeUdpPort, type LaunchedChromium, launchChromium } from '@svc/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetRobot } from './support/fleet.js';
import { type Fleet, startFleet } from './support/fleet.js';

const ROBOT = 'handover-rover';
let chromium: LaunchedChromium;
let fleet: Fleet;
let robot: FleetRobot;
const cleanups: (() => Promise<void>)[] = [];
const defer = (cleanup: () => Promise<void>) => cleanups.push(cleanup);
/** Every command datagram the robot wrote to its command port, as text. */
const motors: string[] = [];

/** The three pilots: alice's first tab (drives first), alice's second tab, and carol through an API key. */
let first: Page;
let second: Page;
let carol: Page;
/** How the cockpit names alice to other pilots. */
let aliceName: string;

beforeAll(async () => {
  [chromium, fleet] = await Promise.all([launchChromium(), startFleet()]);
  const socket = createSocket('udp4');
  socket.on('message', (m) => motors.push(m.toString('utf8')));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  defer(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  const port = await freeUdpPort();
  robot = await fleet.robot(ROBOT, [
    '[[channel]]',
    'kind = "video"',
    'name = "front"',
    `input = "rtp://127.0.0.1:${port}"`,
    'codec = "avc1.42c01e"',
    'fps = 30',
    '[[channel]]',
    'kind = "command"',
    'name = "drive"',
    `output = "udp://127.0.0.1:${socket.address().port}"`,
    'codec = "json"',
  ]);
  const camera = ffmpegRtpSource({ codec: 'h264', port, frames: 100_000 });
  defer(() => camera.stop());
  const me = fleet.alice.me as { user?: { name?: string | null; id?: string } };
  aliceName = me.user?.name ?? `user:${fleet.alice.userId}`;

  first = await openCockpit(await robot.token('drive'));
  await first.locator('svc-pilot .driving', { hasText: 'Driving: you' }).waitFor({ timeout: 30_000 });
  second = await openCockpit(await robot.token('drive'));
  carol = await openCockpit(await apiKeyToken('carol'));
}, 180_000);

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await chromium?.close();
  await fleet?.stop();
});

/** A drive token minted with an API key of alice's org, for the customer's own user `subject`. */
async function apiKeyToken(subject: string): Promise<string> {
  const { cloud, alice } = fleet;
  const made = await cloud.call('POST', `/api/v1/orgs/${alice.orgId}/api-keys`, {
    token: alice.accessToken,
    body: { name: 'pilots', scopes: ['sessions:mint'] },
  });
  if (made.status !== 201) throw new Error(`create an API key: ${made.status} ${JSON.stringify(made.body)}`);
  const minted = await cloud.call('POST', '/api/v1/session-tokens', {
    token: made.body.key as string,
    body: { robotId: ROBOT, scope: 'drive', subject },
  });
  if (minted.status !== 201)
    throw new Error(`mint carol's token: ${minted.status} ${JSON.stringify(minted.body)}`);
  return minted.body.token as string;
}

async function openCockpit(token: string): Promise<Page> {
  const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 } });
  defer(() => context.close());
  const page = await context.newPage();
  await page.goto(`${fleet.cloud.address}/pilot/#robot=${ROBOT}&token=${encodeURIComponent(token)}`);
  await page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
  await page.locator('svc-video[data-name="front"][picture="live"]').waitFor({ timeout: 30_000 });
  return page;
}

/** Who the page says drives ("Driving: …" in the bar), without the prefix. */
async function driving(page: Page): Promise<string> {
  const text = (await page.locator('svc-pilot .driving').textContent()) ?? '';
  return text.replace(/^Driving: /, '');
}

/** The page's control notice (what happened to the last request). */
async function notice(page: Page): Promise<string> {
  return (await page.getByRole('status', { name: 'Control' }).textContent()) ?? '';
}

const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });

/** How many commands with `linear` the robot wrote. */
const written = (linear: number) =>
  motors.filter((m) => (JSON.parse(m) as { linear?: number }).linear === linear).length;

describe('driver handover in the cockpit', () => {
  it('request → grant: the new driver drives, the former one no longer reaches the robot, every page shows who drives', async () => {
    // alice's first tab drives: its commands reach the robot.
    await first.keyboard.down('ArrowUp');
    await expect.poll(() => written(0.5), { timeout: 10_000 }).toBeGreaterThan(2);
    await expect.poll(() => driving(second)).toBe(aliceName);
    await expect.poll(() => driving(carol)).toBe(aliceName);
    expect(await button(first, 'Request control').isVisible()).toBe(false);

    // The second tab asks; the driver is prompted with who asks and the time left.
    await button(second, 'Request control').click();
    await expect
      .poll(() => notice(second), { timeout: 10_000 })
      .toMatch(/Waiting for .+ to answer \(\d+ s left\)/);
    const prompt = first.getByRole('alertdialog', { name: 'Control request' });
    await prompt.waitFor({ timeout: 10_000 });
    const asking = (await prompt.textContent()) ?? '';
    expect(asking).toContain(`${aliceName} asks to drive`);
    expect(asking).toMatch(/\d+ s left to answer/);
    await button(first, 'Grant').click();

    // Both pages show the change; the former driver's held key no longer reaches the robot.
    await expect.poll(() => driving(second), { timeout: 10_000 }).toBe('you');
    await expect.poll(() => driving(first), { timeout: 10_000 }).toBe(aliceName);
    await expect.poll(() => driving(carol), { timeout: 10_000 }).toBe(aliceName);
    await expect.poll(() => notice(second)).toMatch(/handed you the slot: you drive now/);
    await expect.poll(() => first.locator('svc-pilot .state').textContent()).toBe('connected');
    const upBefore = written(0.5);
    await second.keyboard.down('ArrowDown');
    await expect.poll(() => written(-0.5), { timeout: 10_000 }).toBeGreaterThan(2);
    // The first tab still holds its key all along: nothing of it arrived since the grant settled.
    expect(written(0.5)).toBe(upBefore);
    // And the SDK itself refuses an observer's command.
    expect(
      await first.evaluate(() =>
        (
          document.querySelector('svc-pilot') as unknown as {
            connection?: { sendCommand(channel: string, payload: string): boolean };
          } | null
        )?.connection?.sendCommand('drive', '{"from":"first"}'),
      ),
    ).toBe(false);
    await first.keyboard.up('ArrowUp');
    await second.keyboard.up('ArrowDown');
    expect(motors.some((m) => m.includes('"from"'))).toBe(false);
  });

  it('refusal: the driver refuses and the asker is told so and stays an observer', async () => {
    await button(first, 'Request control').click();
    const prompt = second.getByRole('alertdialog', { name: 'Control request' });
    await prompt.waitFor({ timeout: 10_000 });
    await button(second, 'Refuse').click();
    await expect
      .poll(() => notice(first), { timeout: 10_000 })
      .toMatch(/the driver refused; you may ask again in 10 s/);
    await expect.poll(() => notice(second)).toMatch(/You refused/);
    expect(await prompt.isVisible()).toBe(false);
    expect(await driving(first)).toBe(aliceName);
    expect(await driving(second)).toBe('you');
  });

  it('timeout: a request the driver does not answer ends after 10 s for both', async () => {
    await button(carol, 'Request control').click();
    const prompt = second.getByRole('alertdialog', { name: 'Control request' });
    await prompt.waitFor({ timeout: 10_000 });
    expect(await prompt.textContent()).toMatch(/^carol asks to drive/);
    await expect
      .poll(() => notice(carol), { timeout: 20_000 })
      .toMatch(/the driver did not answer within 10 s/);
    await expect.poll(() => notice(second), { timeout: 5000 }).toMatch(/you did not answer within 10 s/);
    await prompt.waitFor({ state: 'hidden', timeout: 5000 });
    expect(await driving(second)).toBe('you');
  });

  it('takeover: refused to an API key pilot with the reason shown; done by the org owner at once', async () => {
    await button(carol, 'Take control').click();
    await expect
      .poll(() => notice(carol), { timeout: 10_000 })
      .toMatch(/taking over needs an org admin or owner signed in as a user/);
    expect(await driving(second)).toBe('you');

    await button(first, 'Take control').click();
    await expect.poll(() => driving(first), { timeout: 10_000 }).toBe('you');
    await expect.poll(() => driving(second), { timeout: 10_000 }).toBe(aliceName);
    await expect.poll(() => driving(carol), { timeout: 10_000 }).toBe(aliceName);
    await expect.poll(() => notice(second)).toMatch(/an org admin took the driver slot over/);
    const before = written(0.5);
    await first.keyboard.down('ArrowUp');
    await expect.poll(() => written(0.5), { timeout: 10_000 }).toBeGreaterThan(before + 2);
    await first.keyboard.up('ArrowUp');
  });

  it('release: the slot is free and every page says nobody drives', async () => {
    await button(first, 'Release control').click();
    await expect.poll(() => driving(first), { timeout: 10_000 }).toBe('nobody');
    await expect.poll(() => driving(second), { timeout: 10_000 }).toBe('nobody');
    await expect.poll(() => driving(carol), { timeout: 10_000 }).toBe('nobody');
    expect(await button(first, 'Request control').isVisible()).toBe(true);
  });

  it("the org's audit log has each change of hands", async () => {
    const { cloud, alice } = fleet;
    const actions = async () => {
      const answer = await cloud.call('GET', `/api/v1/orgs/${alice.orgId}/audit?limit=200`, {
        token: alice.accessToken,
      });
      expect(answer.status).toBe(200);
      return (answer.body.entries as { action: string; detail: Record<string, unknown> }[]).filter((e) =>
        e.action.startsWith('driver-slot.'),
      );
    };
    await expect
      .poll(async () => new Set((await actions()).map((e) => e.action)), { timeout: 10_000 })
      .toEqual(
        new Set([
          'driver-slot.acquire',
          'driver-slot.handover',
          'driver-slot.refuse',
          'driver-slot.timeout',
          'driver-slot.takeover',
          'driver-slot.release',
        ]),
      );
    const entries = await actions();
    expect(entries.find((e) => e.action === 'driver-slot.timeout')?.detail).toMatchObject({
      subject: 'carol',
    });
    expect(entries.find((e) => e.action === 'driver-slot.release')?.detail).toMatchObject({
      how: 'released',
    });
  });
});
