/**
 * `npm run docs:screenshots`: the pictures of `docs/console.md`, taken from the real thing. It runs
 * `npm start`'s own launcher (svc-cloud, the development provider and the demonstration robot) on
 * a fresh data folder and a free port, then drives the console in headless Chromium through the
 * same helpers as the console's end-to-end tests (`@svc/testkit`'s console tab), and writes one PNG
 * per page into `docs/console/`. `npm test` never runs it: it rewrites tracked files.
 *
 * @packageDocumentation
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ConsoleTab,
  expectSignedIn,
  freeTcpPort,
  type LaunchedChromium,
  launchChromium,
  openTab,
  signIn,
} from '@svc/testkit';
import type { Page } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = path.join(ROOT, 'docs/console');
/** The line `npm start` prints once the demonstration robot is online. */
const ONLINE = 'npm start: demo robot demo-robot online';

/** Starts `scripts/src/start.ts` on `port` and `dataDir`; resolves once the demo robot is online. */
async function startWithDemo(port: number, dataDir: string): Promise<ChildProcess> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('SVC_') && key !== 'DATABASE_URL') env[key] = value;
  }
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'scripts/src/start.ts'], {
    cwd: ROOT,
    env: { ...env, SVC_PORT: String(port), SVC_DATA_DIR: dataDir, SVC_RATE_LIMIT_PER_MINUTE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start did not bring the demo robot online:\n${out}`)),
      120_000,
    );
    const take = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(ONLINE)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start ended (${code}) before the demo robot was online:\n${out}`));
    });
  });
  return child;
}

/** One picture of the page as it is now. */
async function shoot(page: Page, name: string): Promise<void> {
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
  process.stdout.write(`docs/console/${name}.png\n`);
}

async function openNav(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
  await page.getByRole('heading', { level: 2, name }).waitFor();
}

async function main(): Promise<void> {
  execFileSync(process.execPath, [path.join(ROOT, 'packages/console/scripts/build.mjs')], {
    stdio: 'inherit',
  });
  await mkdir(OUT, { recursive: true });
  const work = await mkdtemp(path.join(tmpdir(), 'svc-docs-screenshots-'));
  const port = await freeTcpPort();
  const address = `http://127.0.0.1:${port}`;
  let started: ChildProcess | undefined;
  let chromium: LaunchedChromium | undefined;
  const tabs: ConsoleTab[] = [];
  try {
    started = await startWithDemo(port, path.join(work, 'data'));
    chromium = await launchChromium();
    const tab = await openTab(chromium, `${address}/console/`);
    tabs.push(tab);
    const { page } = tab;
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    await shoot(page, 'sign-in');

    await signIn(page, { button: /Alice/ });
    await expectSignedIn(page, 'alice@example.test');
    const row = page.getByRole('table', { name: 'Robots' }).locator('[data-robot="demo-robot"]');
    await row.getByText('online', { exact: true }).waitFor({ timeout: 30_000 });
    await shoot(page, 'fleet');

    await row.getByRole('link', { name: 'Demo robot' }).click();
    await page.getByRole('heading', { level: 2, name: 'Demo robot' }).waitFor();
    await page.getByRole('heading', { name: 'Recent sessions' }).waitFor();
    await shoot(page, 'robot');

    await page.getByRole('link', { name: 'Open pilot' }).click();
    await page
      .locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ })
      .waitFor({ timeout: 30_000 });
    await page.locator('svc-pilot section[data-name="heartbeat"] pre', { hasText: '"seq"' }).waitFor();
    await shoot(page, 'pilot');
    await page.getByRole('link', { name: 'Leave' }).click();

    await openNav(page, 'Enrol a robot');
    await page.getByLabel('Name (optional)').fill('warehouse-bot-7');
    await page.getByRole('button', { name: 'Create enrolment token' }).click();
    await page.getByLabel('Enrol from the robot', { exact: true }).waitFor();
    await shoot(page, 'enrolment');

    await openNav(page, 'Members');
    await page
      .getByRole('cell', { name: /alice@example.test/ })
      .first()
      .waitFor();
    await shoot(page, 'members');

    await openNav(page, 'Invitations');
    await page.getByLabel('Email').fill('dora@example.test');
    await page.getByRole('button', { name: 'Invite', exact: true }).click();
    await page.getByLabel('Invitation link', { exact: true }).waitFor();
    await shoot(page, 'invitations');

    await openNav(page, 'API keys');
    await page.getByLabel('Name').fill('fleet-backend');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('API key', { exact: true }).waitFor();
    await shoot(page, 'api-keys');

    await openNav(page, 'Audit log');
    await page.getByRole('cell', { name: 'invitation.create', exact: true }).first().waitFor();
    await shoot(page, 'audit');

    // Someone the role map gives no role: signed in, but no organisation yet.
    const stranger = await openTab(chromium, `${address}/console/`);
    tabs.push(stranger);
    await signIn(stranger.page, { name: 'frank' });
    await stranger.page.getByRole('heading', { name: 'No organisation yet' }).waitFor();
    await shoot(stranger.page, 'no-organisation');
  } finally {
    for (const tab of tabs) await tab.close();
    await chromium?.close();
    if (started !== undefined && started.exitCode === null) {
      const ended = new Promise((resolve) => started?.once('close', resolve));
      started.kill('SIGTERM');
      await ended;
    }
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`docs:screenshots failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
