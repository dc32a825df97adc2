import { and, desc, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { hashSecret, type Invitation, invitations, newSecret, orgs } from '../../db/index.js';
import { InvitationProviderError } from '../../invitations/index.js';
import { mayManageRole } from '../authz.js';
import { type ApiPlugin, ORG_ERRORS, requireOrgPermission, requireUser, USER_ERRORS } from '../context.js';
import { ApiError, errorResponses } from '../errors.js';
import { joinByInvitation } from '../provisioning.js';
import {
  noContent,
  optionalTimestamp,
  orgItemParams,
  orgParams,
  orgRole,
  timestamp,
  uuid,
} from '../schemas.js';

/** Text every invitation token starts with. */
export const INVITATION_TOKEN_PREFIX = 'svc_inv_';

/** States of an invitation as listed. */
const INVITATION_STATES = ['pending', 'accepted', 'revoked', 'expired'] as const;

const invitationBody = z.object({ email: z.email().max(254), role: orgRole });
const acceptBody = z.object({ token: z.string().startsWith(INVITATION_TOKEN_PREFIX).max(200) });

const invitation = z.object({
  id: uuid,
  email: z.string(),
  role: orgRole,
  state: z.enum(INVITATION_STATES),
  createdAt: timestamp,
  expiresAt: timestamp,
  acceptedAt: optionalTimestamp,
  revokedAt: optionalTimestamp,
});

const tags = ['invitations'];

/** Invitations of an org, under `/api/v1/orgs/:org/invitations`: invite, list, revoke. */
export const invitationRoutes: ApiPlugin = async (app, { ctx }) => {
  const { db } = ctx;

  app.post(
    '',
    {
      schema: {
        summary: 'Invites someone by email at a role; answers the link (shown once)',
        tags,
        params: orgParams,
        body: invitationBody,
        response: {
          201: z
            .object({
              invitation,
              token: z.string().describe('The invitation token; in this answer only'),
              link: z.string().describe('The console link that accepts the invitation'),
            })
            .describe('The invitation, its token and its link'),
          ...errorResponses([...ORG_ERRORS, 'provider-unavailable'], { body: true }),
        },
      },
    },
    async (request, reply) => {
      const orgId = request.params.org;
      const body = request.body;
      const { user, role } = await requireOrgPermission(ctx, request, orgId, 'members.manage');
      if (!mayManageRole(role, body.role)) {
        throw new ApiError('forbidden', `an ${role} cannot invite a ${body.role}; ask an owner`);
      }
      const email = body.email.toLowerCase();
      const now = ctx.now();
      const ttlSec = ctx.config.invitationTtlHours * 3600;
      let ott: string | undefined;
      try {
        ott = await ctx.invitationProvider.oneTimeToken(email, { expiresInSec: ttlSec });
      } catch (err) {
        if (err instanceof InvitationProviderError) {
          throw new ApiError('provider-unavailable', `the invitation could not be prepared: ${err.message}`, {
            cause: err,
          });
        }
        throw err;
      }
      const token = newSecret(INVITATION_TOKEN_PREFIX);
      const row = await db.transaction(async (tx) => {
        const [created] = await tx
          .insert(invitations)
          .values({
            orgId,
            email,
            role: body.role,
            tokenHash: hashSecret(token),
            createdBy: user.id,
            expiresAt: new Date(now.getTime() + ttlSec * 1000),
          })
          .returning();
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'invitation.create',
          targetKind: 'invitation',
          targetId: created!.id,
          detail: { email, role: body.role, provider: ctx.invitationProvider.name },
        });
        return created!;
      });
      const query = new URLSearchParams({ email, token, ...(ott === undefined ? {} : { ott }) });
      const link = `${ctx.config.consoleUrl}#/invite?${query.toString()}`;
      const [org] = await db.select({ name: orgs.name }).from(orgs).where(eq(orgs.id, orgId));
      await ctx.mail.send({
        to: email,
        subject: `You are invited to ${org?.name ?? 'an organisation'}`,
        text: `You have been invited as ${body.role}. Open ${link} to accept.`,
      });
      return reply.code(201).send({ invitation: invitationView(row, now), token, link });
    },
  );

  app.get(
    '',
    {
      schema: {
        summary: 'Invitations, newest first',
        tags,
        params: orgParams,
        response: {
          200: z.object({ invitations: z.array(invitation) }).describe('Invitations, newest first'),
          ...errorResponses(ORG_ERRORS),
        },
      },
    },
    async (request) => {
      const orgId = request.params.org;
      await requireOrgPermission(ctx, request, orgId, 'members.manage');
      const rows = await db
        .select()
        .from(invitations)
        .where(eq(invitations.orgId, orgId))
        .orderBy(desc(invitations.createdAt));
      const now = ctx.now();
      return { invitations: rows.map((r) => invitationView(r, now)) };
    },
  );

  app.delete(
    '/:id',
    {
      schema: {
        summary: 'Revokes an invitation',
        tags,
        params: orgItemParams,
        response: { 204: noContent, ...errorResponses([...ORG_ERRORS, 'conflict']) },
      },
    },
    async (request, reply) => {
      const p = request.params;
      const { user, role } = await requireOrgPermission(ctx, request, p.org, 'members.manage');
      await db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(invitations)
          .where(and(eq(invitations.id, p.id), eq(invitations.orgId, p.org)));
        if (row === undefined) throw new ApiError('not-found', `no invitation ${p.id} in this organisation`);
        if (!mayManageRole(role, row.role))
          throw new ApiError('forbidden', `an ${role} cannot revoke an invitation as ${row.role}`);
        if (row.acceptedAt !== null)
          throw new ApiError('conflict', 'the invitation was already accepted; remove the member instead');
        if (row.revokedAt !== null) return;
        await tx.update(invitations).set({ revokedAt: ctx.now() }).where(eq(invitations.id, p.id));
        await audit(tx, {
          orgId: p.org,
          actor: { kind: 'user', id: user.id },
          action: 'invitation.revoke',
          targetKind: 'invitation',
          targetId: p.id,
          detail: { email: row.email, role: row.role },
        });
      });
      return reply.code(204).send();
    },
  );
};

