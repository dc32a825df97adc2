/**
 * svc-cloud's half of the demo robot (`src/demo.ts`), on both database engines: the demonstration
 * org, the one-time enrolment token it writes for the robot (0600) while the robot is not enrolled,
 * made and audited like an admin's, redeemed through the real `POST /api/v1/enrol`; the robot named
 * and observable by its org once enrolled; development users of an older data folder joined; and
 * `SVC_DEMO` refused without the development provider.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { silentLogger } from '@svc/runtime';
import { and, eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { CloudConfigError, loadCloudConfig } from '../src/config.js';
import {
  auditLog,
  type Database,
  enrolmentTokens,
  memberships,
  orgs,
  robotGrants,
  robots,
  users,
} from '../src/db/index.js';
import { DEMO_ROBOT_ID, DEMO_ROBOT_NAME, DEMO_TOKEN_FILE, demoRobotDir, prepareDemo } from '../src/demo.js';
import { OidcVerifier } from '../src/identity/index.js';
import { noInvitationProvider } from '../src/invitations/index.js';
import { databaseBackends } from './support/databases.js';

/** What `npm start` gives svc-cloud with nothing set. */
const NPM_START_ENV = {
  SVC_DEMO: '1',
  SVC_PROVISIONING: 'default-org',
  SVC_OIDC_ROLE_CLAIM: 'groups',
  SVC_OIDC_ROLE_MAP: 'owners=owner,admins=admin,operators=operator,viewers=viewer',
  SVC_DEFAULT_ORG_NAME: 'Demonstration',
  SVC_RATE_LIMIT_PER_MINUTE: '0',
};
const DEV_USERS = [
  { sub: 'dev-alice', groups: ['admins'] },
  { sub: 'dev-bob', groups: ['operators'] },
];

/** A robot's raw Ed25519 public key in base64url, as svcd sends it. */
function robotKey(): string {
  return generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
}

