/**
 * Camera addresses: the `rtsp://` URL split into what requests carry and the credentials, and
 * addresses normalised so the camera's packets are recognised.
 */
import { isIP } from 'node:net';
import { redactUrl } from '@svc/runtime';
import { MediaError } from '../errors.js';
import type { RtspCredentials } from './auth.js';
import { hasControlCharacter } from './message.js';

/** The port of `rtsp://` URLs that name none. */
const DEFAULT_RTSP_PORT = 554;

/** A parsed `rtsp://` URL, credentials split off. */
export interface RtspTarget {
  /** The URL without userinfo or fragment: what requests carry. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly credentials: RtspCredentials | undefined;
}

/** Percent-decodes userinfo, keeping text that is not valid percent-encoding as it is. */
function decodeUserinfo(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Splits an `rtsp://` URL into the request URL, host, port and credentials.
 *
 * @throws MediaError `bad-url` for anything else; the message shows the URL redacted.
 */
export function parseRtspUrl(raw: string): RtspTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // No `cause`: Node's TypeError carries the unredacted input.
    throw new MediaError('bad-url', `${JSON.stringify(redactUrl(raw))} is not a URL`);
  }
  if (url.protocol !== 'rtsp:') {
    throw new MediaError(
      'bad-url',
      `${redactUrl(raw)}: only rtsp:// URLs are supported, not ${url.protocol}//`,
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new MediaError('bad-url', `${redactUrl(raw)} names no host`);
  const port = url.port === '' ? DEFAULT_RTSP_PORT : Number(url.port);
  if (port === 0) throw new MediaError('bad-url', `${redactUrl(raw)}: port 0 is not a camera's port`);
  let credentials: RtspCredentials | undefined;
  if (url.username !== '' || url.password !== '') {
    credentials = { username: decodeUserinfo(url.username), password: decodeUserinfo(url.password) };
    if (hasControlCharacter(credentials.username + credentials.password)) {
      throw new MediaError('bad-url', `the credentials of ${redactUrl(raw)} contain a control character`);
    }
  }
  url.username = '';
  url.password = '';
  url.hash = '';
  return { url: url.href, host, port, credentials };
}

/** An IPv4-mapped IPv6 address in its IPv4 form, so addresses compare equal. */
export function normalizeAddress(address: string): string {
  const lower = address.toLowerCase();
  return lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower;
}
