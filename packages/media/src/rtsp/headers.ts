/** Parsers for the RTSP header fields whose structure the client needs (RFC 2326 §12). */
import { redactText } from '@svc/runtime';
import { MediaError } from '../errors.js';
import { DEFAULT_SESSION_TIMEOUT_S } from './timing.js';

/** A `Session` header. */
export interface SessionHeader {
  readonly id: string;
  /** Seconds of inactivity after which the server ends the session. */
  readonly timeoutS: number;
}

/**
 * Parses `Session` (RFC 2326 §12.37):
 *
 * ```text
 * Session = "Session" ":" session-id [ ";" "timeout" "=" delta-seconds ]
 * ```
 *
 * A missing or unusable timeout means {@link DEFAULT_SESSION_TIMEOUT_S}.
 *
 * @throws MediaError `malformed-rtsp` when there is no session id.
 */
export function parseSessionHeader(value: string): SessionHeader {
  const [idPart = '', ...params] = value.split(';');
  const id = idPart.trim();
  if (!/^[\x21-\x7e]{1,256}$/.test(id)) {
    throw new MediaError(
      'malformed-rtsp',
      `Session header ${JSON.stringify(redactText(value.slice(0, 60)))} has no usable id`,
    );
  }
  let timeoutS = DEFAULT_SESSION_TIMEOUT_S;
  for (const param of params) {
    const match = /^\s*timeout\s*=\s*(\d{1,9})\s*$/i.exec(param);
    const seconds = match?.[1] === undefined ? 0 : Number(match[1]);
    if (seconds > 0) timeoutS = seconds;
  }
  return { id, timeoutS };
}

/** The transport a server chose in its SETUP answer. */
export interface TransportHeader {
  /** `RTP/AVP/TCP` (interleaved) or `RTP/AVP` / `RTP/AVP/UDP`. */
  readonly protocol: string;
  readonly tcp: boolean;
  /** `interleaved=<rtp>-<rtcp>`: the channels of the connection that carry this stream. */
  readonly interleaved?: readonly [number, number];
  /** `server_port=<rtp>-<rtcp>` */
  readonly serverPorts?: readonly [number, number];
  /** `source=<address>`: where the media comes from, when not the RTSP server itself. */
  readonly source?: string;
}

/** Reads `a-b` or `a` as a pair of integers within `max`. */
function parseRange(value: string, max: number): [number, number] | undefined {
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(value.trim());
  if (match?.[1] === undefined) return undefined;
  const first = Number(match[1]);
  const second = match[2] === undefined ? first + 1 : Number(match[2]);
  return first <= max && second <= max ? [first, second] : undefined;
}

/**
 * Parses the first transport spec of a `Transport` header (RFC 2326 §12.39):
 *
 * ```text
 * Transport      = "Transport" ":" 1#transport-spec
 * transport-spec = transport-protocol "/" profile [ "/" lower-transport ] *( ";" parameter )
 * parameter      = "unicast" | "interleaved=" channel [ "-" channel ]
 *                | "client_port=" port [ "-" port ] | "server_port=" port [ "-" port ]
 *                | "source=" host | "ssrc=" 8HEX | "mode=" mode | ...
 * ```
 *
 * @throws MediaError `malformed-rtsp` when it is not an RTP transport.
 */
export function parseTransportHeader(value: string): TransportHeader {
  const [spec = ''] = value.split(',');
  const [protocolPart = '', ...params] = spec.split(';');
  const protocol = protocolPart.trim();
  if (!/^RTP\/AVP(\/(TCP|UDP))?$/i.test(protocol)) {
    throw new MediaError(
      'malformed-rtsp',
      `Transport ${JSON.stringify(redactText(value.slice(0, 80)))} is not RTP/AVP over TCP or UDP`,
    );
  }
  let interleaved: [number, number] | undefined;
  let serverPorts: [number, number] | undefined;
  let source: string | undefined;
  for (const param of params) {
    const eq = param.indexOf('=');
    const name = (eq < 0 ? param : param.slice(0, eq)).trim().toLowerCase();
    const paramValue = eq < 0 ? '' : param.slice(eq + 1).trim();
    if (name === 'interleaved') interleaved = parseRange(paramValue, 255);
    else if (name === 'server_port') serverPorts = parseRange(paramValue, 65535);
    else if (name === 'source' && /^[0-9A-Za-z.:%-]{1,64}$/.test(paramValue)) source = paramValue;
  }
  return {
    protocol,
    tcp: /\/TCP$/i.test(protocol),
    ...(interleaved === undefined ? {} : { interleaved }),
    ...(serverPorts === undefined ? {} : { serverPorts }),
    ...(source === undefined ? {} : { source }),
  };
}

/** The methods of a `Public` header (RFC 2326 §12.28), upper-cased. */
export function parsePublicHeader(value: string | undefined): Set<string> {
  const methods = new Set<string>();
  for (const method of (value ?? '').split(',')) {
    const trimmed = method.trim().toUpperCase();
    if (trimmed !== '') methods.add(trimmed);
  }
  return methods;
}
