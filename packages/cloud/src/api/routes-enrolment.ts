import { createPublicKey } from 'node:crypto';
import { ROBOT_ID_PATTERN } from '@svc/wire';
import { and, desc, eq, gt, isNull } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  type CloudDb,
  type EnrolmentToken,
  enrolmentTokens,
  hashSecret,
  newSecret,
  robots,
} from '../db/index.js';
import { audit } from '../audit/index.js';
import { type ApiContext, requireOrgPermission } from './context.js';
import { ApiError } from './errors.js';
import { jsonSchema, params, parse, uuidParam } from './http.js';

/** Text every enrolment token starts with (spec 2.1). */
export const ENROLMENT_TOKEN_PREFIX = 'svc_enr_';

/** An enrolment token as issued: the prefix and 32 random bytes in base64url (43 characters). */
const ENROLMENT_TOKEN_PATTERN = /^svc_enr_[A-Za-z0-9_-]{43}$/;

/** Default lifetime of an enrolment token, hours. */
export const ENROLMENT_TOKEN_DEFAULT_HOURS = 24;
/** Longest lifetime of an enrolment token, hours (30 days). */
export const ENROLMENT_TOKEN_MAX_HOURS = 720;

/** Where a person makes a new token; every refusal of a token says so. */
const NEW_TOKEN_HINT = 'create a new one in the console (Fleet, Create enrolment token)';

/** States of an enrolment token as listed. */
export const ENROLMENT_TOKEN_STATES = ['unused', 'redeemed', 'expired', 'revoked'] as const;
/** One of {@link ENROLMENT_TOKEN_STATES}. */
export type EnrolmentTokenState = (typeof ENROLMENT_TOKEN_STATES)[number];

/** An enrolment token as the API shows it: never the secret nor its hash. */
export interface EnrolmentTokenView {
  readonly id: string;
  readonly name: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly state: EnrolmentTokenState;
  readonly redeemedAt: Date | null;
  /** The robot id that redeemed it. */
  readonly redeemedBy: string | null;
}

const orgParams = z.object({ org: uuidParam });
const itemParams = z.object({ org: uuidParam, id: uuidParam });
const createBody = z.object({
  name: z.string().trim().min(1).max(128).optional(),
  expiresInHours: z
    .number({ error: 'expected a whole number of hours' })
    .int({ error: 'expected a whole number of hours' })
    .min(1, { error: `expected 1 to ${ENROLMENT_TOKEN_MAX_HOURS} hours` })
    .max(ENROLMENT_TOKEN_MAX_HOURS, { error: `expected 1 to ${ENROLMENT_TOKEN_MAX_HOURS} hours` })
    .default(ENROLMENT_TOKEN_DEFAULT_HOURS),
});
const enrolBody = z.object({
  robotId: z.string({ error: 'expected the robot id (a string)' }).regex(ROBOT_ID_PATTERN, {
    error:
      'expected 1 to 128 characters of letters, digits, ".", "_" or "-", starting with a letter or digit',
  }),
  publicKey: z
    .string({ error: "expected the robot's Ed25519 public key (a string)" })
    .superRefine((key, check) => {
      const problem = ed25519KeyProblem(key);
      if (problem !== undefined) check.addIssue({ code: 'custom', message: problem });
    }),
  token: z
    .string({ error: `expected the enrolment token (${ENROLMENT_TOKEN_PREFIX}...)` })
    .min(1, { error: `expected the enrolment token (${ENROLMENT_TOKEN_PREFIX}...)` })
    .max(200, { error: `expected the enrolment token (${ENROLMENT_TOKEN_PREFIX}...)` }),
});

/** The answer of a successful `POST /api/v1/enrol`. */
export interface EnrolResult {
  readonly robotId: string;
  readonly orgId: string;
  readonly enrolledAt: Date;
}

const tags = ['enrolment'];

/**
 * Enrolment tokens under `/api/v1/orgs/:org/enrolment-tokens` (admins), and `POST /api/v1/enrol`,
 * where a robot redeems one with its public key (no user credential).
 */
