/**
 * The part of SDP (RFC 4566) an RTSP client needs: which RTP streams a camera offers, how their
 * payload types map to codecs, their `fmtp` parameters and their control URLs (RFC 2326 C.1).
 */
import { redactText } from '@svc/runtime';
import { MediaError } from './errors.js';

/** Bodies larger than this are not session descriptions (a camera's is a few hundred bytes). */
const MAX_SDP_CHARS = 1 << 20;

/** A `c=` line: `c=<nettype> <addrtype> <connection-address>`. */
export interface SdpConnection {
  /** `IN` for the Internet. */
  readonly netType: string;
  /** `IP4` or `IP6`. */
  readonly addrType: string;
  /** The address as written, with any `/ttl` suffix. */
  readonly address: string;
}

/** An `a=rtpmap:<pt> <encoding>/<clock>[/<channels>]` line, or the static mapping of RFC 3551. */
export interface SdpRtpMap {
  readonly payloadType: number;
  /** As the camera wrote it (`H264`, `H265`, `JPEG`); compare case-insensitively. */
  readonly encodingName: string;
  /** RTP timestamp units per second (90000 for video). */
  readonly clockRate: number;
  /** The third field when it is a number (audio channels). */
  readonly channels?: number;
}

/** One `m=` section. The top-level payload fields describe its first format. */
export interface SdpMedia {
  /** `video`, `audio`, `application`, ... */
  readonly type: string;
  readonly port: number;
  /** `RTP/AVP`, `RTP/AVPF`, `RTP/SAVP`, ... */
  readonly proto: string;
  /** The RTP payload types of the `m=` line, in order. */
  readonly formats: readonly number[];
  /** The first format: the payload type the stream uses. */
  readonly payloadType: number;
  /** Encoding of {@link SdpMedia.payloadType}; empty when a dynamic type has no `a=rtpmap`. */
  readonly encodingName: string;
  /** Clock rate of {@link SdpMedia.payloadType}; 0 when unknown. */
  readonly clockRate: number;
  /** `a=fmtp` parameters of {@link SdpMedia.payloadType}: keys lower-cased, values as written. */
  readonly fmtp: ReadonlyMap<string, string>;
  /** Every `a=rtpmap` of the section (plus static mappings for listed static types). */
  readonly rtpmaps: ReadonlyMap<number, SdpRtpMap>;
  /** Every `a=fmtp` of the section, by payload type. */
  readonly fmtps: ReadonlyMap<number, ReadonlyMap<string, string>>;
  /** `a=control` of the section as written (resolve it with {@link resolveControlUrl}). */
  readonly control?: string;
  /** The section's `c=` line, else the session's. */
  readonly connection?: SdpConnection;
  /** Every `a=` line of the section in order, as name and value (`''` for flags). */
  readonly attributes: readonly (readonly [name: string, value: string])[];
}

/** A parsed session description. */
export interface SessionDescription {
  /** `s=` */
  readonly sessionName?: string;
  /** Session-level `a=control`: the aggregate control URL, `*` meaning the base URL. */
  readonly control?: string;
  /** Session-level `c=`. */
  readonly connection?: SdpConnection;
  readonly media: readonly SdpMedia[];
}

/** Static RTP payload types (RFC 3551 tables 4 and 5): encoding, clock rate, channels. */
const STATIC_PAYLOAD_TYPES: ReadonlyMap<number, readonly [string, number, number?]> = new Map([
  [0, ['PCMU', 8000, 1]],
  [3, ['GSM', 8000, 1]],
  [4, ['G723', 8000, 1]],
  [5, ['DVI4', 8000, 1]],
  [6, ['DVI4', 16000, 1]],
  [7, ['LPC', 8000, 1]],
  [8, ['PCMA', 8000, 1]],
  [9, ['G722', 8000, 1]],
  [10, ['L16', 44100, 2]],
  [11, ['L16', 44100, 1]],
  [12, ['QCELP', 8000, 1]],
  [13, ['CN', 8000, 1]],
  [14, ['MPA', 90000]],
  [15, ['G728', 8000, 1]],
  [16, ['DVI4', 11025, 1]],
  [17, ['DVI4', 22050, 1]],
  [18, ['G729', 8000, 1]],
  [25, ['CelB', 90000]],
  [26, ['JPEG', 90000]],
  [28, ['nv', 90000]],
  [31, ['H261', 90000]],
  [32, ['MPV', 90000]],
  [33, ['MP2T', 90000]],
  [34, ['H263', 90000]],
]);