describe('SVC_DEMO', () => {
  it('is off unless set, and refused by name with an external identity provider', () => {
    expect(loadCloudConfig({}).demo).toBe(false);
    expect(loadCloudConfig({ SVC_DEMO: '1' }).demo).toBe(true);
    let error: unknown;
    try {
      loadCloudConfig({
        SVC_DEMO: '1',
        SVC_OIDC_ISSUER: 'https://auth.example.com',
        SVC_OIDC_AUDIENCE: 'https://api.example.com',
        SVC_OIDC_CLIENT_ID: 'svc-console',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CloudConfigError);
    expect((error as CloudConfigError).issues).toEqual([
      expect.objectContaining({
        variable: 'SVC_DEMO',
        message: expect.stringContaining('development provider'),
      }),
    ]);
  });
});

describe.each(databaseBackends)('the demo robot in svc-cloud on $name', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A fresh database and data folder, and a function that builds an app on them and prepares the demo. */
  async function setUp() {
    const { database, dispose } = await backend.create();
    cleanups.push(dispose);
    const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-demo-cloud-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const config = loadCloudConfig({ ...NPM_START_ENV, SVC_DATA_DIR: dataDir });
    const start = async () => {
      const app = await appOn(database, config);
      const state = await prepareDemo({
        app,
        config,
        db: database.db,
        log: silentLogger,
        devUsers: DEV_USERS,
      });
      return { app, state };
    };
    return { database, db: database.db, config, dataDir, start };
  }

  async function appOn(
    database: Database,
    config: ReturnType<typeof loadCloudConfig>,
  ): Promise<FastifyInstance> {
    const app = await buildApp({
      config,
      database,
      verifier: new OidcVerifier({
        issuer: config.identity.issuer,
        audience: config.identity.audience,
        clientId: config.identity.clientId,
      }),
      invitationProvider: noInvitationProvider,
      mail: { send: async () => {} },
      logger: false,
    });
    cleanups.push(() => app.close());
    return app;
  }

  it('writes a one-time token (0600) into the robot folder, audited as the service; the robot redeems it, is named, and its org may observe it', async () => {
    const { db, dataDir, start } = await setUp();
    const { app, state } = await start();
    expect(state.kind).toBe('token-written');
    const [org] = await db.select().from(orgs).where(eq(orgs.name, 'Demonstration'));
    expect(state.orgId).toBe(org!.id);

    const tokenFile = path.join(demoRobotDir(dataDir), DEMO_TOKEN_FILE);
    const token = (await readFile(tokenFile, 'utf8')).trim();
    expect(token).toMatch(/^svc_enr_[A-Za-z0-9_-]{43}$/);
    expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
    expect((await stat(demoRobotDir(dataDir))).mode & 0o777).toBe(0o700);
    const [row] = await db.select().from(enrolmentTokens).where(eq(enrolmentTokens.orgId, org!.id));
    expect(row).toMatchObject({ name: `${DEMO_ROBOT_NAME} (npm start)`, createdBy: null, redeemedAt: null });
    const created = await db.select().from(auditLog).where(eq(auditLog.action, 'enrolment-token.create'));
    expect(created).toEqual([
      expect.objectContaining({ orgId: org!.id, actorKind: 'system', targetId: row!.id }),
    ]);
    expect(JSON.stringify(created)).not.toContain(token);

    const enrolled = await app.inject({
      method: 'POST',
      url: '/api/v1/enrol',
      payload: { robotId: DEMO_ROBOT_ID, publicKey: robotKey(), token },
    });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    expect(enrolled.json()).toMatchObject({ robotId: DEMO_ROBOT_ID, orgId: org!.id });
    // The hook runs once the answer is sent.
    await expect
      .poll(() =>
        readFile(tokenFile).then(
          () => 'there',
          () => 'gone',
        ),
      )
      .toBe('gone');
    await expect
      .poll(async () => (await db.select().from(robots).where(eq(robots.robotId, DEMO_ROBOT_ID)))[0]?.name)
      .toBe(DEMO_ROBOT_NAME);
    const grants = await db.select().from(robotGrants).where(eq(robotGrants.robotId, DEMO_ROBOT_ID));
    expect(grants).toEqual([
      expect.objectContaining({ granteeKind: 'org', orgId: org!.id, access: 'observe' }),
    ]);
    const grantAudit = await db.select().from(auditLog).where(eq(auditLog.action, 'grant.create'));
    expect(grantAudit).toEqual([expect.objectContaining({ actorKind: 'system', targetId: DEMO_ROBOT_ID })]);
  });

  it('writes no token once the robot is enrolled, and a fresh one at each start until then', async () => {
    const { db, dataDir, start } = await setUp();
    const tokenFile = path.join(demoRobotDir(dataDir), DEMO_TOKEN_FILE);
    await start();
    const first = await readFile(tokenFile, 'utf8');
    const { app } = await start(); // npm start again before the robot ever enrolled
    const second = (await readFile(tokenFile, 'utf8')).trim();
    expect(second).not.toBe(first.trim());
    expect(await db.select().from(orgs)).toHaveLength(1);

    const answer = await app.inject({
      method: 'POST',
      url: '/api/v1/enrol',
      payload: { robotId: DEMO_ROBOT_ID, publicKey: robotKey(), token: second },
    });
    expect(answer.statusCode).toBe(201);
    await expect
      .poll(() =>
        readFile(tokenFile).then(
          () => 'there',
          () => 'gone',
        ),
      )
      .toBe('gone');
    const tokensBefore = (await db.select().from(enrolmentTokens)).length;

    const again = await start();
    expect(again.state.kind).toBe('enrolled');
    expect(
      await readFile(tokenFile).then(
        () => 'there',
        () => 'gone',
      ),
    ).toBe('gone');
    expect(await db.select().from(enrolmentTokens)).toHaveLength(tokensBefore);
    // Still one grant: preparing again changes nothing that is already right.
    expect(await db.select().from(robotGrants)).toHaveLength(1);
  });

  it('joins development users who signed in before the demonstration org existed, with their role', async () => {
    const { db, config, start } = await setUp();
    const [bob] = await db
      .insert(users)
      .values({ oidcIssuer: config.identity.issuer, oidcSubject: 'dev-bob', email: 'bob@example.test' })
      .returning();
    const [stranger] = await db
      .insert(users)
      .values({ oidcIssuer: 'https://elsewhere.example.com', oidcSubject: 'dev-alice' })
      .returning();
    const { state } = await start();
    const joined = await db.select().from(memberships).where(eq(memberships.orgId, state.orgId));
    expect(joined).toEqual([expect.objectContaining({ userId: bob!.id, role: 'operator' })]);
    expect(joined.some((m) => m.userId === stranger!.id)).toBe(false);
    const entries = await db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, 'provisioning.default-org'), eq(auditLog.targetId, bob!.id)));
    expect(entries).toHaveLength(1);
    await start();
    expect(await db.select().from(memberships).where(eq(memberships.orgId, state.orgId))).toHaveLength(1);
  });

  it('writes no token when the robot id is enrolled in another organisation, and says so', async () => {
    const { db, dataDir, start } = await setUp();
    const [other] = await db.insert(orgs).values({ name: 'Someone else' }).returning();
    await db
      .insert(robots)
      .values({ robotId: DEMO_ROBOT_ID, orgId: other!.id, publicKey: robotKey(), enrolledAt: new Date() });
    const { state } = await start();
    expect(state).toMatchObject({ kind: 'taken', otherOrgId: other!.id });
    const tokenFile = path.join(demoRobotDir(dataDir), DEMO_TOKEN_FILE);
    expect(
      await readFile(tokenFile).then(
        () => 'there',
        () => 'gone',
      ),
    ).toBe('gone');
  });
});
