import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import { audit, SYSTEM_ACTOR } from '../audit/index.js';
import type { CloudConfig } from '../config.js';
import { type CloudDb, invitations, memberships, type OrgRole, orgs, type User, users } from '../db/index.js';
import { atLeast } from './authz.js';

/** `last_login_at` is written at most this often per user. */
const LOGIN_RESOLUTION_MS = 60_000;

/** Invitations for `email` that can still be accepted at `now`. */
function pendingFor(email: string, now: Date) {
  return and(
    eq(invitations.email, email),
    isNull(invitations.acceptedAt),
    isNull(invitations.revokedAt),
    gt(invitations.expiresAt, now),
  );
}

async function hasPendingInvitation(db: CloudDb, email: string, now: Date): Promise<boolean> {
  const [row] = await db
    .select({ id: invitations.id })
    .from(invitations)
    .where(pendingFor(email, now))
    .limit(1);
  return row !== undefined;
}

/** What a login proved about a person. */
export interface SignIn {
  readonly issuer: string;
  readonly subject: string;
  /** Verified email, lowercased, or undefined when the provider did not vouch for one. */
  readonly email: string | undefined;
  readonly name: string | undefined;
  /** Claims of the access token and ID token, for the role claim of `default-org`. */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** The user after sign-in, and what happened on the way. */
export interface SignInResult {
  readonly user: User;
  readonly created: boolean;
  /** The user was known under another issuer and was re-keyed onto this one (provider change). */
  readonly providerChanged: boolean;
}

/**
 * Signs a person in: finds their user by (issuer, subject), or re-keys the user whose verified
 * email matches (a change of identity provider), or creates one and applies the provisioning
 * policy. Pending invitations for the verified email are accepted on every sign-in. Everything
 * that changes access is audited, in one transaction.
 */
export async function signIn(
  db: CloudDb,
  config: CloudConfig,
  who: SignIn,
  now = new Date(),
): Promise<SignInResult> {
  // The console calls GET /api/v1/me on every page load: a known user whose facts have not
  // changed, seen within the last minute, with no invitation waiting, needs no write.
  const [known] = await db
    .select()
    .from(users)
    .where(and(eq(users.oidcIssuer, who.issuer), eq(users.oidcSubject, who.subject)));
  if (
    known !== undefined &&
    (who.email === undefined || who.email === known.email) &&
    (who.name === undefined || known.name !== null) &&
    now.getTime() - known.lastLoginAt.getTime() < LOGIN_RESOLUTION_MS &&
    (known.email === null || !(await hasPendingInvitation(db, known.email, now)))
  ) {
    return { user: known, created: false, providerChanged: false };
  }
  return db.transaction(async (tx) => {
    let created = false;
    let providerChanged = false;
    let [user] = await tx
      .select()
      .from(users)
      .where(and(eq(users.oidcIssuer, who.issuer), eq(users.oidcSubject, who.subject)));
    if (user === undefined && who.email !== undefined) {
      const [previous] = await tx.select().from(users).where(eq(users.email, who.email));
      if (previous !== undefined) {
        [user] = await tx
          .update(users)
          .set({ oidcIssuer: who.issuer, oidcSubject: who.subject, lastLoginAt: now })
          .where(eq(users.id, previous.id))
          .returning();
        providerChanged = true;
        await audit(tx, {
          orgId: null,
          actor: SYSTEM_ACTOR,
          action: 'user.provider-change',
          targetKind: 'user',
          targetId: previous.id,
          detail: {
            email: who.email,
            fromIssuer: previous.oidcIssuer,
            fromSubject: previous.oidcSubject,
            toIssuer: who.issuer,
            toSubject: who.subject,
          },
        });
      }
    }
    if (user === undefined) {
      [user] = await tx
        .insert(users)
        .values({
          oidcIssuer: who.issuer,
          oidcSubject: who.subject,
          email: who.email ?? null,
          name: who.name ?? null,
          lastLoginAt: now,
        })
        .returning();
      created = true;
      await audit(tx, {
        orgId: null,
        actor: SYSTEM_ACTOR,
        action: 'user.create',
        targetKind: 'user',
        targetId: user!.id,
        detail: { issuer: who.issuer, email: who.email ?? null },
      });
      await provision(tx, config, user!, who);
    } else if (!providerChanged) {
      const changes: Partial<User> = { lastLoginAt: now };
      // A verified email is learned (or corrected) on any login; it never becomes unverified.
      if (who.email !== undefined && who.email !== user.email) {
        // Unless another user holds it (e.g. this login first came without a verified email, and
        // the email's owner signed in through another provider): neither account takes the other's.
        const [holder] = await tx.select({ id: users.id }).from(users).where(eq(users.email, who.email));
        if (holder === undefined) changes.email = who.email;
        else
          await audit(tx, {
            orgId: null,
            actor: SYSTEM_ACTOR,
            action: 'user.email-conflict',
            targetKind: 'user',
            targetId: user.id,
            detail: { email: who.email, heldBy: holder.id },
          });
      }
      if (who.name !== undefined && user.name === null) changes.name = who.name;
      [user] = await tx.update(users).set(changes).where(eq(users.id, user.id)).returning();
    }
    if (who.email !== undefined && user!.email === who.email) {
      await acceptInvitationsByEmail(tx, user!, who.email, now);
    }
    return { user: user!, created, providerChanged };
  });
}

async function provision(tx: CloudDb, config: CloudConfig, user: User, who: SignIn): Promise<void> {
  switch (config.provisioning) {
    case 'self-serve': {
      const label = who.name ?? who.email?.split('@')[0] ?? 'My';
      const [org] = await tx
        .insert(orgs)
        .values({ name: `${label}'s organisation`, createdBy: user.id })
        .returning();
      await tx.insert(memberships).values({ orgId: org!.id, userId: user.id, role: 'owner' });
      await audit(tx, {
        orgId: org!.id,
        actor: SYSTEM_ACTOR,
        action: 'provisioning.self-serve',
        targetKind: 'user',
        targetId: user.id,
        detail: { org: org!.id, role: 'owner' },
      });
      return;
    }
    case 'invite-only':
      // Nothing until an invitation matches (accepted right after this, by verified email).
      await audit(tx, {
        orgId: null,
        actor: SYSTEM_ACTOR,
        action: 'provisioning.invite-only',
        targetKind: 'user',
        targetId: user.id,
        detail: { note: 'no access until an invitation matches the verified email' },
      });
      return;
    case 'default-org': {
      const role = mappedRole(config, who.claims);
      const org = await defaultOrg(tx, config.defaultOrgName);
      if (role === undefined) {
        await audit(tx, {
          orgId: org.id,
          actor: SYSTEM_ACTOR,
          action: 'provisioning.denied',
          targetKind: 'user',
          targetId: user.id,
          detail: { claim: config.roleClaim ?? null, values: claimValues(who.claims, config.roleClaim) },
        });
        return;
      }
      await tx.insert(memberships).values({ orgId: org.id, userId: user.id, role });
      await audit(tx, {
        orgId: org.id,
        actor: SYSTEM_ACTOR,
        action: 'provisioning.default-org',
        targetKind: 'user',
        targetId: user.id,
        detail: { role, claim: config.roleClaim ?? null },
      });
      return;
    }
    default:
      return config.provisioning satisfies never;
  }
}

/** The values of the role claim: a string, or an array of strings (groups). */
function claimValues(claims: Readonly<Record<string, unknown>>, claim: string | undefined): string[] {
  if (claim === undefined) return [];
  const value = claims[claim];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return [];
}

/** The highest role any of the user's claim values maps to; undefined when none is mapped. */
export function mappedRole(
  config: CloudConfig,
  claims: Readonly<Record<string, unknown>>,
): OrgRole | undefined {
  const order: readonly OrgRole[] = ['owner', 'admin', 'operator', 'viewer'];
  const roles = new Set(claimValues(claims, config.roleClaim).flatMap((v) => config.roleMap.get(v) ?? []));
  return order.find((r) => roles.has(r));
}

/**
 * The one org of the `default-org` policy: the oldest with the configured name, created on first
 * use. Call it inside a transaction (it takes a transaction-scoped advisory lock, so two first
 * logins at once create one org).
 */
export async function defaultOrg(tx: CloudDb, name: string) {
  await tx.execute(sql`select pg_advisory_xact_lock(${0x5_de_fa_01})`);
  const [existing] = await tx.select().from(orgs).where(eq(orgs.name, name)).orderBy(orgs.createdAt).limit(1);
  if (existing !== undefined) return existing;
  const [org] = await tx.insert(orgs).values({ name }).returning();
  return org!;
}

/** Accepts every pending, unexpired invitation for `email`, joining its org at its role. */
async function acceptInvitationsByEmail(tx: CloudDb, user: User, email: string, now: Date): Promise<void> {
  const pending = await tx.select().from(invitations).where(pendingFor(email, now));
  for (const invitation of pending) await joinByInvitation(tx, user, invitation, now, 'email');
}

/**
 * Makes `user` a member through `invitation` (never lowering an existing role) and marks it accepted.
 */
export async function joinByInvitation(
  tx: CloudDb,
  user: User,
  invitation: typeof invitations.$inferSelect,
  now: Date,
  via: 'email' | 'token',
): Promise<void> {
  const [member] = await tx
    .select()
    .from(memberships)
    .where(and(eq(memberships.orgId, invitation.orgId), eq(memberships.userId, user.id)));
  if (member === undefined) {
    await tx.insert(memberships).values({ orgId: invitation.orgId, userId: user.id, role: invitation.role });
  } else if (!atLeast(member.role, invitation.role)) {
    await tx
      .update(memberships)
      .set({ role: invitation.role })
      .where(and(eq(memberships.orgId, invitation.orgId), eq(memberships.userId, user.id)));
  }
  await tx
    .update(invitations)
    .set({ acceptedAt: now, acceptedBy: user.id })
    .where(eq(invitations.id, invitation.id));
  await audit(tx, {
    orgId: invitation.orgId,
    actor: { kind: 'user', id: user.id },
    action: 'invitation.accept',
    targetKind: 'invitation',
    targetId: invitation.id,
    detail: { email: invitation.email, role: invitation.role, via },
  });
}
