/**
 * The setup of the tests that open svc-cloud's own pages (`/pilot/`, the `<svc-pilot>` cockpit) in
 * Chromium as a person would: one launched Chromium (the test gets Playwright pages, to press keys,
 * click and take screenshots) and one {@link Fleet} for the file, per-test cleanups run after each
 * test in reverse order, and the robot's local programs stood in for by UDP sockets.
 */
import { createSocket, type Socket } from 'node:dgram';
import { type LaunchedChromium, launchChromium } from '@svc/testkit';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { type Fleet, startFleet } from './fleet.js';

/** A UDP socket standing in for one of the robot's local programs, with what it received as text. */
export interface RobotProgram {
  readonly socket: Socket;
  readonly port: number;
  readonly received: string[];
}

/** What {@link useCockpitFleet} gives a test file. */
export interface CockpitFleet {
  /** The file's Chromium (available inside tests). */
  readonly chromium: LaunchedChromium;
  /** The file's svc-cloud, alice and robots (available inside tests). */
  readonly fleet: Fleet;
  /** Runs `cleanup` after the current test (the latest first). */
  defer(cleanup: () => Promise<void>): void;
  /**
   * A new browser context (another person's browser), `init` run on it, and the pilot page opened
   * with `fragment` (`robot=…&token=…`); closed after the test.
   */
  openPilotPage(
    fragment: string,
    options?: {
      init?: (context: BrowserContext) => Promise<void>;
      /** Called with the page before it loads (listeners for what it prints while loading). */
      beforeLoad?: (page: Page) => void;
      viewport?: { width: number; height: number };
    },
  ): Promise<{ page: Page; context: BrowserContext }>;
  /** A bound UDP socket on 127.0.0.1, closed after the test. */
  robotProgram(): Promise<RobotProgram>;
}

/** Registers the file's hooks: Chromium and the fleet start before all tests and stop after. */
export function useCockpitFleet(): CockpitFleet {
  let chromium: LaunchedChromium | undefined;
  let fleet: Fleet | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    [chromium, fleet] = await Promise.all([launchChromium(), startFleet()]);
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
  const defer = (cleanup: () => Promise<void>) => {
    cleanups.push(cleanup);
  };
  return {
    get chromium() {
      return started(chromium, 'chromium');
    },
    get fleet() {
      return started(fleet, 'fleet');
    },
    defer,
    async openPilotPage(fragment, options = {}) {
      const browser = started(chromium, 'chromium').browser;
      const context = await browser.newContext(
        options.viewport === undefined ? {} : { viewport: options.viewport },
      );
      defer(() => context.close());
      await options.init?.(context);
      const page = await context.newPage();
      options.beforeLoad?.(page);
      await page.goto(`${started(fleet, 'fleet').cloud.address}/pilot/#${fragment}`);
      return { page, context };
    },
    async robotProgram() {
      const socket = createSocket('udp4');
      const received: string[] = [];
      socket.on('message', (m) => received.push(m.toString('utf8')));
      await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
      defer(() => new Promise<void>((resolve) => socket.close(() => resolve())));
      return { socket, port: socket.address().port, received };
    },
  };
}
