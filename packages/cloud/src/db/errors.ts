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
export class DatabaseError extends Error {
  override readonly name = 'DatabaseError';
  readonly code: DatabaseErrorCode;

  constructor(code: DatabaseErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** True when `err` is a {@link DatabaseError}, optionally with the given code. */
export function isDatabaseError(err: unknown, code?: DatabaseErrorCode): err is DatabaseError {
  return err instanceof DatabaseError && (code === undefined || err.code === code);
}

/** Query parameters of a PostgreSQL URL that carry secrets. */
export const SECRET_URL_PARAMS: readonly string[] = ['password', 'sslpassword'];

/**
 * `url` with its password (and `password` / `sslpassword` query parameters) replaced by `***`,
 * safe for messages and logs. Text that does not parse as a URL still has anything between
 * `//user:` and `@` masked.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    for (const key of SECRET_URL_PARAMS) {
      if (parsed.searchParams.has(key)) parsed.searchParams.set(key, '***');
    }
    return parsed.toString();
  } catch {
    return url.replace(/(\/\/[^/:@]*:)[^@/]*@/, '$1***@');
  }
}
