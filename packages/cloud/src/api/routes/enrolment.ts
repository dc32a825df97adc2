import { ROBOT_ID_PATTERN } from '@svc/wire';
import { and, desc, eq, gt, isNull } from 'drizzle-orm';
import { z } from 'zod';
import { type Actor, audit } from '../../audit/index.js';
import {
  type CloudDb,
  type EnrolmentToken,
  enrolmentTokens,
  hashSecret,
  newSecret,
  robots,
} from '../../db/index.js';
import type { ApiPlugin } from '../context.js';
import { ed25519KeyProblem } from '../ed25519.js';
import { ApiError } from '../errors.js';
import { oneTimeState } from '../one-time.js';
import { orgResource, resource } from '../route.js';
import { noContent, optionalTimestamp, orgItemParams, timestamp, uuid } from '../schemas.js';

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

/** An enrolment token as the API shows it: never the secret nor its hash. */
const enrolmentToken = z.object({
  id: uuid,
  name: z.string().nullable(),
  createdAt: timestamp,
  expiresAt: timestamp,
  state: z.enum(ENROLMENT_TOKEN_STATES),
  redeemedAt: optionalTimestamp,
  redeemedBy: z.string().nullable().describe('The robot id that redeemed it'),
});
/** An enrolment token as the API shows it. */
export type EnrolmentTokenView = z.output<typeof enrolmentToken>;

const enrolled = z
  .object({ robotId: z.string(), orgId: uuid, enrolledAt: timestamp })
  .describe("The robot belongs to the token's organisation with the key it presented");
/** The answer of a successful `POST /api/v1/enrol`. */
export type EnrolResult = z.output<typeof enrolled>;

const tags = ['enrolment'];

/** Enrolment tokens of an org, under `/api/v1/orgs/:org/enrolment-tokens` (admins): create, list, revoke. */
export const enrolmentTokenRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;
  const routes = orgResource(app, ctx, { tags, permission: 'robots.manage' });

  routes.post('', {
    summary: 'Creates a one-time enrolment token for a robot; the token is in this answer only',
    body: createBody,
    response: {
      201: z
        .object({ enrolmentToken, token: z.string().describe('The token; in this answer only') })
        .describe('The new token'),
    },
    async handler({ orgId, user }, { body }, reply) {
      const now = ctx.now();
      const { row, token } = await createEnrolmentToken(db, {
        orgId,
        name: body.name,
        expiresInHours: body.expiresInHours,
        actor: { kind: 'user', id: user.id },
        now,
      });
      return reply.code(201).send({ enrolmentToken: enrolmentTokenView(row, now), token });
    },
  });

  routes.get('', {
    summary: 'Enrolment tokens, newest first (never their secrets)',
    response: {
      200: z.object({ enrolmentTokens: z.array(enrolmentToken) }).describe('Tokens, newest first'),
    },
    async handler({ orgId }) {
      const rows = await db
        .select()
        .from(enrolmentTokens)
        .where(eq(enrolmentTokens.orgId, orgId))
        .orderBy(desc(enrolmentTokens.createdAt), desc(enrolmentTokens.id));
      const now = ctx.now();
      return { enrolmentTokens: rows.map((r) => enrolmentTokenView(r, now)) };
    },
  });

  routes.delete('/:id', {
    summary: 'Revokes an enrolment token that has not been used',
    params: orgItemParams,
    response: { 204: noContent },
    moreErrors: ['conflict'],
    async handler({ orgId, user }, { params: { id } }, reply) {
      const now = ctx.now();
      await db.transaction(async (tx) => {
        // One statement decides against a concurrent redemption: whichever sets its column first wins.
        const [revoked] = await tx
          .update(enrolmentTokens)
          .set({ revokedAt: now })
          .where(
            and(
              eq(enrolmentTokens.id, id),
              eq(enrolmentTokens.orgId, orgId),
              isNull(enrolmentTokens.redeemedAt),
              isNull(enrolmentTokens.revokedAt),
            ),
          )
          .returning();
        if (revoked !== undefined) {
          await audit(tx, {
            orgId,
            actor: { kind: 'user', id: user.id },
            action: 'enrolment-token.revoke',
            targetKind: 'enrolment_token',
            targetId: id,
            detail: { name: revoked.name },
          });
          return;
        }
        const [row] = await tx
          .select()
          .from(enrolmentTokens)
          .where(and(eq(enrolmentTokens.id, id), eq(enrolmentTokens.orgId, orgId)));
        if (row === undefined)
          throw new ApiError('not-found', `no enrolment token ${id} in this organisation`);
        if (row.redeemedAt !== null) {
          throw new ApiError(
            'conflict',
            `this enrolment token was already used by robot ${row.redeemedBy}; to remove that robot, delete it in the console`,
          );
        }
        // Already revoked: nothing changes, nothing is logged again.
      });
      return reply.code(204).send();
    },
  });
};

