/** The environment variables that carry camera credentials, so they stay out of config files. */
export interface RtspCredentialEnv {
  readonly SVC_RTSP_USER?: string | undefined;
  readonly SVC_RTSP_PASSWORD?: string | undefined;
}

/** `scheme://` and the authority after it (up to the first `/`, `?` or `#`). */
const AUTHORITY = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)/;

/**
 * Puts the credentials from `SVC_RTSP_USER` / `SVC_RTSP_PASSWORD` into an RTSP URL.
 *
 * Credentials already in the URL win: the URL is returned unchanged when it has userinfo, when
 * neither variable is set (empty counts as unset), or when it has no `scheme://`. Both values
 * are percent-encoded, so any character is safe. A password without a user gives an empty user
 * name (`rtsp://:secret@cam/`), which Basic and Digest both allow.
 *
 * The result carries a secret: log it only through `redactUrl`.
 */
export function applyRtspCredentials(url: string, env: RtspCredentialEnv): string {
  const user = env.SVC_RTSP_USER ?? '';
  const password = env.SVC_RTSP_PASSWORD ?? '';
  if (user === '' && password === '') return url;
  const match = AUTHORITY.exec(url);
  if (match === null) return url;
  const [, prefix = '', authority = ''] = match;
  if (authority.includes('@')) return url;
  const userinfo = encodeURIComponent(user) + (password === '' ? '' : `:${encodeURIComponent(password)}`);
  return `${prefix}${userinfo}@${url.slice(prefix.length)}`;
}
