/**
 * What the fleet feed (`fleet-feed.ts`) reads of the database: robots' records with their grants,
 * the orgs of the streams' users, and the access a grant gives. Reads run one at a time, in the
 * order asked ({@link SerialReads}), so a change noticed while an org loads is read after it.
 */
import { eq, inArray } from 'drizzle-orm';
import { type CloudDb, memberships, orgs, type RobotAccess, robotGrants, robots } from '../db/index.js';
import type { RobotRecord } from './robot-view.js';

/** A grant of a robot, as a stream's access is worked out from it. */
export interface GrantFact {
  readonly granteeKind: 'user' | 'org' | 'public';
  readonly userId: string | null;
  readonly orgId: string | null;
  readonly access: RobotAccess;
}

/** A robot's record and grants. */
export interface RobotFacts {
  readonly record: RobotRecord;
  readonly grants: readonly GrantFact[];
}

/** Runs reads one after the other, in the order they were asked for. */
export class SerialReads {
  #tail: Promise<void> = Promise.resolve();

  /** Runs `read` after every read queued before it; a failed read does not stop the next. */
  run<T>(read: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(read);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/** The columns of a robot the feed keeps. */
const RECORD_COLUMNS = {
  robotId: robots.robotId,
  name: robots.name,
  orgId: robots.orgId,
  enrolledAt: robots.enrolledAt,
  lastSeenAt: robots.lastSeenAt,
  lastDenialReason: robots.lastDenialReason,
  lastDenialAt: robots.lastDenialAt,
};

/** The robots of `orgId`, or the robots among `robotIds` (a missing one is not in the map). */
export async function readRobots(
  db: CloudDb,
  which: { readonly orgId: string } | { readonly robotIds: readonly string[] },
): Promise<Map<string, RobotFacts>> {
  const rows = await db
    .select(RECORD_COLUMNS)
    .from(robots)
    .where('orgId' in which ? eq(robots.orgId, which.orgId) : inArray(robots.robotId, [...which.robotIds]));
  const grants = await grantsOf(
    db,
    rows.map((r) => r.robotId),
  );
  return new Map(
    rows.map((record) => [record.robotId, { record, grants: grants.get(record.robotId) ?? [] }]),
  );
}

async function grantsOf(db: CloudDb, robotIds: readonly string[]): Promise<Map<string, GrantFact[]>> {
  const byRobot = new Map<string, GrantFact[]>();
  if (robotIds.length === 0) return byRobot;
  const rows = await db
    .select({
      robotId: robotGrants.robotId,
      granteeKind: robotGrants.granteeKind,
      userId: robotGrants.userId,
      orgId: robotGrants.orgId,
      access: robotGrants.access,
    })
    .from(robotGrants)
    .where(inArray(robotGrants.robotId, [...robotIds]));
  for (const { robotId, ...grant } of rows) {
    const list = byRobot.get(robotId);
    if (list === undefined) byRobot.set(robotId, [grant]);
    else list.push(grant);
  }
  return byRobot;
}

/** The orgs `userId` is a member of. */
export async function orgsOfUser(db: CloudDb, userId: string): Promise<Set<string>> {
  const rows = await db
    .select({ orgId: memberships.orgId })
    .from(memberships)
    .where(eq(memberships.userId, userId));
  return new Set(rows.map((r) => r.orgId));
}

/** The orgs of each of `userIds`, and which of `orgIds` still exist. */
export async function membershipsOf(
  db: CloudDb,
  userIds: readonly string[],
  orgIds: readonly string[],
): Promise<{ orgsOf: Map<string, Set<string>>; existing: Set<string> }> {
  const rows = await db
    .select({ userId: memberships.userId, orgId: memberships.orgId })
    .from(memberships)
    .where(inArray(memberships.userId, [...userIds]));
  const found = await db
    .select({ id: orgs.id })
    .from(orgs)
    .where(inArray(orgs.id, [...orgIds]));
  const orgsOf = new Map<string, Set<string>>();
  for (const row of rows) {
    let set = orgsOf.get(row.userId);
    if (set === undefined) {
      set = new Set();
      orgsOf.set(row.userId, set);
    }
    set.add(row.orgId);
  }
  return { orgsOf, existing: new Set(found.map((o) => o.id)) };
}

/**
 * The strongest access `grants` give a user who is in `userOrgs`: a public grant, one to them, or
 * one to one of their orgs (as `accessTo` reads it for `GET /api/v1/robots`).
 */
export function accessOf(
  grants: readonly GrantFact[],
  userId: string,
  userOrgs: ReadonlySet<string>,
): RobotAccess | null {
  let access: RobotAccess | null = null;
  for (const g of grants) {
    const applies =
      g.granteeKind === 'public' ||
      (g.granteeKind === 'user' && g.userId === userId) ||
      (g.granteeKind === 'org' && g.orgId !== null && userOrgs.has(g.orgId));
    if (!applies) continue;
    if (g.access === 'drive') return 'drive';
    access = g.access;
  }
  return access;
}
