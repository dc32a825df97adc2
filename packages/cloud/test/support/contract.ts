/**
 * The API's contract, checked on every answer of the tests: each response must be one its route
 * declares, for its status, in its `response` schemas (which are what `/api/v1/openapi.json`
 * publishes). A route that answers a status it does not declare, or a body its schema does not
 * describe, is a drift between the document and the code, and fails the test that caused it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isResponseSerializationError } from 'fastify-type-provider-zod';
import { type ZodType, z } from 'zod';
import { notFoundBody } from '../../src/api/errors.js';

/** One answer that broke the contract. */
export interface ContractViolation {
  /** `METHOD /path` of the request. */
  readonly request: string;
  readonly status: number;
  readonly problem: string;
}

/** Paths whose routes are the API and must declare every answer (the console pages are not). */
const API_PATHS = /^\/(api|\.well-known)\//;

/**
 * Checks every answer of `app` against its route's declared response schemas, from now on (call
 * it before the app is ready). Returns the list each violation is appended to.
 */
export function checkResponses(app: FastifyInstance): ContractViolation[] {
  const violations: ContractViolation[] = [];
  const record = (request: FastifyRequest, status: number, problem: string) => {
    violations.push({ request: `${request.method} ${request.url.split('?')[0]}`, status, problem });
  };
  // A body the zod serializer refused: the handler produced what its schema does not describe.
  app.addHook('onError', async (request, reply, error) => {
    if (isResponseSerializationError(error)) {
      record(request, reply.statusCode, `the answer does not fit its schema: ${issuesOf(error.cause)}`);
    }
  });
  // Every answer as sent: its status must be declared, and its body must decode with that schema.
  app.addHook('onSend', async (request, reply, payload) => {
    const problem = contractProblem(request, reply, payload);
    if (problem !== undefined) record(request, reply.statusCode, problem);
    return payload;
  });
  return violations;
}

/** Thrown by a test's request when its answer broke the contract. */
export class ContractError extends Error {
  override readonly name = 'ContractError';

  constructor(violations: readonly ContractViolation[]) {
    super(
      `the API answered outside its declared schemas:\n${violations
        .map((v) => `  ${v.request} → ${v.status}: ${v.problem}`)
        .join('\n')}`,
    );
  }
}

/**
 * A function that throws a {@link ContractError} with the violations recorded since it last
 * threw, and does nothing when there are none: call it after each request and at the end.
 */
export function violationReporter(violations: readonly ContractViolation[]): () => void {
  let reported = 0;
  return () => {
    if (violations.length === reported) return;
    const fresh = violations.slice(reported);
    reported = violations.length;
    throw new ContractError(fresh);
  };
}

/** What is wrong with one answer, or `undefined` when it is one its route declares. */
function contractProblem(request: FastifyRequest, reply: FastifyReply, payload: unknown): string | undefined {
  const responses = declaredResponses(request);
  if (responses === undefined) {
    return API_PATHS.test(request.url) ? 'the route declares no response schemas' : undefined;
  }
  const status = reply.statusCode;
  const schema = responses[String(status)];
  if (schema === undefined) {
    return `status ${status} is not declared (the route declares ${Object.keys(responses).join(', ')})`;
  }
  let body: unknown;
  if (payload !== undefined && payload !== null && payload !== '') {
    if (typeof payload !== 'string') return `the body is not JSON text (${typeof payload})`;
    try {
      body = JSON.parse(payload);
    } catch {
      return 'the body is not JSON';
    }
  }
  const decoded = z.safeDecode(schema, body);
  return decoded.success ? undefined : `the body does not fit its schema: ${issuesOf(decoded.error)}`;
}

/** The response schemas of the request's route by status; for an unknown path, the 404 answer. */
function declaredResponses(request: FastifyRequest): Record<string, ZodType> | undefined {
  if (request.is404) return { 404: notFoundBody };
  const response = (request.routeOptions.schema as { response?: Record<string, ZodType> } | undefined)
    ?.response;
  return response;
}

/** Zod issues as one line. */
function issuesOf(error: unknown): string {
  if (error instanceof z.core.$ZodError) {
    return error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
  }
  return String(error);
}
