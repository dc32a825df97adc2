/**
 * The console in headless Chromium, driven as a person does: by role and name. A tab signs in
 * through the console's own sign-in button and the identity provider's login page, and can read
 * the tokens the console keeps, to show that the API refuses what the console hides. The
 * console's end-to-end tests and its screenshot script (`npm run docs:screenshots`) drive the
 * pages through these.
 *
 * @packageDocumentation
 */
import type { BrowserContext, Page } from 'playwright-core';
import type { LaunchedChromium } from './chromium.js';
import type { CloudAnswer } from './cloud-process.js';

/** One browser context with one page on the console. */
export interface ConsoleTab {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Uncaught errors of the page and Content-Security-Policy violations, for a test to assert there were none. */
  readonly errors: string[];
  close(): Promise<void>;
}

/** Opens `url` (a console address) in a fresh context. */
export async function openTab(chromium: LaunchedChromium, url: string): Promise<ConsoleTab> {
  const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && message.text().includes('Content Security Policy')) {
      errors.push(message.text());
    }
  });
  await page.goto(url);
  return { context, page, errors, close: () => context.close() };
}

/** Who signs in at the development provider's login page: a test user's button, or a typed name. */
export type DevLogin = { readonly button: RegExp } | { readonly name: string };

/**
 * From the console's sign-in page: "Sign in", then the provider's login page (a test user's
 * button, or a typed name), back in the console.
 */
export async function signIn(page: Page, who: DevLogin): Promise<void> {
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await pickAtLoginPage(page, who);
}

/** On the development provider's login page: picks `who`. */
export async function pickAtLoginPage(page: Page, who: DevLogin): Promise<void> {
  if ('button' in who) {
    await page.getByRole('button', { name: who.button }).click();
  } else {
    await page.getByRole('textbox').fill(who.name);
    await page.keyboard.press('Enter');
  }
}

/** Waits for the console's frame with `email`'s account menu (signed in, an organisation open). */
export async function expectSignedIn(page: Page, email: string): Promise<void> {
  await page.getByRole('button', { name: `Account: ${email}` }).waitFor({ timeout: 20_000 });
}

/** The tokens the console keeps in this tab (its mirror for the plain pilot page). */
export async function tabTokens(page: Page): Promise<{ accessToken: string; idToken: string }> {
  const stored = await page.evaluate(() => sessionStorage.getItem('svc.tokens'));
  if (stored === null) throw new Error('the console keeps no tokens in this tab: is anyone signed in?');
  return JSON.parse(stored) as { accessToken: string; idToken: string };
}

/** One API call with this tab's tokens, made by the test (not the page): what the API allows. */
export async function callAs(
  page: Page,
  address: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<CloudAnswer> {
  const { accessToken, idToken } = await tabTokens(page);
  const response = await fetch(`${address}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${accessToken}`,
      'x-svc-id-token': idToken,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** The names of the links in the console's page navigation. */
export async function navigationLinks(page: Page): Promise<string[]> {
  const nav = page.getByRole('navigation', { name: 'Pages' });
  await nav.getByRole('link').first().waitFor();
  return nav.getByRole('link').allInnerTexts();
}
