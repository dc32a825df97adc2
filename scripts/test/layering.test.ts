/**
 * The layering check of `npm test` (`.dependency-cruiser.cjs`) run on a small workspace in a
 * temporary folder, with one import of each forbidden kind and allowed ones beside them: each bad
 * import must be reported under its rule, and nothing else, so the rule set cannot silently stop
 * working (a typo in a path pattern, a resolution change that hides the workspace packages).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const config = path.join(root, '.dependency-cruiser.cjs');
/** The CLI `npm test` runs: `bin/dependency-cruise.mjs` beside the package's `src/main/index.mjs`. */
const cli = fileURLToPath(
  new URL('../../bin/dependency-cruise.mjs', import.meta.resolve('dependency-cruiser')),
);

/** The fixture's files: package name to its `src/` files and their contents. */
const PACKAGES: Record<string, Record<string, string>> = {
  runtime: { 'index.ts': 'export const clock = 1;\n' },
  // Allowed: wire on runtime. Forbidden: wire on qos, a higher layer.
  wire: {
    'index.ts': "import { clock } from '@svc/runtime';\nexport const wire = clock;\n",
    'upward.ts': "import { qos } from '@svc/qos';\nexport const up = qos;\n",
  },
  // Allowed: qos on wire and runtime, a cycle of type imports. Forbidden: a cycle at run time.
  qos: {
    'types-a.ts': "import type { B } from './types-b.js';\nexport interface A { readonly b?: B }\n",
    'types-b.ts': "import type { A } from './types-a.js';\nexport interface B { readonly a?: A }\n",
    'index.ts': "import { wire } from '@svc/wire';\nexport { a } from './a.js';\nexport const qos = wire;\n",
    'a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
    'b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
  },
  // Forbidden: a relative path into another package's src/.
  media: { 'index.ts': "import { wire } from '../../wire/src/index.js';\nexport const media = wire;\n" },
  // Forbidden: a subpath the exports map does not declare.
  cloud: { 'index.ts': "import { wire } from '@svc/wire/src/index.js';\nexport const cloud = wire;\n" },
  // Forbidden: a test tool in src/ (allowed in test/, below).
  svcd: { 'index.ts': "import { tool } from '@svc/testkit';\nexport const svcd = tool;\n" },
  testkit: { 'index.ts': "import { wire } from '@svc/wire';\nexport const tool = wire;\n" },
};

const EXTRA_FILES: Record<string, string> = {
  'packages/svcd/test/svcd.test.ts': "import { tool } from '@svc/testkit';\nexport const t = tool;\n",
  // Forbidden: a script reaching into a package by a relative path.
  'scripts/demo.ts': "import { wire } from '../packages/wire/src/index.js';\nexport const demo = wire;\n",
};

describe('the layering check (dependency-cruiser)', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-layering-'));
    const write = async (file: string, text: string) => {
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await writeFile(path.join(dir, file), text);
    };
    await write(
      'package.json',
      JSON.stringify({ name: 'fixture', private: true, type: 'module', workspaces: ['packages/*'] }),
    );
    await write(
      'tsconfig.base.json',
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', customConditions: ['source'] },
      }),
    );
    for (const [name, files] of Object.entries(PACKAGES)) {
      const exports = { '.': { source: './src/index.ts', default: './dist/index.js' } };
      await write(
        `packages/${name}/package.json`,
        JSON.stringify({ name: `@svc/${name}`, type: 'module', exports }),
      );
      for (const [file, text] of Object.entries(files)) await write(`packages/${name}/src/${file}`, text);
      // What npm's workspaces do: a link per package under node_modules/@svc.
      await mkdir(path.join(dir, 'node_modules/@svc'), { recursive: true });
      await symlink(path.join(dir, 'packages', name), path.join(dir, 'node_modules/@svc', name), 'dir');
    }
    for (const [file, text] of Object.entries(EXTRA_FILES)) await write(file, text);
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reports each forbidden import under its rule, and no allowed one', async () => {
    const outcome = await run(
      process.execPath,
      [cli, '--config', config, '--output-type', 'err', 'packages', 'scripts'],
      { cwd: dir, maxBuffer: 16 * 1024 * 1024 },
    ).catch((err: { stdout?: string; code?: number }) => err);
    // The command fails with one exit code per error: that is what fails `npm test`.
    expect(outcome).toMatchObject({ code: 6 });
    const report = (outcome as { stdout: string }).stdout;
    const found = report
      .split(/^\s*error /m)
      .slice(1)
      .map((block) =>
        block
          .split(/\n\s*\n/)[0]!
          .replace(/\s*→\s*/g, ' -> ')
          .trim(),
      )
      .sort();
    expect(found).toEqual(
      [
        'layer-wire: packages/wire/src/upward.ts -> packages/qos/src/index.ts',
        'no-circular: packages/qos/src/a.ts -> packages/qos/src/b.ts -> packages/qos/src/a.ts',
        'no-relative-path-into-another-package: packages/media/src/index.ts -> packages/wire/src/index.ts',
        'no-unexported-subpath: packages/cloud/src/index.ts -> @svc/wire/src/index.js',
        'no-test-tools-in-src: packages/svcd/src/index.ts -> packages/testkit/src/index.ts',
        'no-relative-path-into-a-package: scripts/demo.ts -> packages/wire/src/index.ts',
      ].sort(),
    );
  });
});
