import { and, eq, exists, inArray, isNull, or, type SQL, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  type CloudDb,
  memberships,
  orgs,
  ROBOT_ACCESS,
  type RobotAccess,
  robotGrants,
  robots,
  users,
} from '../db/index.js';
import { offlineView, type PresenceView } from '../signalling/index.js';
import { audit } from '../audit/index.js';
import type { Caller } from './auth.js';
import { type ApiContext, hasScope, requireOrgPermission } from './context.js';
import { ApiError } from './errors.js';
import { jsonSchema, params, parse, uuidParam } from './http.js';

const robotParams = z.object({ robot: z.string().min(1).max(128) });
const sessionParams = z.object({ robot: z.string().min(1).max(128), session: z.string().min(1).max(128) });
const grantParams = z.object({ robot: z.string().min(1).max(128), id: uuidParam });
const grantBody = z.object({
  grantee: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('user'), userId: uuidParam }),
    z.object({ kind: z.literal('org'), orgId: uuidParam }),
    z.object({ kind: z.literal('public') }),
  ]),
  access: z.enum(ROBOT_ACCESS),
});

/**
 * The robots a caller may see, as a condition on `robots`:
 * - nobody signed in: robots with a public grant, and with `SVC_DEV_OPEN_ENROLMENT=1` robots admitted
 *   by open dev enrolment (no org, never enrolled); every robot with `SVC_DEV_ALLOW_ANONYMOUS=1`;
 * - an API key with `robots:read`: its org's robots;
 * - a user: robots of their orgs, and robots granted to them, to one of their orgs, or to everyone.
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

/** `GET /api/v1/robots`, one robot, its deletion, and its grants. */
export function robotRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { db } = ctx;

  app.get(
    '/api/v1/robots',
    {
      schema: {
        summary: 'Robots the caller may see (without credentials: robots with a public grant)',
        tags: ['robots'],
      },
    },
    async (request) => {
      const caller = await ctx.auth.caller(request);
      const rows = await db
        .select()
        .from(robots)
        .where(visibleRobots(caller, ctx.config))
        .orderBy(robots.robotId);
      const access = await accessTo(
        db,
        caller,
        rows.map((r) => r.robotId),
      );
      const publicIds = await publicRobots(
        db,
        rows.map((r) => r.robotId),
      );
      return {
        robots: rows.map((r) =>
          robotView(
            r,
            publicIds.has(r.robotId),
            access.get(r.robotId) ?? null,
            ctx.signalling?.presenceOf(r.robotId),
          ),
        ),
      };
    },
  );

  app.get(
    '/api/v1/robots/:robot',
    {
      schema: {
        summary: 'One robot the caller may see, with its presence (online, channels, candidates, sessions)',
        tags: ['robots'],
      },
    },
    async (request) => {
      const { robot } = parse(robotParams, params(request), 'path');
      const caller = await ctx.auth.caller(request);
      const [row] = await db
        .select()
        .from(robots)
        .where(and(eq(robots.robotId, robot), visibleRobots(caller, ctx.config)));
      if (row === undefined) throw new ApiError('not-found', `no robot ${robot} among those you may see`);
      const access = await accessTo(db, caller, [robot]);
      const publicIds = await publicRobots(db, [robot]);
      return {
        robot: robotView(
          row,
          publicIds.has(robot),
          access.get(robot) ?? null,
          ctx.signalling?.presenceOf(robot),
        ),
      };
    },
  );

  app.get(
    '/api/v1/robots/:robot/sessions',
    {
      schema: {
        summary: "A robot's open sessions, with who holds them (admin of its org)",
        tags: ['robots'],
      },
    },
    async (request) => {
      const { robot } = parse(robotParams, params(request), 'path');
      await managedRobot(ctx, request, robot);
      return { sessions: ctx.signalling?.presenceOf(robot)?.sessions ?? [] };
    },
  );

  app.delete(
    '/api/v1/robots/:robot/sessions/:session',
    {
      schema: {
        summary:
          'Ends a session on a robot now; the robot refuses its token until it expires (admin of its org)',
        tags: ['robots'],
      },
    },
    async (request, reply) => {
      const p = parse(sessionParams, params(request), 'path');
      const { orgId, userId } = await managedRobot(ctx, request, p.robot);
      const revoked = ctx.signalling?.revokeSession(p.robot, p.session, 'revoked by an admin') ?? false;
      if (!revoked) {
        throw new ApiError(
          'not-found',
          `no open session ${p.session} on robot ${p.robot} (it may have ended, or the robot is offline)`,
        );
      }
      await audit(db, {
        orgId,
        actor: { kind: 'user', id: userId },
        action: 'session.revoke',
        targetKind: 'robot',
        targetId: p.robot,
        detail: { session: p.session },
      });
      reply.code(204);
    },
  );

  app.delete(
    '/api/v1/robots/:robot',
    { schema: { summary: 'Deletes a robot (admin of its org)', tags: ['robots'] } },
    async (request, reply) => {
      const { robot } = parse(robotParams, params(request), 'path');
      const row = await managedRobot(ctx, request, robot);
      // The actor is known from managedRobot: no query outside `tx` while it is open (PGlite has
      // one connection, so such a query would wait for the transaction forever).
      await db.transaction(async (tx) => {
        await tx.delete(robots).where(eq(robots.robotId, robot));
        await audit(tx, {
          orgId: row.orgId,
          actor: { kind: 'user', id: row.userId },
          action: 'robot.delete',
          targetKind: 'robot',
          targetId: robot,
        });
      });
      // Its sessions end and its connection is refused (`robot-deleted`).
      ctx.signalling?.robotDeleted(robot);
      reply.code(204);
    },
  );

  app.get(
    '/api/v1/robots/:robot/grants',
    { schema: { summary: "A robot's grants (admin of its org)", tags: ['grants'] } },
    async (request) => {
      const { robot } = parse(robotParams, params(request), 'path');
      await managedRobot(ctx, request, robot);
      const rows = await db
        .select()
        .from(robotGrants)
        .where(eq(robotGrants.robotId, robot))
        .orderBy(robotGrants.createdAt);
      return { grants: rows.map(grantView) };
    },
  );

  app.post(
    '/api/v1/robots/:robot/grants',
    {
      schema: {
        summary: 'Grants a user, an org or everyone (public) observe or drive on a robot',
        tags: ['grants'],
        body: jsonSchema(grantBody),
      },
    },
    async (request, reply) => {
      const { robot } = parse(robotParams, params(request), 'path');
      const { orgId, userId } = await managedRobot(ctx, request, robot);
      const body = parse(grantBody, request.body, 'body');
      const grantee = body.grantee;
      if (grantee.kind === 'user') {
        const [known] = await db.select({ id: users.id }).from(users).where(eq(users.id, grantee.userId));
        if (known === undefined)
          throw new ApiError('not-found', `no user ${grantee.userId}; they must have signed in once`);
      } else if (grantee.kind === 'org') {
        const [known] = await db.select({ id: orgs.id }).from(orgs).where(eq(orgs.id, grantee.orgId));
        if (known === undefined) throw new ApiError('not-found', `no organisation ${grantee.orgId}`);
      }
      const row = await db.transaction(async (tx) => {
        const [created] = await tx
          .insert(robotGrants)
          .values({
            robotId: robot,
            granteeKind: grantee.kind,
            userId: grantee.kind === 'user' ? grantee.userId : null,
            orgId: grantee.kind === 'org' ? grantee.orgId : null,
            access: body.access,
            createdBy: userId,
          })
          .onConflictDoNothing()
          .returning();
        if (created === undefined)
          throw new ApiError(
            'conflict',
            'this grantee already has a grant on this robot; delete it first to change it',
          );
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: userId },
          action: 'grant.create',
          targetKind: 'robot',
          targetId: robot,
          detail: { grant: created.id, grantee, access: body.access },
        });
        return created;
      });
      reply.code(201);
      return { grant: grantView(row) };
    },
  );

  app.delete(
    '/api/v1/robots/:robot/grants/:id',
    { schema: { summary: 'Removes a grant', tags: ['grants'] } },
    async (request, reply) => {
      const p = parse(grantParams, params(request), 'path');
      const { orgId, userId } = await managedRobot(ctx, request, p.robot);
      await db.transaction(async (tx) => {
        const [row] = await tx
          .delete(robotGrants)
          .where(and(eq(robotGrants.id, p.id), eq(robotGrants.robotId, p.robot)))
          .returning();
        if (row === undefined) throw new ApiError('not-found', `no grant ${p.id} on robot ${p.robot}`);
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: userId },
          action: 'grant.delete',
          targetKind: 'robot',
          targetId: p.robot,
          detail: {
            grant: p.id,
            granteeKind: row.granteeKind,
            userId: row.userId,
            orgId: row.orgId,
            access: row.access,
          },
        });
      });
      reply.code(204);
    },
  );
}