/** `POST /api/v1/invitations/accept`: the invitee accepts with the token of their link. */
export const invitationAcceptRoutes: ApiPlugin = async (app, { ctx }) => {
  app.post(
    '/accept',
    {
      schema: {
        summary: "Accepts an invitation with its token; the caller's verified email must be the invited one",
        tags,
        body: acceptBody,
        response: {
          200: z
            .object({ org: z.object({ id: uuid }), role: orgRole })
            .describe('The organisation joined, and the role in it'),
          ...errorResponses([...USER_ERRORS, 'invalid-request', 'not-found', 'gone'], { body: true }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(ctx, request);
      const now = ctx.now();
      return ctx.db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(invitations)
          .where(eq(invitations.tokenHash, hashSecret(request.body.token)))
          .for('update');
        if (row === undefined)
          throw new ApiError('not-found', 'no invitation has this token; ask for a new invitation');
        if (row.acceptedAt !== null || row.revokedAt !== null || row.expiresAt <= now) {
          const why =
            row.acceptedAt !== null ? 'already accepted' : row.revokedAt !== null ? 'revoked' : 'expired';
          throw new ApiError('gone', `this invitation was ${why}; ask for a new invitation`);
        }
        if (user.email === null || user.email !== row.email) {
          throw new ApiError(
            'forbidden',
            'this invitation is for another email address; sign in as the invited person (their email must be verified)',
          );
        }
        await joinByInvitation(tx, user, row, now, 'token');
        return { org: { id: row.orgId }, role: row.role };
      });
    },
  );
};

/** An invitation as the API shows it: its state at `now`, never the token nor its hash. */
function invitationView(row: Invitation, now: Date): z.output<typeof invitation> {
  const state =
    row.acceptedAt !== null
      ? 'accepted'
      : row.revokedAt !== null
        ? 'revoked'
        : row.expiresAt <= now
          ? 'expired'
          : 'pending';
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    state,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    acceptedAt: row.acceptedAt,
    revokedAt: row.revokedAt,
  };
}
