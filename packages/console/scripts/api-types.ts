/**
 * The console's API types, made from svc-cloud's OpenAPI document: `npm run api:types -w
 * @svc/console` builds svc-cloud's app in this process (on a throwaway in-memory database, no
 * listening), reads `/api/v1/openapi.json` with `inject()`, turns it into TypeScript with
 * openapi-typescript and formats it with Biome, so the same API gives the same bytes. The result,
 * `src/console/api/schema.d.ts`, is committed; `test/api-types.test.ts` fails when it is stale.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp, loadCloudConfig, noInvitationProvider, OidcVerifier } from '@svc/cloud';
import { openDatabase } from '@svc/cloud/db';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repositoryDir = resolve(packageDir, '../..');

/** The generated file. */
export const API_TYPES_PATH = join(packageDir, 'src/console/api/schema.d.ts');

/** The command that writes {@link API_TYPES_PATH}. */
export const API_TYPES_COMMAND = 'npm run api:types -w @svc/console';

/** svc-cloud's OpenAPI document, from its app built in this process. */
export async function openApiDocument(): Promise<OpenAPI3> {
  // Fixed values, so the document (its `servers`, its issuer) never depends on the environment.
  const config = loadCloudConfig({
    SVC_OIDC_ISSUER: 'https://issuer.invalid',
    SVC_OIDC_AUDIENCE: 'https://api.invalid',
    SVC_OIDC_CLIENT_ID: 'console',
    SVC_PUBLIC_URL: 'http://127.0.0.1:8080',
  });
  const database = await openDatabase({ dataDir: 'memory://' });
  try {
    const app = await buildApp({
      config,
      database,
      // Never asked: reading the document needs no credential.
      verifier: new OidcVerifier({
        issuer: config.identity.issuer,
        audience: config.identity.audience,
        clientId: config.identity.clientId,
      }),
      invitationProvider: noInvitationProvider,
      mail: { async send() {} },
      logger: false,
    });
    try {
      const response = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
      if (response.statusCode !== 200) {
        throw new Error(`GET /api/v1/openapi.json answered ${response.statusCode}: ${response.body}`);
      }
      return response.json() as OpenAPI3;
    } finally {
      await app.close();
    }
  } finally {
    await database.close();
  }
}

/** The text of {@link API_TYPES_PATH} for svc-cloud's current API. */
export async function generateApiTypes(): Promise<string> {
  const document = await openApiDocument();
  const ast = await openapiTS(document, { alphabetize: false });
  return biomeFormat(astToString(ast), API_TYPES_PATH);
}

/** `text` as Biome formats it for `path` (the repository's biome.json applies). */
function biomeFormat(text: string, path: string): Promise<string> {
  const biome = join(repositoryDir, 'node_modules/.bin/biome');
  return new Promise((resolveText, reject) => {
    const child = execFile(
      biome,
      ['format', `--stdin-file-path=${relative(repositoryDir, path)}`],
      { cwd: repositoryDir, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err !== null) reject(new Error(`biome format failed: ${stderr || err.message}`, { cause: err }));
        else resolveText(stdout);
      },
    );
    child.stdin?.end(text);
  });
}

/** Writes {@link API_TYPES_PATH}. */
async function main(): Promise<void> {
  const text = await generateApiTypes();
  await writeFile(API_TYPES_PATH, text);
  console.log(`wrote ${relative(process.cwd(), API_TYPES_PATH)}`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
