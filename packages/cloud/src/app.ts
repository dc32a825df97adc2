import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { Authenticator } from './api/auth.js';
import type { ApiContext } from './api/context.js';
import { ApiError, type ErrorBody } from './api/errors.js';
import { accountRoutes } from './api/routes-account.js';
import { enrolmentRoutes } from './api/routes-enrolment.js';
import { orgRoutes } from './api/routes-orgs.js';
import { robotRoutes } from './api/routes-robots.js';
import { sessionRoutes } from './api/routes-sessions.js';
import type { CloudConfig } from './config.js';
import { consoleRoutes } from './console-assets.js';
import type { Database } from './db/index.js';
import type { EmbeddedOidcProvider, OidcVerifier } from './identity/index.js';
import type { InvitationProvider, Mailer } from './invitations/index.js';
import type { SessionKeyStore } from './sessions/index.js';
import type { SignallingHandle } from './signalling/index.js';

/** Path of the OpenAPI document. */
export const OPENAPI_PATH = '/api/v1/openapi.json';
/** Largest request body accepted, bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

/** Everything the HTTP app needs, built by {@link startCloud} or by a test. */
export interface AppDependencies {
  readonly config: CloudConfig;
  readonly database: Database;
  readonly verifier: OidcVerifier;
  readonly invitationProvider: InvitationProvider;
  readonly mail: Mailer;
  /** The embedded development provider, served under `/dev-oidc` (only without a configured issuer). */
  readonly devProvider?: EmbeddedOidcProvider;
  /** Fastify's logger option (default: pino at the configured level, secrets redacted). */
  readonly logger?: FastifyServerOptions['logger'];
  readonly now?: () => Date;
  /** Started pilot session keys owned by the caller; without them the app makes, starts and closes its own. */
  readonly sessionKeys?: SessionKeyStore;
  /** Signalling on this node (presence, sessions), read and acted on by the robot routes. */
  readonly signalling?: SignallingHandle;
}

/** Paths whose values never reach a log line. */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers["x-svc-id-token"]',
  'req.headers.cookie',
  '*.token',
  '*.key',
  '*.secret',
  '*.password',
  '*.accessToken',
  '*.idToken',
];

/** Pino options of svc-cloud: level from the config, secrets redacted, query strings dropped from URLs. */
export function loggerOptions(
  config: CloudConfig,
): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level: config.logLevel,
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({
        method: req.method,
        // Query strings may carry tokens (OIDC callbacks, invitation links): the path only.
        url: req.url.split('?')[0] ?? '',
        ip: req.ip,
      }),
    },
  };
}

/**
 * Builds the HTTP app (no listening): the API under `/api/v1`, its OpenAPI document, and the
 * development provider when there is one. Tests call `app.inject()` on it.
 */
export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? loggerOptions(deps.config),
    bodyLimit: MAX_BODY_BYTES,
    // Route schemas document the API; validation is the handlers' zod schemas, with clearer messages.
    ajv: { customOptions: { strict: false } },
    trustProxy: false,
  });
  app.setValidatorCompiler(() => (value) => ({ value }));

  const now = deps.now ?? (() => new Date());
  const ctx: ApiContext = {
    config: deps.config,
    database: deps.database,
    db: deps.database.db,
    auth: new Authenticator({
      db: deps.database.db,
      verifier: deps.verifier,
      issuer: deps.config.identity.issuer,
      // The app's clock, so `last_used_at` agrees with `revoked_at` and the other times it writes.
      now: () => now().getTime(),
    }),
    invitationProvider: deps.invitationProvider,
    mail: deps.mail,
    now,
    ...(deps.signalling === undefined ? {} : { signalling: deps.signalling }),
  };

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'svc-cloud API',
        version: 'v1',
        description:
          'Accounts, organisations, invitations, robot grants, API keys and the audit log of the fleet teleoperation service.',
      },
      servers: [{ url: deps.config.publicUrl }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'An OIDC access token issued for the API resource, or an API key (svc_key_...)',
          },
        },
      },
      security: [{ bearer: [] }],
    },
  });

  if (deps.config.rateLimitPerMinute > 0) {
    await app.register(rateLimit, {
      max: deps.config.rateLimitPerMinute,
      timeWindow: 60_000,
      // One budget per credential (people behind one address do not share it), else per address.
      keyGenerator: (request) => {
        const authorization = request.headers.authorization;
        return authorization === undefined
          ? `ip:${request.ip}`
          : `cred:${createHash('sha256').update(authorization).digest('base64url')}`;
      },
      errorResponseBuilder: (_request, context) => {
        const err = new ApiError(
          'rate-limited',
          `more than ${context.max} requests in a minute; retry in ${Math.ceil(context.ttl / 1000)} s`,
        );
        return Object.assign(err, { statusCode: 429 });
      },
    });
  }

  app.setErrorHandler((err, request, reply) => {
    if (err instanceof ApiError) {
      if (err.statusCode >= 500) request.log.warn({ code: err.code }, err.message);
      const body: ErrorBody = { error: { code: err.code, message: err.message } };
      return reply.code(err.statusCode).send(body);
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // Fastify's own refusals: body too large, bad JSON, unsupported media type.
      const body: ErrorBody = { error: { code: 'invalid-request', message: (err as Error).message } };
      return reply.code(status).send(body);
    }
    request.log.error({ err }, 'request failed');
    const body: ErrorBody = {
      error: { code: 'internal', message: 'the service failed to answer; it has been logged' },
    };
    return reply.code(500).send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    const body: ErrorBody = {
      error: { code: 'not-found', message: `no endpoint ${request.method} ${request.url.split('?')[0]}` },
    };
    return reply.code(404).send(body);
  });

  accountRoutes(app, ctx);
  orgRoutes(app, ctx);
  robotRoutes(app, ctx);
  await sessionRoutes(app, ctx, deps.sessionKeys === undefined ? {} : { keys: deps.sessionKeys });
  enrolmentRoutes(app, ctx);
  consoleRoutes(app);
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());

  const dev = deps.devProvider;
  if (dev !== undefined) {
    // oidc-provider reads its own request bodies (form posts): hand the raw request over before
    // Fastify parses anything.
    for (const url of [dev.mountPath, `${dev.mountPath}/*`]) {
      app.route({
        method: ['GET', 'POST', 'OPTIONS', 'DELETE', 'PUT', 'PATCH'],
        url,
        schema: { hide: true },
        // The lifecycle ends here: the provider answers on the raw response.
        onRequest: (request, reply) => {
          reply.hijack();
          dev.handler(request.raw, reply.raw);
        },
        handler: async () => undefined,
      });
    }
  }
  return app;
}
