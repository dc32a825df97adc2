/**
 * svc-cloud's HTTP API: each resource a Fastify plugin typed by its zod schemas, registered with
 * its prefix. The table below is the API's table of contents.
 *
 * @packageDocumentation
 */
import type { FastifyInstance } from 'fastify';
import { SESSION_JWKS_PATH } from '../sessions/index.js';
import type { ApiContext, ApiPlugin } from './context.js';
import { consoleConfigRoutes, meRoutes } from './routes/account.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { auditRoutes } from './routes/audit.js';
import { enrolmentTokenRoutes, enrolRoutes } from './routes/enrolment.js';
import { fleetRoutes } from './routes/fleet.js';
import { grantRoutes } from './routes/grants.js';
import { invitationAcceptRoutes, invitationRoutes } from './routes/invitations.js';
import { memberRoutes } from './routes/members.js';
import { orgRoutes } from './routes/orgs.js';
import { robotRoutes, robotSessionRoutes } from './routes/robots.js';
import { sessionJwksRoutes, sessionTokenRoutes } from './routes/session-tokens.js';

/** Every resource of the API with the prefix it is registered under. */
export const API_RESOURCES: readonly { readonly prefix: string; readonly plugin: ApiPlugin }[] = [
  { prefix: '/api/v1/console-config', plugin: consoleConfigRoutes },
  { prefix: '/api/v1/me', plugin: meRoutes },
  { prefix: '/api/v1/orgs', plugin: orgRoutes },
  { prefix: '/api/v1/orgs/:org/members', plugin: memberRoutes },
  { prefix: '/api/v1/orgs/:org/invitations', plugin: invitationRoutes },
  { prefix: '/api/v1/invitations', plugin: invitationAcceptRoutes },
  { prefix: '/api/v1/orgs/:org/api-keys', plugin: apiKeyRoutes },
  { prefix: '/api/v1/orgs/:org/enrolment-tokens', plugin: enrolmentTokenRoutes },
  { prefix: '/api/v1/orgs/:org/audit', plugin: auditRoutes },
  { prefix: '/api/v1/orgs/:org/fleet', plugin: fleetRoutes },
  { prefix: '/api/v1/enrol', plugin: enrolRoutes },
  { prefix: '/api/v1/robots', plugin: robotRoutes },
  { prefix: '/api/v1/robots/:robot/sessions', plugin: robotSessionRoutes },
  { prefix: '/api/v1/robots/:robot/grants', plugin: grantRoutes },
  { prefix: '/api/v1/session-tokens', plugin: sessionTokenRoutes },
  // Not under /api/v1: robots fetch it by this well-known path.
  { prefix: SESSION_JWKS_PATH, plugin: sessionJwksRoutes },
];

/** Registers every resource of {@link API_RESOURCES} on `app`, each with `ctx`. */
export async function registerApi(app: FastifyInstance, ctx: ApiContext): Promise<void> {
  for (const { prefix, plugin } of API_RESOURCES) await app.register(plugin, { prefix, ctx });
}
