import { eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { memberships, orgs } from '../db/index.js';
import { isIdentityError, verifiedEmailClaim } from '../identity/index.js';
import { API_KEY_PREFIX, bearerToken, identityFailure } from './auth.js';
import type { ApiContext } from './context.js';
import { ApiError } from './errors.js';
import { signIn } from './provisioning.js';

/** Scopes the console asks for at login. */
export const CONSOLE_SCOPES = ['openid', 'profile', 'email'] as const;

/** `GET /api/v1/console-config` and `GET /api/v1/me`. */
export function accountRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get(
    '/api/v1/console-config',
    {
      schema: {
        summary: 'What the console needs to start a login',
        tags: ['account'],
        security: [],
      },
    },
    async () => {
      const { identity, provisioning, devAllowAnonymous } = ctx.config;
      return {
        issuer: identity.issuer,
        clientId: identity.clientId,
        apiResource: identity.audience,
        scopes: CONSOLE_SCOPES,
        provisioning,
        developmentProvider: identity.kind === 'development',
        anonymous: devAllowAnonymous,
      };
    },
  );

  app.get(
    '/api/v1/me',
    {
      schema: {
        summary:
          'Signs the caller in (first login provisions them) and says who they are and where they belong',
        description:
          "Bearer: the access token issued for the API resource. Header `x-svc-id-token`: the ID token of the same login; its `sub` must equal the access token's and its email counts only when `email_verified` is true. Without it the verified email comes from userinfo, when the provider answers there.",
        tags: ['account'],
        headers: {
          type: 'object',
          properties: { 'x-svc-id-token': { type: 'string', description: 'The ID token of the same login' } },
        },
      },
    },
    async (request) => {
      const token = bearerToken(request);
      if (token === undefined || token.startsWith(API_KEY_PREFIX)) {
        throw new ApiError(
          'unauthenticated',
          'GET /api/v1/me needs a user\'s access token: "Authorization: Bearer <access token>"',
        );
      }
      const access = await ctx.auth.verifyAccessToken(token);
      const header = request.headers['x-svc-id-token'];
      const idToken = typeof header === 'string' && header !== '' ? header : undefined;
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
        // What the console shows next: the fleet, or the "no organisation yet" page.
        status: memberOf.length > 0 ? 'ready' : 'no-organisation',
        provisioning: ctx.config.provisioning,
        firstLogin: created,
        providerChanged,
      };
    },
  );
}
