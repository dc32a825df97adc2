import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { FastifyInstance } from 'fastify';

/** Path the console is served under. */
export const CONSOLE_PATH = '/console';
/** Path the plain pilot page is served under. */
export const PILOT_PATH = '/pilot';

const security = {
  'content-security-policy':
    "default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src *; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * Serves the console (`/console/`) and the plain pilot page (`/pilot/`): each an HTML page and a
 * script bundled from `@svc/console`'s TypeScript source once, on first request.
 */
export function consoleRoutes(app: FastifyInstance): void {
  page(app, CONSOLE_PATH, '@svc/console/index.html', 'app.js', '@svc/console/app');
  page(app, PILOT_PATH, '@svc/console/pilot.html', 'pilot.js', '@svc/console/pilot');
}

/** Bundles `specifier` for the browser (the workspace's TypeScript sources, minified). */
async function bundle(specifier: string): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(import.meta.resolve(specifier))],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    conditions: ['source'],
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

/** One page at `<base>/` with its script at `<base>/<scriptName>`. */
function page(
  app: FastifyInstance,
  base: string,
  htmlSpecifier: string,
  scriptName: string,
  scriptSpecifier: string,
): void {
  let script: Promise<string> | undefined;
  let html: Promise<string> | undefined;
  app.get(base, { schema: { hide: true } }, async (_request, reply) => reply.redirect(`${base}/`));
  app.get(`${base}/`, { schema: { hide: true } }, async (_request, reply) => {
    html ??= readFile(fileURLToPath(import.meta.resolve(htmlSpecifier)), 'utf8');
    return reply
      .headers({ ...security, 'cache-control': 'no-store' })
      .type('text/html; charset=utf-8')
      .send(await html);
  });
  app.get(`${base}/${scriptName}`, { schema: { hide: true } }, async (_request, reply) => {
    if (script === undefined) {
      script = bundle(scriptSpecifier);
      // A failed bundle is tried again on the next request.
      script.catch(() => {
        script = undefined;
      });
    }
    return reply
      .headers(security)
      .type('text/javascript; charset=utf-8')
      .send(await script);
  });
}
