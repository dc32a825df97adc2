/**
 * Vitest's global setup: builds the console and pilot pages into `packages/console/dist` once per
 * run (skipped when up to date), so the tests that start svc-cloud and open `/console/` or
 * `/pilot/` find them even when vitest runs without `npm test`.
 *
 * @packageDocumentation
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BUILD = fileURLToPath(new URL('../../packages/console/scripts/build.mjs', import.meta.url));

/**
 * Runs the pages' build script. A failed build does not stop the run: the build's own errors are
 * printed, `npm test`'s "console pages" stage fails on them, and only the tests that open the
 * pages fail (they find the previous build, or a 503 naming the build command).
 */
export default function setup(): void {
  try {
    execFileSync(process.execPath, [BUILD], { stdio: ['ignore', 'ignore', 'inherit'] });
  } catch {
    console.error(
      'vitest global setup: the console pages could not be built (see above); running the tests anyway',
    );
  }
}
