import { encodeFrame } from './frames.js';
import { encodeHeaders, type HeaderList } from './qpack.js';

/**
 * Why a request is not a WebTransport CONNECT we can take.
 *
 * Malformed requests (RFC 9114 §4.1.2, §4.2, §4.3; RFC 9220): the caller resets the stream with
 * H3_MESSAGE_ERROR, or answers 400.
 * - `invalid-name`: an empty field name or one with characters outside the token set.
 * - `uppercase-name`: a field name with an uppercase letter (HTTP/3 names are lowercase).
 * - `invalid-value`: a field value with NUL, CR or LF.
 * - `pseudo-after-regular`: a pseudo-header after a regular field.
 * - `duplicate-pseudo`: a pseudo-header given twice.
 * - `unknown-pseudo`: a pseudo-header that requests do not have (`:status`, `:foo`).
 * - `connection-specific`: `connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`,
 *   `upgrade`, or `te` with a value other than `trailers`.
 * - `missing-method`, `missing-scheme`, `missing-authority`, `missing-path`: a required
 *   pseudo-header is absent or empty.
 * - `invalid-authority`: `:authority` carries userinfo (`user@host`).
 * - `invalid-path`: `:path` does not start with `/`.
 * - `protocol-without-connect`: `:protocol` on a method other than CONNECT.
 *
 * Well-formed requests we decline:
 * - `not-connect`: the method is not CONNECT (405).
 * - `not-extended-connect`: CONNECT without `:protocol`, a tunnel request we do not serve (400).
 * - `wrong-protocol`: `:protocol` is not `webtransport` (400).
 * - `wrong-scheme`: `:scheme` is not `https` (400).
 * - `duplicate-origin`: more than one `origin` field (400).
 */
export type RequestProblem =
  | 'invalid-name'
  | 'uppercase-name'
  | 'invalid-value'
  | 'pseudo-after-regular'
  | 'duplicate-pseudo'
  | 'unknown-pseudo'
  | 'connection-specific'
  | 'missing-method'
  | 'missing-scheme'
  | 'missing-authority'
  | 'missing-path'
  | 'invalid-authority'
  | 'invalid-path'
  | 'protocol-without-connect'
  | 'not-connect'
  | 'not-extended-connect'
  | 'wrong-protocol'
  | 'wrong-scheme'
  | 'duplicate-origin';

/** A WebTransport session request that passed every check. */
export interface WebTransportRequest {
  /** `:authority`, e.g. `127.0.0.1:4433`. */
  readonly authority: string;
  /** `:path` with its query, e.g. `/wt?channel=1`; the caller routes on it (404 when unknown). */
  readonly path: string;
  /** The `origin` field, when the client sent one (browsers always do). */
  readonly origin?: string;
  /**
   * The client sent `sec-webtransport-http3-draft02: 1` (Chromium's draft-02 code path): the
   * success response must carry `sec-webtransport-http3-draft: draft02`.
   */
  readonly draft02: boolean;
  /** The regular (non-pseudo) fields, in order. */
  readonly headers: HeaderList;
}

/** Outcome of {@link parseWebTransportRequest}. */
export type RequestCheck =
  | { readonly ok: true; readonly request: WebTransportRequest }
  | {
      readonly ok: false;
      readonly problem: RequestProblem;
      /** RFC 9114 calls the request malformed: resetting the stream with H3_MESSAGE_ERROR is right. */
      readonly malformed: boolean;
      /** The status to answer with when responding instead of resetting. */
      readonly status: 400 | 405;
      /** What exactly is wrong, for logs. */
      readonly message: string;
    };

const REQUEST_PSEUDO_HEADERS: ReadonlySet<string> = new Set([
  ':method',
  ':scheme',
  ':authority',
  ':path',
  ':protocol',
]);
const CONNECTION_SPECIFIC: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const HAS_UPPERCASE = /[A-Z]/;
const FORBIDDEN_VALUE_CHARACTER = /[\0\r\n]/;

/** `:protocol` value of a WebTransport session request (draft-02 to draft-14). */
export const WEBTRANSPORT_PROTOCOL = 'webtransport';

/** Request field Chromium's draft-02 code path sends. */
export const DRAFT02_REQUEST_HEADER = 'sec-webtransport-http3-draft02';

/** Response field a draft-02 client needs on success, with the value `draft02`. */
export const DRAFT02_RESPONSE_HEADER = 'sec-webtransport-http3-draft';

function malformed(problem: RequestProblem, message: string): RequestCheck {
  return { ok: false, problem, malformed: true, status: 400, message };
}

function declined(problem: RequestProblem, status: 400 | 405, message: string): RequestCheck {
  return { ok: false, problem, malformed: false, status, message };
}

/**
 * Checks a decoded request field section as an extended CONNECT for WebTransport (RFC 9220,
 * draft-ietf-webtrans-http3): `:method` CONNECT, `:protocol` webtransport, `:scheme` https,
 * non-empty `:authority` and `:path`, plus the HTTP/3 field rules. Returns the request or the
 * first problem found; never throws.
 */
