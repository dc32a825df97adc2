/**
 * svc-cloud's half of the demonstration robot of `npm start` (`docs/demo.md`). With `SVC_DEMO=1`
 * (which `npm start` sets unless `--no-demo`), and only with the embedded development provider, the
 * service:
 *
 * - makes sure the demonstration org exists: the org of the `default-org` policy
 *   (`SVC_DEFAULT_ORG_NAME`), which the development users join on their first sign-in;
 * - while the demo robot is not enrolled in it, writes a fresh one-time enrolment token to
 *   `<SVC_DATA_DIR>/demo-robot/enrolment-token` (mode 0600), made and audited exactly as an admin's
 *   `POST /api/v1/orgs/:org/enrolment-tokens` (actor: the service). The demo launcher hands it to
 *   `svcd`, which redeems it through the normal `POST /api/v1/enrol`;
 * - once the robot is enrolled: names it "Demo robot", grants the org `observe` on it (so a viewer
 *   can watch, while operators and admins drive by their role), and removes the token file;
 * - joins development users who signed in before the `default-org` policy was on (an older
 *   `./svc-data`) to the org with the role their group maps to, as their first sign-in would have.
 *
 * @packageDocumentation
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '@svc/runtime';
import { writePrivateFile } from '@svc/runtime/node';
import { and, eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { defaultOrg, mappedRole } from './api/provisioning.js';
import { createEnrolmentToken } from './api/routes/enrolment.js';
import { audit, SYSTEM_ACTOR } from './audit/index.js';
import type { CloudConfig } from './config.js';
import { type CloudDb, memberships, robotGrants, robots, users } from './db/index.js';

/** The demo robot's id (`agent.robot_id` of the configuration the launcher writes). */
export const DEMO_ROBOT_ID = 'demo-robot';
/** The name the demo robot is shown with. */
export const DEMO_ROBOT_NAME = 'Demo robot';
/** The file, in {@link demoRobotDir}, that holds an enrolment token while the robot is not enrolled. */
export const DEMO_TOKEN_FILE = 'enrolment-token';
/** Lifetime of a demo enrolment token, hours: one start of `npm start` needs minutes at most. */
const DEMO_TOKEN_HOURS = 24;
/** Label of the demo's enrolment tokens in the console's list. */
const DEMO_TOKEN_NAME = `${DEMO_ROBOT_NAME} (npm start)`;
/** The route the robot enrols through; its successful answers for the demo robot finish the setup. */
const ENROL_ROUTE = '/api/v1/enrol';

/** The demo robot's folder: its configuration, credential and, until it enrols, its token. */
export function demoRobotDir(dataDir: string): string {
  return path.join(dataDir, DEMO_ROBOT_ID);
}

/** What {@link prepareDemo} needs. */
export interface DemoOptions {
  /** The app, before it listens: a hook sees the demo robot's enrolment. */
  readonly app: FastifyInstance;
  readonly config: CloudConfig;
  readonly db: CloudDb;
  readonly log: Logger;
  /** The development provider's users and their groups (the role claim's values). */
  readonly devUsers: readonly { readonly sub: string; readonly groups: readonly string[] }[];
  readonly now?: () => Date;
}

/** Where the demo stands after {@link prepareDemo}. */
export type DemoState =
  /** The robot is enrolled in the demonstration org: nothing for the launcher to redeem. */
  | { readonly kind: 'enrolled'; readonly orgId: string }
  /** A fresh token waits in `tokenFile` for the launcher. */
  | { readonly kind: 'token-written'; readonly orgId: string; readonly tokenFile: string }
  /** The robot id belongs to another org: the demo robot cannot enrol until it is deleted there. */
  | { readonly kind: 'taken'; readonly orgId: string; readonly otherOrgId: string };

/**
 * Prepares the demonstration org and robot (see the module's description) and registers the hook
 * that finishes the robot's setup when it enrols. Call it before the app listens.
 *
 * @throws {TypeError} when the service does not run the development provider: the demo hands out
 *   an enrolment token to anyone who can read the data folder, which only a development setup may.
 */
