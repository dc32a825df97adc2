import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('npm start (the README quick start)', () => {
  it('streams frames over loopback UDP through a lossy link and reports them delivered', async () => {
    const { stdout } = await run('bash', ['scripts/start.sh', '--frames', '45', '--loss', '0.05'], {
      cwd: root,
    });
    expect(stdout).toContain('link loses 5 % independent');
    const summary = /stopped: (\d+) of 45 frames delivered/.exec(stdout);
    expect(summary).not.toBeNull();
    expect(Number(summary![1])).toBeGreaterThanOrEqual(40);
  });

  it('explains bad options instead of starting', async () => {
    const failure = await run('bash', ['scripts/start.sh', '--loss', '2'], { cwd: root }).catch(
      (err: unknown) => err,
    );
    expect(failure).toMatchObject({ code: 2 });
    expect((failure as { stderr: string }).stderr).toContain('usage: npm start');
  });
});
