/**
 * The console by role, in headless Chromium against a real svc-cloud, with the development
 * provider and with `oidc-provider` as an external issuer: each role sees the pages and buttons
 * its role allows and no others, the API refuses what the console hides anyway, and an admin's
 * main actions (enrolment token, invitation, API key: each shown once, listed, revoked; the audit
 * log showing them) work from the pages.
 */
import { generateKeyPairSync } from 'node:crypto';
import {
  callAs,
  expectSignedIn,
  type LaunchedChromium,
  launchChromium,
  navigationLinks,
  openTab,
  signIn,
} from '@svc/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleCloud, DEFAULT_ORG_ENV, PROVIDERS, startConsoleCloud } from './support/providers.js';

/** The test users, as the login page labels them, and what each role may see. */
const PEOPLE = [
  {
    role: 'owner',
    sub: 'dev-olivia',
    button: /Olivia/,
    email: 'olivia@example.test',
    pages: ['Fleet', 'Enrol a robot', 'Members', 'Invitations', 'API keys', 'Audit log'],
    removes: ['alice@example.test', 'bob@example.test', 'vera@example.test'],
  },
  {
    role: 'admin',
    sub: 'dev-alice',
    button: /Alice/,
    email: 'alice@example.test',
    pages: ['Fleet', 'Enrol a robot', 'Members', 'Invitations', 'API keys', 'Audit log'],
    removes: ['bob@example.test', 'vera@example.test'],
  },
  {
    role: 'operator',
    sub: 'dev-bob',
    button: /Bob/,
    email: 'bob@example.test',
    pages: ['Fleet', 'Members'],
    removes: [],
  },
  {
    role: 'viewer',
    sub: 'dev-vera',
    button: /Vera/,
    email: 'vera@example.test',
    pages: ['Fleet', 'Members'],
    removes: [],
  },
] as const;

const EVERYONE = PEOPLE.map((p) => p.email);

async function openPage(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
  await page.getByRole('heading', { level: 2, name }).waitFor();
}

