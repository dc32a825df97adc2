import { chmod, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writePrivateFile } from '@svc/runtime/node';
import type { JWK } from 'jose';
import type { AdapterPayload } from 'oidc-provider';
import { IdentityError } from './errors.js';
import {
  createOidcProvider,
  type EmbeddedOidcProvider,
  generateCookieKey,
  generateSigningKey,
  type OidcProviderOptions,
  requireSigningKey,
} from './provider.js';
import { StateStore, type StoredRecord } from './state-store.js';

/** Names of the files the development provider keeps in its folder. */
export const DEV_STATE_FILES = {
  /** Signing keys (private JWKs) and cookie keys. */
  keys: 'keys.json',
  /** Sessions, interactions, grants, codes, refresh tokens and one-time sign-in tokens. */
  state: 'state.json',
} as const;

/** Version of both files' layout; another version is refused as damaged. */
const FORMAT_VERSION = 1;

/** Options of {@link openDevelopmentProvider}: those of `createOidcProvider`, minus what the folder holds. */
export interface DevelopmentProviderOptions
  extends Omit<OidcProviderOptions, 'signingKeys' | 'cookieKeys' | 'store' | 'onSigningKeysChanged'> {
  /**
   * The provider's own folder, e.g. `<SVC_DATA_DIR>/dev-oidc`: created with mode 0700 on first start;
   * its files are written with mode 0600.
   */
  readonly stateDir: string;
}

/** What `keys.json` holds. */
interface KeysFile {
  readonly version: typeof FORMAT_VERSION;
  readonly signingKeys: readonly JWK[];
  readonly cookieKeys: readonly string[];
}

/**
 * The development provider of svc-cloud, kept in a folder so that a restart keeps people signed in:
 * its signing and cookie keys (`keys.json`, made on first start and reused after) and everything
 * sign-in depends on (`state.json`: sessions, grants, refresh tokens, codes, interactions, one-time
 * tokens). The state lives in memory and every change is written to the file (whole, atomically:
 * a temporary file, fsync, rename) before the request that made it is answered; changes made while
 * a write is under way go together into the next one. Expired records are dropped on load and never
 * written. {@link EmbeddedOidcProvider.close} waits for the last write.
 *
 * @throws {IdentityError} `dev-state-corrupt` when a file cannot be read as what it should hold (the
 *   message names the file and what to do); `dev-state-unavailable` when the folder or a file cannot
 *   be created, read or written.
 */
export async function openDevelopmentProvider(
  options: DevelopmentProviderOptions,
): Promise<EmbeddedOidcProvider> {
  const { stateDir, ...providerOptions } = options;
  const keysFile = join(stateDir, DEV_STATE_FILES.keys);
  const stateFile = join(stateDir, DEV_STATE_FILES.state);
  await attempt('create the folder', stateDir, async () => {
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    await chmod(stateDir, 0o700);
  });
  const keys = await loadOrCreateKeys(keysFile, () => ({
    version: FORMAT_VERSION,
    signingKeys: [generateSigningKey(options.signingAlgorithm)],
    cookieKeys: [generateCookieKey()],
  }));
  const records = await loadState(stateFile);

  let store: StateStore | undefined;
  const stateWriter = new FileWriter(stateFile, () => ({
    version: FORMAT_VERSION,
    records: (store?.records() ?? []).map(([key, record]) => [
      key,
      { payload: record.payload, expiresAt: Number.isFinite(record.expiresAt) ? record.expiresAt : null },
    ]),
  }));
  let signingKeys = keys.signingKeys;
  const keysWriter = new FileWriter(keysFile, () => ({ ...keys, signingKeys }));
  store = new StateStore({
    records,
    onChange: () => stateWriter.save(),
    onClose: async () => {
      await Promise.all([stateWriter.flush(), keysWriter.flush()]);
    },
  });
  return createOidcProvider({
    ...providerOptions,
    signingKeys: keys.signingKeys,
    cookieKeys: keys.cookieKeys,
    store,
    onSigningKeysChanged: (next) => {
      signingKeys = next;
      keysWriter.save().catch((err: unknown) => {
        const report = providerOptions.onServerError;
        if (report !== undefined) report(err as Error);
        else providerOptions.logger?.error({ err }, 'the development identity provider lost a new key');
      });
    },
  });
}

