import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import type { Actor } from '../../audit/index.js';
import { MAX_SESSION_TOKEN_TTL_SECONDS, MIN_SESSION_TOKEN_TTL_SECONDS } from '../../config.js';
import { type CloudDb, memberships, type OrgRole } from '../../db/index.js';
import { SESSION_SCOPES, SESSION_TOKEN_ALG, type SessionTokenClaims } from '../../sessions/index.js';
import type { Caller } from '../auth.js';
import { type ApiPlugin, CALLER_ERRORS, hasScope } from '../context.js';
import { ApiError } from '../errors.js';
import { mintableAccess, RobotFactsCache } from '../mint.js';
import { resource } from '../route.js';

/** Text of at most 128 characters without control characters (they would poison the audit log's batch). */
const label = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[^\p{Cc}]+$/u, { error: 'control characters are not allowed' });

const mintBody = z.object({
  robotId: label,
  scope: z.enum(SESSION_SCOPES),
  ttlSeconds: z
    .number()
    .int()
    .min(MIN_SESSION_TOKEN_TTL_SECONDS)
    .max(MAX_SESSION_TOKEN_TTL_SECONDS)
    .optional(),
  subject: label
    .describe(
      "API keys only: the customer's own id of the person the token is for, recorded as `act` and in the audit log",
    )
    .optional(),
});

const minted = z
  .object({
    token: z.string().describe('The pilot session token (an ES256 JWT)'),
    robotId: z.string(),
    scope: z.enum(SESSION_SCOPES),
    expiresAt: z.iso.datetime(),
    jti: z.string().describe("The token's id, as in the audit log"),
  })
  .describe('The token and what it allows');

const jwks = z
  .object({
    keys: z.array(
      z.object({
        kty: z.string().optional().describe('`EC`'),
        crv: z.string().optional().describe('`P-256`'),
        x: z.string().optional(),
        y: z.string().optional(),
        kid: z.string().describe("The key's RFC 7638 thumbprint"),
        alg: z.literal(SESSION_TOKEN_ALG),
        use: z.literal('sig'),
      }),
    ),
  })
  .describe('The public keys, newest first');

const tags = ['sessions'];

/**
 * `POST /api/v1/session-tokens`: mints a pilot session token to drive or observe one robot. Each
 * mint is audited through the batcher.
 */
export const sessionTokenRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = resource(app, { tags });
  const clock = () => ctx.now().getTime();
  const robotFacts = new RobotFactsCache(ctx.db, clock);
  const devMode = ctx.config.devOpenEnrolment || ctx.config.devAllowAnonymous;

  routes.post('', {
    summary:
      'Mints a pilot session token (ES256 JWT) to drive or observe one robot; API keys need the sessions:mint scope',
    body: mintBody,
    response: { 201: minted },
    errors: [...CALLER_ERRORS, 'invalid-request', 'forbidden', 'not-found'],
    async handler(request, reply) {
      const body = request.body;
      const caller = await ctx.auth.caller(request, { cacheApiKeys: true });
      if (caller.kind === 'api-key' && !hasScope(caller, 'sessions:mint')) {
        throw new ApiError('forbidden', 'this API key lacks the sessions:mint scope');
      }
      if (body.subject !== undefined && caller.kind !== 'api-key') {
        throw new ApiError(
          'invalid-request',
          "invalid body: subject: only an API key may name a subject (its own user's id); leave it out",
        );
      }
      const [robot, roles] = await Promise.all([
        robotFacts.get(body.robotId),
        caller.kind === 'user' ? rolesOf(ctx.db, caller.user.id) : new Map<string, OrgRole>(),
      ]);
      const decision = mintableAccess(caller, robot, roles, devMode);
      if (decision.kind === 'hidden') {
        if (caller.kind === 'anonymous') {
          throw new ApiError(
            'unauthenticated',
            'minting a session token needs a credential: sign in, or send an API key with the sessions:mint scope',
          );
        }
        throw new ApiError('not-found', `no robot ${body.robotId} that you may start sessions on`);
      }
      if (decision.kind === 'refused') {
        throw new ApiError(
          'forbidden',
          `you may not start sessions on robot ${body.robotId}: ${decision.reason}`,
        );
      }
      if (body.scope === 'drive' && decision.access === 'observe') {
        throw new ApiError(
          'forbidden',
          `you may only observe robot ${body.robotId}: ask for scope "observe", or for a drive grant`,
        );
      }

      const now = ctx.now();
      const iat = Math.floor(now.getTime() / 1000);
      const exp = iat + (body.ttlSeconds ?? ctx.config.sessionTokenTtlSeconds);
      const jti = randomUUID();
      const orgId = robot?.orgId ?? null;
      const claims: Omit<SessionTokenClaims, 'iss'> = {
        sub: subjectOf(caller),
        ...(body.subject === undefined ? {} : { act: body.subject }),
        aud: body.robotId,
        scope: body.scope,
        ...(orgId === null ? {} : { org: orgId }),
        iat,
        exp,
        jti,
      };
      const token = await ctx.sessionKeys.sign(claims);
      const expiresAt = new Date(exp * 1000).toISOString();
      ctx.auditBatcher.enqueue({
        orgId,
        actor: actorOf(caller),
        action: 'session-token.mint',
        targetKind: 'robot',
        targetId: body.robotId,
        detail: {
          scope: body.scope,
          jti,
          expiresAt,
          ...(body.subject === undefined ? {} : { subject: body.subject }),
          ...(caller.kind === 'anonymous' ? { anonymous: true } : {}),
        },
        at: now,
      });
      return reply.code(201).send({ token, robotId: body.robotId, scope: body.scope, expiresAt, jti });
    },
  });
};

/**
 * `GET /.well-known/svc-session-jwks.json`: the public keys that verify pilot session tokens, for
 * robots and the signalling server (no credential).
 */
export const sessionJwksRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = resource(app, { tags });
  routes.get('', {
    summary: 'The public keys of pilot session tokens (ES256), for robots and the signalling server',
    security: [],
    response: { 200: jwks },
    errors: [],
    async handler(_request, reply) {
      reply.header('cache-control', 'public, max-age=60');
      return ctx.sessionKeys.jwks();
    },
  });
};

/** The user's role in each of their orgs. */
async function rolesOf(db: CloudDb, userId: string): Promise<Map<string, OrgRole>> {
  const rows = await db
    .select({ orgId: memberships.orgId, role: memberships.role })
    .from(memberships)
    .where(eq(memberships.userId, userId));
  return new Map(rows.map((r) => [r.orgId, r.role]));
}

function subjectOf(caller: Caller): string {
  switch (caller.kind) {
    case 'user':
      return `user:${caller.user.id}`;
    case 'api-key':
      return `key:${caller.key.id}`;
    case 'anonymous':
      return 'anonymous';
    default:
      return caller satisfies never;
  }
}

function actorOf(caller: Caller): Actor {
  switch (caller.kind) {
    case 'user':
      return { kind: 'user', id: caller.user.id };
    case 'api-key':
      return { kind: 'api_key', id: caller.key.id };
    case 'anonymous':
      // Nobody signed in (development mode): a person, unnamed; the entry's detail says `anonymous`.
      return { kind: 'user', id: null };
    default:
      return caller satisfies never;
  }
}
