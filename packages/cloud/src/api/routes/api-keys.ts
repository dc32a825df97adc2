import { randomBytes } from 'node:crypto';
import { and, desc, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { type ApiKey, apiKeys, hashSecret, newSecret } from '../../db/index.js';
import { API_KEY_PREFIX } from '../auth.js';
import { API_KEY_SCOPES } from '../authz.js';
import type { ApiPlugin } from '../context.js';
import { ApiError } from '../errors.js';
import { orgResource } from '../route.js';
import { noContent, optionalTimestamp, orgItemParams, timestamp, uuid } from '../schemas.js';

const apiKeyBody = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z.array(z.enum(API_KEY_SCOPES)).min(1).max(API_KEY_SCOPES.length),
});

const apiKey = z.object({
  id: uuid,
  name: z.string(),
  prefix: z.string().describe('The start of the key (`svc_key_` and 8 hex characters), which names it'),
  scopes: z.array(z.string()),
  createdAt: timestamp,
  lastUsedAt: optionalTimestamp,
  revokedAt: optionalTimestamp,
});

/** API keys of an org's backends, under `/api/v1/orgs/:org/api-keys`: list, create, revoke. */
export const apiKeyRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;
  const routes = orgResource(app, ctx, { tags: ['api-keys'], permission: 'api-keys.manage' });

  routes.get('', {
    summary: 'API keys (never their secrets)',
    response: { 200: z.object({ apiKeys: z.array(apiKey) }).describe('API keys, newest first') },
    async handler({ orgId }) {
      const rows = await db
        .select()
        .from(apiKeys)
        .where(eq(apiKeys.orgId, orgId))
        .orderBy(desc(apiKeys.createdAt));
      return { apiKeys: rows.map(apiKeyView) };
    },
  });

  routes.post('', {
    summary: 'Creates an API key; the key is in this answer only',
    body: apiKeyBody,
    response: {
      201: z
        .object({ apiKey, key: z.string().describe('The key; in this answer only') })
        .describe('The new key'),
    },
    async handler({ orgId, user }, { body }, reply) {
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
      return reply.code(201).send({ apiKey: apiKeyView(row), key });
    },
  });

  routes.delete('/:id', {
    summary: 'Revokes an API key',
    params: orgItemParams,
    response: { 204: noContent },
    async handler({ orgId, user }, { params: { id } }, reply) {
      await db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(apiKeys)
          .where(and(eq(apiKeys.id, id), eq(apiKeys.orgId, orgId)));
        if (row === undefined) throw new ApiError('not-found', `no API key ${id} in this organisation`);
        if (row.revokedAt !== null) return;
        await tx.update(apiKeys).set({ revokedAt: ctx.now() }).where(eq(apiKeys.id, id));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'api-key.revoke',
          targetKind: 'api_key',
          targetId: id,
          detail: { name: row.name, prefix: row.prefix },
        });
      });
      return reply.code(204).send();
    },
  });
};

/** An API key as the API shows it: never the secret nor its hash. */
function apiKeyView(row: ApiKey): z.output<typeof apiKey> {
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
