/**
 * The authorisation matrix of svc-cloud's API: every endpoint × every kind of caller × resources
 * of the caller's org and of another org. Each cell prepares its own target (a fresh member,
 * invitation, key, robot or grant) so that a successful change never disturbs the next cell, and
 * checks both the answer and the data: a refused request and every read leave both orgs exactly
 * as they were, and a successful change touches only the org it is addressed to.
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiKeys,
  auditLog,
  enrolmentTokens,
  invitations,
  memberships,
  type OrgRole,
  orgs,
  robotGrants,
  robots,
  users,
} from '../src/db/index.js';
import { type Answer, startApi, type TestApi } from './support/api.js';
import { databaseBackends, rowsOf, sha256 } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

type OrgKey = 'A' | 'B';
/**
 * What a request is addressed to: org A or B (or their robot), B's robot with a public grant, an
 * item of org B under org A's URL (`A→B`), or nothing org-specific (`-`).
 */
type Target = 'A' | 'B' | 'B public' | 'A→B' | '-';
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** One kind of caller. */
interface Actor {
  readonly name: string;
  readonly kind: 'anonymous' | 'user' | 'key';
  /** Access token or API key. */
  readonly token?: string;
  readonly userId?: string;
  readonly email?: string;
  readonly roles: Partial<Record<OrgKey, OrgRole>>;
  readonly scopes?: readonly string[];
}

/** One request of a cell, and how to check what it did. */
interface Prepared {
  readonly url: string;
  readonly body?: unknown;
  /** The answer may be an event stream: its first event is the body (see `TestApi.call`). */
  readonly eventStream?: boolean;
  /** Problems with the effect (or the body) of the answer; `ok` is a 2xx answer. */
  readonly check?: (ok: boolean, answer: Answer) => Promise<string[]>;
}

/** One endpoint (with one kind of body) of the matrix. */
interface Row {
  readonly method: Method;
  readonly route: string;
  readonly targets: readonly Target[];
  /** The expected answer: the status, and the error code for errors. */
  readonly expect: (actor: Actor, target: Target) => string;
  readonly prepare: (actor: Actor, target: Target) => Promise<Prepared>;
  /** The org a successful change may touch (default: the target's org); none for `-`. */
  readonly touches?: (target: Target) => OrgKey | undefined;
}

const UNAUTHENTICATED = '401 unauthenticated';
const FORBIDDEN = '403 forbidden';
const NOT_FOUND = '404 not-found';

/** Role ranks of the architecture page, written out here so the test does not reuse the code under test. */
const RANK: Readonly<Record<OrgRole, number>> = { viewer: 0, operator: 1, admin: 2, owner: 3 };

/** Roles of a member or an invitation, each with the least role that may manage it. */
const MANAGED_ROLES = [
  ['viewer', 'admin'],
  ['admin', 'owner'],
] as const;

/** The org whose URL a target uses. */
function urlOrg(target: Target): OrgKey {
  if (target === '-') throw new TypeError('a target without an org has no org');
  return target === 'A' || target === 'A→B' ? 'A' : 'B';
}

/**
 * An org-scoped endpoint for signed-in users: members at `min` or above get `success`, other members
 * 403, non-members 404 (an org one is not in is not shown), API keys 403, nobody 401. Under `A→B`
 * the item is not in the URL's org: members at `gate` or above (those who get as far as looking it
 * up) get 404, the others 403.
 */
function member(min: OrgRole, success: number, gate: OrgRole = min) {
  return (actor: Actor, target: Target): string => {
    if (actor.kind === 'anonymous') return UNAUTHENTICATED;
    if (actor.kind === 'key') return FORBIDDEN;
    const role = actor.roles[urlOrg(target)];
    if (role === undefined) return NOT_FOUND;
    if (target === 'A→B') return RANK[role] >= RANK[gate] ? NOT_FOUND : FORBIDDEN;
    return RANK[role] >= RANK[min] ? String(success) : FORBIDDEN;
  };
}

/** An endpoint for any signed-in user: `success`, API keys 403, nobody 401. */
function signedIn(success: string) {
  return (actor: Actor): string =>
    actor.kind === 'anonymous' ? UNAUTHENTICATED : actor.kind === 'key' ? FORBIDDEN : success;
}

/** The answer as the table shows it: the status, and the error code of an error. */
function shown(answer: Answer): string {
  const code = answer.body?.error?.code;
  return typeof code === 'string' ? `${answer.status} ${code}` : String(answer.status);
}

/** Problem text when `actual` (a set of ids) is not `expected`. */
function sameIds(what: string, actual: Iterable<unknown>, expected: Iterable<unknown>): string[] {
  const a = [...new Set(actual)].map(String).sort();
  const e = [...new Set(expected)].map(String).sort();
  return isDeepStrictEqual(a, e) ? [] : [`${what}: got ${JSON.stringify(a)}, expected ${JSON.stringify(e)}`];
}