/** What {@link createEnrolmentToken} makes. */
export interface NewEnrolmentToken {
  readonly orgId: string;
  /** A label for people, not a secret. */
  readonly name: string | undefined;
  /** 1 to {@link ENROLMENT_TOKEN_MAX_HOURS}. */
  readonly expiresInHours: number;
  /** Who creates it: an admin (`POST .../enrolment-tokens`), or the service itself (the demo robot). */
  readonly actor: Actor;
  readonly now: Date;
}

/**
 * Creates a one-time enrolment token in one transaction with its audit entry
 * (`enrolment-token.create`, never with the token). The token itself is in the result only; the
 * database keeps its SHA-256.
 */
export async function createEnrolmentToken(
  db: CloudDb,
  request: NewEnrolmentToken,
): Promise<{ row: EnrolmentToken; token: string }> {
  const { orgId, actor, now } = request;
  const token = newSecret(ENROLMENT_TOKEN_PREFIX);
  const row = await db.transaction(async (tx) => {
    const [created] = await tx
      .insert(enrolmentTokens)
      .values({
        orgId,
        name: request.name ?? null,
        tokenHash: hashSecret(token),
        createdBy: actor.kind === 'user' ? actor.id : null,
        createdAt: now,
        expiresAt: new Date(now.getTime() + request.expiresInHours * 3_600_000),
      })
      .returning();
    await audit(tx, {
      orgId,
      actor,
      action: 'enrolment-token.create',
      targetKind: 'enrolment_token',
      targetId: created!.id,
      detail: { name: created!.name, expiresAt: created!.expiresAt.toISOString() },
    });
    return created!;
  });
  return { row, token };
}

/** `POST /api/v1/enrol`: a robot redeems an enrolment token with its public key (no user credential). */
export const enrolRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = resource(app, { tags });
  routes.post('', {
    summary:
      "A robot redeems a one-time enrolment token with its Ed25519 public key and joins the token's organisation",
    security: [],
    body: enrolBody,
    response: { 201: enrolled },
    errors: [
      'invalid-request',
      'enrolment-token-invalid',
      'enrolment-token-used',
      'enrolment-token-expired',
      'enrolment-token-revoked',
      'robot-enrolled',
      'conflict',
    ],
    async handler({ body }, reply) {
      if (!ENROLMENT_TOKEN_PATTERN.test(body.token)) {
        throw new ApiError(
          'enrolment-token-invalid',
          `this is not an enrolment token (they start with ${ENROLMENT_TOKEN_PREFIX}); check that it was copied whole, or ${NEW_TOKEN_HINT}`,
        );
      }
      const enrolled = await redeem(ctx.db, body, ctx.now());
      ctx.fleet.handleRobotsChanged([enrolled.robotId]);
      return reply.code(201).send(enrolled);
    },
  });
};

/**
 * Redeems `token` for `robotId` in one transaction: consumes the token, registers the key, audits.
 * Any refusal after the token was taken throws inside the transaction, so the token stays unused.
 * Only `tx` is queried while it is open (PGlite has one connection).
 *
 * @throws {ApiError} `enrolment-token-*` for a token that cannot be redeemed, `robot-enrolled`
 *   for a robot enrolled elsewhere or with another key, `conflict` for a concurrent change.
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
  const state = tokenState(row, now);
  switch (state) {
    case 'redeemed':
      return new ApiError(
        'enrolment-token-used',
        `this enrolment token was already used (each enrols one robot once); a new token is needed: ${NEW_TOKEN_HINT}`,
      );
    case 'revoked':
      return new ApiError('enrolment-token-revoked', `this enrolment token was revoked; ${NEW_TOKEN_HINT}`);
    case 'expired':
      return new ApiError(
        'enrolment-token-expired',
        `this enrolment token expired at ${row.expiresAt.toISOString()}; ${NEW_TOKEN_HINT}`,
      );
    case 'unused':
      // The token was usable after all: a concurrent change between the two statements.
      return new ApiError('conflict', 'the enrolment token changed while it was being redeemed; try again');
    default:
      return state satisfies never;
  }
}

/** Where an enrolment token stands at `now`. */
function tokenState(row: EnrolmentToken, now: Date): EnrolmentTokenState {
  return oneTimeState(row, row.redeemedAt, now, { used: 'redeemed', open: 'unused' });
}

/** Whether two base64url public keys are the same bytes (a stored key may carry padding). */
function sameKey(stored: string, presented: string): boolean {
  return Buffer.from(stored, 'base64url').equals(Buffer.from(presented, 'base64url'));
}

/** How an enrolment token is shown: its state at `now`, never the secret nor its hash. */
function enrolmentTokenView(row: EnrolmentToken, now: Date): EnrolmentTokenView {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    state: tokenState(row, now),
    redeemedAt: row.redeemedAt,
    redeemedBy: row.redeemedBy,
  };
}
