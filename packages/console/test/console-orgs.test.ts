/**
 * Organisations in the console, against a real svc-cloud: the switcher lists each organisation of
 * the person with their role and opens its Fleet; with development open enrolment, the view
 * without signing in lists the robots that belong to no organisation (spec section 4).
 */
import {
  type CloudProcess,
  callAs,
  expectSignedIn,
  type LaunchedChromium,
  launchChromium,
  openTab,
  type RobotDaemon,
  type RobotFiles,
  signIn,
  startCloudProcess,
  startRobotDaemon,
  writeRobotConfig,
} from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('organisations and robots without one', () => {
  let chromium: LaunchedChromium;
  let cloud: CloudProcess;
  let robot: RobotFiles | undefined;
  let daemon: RobotDaemon | undefined;

  beforeAll(async () => {
    [cloud, chromium] = await Promise.all([
      startCloudProcess({ env: { SVC_DEV_OPEN_ENROLMENT: '1' } }),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await daemon?.stop();
    await robot?.remove();
    await chromium?.close();
    await cloud?.stop();
  });

  it('the switcher lists every organisation with its role and opens the one picked', async () => {
    const tab = await openTab(chromium, `${cloud.address}/console/`);
    const { page } = tab;
    await signIn(page, { button: /Alice/ });
    await expectSignedIn(page, 'alice@example.test');
    const created = await callAs(page, cloud.address, 'POST', '/api/v1/orgs', { name: 'Night shift' });
    expect(created.status).toBe(201);
    await page.reload();

    const switcher = page.getByRole('combobox', { name: 'Organisation' });
    await switcher.click();
    const options = await page.getByRole('option').allTextContents();
    expect(options).toEqual(expect.arrayContaining(['Night shift (owner)']));
    expect(options).toHaveLength(2);
    await page.getByRole('option', { name: 'Night shift (owner)' }).click();
    await page.getByText('Night shift has no robot yet.').waitFor();
    expect(page.url()).toContain(`#/orgs/${created.body.org.id}/fleet`);
    expect(tab.errors).toEqual([]);
    await tab.close();
  });

  it('without signing in, lists the robots open enrolment admitted, and opens one in the pilot page', async () => {
    robot = await writeRobotConfig({ robotId: 'garage-bot', signalUrl: cloud.signalUrl });
    daemon = startRobotDaemon(robot);
    await daemon.waitForLog('admitted by open dev enrolment');

    const tab = await openTab(chromium, `${cloud.address}/console/`);
    const { page } = tab;
    await page.getByRole('link', { name: 'robots without an organisation' }).click();
    const row = page.getByRole('row', { name: /garage-bot/ });
    await row.getByText('online').waitFor({ timeout: 15_000 });
    expect(await row.getByRole('link', { name: 'Open pilot' }).getAttribute('href')).toBe(
      '../pilot/#robot=garage-bot',
    );
    expect(tab.errors).toEqual([]);
    await tab.close();
  });
});
