import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { type CloudDb, memberships, type OrgRole, users } from '../../db/index.js';
import { mayManageRole } from '../authz.js';
import { type ApiPlugin, ORG_ERRORS, requireOrgPermission, requireUser, roleIn } from '../context.js';
import { ApiError, errorResponses } from '../errors.js';
import { noContent, orgParams, orgRole, timestamp, uuid } from '../schemas.js';

const memberParams = z.object({ org: uuid, user: uuid });
const roleBody = z.object({ role: orgRole });

const member = z.object({
  userId: uuid,
  email: z.string().nullable(),
  name: z.string().nullable(),
  role: orgRole,
  since: timestamp,
});

const tags = ['members'];

/** Members of an org and their roles, under `/api/v1/orgs/:org/members`. */
export const memberRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;

  app.get(
    '',
    {
      schema: {
        summary: 'Members and their roles',
        tags,
        params: orgParams,
        response: {
          200: z.object({ members: z.array(member) }).describe('Members, by email'),
          ...errorResponses(ORG_ERRORS),
        },
      },
    },
    async (request) => {
      const orgId = request.params.org;
      await requireOrgPermission(ctx, request, orgId, 'org.read');
      const rows = await db
        .select({
          userId: users.id,
          email: users.email,
          name: users.name,
          role: memberships.role,
          since: memberships.createdAt,
        })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.orgId, orgId))
        .orderBy(users.email);
      return { members: rows };
    },
  );

  app.patch(
    '/:user',
    {
      schema: {
        summary: "Changes a member's role",
        description: 'Admins manage operators and viewers; owners manage everyone. An org keeps one owner.',
        tags,
        params: memberParams,
        body: roleBody,
        response: {
          200: z.object({ member: z.object({ userId: uuid, role: orgRole }) }).describe('The new role'),
          ...errorResponses([...ORG_ERRORS, 'conflict'], { body: true }),
        },
      },
    },
    async (request) => {
      const p = request.params;
      const { role } = request.body;
      const { user, role: actorRole } = await requireOrgPermission(ctx, request, p.org, 'members.manage');
      return db.transaction(async (tx) => {
        const current = await memberRole(tx, p.org, p.user);
        if (!mayManageRole(actorRole, current) || !mayManageRole(actorRole, role)) {
          throw new ApiError(
            'forbidden',
            `an ${actorRole} cannot change a ${current} into a ${role}; ask an owner`,
          );
        }
        if (current === 'owner' && role !== 'owner') await keepAnOwner(tx, p.org);
        await tx
          .update(memberships)
          .set({ role })
          .where(and(eq(memberships.orgId, p.org), eq(memberships.userId, p.user)));
        await audit(tx, {
          orgId: p.org,
          actor: { kind: 'user', id: user.id },
          action: 'membership.update',
          targetKind: 'user',
          targetId: p.user,
          detail: { from: current, to: role },
        });
        return { member: { userId: p.user, role } };
      });
    },
  );

  app.delete(
    '/:user',
    {
      schema: {
        summary: 'Removes a member (or leaves, for oneself)',
        tags,
        params: memberParams,
        response: { 204: noContent, ...errorResponses([...ORG_ERRORS, 'conflict']) },
      },
    },
    async (request, reply) => {
      const p = request.params;
      const user = await requireUser(ctx, request);
      const actorRole = await roleIn(db, p.org, user.id);
      await db.transaction(async (tx) => {
        const current = await memberRole(tx, p.org, p.user);
        const self = p.user === user.id;
        if (!self && !mayManageRole(actorRole, current)) {
          throw new ApiError('forbidden', `an ${actorRole} cannot remove a ${current}; ask an owner`);
        }
        if (current === 'owner') await keepAnOwner(tx, p.org);
        await tx.delete(memberships).where(and(eq(memberships.orgId, p.org), eq(memberships.userId, p.user)));
        await audit(tx, {
          orgId: p.org,
          actor: { kind: 'user', id: user.id },
          action: self ? 'membership.leave' : 'membership.delete',
          targetKind: 'user',
          targetId: p.user,
          detail: { role: current },
        });
      });
      return reply.code(204).send();
    },
  );
};

/**
 * The member's role, locked for the transaction.
 *
 * @throws {ApiError} `not-found` when the user is not a member.
 */
async function memberRole(tx: CloudDb, orgId: string, userId: string): Promise<OrgRole> {
  const [row] = await tx
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
    .for('update');
  if (row === undefined) throw new ApiError('not-found', `no member ${userId} in this organisation`);
  return row.role;
}

/**
 * Refuses a change that would leave the org without an owner.
 *
 * @throws {ApiError} `conflict` when the org has one owner.
 */
async function keepAnOwner(tx: CloudDb, orgId: string): Promise<void> {
  const owners = await tx
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.role, 'owner')))
    .for('update');
  if (owners.length <= 1) {
    throw new ApiError('conflict', 'an organisation keeps at least one owner: make someone else owner first');
  }
}