describe.each(databaseBackends)('authorisation matrix on $name', (backend) => {
  let provider: TestProvider;
  let api: TestApi;
  const org: Record<OrgKey, string> = { A: '', B: '' };
  const robotOf: Record<Exclude<Target, '-' | 'A→B'>, string> = {
    A: 'robot-a',
    B: 'robot-b',
    'B public': 'robot-b-public',
  };
  const actors: Actor[] = [];
  let serial = 0;
  const next = () => ++serial;

  // Direct inserts for the targets each cell works on.
  async function newUser(): Promise<string> {
    const [row] = await api.db
      .insert(users)
      .values({ oidcIssuer: 'https://fixture.test', oidcSubject: `fixture-${next()}` })
      .returning();
    return row!.id;
  }
  async function newMember(orgId: string, role: OrgRole): Promise<string> {
    const userId = await newUser();
    await api.db.insert(memberships).values({ orgId, userId, role });
    return userId;
  }
  async function newInvitation(orgId: string, email: string, role: OrgRole) {
    const token = `svc_inv_${randomBytes(32).toString('base64url')}`;
    const [row] = await api.db
      .insert(invitations)
      .values({
        orgId,
        email,
        role,
        tokenHash: sha256(token),
        expiresAt: new Date(api.now.getTime() + 86_400_000),
      })
      .returning();
    return { id: row!.id, token };
  }
  async function newKeyRow(orgId: string): Promise<string> {
    const n = next();
    const [row] = await api.db
      .insert(apiKeys)
      .values({
        orgId,
        name: `fixture-${n}`,
        prefix: `svc_key_f${n.toString(16).padStart(7, '0')}`,
        secretHash: sha256(`fixture-${n}`),
        scopes: ['robots:read'],
      })
      .returning();
    return row!.id;
  }
  /** An enrolment token of `orgId`: its row id and the token. */
  async function newEnrolmentToken(orgId: string) {
    const token = `svc_enr_${randomBytes(32).toString('base64url')}`;
    const [row] = await api.db
      .insert(enrolmentTokens)
      .values({ orgId, tokenHash: sha256(token), expiresAt: new Date(api.now.getTime() + 86_400_000) })
      .returning();
    return { id: row!.id, token };
  }
  async function newRobot(orgId: string, isPublic: boolean): Promise<string> {
    const robotId = `robot-${next()}`;
    await api.db.insert(robots).values({ robotId, orgId, publicKey: `pk-${robotId}` });
    if (isPublic)
      await api.db.insert(robotGrants).values({ robotId, granteeKind: 'public', access: 'observe' });
    return robotId;
  }
  async function newGrant(robotId: string): Promise<string> {
    const userId = await newUser();
    const [row] = await api.db
      .insert(robotGrants)
      .values({ robotId, granteeKind: 'user', userId, access: 'observe' })
      .returning();
    return row!.id;
  }
  /** A new org with the same members and roles as org `key`. */
  async function cloneOrg(key: OrgKey): Promise<string> {
    const [row] = await api.db
      .insert(orgs)
      .values({ name: `clone-${next()}` })
      .returning();
    const members = await api.db.select().from(memberships).where(eq(memberships.orgId, org[key]));
    await api.db
      .insert(memberships)
      .values(members.map((m) => ({ orgId: row!.id, userId: m.userId, role: m.role })));
    return row!.id;
  }
  async function roleOf(orgId: string, userId: string): Promise<OrgRole | undefined> {
    const [row] = await api.db
      .select()
      .from(memberships)
      .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)));
    return row?.role;
  }
  /** The item's org: B for `A→B`, else the target's. */
  const itemOrg = (target: Target): string => org[target === 'A→B' ? 'B' : urlOrg(target)];
  const robotFor = (target: Target): string =>
    robotOf[target === 'A→B' ? 'A' : (target as keyof typeof robotOf)];

  /** Everything of an org, as one JSON value (API keys without `last_used_at`, which use updates). */
  async function stateOf(orgId: string): Promise<unknown> {
    const id = sql`${orgId}::uuid`;
    const result = await api.db.execute(sql`select jsonb_build_object(
      'org', (select to_jsonb(o) from orgs o where o.id = ${id}),
      'memberships', (select coalesce(jsonb_agg(to_jsonb(m) order by m.user_id), '[]') from memberships m where m.org_id = ${id}),
      'invitations', (select coalesce(jsonb_agg(to_jsonb(i) order by i.id), '[]') from invitations i where i.org_id = ${id}),
      'apiKeys', (select coalesce(jsonb_agg(to_jsonb(k) - 'last_used_at' order by k.id), '[]') from api_keys k where k.org_id = ${id}),
      'enrolmentTokens', (select coalesce(jsonb_agg(to_jsonb(t) order by t.id), '[]') from enrolment_tokens t where t.org_id = ${id}),
      'robots', (select coalesce(jsonb_agg(to_jsonb(r) order by r.robot_id), '[]') from robots r where r.org_id = ${id}),
      'grants', (select coalesce(jsonb_agg(to_jsonb(g) order by g.id), '[]') from robot_grants g
        where g.org_id = ${id} or g.robot_id in (select robot_id from robots where org_id = ${id})),
      'audit', (select coalesce(jsonb_agg(to_jsonb(a) order by a.id), '[]') from audit_log a where a.org_id = ${id})
    ) as state`);
    return rowsOf<{ state: unknown }>(result)[0]!.state;
  }

  /**
   * The row of the list at `/api/v1/orgs/:org/<path>`, for members at `min` or above: it shows
   * exactly the ids `idsIn` finds in the URL's org (each item's `key`), and nothing `also` objects to.
   */
  function orgListRow(c: {
    readonly path: string;
    readonly min: OrgRole;
    /** The list's field in the answer. */
    readonly listed: string;
    readonly key: 'id' | 'userId';
    readonly idsIn: (orgId: string) => Promise<string[]>;
    /** Makes an item of the org first. */
    readonly before?: (orgId: string) => Promise<unknown>;
    /** Problems with the items listed. */
    readonly also?: (listed: object[]) => string[];
  }): Row {
    return {
      method: 'GET',
      route: `/api/v1/orgs/:org/${c.path}`,
      targets: ['A', 'B'],
      expect: member(c.min, 200),
      prepare: async (_actor, target) => {
        const orgId = org[urlOrg(target)];
        await c.before?.(orgId);
        return {
          url: `/api/v1/orgs/${orgId}/${c.path}`,
          check: async (ok, answer) => {
            if (!ok) return [];
            const listed: Record<string, string>[] = answer.body[c.listed];
            return [
              ...sameIds(
                c.path.replace('-', ' '),
                listed.map((item) => item[c.key]),
                await c.idsIn(orgId),
              ),
              ...(c.also?.(listed) ?? []),
            ];
          },
        };
      },
    };
  }

  /**
   * The rows of an org's credentials (API keys, enrolment tokens), for admins: the list shows
   * exactly the org's, none with its secret or hash; a create makes one in the URL's org; a revoke
   * sets `revokedAt`, and only in the URL's org.
   */
  function credentialRows(c: {
    readonly path: 'api-keys' | 'enrolment-tokens';
    readonly table: typeof apiKeys | typeof enrolmentTokens;
    /** The list's field in the answer. */
    readonly listed: 'apiKeys' | 'enrolmentTokens';
    /** What one is called in a problem. */
    readonly one: string;
    /** Fields that must never be listed: the secret and its hash. */
    readonly secrets: readonly string[];
    readonly body: (name: string) => object;
    /** A new one of `orgId` (a direct insert): its id. */
    readonly newRow: (orgId: string) => Promise<string>;
  }): Row[] {
    const route = `/api/v1/orgs/:org/${c.path}`;
    const url = (target: Target) => `/api/v1/orgs/${org[urlOrg(target)]}/${c.path}`;
    return [
      orgListRow({
        path: c.path,
        min: 'admin',
        listed: c.listed,
        key: 'id',
        before: c.newRow,
        idsIn: async (orgId) =>
          (await api.db.select().from(c.table).where(eq(c.table.orgId, orgId))).map((row) => row.id),
        also: (listed) =>
          listed.some((item) => c.secrets.some((field) => field in item))
            ? [`a ${c.one} or its hash is listed`]
            : [],
      }),
      {
        method: 'POST',
        route,
        targets: ['A', 'B'],
        expect: member('admin', 201),
        prepare: async (_actor, target) => {
          const name = `made-${next()}`;
          return {
            url: url(target),
            body: c.body(name),
            check: async (ok) => {
              const made = await api.db.select().from(c.table).where(eq(c.table.name, name));
              return made.length === (ok ? 1 : 0) && made.every((row) => row.orgId === org[urlOrg(target)])
                ? []
                : [`${made.length} ${c.one}s made`];
            },
          };
        },
      },
      {
        method: 'DELETE',
        route: `${route}/:id`,
        targets: ['A', 'B', 'A→B'],
        expect: member('admin', 204),
        prepare: async (_actor, target) => {
          const id = await c.newRow(itemOrg(target));
          return {
            url: `${url(target)}/${id}`,
            check: async (ok) => {
              const [row] = await api.db.select().from(c.table).where(eq(c.table.id, id));
              return (row!.revokedAt !== null) === ok ? [] : [`revokedAt is ${row!.revokedAt}`];
            },
          };
        },
      },
    ];
  }

  const rows: readonly Row[] = [
    {
      method: 'GET',
      route: '/api/v1/console-config',
      targets: ['-'],
      expect: () => '200',
      prepare: async () => ({ url: '/api/v1/console-config' }),
    },
    {
      method: 'GET',
      route: '/api/v1/openapi.json',
      targets: ['-'],
      expect: () => '200',
      prepare: async () => ({ url: '/api/v1/openapi.json' }),
    },
    {
      method: 'GET',
      route: '/api/v1/me',
      targets: ['-'],
      expect: (actor) => (actor.kind === 'user' ? '200' : UNAUTHENTICATED),
      prepare: async (actor) => ({
        url: '/api/v1/me',
        check: async (ok, answer) => (ok ? sameIds('me', [answer.body.user.id], [actor.userId]) : []),
      }),
    },
    {
      method: 'GET',
      route: '/api/v1/orgs',
      targets: ['-'],
      expect: signedIn('200'),
      prepare: async (actor) => ({
        url: '/api/v1/orgs',
        check: async (ok, answer) => {
          if (!ok) return [];
          const mine = await api.db.select().from(memberships).where(eq(memberships.userId, actor.userId!));
          return sameIds(
            'orgs listed',
            answer.body.orgs.map((o: { id: string }) => o.id),
            mine.map((m) => m.orgId),
          );
        },
      }),
    },
    {
      method: 'POST',
      route: '/api/v1/orgs',
      targets: ['-'],
      expect: signedIn('201'),
      prepare: async (actor) => {
        const name = `new-${next()}`;
        return {
          url: '/api/v1/orgs',
          body: { name },
          check: async (ok) => {
            const made = await api.db.select().from(orgs).where(eq(orgs.name, name));
            if (!ok) return made.length === 0 ? [] : ['an org was created'];
            const role = made[0] === undefined ? undefined : await roleOf(made[0].id, actor.userId!);
            return role === 'owner' ? [] : [`the creator is ${role}, not owner`];
          },
        };
      },
    },
    {
      method: 'GET',
      route: '/api/v1/orgs/:org',
      targets: ['A', 'B'],
      expect: member('viewer', 200),
      prepare: async (actor, target) => ({
        url: `/api/v1/orgs/${org[urlOrg(target)]}`,
        check: async (ok, answer) => {
          const [id, role] = [org[urlOrg(target)], actor.roles[urlOrg(target)]];
          return !ok || (answer.body.org.id === id && answer.body.org.role === role)
            ? []
            : [`got org ${answer.body.org.id} as ${answer.body.org.role}`];
        },
      }),
    },
    {
      method: 'PATCH',
      route: '/api/v1/orgs/:org (same name)',
      targets: ['A', 'B'],
      expect: member('admin', 200),
      prepare: async (_actor, target) => {
        const [row] = await api.db
          .select()
          .from(orgs)
          .where(eq(orgs.id, org[urlOrg(target)]));
        return { url: `/api/v1/orgs/${row!.id}`, body: { name: row!.name } };
      },
    },
    {
      method: 'DELETE',
      route: '/api/v1/orgs/:org (a copy with the same members)',
      targets: ['A', 'B'],
      expect: member('owner', 204),
      touches: () => undefined,
      prepare: async (_actor, target) => {
        const copy = await cloneOrg(urlOrg(target));
        return {
          url: `/api/v1/orgs/${copy}`,
          check: async (ok) => {
            const left = await api.db.select().from(orgs).where(eq(orgs.id, copy));
            return left.length === (ok ? 0 : 1) ? [] : [`the org is ${ok ? 'still there' : 'gone'}`];
          },
        };
      },
    },
    orgListRow({
      path: 'members',
      min: 'viewer',
      listed: 'members',
      key: 'userId',
      idsIn: async (orgId) =>
        (await api.db.select().from(memberships).where(eq(memberships.orgId, orgId))).map((m) => m.userId),
    }),
    ...(
      [
        ['viewer', 'operator', 'admin'],
        ['viewer', 'admin', 'owner'],
        ['admin', 'operator', 'owner'],
        ['owner', 'admin', 'owner'],
      ] as const
    ).map(
      ([from, to, min]): Row => ({
        method: 'PATCH',
        route: `/api/v1/orgs/:org/members/:user (${from} to ${to})`,
        targets: ['A', 'B', 'A→B'],
        expect: member(min, 200, 'admin'),
        prepare: async (_actor, target) => {
          const userId = await newMember(itemOrg(target), from);
          return {
            url: `/api/v1/orgs/${org[urlOrg(target)]}/members/${userId}`,
            body: { role: to },
            check: async (ok) => {
              const role = await roleOf(itemOrg(target), userId);
              return role === (ok ? to : from) ? [] : [`the member is ${role}`];
            },
          };
        },
      }),
    ),
    ...MANAGED_ROLES.map(
      ([role, min]): Row => ({
        method: 'DELETE',
        route: `/api/v1/orgs/:org/members/:user (${role})`,
        targets: ['A', 'B', 'A→B'],
        // The member is looked up before the actor's role is weighed: any member finds no one in A.
        expect: member(min, 204, 'viewer'),
        prepare: async (_actor, target) => {
          const userId = await newMember(itemOrg(target), role);
          return {
            url: `/api/v1/orgs/${org[urlOrg(target)]}/members/${userId}`,
            check: async (ok) => {
              const now = await roleOf(itemOrg(target), userId);
              return now === (ok ? undefined : role) ? [] : [`the member is ${now ?? 'gone'}`];
            },
          };
        },
      }),
    ),
    ...MANAGED_ROLES.map(
      ([role, min]): Row => ({
        method: 'POST',
        route: `/api/v1/orgs/:org/invitations (${role})`,
        targets: ['A', 'B'],
        expect: member(min, 201),
        prepare: async (_actor, target) => {
          const email = `invitee-${next()}@example.test`;
          return {
            url: `/api/v1/orgs/${org[urlOrg(target)]}/invitations`,
            body: { email, role },
            check: async (ok) => {
              const made = await api.db.select().from(invitations).where(eq(invitations.email, email));
              const mailed = api.mail.filter((m) => m.to === email).length;
              const expected = ok ? 1 : 0;
              return made.length === expected &&
                mailed === expected &&
                made.every((i) => i.orgId === org[urlOrg(target)])
                ? []
                : [`${made.length} invitations, ${mailed} mails`];
            },
          };
        },
      }),
    ),
    orgListRow({
      path: 'invitations',
      min: 'admin',
      listed: 'invitations',
      key: 'id',
      idsIn: async (orgId) =>
        (await api.db.select().from(invitations).where(eq(invitations.orgId, orgId))).map((i) => i.id),
    }),
    ...MANAGED_ROLES.map(
      ([role, min]): Row => ({
        method: 'DELETE',
        route: `/api/v1/orgs/:org/invitations/:id (${role})`,
        targets: ['A', 'B', 'A→B'],
        expect: member(min, 204, 'admin'),
        prepare: async (_actor, target) => {
          const invitation = await newInvitation(itemOrg(target), `pending-${next()}@example.test`, role);
          return {
            url: `/api/v1/orgs/${org[urlOrg(target)]}/invitations/${invitation.id}`,
            check: async (ok) => {
              const [row] = await api.db.select().from(invitations).where(eq(invitations.id, invitation.id));
              return (row!.revokedAt !== null) === ok ? [] : [`revokedAt is ${row!.revokedAt}`];
            },
          };
        },
      }),
    ),
    {
      method: 'POST',
      route: "/api/v1/invitations/accept (someone else's invitation)",
      targets: ['A', 'B'],
      expect: signedIn(FORBIDDEN),
      prepare: async (_actor, target) => {
        const invitation = await newInvitation(
          org[urlOrg(target)],
          `stranger-${next()}@example.test`,
          'owner',
        );
        return {
          url: '/api/v1/invitations/accept',
          body: { token: invitation.token },
          check: async () => {
            const [row] = await api.db.select().from(invitations).where(eq(invitations.id, invitation.id));
            return row!.acceptedAt === null ? [] : ['the invitation was accepted'];
          },
        };
      },
    },
    {
      method: 'POST',
      route: '/api/v1/invitations/accept (own invitation, to a new org)',
      targets: ['-'],
      expect: signedIn('200'),
      prepare: async (actor) => {
        const [fresh] = await api.db
          .insert(orgs)
          .values({ name: `inviting-${next()}` })
          .returning();
        const invitation = await newInvitation(
          fresh!.id,
          actor.email ?? `nobody-${next()}@example.test`,
          'viewer',
        );
        return {
          url: '/api/v1/invitations/accept',
          body: { token: invitation.token },
          check: async (ok) => {
            const role = actor.userId === undefined ? undefined : await roleOf(fresh!.id, actor.userId);
            return role === (ok ? 'viewer' : undefined) ? [] : [`the caller is ${role} in the org`];
          },
        };
      },
    },
    ...credentialRows({
      path: 'api-keys',
      table: apiKeys,
      listed: 'apiKeys',
      one: 'key',
      secrets: ['key', 'secretHash'],
      body: (name) => ({ name, scopes: ['robots:read'] }),
      newRow: newKeyRow,
    }),
    ...credentialRows({
      path: 'enrolment-tokens',
      table: enrolmentTokens,
      listed: 'enrolmentTokens',
      one: 'token',
      secrets: ['token', 'tokenHash'],
      body: (name) => ({ name }),
      newRow: async (orgId) => (await newEnrolmentToken(orgId)).id,
    }),
    {
      // A robot's request: whatever credential comes with it, only the enrolment token counts. The
      // token is of an org of its own, so that orgs A and B stay as they are.
      method: 'POST',
      route: '/api/v1/enrol',
      targets: ['-'],
      expect: () => '201',
      prepare: async () => {
        const [third] = await api.db
          .insert(orgs)
          .values({ name: `enrol-${next()}` })
          .returning();
        const { token } = await newEnrolmentToken(third!.id);
        const robotId = `robot-enrolled-${next()}`;
        const publicKey = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x;
        return {
          url: '/api/v1/enrol',
          body: { robotId, publicKey, token },
          check: async (ok) => {
            const made = await api.db.select().from(robots).where(eq(robots.robotId, robotId));
            return made.length === (ok ? 1 : 0) && made.every((r) => r.orgId === third!.id)
              ? []
              : [`${made.length} robots enrolled`];
          },
        };
      },
    },
    {
      method: 'GET',
      route: '/api/v1/orgs/:org/audit',
      targets: ['A', 'B'],
      expect: member('admin', 200),
      prepare: async (_actor, target) => ({
        url: `/api/v1/orgs/${org[urlOrg(target)]}/audit?limit=200`,
        check: async (ok, answer) => {
          if (!ok) return [];
          const rows = await api.db
            .select()
            .from(auditLog)
            .where(eq(auditLog.orgId, org[urlOrg(target)]));
          const ids = new Set(rows.map((r) => r.id));
          const foreign = answer.body.entries.filter((e: { id: number }) => !ids.has(e.id));
          return foreign.length === 0 ? [] : [`${foreign.length} entries of another org`];
        },
      }),
    },
    {
      method: 'GET',
      route: '/api/v1/robots',
      targets: ['-'],
      expect: (actor) => (actor.kind === 'key' && !actor.scopes!.includes('robots:read') ? FORBIDDEN : '200'),
      prepare: async () => ({ url: '/api/v1/robots' }),
    },
    {
      method: 'GET',
      route: '/api/v1/robots (org filter)',
      targets: ['A', 'B'],
      // A member lists the org's robots, an API key its own org's; another org is not shown to exist.
      expect: (actor, target) => {
        if (actor.kind === 'anonymous') return UNAUTHENTICATED;
        if (actor.kind === 'key') {
          if (!actor.scopes!.includes('robots:read')) return FORBIDDEN;
          return target === 'A' ? '200' : NOT_FOUND;
        }
        return actor.roles[urlOrg(target)] === undefined ? NOT_FOUND : '200';
      },
      prepare: async (_actor, target) => ({
        url: `/api/v1/robots?org=${org[urlOrg(target)]}`,
        check: async (ok, answer) => {
          if (!ok) return [];
          const listed: { orgId: string }[] = answer.body.robots;
          const foreign = listed.filter((r) => r.orgId !== org[urlOrg(target)]);
          return listed.length > 0 && foreign.length === 0
            ? []
            : [`${listed.length} robots listed, ${foreign.length} of another org`];
        },
      }),
    },
    {
      method: 'PATCH',
      route: '/api/v1/robots/:robot',
      targets: ['A', 'B', 'B public'],
      expect: member('admin', 200),
      prepare: async (_actor, target) => {
        const robotId = await newRobot(org[urlOrg(target)], target === 'B public');
        const name = `renamed-${next()}`;
        return {
          url: `/api/v1/robots/${robotId}`,
          body: { name },
          check: async (ok) => {
            const [row] = await api.db.select().from(robots).where(eq(robots.robotId, robotId));
            // Leave the org's robots as they were for the next cells.
            await api.db.delete(robots).where(eq(robots.robotId, robotId));
            return (row?.name === name) === ok ? [] : [`the robot is ${ok ? 'not ' : ''}renamed`];
          },
        };
      },
    },
    {
      method: 'GET',
      route: '/api/v1/orgs/:org/fleet/events',
      targets: ['A', 'B'],
      expect: member('viewer', 200),
      prepare: async (_actor, target) => ({
        url: `/api/v1/orgs/${org[urlOrg(target)]}/fleet/events`,
        eventStream: true,
        check: async (ok, answer) => {
          if (!ok) return [];
          const orgId = org[urlOrg(target)];
          const listed: { orgId: string }[] = answer.body.robots ?? [];
          const foreign = listed.filter((r) => r.orgId !== orgId);
          return answer.body.type === 'snapshot' && answer.body.orgId === orgId && foreign.length === 0
            ? []
            : [`the first event is not the org's snapshot: ${JSON.stringify(answer.body).slice(0, 200)}`];
        },
      }),
    },
    {
      method: 'DELETE',
      route: '/api/v1/robots/:robot',
      targets: ['A', 'B', 'B public'],
      expect: member('admin', 204),
      prepare: async (_actor, target) => {
        const robotId = await newRobot(org[urlOrg(target)], target === 'B public');
        return {
          url: `/api/v1/robots/${robotId}`,
          check: async (ok) => {
            const left = await api.db.select().from(robots).where(eq(robots.robotId, robotId));
            // Leave the org's robots as they were for the next cells.
            await api.db.delete(robots).where(eq(robots.robotId, robotId));
            return left.length === (ok ? 0 : 1) ? [] : [`the robot is ${ok ? 'still there' : 'gone'}`];
          },
        };
      },
    },
    {
      method: 'GET',
      route: '/api/v1/robots/:robot',
      targets: ['A', 'B', 'B public'],
      // Exactly the robots GET /api/v1/robots lists to the caller; any other is not shown to exist.
      expect: (actor, target) => {
        const seen = expectedRobots()[actor.name as keyof ReturnType<typeof expectedRobots>];
        if (typeof seen === 'string') return seen;
        return seen.includes(robotFor(target)) ? '200' : NOT_FOUND;
      },
      prepare: async (_actor, target) => ({
        url: `/api/v1/robots/${robotFor(target)}`,
        check: async (ok, answer) =>
          !ok || answer.body.robot?.robotId === robotFor(target) ? [] : ['another robot answered'],
      }),
    },
    {
      method: 'GET',
      route: '/api/v1/robots/:robot/sessions',
      targets: ['A', 'B', 'B public'],
      expect: member('admin', 200),
      prepare: async (_actor, target) => ({ url: `/api/v1/robots/${robotFor(target)}/sessions` }),
    },
    {
      method: 'DELETE',
      route: '/api/v1/robots/:robot/sessions/:session',
      targets: ['A', 'B', 'B public'],
      // No robot is connected here, so an admin of the robot's org learns there is no such session;
      // everyone else is refused before that.
      expect: (actor, target) => {
        const answer = member('admin', 404)(actor, target);
        return answer === '404' ? NOT_FOUND : answer;
      },
      prepare: async (_actor, target) => ({
        url: `/api/v1/robots/${robotFor(target)}/sessions/${randomUUID()}`,
      }),
    },
    {
      method: 'POST',
      route: '/api/v1/session-tokens',
      targets: ['A', 'B', 'B public'],
      expect: (actor, target) => {
        if (actor.kind === 'key' && !actor.scopes!.includes('sessions:mint')) return FORBIDDEN;
        // Anyone may observe a robot with a public grant.
        if (target === 'B public') return '201';
        if (actor.kind === 'anonymous') return UNAUTHENTICATED;
        if (actor.kind === 'key') return target === 'A' ? '201' : NOT_FOUND;
        const role = actor.roles[urlOrg(target)];
        if (role === undefined) return NOT_FOUND;
        // Operators and above start sessions on their org's robots; a viewer observes only where a
        // grant says so (architecture page, roles).
        return RANK[role] >= RANK.operator ? '201' : FORBIDDEN;
      },
      prepare: async (_actor, target) => ({
        url: '/api/v1/session-tokens',
        body: { robotId: robotFor(target), scope: 'observe' },
        check: async (ok, answer) => {
          // Mints are audited in batches: write them now, so they count for this cell and not a later one.
          await api.app.auditBatcher.flush();
          return !ok || (typeof answer.body.token === 'string' && answer.body.robotId === robotFor(target))
            ? []
            : ['no token for the robot'];
        },
      }),
    },
    {
      method: 'GET',
      route: '/.well-known/svc-session-jwks.json',
      targets: ['-'],
      expect: () => '200',
      prepare: async () => ({
        url: '/.well-known/svc-session-jwks.json',
        check: async (_ok, answer) => (answer.body.keys?.length >= 1 ? [] : ['no key published']),
      }),
    },
    {
      method: 'GET',
      route: '/api/v1/robots/:robot/grants',
      targets: ['A', 'B', 'B public'],
      expect: member('admin', 200),
      prepare: async (_actor, target) => ({
        url: `/api/v1/robots/${robotFor(target)}/grants`,
        check: async (ok, answer) => {
          if (!ok) return [];
          const rows = await api.db
            .select()
            .from(robotGrants)
            .where(eq(robotGrants.robotId, robotFor(target)));
          return sameIds(
            'grants',
            answer.body.grants.map((g: { id: string }) => g.id),
            rows.map((g) => g.id),
          );
        },
      }),
    },
    {
      method: 'POST',
      route: '/api/v1/robots/:robot/grants',
      targets: ['A', 'B', 'B public'],
      expect: member('admin', 201),
      prepare: async (_actor, target) => {
        const userId = await newUser();
        return {
          url: `/api/v1/robots/${robotFor(target)}/grants`,
          body: { grantee: { kind: 'user', userId }, access: 'drive' },
          check: async (ok) => {
            const made = await api.db.select().from(robotGrants).where(eq(robotGrants.userId, userId));
            return made.length === (ok ? 1 : 0) && made.every((g) => g.robotId === robotFor(target))
              ? []
              : [`${made.length} grants made`];
          },
        };
      },
    },
    {
      method: 'DELETE',
      route: '/api/v1/robots/:robot/grants/:id',
      targets: ['A', 'B', 'B public', 'A→B'],
      expect: member('admin', 204),
      prepare: async (_actor, target) => {
        const id = await newGrant(target === 'A→B' ? robotOf.B : robotFor(target));
        return {
          url: `/api/v1/robots/${robotFor(target)}/grants/${id}`,
          check: async (ok) => {
            const left = await api.db.select().from(robotGrants).where(eq(robotGrants.id, id));
            return left.length === (ok ? 0 : 1) ? [] : [`the grant is ${ok ? 'still there' : 'gone'}`];
          },
        };
      },
    },
  ];

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend, provider });
    const ownerA = await api.signIn({ name: 'owner-a' });
    const ownerB = await api.signIn({ name: 'owner-b' });
    org.A = ownerA.me.body.orgs[0].id;
    org.B = ownerB.me.body.orgs[0].id;
    actors.push({ name: 'anonymous', kind: 'anonymous', roles: {} });
    for (const role of ['viewer', 'operator', 'admin'] as const) {
      const email = `${role}-a@example.test`;
      const invited = await api.call('POST', `/api/v1/orgs/${org.A}/invitations`, {
        token: ownerA.accessToken,
        body: { email, role },
      });
      expect(invited.status).toBe(201);
      // The invitation is accepted at the first sign-in with the verified email.
      const { accessToken, me } = await api.signIn({ name: `${role}-a` });
      expect(me.body.orgs).toContainEqual(expect.objectContaining({ id: org.A, role }));
      actors.push({
        name: `${role} A`,
        kind: 'user',
        token: accessToken,
        userId: me.body.user.id,
        email,
        roles: { A: role },
      });
    }
    actors.push({
      name: 'owner A',
      kind: 'user',
      token: ownerA.accessToken,
      userId: ownerA.me.body.user.id,
      email: 'owner-a@example.test',
      roles: { A: 'owner' },
    });
    actors.push({
      name: 'owner B',
      kind: 'user',
      token: ownerB.accessToken,
      userId: ownerB.me.body.user.id,
      email: 'owner-b@example.test',
      roles: { B: 'owner' },
    });
    for (const scope of ['robots:read', 'sessions:mint']) {
      const made = await api.call('POST', `/api/v1/orgs/${org.A}/api-keys`, {
        token: ownerA.accessToken,
        body: { name: scope, scopes: [scope] },
      });
      expect(made.status).toBe(201);
      actors.push({ name: `key A ${scope}`, kind: 'key', token: made.body.key, roles: {}, scopes: [scope] });
    }
    await api.db.insert(robots).values([
      { robotId: robotOf.A, orgId: org.A, publicKey: 'pk-a', name: 'A' },
      { robotId: robotOf.B, orgId: org.B, publicKey: 'pk-b', name: 'B' },
      { robotId: robotOf['B public'], orgId: org.B, publicKey: 'pk-b-public', name: 'B public' },
    ]);
    await api.db
      .insert(robotGrants)
      .values({ robotId: robotOf['B public'], granteeKind: 'public', access: 'observe' });
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  /** Robot ids each caller sees in `GET /api/v1/robots`, or the refusal. */
  async function robotsSeen(): Promise<Record<string, string[] | string>> {
    const seen: Record<string, string[] | string> = {};
    for (const actor of actors) {
      const answer = await api.call(
        'GET',
        '/api/v1/robots',
        actor.token === undefined ? {} : { token: actor.token },
      );
      seen[actor.name] =
        answer.status === 200 ? answer.body.robots.map((r: { robotId: string }) => r.robotId) : shown(answer);
    }
    return seen;
  }
  const expectedRobots = () => ({
    anonymous: ['robot-b-public'],
    'viewer A': ['robot-a', 'robot-b-public'],
    'operator A': ['robot-a', 'robot-b-public'],
    'admin A': ['robot-a', 'robot-b-public'],
    'owner A': ['robot-a', 'robot-b-public'],
    'owner B': ['robot-b', 'robot-b-public'],
    'key A robots:read': ['robot-a'],
    'key A sessions:mint': FORBIDDEN,
  });

  it('has rows for every endpoint of the OpenAPI document', async () => {
    const document = await api.call('GET', '/api/v1/openapi.json');
    const paths = document.body.paths as Record<string, Record<string, unknown>>;
    const documented = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    const covered = rows.map((r) => `${r.method} ${r.route.replace(/ \(.*\)$/, '')}`);
    expect(documented.length).toBeGreaterThan(20);
    expect(new Set(covered)).toEqual(new Set([...documented, 'GET /api/v1/openapi.json']));
  });

  it('GET /api/v1/robots shows each caller exactly the robots they may see', async () => {
    expect(await robotsSeen()).toEqual(expectedRobots());
    const anonymous = await api.call('GET', '/api/v1/robots');
    expect(anonymous.body.robots).toEqual([
      expect.objectContaining({ robotId: 'robot-b-public', public: true, access: 'observe' }),
    ]);
  });

  it.each(rows)('$method $route', async (row) => {
    const expected: Record<string, string> = {};
    const actual: Record<string, string> = {};
    const problems: string[] = [];
    for (const target of row.targets) {
      for (const actor of actors) {
        const cell = `${actor.name} @ ${target}`;
        expected[cell] = row.expect(actor, target);
        const prepared = await row.prepare(actor, target);
        const before = { A: await stateOf(org.A), B: await stateOf(org.B) };
        const answer = await api.call(row.method, prepared.url, {
          ...(actor.token === undefined ? {} : { token: actor.token }),
          ...(prepared.body === undefined ? {} : { body: prepared.body }),
          ...(prepared.eventStream === true ? { eventStream: true } : {}),
        });
        actual[cell] = shown(answer);
        const ok = answer.status >= 200 && answer.status < 300;
        const after = { A: await stateOf(org.A), B: await stateOf(org.B) };
        const mayTouch =
          ok && row.method !== 'GET' && target !== '-' ? (row.touches ?? urlOrg)(target) : undefined;
        for (const key of ['A', 'B'] as const) {
          if (key !== mayTouch && !isDeepStrictEqual(before[key], after[key])) {
            problems.push(`${cell}: org ${key} changed`);
          }
        }
        for (const problem of (await prepared.check?.(ok, answer)) ?? [])
          problems.push(`${cell}: ${problem}`);
      }
    }
    expect(actual).toEqual(expected);
    expect(problems).toEqual([]);
  });

  it('leaves every caller seeing the same robots after the matrix', async () => {
    expect(await robotsSeen()).toEqual(expectedRobots());
  });

  it('admins cannot make or unmake owners and admins (403); owners can', async () => {
    const [admin, owner] = [
      actors.find((a) => a.name === 'admin A')!,
      actors.find((a) => a.name === 'owner A')!,
    ];
    const viewer = await newMember(org.A, 'viewer');
    const url = `/api/v1/orgs/${org.A}/members/${viewer}`;
    for (const role of ['admin', 'owner'] as const) {
      const refused = await api.call('PATCH', url, { token: admin.token!, body: { role } });
      expect(shown(refused), role).toBe(FORBIDDEN);
      expect(await roleOf(org.A, viewer)).toBe('viewer');
      const invited = await api.call('POST', `/api/v1/orgs/${org.A}/invitations`, {
        token: admin.token!,
        body: { email: `would-be-${role}@example.test`, role },
      });
      expect(shown(invited), role).toBe(FORBIDDEN);
    }
    // The admin cannot demote themselves either: that is an owner's decision.
    const self = await api.call('PATCH', `/api/v1/orgs/${org.A}/members/${admin.userId}`, {
      token: admin.token!,
      body: { role: 'viewer' },
    });
    expect(shown(self)).toBe(FORBIDDEN);
    for (const role of ['admin', 'owner', 'operator'] as const) {
      const done = await api.call('PATCH', url, { token: owner.token!, body: { role } });
      expect(done.status, role).toBe(200);
      expect(await roleOf(org.A, viewer)).toBe(role);
    }
  });

  it('the last owner can neither leave nor be demoted (409); with a second owner they can', async () => {
    const owner = actors.find((a) => a.name === 'owner A')!;
    const made = await api.call('POST', '/api/v1/orgs', { token: owner.token!, body: { name: 'solo' } });
    const solo = made.body.org.id as string;
    const me = `/api/v1/orgs/${solo}/members/${owner.userId}`;
    for (const role of ['admin', 'viewer'] as const) {
      const demoted = await api.call('PATCH', me, { token: owner.token!, body: { role } });
      expect(shown(demoted), role).toBe('409 conflict');
    }
    expect(shown(await api.call('DELETE', me, { token: owner.token! }))).toBe('409 conflict');
    expect(await roleOf(solo, owner.userId!)).toBe('owner');

    const other = await newMember(solo, 'viewer');
    const promoted = await api.call('PATCH', `/api/v1/orgs/${solo}/members/${other}`, {
      token: owner.token!,
      body: { role: 'owner' },
    });
    expect(promoted.status).toBe(200);
    expect((await api.call('PATCH', me, { token: owner.token!, body: { role: 'admin' } })).status).toBe(200);
    expect((await api.call('DELETE', me, { token: owner.token! })).status).toBe(204);
    expect(await roleOf(solo, owner.userId!)).toBeUndefined();
    expect(await roleOf(solo, other)).toBe('owner');
  });
});
