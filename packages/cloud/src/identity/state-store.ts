import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';

/** One record of a {@link StateStore}: a payload and when it stops existing. */
export interface StoredRecord {
  readonly payload: AdapterPayload;
  /** Epoch milliseconds; `Infinity` when it never expires. */
  readonly expiresAt: number;
}

/** Options of {@link StateStore}. */
export interface StateStoreOptions {
  /** Records to start with (a saved state); expired ones are dropped. */
  readonly records?: Iterable<readonly [string, StoredRecord]>;
  /**
   * Called after every change. The change counts as done when the promise it returns settles (for a
   * store kept in a file: once the file holds the change). Default: nothing to wait for.
   */
  readonly onChange?: () => Promise<void>;
  /** Called by {@link StateStore.close}: wait for the last save. Default: nothing to wait for. */
  readonly onClose?: () => Promise<void>;
}

/** Writes between two sweeps of expired records. */
const SWEEP_EVERY = 256;
/**
 * Models whose records `revokeByGrantId` removes (as oidc-provider's own adapter): what a grant
 * issued, never the session or an interaction in progress that merely names the grant.
 */
const GRANTABLE: ReadonlySet<string> = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
]);

/**
 * What the embedded provider keeps between requests: oidc-provider's sessions, interactions, codes,
 * grants and tokens (through {@link StateStore.adapter}) and the provider's own records (one-time
 * sign-in tokens). Records live in memory, keyed `<model>:<id>`; expiry is honoured on every read.
 *
 * Unlike oidc-provider's default adapter (one store per process) it belongs to one embedded provider
 * and outlives a Provider instance, which is how `rotateKeys()` swaps the instance without losing
 * sessions. With `onChange` it is also the in-memory half of the state file that survives a restart.
 */
export class StateStore {
  readonly #records = new Map<string, StoredRecord>();
  readonly #grantMembers = new Map<string, Set<string>>();
  readonly #sessionByUid = new Map<string, string>();
  readonly #keyByUserCode = new Map<string, string>();
  readonly #onChange: () => Promise<void>;
  readonly #onClose: () => Promise<void>;
  #writes = 0;

  constructor(options: StateStoreOptions = {}) {
    this.#onChange = options.onChange ?? (async () => {});
    this.#onClose = options.onClose ?? (async () => {});
    const now = Date.now();
    for (const [key, record] of options.records ?? []) {
      if (record.expiresAt > now) this.#put(key, record);
    }
  }

  /** The live payload stored under `key`, or `undefined`. */
  get(key: string): AdapterPayload | undefined {
    const record = this.#records.get(key);
    if (record === undefined) return undefined;
    if (record.expiresAt <= Date.now()) {
      this.#records.delete(key);
      return undefined;
    }
    return record.payload;
  }

  /**
   * Stores `payload` under `key` until `expiresAt` (epoch ms, `Infinity` for ever). The map changes at
   * once; the promise settles when the change is saved.
   */
  set(key: string, payload: AdapterPayload, expiresAt: number): Promise<void> {
    this.#put(key, { payload, expiresAt });
    this.#writes += 1;
    if (this.#writes % SWEEP_EVERY === 0) this.#sweep();
    return this.#onChange();
  }

  /** Says that a payload already stored was changed in place (e.g. marked consumed); saves it. */
  touched(): Promise<void> {
    return this.#onChange();
  }

  /** Removes `key`. The map changes at once; the promise settles when the change is saved. */
  delete(key: string): Promise<void> {
    return this.#records.delete(key) ? this.#onChange() : Promise.resolve();
  }

  /** Every live record, for saving. */
  records(): [string, StoredRecord][] {
    const now = Date.now();
    return [...this.#records].filter(([, record]) => record.expiresAt > now);
  }

  /** Resolves once every change made so far is saved (see {@link StateStoreOptions.onClose}). */
  close(): Promise<void> {
    return this.#onClose();
  }

  /** oidc-provider's storage adapter over this store. */
  adapter(): AdapterFactory {
    return (model: string): Adapter => {
      const keyFor = (id: string): string => `${model}:${id}`;
      return {
        upsert: (id, payload, expiresIn) =>
          this.set(
            keyFor(id),
            payload,
            typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY,
          ),
        find: async (id) => this.get(keyFor(id)),
        findByUid: async (uid) => {
          const id = this.#sessionByUid.get(uid);
          return id === undefined ? undefined : this.get(keyFor(id));
        },
        findByUserCode: async (userCode) => {
          const key = this.#keyByUserCode.get(userCode);
          return key === undefined ? undefined : this.get(key);
        },
        consume: async (id) => {
          const payload = this.get(keyFor(id));
          if (payload === undefined) return;
          payload.consumed = Math.floor(Date.now() / 1000);
          await this.touched();
        },
        destroy: (id) => this.delete(keyFor(id)),
        revokeByGrantId: async (grantId) => {
          const members = this.#grantMembers.get(grantId);
          this.#grantMembers.delete(grantId);
          let removed = false;
          for (const key of members ?? []) removed = this.#records.delete(key) || removed;
          if (removed) await this.#onChange();
        },
      };
    };
  }

  #put(key: string, record: StoredRecord): void {
    this.#records.set(key, record);
    const { payload } = record;
    if (key.startsWith('Session:') && typeof payload.uid === 'string') {
      this.#sessionByUid.set(payload.uid, key.slice('Session:'.length));
    }
    if (typeof payload.userCode === 'string') this.#keyByUserCode.set(payload.userCode, key);
    if (typeof payload.grantId === 'string' && GRANTABLE.has(key.slice(0, key.indexOf(':')))) {
      const members = this.#grantMembers.get(payload.grantId) ?? new Set<string>();
      members.add(key);
      this.#grantMembers.set(payload.grantId, members);
    }
  }

  #sweep(): void {
    const now = Date.now();
    for (const [key, record] of this.#records) if (record.expiresAt <= now) this.#records.delete(key);
    for (const [uid, id] of this.#sessionByUid) {
      if (!this.#records.has(`Session:${id}`)) this.#sessionByUid.delete(uid);
    }
    for (const [grantId, members] of this.#grantMembers) {
      for (const key of members) if (!this.#records.has(key)) members.delete(key);
      if (members.size === 0) this.#grantMembers.delete(grantId);
    }
    for (const [code, key] of this.#keyByUserCode) {
      if (!this.#records.has(key)) this.#keyByUserCode.delete(code);
    }
  }
}