export function parseWebTransportRequest(fields: HeaderList): RequestCheck {
  const pseudo = new Map<string, string>();
  const headers: [string, string][] = [];
  const origins: string[] = [];
  let draft02 = false;
  for (const [name, value] of fields) {
    if (HAS_UPPERCASE.test(name))
      return malformed('uppercase-name', `field name ${JSON.stringify(name)} has uppercase`);
    if (FORBIDDEN_VALUE_CHARACTER.test(value)) {
      return malformed('invalid-value', `value of ${JSON.stringify(name)} contains NUL, CR or LF`);
    }
    if (name.startsWith(':')) {
      if (headers.length > 0) return malformed('pseudo-after-regular', `${name} follows regular fields`);
      if (!REQUEST_PSEUDO_HEADERS.has(name))
        return malformed('unknown-pseudo', `${name} is not a request pseudo-header`);
      if (pseudo.has(name)) return malformed('duplicate-pseudo', `${name} appears twice`);
      pseudo.set(name, value);
      continue;
    }
    if (!TOKEN.test(name))
      return malformed('invalid-name', `field name ${JSON.stringify(name)} is not a token`);
    if (CONNECTION_SPECIFIC.has(name) || (name === 'te' && value !== 'trailers')) {
      return malformed('connection-specific', `connection-specific field ${name} is not allowed in HTTP/3`);
    }
    if (name === 'origin') origins.push(value);
    if (name === DRAFT02_REQUEST_HEADER && value === '1') draft02 = true;
    headers.push([name, value]);
  }

  const method = pseudo.get(':method');
  const protocol = pseudo.get(':protocol');
  if (method === undefined || method === '') return malformed('missing-method', ':method is missing');
  if (method !== 'CONNECT') {
    if (protocol !== undefined)
      return malformed('protocol-without-connect', `:protocol with method ${method}`);
    return declined('not-connect', 405, `method ${method} is not CONNECT`);
  }
  if (protocol === undefined) return declined('not-extended-connect', 400, 'CONNECT without :protocol');
  const scheme = pseudo.get(':scheme');
  const authority = pseudo.get(':authority');
  const path = pseudo.get(':path');
  if (scheme === undefined || scheme === '') return malformed('missing-scheme', ':scheme is missing');
  if (authority === undefined || authority === '')
    return malformed('missing-authority', ':authority is missing');
  if (authority.includes('@')) return malformed('invalid-authority', ':authority carries userinfo');
  if (path === undefined || path === '') return malformed('missing-path', ':path is missing');
  if (!path.startsWith('/'))
    return malformed('invalid-path', `:path ${JSON.stringify(path)} does not start with /`);
  if (protocol !== WEBTRANSPORT_PROTOCOL) {
    return declined(
      'wrong-protocol',
      400,
      `:protocol ${JSON.stringify(protocol)} is not ${WEBTRANSPORT_PROTOCOL}`,
    );
  }
  if (scheme !== 'https')
    return declined('wrong-scheme', 400, `:scheme ${JSON.stringify(scheme)} is not https`);
  if (origins.length > 1) return declined('duplicate-origin', 400, `${origins.length} origin fields`);

  const origin = origins[0];
  return {
    ok: true,
    request: { authority, path, ...(origin === undefined ? {} : { origin }), draft02, headers },
  };
}

/** Options of {@link webTransportResponseHeaders}. */
export interface ResponseOptions {
  /**
   * Add `sec-webtransport-http3-draft: draft02` to a 2xx answer. Default true: Chromium's draft-02
   * code path refuses a session without it, and later drafts ignore it.
   */
  readonly draft02?: boolean;
  /** Further fields after the ones above (lowercase names). */
  readonly headers?: HeaderList;
}

/** The response field section for a WebTransport CONNECT: `:status`, then what the options add. */
export function webTransportResponseHeaders(status: number, options: ResponseOptions = {}): HeaderList {
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new TypeError(`status ${status} is not a final status code (200..599)`);
  }
  const fields: [string, string][] = [[':status', String(status)]];
  if (status < 300 && options.draft02 !== false) fields.push([DRAFT02_RESPONSE_HEADER, 'draft02']);
  for (const [name, value] of options.headers ?? []) fields.push([name, value]);
  return fields;
}

/**
 * The HEADERS frame answering a WebTransport CONNECT (see {@link webTransportResponseHeaders}),
 * ready to write on the request stream. A 2xx keeps the stream open as the session's CONNECT
 * stream; anything else should be followed by the end of the stream.
 */
export function encodeWebTransportResponse(status: number, options: ResponseOptions = {}): Uint8Array {
  return encodeFrame({ type: 'headers', block: encodeHeaders(webTransportResponseHeaders(status, options)) });
}
