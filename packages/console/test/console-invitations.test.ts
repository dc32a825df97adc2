/**
 * The invite-only flow in the browser (spec 5.1 rules 7-9, section 4's invitation link), with the
 * development provider and with `oidc-provider` as an external issuer that mints one-time sign-in
 * tokens: an admin creates the invitation, the invitee opens the link, is signed in with the
 * one-time token, and lands in the organisation with the invited role; a link opened by someone
 * signed in with another verified email is refused with a message; a person without an invitation
 * sees the "no organisation yet" page.
 */
import {
  expectSignedIn,
  type LaunchedChromium,
  launchChromium,
  openTab,
  pickAtLoginPage,
  signIn,
} from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleCloud, DEFAULT_ORG_ENV, PROVIDERS, startConsoleCloud } from './support/providers.js';

describe.each(PROVIDERS)('invitations in the browser (%s provider, invite-only)', (kind) => {
  let chromium: LaunchedChromium;
  let served: ConsoleCloud;

  beforeAll(async () => {
    // The deployment began with its admins from the role map, and now admits people only by invitation.
    [served, chromium] = await Promise.all([
      startConsoleCloud(kind, { env: DEFAULT_ORG_ENV }),
      launchChromium(),
    ]);
    await served.cloud.signIn('dev-alice');
    await served.relaunch({ SVC_PROVISIONING: 'invite-only' });
  });
  afterAll(async () => {
    await chromium?.close();
    await served?.stop();
  });

  /** Alice, signed in, creates an invitation on the Invitations page; returns its link. */
  async function invite(email: string, role: 'Operator' | 'Viewer'): Promise<string> {
    const tab = await openTab(chromium, served.consoleUrl);
    await signIn(tab.page, { button: /Alice/ });
    await expectSignedIn(tab.page, 'alice@example.test');
    await tab.page
      .getByRole('navigation', { name: 'Pages' })
      .getByRole('link', { name: 'Invitations' })
      .click();
    await tab.page.getByLabel('Email').fill(email);
    await tab.page.getByRole('combobox', { name: 'Role' }).click();
    await tab.page.getByRole('option', { name: role }).click();
    await tab.page.getByRole('button', { name: 'Invite', exact: true }).click();
    const link = (await tab.page.getByLabel('Invitation link', { exact: true }).textContent()) ?? '';
    await tab.close();
    return link;
  }

  it('the invitee opens the link, is signed in by the one-time token, and lands in the org with the role', async () => {
    const link = await invite('dora@example.test', 'Operator');
    expect(new URL(link).hash).toMatch(/^#\/invite\?email=dora%40example\.test&token=svc_inv_[^&]+&ott=.+/);

    const tab = await openTab(chromium, link);
    // No login page: the one-time token signs her in.
    await expectSignedIn(tab.page, 'dora@example.test');
    await tab.page.getByRole('heading', { level: 2, name: 'Fleet' }).waitFor();
    expect(await tab.page.getByRole('combobox', { name: 'Organisation' }).inputValue()).toBe(
      'Demo (operator)',
    );
    expect(tab.errors).toEqual([]);
    await tab.close();
  });

  it('a link opened by someone signed in with another verified email is refused with a message', async () => {
    const link = await invite('erin@example.test', 'Viewer');
    // Without its one-time token the link goes through the login page, where Bob signs in.
    const withoutOtt = link.replace(/&ott=[^&]*/, '');
    const tab = await openTab(chromium, withoutOtt);
    await pickAtLoginPage(tab.page, { button: /Bob/ });
    const refusal = tab.page.getByRole('alert').filter({ hasText: 'The invitation was not accepted' });
    await refusal.waitFor({ timeout: 20_000 });
    expect((await refusal.textContent()) ?? '').toContain('this invitation is for another email address');
    await tab.close();

    // It is still Erin's: her link (with its one-time token) works.
    const hers = await openTab(chromium, link);
    await expectSignedIn(hers.page, 'erin@example.test');
    expect(await hers.page.getByRole('combobox', { name: 'Organisation' }).inputValue()).toBe(
      'Demo (viewer)',
    );
    await hers.close();
  });

  it('someone without an invitation sees "No organisation yet" and what to ask for', async () => {
    const tab = await openTab(chromium, served.consoleUrl);
    await signIn(tab.page, { name: 'frank' });
    await tab.page.getByRole('heading', { name: 'No organisation yet' }).waitFor({ timeout: 20_000 });
    expect((await tab.page.getByRole('main').textContent()) ?? '').toContain('Ask an administrator');
    await tab.close();
  });
});
