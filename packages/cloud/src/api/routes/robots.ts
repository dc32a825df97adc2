import { SESSION_BACKENDS } from '@svc/wire';
import { and, eq, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { memberships, type Robot, robots } from '../../db/index.js';
import type { Caller } from '../auth.js';
import { type ApiContext, type ApiPlugin, CALLER_ERRORS, roleIn } from '../context.js';
import { ApiError } from '../errors.js';
import { accessTo, publicRobots, visibleRobots } from '../robot-access.js';
import { driverUserId, type RobotView, robotSchema, robotView } from '../robot-view.js';
import { managedRobotResource, resource } from '../route.js';
import { noContent, robotIdParam, robotParams, uuid } from '../schemas.js';

const sessionParams = z.object({ robot: robotIdParam, session: z.string().min(1).max(128) });

const sessionRole = z.enum(['driver', 'observer']);

const robot = robotSchema;

const robotsQuery = z.object({
  org: uuid
    .optional()
    .describe(
      'Only the robots of this organisation, of which the caller must be a member (an API key: its own org); another is 404 `not-found`',
    ),
});

const renameBody = z.object({
  name: z.string().trim().min(1).max(100).nullable().describe('The new name; null removes it'),
});

const tags = ['robots'];

/** Robots, under `/api/v1/robots`: the ones the caller may see, one with its presence, deletion. */
export const robotRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;
  const visible = resource(app, { tags });
  const managed = managedRobotResource(app, ctx, { tags });

  visible.get('', {
    summary: 'Robots the caller may see (without credentials: robots with a public grant)',
    description:
      'With `?org=<id>`, only the robots of that organisation (the first event of `GET /api/v1/orgs/{org}/fleet/events` lists the same).',
    querystring: robotsQuery,
    response: { 200: z.object({ robots: z.array(robot) }).describe('Robots, by id, with their presence') },
    errors: [...CALLER_ERRORS, 'forbidden', 'not-found', 'invalid-request'],
    async handler(request) {
      const caller = await ctx.auth.caller(request);
      const visible = visibleRobots(caller, ctx.config);
      const org = request.query.org;
      const inOrg = org === undefined ? undefined : await orgFilter(ctx, caller, org);
      const rows = await db.select().from(robots).where(and(visible, inOrg)).orderBy(robots.robotId);
      return { robots: await robotViews(ctx, caller, rows) };
    },
  });

  visible.get('/:robot', {
    summary: 'One robot the caller may see, with its presence (online, channels, candidates, sessions)',
    params: robotParams,
    response: { 200: z.object({ robot }).describe('The robot and its presence') },
    errors: [...CALLER_ERRORS, 'forbidden', 'not-found', 'invalid-request'],
    async handler(request) {
      const robotId = request.params.robot;
      const caller = await ctx.auth.caller(request);
      const [row] = await db
        .select()
        .from(robots)
        .where(and(eq(robots.robotId, robotId), visibleRobots(caller, ctx.config)));
      if (row === undefined) throw new ApiError('not-found', `no robot ${robotId} among those you may see`);
      const [view] = await robotViews(ctx, caller, [row]);
      return { robot: view! };
    },
  });

  managed.patch('/:robot', {
    summary: 'Renames a robot (admin of its org)',
    body: renameBody,
    response: { 200: z.object({ robot }).describe('The robot with its new name') },
    async handler({ robotId, orgId, userId }, request) {
      const { name } = request.body;
      await db.transaction(async (tx) => {
        await tx.update(robots).set({ name }).where(eq(robots.robotId, robotId));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: userId },
          action: 'robot.update',
          targetKind: 'robot',
          targetId: robotId,
          detail: { name },
        });
      });
      ctx.fleet.handleRobotsChanged([robotId]);
      const caller = await ctx.auth.caller(request);
      const [row] = await db.select().from(robots).where(eq(robots.robotId, robotId));
      if (row === undefined) throw new ApiError('not-found', `robot ${robotId} was deleted meanwhile`);
      const [view] = await robotViews(ctx, caller, [row]);
      return { robot: view! };
    },
  });

  managed.delete('/:robot', {
    summary: 'Deletes a robot (admin of its org)',
    description: 'Its sessions end and its signalling connection is refused (`robot-deleted`).',
    response: { 204: noContent },
    async handler({ robotId, orgId, userId }, _request, reply) {
      // The actor is known from managedRobot: no query outside `tx` while it is open (PGlite has
      // one connection, so such a query would wait for the transaction forever).
      await db.transaction(async (tx) => {
        await tx.delete(robots).where(eq(robots.robotId, robotId));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: userId },
          action: 'robot.delete',
          targetKind: 'robot',
          targetId: robotId,
        });
      });
      ctx.signalling?.robotDeleted(robotId);
      ctx.fleet.handleRobotsChanged([robotId]);
      return reply.code(204).send();
    },
  });
};

