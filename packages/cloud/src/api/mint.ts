/**
 * Who may mint a pilot session token for which robot, and the cache of robot facts that lets a
 * mint run without SQL.
 */
import { eq } from 'drizzle-orm';
import {
  type CloudDb,
  type GranteeKind,
  type OrgRole,
  type RobotAccess,
  robotGrants,
  robots,
} from '../db/index.js';
import type { Caller } from './auth.js';
import { can } from './authz.js';

/** How long a robot's org and grants are reused for mints, ms: a changed grant applies within this. */
export const ROBOT_FACTS_CACHE_MS = 5_000;
/** How long an unknown robot id stays unknown without asking the database again, ms. */
export const ROBOT_FACTS_NEGATIVE_CACHE_MS = 1_000;
/** Most robots held in the cache; past it, expired entries go, then all. */
const ROBOT_FACTS_CACHE_ENTRIES = 10_000;

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
