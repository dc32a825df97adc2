import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { ROBOT_ACCESS, type Robot, type RobotAccess, robots } from '../../db/index.js';
import { offlineView, type PresenceView } from '../../signalling/index.js';
import { type ApiPlugin, CALLER_ERRORS } from '../context.js';
import { ApiError } from '../errors.js';
import { accessTo, publicRobots, visibleRobots } from '../robot-access.js';
import { managedRobotResource, resource } from '../route.js';
import { noContent, optionalTimestamp, robotIdParam, robotParams, uuid } from '../schemas.js';

const sessionParams = z.object({ robot: robotIdParam, session: z.string().min(1).max(128) });

const sessionRole = z.enum(['driver', 'observer']);

const robot = z.object({
  robotId: z.string(),
  name: z.string().nullable(),
  orgId: uuid.nullable().describe('Its organisation; null for a robot admitted by open dev enrolment'),
  public: z.boolean().describe('Whether a public grant lets everyone observe it'),
  access: z.enum(ROBOT_ACCESS).nullable().describe('The strongest access a grant gives the caller'),
  enrolledAt: optionalTimestamp,
  online: z.boolean(),
  lastSeenAt: optionalTimestamp,
  channels: z.array(
    z.object({
      id: z.number().int(),
      name: z.string(),
      kind: z.enum(['video', 'sensor', 'command']),
      codec: z.string(),
    }),
  ),
  candidates: z.array(
    z.object({
      address: z.string(),
      port: z.number().int(),
      family: z.enum(['ipv4', 'ipv6']),
      kind: z.enum(['host', 'mapped']),
    }),
  ),
  relay: z.boolean(),
  sessions: z.array(z.object({ sessionId: z.string(), role: sessionRole })),
});

const tags = ['robots'];

/** Robots, under `/api/v1/robots`: the ones the caller may see, one with its presence, deletion. */
export const robotRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;
  const visible = resource(app, { tags });
  const managed = managedRobotResource(app, ctx, { tags });

  visible.get('', {
    summary: 'Robots the caller may see (without credentials: robots with a public grant)',
    response: { 200: z.object({ robots: z.array(robot) }).describe('Robots, by id, with their presence') },
    errors: [...CALLER_ERRORS, 'forbidden'],
    async handler(request) {
      const caller = await ctx.auth.caller(request);
      const rows = await db
        .select()
        .from(robots)
        .where(visibleRobots(caller, ctx.config))
        .orderBy(robots.robotId);
      const ids = rows.map((r) => r.robotId);
      const access = await accessTo(db, caller, ids);
      const publicIds = await publicRobots(db, ids);
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
      const access = await accessTo(db, caller, [robotId]);
      const publicIds = await publicRobots(db, [robotId]);
      return {
        robot: robotView(
          row,
          publicIds.has(robotId),
          access.get(robotId) ?? null,
          ctx.signalling?.presenceOf(robotId),
        ),
      };
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

/** A robot as the API lists it: its record and its presence on this node. */
function robotView(
  row: Robot,
  isPublic: boolean,
  access: RobotAccess | null,
  live: PresenceView | undefined,
): z.output<typeof robot> {
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
    channels: [...presence.channels],
    candidates: [...presence.candidates],
    relay: presence.relay,
    sessions: presence.sessions.map((x) => ({ sessionId: x.sessionId, role: x.role })),
  };
}
