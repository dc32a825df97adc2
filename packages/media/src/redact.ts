/**
 * Credential redaction for everything that may reach a log line or an error message.
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
const PARAMETER = /([?&;/])([^=&;#?/]+)=([^&;#]*)/g;

/** Parameter names (lower-cased, separators kept) that carry a secret wherever they appear. */
const SECRET_ANYWHERE = /pass|pwd|secret|token|credential|signature|apikey|api_key|api-key|auth/;

/** Parameter names that end in a secret-ish word (`key`, `apiKey`, `sig`). */
const SECRET_SUFFIX = /(key|sig)$/;

/**
 * True when a query or path parameter name looks like it carries a secret (`password`,
 * `access_token`, `X-Amz-Signature`, `apikey`, `sig`, ...), compared case-insensitively.
 */
export function isSecretParameterName(name: string): boolean {
  const lower = name.toLowerCase();
  return SECRET_ANYWHERE.test(lower) || SECRET_SUFFIX.test(lower);
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
 * Redacts every URL found in free text (error messages from Node or other libraries may quote
 * the URL they were given, credentials included).
 */
export function redactText(text: string): string {
  return text.replace(URL_IN_TEXT, (url) => redactUrl(url));
}
