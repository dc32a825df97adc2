import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { type BuildResult, build, type Message } from 'esbuild';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';

/** Where Debian's `chromium` package puts the browser: the wrapper script first, then the binary. */
const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/lib/chromium/chromium'] as const;

/**
 * Flags known to work on the project's machines (the design notes on testing, section "Browser").
 * `--disable-quic` is deliberately absent: WebTransport needs QUIC.
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Returns the path of the Debian Chromium executable.
 *
 * @param candidates - Paths to try in order; the default is where Debian's `chromium` installs it.
 * @throws Error when Chromium is not installed, saying how to install it.
 */
export function findChromium(candidates: readonly string[] = CHROMIUM_PATHS): string {
  for (const path of candidates) {
    if (existsSync(path)) return path;
  }
  throw new Error(
    `Chromium is missing: none of ${candidates.join(', ')} exists. ` +
      '`npm test` installs it when run as root (via `bash scripts/ensure-system.sh chromium`); ' +
      'otherwise run `sudo apt-get install -y --no-install-recommends chromium`.',
  );
}

/** A launched headless Chromium and the function that shuts it down and removes its files. */
export interface LaunchedChromium {
  /** The Playwright browser; open pages in a fresh `browser.newContext()`. */
  readonly browser: Browser;
  /** Closes the browser and removes its temporary directory. Safe to call more than once. */
  close(): Promise<void>;
}

/**
 * Launches the Debian Chromium headless with the project's flags.
 *
 * Playwright gives the browser a fresh temporary `--user-data-dir` of its own (it refuses that
 * flag in `args`) and removes it on close; in addition the browser process gets a private
 * `TMPDIR`, so every file it writes lands in a directory that `close()` removes.
 * `executablePath` replaces the Debian binary (a wrapper that starts it in a test's network
 * namespace, say).
 */
export async function launchChromium(
  options: { readonly executablePath?: string; readonly args?: readonly string[] } = {},
): Promise<LaunchedChromium> {
  const executablePath = options.executablePath ?? findChromium();
  const tempDir = await mkdtemp(join(tmpdir(), 'testkit-chromium-'));
  let browser: Browser;
  try {
    browser = await chromium.launch({
      executablePath,
      args: [...CHROMIUM_ARGS, ...(options.args ?? [])],
      headless: true,
      env: { ...process.env, TMPDIR: tempDir },
      tracesDir: join(tempDir, 'traces'),
      downloadsPath: join(tempDir, 'downloads'),
    });
  } catch (err) {
    await rm(tempDir, { recursive: true, force: true });
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    browser,
    close() {
      closing ??= (async () => {
        try {
          await browser.close();
        } finally {
          await rm(tempDir, { recursive: true, force: true });
        }
      })();
      return closing;
    },
  };
}

/** What to run in the browser: one exported function of one TypeScript module. */
export interface RunInChromiumOptions {
  /** Absolute path of the TypeScript (or JavaScript) module to bundle for the browser. */
  entry: string;
  /** Name of the exported function to call; it may be async. */
  exportName: string;
  /** Arguments passed to the function; they must survive structured cloning. */
  args?: unknown[];
  /** Limit for loading the page and running the function. Defaults to 30 000 ms. */
  timeoutMs?: number;
  /** When set, a PNG screenshot of the page is written here after the function returns. */
  screenshotPath?: string;
  /**
   * When true, `console.error` output in the page does not fail the run (it is still reported
   * when the run fails for another reason). Uncaught errors always fail the run.
   */
  allowConsoleErrors?: boolean;
}

/**
 * One headless Chromium reused across several {@link ChromiumSession.run} calls.
 *
 * Each run gets its own bundle, HTTP server and browser context, so runs do not share state.
 */
export class ChromiumSession {
  readonly #launched: LaunchedChromium;
  readonly #served: PageServing;

  private constructor(launched: LaunchedChromium, served: PageServing) {
    this.#launched = launched;
    this.#served = served;
  }