/** A robot's open sessions, under `/api/v1/robots/:robot/sessions`: list, end one (admins of its org). */
export const robotSessionRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = managedRobotResource(app, ctx, { tags });
  routes.get('', {
    summary: "A robot's open sessions, with who holds them (admin of its org)",
    response: {
      200: z
        .object({
          sessions: z.array(
            z.object({
              sessionId: z.string(),
              role: sessionRole,
              sub: z.string().describe("Who the session is for: the token's `sub`"),
              started: z.boolean().describe('Whether the robot reported it running'),
              path: z
                .enum(['direct', 'relay'])
                .describe(
                  "How its packets travel: straight between pilot and robot, or through a relay (svc-cloud's, or a TURN server's on WebRTC)",
                ),
              backend: z
                .enum(SESSION_BACKENDS)
                .describe(
                  'What carries it: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)',
                ),
            }),
          ),
        })
        .describe('Open sessions on this node (none while the robot is offline)'),
    },
    async handler({ robotId }) {
      return { sessions: [...(ctx.signalling?.presenceOf(robotId)?.sessions ?? [])] };
    },
  });

  routes.delete('/:session', {
    summary: 'Ends a session on a robot now; the robot refuses its token until it expires (admin of its org)',
    params: sessionParams,
    response: { 204: noContent },
    async handler({ robotId, orgId, userId }, { params: { session } }, reply) {
      const revoked = ctx.signalling?.revokeSession(robotId, session, 'revoked by an admin') ?? false;
      if (!revoked) {
        throw new ApiError(
          'not-found',
          `no open session ${session} on robot ${robotId} (it may have ended, or the robot is offline)`,
        );
      }
      await audit(ctx.db, {
        orgId,
        actor: { kind: 'user', id: userId },
        action: 'session.revoke',
        targetKind: 'robot',
        targetId: robotId,
        detail: { session },
      });
      return reply.code(204).send();
    },
  });
};

/**
 * The condition that keeps the robots of `orgId`, for a caller who may ask for it: a member (any
 * role), an API key of that org, or anyone with `SVC_DEV_ALLOW_ANONYMOUS=1`.
 *
 * @throws {ApiError} `not-found` for an org the caller is not in (it is not shown to exist),
 *   `unauthenticated` without a credential.
 */
async function orgFilter(ctx: ApiContext, caller: Caller, orgId: string): Promise<SQL> {
  switch (caller.kind) {
    case 'user':
      await roleIn(ctx.db, orgId, caller.user.id);
      break;
    case 'api-key':
      if (caller.key.orgId !== orgId)
        throw new ApiError('not-found', `no organisation ${orgId} of this API key`);
      break;
    case 'anonymous':
      if (!ctx.config.devAllowAnonymous) {
        throw new ApiError(
          'unauthenticated',
          'listing the robots of an organisation needs a member: sign in first',
        );
      }
      break;
    default:
      return caller satisfies never;
  }
  return eq(robots.orgId, orgId);
}

/**
 * The robots as `caller` sees them: their access, whether they are public, and who drives them
 * (shown to members and API keys of the robot's org; its name and email read when not known).
 */
async function robotViews(ctx: ApiContext, caller: Caller, rows: readonly Robot[]): Promise<RobotView[]> {
  const ids = rows.map((r) => r.robotId);
  const access = await accessTo(ctx.db, caller, ids);
  const publicIds = await publicRobots(ctx.db, ids);
  const ownOrgs = await orgsOf(ctx, caller);
  const presences = new Map(rows.map((r) => [r.robotId, ctx.signalling?.presenceOf(r.robotId)]));
  const wanted = new Map<string, Set<string>>();
  for (const row of rows) {
    const driver = driverUserId(presences.get(row.robotId));
    if (driver === undefined || row.orgId === null || !ownOrgs.has(row.orgId)) continue;
    if (ctx.people.known(row.orgId, driver) !== undefined) continue;
    let set = wanted.get(row.orgId);
    if (set === undefined) {
      set = new Set();
      wanted.set(row.orgId, set);
    }
    set.add(driver);
  }
  for (const [orgId, userIds] of wanted) await ctx.people.load(orgId, [...userIds]);
  return rows.map((row) =>
    robotView(row, {
      isPublic: publicIds.has(row.robotId),
      access: access.get(row.robotId) ?? null,
      presence: presences.get(row.robotId),
      person: (userId) =>
        row.orgId !== null && ownOrgs.has(row.orgId)
          ? (ctx.people.known(row.orgId, userId) ?? null)
          : undefined,
    }),
  );
}

/** The orgs whose robots' drivers the caller may know: a user's orgs, an API key's org. */
async function orgsOf(ctx: ApiContext, caller: Caller): Promise<ReadonlySet<string>> {
  switch (caller.kind) {
    case 'user': {
      const rows = await ctx.db
        .select({ orgId: memberships.orgId })
        .from(memberships)
        .where(eq(memberships.userId, caller.user.id));
      return new Set(rows.map((r) => r.orgId));
    }
    case 'api-key':
      return new Set([caller.key.orgId]);
    case 'anonymous':
      return new Set();
    default:
      return caller satisfies never;
  }
}
