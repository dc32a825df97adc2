import { and, desc, eq, gte, lt, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { ACTOR_KINDS, auditLog } from '../../db/index.js';
import type { ApiPlugin } from '../context.js';
import { orgResource } from '../route.js';
import { timestamp } from '../schemas.js';

const auditQuery = z.object({
  action: z.string().max(100).optional(),
  actor: z.string().max(100).optional(),
  target: z.string().max(200).optional(),
  since: z.iso.datetime({ offset: true }).describe('Entries at or after this time').optional(),
  until: z.iso.datetime({ offset: true }).describe('Entries before this time').optional(),
  before: z.coerce.number().int().positive().describe('The `next` of the previous page').optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const entry = z.object({
  id: z.number().int(),
  at: timestamp,
  actor: z.object({ kind: z.enum(ACTOR_KINDS), id: z.string().nullable() }),
  action: z.string().describe('Dotted `noun.verb`, e.g. `membership.update`'),
  target: z.object({ kind: z.string().nullable(), id: z.string().nullable() }),
  detail: z.record(z.string(), z.unknown()).describe('What changed; never a secret'),
});

/** The audit log of an org, under `/api/v1/orgs/:org/audit`. */
export const auditRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = orgResource(app, ctx, { tags: ['audit'], permission: 'audit.read' });
  routes.get('', {
    summary:
      'The audit log, newest first; filter by action, actor id, target id and time; page with `before`',
    querystring: auditQuery,
    response: {
      200: z
        .object({
          entries: z.array(entry),
          next: z.string().nullable().describe('`before` for the next page; null on the last'),
        })
        .describe('One page of entries, newest first'),
    },
    async handler({ orgId }, { query: q }) {
      // Driver-slot events are batched by the signalling server: what happened before this
      // request is in the answer.
      await ctx.signalling?.flushAudit();
      // Read-your-writes on this node: the log shows every token mint made before it was asked for.
      if (ctx.auditBatcher.pending > 0) await ctx.auditBatcher.flush();
      const where: SQL[] = [eq(auditLog.orgId, orgId)];
      if (q.action !== undefined) where.push(eq(auditLog.action, q.action));
      if (q.actor !== undefined) where.push(eq(auditLog.actorId, q.actor));
      if (q.target !== undefined) where.push(eq(auditLog.targetId, q.target));
      // [since, until): consecutive windows hold every entry exactly once.
      if (q.since !== undefined) where.push(gte(auditLog.at, new Date(q.since)));
      if (q.until !== undefined) where.push(lt(auditLog.at, new Date(q.until)));
      if (q.before !== undefined) where.push(lt(auditLog.id, q.before));
      const rows = await ctx.db
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
  });
};
