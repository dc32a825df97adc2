import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { FastifyInstance } from 'fastify';

/** Path the console is served under. */
export const CONSOLE_PATH = '/console';

/**
 * Serves the console: its page at `/console/` and its script, bundled from `@svc/console`'s
 * TypeScript source once, on first request.
 */
export function consoleRoutes(app: FastifyInstance): void {
  let script: Promise<string> | undefined;
  let page: Promise<string> | undefined;
  const bundle = async (): Promise<string> => {
    const entry = fileURLToPath(import.meta.resolve('@svc/console/app'));
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      format: 'esm',
      target: 'es2022',
      minify: true,
      write: false,
      logLevel: 'silent',
    });
    return result.outputFiles[0]!.text;
  };
  const html = () => readFile(fileURLToPath(import.meta.resolve('@svc/console/index.html')), 'utf8');
  const security = {
    'content-security-policy':
      "default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src *; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  app.get(CONSOLE_PATH, { schema: { hide: true } }, async (_request, reply) =>
    reply.redirect(`${CONSOLE_PATH}/`),
  );
  app.get(`${CONSOLE_PATH}/`, { schema: { hide: true } }, async (_request, reply) => {
    page ??= html();
    return reply
      .headers({ ...security, 'cache-control': 'no-store' })
      .type('text/html; charset=utf-8')
      .send(await page);
  });
  app.get(`${CONSOLE_PATH}/app.js`, { schema: { hide: true } }, async (_request, reply) => {
    if (script === undefined) {
      script = bundle();
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
