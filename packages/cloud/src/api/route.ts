/**
 * How a resource plugin declares its operations: a resource knows its OpenAPI tags and what every
 * route of its kind declares and checks (the error answers; under `/api/v1/orgs/:org` the
 * permission, on a managed robot the admin), and offers Fastify's shorthands (`get`, `post`,
 * `patch`, `delete`) for its routes, so a plugin reads as its operations. The zod type provider
 * still types each handler's params, query, body and answers from the route's schemas.
 */
import type {
  ContextConfigDefault,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { OrgRole, User } from '../db/index.js';
import type { Permission } from './authz.js';
import { type ApiContext, type ApiPlugin, ORG_ERRORS, requireOrgPermission } from './context.js';
import { type ApiErrorCode, type ErrorResponses, errorResponses } from './errors.js';
import { MANAGED_ROBOT_ERRORS, managedRobot } from './robot-access.js';
import { orgParams, robotParams } from './schemas.js';

/** The app a resource plugin registers its routes on, typed by the zod type provider. */
export type ApiApp = Parameters<ApiPlugin>[0];

/** A request schema of a route, or `undefined` where the route takes none. */
type Part = z.ZodType | undefined;

/** A route's successful answers by status (its error answers are made from its codes). */
type Successes = Readonly<Record<number, z.ZodType>>;

/** What a route declares besides its method, path, tags and errors. */
export interface RouteSpec<
  P extends Part,
  Q extends Part,
  H extends Part,
  B extends Part,
  R extends Successes,
> {
  readonly summary: string;
  readonly description?: string;
  /** `[]` for a route that needs no credential. */
  readonly security?: readonly [];
  readonly params?: P;
  readonly querystring?: Q;
  readonly headers?: H;
  /** The request body; a route with one also answers Fastify's refusals of a body (413, 415). */
  readonly body?: B;
  readonly response: R;
}

/** The schema a route is registered with: its request schemas, its successes and its errors. */
export interface RouteSchema<
  P extends Part,
  Q extends Part,
  H extends Part,
  B extends Part,
  R extends Successes,
  C extends ApiErrorCode,
> extends FastifySchema {
  params: P;
  querystring: Q;
  headers: H;
  body: B;
  response: R & ErrorResponses<C>;
}

/** A handler typed from its route's schema by the zod type provider. */
export type RouteHandler<S extends FastifySchema> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  S,
  ZodTypeProvider
>;

/** A handler that gets what its route checked first, then the request and the reply. */
export type CheckedHandler<A, S extends FastifySchema> = (
  checked: A,
  request: Parameters<RouteHandler<S>>[0],
  reply: Parameters<RouteHandler<S>>[1],
) => ReturnType<RouteHandler<S>>;

/** A resource's routes by method, named as Fastify's shorthands; each takes a path and a spec. */
export interface Shorthands<D> {
  readonly get: D;
  readonly post: D;
  readonly patch: D;
  readonly delete: D;
}

/** Declares a route of a {@link resource}, which lists every code it may answer. */
export type RouteDeclaration = <
  R extends Successes,
  P extends Part = undefined,
  Q extends Part = undefined,
  H extends Part = undefined,
  B extends Part = undefined,
  const C extends ApiErrorCode = never,
>(
  url: string,
  spec: RouteSpec<P, Q, H, B, R> & {
    /** Every code the route may answer besides `rate-limited` and `internal`. */
    readonly errors: readonly C[];
    readonly handler: RouteHandler<RouteSchema<P, Q, H, B, R, C>>;
  },
) => void;

/** What {@link orgResource}'s routes checked: the org of the path, the caller and their role in it. */
export interface OrgAccess {
  readonly orgId: string;
  readonly user: User;
  readonly role: OrgRole;
}

/** Declares a route of an {@link orgResource}. */
export type OrgRouteDeclaration = <
  R extends Successes,
  P extends z.ZodType<{ org: string }> = typeof orgParams,
  Q extends Part = undefined,
  B extends Part = undefined,
  const C extends ApiErrorCode = never,
>(
  url: string,
  spec: RouteSpec<P, Q, undefined, B, R> & {
    /** What the caller's role must allow, when not the resource's permission. */
    readonly permission?: Permission;
    /** Codes the route may answer besides {@link ORG_ERRORS}. */
    readonly moreErrors?: readonly C[];
    readonly handler: CheckedHandler<
      OrgAccess,
      RouteSchema<P, Q, undefined, B, R, C | (typeof ORG_ERRORS)[number]>
    >;
  },
) => void;

/** What {@link managedRobotResource}'s routes checked: the robot of the path, its org, the admin. */
export interface ManagedRobot {
  readonly robotId: string;
  readonly orgId: string;
  readonly userId: string;
}

/** Codes of every route on a managed robot: those of `managedRobot`, and a bad robot id in the path. */
const MANAGED_ROBOT_ROUTE_ERRORS = [...MANAGED_ROBOT_ERRORS, 'invalid-request'] as const;

/** Declares a route of a {@link managedRobotResource}. */
export type ManagedRobotRouteDeclaration = <
  R extends Successes,
  P extends z.ZodType<{ robot: string }> = typeof robotParams,
  B extends Part = undefined,
  const C extends ApiErrorCode = never,
>(
  url: string,
  spec: RouteSpec<P, undefined, undefined, B, R> & {
    /** Codes the route may answer besides those of every route on a managed robot. */
    readonly moreErrors?: readonly C[];
    readonly handler: CheckedHandler<
      ManagedRobot,
      RouteSchema<P, undefined, undefined, B, R, C | (typeof MANAGED_ROBOT_ROUTE_ERRORS)[number]>
    >;
  },
) => void;

/** What every resource knows of its routes. */
interface ResourceOptions {
  /** The OpenAPI tags of its operations. */
  readonly tags: readonly string[];
}

/**
 * A resource whose routes say which codes they answer: `/api/v1/me`, the robots list, enrolment,
 * the session tokens and the other routes outside an org or a managed robot.
 */
export function resource(app: ApiApp, { tags }: ResourceOptions): Shorthands<RouteDeclaration> {
  return shorthands(
    (method): RouteDeclaration =>
      (url, { handler, ...spec }) =>
        register(app, { ...spec, method, url, tags }, handler as AnyHandler),
  );
}

/**
 * A resource under `/api/v1/orgs/:org` whose routes need `permission` there (unless a route names
 * its own): their params are {@link orgParams} unless given (they must name `org`), they answer
 * {@link ORG_ERRORS} and their `moreErrors`, and a handler runs once `requireOrgPermission` let
 * the caller in.
 */
export function orgResource(
  app: ApiApp,
  ctx: ApiContext,
  { tags, permission }: ResourceOptions & { readonly permission: Permission },
): Shorthands<OrgRouteDeclaration> {
  return shorthands(
    (method): OrgRouteDeclaration =>
      (url, spec) => {
        const { params = orgParams, moreErrors = [], permission: own, handler, ...described } = spec;
        const needs = own ?? permission;
        const checked = handler as CheckedHandler<OrgAccess, FastifySchema>;
        const errors = [...ORG_ERRORS, ...moreErrors];
        register(app, { ...described, method, url, tags, params, errors }, async (request, reply) => {
          const orgId = (request.params as z.output<typeof orgParams>).org;
          const { user, role } = await requireOrgPermission(ctx, request, orgId, needs);
          return checked({ orgId, user, role }, request, reply);
        });
      },
  );
}

/**
 * A resource on a robot its caller must manage (`managedRobot`): its routes' params are
 * {@link robotParams} unless given (they must name `robot`), they answer `managedRobot`'s codes,
 * `invalid-request` and their `moreErrors`, and a handler runs once the caller was let in.
 */
export function managedRobotResource(
  app: ApiApp,
  ctx: ApiContext,
  { tags }: ResourceOptions,
): Shorthands<ManagedRobotRouteDeclaration> {
  return shorthands(
    (method): ManagedRobotRouteDeclaration =>
      (url, spec) => {
        const { params = robotParams, moreErrors = [], handler, ...described } = spec;
        const checked = handler as CheckedHandler<ManagedRobot, FastifySchema>;
        const errors = [...MANAGED_ROBOT_ROUTE_ERRORS, ...moreErrors];
        register(app, { ...described, method, url, tags, params, errors }, async (request, reply) => {
          const robotId = (request.params as z.output<typeof robotParams>).robot;
          const { orgId, userId } = await managedRobot(ctx, request, robotId);
          return checked({ robotId, orgId, userId }, request, reply);
        });
      },
  );
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** The four shorthands, each `declare(method)`. */
function shorthands<D>(declare: (method: Method) => D): Shorthands<D> {
  return { get: declare('GET'), post: declare('POST'), patch: declare('PATCH'), delete: declare('DELETE') };
}

/** A handler as Fastify registers it; the declarations above type it for their routes. */
type AnyHandler = RouteHandler<FastifySchema>;

/** What {@link register} needs of any route. */
type AnySpec = RouteSpec<Part, Part, Part, Part, Successes> & {
  readonly method: Method;
  readonly url: string;
  readonly tags: readonly string[];
  readonly errors: readonly ApiErrorCode[];
};

/**
 * Registers `spec` answering its successes, and one error answer per status of its codes and of
 * the codes any route may send (with a body, also Fastify's refusals of it).
 */
function register(app: ApiApp, spec: AnySpec, handler: AnyHandler): void {
  const { method, url, errors, response, ...described } = spec;
  const schema = {
    ...described,
    response: { ...response, ...errorResponses(errors, { body: spec.body !== undefined }) },
  };
  app.route<RouteGenericInterface, ContextConfigDefault, FastifySchema>({ method, url, schema, handler });
}
