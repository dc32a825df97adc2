import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { type CloudDb, memberships, type OrgRole, users } from '../../db/index.js';
import { mayManageRole } from '../authz.js';
import type { ApiPlugin } from '../context.js';
import { ApiError } from '../errors.js';
import { orgResource } from '../route.js';
import { noContent, orgRole, timestamp, uuid } from '../schemas.js';

const memberParams = z.object({ org: uuid, user: uuid });
const roleBody = z.object({ role: orgRole });

const member = z.object({
  userId: uuid,
  email: z.string().nullable(),
  name: z.string().nullable(),
  role: orgRole,
  since: timestamp,
});

/** Members of an org and their roles, under `/api/v1/orgs/:org/members`. */
export const memberRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;
  const routes = orgResource(app, ctx, { tags: ['members'], permission: 'members.manage' });

  routes.get('', {
    summary: 'Members and their roles',
    permission: 'org.read',
    response: { 200: z.object({ members: z.array(member) }).describe('Members, by email') },
    async handler({ orgId }) {
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
  });

  routes.patch('/:user', {
    summary: "Changes a member's role",
    description: 'Admins manage operators and viewers; owners manage everyone. An org keeps one owner.',
    params: memberParams,
    body: roleBody,
    response: {
      200: z.object({ member: z.object({ userId: uuid, role: orgRole }) }).describe('The new role'),
    },
    moreErrors: ['conflict'],
    async handler({ orgId, user, role: actorRole }, { params, body: { role } }) {
      return db.transaction(async (tx) => {
        const current = await memberRole(tx, orgId, params.user);
        if (!mayManageRole(actorRole, current) || !mayManageRole(actorRole, role)) {
          throw new ApiError(
            'forbidden',
            `an ${actorRole} cannot change a ${current} into a ${role}; ask an owner`,
          );
        }
        if (current === 'owner' && role !== 'owner') await keepAnOwner(tx, orgId);
        await tx
          .update(memberships)
          .set({ role })
          .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, params.user)));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'membership.update',
          targetKind: 'user',
          targetId: params.user,
          detail: { from: current, to: role },
        });
        return { member: { userId: params.user, role } };
      });
    },
  });

  routes.delete('/:user', {
    summary: 'Removes a member (or leaves, for oneself)',
    // Any member may leave; who may remove whom is weighed below.
    permission: 'org.read',
    params: memberParams,
    response: { 204: noContent },
    moreErrors: ['conflict'],
    async handler({ orgId, user, role: actorRole }, { params }, reply) {
      await db.transaction(async (tx) => {
        const current = await memberRole(tx, orgId, params.user);
        const self = params.user === user.id;
        if (!self && !mayManageRole(actorRole, current)) {
          throw new ApiError('forbidden', `an ${actorRole} cannot remove a ${current}; ask an owner`);
        }
        if (current === 'owner') await keepAnOwner(tx, orgId);
        await tx
          .delete(memberships)
          .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, params.user)));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: self ? 'membership.leave' : 'membership.delete',
          targetKind: 'user',
          targetId: params.user,
          detail: { role: current },
        });
      });
      ctx.fleet.handleMembershipRemoved(orgId, params.user);
      return reply.code(204).send();
    },
  });
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
