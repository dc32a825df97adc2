import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeys, auditLog, robots } from '../src/db/index.js';
import { type Answer, type Person, startApi, type TestApi } from './support/api.js';
import { databaseBackends, rowsOf, sha256 } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

/** `svc_key_`, 8 hex characters, `_`, and 32 random bytes in base64url. */
const KEY_PATTERN = /^(svc_key_[0-9a-f]{8})_([A-Za-z0-9_-]{43})$/;

describe.each(databaseBackends)('API keys on $name', (backend) => {
  let provider: TestProvider;
  let api: TestApi;
  let owner: Person;
  let admin: Person;
  let org: string;

  async function createKey(who: Person, name: string, scopes: string[], inOrg = org) {
    const answer = await api.call('POST', `/api/v1/orgs/${inOrg}/api-keys`, {
      token: who.token,
      body: { name, scopes },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const match = KEY_PATTERN.exec(answer.body.key);
    expect(match, answer.body.key).not.toBeNull();
    return {
      id: answer.body.apiKey.id as string,
      key: answer.body.key as string,
      secret: match![2]!,
      answer,
    };
  }
  async function keyRow(id: string) {
    const [row] = await api.db.select().from(apiKeys).where(eq(apiKeys.id, id));
    return row!;
  }
  const robotsWith = (key: string): Promise<Answer> => api.call('GET', '/api/v1/robots', { token: key });

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend, provider });
    const signedIn = await api.signIn({ name: 'key-owner' });
    owner = { token: signedIn.accessToken, userId: signedIn.me.body.user.id };
    org = signedIn.me.body.orgs[0].id;
    const invited = await api.call('POST', `/api/v1/orgs/${org}/invitations`, {
      token: owner.token,
      body: { email: 'key-admin@example.test', role: 'admin' },
    });
    expect(invited.status).toBe(201);
    const adminIn = await api.signIn({ name: 'key-admin' });
    admin = { token: adminIn.accessToken, userId: adminIn.me.body.user.id };
    // Another org's robot, which no key of `org` may see.
    const other = await api.signIn({ name: 'key-outsider' });
    await api.db.insert(robots).values([
      { robotId: 'robot-mine', orgId: org, publicKey: 'pk-mine' },
      { robotId: 'robot-theirs', orgId: other.me.body.orgs[0].id, publicKey: 'pk-theirs' },
    ]);
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  it('shows the key once, at creation; lists and the database never hold it, only its SHA-256', async () => {
    const { id, key, secret, answer } = await createKey(owner, 'backend', ['robots:read']);
    const prefix = key.slice(0, key.length - secret.length - 1);
    const view = {
      id,
      name: 'backend',
      prefix,
      scopes: ['robots:read'],
      createdAt: expect.any(String),
      lastUsedAt: null,
      revokedAt: null,
    };
    expect(answer.body.apiKey).toEqual(view);

    const list = await api.call('GET', `/api/v1/orgs/${org}/api-keys`, { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body.apiKeys).toContainEqual(view);
    const listed = JSON.stringify(list.body);
    for (const text of [key, secret, sha256(key)]) expect(listed).not.toContain(text);

    // Every column of the row, whatever the schema grows: the hash of the key and nothing else secret.
    const [row] = rowsOf<Record<string, unknown>>(
      await api.db.execute(sql`select * from api_keys where id = ${id}::uuid`),
    );
    expect(row).toBeDefined();
    expect(row!.secret_hash).toBe(sha256(key));
    for (const [column, value] of Object.entries(row!)) {
      const text = JSON.stringify(value) ?? '';
      expect(text, column).not.toContain(secret);
      expect(text, column).not.toContain(key);
    }
    const log = await api.db.select().from(auditLog).where(eq(auditLog.targetId, id));
    expect(log).toHaveLength(1);
    expect(JSON.stringify(log)).not.toContain(secret);
  });

  it('authenticates GET /api/v1/robots with robots:read, for its own org, and records last_used_at', async () => {
    const t0 = new Date('2030-06-01T12:00:00.000Z');
    api.now = t0;
    const { id, key } = await createKey(owner, 'reader', ['robots:read']);
    const seen = await robotsWith(key);
    expect(seen.status).toBe(200);
    expect(seen.body.robots.map((r: { robotId: string }) => r.robotId)).toEqual(['robot-mine']);
    expect((await keyRow(id)).lastUsedAt).toEqual(t0);
    const list = await api.call('GET', `/api/v1/orgs/${org}/api-keys`, { token: owner.token });
    expect(list.body.apiKeys).toContainEqual(expect.objectContaining({ id, lastUsedAt: t0.toISOString() }));

    // Written at most once a minute per key.
    api.now = new Date(t0.getTime() + 30_000);
    expect((await robotsWith(key)).status).toBe(200);
    expect((await keyRow(id)).lastUsedAt).toEqual(t0);
    const t1 = new Date(t0.getTime() + 61_000);
    api.now = t1;
    expect((await robotsWith(key)).status).toBe(200);
    expect((await keyRow(id)).lastUsedAt).toEqual(t1);

    const minter = await createKey(owner, 'minter', ['sessions:mint']);
    const refused = await robotsWith(minter.key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect(refused.body.error.message).toContain('robots:read');
  });

  it('answers 401 to a revoked key', async () => {
    api.now = new Date('2030-07-01T08:00:00.000Z');
    const { id, key } = await createKey(owner, 'soon revoked', ['robots:read']);
    expect((await robotsWith(key)).status).toBe(200);
    const revoked = await api.call('DELETE', `/api/v1/orgs/${org}/api-keys/${id}`, { token: owner.token });
    expect(revoked.status).toBe(204);
    const refused = await robotsWith(key);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthenticated');
    expect(refused.body.error.message).not.toContain(key);
    const list = await api.call('GET', `/api/v1/orgs/${org}/api-keys`, { token: owner.token });
    expect(list.body.apiKeys).toContainEqual(
      expect.objectContaining({ id, revokedAt: api.now.toISOString() }),
    );
    // Revoking again changes nothing and is not logged twice.
    expect(
      (await api.call('DELETE', `/api/v1/orgs/${org}/api-keys/${id}`, { token: owner.token })).status,
    ).toBe(204);
    const entries = await api.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, id), eq(auditLog.action, 'api-key.revoke')));
    expect(entries).toHaveLength(1);
  });

  it('answers 401 to a valid prefix with a wrong secret, and does not count it as a use', async () => {
    const first = await createKey(owner, 'first', ['robots:read']);
    const second = await createKey(owner, 'second', ['robots:read']);
    const prefix = first.key.slice(0, first.key.length - first.secret.length - 1);
    const flipped = `${first.secret.slice(0, -1)}${first.secret.endsWith('A') ? 'B' : 'A'}`;
    const forgeries: [string, string][] = [
      ['last character changed', `${prefix}_${flipped}`],
      ["another key's secret", `${prefix}_${second.secret}`],
      ['secret cut short', `${prefix}_${first.secret.slice(0, 30)}`],
      ['secret made longer', `${first.key}A`],
      ['unknown prefix', `svc_key_00000000_${first.secret}`],
    ];
    for (const [what, token] of forgeries) {
      const answer = await robotsWith(token);
      expect(answer.status, what).toBe(401);
      expect(answer.body.error.code, what).toBe('unauthenticated');
      expect(answer.body.error.message, what).not.toContain(token);
    }
    expect((await keyRow(first.id)).lastUsedAt).toBeNull();
    expect((await robotsWith(first.key)).status).toBe(200);
  });

  it('refuses an unknown or missing scope with 400 naming the field, and creates nothing', async () => {
    const count = async () => ({
      keys: (await api.db.select().from(apiKeys).where(eq(apiKeys.orgId, org))).length,
      log: (await api.db.select().from(auditLog).where(eq(auditLog.action, 'api-key.create'))).length,
    });
    const before = await count();
    for (const scopes of [['robots:read', 'robots:write'], [], 'robots:read']) {
      const answer = await api.call('POST', `/api/v1/orgs/${org}/api-keys`, {
        token: owner.token,
        body: { name: 'bad', scopes },
      });
      expect(answer.status, JSON.stringify(scopes)).toBe(400);
      expect(answer.body.error.code).toBe('invalid-request');
      expect(answer.body.error.message).toMatch(/\bscopes\b/);
    }
    expect(await count()).toEqual(before);
  });

  it('audits every create and revoke with actor, target and time; the log filters and pages', async () => {
    // A new org of its own, so that its log holds only what this test does.
    const made = await api.call('POST', '/api/v1/orgs', { token: owner.token, body: { name: 'audited' } });
    const audited = made.body.org.id as string;
    const invited = await api.call('POST', `/api/v1/orgs/${audited}/invitations`, {
      token: owner.token,
      body: { email: 'key-admin@example.test', role: 'admin' },
    });
    const accepted = await api.call('POST', '/api/v1/invitations/accept', {
      token: admin.token,
      body: { token: invited.body.token },
    });
    expect(accepted.status).toBe(200);

    const started = Date.now();
    const k1 = await createKey(owner, 'k1', ['robots:read'], audited);
    const k2 = await createKey(owner, 'k2', ['sessions:mint'], audited);
    const k3 = await createKey(admin, 'k3', ['robots:read', 'sessions:mint'], audited);
    for (const [who, key] of [
      [owner, k1],
      [admin, k3],
    ] as const) {
      const revoked = await api.call('DELETE', `/api/v1/orgs/${audited}/api-keys/${key.id}`, {
        token: who.token,
      });
      expect(revoked.status).toBe(204);
    }
    const ended = Date.now();

    const read = async (query: string) => {
      const answer = await api.call('GET', `/api/v1/orgs/${audited}/audit${query}`, { token: owner.token });
      expect(answer.status, `${query}: ${JSON.stringify(answer.body)}`).toBe(200);
      return answer.body as {
        entries: {
          id: number;
          at: string;
          action: string;
          actor: unknown;
          target: unknown;
          detail: unknown;
        }[];
        next: string | null;
      };
    };
    const actions = (page: Awaited<ReturnType<typeof read>>) =>
      page.entries.map((e) => `${e.action} ${(e.target as { id: string }).id}`);

    const keyEntries = await read('?action=api-key.create');
    expect(keyEntries.entries).toEqual(
      [
        [admin, k3],
        [owner, k2],
        [owner, k1],
      ].map(([who, key]) => ({
        id: expect.any(Number),
        at: expect.any(String),
        action: 'api-key.create',
        actor: { kind: 'user', id: (who as Person).userId },
        target: { kind: 'api_key', id: (key as typeof k1).id },
        detail: expect.objectContaining({ name: expect.any(String), prefix: expect.any(String) }),
      })),
    );
    const revokes = await read('?action=api-key.revoke');
    expect(actions(revokes)).toEqual([`api-key.revoke ${k3.id}`, `api-key.revoke ${k1.id}`]);
    for (const entry of [...keyEntries.entries, ...revokes.entries]) {
      const at = Date.parse(entry.at);
      expect(at).toBeGreaterThanOrEqual(started);
      expect(at).toBeLessThanOrEqual(ended);
      for (const key of [k1, k2, k3]) expect(JSON.stringify(entry)).not.toContain(key.secret);
    }

    // Every entry of the org, newest first: org.create, invitation.create, invitation.accept, then the keys.
    const all = await read('');
    expect(all.entries.map((e) => e.action)).toEqual([
      'api-key.revoke',
      'api-key.revoke',
      'api-key.create',
      'api-key.create',
      'api-key.create',
      'invitation.accept',
      'invitation.create',
      'org.create',
    ]);
    expect(all.next).toBeNull();
    const ids = all.entries.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));

    expect(actions(await read(`?actor=${admin.userId}`))).toEqual([
      `api-key.revoke ${k3.id}`,
      `api-key.create ${k3.id}`,
      `invitation.accept ${invited.body.invitation.id}`,
    ]);
    expect(actions(await read(`?target=${k1.id}`))).toEqual([
      `api-key.revoke ${k1.id}`,
      `api-key.create ${k1.id}`,
    ]);
    expect(actions(await read(`?action=api-key.create&actor=${owner.userId}`))).toEqual([
      `api-key.create ${k2.id}`,
      `api-key.create ${k1.id}`,
    ]);
    expect((await read(`?target=${k2.id}&action=api-key.revoke`)).entries).toEqual([]);

    // Time windows: move the entries to whole minutes (oldest at 00:00), then ask for [since, until).
    const minute = (i: number) => new Date(Date.UTC(2030, 0, 1, 0, i));
    for (const [i, id] of [...ids].reverse().entries()) {
      await api.db
        .update(auditLog)
        .set({ at: minute(i) })
        .where(eq(auditLog.id, id));
    }
    const window = (since?: number, until?: number) =>
      [
        since === undefined ? '' : `since=${minute(since).toISOString()}`,
        until === undefined ? '' : `until=${minute(until).toISOString()}`,
      ]
        .filter((p) => p !== '')
        .join('&');
    // Minutes 3, 4, 5 are the three creations; 6 and 7 the revocations.
    expect(actions(await read(`?${window(3, 6)}`))).toEqual([
      `api-key.create ${k3.id}`,
      `api-key.create ${k2.id}`,
      `api-key.create ${k1.id}`,
    ]);
    expect((await read(`?${window(6)}`)).entries.map((e) => e.at)).toEqual([
      minute(7).toISOString(),
      minute(6).toISOString(),
    ]);
    expect((await read(`?${window(undefined, 1)}`)).entries.map((e) => e.action)).toEqual(['org.create']);
    // Consecutive windows share their boundary and together hold every entry exactly once.
    const parts = [await read(`?${window(0, 4)}`), await read(`?${window(4, 8)}`)];
    expect(parts.flatMap((p) => p.entries.map((e) => e.id)).sort()).toEqual([...ids].sort());
    expect((await read(`?${window(4, 4)}`)).entries).toEqual([]);

    // Paging: `limit` entries a page, the next page from the `next` cursor, until `next` is null.
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await read(`?limit=3${cursor === null ? '' : `&before=${cursor}`}`);
      expect(page.entries.length).toBeLessThanOrEqual(3);
      seen.push(...page.entries.map((e) => e.id));
      cursor = page.next;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    const filtered = await read('?action=api-key.create&limit=2');
    expect(filtered.entries).toHaveLength(2);
    expect(filtered.next).not.toBeNull();
    const rest = await read(`?action=api-key.create&limit=2&before=${filtered.next}`);
    expect(actions(rest)).toEqual([`api-key.create ${k1.id}`]);
    expect(rest.next).toBeNull();

    for (const [query, field] of [
      ['?since=yesterday', 'since'],
      ['?until=2030-01-01', 'until'],
      ['?limit=0', 'limit'],
      ['?before=abc', 'before'],
    ] as const) {
      const answer = await api.call('GET', `/api/v1/orgs/${audited}/audit${query}`, { token: owner.token });
      expect(answer.status, query).toBe(400);
      expect(answer.body.error.message, query).toContain(field);
    }
  });
});
