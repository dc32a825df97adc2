/**
 * The console shows what a role may do from its own copy of the permission table; svc-cloud
 * enforces its table. The two must not drift apart, or the console offers buttons the API refuses
 * (or hides ones it allows).
 */
import { PERMISSIONS as CLOUD_PERMISSIONS, mayManageRole as cloudMayManageRole } from '@svc/cloud';
import { describe, expect, it } from 'vitest';
import { assignableRoles, can, mayManageRole, PERMISSIONS, ROLES } from '../src/console/roles.js';

describe('the console role table', () => {
  it('is the table svc-cloud enforces', () => {
    expect(PERMISSIONS).toEqual(CLOUD_PERMISSIONS);
  });

  it('lets each role manage exactly the roles svc-cloud lets it manage', () => {
    for (const actor of ROLES) {
      for (const target of ROLES)
        expect(mayManageRole(actor, target)).toBe(cloudMayManageRole(actor, target));
    }
  });

  it('offers an admin operator and viewer, an owner every role, and others none', () => {
    expect(assignableRoles('owner')).toEqual(['viewer', 'operator', 'admin', 'owner']);
    expect(assignableRoles('admin')).toEqual(['viewer', 'operator']);
    expect(assignableRoles('operator')).toEqual([]);
    expect(can('viewer', 'session.start')).toBe(false);
    expect(can('operator', 'session.start')).toBe(true);
  });
});
