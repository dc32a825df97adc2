import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { memoryLogger } from '@svc/runtime/testing';
import { freeTcpPort, type LaunchedChromium, launchChromium } from '@svc/testkit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CONSOLE_BUILD_COMMAND,
  CONSOLE_DIR_VARIABLE,
  consoleDir,
  consoleRoutes,
  DEFAULT_CONSOLE_DIR,
} from '../src/console-assets.js';
import { type RunningCloud, startCloud } from '../src/server.js';

/** A build as `@svc/console`'s build script lays it out, and a file beside it that must stay private. */
const BUILD: Record<string, string> = {
  'console/index.html':
    '<!doctype html><title>svc console</title><script type="module" src="./app-ABCDEFGH.js"></script>',
  'console/app-ABCDEFGH.js': 'console.log("the console");',
  'console/assets/index-Cv1_bZ-8.css': 'body { margin: 0 }',
  'console/.hidden': 'hidden',
  'pilot/index.html':
    '<!doctype html><title>svc pilot</title><script type="module" src="./pilot-HGFEDCBA.js"></script>',
  'pilot/pilot-HGFEDCBA.js': 'console.log("the pilot page");',
  'build.json': '{}',
};
const SECRET = 'the-secret-beside-the-build';

describe('the console pages, served from a build made ahead of time', () => {
  let root: string;
  let build: string;
  let app: FastifyInstance | undefined;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-console-assets-'));
    build = join(root, 'dist');
    for (const [file, text] of Object.entries(BUILD)) {
      await mkdir(join(build, file, '..'), { recursive: true });
      await writeFile(join(build, file), text);
    }
    await writeFile(join(root, 'secret.txt'), SECRET);
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function appServing(dir: string, log = memoryLogger()): Promise<FastifyInstance> {
    app = Fastify({ loggerInstance: log as unknown as FastifyBaseLogger });
    consoleRoutes(app, { dir });
    await app.ready();
    return app;
  }

  it('serves each page at its folder, no-cache, with the security headers', async () => {
    const served = await appServing(build);
    expect((await served.inject('/console')).headers.location).toBe('/console/');
    for (const [path, file] of [
      ['/console/', 'console/index.html'],
      ['/pilot/', 'pilot/index.html'],
    ] as const) {
      const page = await served.inject(path);
      expect(page.statusCode).toBe(200);
      expect(page.body).toBe(BUILD[file]);
      expect(page.headers).toMatchObject({
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
        'content-security-policy': expect.stringContaining("default-src 'self'"),
      });
      // WebAssembly may compile (the FEC kernel); JavaScript eval may not.
      const policy = String(page.headers['content-security-policy']);
      expect(policy).toContain("script-src 'self' 'wasm-unsafe-eval';");
      expect(policy).not.toContain("'unsafe-eval'");
    }
  });

  it('lets browsers keep a script whose name carries its hash, and answers 304 to a known one', async () => {
    const served = await appServing(build);
    const script = await served.inject('/console/app-ABCDEFGH.js');
    expect(script.statusCode).toBe(200);
    expect(script.body).toBe(BUILD['console/app-ABCDEFGH.js']);
    expect(script.headers).toMatchObject({
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=31536000, immutable',
    });
    const again = await served.inject({
      url: '/console/app-ABCDEFGH.js',
      headers: { 'if-none-match': String(script.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    // Vite's names: a base64url hash, in the console's assets folder.
    const style = await served.inject('/console/assets/index-Cv1_bZ-8.css');
    expect(style.headers).toMatchObject({
      'content-type': 'text/css; charset=utf-8',
      'cache-control': 'public, max-age=31536000, immutable',
    });
    expect((await served.inject('/console/')).headers['cache-control']).toBe('no-cache');
  });

  it('answers 404 for anything outside a page folder: .., hidden files, the build record, folders', async () => {
    const served = await appServing(build);
    for (const url of [
      '/console/..%2fsecret.txt',
      '/console/..%2f..%2fsecret.txt',
      '/pilot/..%2fconsole%2fapp-ABCDEFGH.js',
      '/console/%2e%2e%2fbuild.json',
      '/console/.hidden',
      '/console/missing.js',
      '/console/..',
      '/console//etc/passwd',
      '/console/%5c..%5csecret.txt',
    ]) {
      const answer = await served.inject(url);
      expect([url, answer.statusCode]).toEqual([url, 404]);
      expect(answer.body).not.toContain(SECRET);
    }
  });

  it('answers 404 to a raw ../ path that no client normalised', async () => {
    const served = await appServing(build);
    await served.listen({ host: '127.0.0.1', port: 0 });
    const { port } = served.server.address() as { port: number };
    const answer = await new Promise<string>((done, fail) => {
      let text = '';
      const socket = connect(port, '127.0.0.1', () => {
        socket.end('GET /console/../../secret.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      });
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('end', () => done(text));
      socket.on('error', fail);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
    expect(answer).not.toContain(SECRET);
  });

  it('without a build: says so at start, and each page answers 503 naming the build command', async () => {
    const log = memoryLogger();
    const served = await appServing(join(root, 'not-built'), log);
    const warning = log.records.find((r) => r.level === 'warn');
    expect(warning?.message).toContain('the console pages are not built');
    expect(warning?.message).toContain(CONSOLE_BUILD_COMMAND);
    for (const url of ['/console/', '/pilot/', '/pilot/pilot-HGFEDCBA.js']) {
      const answer = await served.inject(url);
      expect(answer.statusCode).toBe(503);
      expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(answer.body).toContain(CONSOLE_BUILD_COMMAND);
    }
  });

  it(`finds the build at ${CONSOLE_DIR_VARIABLE}, else at packages/console/dist`, () => {
    expect(DEFAULT_CONSOLE_DIR).toBe(resolve(import.meta.dirname, '../../console/dist'));
    expect(consoleDir({})).toBe(DEFAULT_CONSOLE_DIR);
    expect(consoleDir({ [CONSOLE_DIR_VARIABLE]: 'some/build' })).toBe(resolve('some/build'));
    expect(() => consoleDir({ [CONSOLE_DIR_VARIABLE]: ' ' })).toThrow(TypeError);
  });
});

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

  it('from the sign-in button to the Fleet page of an organisation of their own', async () => {
    const context = await chromium.browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${cloud.config.publicUrl}/console/`);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    // The provider's login page: pick a known test user.
    await page.getByRole('button', { name: /Alice/ }).click();
    await page.getByRole('button', { name: 'Account: alice@example.test' }).waitFor({ timeout: 15_000 });
    await page.getByRole('heading', { level: 2, name: 'Fleet' }).waitFor();
    expect(await page.getByRole('combobox', { name: 'Organisation' }).inputValue()).toMatch(
      /organisation \(owner\)$/,
    );
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a typed name signs in as a new user', async () => {
    const context = await chromium.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${cloud.config.publicUrl}/console/`);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('textbox').fill('zoe');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Account: zoe@example.test' }).waitFor({ timeout: 15_000 });
    await context.close();
  });
});
