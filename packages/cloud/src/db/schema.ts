/**
 * The svc-cloud database schema: one drizzle schema for embedded PGlite and PostgreSQL.
 *
 * Columns are snake_case in SQL and camelCase in TypeScript; every timestamp is
 * `timestamp with time zone`. Change this file, then run `npm run db:generate -w @svc/cloud` and
 * commit the new migration in `packages/cloud/drizzle/`.
 *
 * @packageDocumentation
 */
import { type SQL, sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigserial,
  check,
  index,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/** Roles a user can hold in an org, strongest first. Also the roles an invitation can offer. */
export const ORG_ROLES = ['owner', 'admin', 'operator', 'viewer'] as const;
/** A role in an org: one of {@link ORG_ROLES}. */
export type OrgRole = (typeof ORG_ROLES)[number];

/** Who a robot grant is for: one user, every member of one org, or anyone signed in. */
export const GRANTEE_KINDS = ['user', 'org', 'public'] as const;
/** The kind of grantee of a robot grant: one of {@link GRANTEE_KINDS}. */
export type GranteeKind = (typeof GRANTEE_KINDS)[number];

/** What a robot grant allows: watching the robot, or watching and driving it. */
export const ROBOT_ACCESS = ['observe', 'drive'] as const;
/** The access a robot grant gives: one of {@link ROBOT_ACCESS}. */
export type RobotAccess = (typeof ROBOT_ACCESS)[number];

/**
 * Signalling denials remembered on a known robot (`robots.last_denial_reason`): a connection under
 * its id whose signature did not verify, or that proved another key than the enrolled one.
 */
export const ROBOT_DENIAL_REASONS = ['key-mismatch', 'bad-signature'] as const;
/** A denial remembered on a robot: one of {@link ROBOT_DENIAL_REASONS}. */
export type RobotDenialReason = (typeof ROBOT_DENIAL_REASONS)[number];

/** Who did something recorded in the audit log. */
export const ACTOR_KINDS = ['user', 'api_key', 'robot', 'system'] as const;
/** The kind of actor of an audit entry: one of {@link ACTOR_KINDS}. */
export type ActorKind = (typeof ACTOR_KINDS)[number];

/** `column IN ('a', 'b')` with the values inlined, as a CHECK constraint needs (no parameters in DDL). */
function oneOf(column: AnyPgColumn, values: readonly string[]): SQL {
  const literals = values.map((value) => sql.raw(`'${value.replaceAll("'", "''")}'`));
  return sql`${column} in (${sql.join(literals, sql`, `)})`;
}

/** A `timestamp with time zone` column read as a `Date`. */
function timestamptz<TName extends string>(name: TName) {
  return timestamp(name, { withTimezone: true, mode: 'date' });
}

// Columns many tables share, each a fresh builder per table.

/** `id`: a random UUID primary key. */
function randomId() {
  return uuid('id').primaryKey().defaultRandom();
}

/** `org_id` of a row that belongs to an org and is deleted with it. */
function ownerOrgId() {
  return uuid('org_id')
    .notNull()
    .references(() => orgs.id, { onDelete: 'cascade' });
}

/** `created_at`: when the row was made, by the database's clock unless given. */
function createdAt() {
  return timestamptz('created_at').notNull().defaultNow();
}

/** `created_by`: the user who made the row, forgotten when the user is deleted. */
function createdByUser() {
  return uuid('created_by').references(() => users.id, { onDelete: 'set null' });
}

/**
 * People who signed in through the OIDC provider, one row per (issuer, subject). `email` is set
 * only from a verified email claim, lowercased.
 */
export const users = pgTable(
  'users',
  {
    id: randomId(),
    oidcIssuer: text('oidc_issuer').notNull(),
    oidcSubject: text('oidc_subject').notNull(),
    email: text('email'),
    name: text('name'),
    createdAt: createdAt(),
    lastLoginAt: timestamptz('last_login_at').notNull().defaultNow(),
  },
  (t) => [
    unique('users_oidc_identity_key').on(t.oidcIssuer, t.oidcSubject),
    uniqueIndex('users_email_key').on(t.email).where(sql`${t.email} is not null`),
    check('users_email_lowercase', sql`${t.email} = lower(${t.email})`),
  ],
);

/** Organisations: the unit that owns robots, API keys and members. */
export const orgs = pgTable('orgs', {
  id: randomId(),
  name: text('name').notNull(),
  createdAt: createdAt(),
  createdBy: createdByUser(),
});

/** A user's role in an org; at most one per (org, user). */
export const memberships = pgTable(
  'memberships',
  {
    orgId: ownerOrgId(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ORG_ROLES }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ name: 'memberships_pkey', columns: [t.orgId, t.userId] }),
    index('memberships_user_id_idx').on(t.userId),
    check('memberships_role_check', oneOf(t.role, ORG_ROLES)),
  ],
);