  /**
   * Launches the browser. Call {@link ChromiumSession.close} when done (in `afterAll`).
   *
   * `executablePath` replaces the Debian binary (a wrapper that starts it in a test's network
   * namespace); `serve: 'route'` then hands the page and bundle to the browser through
   * Playwright's request interception at `http://127.0.0.1:<port>` (a secure context in any
   * namespace) instead of from an HTTP server of this process, which a browser in another
   * namespace could not reach.
   */
  static async open(
    options: {
      readonly executablePath?: string;
      readonly serve?: PageServing;
      /** More command-line switches of the browser. */
      readonly args?: readonly string[];
    } = {},
  ): Promise<ChromiumSession> {
    const args = [
      // A routed page has no network address of its own: Chromium would count it as public and
      // refuse its connections to loopback (Local Network Access). Served for real, a page and
      // svc-cloud share one origin and need no such switch.
      ...(options.serve === 'route' ? ['--disable-features=LocalNetworkAccessChecks'] : []),
      ...(options.args ?? []),
    ];
    const launched = await launchChromium({
      ...(options.executablePath === undefined ? {} : { executablePath: options.executablePath }),
      ...(args.length > 0 && { args }),
    });
    return new ChromiumSession(launched, options.serve ?? 'server');
  }

  /** Closes the browser and removes its temporary files. */
  close(): Promise<void> {
    return this.#launched.close();
  }

  /**
   * Bundles `opts.entry` for the browser, loads it in a page served from `http://127.0.0.1`
   * (a secure context), calls `opts.exportName(...opts.args)` there and returns its result.
   *
   * Rejects when bundling fails (including any import of a Node built-in), when the function
   * throws, when the page reports an uncaught error or `console.error`, or on timeout.
   */
  async run<T>(opts: RunInChromiumOptions): Promise<T> {
    checkOptions(opts);
    const bundle = await bundleForBrowser(opts.entry, opts.exportName);
    return runBundle<T>(this.#launched.browser, opts, bundle, this.#served);
  }
}

/**
 * Bundles `entry` in a fresh headless Chromium, runs `exportName(...args)` there and returns
 * the result; the browser, server and temporary files are removed afterwards.
 *
 * Use {@link ChromiumSession} to run several modules in one browser.
 */
export async function runInChromium<T>(opts: RunInChromiumOptions): Promise<T> {
  checkOptions(opts);
  // Bundle first: a module that cannot be built fails without starting a browser.
  const bundle = await bundleForBrowser(opts.entry, opts.exportName);
  const launched = await launchChromium();
  try {
    return await runBundle<T>(launched.browser, opts, bundle);
  } finally {
    await launched.close();
  }
}

/** Rejects caller mistakes before any work is done. */
function checkOptions(opts: RunInChromiumOptions): void {
  if (!isAbsolute(opts.entry)) throw new TypeError(`entry must be an absolute path, got ${opts.entry}`);
  const { timeoutMs } = opts;
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new TypeError(`timeoutMs must be a positive number, got ${timeoutMs}`);
  }
}

/** How the test page and its bundle reach the browser. */
export type PageServing = 'server' | 'route';

/** Serves `bundle`, runs the export in a new browser context, and closes both whatever happens. */
async function runBundle<T>(
  browser: Browser,
  opts: RunInChromiumOptions,
  bundle: string,
  serving: PageServing = 'server',
): Promise<T> {
  const { entry, exportName, args = [], timeoutMs = DEFAULT_TIMEOUT_MS } = opts;
  const what = `${exportName}() from ${entry}`;
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];
  const details = (): string =>
    [
      ...pageErrors.map((e) => `\n  page error: ${e}`),
      ...consoleErrors.map((e) => `\n  console.error: ${e}`),
    ].join('');

  const server = serving === 'server' ? await serveBundle(bundle) : ROUTED;
  let context: BrowserContext | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    context = await browser.newContext();
    if (serving === 'route') await routeBundle(context, bundle);
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.stack ?? String(err)));
    page.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
    page.on('crash', () => pageErrors.push('the page crashed'));

    const work = (async () => {
      await page.goto(`${server.origin}/`, { waitUntil: 'load', timeout: timeoutMs });
      // The `import()` lives in the page (PAGE_HTML), not in this callback: Playwright sends the
      // callback's source text, and under vitest that text has `import()` rewritten to
      // `__vite_ssr_dynamic_import__()`, which does not exist in the browser.
      const value = (await page.evaluate(
        ({ name, callArgs }) => (globalThis as unknown as PageRunner).__testkitRun(name, callArgs),
        { name: exportName, callArgs: args },
      )) as T;
      if (opts.screenshotPath !== undefined) await page.screenshot({ path: opts.screenshotPath });
      return value;
    })();
    // Once the timeout wins, closing the context in `finally` makes `work` reject; nobody awaits
    // it any more, so that rejection is dropped here on purpose.
    work.catch(() => {});
    const timedOut = Symbol('timed out');
    const timeout = new Promise<typeof timedOut>((resolve) => {
      timer = setTimeout(() => resolve(timedOut), timeoutMs);
    });

    let result: T | typeof timedOut;
    try {
      result = await Promise.race([work, timeout]);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(`runInChromium: ${what} failed in Chromium: ${message}${details()}`, { cause: err });
    }
    if (result === timedOut) {
      throw new Error(`runInChromium: ${what} did not finish within ${timeoutMs} ms${details()}`);
    }
    if (pageErrors.length > 0 || (consoleErrors.length > 0 && opts.allowConsoleErrors !== true)) {
      throw new Error(`runInChromium: ${what} returned, but the page reported errors:${details()}`);
    }
    return result;
  } finally {
    clearTimeout(timer);
    try {
      await context?.close();
    } finally {
      await server.close();
    }
  }
}

