/**
 * `npm run bench -- <suite>`: runs `bench/suites/<suite>.ts`, prints one line per figure and writes
 * `bench/results/<suite>.json` (the array of figures) and `<suite>.conditions.json` (machine,
 * versions, parameters). Benchmarks measure; they never assert.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResult, BenchSuite } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));

async function main(): Promise<void> {
  const available = (await readdir(path.join(here, 'suites')))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('-page.ts')) // *-page.ts run in the browser
    .map((f) => f.slice(0, -3));
  const name = process.argv[2];
  if (name === undefined || !available.includes(name)) {
    console.error(`usage: npm run bench -- <suite>   (suites: ${available.join(', ')})`);
    process.exit(2);
  }
  const { suite } = (await import(`./suites/${name}.ts`)) as { suite: BenchSuite };
  console.log(`bench ${name}: ${suite.description}`);
  const results: BenchResult[] = [];
  const started = new Date();
  await suite.run((result) => {
    results.push(result);
    const better = result.better === 'higher' ? '↑' : '↓';
    console.log(
      `  ${result.name.padEnd(64)} ${formatValue(result.value).padStart(10)} ${result.unit} ${better}`,
    );
  });
  const conditions = {
    suite: name,
    started: started.toISOString(),
    seconds: (Date.now() - started.getTime()) / 1000,
    machine: {
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.cpus().length,
      memoryBytes: os.totalmem(),
      arch: process.arch,
    },
    versions: { node: process.versions.node, v8: process.versions.v8, os: `${os.type()} ${os.release()}` },
    parameters: suite.parameters,
  };
  const dir = path.join(here, 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(path.join(dir, `${name}.conditions.json`), `${JSON.stringify(conditions, null, 2)}\n`);
  console.log(`wrote bench/results/${name}.json and ${name}.conditions.json`);
}

function formatValue(value: number): string {
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(2);
}

await main();
