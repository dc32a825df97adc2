import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';

interface Entry {
  payload: AdapterPayload;
  /** Epoch milliseconds; `Infinity` when oidc-provider gave no lifetime. */
  expiresAt: number;
}

/** Writes between two sweeps of expired entries. */
const SWEEP_EVERY = 256;

/**
 * An in-memory storage adapter for oidc-provider, owned by one embedded provider. Unlike the library's
 * default adapter (one store per process) it can outlive a Provider instance, which is how
 * `rotateKeys()` swaps the instance without losing sessions, interactions and codes.
 */
export function createMemoryAdapter(): AdapterFactory {
  const entries = new Map<string, Entry>();
  const grantMembers = new Map<string, Set<string>>();
  const sessionByUid = new Map<string, string>();
  const idByUserCode = new Map<string, string>();
  let writes = 0;

  const live = (key: string): AdapterPayload | undefined => {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= Date.now()) {
      entries.delete(key);
      return undefined;
    }
    return entry.payload;
  };

  const sweep = (): void => {
    const now = Date.now();
    for (const [key, entry] of entries) if (entry.expiresAt <= now) entries.delete(key);
    for (const [uid, id] of sessionByUid) if (!entries.has(`Session:${id}`)) sessionByUid.delete(uid);
    for (const [grantId, members] of grantMembers) {
      for (const key of members) if (!entries.has(key)) members.delete(key);
      if (members.size === 0) grantMembers.delete(grantId);
    }
    for (const [code, key] of idByUserCode) if (!entries.has(key)) idByUserCode.delete(code);
  };

  return (model: string): Adapter => {
    const keyFor = (id: string): string => `${model}:${id}`;
    return {
      async upsert(id, payload, expiresIn) {
        const key = keyFor(id);
        const expiresAt =
          typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY;
        entries.set(key, { payload, expiresAt });
        if (model === 'Session' && typeof payload.uid === 'string') sessionByUid.set(payload.uid, id);
        if (typeof payload.userCode === 'string') idByUserCode.set(payload.userCode, key);
        if (typeof payload.grantId === 'string') {
          const members = grantMembers.get(payload.grantId) ?? new Set<string>();
          members.add(key);
          grantMembers.set(payload.grantId, members);
        }
        writes += 1;
        if (writes % SWEEP_EVERY === 0) sweep();
      },
      async find(id) {
        return live(keyFor(id));
      },
      async findByUid(uid) {
        const id = sessionByUid.get(uid);
        return id === undefined ? undefined : live(keyFor(id));
      },
      async findByUserCode(userCode) {
        const key = idByUserCode.get(userCode);
        return key === undefined ? undefined : live(key);
      },
      async consume(id) {
        const payload = live(keyFor(id));
        if (payload !== undefined) payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        entries.delete(keyFor(id));
      },
      async revokeByGrantId(grantId) {
        for (const key of grantMembers.get(grantId) ?? []) entries.delete(key);
        grantMembers.delete(grantId);
      },
    };
  };
}
