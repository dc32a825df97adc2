/**
 * Node-only test tools shared by all packages.
 *
 * @packageDocumentation
 */
export {
  ChromiumSession,
  findChromium,
  type LaunchedChromium,
  launchChromium,
  type RunInChromiumOptions,
  runInChromium,
} from './chromium.js';
