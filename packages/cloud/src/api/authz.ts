import { ORG_ROLES, type OrgRole } from '../db/index.js';

/** Roles from lowest to highest; each includes what the ones below it may do (architecture page). */
const RANK: Readonly<Record<OrgRole, number>> = { viewer: 0, operator: 1, admin: 2, owner: 3 };

/** Whether `role` is `minimum` or above it. */
export function atLeast(role: OrgRole, minimum: OrgRole): boolean {
  return RANK[role] >= RANK[minimum];
}

/** Whether a string is one of the roles. */
export function isRole(value: string): value is OrgRole {
  return (ORG_ROLES as readonly string[]).includes(value);
}

/**
 * What each role may do in its org. Written as the lowest role allowed, so the table reads like the
 * architecture page's.
 */
export const PERMISSIONS = {
  /** See the org, its members, robots and presence. */
  'org.read': 'viewer',
  /** Start sessions on robots a grant allows (drive or observe). */
  'session.start': 'operator',
  /** Rename the org. */
  'org.update': 'admin',
  /** Invite, change and remove members below admin; list and revoke invitations. */
  'members.manage': 'admin',
  /** Enrolment tokens, robot deletion, robot grants. */
  'robots.manage': 'admin',
  'api-keys.manage': 'admin',
  'audit.read': 'admin',
  /** Make or remove admins and owners. */
  'admins.manage': 'owner',
  'org.delete': 'owner',
} as const satisfies Record<string, OrgRole>;

/** One of {@link PERMISSIONS}' keys. */
export type Permission = keyof typeof PERMISSIONS;

/** Whether `role` has `permission`. */
export function can(role: OrgRole, permission: Permission): boolean {
  return atLeast(role, PERMISSIONS[permission]);
}

/**
 * Whether a member with `actor` role may give or take away `target` role (a member's current or
 * new role): admins manage operators and viewers, owners manage everyone.
 */
export function mayManageRole(actor: OrgRole, target: OrgRole): boolean {
  return atLeast(target, 'admin') ? can(actor, 'admins.manage') : can(actor, 'members.manage');
}

/** API key scopes: what a customer backend's key may do, whatever else its org may. */
export const API_KEY_SCOPES = ['sessions:mint', 'robots:read'] as const;
/** One of {@link API_KEY_SCOPES}. */
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];
