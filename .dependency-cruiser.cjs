/**
 * The layering rules of docs/architecture.md ("Packages and layers"), checked by `npm test`
 * (stage "layering"; alone: `npm run layering`).
 *
 * Workspace packages resolve through their `exports` map with the `source` condition (the
 * `customConditions` of tsconfig.base.json), so `@svc/wire` is `packages/wire/src/index.ts` and a
 * subpath the map does not export does not resolve at all. ADR 0016 says why; the table in
 * docs/architecture.md and MAY_IMPORT below change together.
 */

const { readFileSync } = require('node:fs');
const { join } = require('node:path');

/**
 * What each package's `src/` may import of ours, by layer (docs/architecture.md). `testkit` is
 * not listed: a test tool may import any package.
 */
const MAY_IMPORT = {
  // layer 0
  runtime: [],
  // layer 1
  wire: ['runtime'],
  'udp-batch': ['runtime'],
  // layer 2
  media: ['runtime', 'wire', 'udp-batch'],
  qos: ['runtime', 'wire'],
  // layer 3
  transport: ['runtime', 'wire', 'udp-batch'],
  // layer 4
  svcd: ['runtime', 'wire', 'media', 'qos', 'transport'],
  pilot: ['runtime', 'wire', 'qos'],
  cloud: ['runtime', 'wire', 'udp-batch', 'qos'],
  // layer 5
  console: ['runtime', 'wire', 'qos', 'pilot'],
  // test tool, and a process of its own
  shaper: ['runtime'],
};

/** The test tools: test code imports them, no package's `src/` does (except testkit's own). */
const TEST_TOOLS = ['testkit', 'shaper'];

const baseConfig = JSON.parse(readFileSync(join(__dirname, 'tsconfig.base.json'), 'utf8'));
/** `source` first: a workspace package resolves to its TypeScript sources, as in tsc and vitest. */
const conditionNames = [
  ...baseConfig.compilerOptions.customConditions,
  'import',
  'require',
  'node',
  'default',
];

const layerRules = Object.entries(MAY_IMPORT).map(([name, allowed]) => ({
  name: `layer-${name}`,
  severity: 'error',
  comment:
    `@svc/${name} may import ${allowed.length === 0 ? 'no package of ours' : allowed.map((a) => `@svc/${a}`).join(', ')} ` +
    '(the layer table in docs/architecture.md): a lower layer never imports a higher one.',
  from: { path: `^packages/${name}/src/` },
  to: {
    path: '^packages/[^/]+/',
    pathNot: `^packages/(${[name, ...allowed, ...TEST_TOOLS].join('|')})/`,
  },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-test-tools-in-src',
      severity: 'error',
      comment: `${TEST_TOOLS.map((t) => `@svc/${t}`).join(' and ')} are test tools: only tests, benchmarks and scripts import them, never a package's src/.`,
      from: { path: '^packages/([^/]+)/src/', pathNot: '^packages/testkit/src/' },
      to: { path: `^packages/(${TEST_TOOLS.join('|')})/`, pathNot: '^packages/$1/' },
    },
    {
      name: 'no-relative-path-into-another-package',
      severity: 'error',
      comment:
        "A package is imported by its name and exports map (@svc/<name> or a declared subpath), never by a relative path into another package's folder.",
      from: { path: '^packages/([^/]+)/' },
      to: {
        path: '^packages/',
        pathNot: '^packages/$1/',
        dependencyTypes: ['local'],
        dependencyTypesNot: ['aliased-workspace'],
      },
    },
    {
      name: 'no-relative-path-into-a-package',
      severity: 'error',
      comment:
        'Scripts and benchmarks import a package by its name and exports map (@svc/<name>), never by a relative path into packages/.',
      from: { path: '^(scripts|bench)/' },
      to: { path: '^packages/', dependencyTypes: ['local'], dependencyTypesNot: ['aliased-workspace'] },
    },
    {
      name: 'no-unexported-subpath',
      severity: 'error',
      comment:
        "@svc/<name>/src/... and other subpaths missing from the package's exports map do not resolve: import @svc/<name> or a subpath its package.json exports.",
      from: {},
      to: { path: '^@svc/', couldNotResolve: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'This import resolves to no file: a typo, a missing dependency, or a file not yet written.',
      from: {},
      to: { pathNot: '^@svc/', couldNotResolve: true },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'Modules that import each other at run time (directly or through others) form a cycle: move the shared part into a module both import. ' +
        '(A cycle with an `import type` in it is erased by the compiler and allowed.)',
      from: {},
      to: {
        circular: true,
        dependencyTypesNot: ['type-only'],
        viaOnly: { dependencyTypesNot: ['type-only'] },
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|dist-test)/|\\.d\\.ts$' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames,
      mainFields: ['module', 'main'],
    },
    tsConfig: { fileName: 'tsconfig.base.json' },
  },
};
