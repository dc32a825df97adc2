/**
 * Credential redaction for everything that may reach a log line or an error message: the one
 * list of what is secret (field names, URL userinfo and parameters, our own token formats, JWTs,
 * bearer credentials), used by every logger of the project and by error messages that quote
 * input.
 *
 * Works on the text as given rather than on a parsed and re-serialised URL, so a redacted URL
 * still reads like the one the operator configured, and input that no URL parser accepts is
 * redacted too.
 */

/** What replaces a secret. */
const MASK = '***';

/** `scheme://` at the start of a URL. */
const SCHEME_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** A URL with a scheme and an authority inside free text: up to whitespace, quotes or brackets. */
const URL_IN_TEXT = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>`]+/g;

/** `name=value` after `?`, `&`, `;` or `/` (some cameras put their credentials in the path). */
const PARAMETER = /([?&;/#])([^=&;#?/]+)=([^&;#]*)/g;

/** Parameter names (lower-cased, separators kept) that carry a secret wherever they appear. */
const SECRET_ANYWHERE = /pass|pwd|secret|token|credential|signature|apikey|api_key|api-key|auth/;

/** Parameter names that are secret exactly (`ott`: the one-time sign-in token of an invitation link). */
const SECRET_EXACT = new Set(['ott', 'code']);

/** Parameter names that end in a secret-ish word (`key`, `apiKey`, `sig`). */
const SECRET_SUFFIX = /(key|sig)$/;

/**
 * True when a query or path parameter name looks like it carries a secret (`password`,
 * `access_token`, `X-Amz-Signature`, `apikey`, `sig`, ...), compared case-insensitively.
 */
export function isSecretParameterName(name: string): boolean {
  const lower = name.toLowerCase();
  return SECRET_ANYWHERE.test(lower) || SECRET_SUFFIX.test(lower) || SECRET_EXACT.has(lower);
}

/** Replaces the values of secret-looking `name=value` parameters in `rest` with `***`. */
function redactParameters(rest: string): string {
  return rest.replace(PARAMETER, (whole, separator: string, name: string) =>
    isSecretParameterName(name) ? `${separator}${name}=${MASK}` : whole,
  );
}

/**
 * Returns `url` with its credentials removed, for logs and error messages.
 *
 * - userinfo becomes `***`: `rtsp://admin:secret@cam/` gives `rtsp://***@cam/`. The userinfo is
 *   taken to end at the last `@` of the URL, so a password with an unencoded `/`, `?` or `#`
 *   cannot leak through a mis-split authority (an `@` elsewhere in a URL over-redacts instead);
 * - values of parameters whose names look secret become `***`, in the query and in the path
 *   (`/user=admin&password=123&channel=1`);
 * - text without `scheme://` that starts with `user:pass@` loses that part the same way, and
 *   text with a URL further in is handled like {@link redactText}.
 *
 * Never throws, whatever the input.
 */
export function redactUrl(url: string): string {
  const scheme = SCHEME_PREFIX.exec(url);
  // Something before the scheme (a quote, a label): redact the URL found inside instead.
  if (scheme === null && url.includes('://')) return redactText(url);
  const prefix = scheme === null ? '' : scheme[0];
  let rest = url.slice(prefix.length);
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    if (scheme !== null) {
      rest = `${MASK}${rest.slice(at)}`;
    } else {
      // Without a scheme only a leading `user:pass@` or `user@` (no slash before it) is userinfo.
      const leading = /^[^/\s]*@/.exec(rest);
      if (leading !== null) rest = `${MASK}@${rest.slice(leading[0].length)}`;
    }
  }
  return prefix + redactParameters(rest);
}

/**
 * `name=value` after `?`, `&`, `;` or `#` in free text, outside a URL with a scheme: a request path
 * (`GET /api/v1/signalling?token=...`) or a hash route (`#/invite?email=...&ott=...`). Name and
 * value stop at whitespace and quotes, so the words after them stay readable.
 */
