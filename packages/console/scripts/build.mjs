#!/usr/bin/env node
/**
 * Builds the browser pages `svc-cloud` serves into `packages/console/dist` (not committed):
 *
 *   dist/console/index.html, dist/console/assets/*-<hash>.{js,css}   the console (React), at /console/
 *   dist/pilot/index.html,   dist/pilot/pilot-<hash>.js              the plain pilot page, at /pilot/
 *   dist/build.json                                                   what the build read, for the skip below
 *
 * The console is a React app built by Vite (`vite.config.mjs`); the plain pilot page's one script is
 * bundled by esbuild. Both read the workspace's TypeScript sources (the `source` export condition).
 * A script's name carries a hash of its content, so the server lets browsers keep it for good; the
 * page names it. The build is skipped when every file it read last time (sources, HTML, this
 * script, the installed packages) is older than its output.
 *
 * Usage: node packages/console/scripts/build.mjs [--force]   (`npm run build -w @svc/console`)
 */
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoDir = resolve(packageDir, '../..');
const distDir = join(packageDir, 'dist');
const stampFile = join(distDir, 'build.json');

/** The esbuild pages: folder under dist/ (the URL path), HTML, and the script the HTML loads. */
const PAGES = [{ dir: 'pilot', html: 'src/pilot.html', entry: 'src/pilot.ts', script: 'pilot' }];

/** Inputs that the bundlers do not report: the pages, the scripts, and the install (npm keeps old mtimes). */
const EXTRA_INPUTS = [
  ...PAGES.map((page) => join(packageDir, page.html)),
  fileURLToPath(import.meta.url),
  join(packageDir, 'scripts/vite.config.mjs'),
  join(packageDir, 'src/console/index.html'),
  join(repoDir, 'node_modules/.package-lock.json'),
];

/** Newest modification time of `files` in ms, or `Infinity` when one is missing. */
async function newestMtime(files) {
  let newest = 0;
  for (const file of files) {
    try {
      newest = Math.max(newest, (await stat(file)).mtimeMs);
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  }
  return newest;
}

/** True when the last build's output exists and is newer than everything it was built from. */
async function upToDate() {
  let stamp;
  try {
    stamp = JSON.parse(await readFile(stampFile, 'utf8'));
  } catch {
    return false;
  }
  const outputs = stamp.outputs.map((file) => join(distDir, file));
  const inputs = stamp.inputs.map((file) => join(repoDir, file));
  // An input changed after the build began may not be in its output.
  return (
    (await newestMtime(outputs)) <= (await stat(stampFile)).mtimeMs &&
    (await newestMtime(inputs)) < stamp.startedAt
  );
}

/** Builds the console with Vite into `outDir/console`; returns the files written and read (absolute). */
async function buildConsole(outDir) {
  // Vite builds React for whatever NODE_ENV says (vitest's global setup runs this with `test`):
  // the pages svc-cloud serves are always the production build.
  process.env.NODE_ENV = 'production';
  const { build } = await import('vite');
  const { consoleViteConfig } = await import('./vite.config.mjs');
  const read = new Set();
  const written = [];
  await build({
    ...consoleViteConfig(),
    configFile: false,
    logLevel: 'warn',
    build: { ...consoleViteConfig().build, outDir: join(outDir, 'console'), emptyOutDir: true },
    plugins: [
      ...consoleViteConfig().plugins,
      {
        name: 'svc-build-inputs',
        // Every file the bundle was made from, for the up-to-date check.
        moduleParsed(info) {
          if (info.id.startsWith('/') && !info.id.includes('\0')) read.add(info.id.split('?')[0]);
        },
        writeBundle(_options, bundle) {
          for (const name of Object.keys(bundle)) written.push(join('console', name));
        },
      },
    ],
  });
  return { outputs: written, inputs: [...read] };
}

/** Bundles every page into `outDir`; returns the files written and read, relative to their roots. */
async function buildInto(outDir) {
  const consoleBuild = await buildConsole(outDir);
  // Loaded only when building: the up-to-date check stays quick.
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: packageDir,
    entryPoints: PAGES.map((page) => ({ in: page.entry, out: `${page.dir}/${page.script}` })),
    entryNames: '[dir]/[name]-[hash]',
    outdir: outDir,
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    conditions: ['source'],
    minify: true,
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = [...consoleBuild.outputs];
  for (const page of PAGES) {
    const entry = join(packageDir, page.entry);
    const output = Object.entries(result.metafile.outputs).find(
      ([, meta]) => meta.entryPoint !== undefined && join(packageDir, meta.entryPoint) === entry,
    );
    if (output === undefined) throw new Error(`esbuild wrote no script for ${page.entry}`);
    const scriptFile = relative(outDir, join(packageDir, output[0]));
    const html = await readFile(join(packageDir, page.html), 'utf8');
    const reference = `src="./${page.script}.js"`;
    if (html.split(reference).length !== 2) {
      throw new Error(`${page.html} must load its script exactly once as ${reference}`);
    }
    const pageFile = join(page.dir, 'index.html');
    await writeFile(
      join(outDir, pageFile),
      html.replace(reference, `src="./${scriptFile.slice(page.dir.length + 1)}"`),
    );
    outputs.push(pageFile, scriptFile);
  }
  const inputs = [
    ...new Set([
      ...Object.keys(result.metafile.inputs).map((file) => join(packageDir, file)),
      ...consoleBuild.inputs,
      ...EXTRA_INPUTS,
    ]),
  ].map((file) => relative(repoDir, file));
  return { outputs, inputs };
}

/**
 * Builds the pages into `packages/console/dist` unless they are up to date (or `force`).
 * The new folder replaces the old one in one rename, so a running server never reads half a build.
 *
 * @returns whether a build ran, and the folder
 * @throws Error when esbuild fails or a page does not load its script as expected
 */
export async function buildPages({ force = false } = {}) {
  if (!force && (await upToDate())) return { built: false, dir: distDir };
  const startedAt = Date.now();
  // Beside dist/ on the same file system (for the rename), in a folder git ignores even when a
  // build is killed half-way.
  const staging = join(packageDir, 'node_modules/.cache', `pages-building-${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    const { outputs, inputs } = await buildInto(staging);
    await writeFile(
      join(staging, 'build.json'),
      `${JSON.stringify({ startedAt, outputs, inputs }, null, 2)}\n`,
    );
    await rm(distDir, { recursive: true, force: true });
    await rename(staging, distDir);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    // Another build finished first between our rm and rename: its output is as good as ours.
    if (err?.code === 'ENOTEMPTY' || err?.code === 'EEXIST') return { built: false, dir: distDir };
    throw err;
  }
  return { built: true, dir: distDir };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  try {
    const { built, dir } = await buildPages({ force: process.argv.includes('--force') });
    const where = relative(process.cwd(), dir) || '.';
    console.log(
      built
        ? `console pages built in ${where} (${Math.round(performance.now() - started)} ms)`
        : `console pages up to date in ${where}`,
    );
  } catch (err) {
    console.error(`console pages: build failed: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
}