/** Reads `keys.json`, or makes and writes new keys when there is none. */
async function loadOrCreateKeys(file: string, create: () => KeysFile): Promise<KeysFile> {
  const text = await readIfPresent(file);
  if (text === undefined) {
    const keys = create();
    await attempt('write', file, () => writePrivateFile(file, JSON.stringify(keys)));
    return keys;
  }
  await attempt('set the mode of', file, () => chmod(file, 0o600));
  const damaged = (reason: string, cause?: unknown): IdentityError =>
    new IdentityError(
      'dev-state-corrupt',
      `the development identity provider's keys file ${file} is damaged (${reason}). ` +
        'Restore it from a backup, or delete it to start with new keys: everyone signed in through the development provider then signs in again.',
      { cause },
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw damaged('not JSON', cause);
  }
  if (!isObject(parsed) || parsed.version !== FORMAT_VERSION) throw damaged(`not version ${FORMAT_VERSION}`);
  const { signingKeys, cookieKeys } = parsed;
  if (!Array.isArray(signingKeys) || signingKeys.length === 0) throw damaged('no signing keys');
  signingKeys.forEach((key: unknown, i) => {
    try {
      requireSigningKey(isObject(key) ? (key as JWK) : undefined, `signingKeys[${i}]`);
    } catch (cause) {
      throw damaged((cause as Error).message, cause);
    }
  });
  if (
    !Array.isArray(cookieKeys) ||
    cookieKeys.length === 0 ||
    !cookieKeys.every((key) => typeof key === 'string' && key !== '')
  ) {
    throw damaged('no cookie keys');
  }
  return { version: FORMAT_VERSION, signingKeys: signingKeys as JWK[], cookieKeys: cookieKeys as string[] };
}

/** Reads `state.json`: the records it holds, none when there is no file. */
async function loadState(file: string): Promise<[string, StoredRecord][]> {
  const text = await readIfPresent(file);
  if (text === undefined) return [];
  await attempt('set the mode of', file, () => chmod(file, 0o600));
  const damaged = (reason: string, cause?: unknown): IdentityError =>
    new IdentityError(
      'dev-state-corrupt',
      `the development identity provider's state file ${file} is damaged (${reason}). ` +
        'Delete it and start again: the keys are kept, but everyone signed in through the development provider signs in again.',
      { cause },
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw damaged('not JSON', cause);
  }
  if (!isObject(parsed) || parsed.version !== FORMAT_VERSION || !Array.isArray(parsed.records)) {
    throw damaged(`not version ${FORMAT_VERSION}`);
  }
  return parsed.records.map((entry: unknown, i): [string, StoredRecord] => {
    const [key, record] = Array.isArray(entry) ? (entry as unknown[]) : [];
    if (
      typeof key !== 'string' ||
      !isObject(record) ||
      !isObject(record.payload) ||
      !(record.expiresAt === null || typeof record.expiresAt === 'number')
    ) {
      throw damaged(`record ${i} is not [key, {payload, expiresAt}]`);
    }
    return [
      key,
      {
        payload: record.payload as AdapterPayload,
        expiresAt: record.expiresAt ?? Number.POSITIVE_INFINITY,
      },
    ];
  });
}

/**
 * Writes what `snapshot()` gives to one file, whole and atomically, one write at a time. Saves asked
 * for while a write is under way share the next write, which takes its snapshot when it starts.
 */
class FileWriter {
  readonly #file: string;
  readonly #snapshot: () => unknown;
  /** The write under way (never rejects: its waiters see the failure). */
  #current: Promise<void> = Promise.resolve();
  /** The next write, not started yet. */
  #next: Promise<void> | undefined;

  constructor(file: string, snapshot: () => unknown) {
    this.#file = file;
    this.#snapshot = snapshot;
  }

  /** Resolves once a write that started after this call is done. */
  save(): Promise<void> {
    this.#next ??= this.#current.then(() => {
      this.#next = undefined;
      const write = attempt('write', this.#file, () =>
        writePrivateFile(this.#file, JSON.stringify(this.#snapshot())),
      );
      this.#current = write.catch(() => {});
      return write;
    });
    return this.#next;
  }

  /** Resolves once every write asked for so far is done (failed ones included). */
  async flush(): Promise<void> {
    await (this.#next ?? this.#current).catch(() => {});
  }
}

async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw unavailable('read', file, err);
  }
}

/** Runs a file operation; a failure becomes `dev-state-unavailable` naming the path. */
async function attempt<T>(what: string, path: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (err) {
    throw unavailable(what, path, err);
  }
}

function unavailable(what: string, path: string, cause: unknown): IdentityError {
  const code = (cause as NodeJS.ErrnoException).code ?? 'error';
  return new IdentityError(
    'dev-state-unavailable',
    `the development identity provider cannot ${what} ${path} (${code}): make the data folder writable for the user svc-cloud runs as, or choose another one (SVC_DATA_DIR)`,
    { cause },
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