const PARAMETER_IN_TEXT = /([?&;#])([^=&;#?/\s]+)=([^&;#\s"'<>`]*)/g;

/** Enrolment tokens (`svc_enr_<secret>`): the prefix stays, so a reader knows what it was. */
const ENROLMENT_TOKEN = /\bsvc_enr_[A-Za-z0-9_-]+/g;

/** Anything that starts like an API key (`svc_key_...`); {@link redactApiKey} decides what stays. */
const API_KEY = /\bsvc_key_[A-Za-z0-9_-]+/g;

/** An API key's public part (`svc_key_` and 8 hex digits): it names the key and is not secret. */
const API_KEY_PUBLIC = /^svc_key_[0-9a-f]{8}(?=_|$)/;

/**
 * An API key (`svc_key_<8 hex>_<secret>`) keeps its public part and loses the secret; the public
 * part alone is left as it is; anything else after `svc_key_` (a key mistyped or cut short) goes.
 */
function redactApiKey(key: string): string {
  const visible = API_KEY_PUBLIC.exec(key)?.[0];
  if (visible === undefined) return `svc_key_${MASK}`;
  // Nothing after the public part, or only its `_` (a key redacted before: `svc_key_0123abcd_***`).
  return key.length <= visible.length + 1 ? key : `${visible}_${MASK}`;
}

/** A JSON Web Token (three base64url parts, the first a JSON header: `eyJ...`). */
const JWT = /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

/** `Bearer <credential>` and `Basic <credential>` as in an Authorization header. */
const AUTH_SCHEME = /\b(Bearer|Basic|Digest)\s+[^\s,"']+/gi;

/**
 * Redacts every secret found in free text: URLs (userinfo and secret-looking parameters, see
 * {@link redactUrl}), secret-looking `name=value` parameters of paths and hash routes, `Bearer`
 * credentials, enrolment tokens, API keys and JWTs. Error messages from Node or other libraries
 * may quote what they were given, credentials included. Never throws.
 */
export function redactText(text: string): string {
  return text
    .replace(URL_IN_TEXT, (url) => redactUrl(url))
    .replace(PARAMETER_IN_TEXT, (whole, separator: string, name: string) =>
      isSecretParameterName(name) ? `${separator}${name}=${MASK}` : whole,
    )
    .replace(AUTH_SCHEME, `$1 ${MASK}`)
    .replace(ENROLMENT_TOKEN, `svc_enr_${MASK}`)
    .replace(API_KEY, redactApiKey)
    .replace(JWT, `[jwt ${MASK}]`);
}

/**
 * Field names (compared lower-cased, without `_`, `-` and `.`) whose values are secret wherever
 * they appear in a logged object or an error's details: the one list every logger applies.
 */
export const SECRET_FIELD_NAMES: ReadonlySet<string> = new Set([
  'token',
  'accesstoken',
  'idtoken',
  'refreshtoken',
  'sessiontoken',
  'enrolmenttoken',
  'enrollmenttoken',
  'onetimetoken',
  'ott',
  'xsvcidtoken',
  'authorization',
  'proxyauthorization',
  'cookie',
  'setcookie',
  'password',
  'passwd',
  'secret',
  'clientsecret',
  'apikey',
  'key',
  'privatekey',
  'seed',
  'credential',
]);

/**
 * Endings (of a name normalised as for {@link SECRET_FIELD_NAMES}) that make any field secret:
 * `invitationToken`, `dbPassword`.
 */
const SECRET_FIELD_SUFFIX = /(token|password|passwd|secret|apikey|privatekey|credential)$/;

/**
 * True when a field of this name holds a secret: a name of {@link SECRET_FIELD_NAMES}, or one
 * that ends in `token`, `password`, `secret`, `apiKey`, `privateKey` or `credential`
 * (`invitationToken`, `db_password`), compared lower-cased without `_`, `-` and `.`.
 */
export function isSecretFieldName(name: string): boolean {
  const normalised = name.toLowerCase().replace(/[-_.]/g, '');
  return SECRET_FIELD_NAMES.has(normalised) || SECRET_FIELD_SUFFIX.test(normalised);
}

/** How deep {@link redactFields} walks before it stops copying (a log object is never that deep). */
const MAX_DEPTH = 8;

/**
 * A copy of a value fit for a log line: fields named as secrets (see {@link isSecretFieldName})
 * become `***`, every string passes through {@link redactText}, errors keep their name, message
 * (redacted), `code` and `cause`. Arrays and plain objects are copied, other objects shown by
 * their redacted `String()`. Never throws; cycles and very deep values are cut short (`[...]`),
 * while an object that merely appears twice is copied twice.
 *
 * @param depth - How deep `value` already is (callers leave it out).
 * @param seen - The objects that contain `value` (callers leave it out).
 */
export function redactFields(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value) || depth >= MAX_DEPTH) return '[...]';
  // `seen` holds the path from the root only, so only a cycle is cut, not a shared object.
  seen.add(value);
  try {
    return redactObject(value, depth, seen);
  } catch {
    // A throwing getter or toString(), an invalid Date: the value cannot be shown, the line still can.
    return '[unreadable]';
  } finally {
    seen.delete(value);
  }
}

function redactObject(value: object, depth: number, seen: WeakSet<object>): unknown {
  if (Array.isArray(value)) return value.map((item) => redactFields(item, depth + 1, seen));
  if (value instanceof Error) {
    const shown: Record<string, unknown> = { name: value.name, message: redactText(value.message) };
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) shown.code = code;
    if (value.stack !== undefined) shown.stack = redactText(value.stack);
    if (value.cause !== undefined) shown.cause = redactFields(value.cause, depth + 1, seen);
    return shown;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    if (value instanceof Uint8Array) return `[${value.byteLength} bytes]`;
    if (value instanceof Date) return value.toISOString();
    if (value instanceof URL) return redactUrl(value.href);
    return redactText(String(value));
  }
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    out[name] = isSecretFieldName(name) && field !== undefined ? MASK : redactFields(field, depth + 1, seen);
  }
  return out;
}
