import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freeTcpPort } from '@svc/testkit';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const demo = ['--conditions=source', '--import', 'tsx', 'scripts/src/wire-loopback.ts'];

describe('npm start (the README quick start)', () => {
  let child: ChildProcess | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    if (child !== undefined && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child!.once('exit', resolve));
    }
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  it('starts svc-cloud with the console and a development login, and stops on SIGTERM', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'svc-start-'));
    const port = await freeTcpPort();
    child = spawn('bash', ['scripts/start.sh'], {
      cwd: root,
      env: { ...process.env, SVC_PORT: String(port), SVC_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    await expect.poll(() => out, { timeout: 60_000, interval: 100 }).toContain('svc-cloud listening on');
    const config = await (await fetch(`http://127.0.0.1:${port}/api/v1/console-config`)).json();
    expect(config).toMatchObject({ issuer: `http://127.0.0.1:${port}/dev-oidc`, developmentProvider: true });
    const page = await fetch(`http://127.0.0.1:${port}/console/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('svc console');
    expect(out).toContain('DEVELOPMENT identity provider');
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('npm run demo:wire', () => {
  it('streams frames over loopback UDP through a lossy link and reports them delivered', async () => {
    const { stdout } = await run('node', [...demo, '--frames', '45', '--loss', '0.05'], { cwd: root });
    expect(stdout).toContain('link loses 5 % independent');
    const summary = /stopped: (\d+) of 45 frames delivered/.exec(stdout);
    expect(summary).not.toBeNull();
    expect(Number(summary![1])).toBeGreaterThanOrEqual(40);
  });

  it('explains bad options instead of starting', async () => {
    const failure = await run('node', [...demo, '--loss', '2'], { cwd: root }).catch((err: unknown) => err);
    expect(failure).toMatchObject({ code: 2 });
    expect((failure as { stderr: string }).stderr).toContain('usage: npm run demo:wire');
  });
});
