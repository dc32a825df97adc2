/**
 * Real databases for tests, one backend per engine, to run the same tests on both with
 * `describe.each(databaseBackends)`.
 *
 * - `pglite`: an in-memory PGlite per test, loaded from one migrated template built once per test
 *   file (`dumpDataDir()` then `loadDataDir`), instead of initdb plus migrations each time.
 * - `postgres`: a database with a random name per test on a PostgreSQL server, dropped on
 *   dispose. The server is `SVC_TEST_POSTGRES_URL` when set; otherwise
 *   `postgres://postgres@127.0.0.1:5432/postgres` when it answers; otherwise a throwaway server
 *   started from Debian's `postgresql` binaries in a temp dir on a free port, stopped and removed
 *   when the test file ends. `SVC_TEST_POSTGRES_URL=throwaway` skips the probe and starts one.
 *   When none of this works, `create()` fails and says what to install: never a silent skip.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { freeTcpPort } from '@svc/testkit';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import { afterAll } from 'vitest';
import {
  type Database,
  type DatabaseKind,
  migrationsFolder,
  type OpenDatabaseOptions,
  openDatabase,
} from '../../src/db/index.js';

const execFileAsync = promisify(execFile);

/** A migrated database of its own for one test; `dispose()` closes and deletes it. */
export interface TestDatabase {
  readonly database: Database;
  dispose(): Promise<void>;
}

/** Where an empty, never-migrated store can be opened with `openDatabase`; `dispose()` deletes it. */
export interface EmptyStore {
  readonly options: OpenDatabaseOptions;
  dispose(): Promise<void>;
}

/** One database engine the tests run against. */
export interface DatabaseBackend {
  readonly name: DatabaseKind;
  /** A fresh, migrated database. */
  create(): Promise<TestDatabase>;
  /** A fresh store with no tables, for tests of migrations and of reopening. */
  emptyStore(): Promise<EmptyStore>;
}

// ---------------------------------------------------------------------------------------------
// PGlite

let pgliteTemplate: Promise<Blob> | undefined;

/** Builds the migrated template once per test file. */
function migratedTemplate(): Promise<Blob> {
  pgliteTemplate ??= (async () => {
    const client = await PGlite.create({ dataDir: 'memory://' });
    try {
      await migrate(drizzle({ client }), { migrationsFolder });
      return await client.dumpDataDir('none');
    } finally {
      await client.close();
    }
  })();
  return pgliteTemplate;
}

const pgliteBackend: DatabaseBackend = {
  name: 'pglite',
  async create() {
    const database = await openDatabase({ dataDir: 'memory://', loadDataDir: await migratedTemplate() });
    return { database, dispose: () => database.close() };
  },
  async emptyStore() {
    const dir = await mkdtemp(join(tmpdir(), 'svc-test-pglite-'));
    return {
      options: { dataDir: join(dir, 'store') },
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  },
};

// ---------------------------------------------------------------------------------------------
// PostgreSQL

const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const INSTALL_HINT =
  'Install PostgreSQL with `apt-get install postgresql` (the tests then start a throwaway server), ' +
  'or set SVC_TEST_POSTGRES_URL to a server where the tests may create and drop databases.';

let postgresServer: Promise<string> | undefined;
let throwaway: ThrowawayPostgres | undefined;

// Registered when a test file imports this module: the throwaway server, if one was started, is
// stopped when the file's tests are done. Should the process die first, the server's supervisor
// sees its stdin close and stops it anyway (see `startThrowawayPostgres`).
afterAll(async () => {
  await throwaway?.stop();
  throwaway = undefined;
  postgresServer = undefined;
});

/**
 * The admin URL of the PostgreSQL server the tests use, found or started once per test file.
 * Tests that need a server-level URL (e.g. to name a database that does not exist) use it.
 */
export function postgresTestServerUrl(): Promise<string> {
  postgresServer ??= findPostgresServer();
  return postgresServer;
}

async function findPostgresServer(): Promise<string> {
  const configured = process.env.SVC_TEST_POSTGRES_URL;
  if (configured !== undefined && configured !== '' && configured !== 'throwaway') {
    const problem = await probe(configured);
    if (problem !== undefined) {
      throw new Error(
        `SVC_TEST_POSTGRES_URL does not answer: ${problem}. Start that server, or unset ` +
          'SVC_TEST_POSTGRES_URL to let the tests use 127.0.0.1:5432 or start their own.',
      );
    }
    return configured;
  }
  if (configured !== 'throwaway' && (await probe(DEFAULT_POSTGRES_URL)) === undefined) {
    return DEFAULT_POSTGRES_URL;
  }
  throwaway = await startThrowawayPostgres();
  return throwaway.url;
}

/** `undefined` when a connection to `url` works, else why not. */
async function probe(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message || err.name : String(err);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Runs `sql` on one short-lived admin connection to the server. */
async function admin(serverUrl: string, run: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}

/** Creates a database with a random name; returns its URL and how to drop it. */
async function createRandomDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = await postgresTestServerUrl();
  const name = `svc_test_${randomBytes(8).toString('hex')}`;
  await admin(serverUrl, (client) => client.query(`create database "${name}"`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () =>
      admin(serverUrl, async (client) => {
        await client.query(
          'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
          [name],
        );
        await client.query(`drop database if exists "${name}"`);
      }),
  };
}

const postgresBackend: DatabaseBackend = {
  name: 'postgres',
  async create() {
    const created = await createRandomDatabase();
    let database: Database;
    try {
      database = await openDatabase({ url: created.url });
    } catch (err) {
      await created.drop();
      throw err;
    }
    return {
      database,
      async dispose() {
        await database.close();
        await created.drop();
      },
    };
  },
  async emptyStore() {
    const created = await createRandomDatabase();
    return { options: { url: created.url }, dispose: () => created.drop() };
  },
};

// ---------------------------------------------------------------------------------------------
// Throwaway PostgreSQL server

interface ThrowawayPostgres {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * The supervisor of a throwaway server, run by `sh` as the server's user in its own temp dir. It
 * runs initdb, starts postgres, then waits for its stdin (a pipe from the test process) to close:
 * on `stop()`, or when the test process exits or is killed. Then it stops postgres (fast
 * shutdown), waits for it and deletes the dir. It also ends, deleting the dir, when initdb fails
 * or postgres exits on its own (e.g. the port was taken meanwhile).
 */
const SUPERVISOR = `
set -u
bin="$1"; dir="$2"; port="$3"
exec 3<&0 </dev/null
if ! "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync --no-locale -E UTF8 >/dev/null; then
  rm -rf "$dir"
  exit 1
fi
"$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 \\
  -c fsync=off -c synchronous_commit=off -c full_page_writes=off &
pg=$!
( cat <&3 >/dev/null; kill -INT "$pg" 2>/dev/null ) &
exec 3<&-
wait "$pg"
status=$?
rm -rf "$dir"
exit "$status"
`;

/** The newest PostgreSQL under /usr/lib/postgresql with both initdb and postgres, if any. */
async function findPostgresBin(): Promise<string | undefined> {
  let versions: string[];
  try {
    versions = await readdir('/usr/lib/postgresql');
  } catch {
    return undefined;
  }
  versions.sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = join('/usr/lib/postgresql', version, 'bin');
    const entries = await readdir(bin).catch(() => [] as string[]);
    if (entries.includes('initdb') && entries.includes('postgres')) return bin;
  }
  return undefined;
}

/** The uid and gid to run the server as: `postgres` when we are root (initdb refuses root). */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', 'postgres']),
      execFileAsync('id', ['-g', 'postgres']),
    ]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch (err) {
    throw new Error(`Running as root, but there is no postgres user to run PostgreSQL as. ${INSTALL_HINT}`, {
      cause: err,
    });
  }
}

