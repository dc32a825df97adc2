/**
 * A console session over time, in headless Chromium against a real svc-cloud with its development
 * provider: a restart of svc-cloud signs nobody out; the access token renews itself before it
 * expires; and when the session does end (the provider no longer knows it), the page says so and
 * signing in again returns to the same page.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type CloudProcess,
  expectSignedIn,
  type LaunchedChromium,
  launchChromium,
  openTab,
  pickAtLoginPage,
  signIn,
  startCloudProcess,
  tabTokens,
} from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** Past the access token's lifetime (an hour). */
const PAST_EXPIRY = '01:05:00';

describe('a console session over time (development provider)', () => {
  let chromium: LaunchedChromium;
  let cloud: CloudProcess;

  beforeAll(async () => {
    [cloud, chromium] = await Promise.all([startCloudProcess(), launchChromium()]);
  });
  afterAll(async () => {
    await chromium?.close();
    await cloud?.stop();
  });

  it('a restart of svc-cloud keeps you signed in, and the session renews itself past the token lifetime', async () => {
    const tab = await openTab(chromium, `${cloud.address}/console/`);
    const { page } = tab;
    await page.clock.install();
    await page.reload();
    await signIn(page, { button: /Alice/ });
    await expectSignedIn(page, 'alice@example.test');
    const before = await tabTokens(page);

    await cloud.restart();
    await page.reload();
    await expectSignedIn(page, 'alice@example.test');
    await page.getByRole('heading', { level: 2, name: 'Fleet' }).waitFor();

    // An hour later (in the page), the refresh token gave new tokens; the API takes them.
    await page.clock.fastForward(PAST_EXPIRY);
    await expect
      .poll(async () => (await tabTokens(page)).accessToken, { timeout: 15_000 })
      .not.toBe(before.accessToken);
    // The jump fired the old token's expiry and its renewal together: a "session ended" dialog may
    // have opened for the moment before the renewed token came. Its closing animation runs on the
    // page's clock, which stands still here unless moved.
    await page.clock.runFor(2000);
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Members' }).click();
    await page.getByRole('cell', { name: /alice@example.test/ }).waitFor();
    expect(await page.getByRole('dialog', { name: 'Your session ended' }).count()).toBe(0);
    expect(tab.errors).toEqual([]);
    await tab.close();
  });

  // Two restarts of svc-cloud and two sign-ins: more than the default minute on a loaded machine.
  it('when the session ends, the page says so, and signing in again returns to the same page', {
    timeout: 120_000,
  }, async () => {
    const tab = await openTab(chromium, `${cloud.address}/console/`);
    const { page } = tab;
    await page.clock.install();
    await page.reload();
    await signIn(page, { button: /Alice/ });
    await expectSignedIn(page, 'alice@example.test');
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { level: 2, name: 'Audit log' }).waitFor();
    const auditPage = page.url();

    // The provider forgets every session and refresh token (its keys stay): renewal is refused.
    await cloud.shutdown();
    await rm(join(cloud.dataDir, 'dev-oidc', 'state.json'), { force: true });
    await cloud.restart();
    await page.clock.fastForward(PAST_EXPIRY);

    const ended = page.getByRole('dialog', { name: 'Your session ended' });
    await ended.waitFor({ timeout: 15_000 });
    await ended.getByRole('button', { name: 'Sign in again' }).click();
    await pickAtLoginPage(page, { button: /Alice/ });
    await page.getByRole('heading', { level: 2, name: 'Audit log' }).waitFor({ timeout: 20_000 });
    expect(page.url()).toBe(auditPage);
    await tab.close();
  });
});