export function enrolmentRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { db } = ctx;

  app.post(
    '/api/v1/orgs/:org/enrolment-tokens',
    {
      schema: {
        summary: 'Creates a one-time enrolment token for a robot; the token is in this answer only',
        tags,
        body: jsonSchema(createBody),
      },
    },
    async (request, reply) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      const { user } = await requireOrgPermission(ctx, request, orgId, 'robots.manage');
      const body = parse(createBody, request.body, 'body');
      const now = ctx.now();
      const token = newSecret(ENROLMENT_TOKEN_PREFIX);
      const row = await db.transaction(async (tx) => {
        const [created] = await tx
          .insert(enrolmentTokens)
          .values({
            orgId,
            name: body.name ?? null,
            tokenHash: hashSecret(token),
            createdBy: user.id,
            createdAt: now,
            expiresAt: new Date(now.getTime() + body.expiresInHours * 3_600_000),
          })
          .returning();
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'enrolment-token.create',
          targetKind: 'enrolment_token',
          targetId: created!.id,
          detail: { name: created!.name, expiresAt: created!.expiresAt.toISOString() },
        });
        return created!;
      });
      reply.code(201);
      return { enrolmentToken: enrolmentTokenView(row, now), token };
    },
  );

  app.get(
    '/api/v1/orgs/:org/enrolment-tokens',
    { schema: { summary: 'Enrolment tokens, newest first (never their secrets)', tags } },
    async (request) => {
      const { org: orgId } = parse(orgParams, params(request), 'path');
      await requireOrgPermission(ctx, request, orgId, 'robots.manage');
      const rows = await db
        .select()
        .from(enrolmentTokens)
        .where(eq(enrolmentTokens.orgId, orgId))
        .orderBy(desc(enrolmentTokens.createdAt), desc(enrolmentTokens.id));
      const now = ctx.now();
      return { enrolmentTokens: rows.map((r) => enrolmentTokenView(r, now)) };
    },
  );

  app.delete(
    '/api/v1/orgs/:org/enrolment-tokens/:id',
    { schema: { summary: 'Revokes an enrolment token that has not been used', tags } },
    async (request, reply) => {
      const p = parse(itemParams, params(request), 'path');
      const { user } = await requireOrgPermission(ctx, request, p.org, 'robots.manage');
      const now = ctx.now();
      await db.transaction(async (tx) => {
        // One statement decides against a concurrent redemption: whichever sets its column first wins.
        const [revoked] = await tx
          .update(enrolmentTokens)
          .set({ revokedAt: now })
          .where(
            and(
              eq(enrolmentTokens.id, p.id),
              eq(enrolmentTokens.orgId, p.org),
              isNull(enrolmentTokens.redeemedAt),
              isNull(enrolmentTokens.revokedAt),
            ),
          )
          .returning();
        if (revoked !== undefined) {
          await audit(tx, {
            orgId: p.org,
            actor: { kind: 'user', id: user.id },
            action: 'enrolment-token.revoke',
            targetKind: 'enrolment_token',
            targetId: p.id,
            detail: { name: revoked.name },
          });
          return;
        }
        const [row] = await tx
          .select()
          .from(enrolmentTokens)
          .where(and(eq(enrolmentTokens.id, p.id), eq(enrolmentTokens.orgId, p.org)));
        if (row === undefined)
          throw new ApiError('not-found', `no enrolment token ${p.id} in this organisation`);
        if (row.redeemedAt !== null) {
          throw new ApiError(
            'conflict',
            `this enrolment token was already used by robot ${row.redeemedBy}; to remove that robot, delete it in the console`,
          );
        }
        // Already revoked: nothing changes, nothing is logged again.
      });
      reply.code(204);
    },
  );

  app.post(
    '/api/v1/enrol',
    {
      schema: {
        summary:
          "A robot redeems a one-time enrolment token with its Ed25519 public key and joins the token's organisation",
        tags,
        security: [],
        body: jsonSchema(enrolBody),
      },
    },
    async (request, reply) => {
      const body = parse(enrolBody, request.body, 'body');
      if (!ENROLMENT_TOKEN_PATTERN.test(body.token)) {
        throw new ApiError(
          'enrolment-token-invalid',
          `this is not an enrolment token (they start with ${ENROLMENT_TOKEN_PREFIX}); check that it was copied whole, or ${NEW_TOKEN_HINT}`,
        );
      }
      const result = await redeem(db, body, ctx.now());
      reply.code(201);
      return result;
    },
  );
}

