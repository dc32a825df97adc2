import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { PROVISIONING_POLICIES } from '../../config.js';
import { memberships, orgs } from '../../db/index.js';
import { isIdentityError, verifiedEmailClaim } from '../../identity/index.js';
import { API_KEY_PREFIX, bearerToken, identityFailure } from '../auth.js';
import type { ApiPlugin } from '../context.js';
import { ApiError } from '../errors.js';
import { signIn } from '../provisioning.js';
import { resource } from '../route.js';
import { orgRole, uuid } from '../schemas.js';

const tags = ['account'];

/** Scopes the console asks for at login. */
export const CONSOLE_SCOPES = ['openid', 'profile', 'email'] as const;

const consoleConfig = z
  .object({
    issuer: z.string(),
    clientId: z.string(),
    apiResource: z.string().describe('The `resource` (audience) to ask access tokens for'),
    scopes: z.array(z.string()),
    provisioning: z.enum(PROVISIONING_POLICIES),
    developmentProvider: z.boolean().describe('Whether the issuer is the embedded development provider'),
    anonymous: z.boolean().describe('Whether callers without an account may list and drive robots'),
    openEnrolment: z
      .boolean()
      .describe('Whether development open enrolment admits unknown robots (they belong to no organisation)'),
  })
  .describe('What the console needs to start a login');

/** `GET /api/v1/console-config`: what the console needs before anyone signs in. */
export const consoleConfigRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = resource(app, { tags });
  routes.get('', {
    summary: 'What the console needs to start a login',
    security: [],
    response: { 200: consoleConfig },
    errors: [],
    async handler() {
      const { identity, provisioning, devAllowAnonymous, devOpenEnrolment } = ctx.config;
      return {
        issuer: identity.issuer,
        clientId: identity.clientId,
        apiResource: identity.audience,
        scopes: [...CONSOLE_SCOPES],
        provisioning,
        developmentProvider: identity.kind === 'development',
        anonymous: devAllowAnonymous,
        openEnrolment: devOpenEnrolment,
      };
    },
  });
};

const meHeaders = z.looseObject({
  'x-svc-id-token': z.string().optional().describe('The ID token of the same login'),
});

const me = z
  .object({
    user: z.object({
      id: uuid,
      email: z.string().nullable().describe('The verified email, or null when the provider vouched for none'),
      name: z.string().nullable(),
      emailVerified: z.boolean(),
    }),
    orgs: z.array(z.object({ id: uuid, name: z.string(), role: orgRole })),
    status: z
      .enum(['ready', 'no-organisation'])
      .describe('What the console shows next: the fleet, or the "no organisation yet" page'),
    provisioning: z.enum(PROVISIONING_POLICIES),
    firstLogin: z.boolean(),
    providerChanged: z
      .boolean()
      .describe('The user was known under another identity provider and moved to this one'),
  })
  .describe('The signed-in user and their organisations');

/** `GET /api/v1/me`: signs the caller in (provisioning them at first login) and says who they are. */
export const meRoutes: ApiPlugin = async (app, { ctx }) => {
  const routes = resource(app, { tags });
  routes.get('', {
    summary: 'Signs the caller in (first login provisions them) and says who they are and where they belong',
    description:
      "Bearer: the access token issued for the API resource. Header `x-svc-id-token`: the ID token of the same login; its `sub` must equal the access token's and its email counts only when `email_verified` is true. Without it the verified email comes from userinfo, when the provider answers there.",
    headers: meHeaders,
    response: { 200: me },
    errors: ['unauthenticated', 'id-token-rejected', 'provider-unavailable'],
    async handler(request): Promise<z.output<typeof me>> {
      const token = bearerToken(request);
      if (token === undefined || token.startsWith(API_KEY_PREFIX)) {
        throw new ApiError(
          'unauthenticated',
          'GET /api/v1/me needs a user\'s access token: "Authorization: Bearer <access token>"',
        );
      }
      const access = await ctx.auth.verifyAccessToken(token);
      const header = request.headers['x-svc-id-token'];
      const idToken = header !== undefined && header !== '' ? header : undefined;
      let email: string | undefined;
      let idClaims: Record<string, unknown> = {};
      try {
        if (idToken !== undefined) {
          idClaims = (await ctx.auth.verifier.verifyIdToken(idToken, access.sub)).claims;
          email = verifiedEmailClaim(idClaims);
        }
        // Userinfo, for providers whose userinfo accepts the access token (spec 5.1.4).
        email ??= await ctx.auth.verifier.verifiedEmail({ sub: access.sub, accessToken: token });
      } catch (err) {
        if (!isIdentityError(err)) throw err;
        if (
          err.code === 'provider-unreachable' ||
          err.code === 'discovery-failed' ||
          err.code === 'userinfo-failed'
        ) {
          throw identityFailure(err, 'userinfo');
        }
        throw new ApiError(
          'id-token-rejected',
          `the ID token in x-svc-id-token was rejected (${err.code}): ${err.message}. Send the ID token of the same login.`,
          { cause: err },
        );
      }
      const name = typeof idClaims.name === 'string' ? idClaims.name : undefined;
      const { user, created, providerChanged } = await signIn(
        ctx.db,
        ctx.config,
        {
          issuer: ctx.auth.issuer,
          subject: access.sub,
          email,
          name,
          claims: { ...idClaims, ...access.claims },
        },
        ctx.now(),
      );
      const memberOf = await ctx.db
        .select({ id: orgs.id, name: orgs.name, role: memberships.role })
        .from(memberships)
        .innerJoin(orgs, eq(orgs.id, memberships.orgId))
        .where(eq(memberships.userId, user.id))
        .orderBy(orgs.name);
      return {
        user: { id: user.id, email: user.email, name: user.name, emailVerified: user.email !== null },
        orgs: memberOf,
        status: memberOf.length > 0 ? 'ready' : 'no-organisation',
        provisioning: ctx.config.provisioning,
        firstLogin: created,
        providerChanged,
      };
    },
  });
};
