import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { orgs, ROBOT_ACCESS, type RobotGrant, robotGrants, users } from '../../db/index.js';
import type { ApiPlugin } from '../context.js';
import { ApiError } from '../errors.js';
import { managedRobotResource } from '../route.js';
import { noContent, robotIdParam, timestamp, uuid } from '../schemas.js';

const grantParams = z.object({ robot: robotIdParam, id: uuid });

const grantee = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('user'), userId: uuid }),
  z.object({ kind: z.literal('org'), orgId: uuid }),
  z.object({ kind: z.literal('public') }),
]);
const grantBody = z.object({ grantee, access: z.enum(ROBOT_ACCESS) });

const grant = z.object({
  id: uuid,
  robotId: z.string(),
  grantee: grantee.describe('A user, an organisation, or everyone'),
  access: z.enum(ROBOT_ACCESS),
  createdAt: timestamp,
});

/** Who else may observe or drive a robot, under `/api/v1/robots/:robot/grants` (admins of its org). */
export const grantRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;
  const routes = managedRobotResource(app, ctx, { tags: ['grants'] });

  routes.get('', {
    summary: "A robot's grants (admin of its org)",
    response: { 200: z.object({ grants: z.array(grant) }).describe('Grants, oldest first') },
    async handler({ robotId }) {
      const rows = await db
        .select()
        .from(robotGrants)
        .where(eq(robotGrants.robotId, robotId))
        .orderBy(robotGrants.createdAt);
      return { grants: rows.map(grantView) };
    },
  });

  routes.post('', {
    summary: 'Grants a user, an org or everyone (public) observe or drive on a robot',
    body: grantBody,
    response: { 201: z.object({ grant }).describe('The new grant') },
    moreErrors: ['conflict'],
    async handler({ robotId, orgId, userId }, { body: { grantee, access } }, reply) {
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
            robotId,
            granteeKind: grantee.kind,
            userId: grantee.kind === 'user' ? grantee.userId : null,
            orgId: grantee.kind === 'org' ? grantee.orgId : null,
            access,
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
          targetId: robotId,
          detail: { grant: created.id, grantee, access },
        });
        return created;
      });
      ctx.fleet.handleRobotsChanged([robotId]);
      return reply.code(201).send({ grant: grantView(row) });
    },
  });

  routes.delete('/:id', {
    summary: 'Removes a grant',
    params: grantParams,
    response: { 204: noContent },
    async handler({ robotId, orgId, userId }, { params: { id } }, reply) {
      await db.transaction(async (tx) => {
        const [row] = await tx
          .delete(robotGrants)
          .where(and(eq(robotGrants.id, id), eq(robotGrants.robotId, robotId)))
          .returning();
        if (row === undefined) throw new ApiError('not-found', `no grant ${id} on robot ${robotId}`);
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: userId },
          action: 'grant.delete',
          targetKind: 'robot',
          targetId: robotId,
          detail: {
            grant: id,
            granteeKind: row.granteeKind,
            userId: row.userId,
            orgId: row.orgId,
            access: row.access,
          },
        });
      });
      ctx.fleet.handleRobotsChanged([robotId]);
      return reply.code(204).send();
    },
  });
};

/**
 * A grant as the API shows it: the grantee as one tagged value.
 *
 * @throws {TypeError} for a row whose grantee column does not match its kind (the database's
 *   check constraint forbids it).
 */
function grantView(row: RobotGrant): z.output<typeof grant> {
  return {
    id: row.id,
    robotId: row.robotId,
    grantee: granteeOf(row),
    access: row.access,
    createdAt: row.createdAt,
  };
}

function granteeOf(row: RobotGrant): z.output<typeof grantee> {
  switch (row.granteeKind) {
    case 'user':
      if (row.userId === null) break;
      return { kind: 'user', userId: row.userId };
    case 'org':
      if (row.orgId === null) break;
      return { kind: 'org', orgId: row.orgId };
    case 'public':
      return { kind: 'public' };
    default:
      return row.granteeKind satisfies never;
  }
  throw new TypeError(`grant ${row.id} names no ${row.granteeKind}`);
}
