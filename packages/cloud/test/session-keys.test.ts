/**
 * The pilot session key store on a real database: the JWKS it publishes, the tokens it signs (checked
 * with jose against that JWKS, as a robot would), rotation on an injected clock, several stores
 * (svc-cloud nodes) sharing one database, and the audit batcher's retry after a failed write.
 */
import { randomUUID } from 'node:crypto';
import { FakeClock } from '@svc/runtime/testing';
import { eq, sql } from 'drizzle-orm';
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JSONWebKeySet,
  jwtVerify,
  SignJWT,
} from 'jose';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditBatcher } from '../src/audit/index.js';
import { auditLog, type CloudDb, sessionSigningKeys } from '../src/db/index.js';
import {
  isSessionTokenError,
  KEY_EXPIRY_MARGIN_MS,
  NEXT_KEY_LEAD_MS,
  SESSION_KEY_REFRESH_MS,
  SessionKeyStore,
  type SessionTokenClaims,
} from '../src/sessions/index.js';
import { databaseBackends, type TestDatabase } from './support/databases.js';

const ISSUER = 'https://svc.example.test';
const HOUR = 3_600_000;
const T0 = Date.parse('2031-03-01T00:00:00.000Z');

/** Claims for a token of `ttl` seconds issued at `nowMs`. */
function claimsAt(nowMs: number, ttl = 300, aud = 'robot-1'): Omit<SessionTokenClaims, 'iss'> {
  const iat = Math.floor(nowMs / 1000);
  return {
    sub: 'key:00000000-0000-4000-8000-000000000001',
    aud,
    scope: 'drive',
    iat,
    exp: iat + ttl,
    jti: randomUUID(),
  };
}

/** Verifies `token` as a robot does: against the published JWKS, pinned to ES256, at `nowMs`. */
async function verifyAsRobot(token: string, jwks: JSONWebKeySet, nowMs: number, robotId = 'robot-1') {
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
    algorithms: ['ES256'],
    issuer: ISSUER,
    audience: robotId,
    currentDate: new Date(nowMs),
  });
  return { payload, protectedHeader };
}

async function expectRejected(promise: Promise<unknown>, code: string): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isSessionTokenError(err), String(err)).toBe(true);
  expect((err as { code: string }).code).toBe(code);
}

