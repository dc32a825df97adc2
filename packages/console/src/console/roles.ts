/**
 * What each organisation role may do, as svc-cloud enforces it (`PERMISSIONS` of the cloud's
 * `api/authz.ts`, the role table of docs/cloud.md). The console uses it only to show what a role
 * can use; the API refuses anyway. A test keeps the two tables equal.
 */

/** Organisation roles, lowest first. */
export const ROLES = ['viewer', 'operator', 'admin', 'owner'] as const;
/** One of {@link ROLES}. */
export type OrgRole = (typeof ROLES)[number];

/** The lowest role allowed each action. */
export const PERMISSIONS = {
  'org.read': 'viewer',
  'session.start': 'operator',
  'org.update': 'admin',
  'members.manage': 'admin',
  'robots.manage': 'admin',
  'api-keys.manage': 'admin',
  'audit.read': 'admin',
  'admins.manage': 'owner',
  'org.delete': 'owner',
} as const satisfies Record<string, OrgRole>;

/** One of {@link PERMISSIONS}' keys. */
export type Permission = keyof typeof PERMISSIONS;

/** Whether `role` may do `permission`. */
export function can(role: OrgRole, permission: Permission): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(PERMISSIONS[permission]);
}

/** Whether a member with `actor` role may give or take away `target` role. */
export function mayManageRole(actor: OrgRole, target: OrgRole): boolean {
  return ROLES.indexOf(target) >= ROLES.indexOf('admin')
    ? can(actor, 'admins.manage')
    : can(actor, 'members.manage');
}

/** Roles `actor` may give (the choices of an invitation or a role change). */
export function assignableRoles(actor: OrgRole): OrgRole[] {
  return ROLES.filter((role) => mayManageRole(actor, role));
}
