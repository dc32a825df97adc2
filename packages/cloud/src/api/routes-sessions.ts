import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { MAX_SESSION_TOKEN_TTL_SECONDS, MIN_SESSION_TOKEN_TTL_SECONDS } from '../config.js';
import {
  type CloudDb,
  type GranteeKind,
  memberships,
  type OrgRole,
  type RobotAccess,
  robotGrants,
  robots,
} from '../db/index.js';
import {
  SESSION_JWKS_PATH,
  SESSION_SCOPES,
  SessionKeyStore,
  type SessionScope,
  type SessionTokenClaims,
} from '../sessions/index.js';
import { type Actor, AuditBatcher } from '../audit/index.js';
import type { Caller } from './auth.js';
import { can } from './authz.js';
import { type ApiContext, hasScope } from './context.js';
import { ApiError } from './errors.js';
import { jsonSchema, parse } from './http.js';

/** How long a robot's org and grants are reused for mints, ms: a changed grant applies within this. */
export const ROBOT_FACTS_CACHE_MS = 5_000;
/** How long an unknown robot id stays unknown without asking the database again, ms. */
export const ROBOT_FACTS_NEGATIVE_CACHE_MS = 1_000;
/** Most robots held in the cache; past it, expired entries go, then all. */
const ROBOT_FACTS_CACHE_ENTRIES = 10_000;
/** The audit log's read route, flushed before it answers so that it shows every mint made so far. */
const AUDIT_READ_ROUTE = '/api/v1/orgs/:org/audit';

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
  /** API keys only: the customer's own id of the person the token is for, recorded as `act` and in the audit log. */
  subject: label.optional(),
});

/** What the mint needs to know about a robot. */
export interface RobotFacts {
  readonly orgId: string | null;
  readonly grants: readonly {
    readonly granteeKind: GranteeKind;
    readonly userId: string | null;
    readonly orgId: string | null;
    readonly access: RobotAccess;
  }[];
}

/** Options of {@link sessionRoutes}. */
export interface SessionRoutesOptions {
  /** A started key store owned by the caller; without it one is made, started, and closed with the app. */
  readonly keys?: SessionKeyStore;
}

/**
 * The access a caller may mint on a robot, or why not: `hidden` (answer 404, or 401 for nobody
 * signed in), or `refused` with the reason (403). Pure: the caller's memberships are given.
 *
 * - API key (scope `sessions:mint` checked before): its org's robots → drive; grants to its org or
 *   public grants → the grant's access.
 * - User: operator or above in the robot's org → drive; grants to the user, to one of their orgs, or
 *   public → the grant's access. A member of the robot's org below operator sees it but gets 403.
 * - Nobody: in development mode (open enrolment or anonymous access) a robot without org → drive;
 *   a public grant → observe.
 */
export function mintableAccess(
  caller: Caller,
  robot: RobotFacts | null,
  roles: ReadonlyMap<string, OrgRole>,
  devMode: boolean,
): { kind: 'allowed'; access: RobotAccess } | { kind: 'hidden' } | { kind: 'refused'; reason: string } {
  if (robot === null) return { kind: 'hidden' };
  let best: RobotAccess | undefined;
  const offer = (access: RobotAccess) => {
    if (best !== 'drive') best = access;
  };
  let visible = false;
  let reason = 'no grant gives you access to it';
  switch (caller.kind) {
    case 'api-key': {
      const org = caller.key.orgId;
      if (robot.orgId === org) offer('drive');
      for (const g of robot.grants) {
        if (g.granteeKind === 'public' || (g.granteeKind === 'org' && g.orgId === org)) offer(g.access);
      }
      visible = best !== undefined;
      break;
    }
    case 'user': {
      const role = robot.orgId === null ? undefined : roles.get(robot.orgId);
      if (role !== undefined) {
        visible = true;
        if (can(role, 'session.start')) offer('drive');
        else
          reason = `your role in its organisation (${role}) does not allow starting sessions, and no grant gives you access`;
      }
      for (const g of robot.grants) {
        const applies =
          g.granteeKind === 'public' ||
          (g.granteeKind === 'user' && g.userId === caller.user.id) ||
          (g.granteeKind === 'org' && g.orgId !== null && roles.has(g.orgId));
        if (applies) {
          visible = true;
          offer(g.access);
        }
      }
      break;
    }
    case 'anonymous':
      if (devMode && robot.orgId === null) offer('drive');
      if (robot.grants.some((g) => g.granteeKind === 'public')) offer('observe');
      visible = best !== undefined;
      break;
    default:
      return caller satisfies never;
  }
  if (best !== undefined) return { kind: 'allowed', access: best };
  return visible ? { kind: 'refused', reason } : { kind: 'hidden' };
}

/**
 * A robot's org and grants, cached per robot for {@link ROBOT_FACTS_CACHE_MS} (an unknown robot for
 * {@link ROBOT_FACTS_NEGATIVE_CACHE_MS}) so that a mint runs no SQL. Concurrent misses share a lookup.
 */