/**
 * Redeems `token` for `robotId` in one transaction: consumes the token, registers the key, audits.
 * Any refusal after the token was taken throws inside the transaction, so the token stays unused.
 * Only `tx` is queried while it is open (PGlite has one connection).
 */
async function redeem(
  db: CloudDb,
  request: { robotId: string; publicKey: string; token: string },
  now: Date,
): Promise<EnrolResult> {
  const { robotId, publicKey } = request;
  const tokenHash = hashSecret(request.token);
  return db.transaction(async (tx) => {
    const [token] = await tx
      .update(enrolmentTokens)
      .set({ redeemedAt: now, redeemedBy: robotId })
      .where(
        and(
          eq(enrolmentTokens.tokenHash, tokenHash),
          isNull(enrolmentTokens.redeemedAt),
          isNull(enrolmentTokens.revokedAt),
          gt(enrolmentTokens.expiresAt, now),
        ),
      )
      .returning();
    if (token === undefined) {
      const [row] = await tx.select().from(enrolmentTokens).where(eq(enrolmentTokens.tokenHash, tokenHash));
      throw refusal(row, now);
    }

    let previously: 'unknown' | 'without-org' | 'enrolled';
    const [inserted] = await tx
      .insert(robots)
      .values({ robotId, orgId: token.orgId, publicKey, createdAt: now, enrolledAt: now })
      .onConflictDoNothing({ target: robots.robotId })
      .returning({ robotId: robots.robotId });
    if (inserted !== undefined) {
      previously = 'unknown';
    } else {
      const [robot] = await tx.select().from(robots).where(eq(robots.robotId, robotId)).for('update');
      if (robot === undefined) {
        // Deleted between the insert and this read.
        throw new ApiError('conflict', `robot ${robotId} changed while it was enrolling; try again`);
      }
      if (robot.orgId === null) {
        // Admitted by open dev enrolment (trust on first use): the enrolling key is the one kept.
        previously = 'without-org';
      } else if (robot.orgId === token.orgId && sameKey(robot.publicKey, publicKey)) {
        previously = 'enrolled';
      } else {
        throw new ApiError(
          'robot-enrolled',
          `robot ${robotId} is already enrolled ${robot.orgId === token.orgId ? 'with another key' : 'in another organisation'}; ` +
            'delete the robot in the console and enrol again (the enrolment token was not used)',
        );
      }
      await tx
        .update(robots)
        .set({ orgId: token.orgId, publicKey, enrolledAt: now })
        .where(eq(robots.robotId, robotId));
    }
    await audit(tx, {
      orgId: token.orgId,
      actor: { kind: 'robot', id: robotId },
      action: 'robot.enrol',
      targetKind: 'robot',
      targetId: robotId,
      detail: { enrolmentToken: token.id, tokenName: token.name, previously },
    });
    return { robotId, orgId: token.orgId, enrolledAt: now };
  });
}

/** Why a token could not be redeemed: unknown, used, revoked or expired. */
function refusal(row: EnrolmentToken | undefined, now: Date): ApiError {
  if (row === undefined) {
    return new ApiError(
      'enrolment-token-invalid',
      `this enrolment token is not known; check that it was copied whole, or ${NEW_TOKEN_HINT}`,
    );
  }
  if (row.redeemedAt !== null) {
    return new ApiError(
      'enrolment-token-used',
      `this enrolment token was already used (each enrols one robot once); a new token is needed: ${NEW_TOKEN_HINT}`,
    );
  }
  if (row.revokedAt !== null) {
    return new ApiError('enrolment-token-revoked', `this enrolment token was revoked; ${NEW_TOKEN_HINT}`);
  }
  if (row.expiresAt <= now) {
    return new ApiError(
      'enrolment-token-expired',
      `this enrolment token expired at ${row.expiresAt.toISOString()}; ${NEW_TOKEN_HINT}`,
    );
  }
  // The token was usable after all: a concurrent change between the two statements.
  return new ApiError('conflict', 'the enrolment token changed while it was being redeemed; try again');
}