export async function prepareDemo(options: DemoOptions): Promise<DemoState> {
  const { app, config, db, log } = options;
  if (config.identity.kind !== 'development') {
    throw new TypeError('the demo robot runs only with the embedded development identity provider');
  }
  const now = options.now ?? (() => new Date());
  const dir = demoRobotDir(config.dataDir);
  const tokenFile = path.join(dir, DEMO_TOKEN_FILE);
  const org = await db.transaction((tx) => defaultOrg(tx, config.defaultOrgName));
  if (config.provisioning !== 'default-org') {
    log.warn(
      { org: org.id, provisioning: config.provisioning },
      `the demo robot belongs to the org "${config.defaultOrgName}" of the default-org policy, but SVC_PROVISIONING is ${config.provisioning}: development users do not join it on sign-in`,
    );
  }
  await joinEarlierDevelopmentUsers(options, org.id);

  app.addHook('onResponse', async (request, reply) => {
    if (request.method !== 'POST' || request.routeOptions.url !== ENROL_ROUTE || reply.statusCode !== 201)
      return;
    const robotId = (request.body as { robotId?: unknown } | undefined)?.robotId;
    if (robotId !== DEMO_ROBOT_ID) return;
    try {
      await rm(tokenFile, { force: true });
      await adoptDemoRobot(db, org.id);
      // Consoles on the org's Fleet see its name and grant now, not at its next presence change.
      app.fleet.handleRobotsChanged([DEMO_ROBOT_ID]);
      log.info({ robotId, org: org.id }, 'demo robot enrolled: named, and the org may observe it');
    } catch (err) {
      log.error({ err, robotId }, 'demo robot enrolled, but finishing its setup failed');
    }
  });

  const [robot] = await db.select().from(robots).where(eq(robots.robotId, DEMO_ROBOT_ID));
  if (robot !== undefined && robot.orgId === org.id) {
    await rm(tokenFile, { force: true });
    await adoptDemoRobot(db, org.id);
    log.info({ robotId: DEMO_ROBOT_ID, org: org.id }, 'demo robot enrolled in the demonstration org');
    return { kind: 'enrolled', orgId: org.id };
  }
  if (robot !== undefined && robot.orgId !== null) {
    await rm(tokenFile, { force: true });
    log.warn(
      { robotId: DEMO_ROBOT_ID, org: robot.orgId },
      `robot id ${DEMO_ROBOT_ID} is enrolled in another organisation, so the demo robot cannot enrol; delete that robot in the console, or run npm start -- --no-demo`,
    );
    return { kind: 'taken', orgId: org.id, otherOrgId: robot.orgId };
  }
  const { token } = await createEnrolmentToken(db, {
    orgId: org.id,
    name: DEMO_TOKEN_NAME,
    expiresInHours: DEMO_TOKEN_HOURS,
    actor: SYSTEM_ACTOR,
    now: now(),
  });
  await writePrivateFile(tokenFile, `${token}\n`);
  log.info(
    { robotId: DEMO_ROBOT_ID, org: org.id, tokenFile },
    'demo robot not enrolled yet: a one-time enrolment token is waiting for it',
  );
  return { kind: 'token-written', orgId: org.id, tokenFile };
}

/**
 * Names the enrolled demo robot (unless someone renamed it) and grants its org `observe`, once;
 * the grant is audited like one an admin makes (`grant.create`, actor: the service).
 */
async function adoptDemoRobot(db: CloudDb, orgId: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .update(robots)
      .set({ name: DEMO_ROBOT_NAME })
      .where(and(eq(robots.robotId, DEMO_ROBOT_ID), eq(robots.orgId, orgId)));
    const [grant] = await tx
      .insert(robotGrants)
      .values({ robotId: DEMO_ROBOT_ID, granteeKind: 'org', orgId, access: 'observe', createdBy: null })
      .onConflictDoNothing()
      .returning();
    if (grant === undefined) return;
    await audit(tx, {
      orgId,
      actor: SYSTEM_ACTOR,
      action: 'grant.create',
      targetKind: 'robot',
      targetId: DEMO_ROBOT_ID,
      detail: { grant: grant.id, grantee: { kind: 'org', orgId }, access: 'observe', reason: 'demo robot' },
    });
  });
}

/**
 * Development users who already exist (they signed in under another policy) and are not in the
 * demonstration org join it with the role their groups map to, audited as `provisioning.default-org`.
 */
async function joinEarlierDevelopmentUsers(options: DemoOptions, orgId: string): Promise<void> {
  const { config, db } = options;
  const claim = config.roleClaim;
  if (config.provisioning !== 'default-org' || claim === undefined) return;
  for (const person of options.devUsers) {
    const role = mappedRole(config, { [claim]: [...person.groups] });
    if (role === undefined) continue;
    await db.transaction(async (tx) => {
      const [user] = await tx
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.oidcIssuer, config.identity.issuer), eq(users.oidcSubject, person.sub)));
      if (user === undefined) return;
      const [joined] = await tx
        .insert(memberships)
        .values({ orgId, userId: user.id, role })
        .onConflictDoNothing()
        .returning();
      if (joined === undefined) return;
      await audit(tx, {
        orgId,
        actor: SYSTEM_ACTOR,
        action: 'provisioning.default-org',
        targetKind: 'user',
        targetId: user.id,
        detail: { role, claim, reason: 'development user who signed in before the demonstration org' },
      });
    });
  }
}
