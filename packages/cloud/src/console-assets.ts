/**
 * The browser pages `svc-cloud` serves: the console (`/console/`) and the plain pilot page
 * (`/pilot/`), as static files from a build made ahead of time by `@svc/console`
 * (`npm run build -w @svc/console`, run by `npm start` and `npm test`). The service never reads
 * or bundles the pages' sources.
 *
 * The build's folder holds one subfolder per page, named after its URL path:
 * `console/index.html` and `pilot/index.html` with the scripts and styles they load, whose names
 * carry a hash of their content (`assets/index-<hash>.js`, `pilot-<hash>.js`), so browsers may keep
 * those for good.
 *
 * @packageDocumentation
 */
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** Path the console is served under. */
export const CONSOLE_PATH = '/console';
/** Path the plain pilot page is served under. */
export const PILOT_PATH = '/pilot';

/** The variable naming the folder of the pages' build (docs/cloud.md). */
export const CONSOLE_DIR_VARIABLE = 'SVC_CONSOLE_DIR';
/** The conventional folder of the build, `packages/console/dist` (the same path from `src/` and `dist/`). */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../console/dist', import.meta.url));
/** The command that builds the pages, named where they are missing. */
export const CONSOLE_BUILD_COMMAND = 'npm run build -w @svc/console';

/** Options of {@link consoleRoutes}. */
export interface ConsoleRoutesOptions {
  /** Folder of the build (default: {@link consoleDir} of the process's environment). */
  readonly dir?: string;
}

/**
 * Headers of every page and file. The policy allows scripts from this origin only, plus the
 * compilation of WebAssembly (`'wasm-unsafe-eval'`: the Reed-Solomon SIMD kernel), and never
 * `eval` of JavaScript; inline styles for the pages' and the custom elements' own `<style>`;
 * connections anywhere (WebTransport goes straight to the robot's candidates).
 */
const security = {
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; connect-src *; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * A file whose name carries its content's hash never changes: esbuild's (`pilot-HBJWRNVC.js`) and
 * Vite's (`assets/index-CV16bZW1.js`).
 */
const HASHED_NAME = /-[A-Za-z0-9_-]{8}\.[a-z0-9]+$/;

/**
 * The folder of the pages' build: `SVC_CONSOLE_DIR` (relative to the working directory) when
 * set, else {@link DEFAULT_CONSOLE_DIR}.
 *
 * @throws TypeError when `SVC_CONSOLE_DIR` is set but empty
 */
export function consoleDir(env: NodeJS.ProcessEnv = process.env): string {
  const value = env[CONSOLE_DIR_VARIABLE];
  if (value === undefined) return DEFAULT_CONSOLE_DIR;
  if (value.trim() === '') {
    throw new TypeError(
      `${CONSOLE_DIR_VARIABLE} is empty: unset it to use ${DEFAULT_CONSOLE_DIR}, or name the folder of a build`,
    );
  }
  return resolve(value);
}

/**
 * Serves the console at `/console/` and the plain pilot page at `/pilot/` from the build in
 * `options.dir`. Without a build there, it logs a warning once and both pages answer 503 naming
 * {@link CONSOLE_BUILD_COMMAND}, until the build appears.
 *
 * @throws TypeError when `SVC_CONSOLE_DIR` is set but empty (see {@link consoleDir})
 */
export function consoleRoutes(app: FastifyInstance, options: ConsoleRoutesOptions = {}): void {
  const dir = resolve(options.dir ?? consoleDir());
  const pages = [CONSOLE_PATH, PILOT_PATH];
  const missing = pages.filter((base) => !existsSync(join(dir, base, 'index.html')));
  if (missing.length > 0) {
    app.log.warn(
      { dir, missing },
      `the console pages are not built: ${missing.map((m) => `${m}/`).join(' and ')} will answer 503 until ` +
        `"${CONSOLE_BUILD_COMMAND}" writes them to ${dir} (or ${CONSOLE_DIR_VARIABLE} names a build)`,
    );
  }
  for (const base of pages) servePage(app, base, join(dir, base));
}

/** One page's folder under `<base>/`, `index.html` at `<base>/`. */
function servePage(app: FastifyInstance, base: string, root: string): void {
  app.get(base, { schema: { hide: true } }, async (_request, reply) => reply.redirect(`${base}/`));
  app.get<{ Params: { '*': string } }>(`${base}/*`, { schema: { hide: true } }, async (request, reply) => {
    const name = request.params['*'] === '' ? 'index.html' : request.params['*'];
    const file = fileWithin(root, name);
    if (file === undefined) return notFound(reply);
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(file);
    } catch {
      return existsSync(root) ? notFound(reply) : notBuilt(reply, base);
    }
    if (!info.isFile()) return notFound(reply);
    const etag = `W/"${info.size.toString(16)}-${Math.trunc(info.mtimeMs).toString(16)}"`;
    reply.headers({
      ...security,
      'cache-control': HASHED_NAME.test(name) ? 'public, max-age=31536000, immutable' : 'no-cache',
      etag,
    });
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply
      .type(CONTENT_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream')
      .send(await readFile(file));
  });
}

/**
 * `root/name` when `name` is a plain relative path inside `root`; `undefined` for anything that
 * could leave it (`..`, `.`, empty segments, backslashes, NUL) or name a hidden file.
 */
function fileWithin(root: string, name: string): string | undefined {
  const segments = name.split('/');
  const plain = segments.every(
    (s) => s !== '' && !s.startsWith('.') && !s.includes('\\') && !s.includes('\0'),
  );
  if (!plain) return undefined;
  const file = join(root, ...segments);
  return file.startsWith(root + sep) ? file : undefined;
}

/** The app's own 404 (its not-found handler), as for any unknown path. */
function notFound(reply: FastifyReply): FastifyReply {
  reply.callNotFound();
  return reply;
}

function notBuilt(reply: FastifyReply, base: string): FastifyReply {
  return reply
    .code(503)
    .headers({ ...security, 'cache-control': 'no-store' })
    .type('text/plain; charset=utf-8')
    .send(
      `The page ${base}/ is not built on this server. Build it with "${CONSOLE_BUILD_COMMAND}" ` +
        `(npm start and npm test run it), or set ${CONSOLE_DIR_VARIABLE} to the folder of a build, then reload.\n`,
    );
}