describe.each(databaseBackends)('session signing keys on $name', (backend) => {
  let test: TestDatabase;
  let db: CloudDb;
  /** The stores' clock: the tests set its wall time; its timers never fire. */
  let clock: FakeClock;
  /** The wall time the stores read. */
  const now = (): number => clock.wallNow();
  /** Sets the wall time the stores read. */
  const setNow = (ms: number): void => clock.stepWallClock(ms - now());
  const stores: SessionKeyStore[] = [];
  const open = (rotationHours = 24): SessionKeyStore => {
    const store = new SessionKeyStore({ db, issuer: ISSUER, rotationHours, clock });
    stores.push(store);
    return store;
  };
  const rows = () => db.select().from(sessionSigningKeys).orderBy(sessionSigningKeys.createdAt);

  beforeEach(async () => {
    test = await backend.create();
    db = test.database.db;
    clock = new FakeClock(0, T0);
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await test?.dispose();
  });

  it('publishes its public key (kid = RFC 7638 thumbprint) and signs tokens that verify against it', async () => {
    const store = open();
    await store.start();
    const [row] = await rows();
    expect(row).toBeDefined();
    expect(row!.retiresAt.getTime()).toBe(T0 + 24 * HOUR);
    expect(row!.expiresAt.getTime()).toBe(T0 + 24 * HOUR + 900_000 + KEY_EXPIRY_MARGIN_MS);

    const jwks = store.jwks();
    expect(jwks.keys).toHaveLength(1);
    const [key] = jwks.keys;
    expect(key).toEqual({
      kty: 'EC',
      crv: 'P-256',
      x: expect.any(String),
      y: expect.any(String),
      kid: row!.kid,
      alg: 'ES256',
      use: 'sig',
    });
    expect(await calculateJwkThumbprint({ kty: 'EC', crv: 'P-256', x: key!.x!, y: key!.y! })).toBe(key!.kid);

    const claims = { ...claimsAt(now()), act: 'customer-user-7', org: randomUUID() };
    const token = await store.sign(claims);
    const { payload, protectedHeader } = await verifyAsRobot(token, jwks, now());
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: key!.kid, typ: 'svc-session+jwt' });
    expect(payload).toEqual({ ...claims, iss: ISSUER });
    expect(await store.verify(token, { audience: 'robot-1' })).toEqual({ ...claims, iss: ISSUER });
  });

  it('refuses tokens that are not its own, for another robot, expired, or not ES256', async () => {
    const store = open();
    await store.start();
    const token = await store.sign(claimsAt(now(), 60));
    const kid = decodeProtectedHeader(token).kid!;

    await expectRejected(store.verify(token, { audience: 'robot-2' }), 'claim-invalid');
    const [head, body, signature] = token.split('.');
    const otherBody = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), scope: 'observe' }),
    ).toString('base64url');
    await expectRejected(store.verify(`${head}.${otherBody}.${signature}`), 'token-invalid');
    await expectRejected(store.verify('not a token'), 'token-malformed');

    // A foreign key claiming the store's kid, and a foreign key with a kid of its own.
    const foreign = await generateKeyPair('ES256');
    const forge = (header: Record<string, unknown>, claims: Record<string, unknown> = claimsAt(now())) =>
      new SignJWT({ ...claims, iss: ISSUER })
        .setProtectedHeader({ alg: 'ES256', typ: 'svc-session+jwt', ...header })
        .sign(foreign.privateKey);
    await expectRejected(store.verify(await forge({ kid })), 'token-invalid');
    await expectRejected(store.verify(await forge({ kid: 'someone-else' })), 'unknown-key');
    // Signed with the store's own key but not a session token: wrong typ, wrong issuer.
    const jwk = await exportJWK(foreign.publicKey);
    expect(jwk.d).toBeUndefined();
    const own = (await db.select().from(sessionSigningKeys))[0]!;
    const ownKey = await importJWK(own.privateJwk, 'ES256');
    const ownSigned = (header: Record<string, unknown>, claims: Record<string, unknown>) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, ...header }).sign(ownKey);
    await expectRejected(
      store.verify(await ownSigned({ typ: 'JWT' }, { ...claimsAt(now()), iss: ISSUER })),
      'token-invalid',
    );
    await expectRejected(
      store.verify(
        await ownSigned({ typ: 'svc-session+jwt' }, { ...claimsAt(now()), iss: 'https://evil.test' }),
      ),
      'claim-invalid',
    );
    await expectRejected(
      store.verify(
        await ownSigned({ typ: 'svc-session+jwt' }, { ...claimsAt(now()), iss: ISSUER, scope: 'admin' }),
      ),
      'claim-invalid',
    );
    // HS256 with the public key as secret, and alg none.
    const hs = await new SignJWT({ ...claimsAt(now()), iss: ISSUER })
      .setProtectedHeader({ alg: 'HS256', kid, typ: 'svc-session+jwt' })
      .sign(new TextEncoder().encode(JSON.stringify(store.jwks().keys[0])));
    await expectRejected(store.verify(hs), 'token-invalid');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', kid, typ: 'svc-session+jwt' })).toString('base64url')}.${body}.`;
    await expectRejected(store.verify(none), 'token-invalid');

    // Valid until exp, then expired.
    clock.stepWallClock(59_000);
    expect((await store.verify(token)).jti).toBeDefined();
    clock.stepWallClock(2_000);
    await expectRejected(store.verify(token), 'token-expired');
  });

  it('refuses to sign a token that outlives the longest lifetime', async () => {
    const store = open();
    await store.start();
    await expect(store.sign(claimsAt(now(), 901))).rejects.toThrow(TypeError);
    await expect(store.sign({ ...claimsAt(now()), exp: Math.floor(now() / 1000) - 1 })).rejects.toThrow(
      TypeError,
    );
    expect(await store.sign(claimsAt(now(), 900))).toMatch(/^ey/);
  });

  it('rotates: the next key is published before it signs, the old one stays until its tokens expire', async () => {
    const store = open();
    await store.start();
    const [first] = await rows();
    const oldToken = await store.sign(claimsAt(now(), 900));
    const kidOf = (token: string) => decodeProtectedHeader(token).kid;
    expect(kidOf(oldToken)).toBe(first!.kid);

    // A timer tick well before retirement changes nothing.
    setNow(T0 + 12 * HOUR);
    await store.refresh();
    expect(await rows()).toHaveLength(1);

    // Within the lead time the next key is made and published, but the first still signs.
    setNow(first!.retiresAt.getTime() - NEXT_KEY_LEAD_MS + 60_000);
    await store.refresh();
    const both = await rows();
    expect(both).toHaveLength(2);
    const second = both.find((r) => r.kid !== first!.kid)!;
    expect(store.jwks().keys.map((k) => k.kid)).toEqual([second.kid, first!.kid]);
    expect(kidOf(await store.sign(claimsAt(now())))).toBe(first!.kid);

    // Past the first key's retirement the second signs; a token of the first still verifies.
    setNow(first!.retiresAt.getTime() + 1_000);
    const newToken = await store.sign(claimsAt(now(), 300));
    expect(kidOf(newToken)).toBe(second.kid);
    const lastOfFirst = await (async () => {
      // Signed by the first key just before it retired, with the longest lifetime.
      const saved = now();
      setNow(first!.retiresAt.getTime() - 1_000);
      const token = await store.sign(claimsAt(now(), 900));
      setNow(saved);
      return token;
    })();
    expect(kidOf(lastOfFirst)).toBe(first!.kid);
    setNow(first!.retiresAt.getTime() + 890_000);
    await store.refresh();
    const jwks = store.jwks();
    expect(jwks.keys.map((k) => k.kid)).toEqual([second.kid, first!.kid]);
    await verifyAsRobot(lastOfFirst, jwks, now());
    expect((await store.verify(lastOfFirst)).jti).toBeDefined();

    // After the first key's expiresAt it is unpublished and its row deleted.
    setNow(first!.expiresAt.getTime());
    expect(store.jwks().keys.map((k) => k.kid)).toEqual([second.kid]);
    await store.refresh();
    expect((await rows()).map((r) => r.kid)).toEqual([second.kid]);
    await expectRejected(store.verify(oldToken), 'unknown-key');
    await verifyAsRobot(await store.sign(claimsAt(now())), store.jwks(), now());
  });

  it("reloads its keys on its clock's timer, once a refresh interval", async () => {
    const store = open();
    await store.start();
    const refresh = vi.spyOn(store, 'refresh');
    clock.advance(SESSION_KEY_REFRESH_MS - 1);
    expect(refresh).not.toHaveBeenCalled();
    clock.advance(1);
    expect(refresh).toHaveBeenCalledTimes(1);
    await refresh.mock.results[0]!.value;
    clock.advance(SESSION_KEY_REFRESH_MS);
    expect(refresh).toHaveBeenCalledTimes(2);
    await store.close();
    clock.advance(SESSION_KEY_REFRESH_MS);
    expect(refresh).toHaveBeenCalledTimes(2);
  });

  it('makes a new key at once when the clock jumped past every key, without waiting for the timer', async () => {
    const store = open(1);
    await store.start();
    const [first] = await rows();
    setNow(T0 + 5 * HOUR);
    const token = await store.sign(claimsAt(now()));
    const kid = decodeProtectedHeader(token).kid;
    expect(kid).not.toBe(first!.kid);
    const after = await rows();
    expect(after.map((r) => r.kid)).toEqual([kid]);
    expect(after[0]!.retiresAt.getTime()).toBe(now() + HOUR);
    await verifyAsRobot(token, store.jwks(), now());
  });

  it('several stores starting at once on one database create one key and sign with it', async () => {
    const many = [open(), open(), open(), open()];
    await Promise.all(many.map((s) => s.start()));
    const all = await rows();
    expect(all).toHaveLength(1);
    for (const s of many) {
      expect(s.jwks().keys.map((k) => k.kid)).toEqual([all[0]!.kid]);
      expect(decodeProtectedHeader(await s.sign(claimsAt(now()))).kid).toBe(all[0]!.kid);
    }
    // Past retirement, concurrent signers on every node still agree on one new key.
    setNow(all[0]!.retiresAt.getTime() + 1);
    const tokens = await Promise.all(many.map((s) => s.sign(claimsAt(now()))));
    const kids = new Set(tokens.map((t) => decodeProtectedHeader(t).kid));
    expect(kids.size).toBe(1);
    expect(await rows()).toHaveLength(2);
  });

  it('a restarted node keeps the key; another node verifies a token signed with a key it has not loaded', async () => {
    const a = open();
    await a.start();
    const kid = a.jwks().keys[0]!.kid;
    await a.close();
    const b = open();
    await b.start();
    expect(b.jwks().keys.map((k) => k.kid)).toEqual([kid]);
    expect(await rows()).toHaveLength(1);

    const c = open();
    await c.start();
    setNow(T0 + 25 * HOUR);
    const token = await b.sign(claimsAt(now()));
    expect(decodeProtectedHeader(token).kid).not.toBe(kid);
    // `c` has not reloaded since: it does on the unknown kid.
    expect((await c.verify(token, { audience: 'robot-1' })).sub).toMatch(/^key:/);
  });
});