describe.each(PROVIDERS)('the console by role (%s provider, default-org)', (kind) => {
  let chromium: LaunchedChromium;
  let served: ConsoleCloud;
  let orgId: string;

  beforeAll(async () => {
    [served, chromium] = await Promise.all([
      startConsoleCloud(kind, { env: DEFAULT_ORG_ENV }),
      launchChromium(),
    ]);
    // Everyone has signed in once, so every member is listed whoever looks.
    const signedIn = await Promise.all(PEOPLE.map((p) => served.cloud.signIn(p.sub)));
    orgId = signedIn[0]!.orgId;
  });
  afterAll(async () => {
    await chromium?.close();
    await served?.stop();
  });

  for (const person of PEOPLE) {
    it(`${person.role}: the pages and buttons of the role, and the API refuses the rest`, async () => {
      const tab = await openTab(chromium, served.consoleUrl);
      const { page } = tab;
      await signIn(page, { button: person.button });
      await expectSignedIn(page, person.email);
      expect(await navigationLinks(page)).toEqual(person.pages);

      const admin = person.role === 'owner' || person.role === 'admin';
      await page.getByRole('heading', { level: 2, name: 'Fleet' }).waitFor();
      expect(await page.getByRole('button', { name: 'Create enrolment token' }).count()).toBe(0);
      expect(await page.getByRole('link', { name: 'Create enrolment token' }).count()).toBe(admin ? 1 : 0);

      await openPage(page, 'Members');
      for (const email of EVERYONE)
        await page
          .getByRole('cell', { name: new RegExp(email) })
          .first()
          .waitFor();
      const removable = [];
      for (const email of EVERYONE) {
        if ((await page.getByRole('button', { name: `Remove ${email}` }).count()) > 0) removable.push(email);
      }
      expect(removable).toEqual(person.removes);
      // Everyone may leave; only the roles that manage others get a role menu for them.
      expect(await page.getByRole('button', { name: /^Leave / }).count()).toBe(
        person.role === 'owner' ? 0 : 1,
      );

      // What the console hides, the API refuses: enrolment tokens, the audit log, invitations.
      const tokens = await callAs(
        page,
        served.cloud.address,
        'POST',
        `/api/v1/orgs/${orgId}/enrolment-tokens`,
        {},
      );
      const audit = await callAs(page, served.cloud.address, 'GET', `/api/v1/orgs/${orgId}/audit`);
      const invitation = await callAs(
        page,
        served.cloud.address,
        'POST',
        `/api/v1/orgs/${orgId}/invitations`,
        {
          email: 'eve@example.test',
          role: 'viewer',
        },
      );
      const allowed = admin ? [201, 200, 201] : [403, 403, 403];
      expect([tokens.status, audit.status, invitation.status]).toEqual(allowed);

      if (!admin) {
        // A page opened by its address says who may use it, and shows none of its controls.
        await page.goto(`${served.consoleUrl}#/orgs/${orgId}/audit`);
        await page.getByText(`As ${person.role} of Demo you cannot open this page; ask an admin.`).waitFor();
        expect(await page.getByRole('button', { name: 'Apply filters' }).count()).toBe(0);
      }
      expect(tab.errors).toEqual([]);
      await tab.close();
    });
  }

  it("an admin's main actions: enrolment token, invitation and API key shown once, listed, revoked, and in the audit log", async () => {
    const tab = await openTab(chromium, served.consoleUrl);
    const { page } = tab;
    await signIn(page, { button: /Alice/ });
    await expectSignedIn(page, 'alice@example.test');

    // Enrolment: the token once, with the robot's commands; then revoked.
    await page.getByRole('link', { name: 'Create enrolment token' }).click();
    await page.getByRole('heading', { level: 2, name: 'Enrol a robot' }).waitFor();
    await page.getByLabel('Name (optional)').fill('yard-bot');
    await page.getByRole('button', { name: 'Create enrolment token' }).click();
    const token = (await page.getByLabel('Enrolment token', { exact: true }).textContent()) ?? '';
    expect(token).toMatch(/^svc_enr_[A-Za-z0-9_-]{43}$/);
    expect((await page.getByLabel('Enrol from the robot', { exact: true }).textContent()) ?? '').toBe(
      `svcd --config /etc/svcd/svcd.toml enrol --token ${token}`,
    );
    await page.getByRole('button', { name: 'Revoke token yard-bot' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('row', { name: /yard-bot.*revoked/ }).waitFor();
    expect(await page.getByRole('button', { name: 'Revoke token yard-bot' }).count()).toBe(0);

    // Invitation: the link once; then revoked.
    await openPage(page, 'Invitations');
    await page.getByLabel('Email').fill('dora@example.test');
    await page.getByRole('button', { name: 'Invite', exact: true }).click();
    const link = (await page.getByLabel('Invitation link', { exact: true }).textContent()) ?? '';
    expect(link).toContain('#/invite?email=dora%40example.test&token=svc_inv_');
    await page.getByRole('button', { name: /Revoke invitation for dora@example.test/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('row', { name: /dora@example.test.*revoked/ }).waitFor();

    // API key: the secret once; then revoked.
    await openPage(page, 'API keys');
    await page.getByLabel('Name').fill('backend');
    await page.getByRole('button', { name: /Create API key/ }).click();
    expect((await page.getByLabel('API key', { exact: true }).textContent()) ?? '').toMatch(/^svc_key_/);
    await page.getByRole('button', { name: /Revoke API key backend/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('row', { name: /backend.*revoked/ }).waitFor();

    // The audit log shows the three revocations, newest first.
    await openPage(page, 'Audit log');
    for (const action of ['api-key.revoke', 'invitation.revoke', 'enrolment-token.revoke']) {
      await page.getByRole('cell', { name: action, exact: true }).first().waitFor();
    }
    expect(tab.errors).toEqual([]);
    await tab.close();
  });
  it("an admin manages access: a member's role and membership, a robot's grants, the audit log filtered", async () => {
    const tab = await openTab(chromium, served.consoleUrl);
    const { page } = tab;
    await signIn(page, { button: /Alice/ });
    await expectSignedIn(page, 'alice@example.test');

    // A robot enrolled with a token the admin made (offline: no daemon needed for its grants).
    const made = await callAs(
      page,
      served.cloud.address,
      'POST',
      `/api/v1/orgs/${orgId}/enrolment-tokens`,
      {},
    );
    const { publicKey } = generateKeyPairSync('ed25519');
    const enrolled = await fetch(`${served.cloud.address}/api/v1/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        robotId: 'grant-bot',
        publicKey: publicKey.export({ format: 'jwk' }).x,
        token: made.body.token,
      }),
    });
    expect(enrolled.status).toBe(201);

    // Fleet's search finds it; its page adds and removes a public grant.
    await page.getByRole('heading', { level: 2, name: 'Fleet' }).waitFor();
    await page.getByRole('textbox', { name: 'Search robots' }).fill('no-such-robot');
    await expect.poll(() => page.locator('[data-robot]').count()).toBe(0);
    await page.getByRole('textbox', { name: 'Search robots' }).fill('grant');
    await page.locator('[data-robot="grant-bot"]').getByRole('link').click();
    await page.getByRole('heading', { level: 2, name: 'grant-bot' }).waitFor();
    await page.getByRole('combobox', { name: 'Grant to' }).click();
    await page.getByRole('option', { name: 'Everyone (public)' }).click();
    await page.getByRole('button', { name: 'Add grant' }).click();
    await page.getByRole('cell', { name: 'everyone (public)', exact: true }).waitFor();
    const grants = await callAs(page, served.cloud.address, 'GET', '/api/v1/robots/grant-bot/grants');
    expect(grants.body.grants).toEqual([
      expect.objectContaining({ grantee: { kind: 'public' }, access: 'observe' }),
    ]);
    await page.getByRole('button', { name: 'Remove grant to everyone (public)' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await expect
      .poll(() => page.getByRole('cell', { name: 'everyone (public)', exact: true }).count())
      .toBe(0);

    // Members: Vera becomes an operator, then leaves the organisation by the admin's hand.
    await openPage(page, 'Members');
    await page.getByRole('combobox', { name: 'Role of vera@example.test' }).click();
    await page.getByRole('option', { name: 'operator' }).click();
    await expect
      .poll(async () => {
        const members = await callAs(page, served.cloud.address, 'GET', `/api/v1/orgs/${orgId}/members`);
        return members.body.members.find((m: { email: string }) => m.email === 'vera@example.test')?.role;
      })
      .toBe('operator');
    await page.getByRole('button', { name: 'Remove vera@example.test' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => page.getByRole('cell', { name: /vera@example.test/ }).count()).toBe(0);

    // The audit log, filtered by action, shows only the grant's removal.
    await openPage(page, 'Audit log');
    await page.getByRole('combobox', { name: 'Action' }).fill('grant.delete');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const table = page.getByRole('table', { name: 'Audit log entries' });
    await table.getByRole('cell', { name: 'grant.delete', exact: true }).waitFor();
    await expect
      .poll(() => table.getByRole('cell', { name: 'membership.update', exact: true }).count())
      .toBe(0);
    expect(tab.errors).toEqual([]);
    await tab.close();
  });
});
