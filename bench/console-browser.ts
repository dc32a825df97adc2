/**
 * The console in headless Chromium for the `console` suite: a tab signs in as a person does (the
 * console's "Sign in", then a test user's button on the development provider's page) and records,
 * in the page, when the Fleet page shows the whole fleet and when each robot's row first reads
 * `online`.
 *
 * The recorder is a script that runs before the page's own in every document of the context
 * (Playwright's init script). It is plain JavaScript text: tsx names inner functions with a helper
 * the page does not have, so no bench function is sent to the page that declares named functions.
 */
import { gzipSync } from 'node:zlib';
import type { LaunchedChromium } from '@svc/testkit';
import type { BrowserContext, CDPSession, Page, Response } from 'playwright-core';

/** What the recorder keeps in `window.__consoleBench`. */
interface Recorded {
  /** `Date.now()` when each robot's row first read `online`, by robot id. */
  readonly onlineAt: Record<string, number>;
  /** `performance.now()` when the table had a row and the status line said `<fleet> robots`. */
  readonly shownAt: number | undefined;
  /** `performance.now()` in the animation frame after that (the frame that paints it). */
  readonly shownFrameAt: number | undefined;
  /** The status a robot's row reads, `undefined` when it has no row in the page. */
  rowStatus(robotId: string): 'online' | 'offline' | undefined;
  /** Scrolls the robot rows so that row `index` (in the fleet's order) is the first in view. */
  scrollToRow(index: number): void;
}

/** The recorder in the page (a function given to Playwright runs in the page, where it exists). */
declare const window: Window & { readonly __consoleBench: Recorded };

/**
 * The recorder, for a fleet of `fleet` robots, checked at every DOM change (a MutationObserver).
 * It finds the page's parts by what a person sees, not by markup: the table named "Robots", rows by
 * `data-robot`, a row's status as its badge's text (`online`/`offline`), the status line (role
 * `status`). It also gives the bench `rowStatus(id)` and `scrollToRow(index)`.
 */
function recorderScript(fleet: number): string {
  return `(() => {
  const expected = ${JSON.stringify(`${fleet} robots`)};
  const rowStatus = (row) => {
    for (const element of row.querySelectorAll('*')) {
      if (element.childElementCount !== 0) continue;
      const text = (element.textContent || '').trim();
      if (text === 'online' || text === 'offline') return text;
    }
    return undefined;
  };
  const state = {
    onlineAt: Object.create(null),
    shownAt: undefined,
    shownFrameAt: undefined,
    rowStatus: (id) => {
      const row = document.querySelector('[data-robot="' + CSS.escape(id) + '"]');
      return row === null ? undefined : rowStatus(row);
    },
    scrollToRow: (index) => {
      const row = document.querySelector('[data-robot]');
      if (row === null) throw new Error('no robot row on the page');
      let scroller = row.parentElement;
      while (scroller !== null) {
        const overflow = getComputedStyle(scroller).overflowY;
        if ((overflow === 'auto' || overflow === 'scroll') && scroller.scrollHeight > scroller.clientHeight) break;
        scroller = scroller.parentElement;
      }
      if (scroller === null) throw new Error('the robot rows have no scrolling container');
      scroller.scrollTop = index * row.getBoundingClientRect().height;
    },
  };
  window.__consoleBench = state;
  const check = () => {
    if (state.shownAt === undefined) {
      const table = document.querySelector('table[aria-label="Robots"], [role="table"][aria-label="Robots"]');
      if (table !== null && table.querySelector('[data-robot]') !== null) {
        for (const status of document.querySelectorAll('[role="status"]')) {
          if ((status.textContent || '').startsWith(expected)) {
            state.shownAt = performance.now();
            requestAnimationFrame(() => { state.shownFrameAt = performance.now(); });
            break;
          }
        }
      }
    }
    for (const row of document.querySelectorAll('[data-robot]')) {
      const id = row.getAttribute('data-robot');
      if (id !== null && state.onlineAt[id] === undefined && rowStatus(row) === 'online') state.onlineAt[id] = Date.now();
    }
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, characterData: true });
})();`;
}

/** One signed-in console tab in its own browser context. */
export interface ConsoleTab {
  readonly context: BrowserContext;
  readonly page: Page;
  /** The organisation the Fleet page shows (from the address `#/orgs/<id>/fleet`). */
  readonly orgId: string;
  /** Uncaught errors of the page. */
  readonly errors: string[];
}

/**
 * Opens the console at `address` in a fresh context, signs in as the development provider's user
 * whose button matches `who`, and waits for the Fleet page with `fleet` robots.
 */
