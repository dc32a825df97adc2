/**
 * Browser tabs a test keeps hold of: `safety-pilot.ts` bundled for the browser (the pilot SDK from
 * its sources), served from `http://127.0.0.1` (a secure context), opened in a fresh context of a
 * launched Chromium. Unlike `ChromiumSession.run`, the test gets the Playwright page, so it can
 * close or reload it in the middle of a session, as a person would.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type LaunchedChromium, launchChromium } from '@svc/testkit';
import { build } from 'esbuild';
import type { BrowserContext, Page } from 'playwright-core';
import type { SafetyPilot } from './safety-pilot.js';

const ENTRY = fileURLToPath(new URL('./safety-pilot.ts', import.meta.url));

const PAGE = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>pilot</title>
<script type="module" src="/pilot.js"></script>
`;

/** One tab with the pilot loaded. */
export interface PilotTab {
  readonly page: Page;
  /** Calls `safetyPilot[name](...args)` in the page and resolves with what it returned. */
  call<K extends keyof SafetyPilot>(
    name: K,
    ...args: Parameters<SafetyPilot[K]>
  ): Promise<Awaited<ReturnType<SafetyPilot[K]>>>;
  /** Reloads the page (its `pagehide` runs) and waits for the pilot module again. */
  reload(): Promise<void>;
}

/** Chromium and the served bundle, for a test file. */
export interface PilotBrowser {
  /** Opens a tab in a fresh browser context (its own storage: another person's browser). */
  open(): Promise<PilotTab>;
  close(): Promise<void>;
}

/** Bundles the pilot module, serves it, and launches Chromium. */
export async function startPilotBrowser(): Promise<PilotBrowser> {
  const bundled = await build({
    entryPoints: [ENTRY],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    conditions: ['source'],
    write: false,
    logLevel: 'silent',
    outfile: 'pilot.js',
  });
  const script = bundled.outputFiles[0]?.text ?? '';
  const server = createServer((req, res) => {
    if (req.url === '/pilot.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' });
      res.end(script);
    } else {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(PAGE);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let chromium: LaunchedChromium;
  try {
    chromium = await launchChromium();
  } catch (err) {
    server.close();
    throw err;
  }
  const contexts: BrowserContext[] = [];
  const loaded = (page: Page) => page.waitForFunction(() => 'safetyPilot' in globalThis);
  return {
    async open() {
      const context = await chromium.browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      await loaded(page);
      return {
        page,
        call: (name, ...args) =>
          page.evaluate(
            ({ name, args }) =>
              (globalThis as unknown as { safetyPilot: Record<string, (...a: unknown[]) => unknown> })
                .safetyPilot[name]!(...args),
            { name, args: args as unknown[] },
          ) as never,
        async reload() {
          await page.reload();
          await loaded(page);
        },
      };
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => undefined);
      await chromium.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