/** Throws the parse error for line `lineNo` (1-based), quoting a redacted excerpt of it. */
function fail(lineNo: number, line: string, problem: string): never {
  const excerpt = line.length > 60 ? `${line.slice(0, 60)}...` : line;
  throw new MediaError(
    'malformed-sdp',
    `SDP line ${lineNo} (${JSON.stringify(redactText(excerpt))}): ${problem}`,
  );
}

/** Parses a decimal integer written with digits only, or returns undefined. */
function parseDecimal(text: string, maxDigits: number): number | undefined {
  if (text.length === 0 || text.length > maxDigits || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** A media section while it is being read. */
interface MediaDraft {
  type: string;
  port: number;
  proto: string;
  formats: number[];
  rtpmaps: Map<number, SdpRtpMap>;
  fmtps: Map<number, Map<string, string>>;
  control?: string;
  connection?: SdpConnection;
  attributes: (readonly [string, string])[];
}

// c=<nettype> <addrtype> <connection-address>          (RFC 4566 §5.7)
function parseConnection(value: string, lineNo: number, line: string): SdpConnection {
  const parts = value.trim().split(/\s+/);
  const [netType, addrType, address] = parts;
  if (parts.length !== 3 || netType === undefined || addrType === undefined || address === undefined) {
    fail(lineNo, line, 'expected "c=<nettype> <addrtype> <address>"');
  }
  return { netType, addrType, address };
}

// m=<media> <port>[/<number of ports>] <proto> <fmt> ...   (RFC 4566 §5.14)
// With an RTP profile each <fmt> is an RTP payload type, 0-127.
function parseMediaLine(value: string, lineNo: number, line: string): MediaDraft {
  const parts = value.trim().split(/\s+/);
  const [type, portField, proto, ...formatFields] = parts;
  if (type === undefined || portField === undefined || proto === undefined || formatFields.length === 0) {
    fail(lineNo, line, 'expected "m=<media> <port> <proto> <format> ..."');
  }
  const port = parseDecimal(portField.split('/')[0] ?? '', 5);
  if (port === undefined || port > 65535)
    fail(lineNo, line, `port ${JSON.stringify(portField)} is not 0-65535`);
  const formats = formatFields.map((field) => {
    const pt = parseDecimal(field, 3);
    if (pt === undefined || pt > 127) {
      fail(lineNo, line, `format ${JSON.stringify(field)} is not an RTP payload type (0-127)`);
    }
    return pt;
  });
  return { type, port, proto, formats, rtpmaps: new Map(), fmtps: new Map(), attributes: [] };
}

// a=rtpmap:<payload type> <encoding name>/<clock rate>[/<encoding parameters>]   (RFC 4566 §6)
function parseRtpMap(value: string, lineNo: number, line: string): SdpRtpMap {
  const match = /^(\d{1,3})\s+([^/\s]+)\/(\d{1,10})(?:\/(\S*))?\s*$/.exec(value);
  const payloadType = match?.[1] === undefined ? undefined : Number(match[1]);
  const clockRate = match?.[3] === undefined ? 0 : Number(match[3]);
  const encodingName = match?.[2];
  if (payloadType === undefined || payloadType > 127 || encodingName === undefined || clockRate <= 0) {
    fail(lineNo, line, 'expected "a=rtpmap:<payload type 0-127> <encoding>/<clock rate>[/<channels>]"');
  }
  const channels = parseDecimal(match?.[4] ?? '', 3);
  return channels === undefined
    ? { payloadType, encodingName, clockRate }
    : { payloadType, encodingName, clockRate, channels };
}

// a=fmtp:<format> <format specific parameters>   (RFC 4566 §6); for video codecs the
// parameters are "name=value" pairs separated by ";" (RFC 6184, RFC 7798).
function parseFmtp(value: string, lineNo: number, line: string): [number, Map<string, string>] {
  const match = /^(\d{1,3})(?:\s+(.*))?$/s.exec(value);
  const payloadType = match?.[1] === undefined ? undefined : Number(match[1]);
  if (payloadType === undefined || payloadType > 127) {
    fail(lineNo, line, 'expected "a=fmtp:<payload type 0-127> <parameters>"');
  }
  const parameters = new Map<string, string>();
  for (const item of (match?.[2] ?? '').split(';')) {
    const trimmed = item.trim();
    if (trimmed === '') continue;
    const eq = trimmed.indexOf('=');
    const key = (eq < 0 ? trimmed : trimmed.slice(0, eq)).trim().toLowerCase();
    const val = eq < 0 ? '' : trimmed.slice(eq + 1).trim();
    if (key !== '') parameters.set(key, val);
  }
  return [payloadType, parameters];
}

/** Freezes a finished media section, filling in static payload types and the first format. */
function finishMedia(draft: MediaDraft, sessionConnection: SdpConnection | undefined): SdpMedia {
  for (const pt of draft.formats) {
    const known = STATIC_PAYLOAD_TYPES.get(pt);
    if (known !== undefined && !draft.rtpmaps.has(pt)) {
      const [encodingName, clockRate, channels] = known;
      draft.rtpmaps.set(
        pt,
        channels === undefined
          ? { payloadType: pt, encodingName, clockRate }
          : { payloadType: pt, encodingName, clockRate, channels },
      );
    }
  }
  const payloadType = draft.formats[0] ?? 0;
  const map = draft.rtpmaps.get(payloadType);
  const connection = draft.connection ?? sessionConnection;
  return {
    type: draft.type,
    port: draft.port,
    proto: draft.proto,
    formats: draft.formats,
    payloadType,
    encodingName: map?.encodingName ?? '',
    clockRate: map?.clockRate ?? 0,
    fmtp: draft.fmtps.get(payloadType) ?? new Map(),
    rtpmaps: draft.rtpmaps,
    fmtps: draft.fmtps,
    ...(draft.control === undefined ? {} : { control: draft.control }),
    ...(connection === undefined ? {} : { connection }),
    attributes: draft.attributes,
  };
}

/**
 * Parses a session description (RFC 4566): the `m=` sections with their payload mappings,
 * `fmtp` parameters, control URLs and connection lines. Unknown lines and attributes are kept
 * out of the way, not rejected.
 *
 * @throws MediaError `malformed-sdp` when the text is not SDP (does not start with `v=0`, has a
 * line that is not `<letter>=<value>`, or a malformed `m=`, `c=`, `a=rtpmap` or `a=fmtp` line);
 * the message names the line.
 */
export function parseSdp(text: string): SessionDescription {
  if (text.length > MAX_SDP_CHARS) {
    throw new MediaError('malformed-sdp', `SDP of ${text.length} characters is larger than ${MAX_SDP_CHARS}`);
  }
  // Each line: <type>=<value>, <type> one letter (RFC 4566 §5); CRLF, bare LF tolerated.
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
  let sawVersion = false;
  let sessionName: string | undefined;
  let sessionControl: string | undefined;
  let sessionConnection: SdpConnection | undefined;
  const media: SdpMedia[] = [];
  let current: MediaDraft | undefined;

  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trimEnd();
    const lineNo = i + 1;
    if (line === '') continue;
    const match = /^([a-zA-Z])=(.*)$/s.exec(line);
    const type = match?.[1];
    const value = match?.[2] ?? '';
    if (type === undefined) fail(lineNo, line, 'not a "<letter>=<value>" line');
    if (!sawVersion) {
      if (type !== 'v' || value.trim() !== '0') fail(lineNo, line, 'a session description starts with "v=0"');
      sawVersion = true;
      continue;
    }
    if (type === 'm') {
      if (current !== undefined) media.push(finishMedia(current, sessionConnection));
      current = parseMediaLine(value, lineNo, line);
    } else if (type === 'c') {
      const connection = parseConnection(value, lineNo, line);
      if (current === undefined) sessionConnection = connection;
      else current.connection = connection;
    } else if (type === 's' && current === undefined) {
      sessionName = value;
    } else if (type === 'a') {
      const colon = value.indexOf(':');
      const name = colon < 0 ? value : value.slice(0, colon);
      const attrValue = colon < 0 ? '' : value.slice(colon + 1);
      if (current === undefined) {
        if (name === 'control') sessionControl = attrValue.trim();
        continue;
      }
      current.attributes.push([name, attrValue]);
      if (name === 'control') {
        current.control = attrValue.trim();
      } else if (name === 'rtpmap') {
        const map = parseRtpMap(attrValue, lineNo, line);
        current.rtpmaps.set(map.payloadType, map);
      } else if (name === 'fmtp') {
        const [pt, parameters] = parseFmtp(attrValue, lineNo, line);
        current.fmtps.set(pt, parameters);
      }
    }
  }
  if (!sawVersion) throw new MediaError('malformed-sdp', 'SDP is empty');
  if (current !== undefined) media.push(finishMedia(current, sessionConnection));
  return {
    ...(sessionName === undefined ? {} : { sessionName }),
    ...(sessionControl === undefined ? {} : { control: sessionControl }),
    ...(sessionConnection === undefined ? {} : { connection: sessionConnection }),
    media,
  };
}

/**
 * The first video stream of a description that an RTP depacketiser can use: an RTP profile and
 * a known encoding and clock rate.
 *
 * @throws MediaError `malformed-sdp` when there is none; the message lists what was offered.
 */
export function findVideoMedia(description: SessionDescription): SdpMedia {
  const video = description.media.find(
    (m) =>
      m.type === 'video' &&
      m.proto.toUpperCase().startsWith('RTP/') &&
      m.encodingName !== '' &&
      m.clockRate > 0,
  );
  if (video !== undefined) return video;
  const offered = description.media.map(
    (m) => `${m.type} ${m.proto} ${m.encodingName || `pt ${m.payloadType}`}`,
  );
  throw new MediaError(
    'malformed-sdp',
    `the session description has no usable RTP video stream (offered: ${offered.length === 0 ? 'nothing' : offered.join('; ')})`,
  );
}

/** `scheme://` at the start: an absolute URL. */
const ABSOLUTE_URL = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * Resolves an `a=control` value to the URL a request is sent to (RFC 2326 C.1.1).
 *
 * `base` is the Content-Base header of the DESCRIBE answer, else its Content-Location, else the
 * request URL. An absolute control is used as is; a missing, empty or `*` control means `base`;
 * a control starting with `/` replaces the base's path; any other relative control is appended
 * to `base` after a `/` (added when `base` lacks a trailing one). Appending as text, rather than
 * RFC 3986 resolution, is what cameras expect: `rtsp://cam/live?channel=1/` plus `trackID=1`
 * gives `rtsp://cam/live?channel=1/trackID=1`, and `rtsp://cam/stream` plus `track1` must not
 * drop `stream`.
 */
export function resolveControlUrl(base: string, control: string | undefined): string {
  const trimmed = control?.trim() ?? '';
  if (trimmed === '' || trimmed === '*') return base;
  if (ABSOLUTE_URL.test(trimmed)) return trimmed;
  if (trimmed.startsWith('/')) {
    const origin = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(base);
    if (origin !== null) return origin[0] + trimmed;
  }
  return base.endsWith('/') ? base + trimmed : `${base}/${trimmed}`;
}

/**
 * Decodes an H.264 `sprop-parameter-sets` (RFC 6184) or H.265 `sprop-vps`/`sprop-sps`/`sprop-pps`
 * (RFC 7798) value: comma-separated base64 NAL units, returned without start codes.
 *
 * @throws MediaError `malformed-sdp` when an item is not base64.
 */
export function decodeSpropParameterSets(value: string): Uint8Array[] {
  const units: Uint8Array[] = [];
  for (const item of value.split(',')) {
    const trimmed = item.trim();
    if (trimmed === '') continue;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || trimmed.replace(/=+$/, '').length % 4 === 1) {
      throw new MediaError(
        'malformed-sdp',
        `parameter set ${JSON.stringify(trimmed.slice(0, 40))} is not base64`,
      );
    }
    units.push(new Uint8Array(Buffer.from(trimmed, 'base64')));
  }
  return units;
}
