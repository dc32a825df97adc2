/**
 * Stable codes of {@link ApiError}, each with its HTTP status. Clients branch on `code`.
 *
 * - `unauthenticated` (401): no credential, or one that is not valid (bad signature, expired,
 *   wrong issuer or audience, unknown or revoked API key).
 * - `id-token-rejected` (400): the `x-svc-id-token` header is not a valid ID token of the same
 *   user as the access token.
 * - `not-registered` (403): a valid login that has never been through `GET /api/v1/me`.
 * - `forbidden` (403): the caller's role or grants do not allow this.
 * - `not-found` (404): no such resource, or one the caller may not know exists.
 * - `invalid-request` (400): the body, query or path does not fit the endpoint's schema.
 * - `conflict` (409): the change contradicts the current state (duplicate, last owner).
 * - `gone` (410): a one-time token already used, revoked or expired.
 * - `enrolment-token-invalid` (401): `POST /api/v1/enrol` with a token that is unknown or not an
 *   enrolment token (`svc_enr_...`).
 * - `enrolment-token-used` (410): the enrolment token already enrolled a robot; a new one is needed.
 * - `enrolment-token-expired` (410): the enrolment token's lifetime is over; a new one is needed.
 * - `enrolment-token-revoked` (410): an admin revoked the enrolment token; a new one is needed.
 * - `robot-enrolled` (409): the robot id is enrolled in another org, or with another key; delete
 *   the robot in the console and enrol again.
 * - `rate-limited` (429): too many requests; retry later.
 * - `provider-unavailable` (502): the identity provider could not be reached.
 */
export const API_ERROR_STATUS = {
  unauthenticated: 401,
  'id-token-rejected': 400,
  'not-registered': 403,
  forbidden: 403,
  'not-found': 404,
  'invalid-request': 400,
  conflict: 409,
  gone: 410,
  'enrolment-token-invalid': 401,
  'enrolment-token-used': 410,
  'enrolment-token-expired': 410,
  'enrolment-token-revoked': 410,
  'robot-enrolled': 409,
  'rate-limited': 429,
  'provider-unavailable': 502,
} as const;

/** One of {@link API_ERROR_STATUS}'s keys. */
export type ApiErrorCode = keyof typeof API_ERROR_STATUS;

/**
 * An error answered to an API client as `{"error": {"code", "message"}}` with the code's status.
 * The message says what was wrong and what to do; it never contains a token or secret.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: ApiErrorCode;
  readonly statusCode: number;

  constructor(code: ApiErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.statusCode = API_ERROR_STATUS[code];
  }
}

/** The JSON body of every error answer. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string };
}