export async function openSignedInTab(
  chromium: LaunchedChromium,
  address: string,
  who: RegExp,
  fleet: number,
): Promise<ConsoleTab> {
  const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 860 } });
  await context.addInitScript({ content: recorderScript(fleet) });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${address}/console/`);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: who }).click();
  await waitShown(page, 60_000).catch(async (err: unknown) => {
    const text = await page
      .evaluate(() => (document.body.textContent ?? '').slice(0, 600))
      .catch(() => '(unreadable)');
    throw new Error(
      `no Fleet page with ${fleet} robots after signing in: at ${page.url()}, the page reads:\n${text}`,
      {
        cause: err,
      },
    );
  });
  const orgId = /#\/orgs\/([^/]+)\/fleet/.exec(page.url())?.[1];
  if (orgId === undefined) throw new Error(`signed in, the console is at ${page.url()}, not on a Fleet page`);
  return { context, page, orgId, errors };
}

/** Waits until the recorder saw the Fleet page painted with the whole fleet. */
async function waitShown(page: Page, timeoutMs: number): Promise<void> {
  await page.waitForFunction(() => window.__consoleBench?.shownFrameAt !== undefined, undefined, {
    timeout: timeoutMs,
    polling: 50,
  });
}

async function recorded(page: Page): Promise<Pick<Recorded, 'onlineAt' | 'shownAt' | 'shownFrameAt'>> {
  return page.evaluate(() => {
    const { onlineAt, shownAt, shownFrameAt } = window.__consoleBench;
    return { onlineAt: { ...onlineAt }, shownAt, shownFrameAt };
  });
}

/** The tokens the console keeps in this tab (its mirror for the plain pilot page). */
export async function tabAccessToken(page: Page): Promise<string> {
  const stored = await page.evaluate(() => sessionStorage.getItem('svc.tokens'));
  if (stored === null) throw new Error('the console keeps no tokens in this tab');
  return (JSON.parse(stored) as { accessToken: string }).accessToken;
}

/** A tab whose loads go past the browser's HTTP cache (and so past V8's code cache, kept with it). */
export async function coldCache(page: Page): Promise<CDPSession> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await cdp.send('Network.clearBrowserCache');
  return cdp;
}

/** One file the page loaded, with its size as sent and gzipped. */
export interface LoadedFile {
  readonly path: string;
  readonly status: number;
  readonly bytes: number;
  readonly gzipBytes: number;
}

/** Scripts and style sheets a load of the Fleet page fetched. */
export interface FleetAssets {
  readonly scripts: readonly LoadedFile[];
  readonly styles: readonly LoadedFile[];
}

/**
 * Reloads the signed-in tab on its Fleet page with a cold cache (`coldCache` first) and returns
 * every script and style sheet it loaded until the fleet was painted, each gzipped here with node's
 * zlib at level 9 (svc-cloud sends them uncompressed).
 */
export async function fleetAssets(page: Page, cdp: CDPSession): Promise<FleetAssets> {
  const responses: Response[] = [];
  const onResponse = (response: Response) => {
    const type = response.request().resourceType();
    const contentType = response.headers()['content-type'] ?? '';
    if (type === 'script' || type === 'stylesheet' || /javascript|text\/css/.test(contentType)) {
      responses.push(response);
    }
  };
  page.on('response', onResponse);
  try {
    await cdp.send('Network.clearBrowserCache');
    await page.reload({ waitUntil: 'commit' });
    await waitShown(page, 60_000);
  } finally {
    page.off('response', onResponse);
  }
  const scripts: LoadedFile[] = [];
  const styles: LoadedFile[] = [];
  const seen = new Set<string>();
  for (const response of responses) {
    const url = new URL(response.url());
    if (seen.has(url.href)) continue;
    seen.add(url.href);
    if (response.fromServiceWorker()) throw new Error(`${url.pathname} came from a service worker`);
    const body = await response.body();
    const file = {
      path: url.pathname,
      status: response.status(),
      bytes: body.length,
      gzipBytes: gzipSync(body, { level: 9 }).length,
    };
    if (file.status !== 200)
      throw new Error(`${url.pathname} answered ${file.status}: the cache was not cold`);
    const type = response.request().resourceType();
    const isCss = type === 'stylesheet' || (response.headers()['content-type'] ?? '').includes('text/css');
    (isCss ? styles : scripts).push(file);
  }
  return { scripts, styles };
}

/** One load of the Fleet page, ms from navigation start (the new document's `performance.now()`). */
export interface FleetLoad {
  /** The table had rows and the status line said the whole fleet (DOM committed). */
  readonly shownMs: number;
  /** The animation frame after it: the frame that paints it. */
  readonly paintedMs: number;
  /** Milestones of the same load, from the page's navigation and resource timing. */
  readonly milestones: Record<string, number>;
}

/** Reloads the tab (cold cache: `coldCache` first) and times the Fleet page until it is painted. */
export async function timeFleetLoad(page: Page, cdp: CDPSession): Promise<FleetLoad> {
  await cdp.send('Network.clearBrowserCache');
  await page.reload({ waitUntil: 'commit' });
  await waitShown(page, 60_000);
  const state = await recorded(page);
  const milestones = await page.evaluate(() => {
    const out: Record<string, number> = {};
    const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
    if (nav !== undefined) {
      out.documentResponseEnd = nav.responseEnd;
      out.domContentLoaded = nav.domContentLoadedEventEnd;
    }
    for (const entry of performance.getEntriesByType('resource') as PerformanceResourceTiming[]) {
      const path = new URL(entry.name).pathname;
      if (path.endsWith('.js')) {
        out.scriptsResponseEnd = Math.max(out.scriptsResponseEnd ?? 0, entry.responseEnd);
      } else if (path.endsWith('.css')) {
        out.stylesResponseEnd = Math.max(out.stylesResponseEnd ?? 0, entry.responseEnd);
      } else if (path === '/api/v1/console-config') {
        out.consoleConfigResponseEnd = entry.responseEnd;
      } else if (path === '/api/v1/me') {
        out.meResponseEnd = entry.responseEnd;
      } else if (path.endsWith('/fleet/events')) {
        // The stream's headers: the snapshot follows in the same write, its end is not timed here.
        out.fleetStreamStart = entry.fetchStart;
        out.fleetStreamResponseStart = entry.responseStart;
      }
    }
    return out;
  });
  return { shownMs: state.shownAt!, paintedMs: state.shownFrameAt!, milestones };
}

/** Scrolls the Fleet table so that the row at `index` (in the fleet's order) is the first in view. */
export async function scrollToRow(page: Page, index: number): Promise<void> {
  await page.evaluate((i) => window.__consoleBench.scrollToRow(i), index);
}

/** Waits until every robot of `robotIds` has a row in the page, reading `offline`. */
export async function waitRowsOffline(
  page: Page,
  robotIds: readonly string[],
  timeoutMs = 30_000,
): Promise<void> {
  await page.waitForFunction(
    (ids) => ids.every((id) => window.__consoleBench.rowStatus(id) === 'offline'),
    robotIds,
    { timeout: timeoutMs, polling: 20 },
  );
}

/**
 * Waits until every robot of `robotIds` was seen `online` in the page, at most `timeoutMs`, and
 * returns the `Date.now()` at which each was (robots not seen are missing).
 */
export async function onlineTimes(
  page: Page,
  robotIds: readonly string[],
  timeoutMs: number,
): Promise<Record<string, number>> {
  await page
    .waitForFunction(
      (ids) => {
        const seen = window.__consoleBench.onlineAt;
        return ids.every((id) => seen[id] !== undefined);
      },
      robotIds,
      { timeout: timeoutMs, polling: 50 },
    )
    .catch(() => undefined); // the caller counts what is missing
  const { onlineAt } = await recorded(page);
  const out: Record<string, number> = {};
  for (const id of robotIds) if (onlineAt[id] !== undefined) out[id] = onlineAt[id];
  return out;
}

/** Waits until the tab's status line reads `text` (e.g. `1000 robots, 800 online`). */
export async function waitStatus(page: Page, text: string, timeoutMs: number): Promise<void> {
  await page.waitForFunction(
    (wanted) =>
      [...document.querySelectorAll('[role="status"]')].some((s) => (s.textContent ?? '').startsWith(wanted)),
    text,
    { timeout: timeoutMs, polling: 100 },
  );
}

/** Main-thread time of a page, seconds, from CDP `Performance.getMetrics` (cumulative). */
export interface MainThreadTime {
  readonly task: number;
  readonly script: number;
  readonly layout: number;
  readonly style: number;
}

/** Reads a page's main-thread time so far; `Performance.enable` is sent on `cdp` first. */
export async function mainThreadTime(cdp: CDPSession): Promise<MainThreadTime> {
  await cdp.send('Performance.enable');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const value = (name: string) => metrics.find((m) => m.name === name)?.value ?? Number.NaN;
  return {
    task: value('TaskDuration'),
    script: value('ScriptDuration'),
    layout: value('LayoutDuration'),
    style: value('RecalcStyleDuration'),
  };
}

/** `after - before`, ms. */
export function mainThreadDelta(before: MainThreadTime, after: MainThreadTime): MainThreadTime {
  return {
    task: (after.task - before.task) * 1000,
    script: (after.script - before.script) * 1000,
    layout: (after.layout - before.layout) * 1000,
    style: (after.style - before.style) * 1000,
  };
}

/** Starts V8's sampling profiler in the page; `stop()` returns the profile (`.cpuprofile` JSON). */
export async function startPageProfile(cdp: CDPSession): Promise<{ stop(): Promise<unknown> }> {
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return {
    async stop() {
      const { profile } = await cdp.send('Profiler.stop');
      return profile;
    },
  };
}
