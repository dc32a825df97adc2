import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort, type LaunchedChromium, launchChromium } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCloud, startCloud } from '../src/server.js';

describe('the console signs a person in through the embedded development provider', () => {
  let chromium: LaunchedChromium;
  let cloud: RunningCloud;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-console-test-'));
    cloud = await startCloud({
      SVC_PORT: String(await freeTcpPort()),
      SVC_DATA_DIR: dataDir,
      SVC_LOG_LEVEL: 'warn',
    });
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await cloud?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('from the sign-in button to "signed in as", with an organisation of their own', async () => {
    const context = await chromium.browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${cloud.config.publicUrl}/console/`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The provider's login page: pick a known test user.
    await page.getByRole('button', { name: /Alice/ }).click();
    await expect
      .poll(() => page.locator('#who').textContent(), { timeout: 15_000 })
      .toBe('alice@example.test');
    expect(await page.getByText('Your organisations').isVisible()).toBe(true);
    expect(await page.locator('td').first().textContent()).toMatch(/organisation/);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a typed name signs in as a new user', async () => {
    const context = await chromium.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${cloud.config.publicUrl}/console/`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('textbox').fill('zoe');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#who').textContent(), { timeout: 15_000 }).toBe('zoe@example.test');
    await context.close();
  });
});
