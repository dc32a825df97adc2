/**
 * The setup the browser end-to-end tests share: one headless Chromium and one {@link Fleet} for the
 * file, and per-test cleanups run after each test in reverse order.
 */
import { ChromiumSession } from '@svc/testkit';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { type Fleet, startFleet } from './fleet.js';

/** What {@link useBrowserFleet} gives a test file. */
export interface BrowserFleet {
  /** The file's Chromium (available inside tests). */
  readonly chromium: ChromiumSession;
  /** The file's svc-cloud, alice and robots (available inside tests). */
  readonly fleet: Fleet;
  /** Runs `cleanup` after the current test (the latest first). */
  defer(cleanup: () => Promise<void>): void;
}

/** Registers the file's hooks: Chromium and the fleet start before all tests and stop after. */
export function useBrowserFleet(): BrowserFleet {
  let chromium: ChromiumSession | undefined;
  let fleet: Fleet | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    [chromium, fleet] = await Promise.all([ChromiumSession.open(), startFleet()]);
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await chromium?.close();
    await fleet?.stop();
  });
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new TypeError(`${what} is only there inside tests`);
    return value;
  };
  return {
    get chromium() {
      return started(chromium, 'chromium');
    },
    get fleet() {
      return started(fleet, 'fleet');
    },
    defer: (cleanup) => {
      cleanups.push(cleanup);
    },
  };
}
