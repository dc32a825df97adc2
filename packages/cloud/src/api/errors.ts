import { CodedError, codedErrorGuard } from '@svc/runtime';
import { z } from 'zod';

/**
 * Every error code the API sends, with its HTTP status and what it means. The one list: the
 * error schemas of the routes, the OpenAPI document and `docs/cloud.md` are made from it or
 * checked against it. Clients branch on `code`, never on the message.
 */
export const API_ERRORS = {
  'invalid-request': {
    status: 400,
    meaning:
      "the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON)",
  },
  'id-token-rejected': {
    status: 400,
    meaning: 'the `x-svc-id-token` header is not a valid ID token of the same user as the access token',
  },
  unauthenticated: {
    status: 401,
    meaning:
      'no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key)',
  },
  'enrolment-token-invalid': {
    status: 401,
    meaning: '`POST /api/v1/enrol` with a token that is unknown or not an enrolment token (`svc_enr_...`)',
  },
  'not-registered': {
    status: 403,
    meaning: 'a valid login that has never been through `GET /api/v1/me`: sign in through the console first',
  },
  forbidden: { status: 403, meaning: "the caller's role, grants or API key scopes do not allow this" },
  'not-found': {
    status: 404,
    meaning: 'no such endpoint or resource, or one in an organisation the caller is not in',
  },
  conflict: {
    status: 409,
    meaning: 'the change contradicts the current state (a duplicate, the last owner, a used token)',
  },
  'robot-enrolled': {
    status: 409,
    meaning:
      'the robot id is enrolled in another organisation, or with another key: delete the robot in the console and enrol again',
  },
  gone: { status: 410, meaning: 'an invitation already accepted, revoked or expired' },
  'enrolment-token-used': {
    status: 410,
    meaning: 'the enrolment token already enrolled a robot; a new one is needed',
  },
  'enrolment-token-expired': {
    status: 410,
    meaning: "the enrolment token's lifetime is over; a new one is needed",
  },
  'enrolment-token-revoked': {
    status: 410,
    meaning: 'an admin revoked the enrolment token; a new one is needed',
  },
  'rate-limited': {
    status: 429,
    meaning: 'too many requests from this credential or address, or too many open fleet streams; retry later',
  },
  internal: { status: 500, meaning: 'the service failed to answer; the fault is logged' },
  'provider-unavailable': {
    status: 502,
    meaning: 'the identity provider (or the invitation provider) could not be reached',
  },
} as const satisfies Record<string, { readonly status: number; readonly meaning: string }>;

/** One of {@link API_ERRORS}' keys. */
export type ApiErrorCode = keyof typeof API_ERRORS;

/** Every code of {@link API_ERRORS}, in its order. */
export const API_ERROR_CODES = Object.keys(API_ERRORS) as [ApiErrorCode, ...ApiErrorCode[]];

/** The status a code is answered with. */
export type ApiErrorStatus<C extends ApiErrorCode = ApiErrorCode> = (typeof API_ERRORS)[C]['status'];

/**
 * Statuses of Fastify's own refusals of a request body, answered with `invalid-request`: a body
 * over the size limit (413) and a body whose content type is not JSON (415).
 */
export const BODY_REFUSAL_STATUSES = [413, 415] as const;

/** Codes every route may answer: over the rate limit, and a fault of the service. */
const ANY_ROUTE = ['rate-limited', 'internal'] as const satisfies readonly ApiErrorCode[];

/**
 * An error answered to an API client as `{"error": {"code", "message"}}` with the code's status.
 * The message says what was wrong and what to do; it never contains a token or secret.
 */
export class ApiError extends CodedError<ApiErrorCode> {
  override readonly name = 'ApiError';
  /** The HTTP status of {@link ApiError.code}. */
  readonly statusCode: number;

  constructor(code: ApiErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.statusCode = API_ERRORS[code].status;
  }
}

/** Whether `err` is an {@link ApiError} (of `code`, when given). */
export const isApiError = codedErrorGuard(ApiError);

/** The JSON body of every error answer, whichever code it carries. */
export const apiErrorBody = z
  .object({
    error: z.object({
      code: z.enum(API_ERROR_CODES),
      message: z.string().describe('What was wrong and what to do; never contains a secret'),
    }),
  })
  .describe('An error');

/** The JSON body of every error answer. */
export type ErrorBody = z.output<typeof apiErrorBody>;

/** The schema type of an error answer, whatever subset of codes its status allows. */
export type ErrorBodySchema = typeof apiErrorBody;

/** The error body of `code`. */
export function errorBody(code: ApiErrorCode, message: string): ErrorBody {
  return { error: { code, message } };
}

/** Error bodies by the set of codes they allow, so a set shared by many routes is one schema. */
const bodiesByCodes = new Map<string, ErrorBodySchema>();

/** The error body schema of a status that carries exactly `codes`. */
function errorBodyOf(codes: readonly ApiErrorCode[]): ErrorBodySchema {
  const sorted = [...new Set(codes)].sort();
  const key = sorted.join(' ');
  let schema = bodiesByCodes.get(key);
  if (schema === undefined) {
    const meanings = sorted.map((c) => `\`${c}\`: ${API_ERRORS[c].meaning}`).join('; ');
    schema = z
      .object({
        error: z.object({
          code: z.enum(sorted as [ApiErrorCode, ...ApiErrorCode[]]),
          message: z.string(),
        }),
      })
      .describe(meanings) as unknown as ErrorBodySchema;
    bodiesByCodes.set(key, schema);
  }
  return schema;
}

/** The error part of a route's `response` schemas: one entry per status its codes answer with. */
export type ErrorResponses<C extends ApiErrorCode> = {
  readonly [S in ApiErrorStatus<C | (typeof ANY_ROUTE)[number]>]: ErrorBodySchema;
};

/**
 * The error answers of a route for its `response` schemas: each status of `codes`, and of the
 * codes any route may send (`rate-limited`, `internal`), with the exact codes it carries. With
 * `body`, also Fastify's refusals of the request body ({@link BODY_REFUSAL_STATUSES}).
 */
export function errorResponses<const C extends ApiErrorCode>(
  codes: readonly C[],
  options: { readonly body?: boolean } = {},
): ErrorResponses<C> {
  const byStatus = new Map<number, ApiErrorCode[]>();
  for (const code of [...codes, ...ANY_ROUTE]) {
    const status = API_ERRORS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  if (options.body === true) {
    for (const status of BODY_REFUSAL_STATUSES) byStatus.set(status, ['invalid-request']);
  }
  const responses: Record<number, ErrorBodySchema> = {};
  for (const [status, statusCodes] of byStatus) responses[status] = errorBodyOf(statusCodes);
  return responses as ErrorResponses<C>;
}

/** The schema of the answer `{"error": ...}` that the not-found handler sends for unknown paths. */
export const notFoundBody: ErrorBodySchema = errorBodyOf(['not-found']);

/**
 * The error codes as an OpenAPI component: one alternative per code, with its status and meaning,
 * so the document lists the whole registry in one place.
 */
export function errorCodesComponent(): Record<string, unknown> {
  return {
    description: 'Every error code of the API, with the HTTP status it is answered with',
    type: 'string',
    oneOf: API_ERROR_CODES.map((code) => ({
      enum: [code],
      description: `${API_ERRORS[code].status}: ${API_ERRORS[code].meaning}`,
    })),
  };
}
