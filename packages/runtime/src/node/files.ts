/** Files that hold secrets (keys, credentials, tokens), written so that no reader sees half of one. */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes `text` to `file`, readable by its owner only (0600), whole or not at all: through a
 * temporary file in the same folder (created exclusively, synced to disk) renamed over `file`.
 * The folder is created 0700 when missing. A reader sees the old content or the new, never a mix;
 * a crash leaves at most a hidden `.tmp` file beside it.
 *
 * @throws the file system's error (`EACCES`, `ENOSPC`, …); the temporary file is removed
 */
export async function writePrivateFile(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } finally {
    await unlink(temporary).catch(() => {});
  }
}