describe.each(databaseBackends)('the audit batcher on $name', (backend) => {
  let test: TestDatabase;
  let db: CloudDb;
  beforeEach(async () => {
    test = await backend.create();
    db = test.database.db;
  });
  afterEach(async () => {
    await test?.dispose();
  });

  it('writes queued entries with their own time, keeps them through a failed write, and retries', async () => {
    const errors: string[] = [];
    const batcher = new AuditBatcher({
      db,
      // Long enough that only the explicit flushes below write.
      maxDelayMs: 60_000,
      retryDelayMs: 60_000,
      maxBatch: 3,
      log: { error: (_fields, message) => errors.push(message) },
    });
    const at = (i: number) => new Date(Date.UTC(2031, 0, 1, 0, i));
    const entry = (i: number) => ({
      orgId: null,
      actor: { kind: 'system' as const, id: null },
      action: 'test.batched',
      targetKind: 'test',
      targetId: String(i),
      detail: { i },
      at: at(i),
    });
    const written = async () =>
      (await db.select().from(auditLog).where(eq(auditLog.action, 'test.batched')).orderBy(auditLog.id)).map(
        (r) => [r.targetId, r.at.toISOString()],
      );

    batcher.enqueue(entry(1), entry(2));
    expect(await written()).toEqual([]);
    await batcher.flush();
    expect(await written()).toEqual([
      ['1', at(1).toISOString()],
      ['2', at(2).toISOString()],
    ]);

    // The table is away: the write fails, is logged, and the entries stay queued.
    await db.execute(sql`alter table audit_log rename to audit_log_away`);
    batcher.enqueue(entry(3), entry(4), entry(5), entry(6));
    await expect(batcher.flush()).rejects.toThrow();
    expect(errors.length).toBeGreaterThan(0);
    expect(batcher.pending).toBe(4);
    await db.execute(sql`alter table audit_log_away rename to audit_log`);
    await batcher.close();
    expect(batcher.pending).toBe(0);
    expect((await written()).map(([id]) => id)).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(() => batcher.enqueue(entry(7))).toThrow(TypeError);
  });
});
