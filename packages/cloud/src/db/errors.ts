import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link DatabaseError}. Callers branch on `code`, never on the message.
 *
 * - `invalid-url`: the database URL cannot be parsed or is not `postgres://` / `postgresql://`.
 * - `database-unreachable`: no PostgreSQL server answered at the URL's host and port.
 * - `database-rejected`: the server answered but refused the connection (wrong user or password,
 *   no such database, too many connections).
 * - `data-dir-unusable`: the embedded PGlite store could not be created or opened in its data dir.
 * - `migration-failed`: applying the schema migrations failed; the database is left as it was.
 */
export type DatabaseErrorCode =
  | 'invalid-url'
  | 'database-unreachable'
  | 'database-rejected'
  | 'data-dir-unusable'
  | 'migration-failed';

/** The error of the database layer: a bad database setting, or a database that cannot be used. */
export class DatabaseError extends CodedError<DatabaseErrorCode> {
  override readonly name = 'DatabaseError';
}

/** True when `err` is a {@link DatabaseError}, optionally with the given code. */
export const isDatabaseError = codedErrorGuard(DatabaseError);
