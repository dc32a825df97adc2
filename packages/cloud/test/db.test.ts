import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { type DrizzleSnapshotJSON, generateDrizzleJson, generateMigration } from 'drizzle-kit/api';
import { eq, sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  apiKeys,
  auditLog,
  type CloudDb,
  hashSecret,
  invitations,
  isDatabaseError,
  memberships,
  migrationsFolder,
  newSecret,
  type OrgRole,
  openDatabase,
  orgs,
  robotGrants,
  robots,
  users,
} from '../src/db/index.js';
import * as schema from '../src/db/schema.js';
import { databaseBackends, postgresTestServerUrl, rowsOf, type TestDatabase } from './support/databases.js';

const TABLES = [
  'api_keys',
  'audit_log',
  'enrolment_tokens',
  'invitations',
  'memberships',
  'orgs',
  'robot_grants',
  'robots',
  'session_signing_keys',
  'users',
];

interface Journal {
  entries: { idx: number; tag: string }[];
}

async function readJournal(): Promise<Journal> {
  return JSON.parse(await readFile(join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as Journal;
}

async function tablesIn(db: CloudDb): Promise<string[]> {
  const result = await db.execute(
    sql`select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
  );
  return rowsOf<{ table_name: string }>(result).map((row) => row.table_name);
}

async function appliedMigrations(db: CloudDb): Promise<{ hash: string; created_at: string }[]> {
  const result = await db.execute(
    sql`select hash, created_at::text as created_at from drizzle.__drizzle_migrations order by id`,
  );
  return rowsOf(result);
}

/** The SQLSTATE and constraint name of the error a statement failed with, found in the cause chain. */
async function refusal(
  statement: PromiseLike<unknown>,
): Promise<{ code: string; constraint: string | undefined }> {
  const err: unknown = await Promise.resolve(statement).then(
    () => {
      throw new Error('expected the database to refuse the statement, but it succeeded');
    },
    (e: unknown) => e,
  );
  for (let current = err; current instanceof Error; current = current.cause) {
    const { code, constraint } = current as { code?: unknown; constraint?: unknown };
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
      return { code, constraint: typeof constraint === 'string' ? constraint : undefined };
    }
  }
  throw err;
}

/** Everything a logger could print of `err`: message, stack, fields and causes. */
function printed(err: unknown): string {
  return inspect(err, { depth: 10 });
}

const UNIQUE_VIOLATION = '23505';
const CHECK_VIOLATION = '23514';

/** A port on 127.0.0.1 that nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(),
      );
    });
  });
}

describe('migrations', () => {
  it('match the schema: nothing is left to generate (run `npm run db:generate -w @svc/cloud`)', async () => {
    const { entries } = await readJournal();
    const last = entries.at(-1);
    expect(last).toBeDefined();
    const snapshotFile = join(
      migrationsFolder,
      'meta',
      `${String(last!.idx).padStart(4, '0')}_snapshot.json`,
    );
    const committed = JSON.parse(await readFile(snapshotFile, 'utf8')) as DrizzleSnapshotJSON;
    const current = generateDrizzleJson(schema, committed.id);
    expect(await generateMigration(committed, current)).toEqual([]);
  });
});

describe.each(databaseBackends)('database on $name', (backend) => {
  it('applies the migrations to an empty database, and a second open applies nothing', async () => {
    const store = await backend.emptyStore();
    try {
      const bare = await openDatabase({ ...store.options, migrate: false });
      expect(bare.kind).toBe(backend.name);
      expect(await tablesIn(bare.db)).toEqual([]);
      await bare.close();

      const journal = await readJournal();
      const first = await openDatabase(store.options);
      expect(await tablesIn(first.db)).toEqual(TABLES);
      const applied = await appliedMigrations(first.db);
      expect(applied).toHaveLength(journal.entries.length);
      await first.close();

      const second = await openDatabase(store.options);
      expect(await appliedMigrations(second.db)).toEqual(applied);
      await second.close();
    } finally {
      await store.dispose();
    }
  });

  it('keeps its rows across close and reopen', async () => {
    const store = await backend.emptyStore();
    try {
      const first = await openDatabase(store.options);
      await first.db.insert(users).values({ oidcIssuer: 'https://id.example', oidcSubject: 'alice' });
      await first.close();
      await first.close(); // closing twice is harmless

      const second = await openDatabase(store.options);
      const rows = await second.db.select().from(users);
      expect(rows.map((row) => row.oidcSubject)).toEqual(['alice']);
      await second.close();
    } finally {
      await store.dispose();
    }
  });

  it('fails with migration-failed and applies nothing when a migration cannot run', async () => {
    const store = await backend.emptyStore();
    try {
      const bare = await openDatabase({ ...store.options, migrate: false });
      await bare.db.execute(sql`create table users (id integer)`);
      await bare.close();

      const err = await openDatabase(store.options).catch((e: unknown) => e);
      expect(isDatabaseError(err, 'migration-failed')).toBe(true);
      expect((err as Error).message).toMatch(/relation "users" already exists/);

      const after = await openDatabase({ ...store.options, migrate: false });
      expect(await tablesIn(after.db)).toEqual(['users']);
      await after.close();
    } finally {
      await store.dispose();
    }
  });

  describe('constraints', () => {
    let handle: TestDatabase;
    let db: CloudDb;

    beforeEach(async () => {
      handle = await backend.create();
      db = handle.database.db;
    });
    afterEach(async () => {
      await handle.dispose();
    });

    async function newUser(subject: string, email: string | null = null): Promise<string> {
      const [row] = await db
        .insert(users)
        .values({ oidcIssuer: 'https://id.example', oidcSubject: subject, email })
        .returning({ id: users.id });
      return row!.id;
    }

    async function newOrg(name: string, createdBy: string | null = null): Promise<string> {
      const [row] = await db.insert(orgs).values({ name, createdBy }).returning({ id: orgs.id });
      return row!.id;
    }

    async function newRobot(robotId: string, orgId: string | null = null): Promise<string> {
      await db.insert(robots).values({ robotId, orgId, publicKey: 'A'.repeat(43) });
      return robotId;
    }

    it('refuses a second user with the same issuer and subject', async () => {
      await newUser('alice');
      await db.insert(users).values({ oidcIssuer: 'https://other.example', oidcSubject: 'alice' });
      expect(
        await refusal(db.insert(users).values({ oidcIssuer: 'https://id.example', oidcSubject: 'alice' })),
      ).toEqual({ code: UNIQUE_VIOLATION, constraint: 'users_oidc_identity_key' });
    });

    it('allows many users without an email but refuses a shared or uppercase email', async () => {
      await newUser('a');
      await newUser('b');
      await newUser('c', 'carol@example.com');
      expect(await refusal(newUser('d', 'carol@example.com'))).toEqual({
        code: UNIQUE_VIOLATION,
        constraint: 'users_email_key',
      });
      expect(await refusal(newUser('e', 'Eve@example.com'))).toEqual({
        code: CHECK_VIOLATION,
        constraint: 'users_email_lowercase',
      });
    });

    it('refuses a membership or an invitation with an unknown role', async () => {
      const userId = await newUser('alice');
      const orgId = await newOrg('Acme');
      await db.insert(memberships).values({ orgId, userId, role: 'owner' });
      const userId2 = await newUser('bob');
      expect(
        await refusal(
          db.insert(memberships).values({ orgId, userId: userId2, role: 'superuser' as OrgRole }),
        ),
      ).toEqual({ code: CHECK_VIOLATION, constraint: 'memberships_role_check' });
      expect(
        await refusal(
          db.insert(invitations).values({
            orgId,
            email: 'bob@example.com',
            role: 'root' as OrgRole,
            tokenHash: hashSecret(newSecret('inv_')),
            expiresAt: new Date(Date.now() + 86_400_000),
          }),
        ),
      ).toEqual({ code: CHECK_VIOLATION, constraint: 'invitations_role_check' });
    });

    it('refuses a grant whose grantee columns do not match its kind', async () => {
      const robotId = await newRobot('r1');
      const userId = await newUser('alice');
      const orgId = await newOrg('Acme');
      const grantee = { code: CHECK_VIOLATION, constraint: 'robot_grants_grantee_check' };
      expect(
        await refusal(
          db.insert(robotGrants).values({ robotId, granteeKind: 'public', userId, access: 'observe' }),
        ),
      ).toEqual(grantee);
      expect(
        await refusal(db.insert(robotGrants).values({ robotId, granteeKind: 'user', access: 'observe' })),
      ).toEqual(grantee);
      expect(
        await refusal(
          db.insert(robotGrants).values({ robotId, granteeKind: 'user', userId, orgId, access: 'drive' }),
        ),
      ).toEqual(grantee);
      expect(
        await refusal(
          db.insert(robotGrants).values({ robotId, granteeKind: 'org', userId, access: 'drive' }),
        ),
      ).toEqual(grantee);
      await db.insert(robotGrants).values([
        { robotId, granteeKind: 'user', userId, access: 'drive' },
        { robotId, granteeKind: 'org', orgId, access: 'observe' },
        { robotId, granteeKind: 'public', access: 'observe' },
      ]);
      expect(await db.select().from(robotGrants)).toHaveLength(3);
    });

    it('refuses a second grant to the same grantee, public grants included', async () => {
      const robotId = await newRobot('r1');
      const otherRobot = await newRobot('r2');
      const userId = await newUser('alice');
      const duplicate = { code: UNIQUE_VIOLATION, constraint: 'robot_grants_grantee_key' };

      await db.insert(robotGrants).values({ robotId, granteeKind: 'user', userId, access: 'observe' });
      expect(
        await refusal(
          db.insert(robotGrants).values({ robotId, granteeKind: 'user', userId, access: 'drive' }),
        ),
      ).toEqual(duplicate);

      await db.insert(robotGrants).values({ robotId, granteeKind: 'public', access: 'observe' });
      expect(
        await refusal(db.insert(robotGrants).values({ robotId, granteeKind: 'public', access: 'observe' })),
      ).toEqual(duplicate);

      await db.insert(robotGrants).values({ robotId: otherRobot, granteeKind: 'public', access: 'observe' });
      expect(await db.select().from(robotGrants)).toHaveLength(3);
    });

    it('deleting an org deletes its members, invitations, keys and grants, and keeps robots and audit log', async () => {
      const userId = await newUser('alice', 'alice@example.com');
      const orgId = await newOrg('Acme', userId);
      const otherOrg = await newOrg('Other', userId);
      const robotId = await newRobot('r1', orgId);
      const otherRobot = await newRobot('r2', otherOrg);
      await db.insert(memberships).values([
        { orgId, userId, role: 'owner' },
        { orgId: otherOrg, userId, role: 'owner' },
      ]);
      await db.insert(invitations).values({
        orgId,
        email: 'bob@example.com',
        role: 'viewer',
        tokenHash: hashSecret(newSecret('inv_')),
        createdBy: userId,
        expiresAt: new Date(Date.now() + 86_400_000),
      });
      const key = newSecret('svc_key_');
      await db.insert(apiKeys).values({
        orgId,
        name: 'ci',
        prefix: key.slice(0, 16),
        secretHash: hashSecret(key),
        scopes: ['robots:read'],
        createdBy: userId,
      });
      await db.insert(robotGrants).values({
        robotId: otherRobot,
        granteeKind: 'org',
        orgId,
        access: 'observe',
      });
      await db.insert(auditLog).values({
        orgId,
        actorKind: 'user',
        actorId: userId,
        action: 'membership.create',
        targetKind: 'user',
        targetId: userId,
      });

      await db.delete(orgs).where(eq(orgs.id, orgId));

      expect(await db.select().from(memberships)).toEqual([expect.objectContaining({ orgId: otherOrg })]);
      expect(await db.select().from(invitations)).toEqual([]);
      expect(await db.select().from(apiKeys)).toEqual([]);
      expect(await db.select().from(robotGrants)).toEqual([]);
      const robotRows = await db.select({ robotId: robots.robotId, orgId: robots.orgId }).from(robots);
      expect(robotRows.sort((a, b) => a.robotId.localeCompare(b.robotId))).toEqual([
        { robotId, orgId: null },
        { robotId: otherRobot, orgId: otherOrg },
      ]);
      const audit = await db.select().from(auditLog);
      expect(audit).toEqual([
        expect.objectContaining({ orgId, action: 'membership.create', actorId: userId, detail: {} }),
      ]);
      expect(typeof audit[0]!.id).toBe('number');
    });

    it('deleting a user keeps the orgs and invitations they created, unattributed', async () => {
      const userId = await newUser('alice');
      const orgId = await newOrg('Acme', userId);
      await db.insert(invitations).values({
        orgId,
        email: 'bob@example.com',
        role: 'admin',
        tokenHash: hashSecret(newSecret('inv_')),
        createdBy: userId,
        expiresAt: new Date(Date.now() + 86_400_000),
      });
      await db.delete(users).where(eq(users.id, userId));
      expect(await db.select({ createdBy: orgs.createdBy }).from(orgs)).toEqual([{ createdBy: null }]);
      expect(await db.select({ createdBy: invitations.createdBy }).from(invitations)).toEqual([
        { createdBy: null },
      ]);
    });
  });
});

describe('openDatabase errors', () => {
  it('names the unreachable server in a database-unreachable error, without the password', async () => {
    const port = await closedPort();
    const err = await openDatabase({ url: `postgres://svc:pa55-w0rd@127.0.0.1:${port}/svc` }).catch(
      (e: unknown) => e,
    );
    expect(isDatabaseError(err, 'database-unreachable')).toBe(true);
    const message = (err as Error).message;
    expect(message).toContain(`postgres://***@127.0.0.1:${port}/svc`);
    expect(message).toMatch(/ECONNREFUSED/);
    expect(printed(err)).not.toContain('pa55-w0rd');
  });

  it('says database-rejected when the server answers but the database does not exist', async () => {
    const url = new URL(await postgresTestServerUrl());
    url.password = 'pa55-w0rd';
    url.pathname = '/svc_test_no_such_database';
    const err = await openDatabase({ url: url.toString() }).catch((e: unknown) => e);
    expect(isDatabaseError(err, 'database-rejected')).toBe(true);
    expect((err as Error).message).toMatch(/database "svc_test_no_such_database" does not exist/);
    expect(printed(err)).not.toContain('pa55-w0rd');
  });

  it('refuses a URL that is not PostgreSQL with invalid-url, without the password', async () => {
    const err = await openDatabase({ url: 'mysql://svc:pa55-w0rd@db.example/svc' }).catch((e: unknown) => e);
    expect(isDatabaseError(err, 'invalid-url')).toBe(true);
    expect((err as Error).message).toContain('mysql://***@db.example/svc');
    expect(printed(err)).not.toContain('pa55-w0rd');
    for (const url of ['postgres://svc:pa55-w0rd@[::1/svc', 'postgres://svc:pa55-w0rd@/svc']) {
      const garbled = await openDatabase({ url }).catch((e: unknown) => e);
      expect(isDatabaseError(garbled, 'invalid-url')).toBe(true);
      expect(printed(garbled)).not.toContain('pa55-w0rd');
    }
  });

  it('says data-dir-unusable when the PGlite data dir is a file', async () => {
    const store = await databaseBackends[0]!.emptyStore();
    try {
      const file = store.options.dataDir!;
      await writeFile(file, 'not a directory');
      const err = await openDatabase({ dataDir: join(file, 'store') }).catch((e: unknown) => e);
      expect(isDatabaseError(err, 'data-dir-unusable')).toBe(true);
      expect((err as Error).message).toContain(join(file, 'store'));
    } finally {
      await store.dispose();
    }
  });

  it('needs exactly one of url and dataDir', async () => {
    await expect(openDatabase({})).rejects.toThrow(TypeError);
    await expect(openDatabase({ url: 'postgres://127.0.0.1/x', dataDir: 'memory://' })).rejects.toThrow(
      TypeError,
    );
  });
});
