/**
 * `npm start` with its demonstration robot, end to end, as a newcomer meets it: svc-cloud and the
 * demo launcher (`scripts/src/start.ts`) on a fresh data folder, with a PATH that has no ffmpeg and
 * no GStreamer; the demo robot (a real svcd) enrols through its one-time token and comes online in
 * the demonstration org; the development users are members with their roles; Bob drives it from
 * the console in headless Chromium (Fleet shows it online; its pilot shows the clip, the heartbeat arrives, his commands
 * reach the launcher's log); SIGTERM stops everything; a second start needs no new token.
 *
 * `scripts/start.sh`'s own steps (Node check, dependency install, page build) are `start.test.ts`'s;
 * vitest's global setup has built the pages.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { discover, freeTcpPort, type LaunchedChromium, launchChromium, login } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const START = ['--conditions=source', '--import', 'tsx', 'scripts/src/start.ts'];
const ONLINE = 'npm start: demo robot demo-robot online';
/** Programs that must not be on the PATH: the demo's camera needs none of them. */
const VIDEO_TOOLS = /^(ffmpeg|ffprobe|ffplay|gst-.*)$/;

/**
 * A folder of links to every program on this PATH except ffmpeg's and GStreamer's, to be the whole
 * PATH of `npm start`, its svc-cloud and its svcd.
 */
async function pathWithoutVideoTools(dir: string): Promise<string> {
  await mkdir(dir);
  const seen = new Set<string>();
  for (const folder of (process.env.PATH ?? '').split(':')) {
    const names = await readdir(folder).catch(() => [] as string[]);
    for (const name of names) {
      if (seen.has(name) || VIDEO_TOOLS.test(name)) continue;
      seen.add(name);
      await symlink(path.join(folder, name), path.join(dir, name));
    }
  }
  return dir;
}

/** A running `npm start` and everything it printed. */
interface Started {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
}

