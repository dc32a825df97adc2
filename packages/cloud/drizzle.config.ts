/**
 * drizzle-kit configuration for the svc-cloud schema.
 *
 * drizzle-kit resolves `schema` and `out` from the working directory, so run it from this
 * package: `cd packages/cloud && npx drizzle-kit generate` (or `npm run db:generate -w @svc/cloud`
 * from the repository root). It writes a new numbered SQL file and updates `drizzle/meta/`;
 * commit both. Never edit a migration that has been committed: add a new one.
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './drizzle',
  strict: true,
  verbose: true,
});
