import { and, eq } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import type { CloudConfig } from '../config.js';
import { type CloudDb, type Database, memberships, type OrgRole, type User } from '../db/index.js';
import type { InvitationProvider, Mailer } from '../invitations/index.js';
import type { SignallingHandle } from '../signalling/index.js';
import type { Authenticator, Caller } from './auth.js';
import { type ApiKeyScope, can, type Permission } from './authz.js';
import { ApiError } from './errors.js';

/** What every route handler works with. */
export interface ApiContext {
  readonly config: CloudConfig;
  readonly database: Database;
  readonly db: CloudDb;
  readonly auth: Authenticator;
  readonly invitationProvider: InvitationProvider;
  readonly mail: Mailer;
  readonly now: () => Date;
  /** Signalling on this node: robot presence and sessions. Without it every robot shows offline. */
  readonly signalling?: SignallingHandle;
}

/** The caller, which must be a signed-in user. */
export async function requireUser(ctx: ApiContext, request: FastifyRequest): Promise<User> {
  const caller = await ctx.auth.caller(request);
  if (caller.kind === 'user') return caller.user;
  if (caller.kind === 'anonymous') {
    throw new ApiError('unauthenticated', 'sign in first: send "Authorization: Bearer <access token>"');
  }
  throw new ApiError('forbidden', 'API keys cannot use this endpoint; it needs a signed-in user');
}

/** The user's role in `orgId`, or 404 when they are not a member (an org one is not in is not shown). */
export async function roleIn(db: CloudDb, orgId: string, userId: string): Promise<OrgRole> {
  const [member] = await db
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)));
  if (member === undefined) throw new ApiError('not-found', `no organisation ${orgId} among yours`);
  return member.role;
}

/** The signed-in user and their role in `orgId`, which must carry `permission`. */
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