/** A robot of an org in which the signed-in caller may manage robots; 404 otherwise. */
async function managedRobot(
  ctx: ApiContext,
  request: Parameters<typeof requireOrgPermission>[1],
  robotId: string,
) {
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
    if (err instanceof ApiError && err.code === 'not-found')
      throw new ApiError('not-found', `no robot ${robotId} in your organisations`);
    throw err;
  }
  return { orgId: row.orgId, userId: caller.user.id };
}

async function publicRobots(db: CloudDb, robotIds: readonly string[]): Promise<Set<string>> {
  if (robotIds.length === 0) return new Set();
  const rows = await db
    .select({ robotId: robotGrants.robotId })
    .from(robotGrants)
    .where(and(inArray(robotGrants.robotId, [...robotIds]), eq(robotGrants.granteeKind, 'public')));
  return new Set(rows.map((r) => r.robotId));
}

/** A robot as the API lists it: its record and its presence on this node. */
function robotView(
  row: typeof robots.$inferSelect,
  isPublic: boolean,
  access: RobotAccess | null,
  live: PresenceView | undefined,
) {
  const presence = live ?? offlineView(row.lastSeenAt);
  const lastSeenAt =
    row.lastSeenAt !== null && (presence.lastSeenAt === null || row.lastSeenAt > presence.lastSeenAt)
      ? row.lastSeenAt
      : presence.lastSeenAt;
  return {
    robotId: row.robotId,
    name: row.name,
    orgId: row.orgId,
    public: isPublic,
    access,
    enrolledAt: row.enrolledAt,
    online: presence.online,
    lastSeenAt,
    channels: presence.channels,
    candidates: presence.candidates,
    relay: presence.relay,
    sessions: presence.sessions.map((x) => ({ sessionId: x.sessionId, role: x.role })),
  };
}

function grantView(row: typeof robotGrants.$inferSelect) {
  const grantee =
    row.granteeKind === 'user'
      ? { kind: 'user' as const, userId: row.userId }
      : row.granteeKind === 'org'
        ? { kind: 'org' as const, orgId: row.orgId }
        : { kind: 'public' as const };
  return { id: row.id, robotId: row.robotId, grantee, access: row.access, createdAt: row.createdAt };
}