describe('npm start with the demo robot, without ffmpeg or GStreamer', () => {
  let workDir: string;
  let dataDir: string;
  let port: number;
  let address: string;
  let env: NodeJS.ProcessEnv;
  let chromium: LaunchedChromium | undefined;
  const running = new Set<Started>();

  function start(args: readonly string[] = []): Started {
    const child = spawn(process.execPath, [...START, ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    const started: Started = { child, output: () => out, exited };
    running.add(started);
    void exited.then(() => running.delete(started));
    return started;
  }

  async function stop(started: Started): Promise<number | null> {
    started.child.kill('SIGTERM');
    return started.exited;
  }

  /** Processes whose command line names the demo robot's configuration in this test's data folder. */
  function demoDaemons(): string[] {
    const ps = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
    return ps.split('\n').filter((line) => line.includes(path.join(dataDir, 'demo-robot', 'svcd.toml')));
  }

  async function signIn(sub: string) {
    const config = (await (await fetch(`${address}/api/v1/console-config`)).json()) as {
      issuer: string;
      clientId: string;
      apiResource: string;
    };
    const endpoints = await discover(config.issuer);
    const tokens = await login(
      {
        authorizationEndpoint: endpoints.authorizationEndpoint,
        tokenEndpoint: endpoints.tokenEndpoint,
        clientId: config.clientId,
        redirectUri: `${address}/console/`,
        audience: config.apiResource,
      },
      { sub },
    );
    const me = await fetch(`${address}/api/v1/me`, {
      headers: { authorization: `Bearer ${tokens.accessToken}`, 'x-svc-id-token': tokens.idToken },
    });
    expect(me.status).toBe(200);
    return {
      token: tokens.accessToken,
      me: (await me.json()) as { orgs: { id: string; name: string; role: string }[] },
    };
  }

  async function call(method: string, url: string, token: string, body?: unknown) {
    const response = await fetch(`${address}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the test reads what the API answered.
    return { status: response.status, body: (await response.json()) as any };
  }

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(tmpdir(), 'svc-demo-start-'));
    dataDir = path.join(workDir, 'data');
    port = await freeTcpPort();
    address = `http://127.0.0.1:${port}`;
    const clean: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (!key.startsWith('SVC_') && key !== 'DATABASE_URL') clean[key] = value;
    }
    env = {
      ...clean,
      PATH: await pathWithoutVideoTools(path.join(workDir, 'bin')),
      SVC_PORT: String(port),
      SVC_DATA_DIR: dataDir,
      SVC_RATE_LIMIT_PER_MINUTE: '0',
    };
  });

  afterAll(async () => {
    for (const started of [...running]) await stop(started);
    await chromium?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  it('has no ffmpeg and no GStreamer on the PATH it runs with', () => {
    for (const tool of ['ffmpeg', 'gst-launch-1.0']) {
      const found = env.PATH!.split(':').some((dir) => {
        try {
          execFileSync('test', ['-e', path.join(dir, tool)]);
          return true;
        } catch {
          return false;
        }
      });
      expect(found, tool).toBe(false);
    }
  });

  it('brings a live robot a newcomer signs in to, sees online and drives; stops on SIGTERM', async () => {
    const first = start();
    await expect.poll(() => first.output(), { timeout: 120_000, interval: 200 }).toContain(ONLINE);
    expect(first.output()).toContain(`sign in as Bob (operator) at ${address}/console/`);

    // Every development user is in the one demonstration org, with the role its group says.
    const [alice, bob, vera] = [await signIn('dev-alice'), await signIn('dev-bob'), await signIn('dev-vera')];
    const org = alice.me.orgs[0]!;
    expect(alice.me.orgs).toEqual([
      expect.objectContaining({ id: org.id, name: 'Demonstration', role: 'admin' }),
    ]);
    expect(bob.me.orgs).toEqual([
      expect.objectContaining({ id: org.id, name: 'Demonstration', role: 'operator' }),
    ]);
    expect(vera.me.orgs).toEqual([
      expect.objectContaining({ id: org.id, name: 'Demonstration', role: 'viewer' }),
    ]);

    // The robot is theirs, online, enrolled with the token svc-cloud wrote, which is gone now.
    const listed = await call('GET', '/api/v1/robots', bob.token);
    expect(listed.status).toBe(200);
    const robot = listed.body.robots.find((r: { robotId: string }) => r.robotId === 'demo-robot');
    expect(robot).toMatchObject({ orgId: org.id, name: 'Demo robot', online: true });
    expect(robot.channels.map((c: { name: string; kind: string }) => `${c.kind}:${c.name}`)).toEqual([
      'video:camera',
      'sensor:heartbeat',
      'command:drive',
    ]);
    const tokens = await call('GET', `/api/v1/orgs/${org.id}/enrolment-tokens`, alice.token);
    expect(tokens.body.enrolmentTokens).toEqual([
      expect.objectContaining({ state: 'redeemed', redeemedBy: 'demo-robot' }),
    ]);
    expect(await readFile(path.join(dataDir, 'demo-robot', 'enrolment-token')).catch(() => 'gone')).toBe(
      'gone',
    );
    // Vera may watch but not drive.
    expect(
      (await call('POST', '/api/v1/session-tokens', vera.token, { robotId: 'demo-robot', scope: 'drive' }))
        .status,
    ).toBe(403);
    expect(
      (await call('POST', '/api/v1/session-tokens', vera.token, { robotId: 'demo-robot', scope: 'observe' }))
        .status,
    ).toBe(201);

    // Bob signs in to the console, finds the robot online in Fleet and drives it from the console's
    // pilot: the clip plays, the heartbeat arrives, commands reach the robot.
    chromium = await launchChromium();
    const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${address}/console/`);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: /Bob/ }).click();
    const row = page.getByRole('table', { name: 'Robots' }).locator('[data-robot="demo-robot"]');
    await row.getByText('online', { exact: true }).waitFor({ timeout: 30_000 });
    await row.getByRole('link', { name: 'Demo robot' }).click();
    await page.getByRole('link', { name: 'Open pilot' }).click();
    await page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    await page.locator('svc-pilot dd[data-key="role"]', { hasText: 'driver' }).waitFor({ timeout: 10_000 });
    await page
      .locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ })
      .waitFor({ timeout: 30_000 });
    await page
      .locator('svc-pilot dd[data-key="resolution"]', { hasText: '640' })
      .waitFor({ timeout: 10_000 });
    await page
      .locator('svc-pilot section[data-name="heartbeat"] pre', { hasText: '"seq"' })
      .waitFor({ timeout: 10_000 });

    const commandLines = () =>
      logLines(first.output()).filter((l) => l.msg.startsWith('demo robot: command on "drive"'));
    const lastCommand = () => {
      const line = commandLines().at(-1);
      return line === undefined
        ? undefined
        : JSON.parse(line.msg.slice(line.msg.indexOf('{'), line.msg.lastIndexOf('}') + 1));
    };
    await page.keyboard.down('ArrowUp');
    await expect.poll(() => commandLines().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(lastCommand()).toMatchObject({ type: 'drive', linear: 0.5 });
    await page.keyboard.up('ArrowUp');
    // The zero command on release is the last line; a held key gave one line a second (20 commands each).
    await expect.poll(lastCommand, { timeout: 10_000 }).toMatchObject({ type: 'drive', linear: 0 });
    expect(Math.max(...commandLines().map((l) => Number(l.count ?? 1)))).toBeGreaterThanOrEqual(5);
    // The robot reports what it was told in its heartbeat, which the pilot shows.
    await page.locator('svc-pilot section[data-name="heartbeat"] pre', { hasText: '"commands"' }).waitFor();
    await context.close();

    expect(demoDaemons()).toHaveLength(1);
    expect(await stop(first)).toBe(0);
    expect(first.output()).toContain('npm start: SIGTERM: stopping the demo robot and svc-cloud');
    expect(demoDaemons()).toEqual([]);
  });

  it('starts the same robot again without a new token', async () => {
    const again = start();
    await expect.poll(() => again.output(), { timeout: 120_000, interval: 200 }).toContain(ONLINE);
    expect(again.output()).toContain('demo robot enrolled in the demonstration org');
    const alice = await signIn('dev-alice');
    const tokens = await call('GET', `/api/v1/orgs/${alice.me.orgs[0]!.id}/enrolment-tokens`, alice.token);
    expect(tokens.body.enrolmentTokens).toHaveLength(1);
    expect(await stop(again)).toBe(0);
  });

  it('leaves the robot out with --no-demo', async () => {
    const plain = start(['--no-demo']);
    await expect
      .poll(() => plain.output(), { timeout: 120_000, interval: 200 })
      .toContain('svc-cloud listening on');
    expect(plain.output()).toContain('npm start: demo robot off: --no-demo was given');
    expect(demoDaemons()).toEqual([]);
    expect(await stop(plain)).toBe(0);
  });
});

/** The JSON log lines in `output` (pino writes JSON to a pipe), with their message as `msg`. */
function logLines(output: string): ({ msg: string } & Record<string, unknown>)[] {
  return output.split('\n').flatMap((line) => {
    try {
      const parsed = JSON.parse(line) as unknown;
      return typeof parsed === 'object' &&
        parsed !== null &&
        typeof (parsed as { msg?: unknown }).msg === 'string'
        ? [parsed as { msg: string } & Record<string, unknown>]
        : [];
    } catch {
      return [];
    }
  });
}