/**
 * An offer to join an org with a role, sent to an email address. Only the SHA-256 of the
 * one-time token is stored (`token_hash`, see `hashSecret`), never the token.
 */
export const invitations = pgTable(
  'invitations',
  {
    id: randomId(),
    orgId: ownerOrgId(),
    email: text('email').notNull(),
    role: text('role', { enum: ORG_ROLES }).notNull(),
    tokenHash: text('token_hash').notNull().unique('invitations_token_hash_key'),
    createdBy: createdByUser(),
    createdAt: createdAt(),
    expiresAt: timestamptz('expires_at').notNull(),
    acceptedAt: timestamptz('accepted_at'),
    acceptedBy: uuid('accepted_by').references(() => users.id, { onDelete: 'set null' }),
    revokedAt: timestamptz('revoked_at'),
  },
  (t) => [
    index('invitations_org_id_idx').on(t.orgId),
    index('invitations_email_idx').on(t.email),
    check('invitations_role_check', oneOf(t.role, ORG_ROLES)),
    check('invitations_email_lowercase', sql`${t.email} = lower(${t.email})`),
  ],
);

/**
 * Robots known to the cloud, identified by their Ed25519 public key (base64url), with the last
 * signalling denial under their id.
 */
export const robots = pgTable(
  'robots',
  {
    robotId: text('robot_id').primaryKey(),
    orgId: uuid('org_id').references(() => orgs.id, { onDelete: 'set null' }),
    publicKey: text('public_key').notNull(),
    name: text('name'),
    createdAt: createdAt(),
    enrolledAt: timestamptz('enrolled_at'),
    lastSeenAt: timestamptz('last_seen_at'),
    /**
     * The last signalling denial under this robot's id since it last connected (set with
     * `last_denial_at`; both cleared when the robot next proves its key).
     */
    lastDenialReason: text('last_denial_reason', { enum: ROBOT_DENIAL_REASONS }),
    lastDenialAt: timestamptz('last_denial_at'),
  },
  (t) => [
    index('robots_org_id_idx').on(t.orgId),
    check('robots_last_denial_reason_check', oneOf(t.lastDenialReason, ROBOT_DENIAL_REASONS)),
    check('robots_last_denial_check', sql`(${t.lastDenialReason} is null) = (${t.lastDenialAt} is null)`),
  ],
);

/**
 * Who may observe or drive a robot besides its org. Exactly the grantee column that matches
 * `grantee_kind` is set (`user_id` for `user`, `org_id` for `org`, neither for `public`), and a
 * grant exists at most once: NULLs count as equal, so a second public grant is refused too.
 */
export const robotGrants = pgTable(
  'robot_grants',
  {
    id: randomId(),
    robotId: text('robot_id')
      .notNull()
      .references(() => robots.robotId, { onDelete: 'cascade' }),
    granteeKind: text('grantee_kind', { enum: GRANTEE_KINDS }).notNull(),
    userId: uuid('user_id').references(() => users.id, { onDelete: 'cascade' }),
    /** The grantee org, not the robot's org. */
    orgId: uuid('org_id').references(() => orgs.id, { onDelete: 'cascade' }),
    access: text('access', { enum: ROBOT_ACCESS }).notNull(),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
  },
  (t) => [
    unique('robot_grants_grantee_key').on(t.robotId, t.granteeKind, t.userId, t.orgId).nullsNotDistinct(),
    index('robot_grants_user_id_idx').on(t.userId),
    index('robot_grants_org_id_idx').on(t.orgId),
    check('robot_grants_grantee_kind_check', oneOf(t.granteeKind, GRANTEE_KINDS)),
    check('robot_grants_access_check', oneOf(t.access, ROBOT_ACCESS)),
    check(
      'robot_grants_grantee_check',
      sql`(${t.granteeKind} = 'user' and ${t.userId} is not null and ${t.orgId} is null)
        or (${t.granteeKind} = 'org' and ${t.orgId} is not null and ${t.userId} is null)
        or (${t.granteeKind} = 'public' and ${t.userId} is null and ${t.orgId} is null)`,
    ),
  ],
);

/**
 * An org's API keys. A key is `prefix` + secret; the prefix is stored in clear to find the row,
 * and only the SHA-256 of the whole key is kept (`secret_hash`, see `hashSecret`).
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: randomId(),
    orgId: ownerOrgId(),
    name: text('name').notNull(),
    prefix: text('prefix').notNull().unique('api_keys_prefix_key'),
    secretHash: text('secret_hash').notNull(),
    scopes: text('scopes').array().notNull(),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    lastUsedAt: timestamptz('last_used_at'),
    revokedAt: timestamptz('revoked_at'),
  },
  (t) => [index('api_keys_org_id_idx').on(t.orgId)],
);

/**
 * One-time tokens an org admin creates so a robot can enrol into the org (`svc_enr_...`). Only the
 * SHA-256 of the token is stored (`token_hash`, see `hashSecret`). A token is redeemed at most once:
 * `redeemed_at` is set by the single `UPDATE ... WHERE redeemed_at IS NULL` that wins.
 */