export class RobotFactsCache {
  readonly #db: CloudDb;
  readonly #now: () => number;
  readonly #entries = new Map<
    string,
    { readonly at: number; readonly lookup: Promise<RobotFacts | null>; result?: RobotFacts | null }
  >();

  constructor(db: CloudDb, now: () => number) {
    this.#db = db;
    this.#now = now;
  }

  /** The robot's facts, or `null` when there is no such robot. */
  get(robotId: string): Promise<RobotFacts | null> {
    const now = this.#now();
    const entry = this.#entries.get(robotId);
    if (entry !== undefined && this.#fresh(entry, now)) return entry.lookup;
    const lookup = this.#load(robotId);
    const created: { at: number; lookup: Promise<RobotFacts | null>; result?: RobotFacts | null } = {
      at: now,
      lookup,
    };
    this.#entries.set(robotId, created);
    if (this.#entries.size > ROBOT_FACTS_CACHE_ENTRIES) {
      for (const [id, e] of this.#entries) if (!this.#fresh(e, now)) this.#entries.delete(id);
      if (this.#entries.size > ROBOT_FACTS_CACHE_ENTRIES) this.#entries.clear();
    }
    lookup.then(
      (result) => {
        created.result = result;
      },
      () => {
        if (this.#entries.get(robotId) === created) this.#entries.delete(robotId);
      },
    );
    return lookup;
  }

  #fresh(entry: { at: number; result?: RobotFacts | null }, now: number): boolean {
    if (now < entry.at) return false;
    if (entry.result === undefined) return true;
    return now - entry.at < (entry.result === null ? ROBOT_FACTS_NEGATIVE_CACHE_MS : ROBOT_FACTS_CACHE_MS);
  }

  async #load(robotId: string): Promise<RobotFacts | null> {
    const [robot] = await this.#db
      .select({ orgId: robots.orgId })
      .from(robots)
      .where(eq(robots.robotId, robotId));
    if (robot === undefined) return null;
    const grants = await this.#db
      .select({
        granteeKind: robotGrants.granteeKind,
        userId: robotGrants.userId,
        orgId: robotGrants.orgId,
        access: robotGrants.access,
      })
      .from(robotGrants)
      .where(eq(robotGrants.robotId, robotId));
    return { orgId: robot.orgId, grants };
  }
}

/**
 * `POST /api/v1/session-tokens` (mint a pilot session token) and `GET /.well-known/svc-session-jwks.json`
 * (the keys to verify one). Decorates the app with `sessionKeys` and `auditBatcher`.
 */
export async function sessionRoutes(
  app: FastifyInstance,
  ctx: ApiContext,
  options: SessionRoutesOptions = {},
): Promise<void> {
  const clock = () => ctx.now().getTime();
  let keys = options.keys;
  if (keys === undefined) {
    const owned = new SessionKeyStore({
      db: ctx.db,
      issuer: ctx.config.publicUrl,
      rotationHours: ctx.config.sessionKeyRotationHours,
      now: clock,
      log: app.log,
    });
    await owned.start();
    app.addHook('onClose', () => owned.close());
    keys = owned;
  }
  const store = keys;
  const batcher = new AuditBatcher({ db: ctx.db, log: app.log, now: ctx.now });
  app.addHook('onClose', () => batcher.close());
  app.decorate('sessionKeys', store);
  app.decorate('auditBatcher', batcher);
  // Read-your-writes on this node: the audit log shows every mint made before it was asked for.
  app.addHook('preHandler', async (request) => {
    if (batcher.pending > 0 && request.routeOptions.url === AUDIT_READ_ROUTE) await batcher.flush();
  });
  const robotFacts = new RobotFactsCache(ctx.db, clock);
  const devMode = ctx.config.devOpenEnrolment || ctx.config.devAllowAnonymous;

  app.get(
    SESSION_JWKS_PATH,
    {
      schema: {
        summary: 'The public keys of pilot session tokens (ES256), for robots and the signalling server',
        tags: ['sessions'],
        security: [],
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=60');
      return store.jwks();
    },
  );

  app.post(
    '/api/v1/session-tokens',
    {
      schema: {
        summary:
          'Mints a pilot session token (ES256 JWT) to drive or observe one robot; API keys need the sessions:mint scope',
        tags: ['sessions'],
        body: jsonSchema(mintBody),
      },
    },
    async (request, reply) => {
      const caller = await ctx.auth.caller(request, { cacheApiKeys: true });
      if (caller.kind === 'api-key' && !hasScope(caller, 'sessions:mint')) {
        throw new ApiError('forbidden', 'this API key lacks the sessions:mint scope');
      }
      const body = parse(mintBody, request.body, 'body');
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
      const token = await store.sign(claims);
      const expiresAt = new Date(exp * 1000).toISOString();
      batcher.enqueue({
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
      reply.code(201);
      return { token, robotId: body.robotId, scope: body.scope as SessionScope, expiresAt, jti };
    },
  );
}

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
