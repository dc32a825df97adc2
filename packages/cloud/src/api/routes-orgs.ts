import { randomBytes } from 'node:crypto';
import { and, count, desc, eq, gte, lt, type SQL } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  apiKeys,
  auditLog,
  hashSecret,
  invitations,
  memberships,
  newSecret,
  ORG_ROLES,
  orgs,
  robots,
  users,
} from '../db/index.js';
import { InvitationProviderError } from '../invitations/index.js';
import { audit } from '../audit/index.js';
import { API_KEY_PREFIX } from './auth.js';
import { API_KEY_SCOPES, mayManageRole } from './authz.js';
import { type ApiContext, requireOrgPermission, requireUser, roleIn } from './context.js';
import { ApiError } from './errors.js';
import { jsonSchema, params, parse, uuidParam } from './http.js';
import { joinByInvitation } from './provisioning.js';

/** Text every invitation token starts with. */
export const INVITATION_TOKEN_PREFIX = 'svc_inv_';

const orgParams = z.object({ org: uuidParam });
const memberParams = z.object({ org: uuidParam, user: uuidParam });
const itemParams = z.object({ org: uuidParam, id: uuidParam });
const orgBody = z.object({ name: z.string().trim().min(1).max(100) });
const roleBody = z.object({ role: z.enum(ORG_ROLES) });
const invitationBody = z.object({ email: z.email().max(254), role: z.enum(ORG_ROLES) });
const acceptBody = z.object({ token: z.string().startsWith(INVITATION_TOKEN_PREFIX).max(200) });
const apiKeyBody = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z.array(z.enum(API_KEY_SCOPES)).min(1).max(API_KEY_SCOPES.length),
});
const auditQuery = z.object({
  action: z.string().max(100).optional(),
  actor: z.string().max(100).optional(),
  target: z.string().max(200).optional(),
  since: z.iso.datetime({ offset: true }).describe('Entries at or after this time').optional(),
  until: z.iso.datetime({ offset: true }).describe('Entries before this time').optional(),
  before: z.coerce.number().int().positive().optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const tags = (t: string) => [t];

/** Orgs, members, invitations, API keys and the audit log, under `/api/v1/orgs`. */
export function orgRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { db } = ctx;

  app.get(
    '/api/v1/orgs',
    { schema: { summary: "The caller's organisations", tags: tags('orgs') } },
    async (request) => {
      const user = await requireUser(ctx, request);
      const rows = await db
        .select({ id: orgs.id, name: orgs.name, role: memberships.role, createdAt: orgs.createdAt })
        .from(memberships)
        .innerJoin(orgs, eq(orgs.id, memberships.orgId))
        .where(eq(memberships.userId, user.id))
        .orderBy(orgs.name);
      return { orgs: rows };
    },
  );

  app.post(
    '/api/v1/orgs',
    {
      schema: {
        summary: 'Creates an organisation the caller owns (self-serve only)',
        tags: tags('orgs'),
        body: jsonSchema(orgBody),
      },
    },
    async (request, reply) => {
      const user = await requireUser(ctx, request);
      const body = parse(orgBody, request.body, 'body');
      if (ctx.config.provisioning !== 'self-serve') {
        throw new ApiError(
          'forbidden',
          `organisations are not created by users under provisioning policy ${ctx.config.provisioning}`,
        );
      }
      const org = await db.transaction(async (tx) => {
        const [created] = await tx.insert(orgs).values({ name: body.name, createdBy: user.id }).returning();
        await tx.insert(memberships).values({ orgId: created!.id, userId: user.id, role: 'owner' });
        await audit(tx, {
          orgId: created!.id,
          actor: { kind: 'user', id: user.id },
          action: 'org.create',
          targetKind: 'org',
          targetId: created!.id,
          detail: { name: body.name },
        });
        return created!;
      });
      reply.code(201);
      return { org: { id: org.id, name: org.name, role: 'owner', createdAt: org.createdAt } };
    },
  );

  app.get(
    '/api/v1/orgs/:org',
    { schema: { summary: 'One organisation', tags: tags('orgs') } },
    async (request) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      const { role } = await requireOrgPermission(ctx, request, orgId, 'org.read');
      const [org] = await db.select().from(orgs).where(eq(orgs.id, orgId));
      const [{ members } = { members: 0 }] = await db
        .select({ members: count() })
        .from(memberships)
        .where(eq(memberships.orgId, orgId));
      return { org: { id: org!.id, name: org!.name, createdAt: org!.createdAt, role, members } };
    },
  );

  app.patch(
    '/api/v1/orgs/:org',
    { schema: { summary: 'Renames an organisation (admin)', tags: tags('orgs'), body: jsonSchema(orgBody) } },
    async (request) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      const { user } = await requireOrgPermission(ctx, request, orgId, 'org.update');
      const body = parse(orgBody, request.body, 'body');
      await db.transaction(async (tx) => {
        await tx.update(orgs).set({ name: body.name }).where(eq(orgs.id, orgId));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'org.update',
          targetKind: 'org',
          targetId: orgId,
          detail: { name: body.name },
        });
      });
      return { org: { id: orgId, name: body.name } };
    },
  );

  app.delete(
    '/api/v1/orgs/:org',
    { schema: { summary: 'Deletes an organisation (owner)', tags: tags('orgs') } },
    async (request, reply) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      const { user } = await requireOrgPermission(ctx, request, orgId, 'org.delete');
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
      reply.code(204);
    },
  );

  // Members.
  app.get(
    '/api/v1/orgs/:org/members',
    { schema: { summary: 'Members and their roles', tags: tags('members') } },
    async (request) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
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
    '/api/v1/orgs/:org/members/:user',
    { schema: { summary: "Changes a member's role", tags: tags('members'), body: jsonSchema(roleBody) } },
    async (request) => {
      const p = parse(memberParams, params(request), 'path');
      const { user, role: actorRole } = await requireOrgPermission(ctx, request, p.org, 'members.manage');
      const body = parse(roleBody, request.body, 'body');
      return db.transaction(async (tx) => {
        const current = await memberRole(tx, p.org, p.user);
        if (!mayManageRole(actorRole, current) || !mayManageRole(actorRole, body.role)) {
          throw new ApiError(
            'forbidden',
            `an ${actorRole} cannot change a ${current} into a ${body.role}; ask an owner`,
          );
        }
        if (current === 'owner' && body.role !== 'owner') await keepAnOwner(tx, p.org);
        await tx
          .update(memberships)
          .set({ role: body.role })
          .where(and(eq(memberships.orgId, p.org), eq(memberships.userId, p.user)));
        await audit(tx, {
          orgId: p.org,
          actor: { kind: 'user', id: user.id },
          action: 'membership.update',
          targetKind: 'user',
          targetId: p.user,
          detail: { from: current, to: body.role },
        });
        return { member: { userId: p.user, role: body.role } };
      });
    },
  );

  app.delete(
    '/api/v1/orgs/:org/members/:user',
    { schema: { summary: 'Removes a member (or leaves, for oneself)', tags: tags('members') } },
    async (request, reply) => {
      const p = parse(memberParams, params(request), 'path');
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
      reply.code(204);
    },
  );

  // Invitations.
  app.post(
    '/api/v1/orgs/:org/invitations',
    {
      schema: {
        summary: 'Invites someone by email at a role; answers the link (shown once)',
        tags: tags('invitations'),
        body: jsonSchema(invitationBody),
      },
    },
    async (request, reply) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      const { user, role } = await requireOrgPermission(ctx, request, orgId, 'members.manage');
      const body = parse(invitationBody, request.body, 'body');
      if (!mayManageRole(role, body.role)) {
        throw new ApiError('forbidden', `an ${role} cannot invite a ${body.role}; ask an owner`);
      }
      const email = body.email.toLowerCase();
      const now = ctx.now();
      const ttlSec = ctx.config.invitationTtlHours * 3600;
      let ott: string | undefined;
      try {
        ott = await ctx.invitationProvider.oneTimeToken(email, { expiresInSec: ttlSec });
      } catch (err) {
        if (err instanceof InvitationProviderError) {
          throw new ApiError('provider-unavailable', `the invitation could not be prepared: ${err.message}`, {
            cause: err,
          });
        }
        throw err;
      }
      const token = newSecret(INVITATION_TOKEN_PREFIX);
      const invitation = await db.transaction(async (tx) => {
        const [row] = await tx
          .insert(invitations)
          .values({
            orgId,
            email,
            role: body.role,
            tokenHash: hashSecret(token),
            createdBy: user.id,
            expiresAt: new Date(now.getTime() + ttlSec * 1000),
          })
          .returning();
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'invitation.create',
          targetKind: 'invitation',
          targetId: row!.id,
          detail: { email, role: body.role, provider: ctx.invitationProvider.name },
        });
        return row!;
      });
      const query = new URLSearchParams({ email, token, ...(ott === undefined ? {} : { ott }) });
      const link = `${ctx.config.consoleUrl}#/invite?${query.toString()}`;
      const [org] = await db.select({ name: orgs.name }).from(orgs).where(eq(orgs.id, orgId));
      await ctx.mail.send({
        to: email,
        subject: `You are invited to ${org?.name ?? 'an organisation'}`,
        text: `You have been invited as ${body.role}. Open ${link} to accept.`,
      });
      reply.code(201);
      return { invitation: invitationView(invitation, now), token, link };
    },
  );

  app.get(
    '/api/v1/orgs/:org/invitations',
    { schema: { summary: 'Invitations, newest first', tags: tags('invitations') } },
    async (request) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      await requireOrgPermission(ctx, request, orgId, 'members.manage');
      const rows = await db
        .select()
        .from(invitations)
        .where(eq(invitations.orgId, orgId))
        .orderBy(desc(invitations.createdAt));
      const now = ctx.now();
      return { invitations: rows.map((r) => invitationView(r, now)) };
    },
  );

  app.delete(
    '/api/v1/orgs/:org/invitations/:id',
    { schema: { summary: 'Revokes an invitation', tags: tags('invitations') } },
    async (request, reply) => {
      const p = parse(itemParams, params(request), 'path');
      const { user, role } = await requireOrgPermission(ctx, request, p.org, 'members.manage');
      await db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(invitations)
          .where(and(eq(invitations.id, p.id), eq(invitations.orgId, p.org)));
        if (row === undefined) throw new ApiError('not-found', `no invitation ${p.id} in this organisation`);
        if (!mayManageRole(role, row.role))
          throw new ApiError('forbidden', `an ${role} cannot revoke an invitation as ${row.role}`);
        if (row.acceptedAt !== null)
          throw new ApiError('conflict', 'the invitation was already accepted; remove the member instead');
        if (row.revokedAt !== null) return;
        await tx.update(invitations).set({ revokedAt: ctx.now() }).where(eq(invitations.id, p.id));
        await audit(tx, {
          orgId: p.org,
          actor: { kind: 'user', id: user.id },
          action: 'invitation.revoke',
          targetKind: 'invitation',
          targetId: p.id,
          detail: { email: row.email, role: row.role },
        });
      });
      reply.code(204);
    },
  );

  app.post(
    '/api/v1/invitations/accept',
    {
      schema: {
        summary: "Accepts an invitation with its token; the caller's verified email must be the invited one",
        tags: tags('invitations'),
        body: jsonSchema(acceptBody),
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const body = parse(acceptBody, request.body, 'body');
      const now = ctx.now();
      return db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(invitations)
          .where(eq(invitations.tokenHash, hashSecret(body.token)))
          .for('update');
        if (row === undefined)
          throw new ApiError('not-found', 'no invitation has this token; ask for a new invitation');
        if (row.acceptedAt !== null || row.revokedAt !== null || row.expiresAt <= now) {
          const why =
            row.acceptedAt !== null ? 'already accepted' : row.revokedAt !== null ? 'revoked' : 'expired';
          throw new ApiError('gone', `this invitation was ${why}; ask for a new invitation`);
        }
        if (user.email === null || user.email !== row.email) {
          throw new ApiError(
            'forbidden',
            'this invitation is for another email address; sign in as the invited person (their email must be verified)',
          );
        }
        await joinByInvitation(tx, user, row, now, 'token');
        return { org: { id: row.orgId }, role: row.role };
      });
    },
  );

  // API keys.
  app.get(
    '/api/v1/orgs/:org/api-keys',
    { schema: { summary: 'API keys (never their secrets)', tags: tags('api-keys') } },
    async (request) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      await requireOrgPermission(ctx, request, orgId, 'api-keys.manage');
      const rows = await db
        .select()
        .from(apiKeys)
        .where(eq(apiKeys.orgId, orgId))
        .orderBy(desc(apiKeys.createdAt));
      return { apiKeys: rows.map(apiKeyView) };
    },
  );

  app.post(
    '/api/v1/orgs/:org/api-keys',
    {
      schema: {
        summary: 'Creates an API key; the key is in this answer only',
        tags: tags('api-keys'),
        body: jsonSchema(apiKeyBody),
      },
    },
    async (request, reply) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      const { user } = await requireOrgPermission(ctx, request, orgId, 'api-keys.manage');
      const body = parse(apiKeyBody, request.body, 'body');
      const prefix = API_KEY_PREFIX + randomBytes(4).toString('hex');
      const key = newSecret(`${prefix}_`);
      const row = await db.transaction(async (tx) => {
        const [created] = await tx
          .insert(apiKeys)
          .values({
            orgId,
            name: body.name,
            prefix,
            secretHash: hashSecret(key),
            scopes: [...new Set(body.scopes)],
            createdBy: user.id,
          })
          .returning();
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'api-key.create',
          targetKind: 'api_key',
          targetId: created!.id,
          detail: { name: body.name, prefix, scopes: created!.scopes },
        });
        return created!;
      });
      reply.code(201);
      return { apiKey: apiKeyView(row), key };
    },
  );

  app.delete(
    '/api/v1/orgs/:org/api-keys/:id',
    { schema: { summary: 'Revokes an API key', tags: tags('api-keys') } },
    async (request, reply) => {
      const p = parse(itemParams, params(request), 'path');
      const { user } = await requireOrgPermission(ctx, request, p.org, 'api-keys.manage');
      await db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(apiKeys)
          .where(and(eq(apiKeys.id, p.id), eq(apiKeys.orgId, p.org)));
        if (row === undefined) throw new ApiError('not-found', `no API key ${p.id} in this organisation`);
        if (row.revokedAt !== null) return;
        await tx.update(apiKeys).set({ revokedAt: ctx.now() }).where(eq(apiKeys.id, p.id));
        await audit(tx, {
          orgId: p.org,
          actor: { kind: 'user', id: user.id },
          action: 'api-key.revoke',
          targetKind: 'api_key',
          targetId: p.id,
          detail: { name: row.name, prefix: row.prefix },
        });
      });
      reply.code(204);
    },
  );

  // Audit log.
  app.get(
    '/api/v1/orgs/:org/audit',
    {
      schema: {
        summary:
          'The audit log, newest first; filter by action, actor id, target id and time; page with `before`',
        tags: tags('audit'),
        querystring: jsonSchema(auditQuery),
      },
    },
    async (request) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      const q = parse(auditQuery, request.query, 'query');
      await requireOrgPermission(ctx, request, orgId, 'audit.read');
      const where: SQL[] = [eq(auditLog.orgId, orgId)];
      if (q.action !== undefined) where.push(eq(auditLog.action, q.action));
      if (q.actor !== undefined) where.push(eq(auditLog.actorId, q.actor));
      if (q.target !== undefined) where.push(eq(auditLog.targetId, q.target));
      // [since, until): consecutive windows hold every entry exactly once.
      if (q.since !== undefined) where.push(gte(auditLog.at, new Date(q.since)));
      if (q.until !== undefined) where.push(lt(auditLog.at, new Date(q.until)));
      if (q.before !== undefined) where.push(lt(auditLog.id, q.before));
      const rows = await db
        .select()
        .from(auditLog)
        .where(and(...where))
        .orderBy(desc(auditLog.id))
        .limit(q.limit + 1);
      const page = rows.slice(0, q.limit);
      return {
        entries: page.map((r) => ({
          id: r.id,
          at: r.at,
          actor: { kind: r.actorKind, id: r.actorId },
          action: r.action,
          target: { kind: r.targetKind, id: r.targetId },
          detail: r.detail,
        })),
        next: rows.length > q.limit ? String(page[page.length - 1]!.id) : null,
      };
    },
  );
}

async function memberRole(tx: ApiContext['db'], orgId: string, userId: string) {
  const [member] = await tx
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
    .for('update');
  if (member === undefined) throw new ApiError('not-found', `no member ${userId} in this organisation`);
  return member.role;
}

/** Refuses a change that would leave the org without an owner. */
async function keepAnOwner(tx: ApiContext['db'], orgId: string): Promise<void> {
  const owners = await tx
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.role, 'owner')))
    .for('update');
  if (owners.length <= 1) {
    throw new ApiError('conflict', 'an organisation keeps at least one owner: make someone else owner first');
  }
}

function invitationView(row: typeof invitations.$inferSelect, now: Date) {
  const state =
    row.acceptedAt !== null
      ? 'accepted'
      : row.revokedAt !== null
        ? 'revoked'
        : row.expiresAt <= now
          ? 'expired'
          : 'pending';
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    state,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    acceptedAt: row.acceptedAt,
    revokedAt: row.revokedAt,
  };
}

function apiKeyView(row: typeof apiKeys.$inferSelect) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}
