/**
 * The robot's identity (spec 5.3): an Ed25519 key pair generated on the robot, whose 32-byte seed
 * is kept at `credential_path` and never leaves the robot.
 */

import {
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign as signBytes,
} from 'node:crypto';
import { chmod, link, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { inspect } from 'node:util';
import { CodedError, codedErrorGuard, type Logger, silentLogger } from '@svc/runtime';

/**
 * Stable codes of {@link CredentialError}. Callers branch on `code`, never on the message.
 *
 * - `credential-invalid`: the file exists but does not hold a seed in the format below.
 * - `credential-unreadable`: the file (or its directory) exists but cannot be read.
 * - `credential-unwritable`: the file is absent and cannot be created.
 */
export type CredentialErrorCode = 'credential-invalid' | 'credential-unreadable' | 'credential-unwritable';

/** A credential file that cannot be used. Messages name the file and what to do, never its content. */
export class CredentialError extends CodedError<CredentialErrorCode> {
  override readonly name = 'CredentialError';
}

/** True when `err` is a {@link CredentialError}, optionally with the given code. */
export const isCredentialError = codedErrorGuard(CredentialError);

/** First line of a credential file: names the content and its version. */
export const CREDENTIAL_FILE_HEADER = 'svcd-ed25519-seed-v1';

/** DER prefix of a PKCS#8 `PrivateKeyInfo` for Ed25519 (RFC 8410); the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

const SEED_BYTES = 32;
/** 32 bytes in base64url without padding. */
const SEED_TEXT = /^[A-Za-z0-9_-]{43}$/;

/**
 * The robot's Ed25519 identity. The seed stays inside: there is no getter for it, and neither
 * `JSON.stringify` nor `util.inspect` shows it.
 */
export class RobotCredential {
  /** The raw 32-byte Ed25519 public key, base64url without padding (what is registered at enrolment). */
  readonly publicKey: string;
  /** True when this start created the credential file (the robot had no identity before). */
  readonly created: boolean;
  /** The file the seed is kept in. */
  readonly path: string;
  readonly #privateKey: KeyObject;

  /** @internal Use {@link loadOrCreateCredential}. */
  constructor(privateKey: KeyObject, file: string, created: boolean) {
    this.#privateKey = privateKey;
    this.path = file;
    this.created = created;
    const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
    if (typeof jwk.x !== 'string') throw new TypeError('not an Ed25519 key');
    this.publicKey = jwk.x;
  }

  /** Signs `bytes` with the robot's key (Ed25519, 64-byte signature), e.g. a signalling challenge. */
  sign(bytes: Uint8Array): Uint8Array {
    return new Uint8Array(signBytes(null, bytes, this.#privateKey));
  }

  /** What `JSON.stringify` shows: the public half only. */
  toJSON(): { path: string; publicKey: string; created: boolean } {
    return { path: this.path, publicKey: this.publicKey, created: this.created };
  }

  /** What `util.inspect` and `console.log` show: the public half only. */
  [inspect.custom](): string {
    return `RobotCredential { path: ${JSON.stringify(this.path)}, publicKey: '${this.publicKey}', created: ${this.created} }`;
  }
}

/** Options of {@link loadOrCreateCredential}. */
export interface CredentialOptions {
  /** Where to report a credential file that others may read. Default: nowhere. */
  logger?: Logger;
}

/**
 * Loads the robot's credential from `file`, or creates it when the file does not exist.
 *
 * File format (text, UTF-8), two lines:
 *
 * ```
 * svcd-ed25519-seed-v1
 * <the 32-byte Ed25519 seed, base64url without padding (43 characters)>
 * ```
 *
 * Creation: the parent directory is made with mode 0700 if missing; the seed comes from
 * `crypto.randomBytes`, is written to a temporary file opened with mode 0600, flushed to disk, and
 * then linked to `file` (never replacing a file another process created meanwhile; that one is
 * loaded instead). At no moment does a readable copy exist under another mode.
 *
 * An existing file readable by group or others is set to 0600 with a warning (or, when that fails, a
 * warning saying to do it).
 *
 * @throws {CredentialError} `credential-invalid` when the file holds anything else (it is never
 *   overwritten: it may be the only copy of an enrolled robot's key), `credential-unreadable` or
 *   `credential-unwritable` on file system errors.
 */
export async function loadOrCreateCredential(
  file: string,
  options: CredentialOptions = {},
): Promise<RobotCredential> {
  const logger = options.logger ?? silentLogger;
  const existing = await readCredentialFile(file);
  if (existing !== undefined) {
    await checkMode(file, logger);
    return new RobotCredential(keyFromSeedText(existing, file), file, false);
  }
  const seed = randomBytes(SEED_BYTES);
  try {
    const won = await createExclusive(file, `${CREDENTIAL_FILE_HEADER}\n${seed.toString('base64url')}\n`);
    if (!won) {
      // Another process created the file between our read and our link: use theirs.
      const theirs = await readCredentialFile(file);
      if (theirs === undefined)
        throw new CredentialError('credential-unwritable', `${file} vanished while it was being created`);
      return new RobotCredential(keyFromSeedText(theirs, file), file, false);
    }
    return new RobotCredential(keyFromSeed(seed), file, true);
  } finally {
    seed.fill(0);
  }
}

/** The file's text, or `undefined` when it does not exist. */
async function readCredentialFile(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    const fix =
      code === 'EACCES' || code === 'EPERM'
        ? 'run svcd as the user that owns it'
        : code === 'EISDIR'
          ? 'credential_path must name a file, not a directory'
          : code === 'ENOTDIR'
            ? 'a parent of credential_path is a file, not a directory'
            : 'check credential_path';
    throw new CredentialError('credential-unreadable', `cannot read credential ${file} (${code}): ${fix}`, {
      cause: err,
    });
  }
}

function keyFromSeedText(text: string, file: string): KeyObject {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const [header, seedText, ...rest] = lines;
  if (
    header !== CREDENTIAL_FILE_HEADER ||
    seedText === undefined ||
    rest.length > 0 ||
    !SEED_TEXT.test(seedText)
  ) {
    throw new CredentialError(
      'credential-invalid',
      `${file} is not an svcd credential (expected the line "${CREDENTIAL_FILE_HEADER}" and a 43-character base64url ` +
        'seed); it was left untouched. Restore it from a backup if this robot is enrolled with it; otherwise move it ' +
        'away, start again to create a new key, and enrol the robot (delete it in the console first if it was enrolled)',
    );
  }
  const seed = Buffer.from(seedText, 'base64url');
  try {
    return keyFromSeed(seed);
  } finally {
    seed.fill(0);
  }
}

function keyFromSeed(seed: Buffer): KeyObject {
  const der = Buffer.concat([ED25519_PKCS8_PREFIX, seed]);
  try {
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } finally {
    der.fill(0);
  }
}

/**
 * Writes `text` to `file` only if `file` does not exist, atomically, mode 0600.
 * @returns false when another process created `file` first.
 */
async function createExclusive(file: string, text: string): Promise<boolean> {
  const directory = path.dirname(file);
  const temporary = path.join(
    directory,
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await link(temporary, file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      // File systems without hard links: rename still never exposes a partial or readable file.
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err;
      await rename(temporary, file);
    }
    await syncDirectory(directory);
    return true;
  } catch (err) {
    if (err instanceof CredentialError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new CredentialError(
      'credential-unwritable',
      `cannot create credential ${file} (${code}): make its directory writable for the svcd user or set credential_path`,
      { cause: err },
    );
  } finally {
    await unlink(temporary).catch(() => {});
  }
}

/** Makes a new directory entry durable (best effort: not every platform can open a directory). */
async function syncDirectory(directory: string): Promise<void> {
  try {
    const handle = await open(directory, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Durability only; the entry exists either way.
  }
}

async function checkMode(file: string, logger: Logger): Promise<void> {
  let mode: number;
  try {
    mode = (await stat(file)).mode & 0o777;
  } catch {
    return;
  }
  if ((mode & 0o077) === 0) return;
  const shown = mode.toString(8).padStart(4, '0');
  try {
    await chmod(file, 0o600);
    logger.warn(
      { file, mode: shown },
      'the credential file was readable by other users; its mode is now 0600 (consider the key exposed if others could log in)',
    );
  } catch {
    logger.warn(
      { file, mode: shown },
      `the credential file is readable by other users and its mode cannot be changed; run: chmod 600 ${file}`,
    );
  }
}
