import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import { type Clock, systemClock } from '@svc/runtime';
import { createLogger } from '@svc/runtime/node';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifySchemaCompiler,
  LogController,
} from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { type ZodType, z } from 'zod';
import { Authenticator } from './api/auth.js';
import type { ApiContext } from './api/context.js';
import {
  API_ERRORS,
  ApiError,
  apiErrorBody,
  BODY_REFUSAL_STATUSES,
  type ErrorBody,
  errorBody,
  errorCodesComponent,
  errorResponses,
} from './api/errors.js';
import { FleetFeed } from './api/fleet-feed.js';
import { registerApi } from './api/index.js';
import { OrgPeople } from './api/robot-view.js';
import { AuditBatcher } from './audit/index.js';
import type { CloudConfig } from './config.js';
import { consoleRoutes } from './console-assets.js';
import type { Database } from './db/index.js';
import type { EmbeddedOidcProvider, OidcVerifier } from './identity/index.js';
import type { InvitationProvider, Mailer } from './invitations/index.js';
import { SessionKeyStore } from './sessions/index.js';
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
  /**
   * The app's logger (default: {@link cloudLogger}); `false` logs nothing. Every line is redacted
   * by `@svc/runtime`'s logger.
   */
  readonly logger?: FastifyBaseLogger | false;
  readonly now?: () => Date;
  /** Started pilot session keys owned by the caller; without them the app makes, starts and closes its own. */
  readonly sessionKeys?: SessionKeyStore;
  /** Signalling on this node (presence, sessions), read and acted on by the robot routes. */
  readonly signalling?: SignallingHandle;
}

/**
 * svc-cloud's logger: `@svc/runtime`'s pino logger named `svc-cloud` at the configured level,
 * JSON lines unless writing to a terminal, every line redacted (secret field names, tokens, keys,
 * URL credentials).
 */
export function cloudLogger(config: CloudConfig): FastifyBaseLogger {
  return createLogger({ name: 'svc-cloud', level: config.logLevel });
}

/**
 * Builds the HTTP app (no listening): the API under `/api/v1`, its OpenAPI document, and the
 * development provider when there is one. Tests call `app.inject()` on it.
 */
export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const logger = deps.logger ?? cloudLogger(deps.config);
  const app = Fastify({
    ...(logger === false ? {} : { loggerInstance: logger }),
    logController: new RequestLog(),
    bodyLimit: MAX_BODY_BYTES,
    trustProxy: false,
  });
  app.setValidatorCompiler(missingBodyAsEmpty);
  app.setSerializerCompiler(serializerCompiler);

  const now = deps.now ?? (() => new Date());
  // The app's clock: its wall time is `now` (which tests move), its timers are the system's.
  const clock: Clock = { ...systemClock, wallNow: () => now().getTime() };
  let sessionKeys = deps.sessionKeys;
  if (sessionKeys === undefined) {
    const owned = new SessionKeyStore({
      db: deps.database.db,
      issuer: deps.config.publicUrl,
      rotationHours: deps.config.sessionKeyRotationHours,
      clock,
      log: app.log,
    });
    await owned.start();
    app.addHook('onClose', () => owned.close());
    sessionKeys = owned;
  }
  const auditBatcher = new AuditBatcher({ db: deps.database.db, log: app.log, now });
  app.addHook('onClose', () => auditBatcher.close());
  app.decorate('sessionKeys', sessionKeys);
  app.decorate('auditBatcher', auditBatcher);
  const people = new OrgPeople({ db: deps.database.db, now: clock.now });
  const fleet = new FleetFeed({
    db: deps.database.db,
    people,
    clock,
    log: app.log,
    ...(deps.signalling === undefined ? {} : { signalling: deps.signalling }),
  });
  app.decorate('fleet', fleet);
  // Before the server waits for its connections to end: open streams would hold it forever.
  app.addHook('preClose', async () => fleet.close());

  const ctx: ApiContext = {
    config: deps.config,
    database: deps.database,
    db: deps.database.db,
    auth: new Authenticator({
      db: deps.database.db,
      verifier: deps.verifier,
      issuer: deps.config.identity.issuer,
      // The app's clock, so `last_used_at` agrees with `revoked_at` and the other times it writes.
      now: clock.wallNow,
    }),
    invitationProvider: deps.invitationProvider,
    mail: deps.mail,
    now,
    sessionKeys,
    auditBatcher,
    ...(deps.signalling === undefined ? {} : { signalling: deps.signalling }),
    fleet,
    people,
  };

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'svc-cloud API',
        version: 'v1',
        description:
          'Accounts, organisations, invitations, robot grants, API keys, enrolment, pilot session tokens and the audit log of the fleet teleoperation service. Every error is `{"error": {"code", "message"}}`; `components.schemas.ErrorCode` lists the codes.',
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
        schemas: { ErrorCode: errorCodesComponent(), Error: errorComponent() },
      },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
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
      errorResponseBuilder: (_request, context) =>
        new ApiError(
          'rate-limited',
          `more than ${context.max} requests in a minute; retry in ${Math.ceil(context.ttl / 1000)} s`,
        ),
    });
  }

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const { status, body } = errorAnswer(err);
    if (status >= 500) {
      if (err instanceof ApiError) request.log.warn({ code: err.code }, err.message);
      else request.log.error({ err }, 'request failed');
    }
    return sendError(reply, status, body);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      404,
      errorBody('not-found', `no endpoint ${request.method} ${request.url.split('?')[0]}`),
    ),
  );

  await registerApi(app, ctx);
  consoleRoutes(app);
  app.withTypeProvider<ZodTypeProvider>().get(
    OPENAPI_PATH,
    {
      schema: {
        hide: true,
        response: { 200: z.record(z.string(), z.unknown()).describe('This document'), ...errorResponses([]) },
      },
    },
    async () => ({ ...app.swagger() }),
  );

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

