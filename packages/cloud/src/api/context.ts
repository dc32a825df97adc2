import { and, eq } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuditBatcher } from '../audit/index.js';
import type { CloudConfig } from '../config.js';
import { type CloudDb, type Database, memberships, type OrgRole, type User } from '../db/index.js';
import type { InvitationProvider, Mailer } from '../invitations/index.js';
import type { SessionKeyStore } from '../sessions/index.js';
import type { SignallingHandle } from '../signalling/index.js';
import type { Authenticator, Caller } from './auth.js';
import { type ApiKeyScope, can, type Permission } from './authz.js';
import { ApiError } from './errors.js';
import type { FleetFeed } from './fleet-feed.js';
import type { OrgPeople } from './robot-view.js';

/** What every route handler works with. */
export interface ApiContext {
  readonly config: CloudConfig;
  readonly database: Database;
  readonly db: CloudDb;
  readonly auth: Authenticator;
  readonly invitationProvider: InvitationProvider;
  readonly mail: Mailer;
  readonly now: () => Date;
  /** The started pilot session keys: sign minted tokens, publish the JWKS. */
  readonly sessionKeys: SessionKeyStore;
  /** Audit entries of hot paths (token mints), written in batches; flushed before the log is read. */
  readonly auditBatcher: AuditBatcher;
  /** Signalling on this node: robot presence and sessions. Without it every robot shows offline. */
  readonly signalling?: SignallingHandle;
  /**
   * The fleet's live view (`GET /api/v1/orgs/{org}/fleet/events`): routes that change a robot's
   * record, a membership or an org tell it after their transaction commits.
   */
  readonly fleet: FleetFeed;
  /** Drivers' names and emails as a robot's org sees them (the robot views). */
  readonly people: OrgPeople;
}

/** Options of every resource plugin of the API. */
export interface ApiPluginOptions {
  readonly ctx: ApiContext;
}

/** A resource of `/api/v1`: a Fastify plugin, typed by its zod schemas, registered with its prefix. */
export type ApiPlugin = FastifyPluginAsyncZod<ApiPluginOptions>;

/** Codes of a route that resolves its caller: a bad credential, a login never registered, the provider down. */
export const CALLER_ERRORS = ['unauthenticated', 'not-registered', 'provider-unavailable'] as const;

/** Codes of a route that needs a signed-in user: {@link CALLER_ERRORS}, and `forbidden` for API keys. */
export const USER_ERRORS = [...CALLER_ERRORS, 'forbidden'] as const;

/**
 * Codes of a route under `/api/v1/orgs/:org` that needs a permission there: {@link USER_ERRORS},
 * `not-found` for an org the caller is not in, `invalid-request` for a path that is not a UUID.
 */
export const ORG_ERRORS = [...USER_ERRORS, 'not-found', 'invalid-request'] as const;

/**
 * The caller, which must be a signed-in user.
 *
 * @throws {ApiError} `unauthenticated` without a credential, `forbidden` for an API key, and the
 *   errors of {@link Authenticator.caller}.
 */
export async function requireUser(ctx: ApiContext, request: FastifyRequest): Promise<User> {
  return (await requireUserCaller(ctx, request)).user;
}

/**
 * The caller, which must be a signed-in user, with the claims of their access token.
 *
 * @throws {ApiError} as {@link requireUser}.
 */
export async function requireUserCaller(
  ctx: ApiContext,
  request: FastifyRequest,
): Promise<Extract<Caller, { kind: 'user' }>> {
  const caller = await ctx.auth.caller(request);
  if (caller.kind === 'user') return caller;
  if (caller.kind === 'anonymous') {
    throw new ApiError('unauthenticated', 'sign in first: send "Authorization: Bearer <access token>"');
  }
  throw new ApiError('forbidden', 'API keys cannot use this endpoint; it needs a signed-in user');
}

/**
 * The user's role in `orgId`.
 *
 * @throws {ApiError} `not-found` when they are not a member (an org one is not in is not shown).
 */
export async function roleIn(db: CloudDb, orgId: string, userId: string): Promise<OrgRole> {
  const [member] = await db
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)));
  if (member === undefined) throw new ApiError('not-found', `no organisation ${orgId} among yours`);
  return member.role;
}

/**
 * The signed-in user and their role in `orgId`, which must carry `permission`.
 *
 * @throws {ApiError} `forbidden` when the role lacks `permission`, and the errors of
 *   {@link requireUser} and {@link roleIn}.
 */
export async function requireOrgPermission(
  ctx: ApiContext,
  request: FastifyRequest,
  orgId: string,
  permission: Permission,
): Promise<{ user: User; role: OrgRole }> {
  const user = await requireUser(ctx, request);
  const role = await roleIn(ctx.db, orgId, user.id);
  if (!can(role, permission)) {
    throw new ApiError('forbidden', `your role in this organisation (${role}) does not allow ${permission}`);
  }
  return { user, role };
}

/** Whether an API key caller carries `scope`. */
export function hasScope(caller: Caller, scope: ApiKeyScope): boolean {
  return caller.kind === 'api-key' && caller.key.scopes.includes(scope);
}
