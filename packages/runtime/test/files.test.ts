/** `writePrivateFile`: a secret's file is whole, readable by its owner only, and leaves nothing behind. */
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writePrivateFile } from '../src/node/index.js';

describe('writePrivateFile', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'runtime-files-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('creates the folder 0700 and the file 0600, with nothing else beside it', async () => {
    const file = path.join(root, 'state', 'credential');
    await writePrivateFile(file, 'secret');
    expect(await readFile(file, 'utf8')).toBe('secret');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    expect(await readdir(path.dirname(file))).toEqual(['credential']);
  });

  it('replaces a file whole, and a file others could read becomes 0600', async () => {
    const file = path.join(root, 'keys.json');
    await writeFile(file, 'old and longer than the new text');
    await chmod(file, 0o644);
    await writePrivateFile(file, 'new');
    expect(await readFile(file, 'utf8')).toBe('new');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('fails with the file system’s error and leaves no temporary file', async () => {
    const folder = path.join(root, 'is-a-folder');
    await writePrivateFile(path.join(folder, 'inside'), 'x');
    await expect(writePrivateFile(folder, 'text')).rejects.toMatchObject({ code: expect.any(String) });
    expect((await readdir(root)).sort()).toEqual(['is-a-folder']);
  });
});