/**
 * The zod validator of `fastify-type-provider-zod`, with a missing body read as `{}`: a request
 * without one is refused naming every required field, not with "expected object".
 */
const missingBodyAsEmpty: FastifySchemaCompiler<ZodType> = (route) => {
  const validate = validatorCompiler(route);
  return route.httpPart === 'body' ? (data) => validate(data ?? {}) : validate;
};

/** How a validation context is named in an `invalid-request` message. */
const PART_NAMES: Readonly<Record<string, string>> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/**
 * The status and body answering `err`: an {@link ApiError} as itself; a request that breaks its
 * route's schema as 400 `invalid-request` naming each bad field and what was expected; Fastify's
 * own refusals (bad JSON, body too large, not JSON) as `invalid-request` with their status; and
 * anything else as 500 `internal`, whose details stay in the log.
 */
function errorAnswer(err: FastifyError): { status: number; body: ErrorBody } {
  if (err instanceof ApiError) return { status: err.statusCode, body: errorBody(err.code, err.message) };
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = PART_NAMES[err.validationContext ?? ''] ?? 'request';
    const problems = err.validation.map((issue) => {
      const field = issue.instancePath.split('/').filter(Boolean).join('.');
      return `${field === '' ? where : field}: ${issue.message}`;
    });
    return {
      status: API_ERRORS['invalid-request'].status,
      body: errorBody('invalid-request', `invalid ${where}: ${problems.join('; ')}`),
    };
  }
  const status = err.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    const kept = (BODY_REFUSAL_STATUSES as readonly number[]).includes(status);
    return {
      status: kept ? status : API_ERRORS['invalid-request'].status,
      body: errorBody('invalid-request', err.message),
    };
  }
  return {
    status: API_ERRORS.internal.status,
    body: errorBody('internal', 'the service failed to answer; it has been logged'),
  };
}

/**
 * Sends an error body as built, without the route's response serializer: every error answer of
 * the app is made by {@link errorAnswer}, and the tests check each against the route's schema.
 */
function sendError(reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  return reply.code(status).serializer(JSON.stringify).send(body);
}

/** The error body with every code, as an OpenAPI component. */
function errorComponent(): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = apiErrorBody.toJSONSchema({ target: 'draft-2020-12' });
  return schema;
}

/** A request as its log lines show it: the path without the query string (it may carry tokens). */
function requestFields(request: FastifyRequest): Record<string, string> {
  return { method: request.method, url: request.url.split('?')[0] ?? '', ip: request.ip };
}

/**
 * Fastify's request log lines with plain fields: the runtime logger redacts a line's fields
 * before pino's serializers run, so Fastify's `req` and `res` objects would not be readable there.
 */
class RequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.info({ req: requestFields(request) }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return;
    const fields = { res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...fields, err: error }, 'request errored');
    else reply.log.info(fields, 'request completed');
  }

  override writeHeadError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    reply.log.warn(
      { req: requestFields(request), res: { statusCode: reply.statusCode }, err: error },
      error.message,
    );
  }

  override streamError(error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE') {
      reply.log.info({ res: { statusCode: reply.statusCode } }, 'stream closed prematurely');
    } else {
      reply.log.warn({ err: error }, 'response terminated with an error with headers already sent');
    }
  }
}
