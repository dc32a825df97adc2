/**
 * A robot's life in the console, against a real svc-cloud and a real `svcd`: "Create enrolment
 * token", the command the console shows run on the robot, the robot online in Fleet without a
 * reload; a robot whose key was replaced shows the `key-mismatch` denial on its page; deleted in
 * the console, enrolled again with a new token, it is online again (spec section 3).
 */
import { rm } from 'node:fs/promises';
import {
  type CloudProcess,
  type ConsoleTab,
  expectSignedIn,
  type LaunchedChromium,
  launchChromium,
  openTab,
  type RobotDaemon,
  type RobotFiles,
  runSvcd,
  signIn,
  startCloudProcess,
  startRobotDaemon,
  writeRobotConfig,
} from '@svc/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The shown command, run on this robot: its `--config` is the robot's own file. */
function onRobot(command: string, robot: RobotFiles): string[] {
  const words = command.split(' ');
  expect(words[0]).toBe('svcd');
  const args = words.slice(1);
  const config = args.indexOf('--config');
  expect(config).toBeGreaterThanOrEqual(0);
  args[config + 1] = robot.configPath;
  return args;
}

/** Creates a token on the enrolment page and returns the command it shows. */
async function createToken(page: Page, name: string): Promise<string> {
  await page.getByRole('link', { name: 'Create enrolment token' }).click();
  await page.getByLabel('Name (optional)').fill(name);
  await page.getByRole('button', { name: 'Create enrolment token' }).click();
  return (await page.getByLabel('Enrol from the robot', { exact: true }).textContent()) ?? '';
}

/** The robot's row in Fleet. */
function fleetRow(page: Page, robotId: string) {
  return page.getByRole('table', { name: 'Robots' }).locator(`[data-robot="${robotId}"]`);
}

describe('enrolling, replacing and deleting a robot from the console', () => {
  let chromium: LaunchedChromium;
  let cloud: CloudProcess;
  let tab: ConsoleTab;
  let robot: RobotFiles;
  const daemons: RobotDaemon[] = [];

  beforeAll(async () => {
    [cloud, chromium] = await Promise.all([startCloudProcess(), launchChromium()]);
    robot = await writeRobotConfig({ robotId: 'yard-bot', signalUrl: cloud.signalUrl });
    tab = await openTab(chromium, `${cloud.address}/console/`);
    await signIn(tab.page, { button: /Alice/ });
    await expectSignedIn(tab.page, 'alice@example.test');
  });
  afterAll(async () => {
    for (const daemon of daemons) await daemon.stop();
    await tab?.close();
    await chromium?.close();
    await cloud?.stop();
    await robot?.remove();
  });

  function startDaemon(): RobotDaemon {
    const daemon = startRobotDaemon(robot);
    daemons.push(daemon);
    return daemon;
  }

  it('the shown command enrols the robot, and Fleet shows it online as it connects, without a reload', async () => {
    const { page } = tab;
    const command = await createToken(page, 'yard-bot');
    const enrolled = await runSvcd(onRobot(command, robot));
    expect(enrolled.code, enrolled.stderr).toBe(0);

    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Fleet' }).click();
    const row = fleetRow(page, 'yard-bot');
    await row.getByText('offline').waitFor();
    const loads = await page.evaluate(() => performance.getEntriesByType('navigation').length);

    const daemon = startDaemon();
    await daemon.waitForLog('signalling online');
    await row.getByText('online', { exact: true }).waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(loads);
    expect((await page.getByRole('status').filter({ hasText: 'robots' }).textContent()) ?? '').toContain(
      '1 robots, 1 online',
    );
    await daemon.stop();
    await row.getByText('offline').waitFor({ timeout: 10_000 });
  });

  it('a robot whose key was replaced: its page shows the key-mismatch denial; deleted and enrolled again, it is online', async () => {
    const { page } = tab;
    await rm(robot.credentialPath);
    const mismatched = startDaemon();
    await mismatched.waitForLog('is enrolled with another key');

    await fleetRow(page, 'yard-bot').getByRole('link').click();
    await page.getByRole('alert').filter({ hasText: 'key-mismatch' }).waitFor({ timeout: 15_000 });
    expect((await page.getByRole('alert').filter({ hasText: 'key-mismatch' }).textContent()) ?? '').toContain(
      'delete it here, create a new enrolment token and enrol it again',
    );

    await page.getByRole('button', { name: 'Delete robot' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { level: 2, name: 'Fleet' }).waitFor();
    await expect.poll(() => fleetRow(page, 'yard-bot').count()).toBe(0);
    // Deleted, the robot is unknown: the daemon that has not enrolled again is refused so.
    await mismatched.waitForLog('unknown-robot');
    await mismatched.stop();

    const command = await createToken(page, 'yard-bot again');
    const enrolled = await runSvcd(onRobot(command, robot));
    expect(enrolled.code, enrolled.stderr).toBe(0);
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Fleet' }).click();
    const daemon = startDaemon();
    await fleetRow(page, 'yard-bot').getByText('online', { exact: true }).waitFor({ timeout: 15_000 });
    await daemon.waitForLog('signalling online');
    expect(tab.errors).toEqual([]);
  });
});