async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const bin = await findPostgresBin();
  if (bin === undefined) {
    throw new Error(
      `No PostgreSQL server answers at ${DEFAULT_POSTGRES_URL} and no PostgreSQL binaries were found ` +
        `under /usr/lib/postgresql/*/bin. ${INSTALL_HINT}`,
    );
  }
  const user = await serverUser();
  // A port free a moment ago can be taken before postgres binds it: try again on another.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const dir = await mkdtemp(join(tmpdir(), 'svc-test-pg-'));
    try {
      if (user !== undefined) await chown(dir, user.uid, user.gid);
      return await superviseServer(bin, dir, await freeTcpPort());
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      lastError = err;
      if (!(err instanceof PortTakenError)) break;
    }
  }
  throw lastError;
}

/** Postgres could not bind the port it was given. */
class PortTakenError extends Error {}

/** Starts the supervisor and resolves once postgres accepts connections on `port`. */
function superviseServer(bin: string, dir: string, port: number): Promise<ThrowawayPostgres> {
  const supervisorArgs = ['-c', SUPERVISOR, 'sh', bin, dir, String(port)];
  const [command, args] =
    process.getuid?.() === 0
      ? ['runuser', ['-u', 'postgres', '--', 'sh', ...supervisorArgs]]
      : ['sh', supervisorArgs];
  // Detached: a Ctrl-C meant for the test run must not kill the supervisor before it cleans up.
  const child = spawn(command, args, {
    stdio: ['pipe', 'ignore', 'pipe'],
    detached: true,
    env: { ...process.env, LC_ALL: 'C' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let log = '';
  return new Promise<ThrowawayPostgres>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      log += chunk.toString('utf8');
      if (!log.includes('database system is ready to accept connections')) return;
      child.off('exit', onEarlyExit);
      child.stderr.off('data', onData);
      // Keep draining the log unread, but do not hold the test process open: its exit closes
      // the supervisor's stdin, which stops the server.
      child.stderr.resume();
      child.unref();
      for (const stream of [child.stdin, child.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
      resolve({
        url: `postgres://postgres@127.0.0.1:${port}/postgres`,
        async stop() {
          child.stdin.end();
          await exited;
        },
      });
    };
    const onEarlyExit = (code: number | null): void => {
      const message = `A throwaway PostgreSQL on 127.0.0.1:${port} ended (exit ${code}) before accepting connections:\n${log.trim()}`;
      reject(log.includes('could not bind') ? new PortTakenError(message) : new Error(message));
    };
    child.stderr.on('data', onData);
    child.once('exit', onEarlyExit);
    child.once('error', (err) => reject(new Error(`Cannot start a throwaway PostgreSQL: ${err.message}`)));
  });
}

/** Both engines, for `describe.each(databaseBackends)`. */
export const databaseBackends: readonly DatabaseBackend[] = [pgliteBackend, postgresBackend];

/** The rows of a raw `db.execute()`; both drivers answer `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

/**
 * The SHA-256 of a secret in hex, as the database keeps tokens and keys; written here so the
 * tests do not reuse the code under test.
 */
export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