export const enrolmentTokens = pgTable(
  'enrolment_tokens',
  {
    id: randomId(),
    orgId: ownerOrgId(),
    /** A label for people ("line 3 robots"), not a secret. */
    name: text('name'),
    tokenHash: text('token_hash').notNull().unique('enrolment_tokens_token_hash_key'),
    createdBy: createdByUser(),
    createdAt: createdAt(),
    expiresAt: timestamptz('expires_at').notNull(),
    redeemedAt: timestamptz('redeemed_at'),
    /** The robot that redeemed it (no foreign key: the robot may be deleted later). */
    redeemedBy: text('redeemed_by'),
    revokedAt: timestamptz('revoked_at'),
  },
  (t) => [index('enrolment_tokens_org_id_idx').on(t.orgId)],
);

/**
 * The service's own ES256 keys for pilot session tokens. The newest key not past `retires_at`
 * signs; every key not past `expires_at` is published in `/.well-known/svc-session-jwks.json`, so
 * tokens signed before a rotation verify until they expire. Private keys are JWKs (PKCS#8 would do
 * as well); the database is as sensitive as the keys it holds.
 */
export const sessionSigningKeys = pgTable('session_signing_keys', {
  kid: text('kid').primaryKey(),
  privateJwk: jsonb('private_jwk').$type<Record<string, unknown>>().notNull(),
  publicJwk: jsonb('public_jwk').$type<Record<string, unknown>>().notNull(),
  createdAt: createdAt(),
  /** After this the key no longer signs. */
  retiresAt: timestamptz('retires_at').notNull(),
  /** After this the key is no longer published (its last token has expired). */
  expiresAt: timestamptz('expires_at').notNull(),
});

/**
 * What was done, by whom, to what. No foreign keys: entries outlive the orgs, users and robots
 * they name. Read an org's log newest first through `(org_id, at desc, id desc)`.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    orgId: uuid('org_id'),
    actorKind: text('actor_kind', { enum: ACTOR_KINDS }).notNull(),
    actorId: text('actor_id'),
    /** Dotted `noun.verb`, e.g. `membership.create`. */
    action: text('action').notNull(),
    targetKind: text('target_kind'),
    targetId: text('target_id'),
    detail: jsonb('detail').$type<Record<string, unknown>>().notNull().default({}),
    at: timestamptz('at').notNull().defaultNow(),
  },
  (t) => [
    // DESC means NULLS FIRST in PostgreSQL; drizzle writes NULLS LAST unless told, and then the
    // index would not serve `order by at desc, id desc`.
    index('audit_log_org_at_idx').on(t.orgId, t.at.desc().nullsFirst(), t.id.desc().nullsFirst()),
    check('audit_log_actor_kind_check', oneOf(t.actorKind, ACTOR_KINDS)),
  ],
);

/** A row of {@link users}. */
export type User = typeof users.$inferSelect;
/** The values to insert a row of {@link users}. */
export type NewUser = typeof users.$inferInsert;
/** A row of {@link orgs}. */
export type Org = typeof orgs.$inferSelect;
/** The values to insert a row of {@link orgs}. */
export type NewOrg = typeof orgs.$inferInsert;
/** A row of {@link memberships}. */
export type Membership = typeof memberships.$inferSelect;
/** The values to insert a row of {@link memberships}. */
export type NewMembership = typeof memberships.$inferInsert;
/** A row of {@link invitations}. */
export type Invitation = typeof invitations.$inferSelect;
/** The values to insert a row of {@link invitations}. */
export type NewInvitation = typeof invitations.$inferInsert;
/** A row of {@link robots}. */
export type Robot = typeof robots.$inferSelect;
/** The values to insert a row of {@link robots}. */
export type NewRobot = typeof robots.$inferInsert;
/** A row of {@link robotGrants}. */
export type RobotGrant = typeof robotGrants.$inferSelect;
/** The values to insert a row of {@link robotGrants}. */
export type NewRobotGrant = typeof robotGrants.$inferInsert;
/** A row of {@link apiKeys}. */
export type ApiKey = typeof apiKeys.$inferSelect;
/** The values to insert a row of {@link apiKeys}. */
export type NewApiKey = typeof apiKeys.$inferInsert;
/** A row of {@link enrolmentTokens}. */
export type EnrolmentToken = typeof enrolmentTokens.$inferSelect;
/** A row of {@link sessionSigningKeys}. */
export type SessionSigningKey = typeof sessionSigningKeys.$inferSelect;
/** A row of {@link auditLog}. */
export type AuditEntry = typeof auditLog.$inferSelect;
/** The values to insert a row of {@link auditLog}. */
export type NewAuditEntry = typeof auditLog.$inferInsert;