/**
 * Bundles `entry` for the browser. Workspace packages resolve to their TypeScript sources via
 * the `source` export condition. A Node built-in anywhere in the import graph is a build error:
 * that is what proves the module has no Node-only dependency.
 */
async function bundleForBrowser(entry: string, exportName: string): Promise<string> {
  let result: BuildResult<{ write: false; metafile: true }>;
  try {
    result = await build({
      entryPoints: [entry],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'chrome120',
      conditions: ['source'],
      write: false,
      metafile: true,
      logLevel: 'silent',
      outfile: 'bundle.js',
    });
  } catch (err) {
    const errors = (err as { errors?: Message[] }).errors ?? [];
    const lines = errors.map((m) => {
      const where = m.location ? `${m.location.file}:${m.location.line}:${m.location.column}: ` : '';
      const notes = m.notes.map((n) => `\n    note: ${n.text}`).join('');
      return `\n  ${where}${m.text}${notes}`;
    });
    const message =
      lines.length > 0 ? lines.join('') : ` ${err instanceof Error ? err.message : String(err)}`;
    throw new Error(`runInChromium: esbuild could not bundle ${entry} for the browser:${message}`, {
      cause: err,
    });
  }
  const output = result.outputFiles[0];
  if (output === undefined) throw new Error(`runInChromium: esbuild produced no output for ${entry}`);
  const exported = Object.values(result.metafile.outputs)[0]?.exports ?? [];
  if (!exported.includes(exportName)) {
    throw new TypeError(
      `runInChromium: ${entry} has no export named ${JSON.stringify(exportName)} ` +
        `(it exports: ${exported.join(', ') || 'nothing'})`,
    );
  }
  return output.text;
}

interface BundleServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  close(): Promise<void>;
}

/** The function {@link PAGE_HTML} installs in the page. */
interface PageRunner {
  __testkitRun(name: string, args: unknown[]): Promise<unknown>;
}

/**
 * The test page. It installs `__testkitRun`, which imports the bundle and calls one export. The
 * favicon link stops Chromium from requesting `/favicon.ico` and logging the 404 as an error.
 */
const PAGE_HTML = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>testkit</title>
<script type="module">
globalThis.__testkitRun = async (name, args) => {
  const mod = await import('/bundle.js');
  const fn = mod[name];
  if (typeof fn !== 'function') {
    throw new TypeError('the module has no exported function named ' + JSON.stringify(name));
  }
  return await fn(...args);
};
</script>
`;

/** The origin the page is loaded from when Playwright answers its requests (no server listens). */
const ROUTED: BundleServer = { origin: 'http://127.0.0.1', close: async () => undefined };

/** Answers the page's and the bundle's requests in `context` from this process. */
async function routeBundle(context: BrowserContext, bundle: string): Promise<void> {
  await context.route(`${ROUTED.origin}/**`, (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/') {
      return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: PAGE_HTML });
    }
    if (path === '/bundle.js') {
      return route.fulfill({ status: 200, contentType: 'text/javascript; charset=utf-8', body: bundle });
    }
    return route.fulfill({ status: 404, contentType: 'text/plain', body: 'not found' });
  });
}

/** Serves the page and the bundle on 127.0.0.1, on a free port. */
async function serveBundle(bundle: string): Promise<BundleServer> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(PAGE_HTML);
    } else if (path === '/bundle.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' });
      res.end(bundle);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
