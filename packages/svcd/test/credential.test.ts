import { createPublicKey, verify } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CREDENTIAL_FILE_HEADER,
  CredentialError,
  isCredentialError,
  loadOrCreateCredential,
} from '../src/credential.js';
import { capturingLogger } from './support/log-lines.js';

/** Verifies an Ed25519 signature against a raw public key given as base64url, with node:crypto only. */
function verifies(publicKey: string, message: Uint8Array, signature: Uint8Array): boolean {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });
  return verify(null, message, key, signature);
}

describe('robot credential', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svcd-credential-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the key on first run in a new 0700 directory, as a 0600 file, and reloads the same key', async () => {
    const file = path.join(dir, 'state', 'svcd', 'credential');
    const first = await loadOrCreateCredential(file);
    expect(first.created).toBe(true);
    expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const text = await readFile(file, 'utf8');
    expect(text).toMatch(new RegExp(`^${CREDENTIAL_FILE_HEADER}\\n[A-Za-z0-9_-]{43}\\n$`));
    expect(Buffer.from(first.publicKey, 'base64url')).toHaveLength(32);

    const again = await loadOrCreateCredential(file);
    expect(again.created).toBe(false);
    expect(again.publicKey).toBe(first.publicKey);
    expect(await readFile(file, 'utf8')).toBe(text);

    const message = new TextEncoder().encode('challenge nonce 1234');
    const signature = again.sign(message);
    expect(signature).toHaveLength(64);
    expect(verifies(first.publicKey, message, signature)).toBe(true);
    expect(verifies(first.publicKey, new TextEncoder().encode('another nonce'), signature)).toBe(false);
    // The key really comes from the file's seed: another credential signs differently.
    const other = await loadOrCreateCredential(path.join(dir, 'other'));
    expect(other.publicKey).not.toBe(first.publicKey);
    expect(verifies(first.publicKey, message, other.sign(message))).toBe(false);
  });

  it('two processes starting at once end up with one key', async () => {
    const file = path.join(dir, 'new', 'credential');
    const [a, b] = await Promise.all([loadOrCreateCredential(file), loadOrCreateCredential(file)]);
    expect(a.publicKey).toBe(b.publicKey);
    expect([a.created, b.created].filter(Boolean)).toHaveLength(1);
    expect((await loadOrCreateCredential(file)).publicKey).toBe(a.publicKey);
  });

  it('never shows the seed in util.inspect, JSON or enumerable properties', async () => {
    const file = path.join(dir, 'credential');
    const credential = await loadOrCreateCredential(file);
    const seed = (await readFile(file, 'utf8')).split('\n')[1]!;
    const seedHex = Buffer.from(seed, 'base64url').toString('hex');
    const shown = [
      inspect(credential, { showHidden: true, depth: 10 }),
      JSON.stringify(credential),
      JSON.stringify(Object.entries(credential)),
      String(credential),
      `${inspect({ nested: credential })}`,
    ];
    for (const text of shown) {
      expect(text).not.toContain(seed);
      expect(text).not.toContain(seedHex);
    }
    expect(JSON.parse(JSON.stringify(credential))).toEqual({
      path: file,
      publicKey: credential.publicKey,
      created: true,
    });
    expect(shown[0]).toContain(credential.publicKey);
  });

  it.each([
    ['an empty file', ''],
    ['another header', 'svcd-ed25519-seed-v2\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n'],
    ['a short seed', `${CREDENTIAL_FILE_HEADER}\nAAAA\n`],
    ['a PEM key', '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n'],
    ['trailing lines', `${CREDENTIAL_FILE_HEADER}\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\nmore\n`],
  ])('refuses %s with a clear error and leaves it untouched', async (_what, content) => {
    const file = path.join(dir, 'credential');
    await writeFile(file, content, { mode: 0o600 });
    const err = await loadOrCreateCredential(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CredentialError);
    expect(isCredentialError(err, 'credential-invalid')).toBe(true);
    const message = (err as Error).message;
    expect(message).toContain(file);
    expect(message).toContain('is not an svcd credential');
    expect(message).toMatch(/Restore it from a backup/);
    expect(await readFile(file, 'utf8')).toBe(content);
  });

  it('accepts a seed file without the final newline', async () => {
    const file = path.join(dir, 'credential');
    const made = await loadOrCreateCredential(file);
    await writeFile(file, (await readFile(file, 'utf8')).trimEnd(), { mode: 0o600 });
    expect((await loadOrCreateCredential(file)).publicKey).toBe(made.publicKey);
  });

  it('makes a credential readable by others private again, with a warning', async () => {
    const file = path.join(dir, 'credential');
    const made = await loadOrCreateCredential(file);
    await chmod(file, 0o644);
    const { logger, lines } = capturingLogger();
    const loaded = await loadOrCreateCredential(file, { logger });
    expect(loaded.publicKey).toBe(made.publicKey);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(lines()).toHaveLength(1);
    expect(lines()[0]).toMatch(
      /^warn: the credential file was readable by other users; its mode is now 0600/,
    );
    expect(lines()[0]).toContain('"mode":"0644"');

    const quiet = capturingLogger();
    await loadOrCreateCredential(file, { logger: quiet.logger });
    expect(quiet.lines()).toEqual([]);
  });

  it('reports a credential path that is a directory', async () => {
    const file = path.join(dir, 'credential');
    await mkdir(file);
    const err = await loadOrCreateCredential(file).catch((e: unknown) => e);
    expect(isCredentialError(err, 'credential-unreadable')).toBe(true);
    expect((err as Error).message).toContain('credential_path must name a file');
  });

  it('reports a credential path below a file', async () => {
    const blocker = path.join(dir, 'not-a-directory');
    await writeFile(blocker, 'x');
    const err = await loadOrCreateCredential(path.join(blocker, 'credential')).catch((e: unknown) => e);
    expect(isCredentialError(err, 'credential-unreadable')).toBe(true);
    expect((err as Error).message).toMatch(
      /not-a-directory\/credential \(ENOTDIR\): a parent of credential_path is a file/,
    );
  });
});
