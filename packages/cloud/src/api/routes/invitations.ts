import { and, desc, eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../../audit/index.js';
import { hashSecret, type Invitation, invitations, newSecret, orgs } from '../../db/index.js';
import { InvitationProviderError } from '../../invitations/index.js';
import { mayManageRole } from '../authz.js';
import { type ApiPlugin, requireUser, USER_ERRORS } from '../context.js';
import { ApiError } from '../errors.js';
import { oneTimeState } from '../one-time.js';
import { joinByInvitation } from '../provisioning.js';
import { orgResource, resource } from '../route.js';
import { noContent, optionalTimestamp, orgItemParams, orgRole, timestamp, uuid } from '../schemas.js';

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
  const routes = orgResource(app, ctx, { tags, permission: 'members.manage' });

  routes.post('', {
    summary: 'Invites someone by email at a role; answers the link (shown once)',
    body: invitationBody,
    response: {
      201: z
        .object({
          invitation,
          token: z.string().describe('The invitation token; in this answer only'),
          link: z.string().describe('The console link that accepts the invitation'),
        })
        .describe('The invitation, its token and its link'),
    },
    moreErrors: ['provider-unavailable'],
    async handler({ orgId, user, role }, { body }, reply) {
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
  });

  routes.get('', {
    summary: 'Invitations, newest first',
    response: { 200: z.object({ invitations: z.array(invitation) }).describe('Invitations, newest first') },
    async handler({ orgId }) {
      const rows = await db
        .select()
        .from(invitations)
        .where(eq(invitations.orgId, orgId))
        .orderBy(desc(invitations.createdAt));
      const now = ctx.now();
      return { invitations: rows.map((r) => invitationView(r, now)) };
    },
  });

  routes.delete('/:id', {
    summary: 'Revokes an invitation',
    params: orgItemParams,
    response: { 204: noContent },
    moreErrors: ['conflict'],
    async handler({ orgId, user, role }, { params: { id } }, reply) {
      await db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(invitations)
          .where(and(eq(invitations.id, id), eq(invitations.orgId, orgId)));
        if (row === undefined) throw new ApiError('not-found', `no invitation ${id} in this organisation`);
        if (!mayManageRole(role, row.role))
          throw new ApiError('forbidden', `an ${role} cannot revoke an invitation as ${row.role}`);
        if (row.acceptedAt !== null)
          throw new ApiError('conflict', 'the invitation was already accepted; remove the member instead');
        if (row.revokedAt !== null) return;
        await tx.update(invitations).set({ revokedAt: ctx.now() }).where(eq(invitations.id, id));
        await audit(tx, {
          orgId,
          actor: { kind: 'user', id: user.id },
          action: 'invitation.revoke',
          targetKind: 'invitation',
          targetId: id,
          detail: { email: row.email, role: row.role },
        });
      });
      return reply.code(204).send();
    },
  });
};

/** `POST /api/v1/invitations/accept`: the invitee accepts with the token of their link. */
export const invitationAcceptRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = resource(app, { tags });
  routes.post('/accept', {
    summary: "Accepts an invitation with its token; the caller's verified email must be the invited one",
    description:
      'Accepting again an invitation this caller already accepted (also when their sign-in matched it by email) answers the same 200.',
    body: acceptBody,
    response: {
      200: z
        .object({ org: z.object({ id: uuid }), role: orgRole })
        .describe('The organisation joined, and the role in it'),
    },
    errors: [...USER_ERRORS, 'invalid-request', 'not-found', 'gone'],
    async handler(request) {
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
        // Accepted by this same person already (invite-only sign-in matches a pending invitation
        // by verified email): the link's acceptance is that one, not a second use.
        if (row.acceptedAt !== null && row.acceptedBy === user.id) {
          return { org: { id: row.orgId }, role: row.role };
        }
        const state = oneTimeState(row, row.acceptedAt, now, { used: 'already accepted', open: 'open' });
        if (state !== 'open')
          throw new ApiError('gone', `this invitation was ${state}; ask for a new invitation`);
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
  });
};

/** An invitation as the API shows it: its state at `now`, never the token nor its hash. */
function invitationView(row: Invitation, now: Date): z.output<typeof invitation> {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    state: oneTimeState(row, row.acceptedAt, now, { used: 'accepted', open: 'pending' }),
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    acceptedAt: row.acceptedAt,
    revokedAt: row.revokedAt,
  };
}