/** Whether two base64url public keys are the same bytes (a stored key may carry padding). */
function sameKey(stored: string, presented: string): boolean {
  return Buffer.from(stored, 'base64url').equals(Buffer.from(presented, 'base64url'));
}

/** How an enrolment token is shown: its state at `now`, never the secret nor its hash. */
function enrolmentTokenView(row: EnrolmentToken, now: Date): EnrolmentTokenView {
  const state: EnrolmentTokenState =
    row.redeemedAt !== null
      ? 'redeemed'
      : row.revokedAt !== null
        ? 'revoked'
        : row.expiresAt <= now
          ? 'expired'
          : 'unused';
  return {
    id: row.id,
    name: row.name,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    state,
    redeemedAt: row.redeemedAt,
    redeemedBy: row.redeemedBy,
  };
}

// ---------------------------------------------------------------------------------------------
// Ed25519 public keys (RFC 8032, section 5.1.3)

/** The field prime 2^255 - 19. */
const P = 2n ** 255n - 19n;
/** The curve constant d = -121665 / 121666 mod p. */
const D = mod(-121665n * inverse(121666n));
/** A square root of -1 mod p: 2^((p-1)/4). */
const SQRT_M1 = power(2n, (P - 1n) / 4n);

function mod(a: bigint): bigint {
  const r = a % P;
  return r >= 0n ? r : r + P;
}

function power(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = mod(base);
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return result;
}

function inverse(a: bigint): bigint {
  return power(a, P - 2n);
}

/**
 * Why `key` is not a usable Ed25519 public key, or `undefined` when it is: 32 bytes in canonical
 * base64url without padding, the encoding of a point on the curve, and not a point of small order
 * (such a "key" verifies signatures nobody made). A key generated on a robot always passes.
 */
export function ed25519KeyProblem(key: string): string | undefined {
  const expected = "expected the robot's raw 32-byte Ed25519 public key in base64url without padding";
  if (!/^[A-Za-z0-9_-]{43}$/.test(key)) return `${expected} (43 characters)`;
  const bytes = Buffer.from(key, 'base64url');
  if (bytes.length !== 32 || bytes.toString('base64url') !== key) return `${expected}; it is not canonical`;
  const point = decodePoint(bytes);
  if (point === undefined) return 'is 32 bytes but not an Ed25519 public key (not a point on the curve)';
  if (isSmallOrder(point)) return 'is an Ed25519 point of small order, which is not a usable public key';
  try {
    createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key }, format: 'jwk' });
  } catch {
    return 'is not accepted as an Ed25519 public key';
  }
  return undefined;
}

/** A point in extended coordinates (X, Y, Z, T) with x = X/Z, y = Y/Z, xy = T/Z. */
type Point = readonly [bigint, bigint, bigint, bigint];

/** Decodes a compressed point: y little-endian, the top bit the sign of x. */
function decodePoint(bytes: Uint8Array): Point | undefined {
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(bytes[i]!);
  const sign = y >> 255n;
  y &= (1n << 255n) - 1n;
  if (y >= P) return undefined;
  const u = mod(y * y - 1n);
  const v = mod(D * y * y + 1n);
  const v3 = mod(v * v * v);
  let x = mod(u * v3 * power(u * v3 * v3 * v, (P - 5n) / 8n));
  const vx2 = mod(v * x * x);
  if (vx2 === mod(-u)) x = mod(x * SQRT_M1);
  else if (vx2 !== u) return undefined;
  if (x === 0n && sign === 1n) return undefined;
  if ((x & 1n) !== sign) x = P - x;
  return [x, y, 1n, mod(x * y)];
}

/** Doubling on the twisted Edwards curve with a = -1 (extended coordinates). */
function double([x1, y1, z1]: Point): Point {
  const a = mod(x1 * x1);
  const b = mod(y1 * y1);
  const c = mod(2n * z1 * z1);
  const e = mod((x1 + y1) * (x1 + y1) - a - b);
  const g = mod(b - a);
  const f = mod(g - c);
  const h = mod(-a - b);
  return [mod(e * f), mod(g * h), mod(f * g), mod(e * h)];
}

/** Whether 8·P is the neutral element (0, 1): the eight points of small order. */
function isSmallOrder(point: Point): boolean {
  const [x, y, z] = double(double(double(point)));
  return x === 0n && y === z;
}
