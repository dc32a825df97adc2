import { and, eq, exists, inArray, isNull, or, type SQL, sql } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import { type CloudDb, memberships, type RobotAccess, robotGrants, robots } from '../db/index.js';
import type { Caller } from './auth.js';
import { type ApiContext, hasScope, requireOrgPermission } from './context.js';
import { ApiError, isApiError } from './errors.js';

/**
 * The robots a caller may see, as a condition on `robots`:
 * - nobody signed in: robots with a public grant, and with `SVC_DEV_OPEN_ENROLMENT=1` robots admitted
 *   by open dev enrolment (no org, never enrolled); every robot with `SVC_DEV_ALLOW_ANONYMOUS=1`;
 * - an API key with `robots:read`: its org's robots;
 * - a user: robots of their orgs, and robots granted to them, to one of their orgs, or to everyone.
 *
 * @throws {ApiError} `forbidden` for an API key without the `robots:read` scope.
 */
export function visibleRobots(
  caller: Caller,
  dev: { readonly devAllowAnonymous: boolean; readonly devOpenEnrolment: boolean },
): SQL | undefined {
  const publicGrant = sql`exists (select 1 from ${robotGrants} g where g.robot_id = ${robots.robotId} and g.grantee_kind = 'public')`;
  switch (caller.kind) {
    case 'anonymous':
      // Robots admitted by open dev enrolment (no org, never enrolled; `enrolled_at` tells them
      // from one whose org was deleted) are shown only while the server runs in that dev mode.
      if (dev.devAllowAnonymous) return undefined;
      return dev.devOpenEnrolment
        ? or(publicGrant, and(isNull(robots.orgId), isNull(robots.enrolledAt)))
        : publicGrant;
    case 'api-key':
      if (!hasScope(caller, 'robots:read'))
        throw new ApiError('forbidden', 'this API key lacks the robots:read scope');
      return eq(robots.orgId, caller.key.orgId);
    case 'user': {
      const userId = caller.user.id;
      const myOrgs = sql`(select m.org_id from ${memberships} m where m.user_id = ${userId})`;
      return or(
        sql`${robots.orgId} in ${myOrgs}`,
        sql`exists (select 1 from ${robotGrants} g where g.robot_id = ${robots.robotId} and (g.grantee_kind = 'public' or g.user_id = ${userId} or g.org_id in ${myOrgs}))`,
      );
    }
    default:
      return caller satisfies never;
  }
}

/**
 * The strongest session access the caller holds on each robot, from the grants to them, to one
 * of their orgs (for an API key: its org), and to everyone.
 */
export async function accessTo(
  db: CloudDb,
  caller: Caller,
  robotIds: readonly string[],
): Promise<Map<string, RobotAccess>> {
  const access = new Map<string, RobotAccess>();
  if (robotIds.length === 0) return access;
  const who: SQL[] = [eq(robotGrants.granteeKind, 'public')];
  if (caller.kind === 'user') {
    who.push(eq(robotGrants.userId, caller.user.id));
    who.push(
      exists(
        db
          .select({ one: sql`1` })
          .from(memberships)
          .where(and(eq(memberships.userId, caller.user.id), eq(memberships.orgId, robotGrants.orgId))),
      ),
    );
  } else if (caller.kind === 'api-key') {
    who.push(eq(robotGrants.orgId, caller.key.orgId));
  }
  const rows = await db
    .select({ robotId: robotGrants.robotId, access: robotGrants.access })
    .from(robotGrants)
    .where(and(inArray(robotGrants.robotId, [...robotIds]), or(...who)));
  for (const row of rows) {
    if (row.access === 'drive' || !access.has(row.robotId)) access.set(row.robotId, row.access);
  }
  return access;
}

/** The robots among `robotIds` with a public grant. */
export async function publicRobots(db: CloudDb, robotIds: readonly string[]): Promise<Set<string>> {
  if (robotIds.length === 0) return new Set();
  const rows = await db
    .select({ robotId: robotGrants.robotId })
    .from(robotGrants)
    .where(and(inArray(robotGrants.robotId, [...robotIds]), eq(robotGrants.granteeKind, 'public')));
  return new Set(rows.map((r) => r.robotId));
}

/** Codes of a route on a robot its caller must manage ({@link managedRobot}). */
export const MANAGED_ROBOT_ERRORS = [
  'unauthenticated',
  'not-registered',
  'provider-unavailable',
  'forbidden',
  'not-found',
] as const;

/**
 * A robot of an org in which the signed-in caller may manage robots: its org and the caller.
 *
 * @throws {ApiError} `not-found` when there is no such robot in the caller's orgs, `forbidden`
 *   when their role does not allow managing robots or the caller is an API key,
 *   `unauthenticated` without a credential.
 */
export async function managedRobot(
  ctx: ApiContext,
  request: FastifyRequest,
  robotId: string,
): Promise<{ orgId: string; userId: string }> {
  const caller = await ctx.auth.caller(request);
  if (caller.kind !== 'user') {
    throw new ApiError(
      caller.kind === 'anonymous' ? 'unauthenticated' : 'forbidden',
      'managing robots needs a signed-in admin',
    );
  }
  const [row] = await ctx.db.select().from(robots).where(eq(robots.robotId, robotId));
  if (row === undefined || row.orgId === null)
    throw new ApiError('not-found', `no robot ${robotId} in your organisations`);
  try {
    await requireOrgPermission(ctx, request, row.orgId, 'robots.manage');
  } catch (err) {
    // Not a member: the robot is not shown to exist.
    if (isApiError(err, 'not-found'))
      throw new ApiError('not-found', `no robot ${robotId} in your organisations`);
    throw err;
  }
  return { orgId: row.orgId, userId: caller.user.id };
}
