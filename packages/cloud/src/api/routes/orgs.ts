import { count, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { memberships, orgs, robots } from '../../db/index.js';
import { type ApiPlugin, requireUser, USER_ERRORS } from '../context.js';
import { ApiError } from '../errors.js';
import { orgResource, resource } from '../route.js';
import { noContent, orgRole, timestamp, uuid } from '../schemas.js';

const orgBody = z.object({ name: z.string().trim().min(1).max(100) });

const orgListed = z.object({ id: uuid, name: z.string(), role: orgRole, createdAt: timestamp });

const tags = ['orgs'];

/** Organisations, under `/api/v1/orgs`: list, create, read, rename, delete. */
export const orgRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;
  const collection = resource(app, { tags });
  const item = orgResource(app, ctx, { tags, permission: 'org.read' });

  collection.get('', {
    summary: "The caller's organisations",
    response: { 200: z.object({ orgs: z.array(orgListed) }).describe("The caller's organisations, by name") },
    errors: USER_ERRORS,
    async handler(request) {
      const user = await requireUser(ctx, request);
      const rows = await db
        .select({ id: orgs.id, name: orgs.name, role: memberships.role, createdAt: orgs.createdAt })
        .from(memberships)
        .innerJoin(orgs, eq(orgs.id, memberships.orgId))
        .where(eq(memberships.userId, user.id))
        .orderBy(orgs.name);
      return { orgs: rows };
    },
  });

  collection.post('', {
    summary: 'Creates an organisation the caller owns (self-serve only)',
    body: orgBody,
    response: { 201: z.object({ org: orgListed }).describe('The new organisation; the caller is its owner') },
    errors: [...USER_ERRORS, 'invalid-request'],
    async handler(request, reply) {
      const user = await requireUser(ctx, request);
      const { name } = request.body;
      if (ctx.config.provisioning !== 'self-serve') {
        throw new ApiError(
          'forbidden',
          `organisations are not created by users under provisioning policy ${ctx.config.provisioning}`,
        );
      }
      const org = await db.transaction(async (tx) => {
        const [created] = await tx.insert(orgs).values({ name, createdBy: user.id }).returning();
        await tx.insert(memberships).values({ orgId: created!.id, userId: user.id, role: 'owner' });
        await audit(tx, {
          orgId: created!.id,
          actor: { kind: 'user', id: user.id },
          action: 'org.create',
          targetKind: 'org',
          targetId: created!.id,
          detail: { name },
        });
        return created!;
      });
      return reply
        .code(201)
        .send({ org: { id: org.id, name: org.name, role: 'owner', createdAt: org.createdAt } });
    },
  });

  item.get('/:org', {
    summary: 'One organisation',
    response: {
      200: z
        .object({
          org: z.object({
            id: uuid,
            name: z.string(),
            createdAt: timestamp,
            role: orgRole.describe("The caller's role"),
            members: z.number().int(),
          }),
        })
        .describe('The organisation, with the caller’s role and its number of members'),
    },
    async handler({ orgId, role }) {
      const [org] = await db.select().from(orgs).where(eq(orgs.id, orgId));
      const [{ members } = { members: 0 }] = await db
        .select({ members: count() })
        .from(memberships)
        .where(eq(memberships.orgId, orgId));
      return { org: { id: org!.id, name: org!.name, createdAt: org!.createdAt, role, members } };
    },
  });

  item.patch('/:org', {
    summary: 'Renames an organisation (admin)',
    permission: 'org.update',
    body: orgBody,
    response: { 200: z.object({ org: z.object({ id: uuid, name: z.string() }) }).describe('The new name') },
    async handler({ orgId, user }, { body: { name } }) {
      await db.transaction(async (tx) => {
        await tx.update(orgs).set({ name }).where(eq(orgs.id, orgId));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'org.update',
          targetKind: 'org',
          targetId: orgId,
          detail: { name },
        });
      });
      return { org: { id: orgId, name } };
    },
  });

  item.delete('/:org', {
    summary: 'Deletes an organisation (owner)',
    description: 'Its robots (and their grants) are deleted with it; they must enrol again to join another.',
    permission: 'org.delete',
    response: { 204: noContent },
    async handler({ orgId, user }, _request, reply) {
      await db.transaction(async (tx) => {
        // A robot has at most one org: the org's robots (and their grants) go with it, and must
        // enrol again to join another.
        const gone = await tx
          .delete(robots)
          .where(eq(robots.orgId, orgId))
          .returning({ robotId: robots.robotId });
        await tx.delete(orgs).where(eq(orgs.id, orgId));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'org.delete',
          targetKind: 'org',
          targetId: orgId,
          detail: { robotsDeleted: gone.map((r) => r.robotId) },
        });
      });
      ctx.fleet.handleOrgDeleted(orgId);
      return reply.code(204).send();
    },
  });
};
