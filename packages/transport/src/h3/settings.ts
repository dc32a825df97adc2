import { TransportError } from '../errors.js';
import { DEFAULT_MAX_FIELD_SECTION_SIZE } from './qpack.js';
import { MAX_SAFE_VARINT, readVarintBig, varintLength, writeVarint } from './varint.js';

/**
 * HTTP/3 setting identifiers we send or act on (RFC 9114 §7.2.4.1, RFC 9204 §5, RFC 9220 §3,
 * RFC 9297 §2.1.1, draft-ietf-webtrans-http3). WebTransport changed its setting between drafts;
 * the draft range of each codepoint is in its name.
 */
export const SETTING = {
  /** QPACK dynamic table capacity the sender accepts; we say 0 (static table and literals only). */
  QPACK_MAX_TABLE_CAPACITY: 0x01,
  /** Largest field section the sender accepts (name + value + 32 per line). */
  MAX_FIELD_SECTION_SIZE: 0x06,
  /** Streams the sender lets block on QPACK; 0, as nothing can block without a dynamic table. */
  QPACK_BLOCKED_STREAMS: 0x07,
  /** Extended CONNECT (`:protocol`) allowed: 0 or 1 (RFC 9220). */
  ENABLE_CONNECT_PROTOCOL: 0x08,
  /** HTTP/3 datagrams: 0 or 1 (RFC 9297). */
  H3_DATAGRAM: 0x33,
  /** Drafts 00-06: `SETTINGS_ENABLE_WEBTRANSPORT`, 1 = on. Chromium's draft-02 code path needs it. */
  ENABLE_WEBTRANSPORT_DRAFT02: 0x2b603742,
  /** Drafts 04-05: `SETTINGS_WEBTRANSPORT_MAX_SESSIONS`. */
  WEBTRANSPORT_MAX_SESSIONS_DRAFT04: 0x2b603743,
  /** Drafts 07-12: `SETTINGS_WEBTRANSPORT_MAX_SESSIONS` (Chromium's draft-07 code path). */
  WEBTRANSPORT_MAX_SESSIONS_DRAFT07: 0xc671706a,
  /** Drafts 13-14: `SETTINGS_WT_MAX_SESSIONS`. Recognised, not advertised. */
  WT_MAX_SESSIONS_DRAFT13: 0x14e9cd29,
  /** Drafts 15 and later: `SETTINGS_WT_ENABLED` (with `:protocol` `webtransport-h3`). Recognised, not advertised. */
  WT_ENABLED_DRAFT15: 0x2c7cf000,
  /** Pre-RFC HTTP datagram setting (draft-ietf-masque-h3-datagram-04..). Recognised, not advertised. */
  H3_DATAGRAM_DRAFT04: 0xffd277,
} as const;

/** Setting identifiers of HTTP/2 with no HTTP/3 meaning; receiving one is H3_SETTINGS_ERROR. */
const HTTP2_ONLY_SETTINGS: ReadonlySet<number> = new Set([0x02, 0x03, 0x04, 0x05]);

/** Settings whose only valid values are 0 and 1. */
const BOOLEAN_SETTINGS: ReadonlySet<number> = new Set([SETTING.ENABLE_CONNECT_PROTOCOL, SETTING.H3_DATAGRAM]);

/**
 * Decoded SETTINGS of a peer: identifier to value. Identifiers beyond 2^53-1 (only reserved or
 * unknown ones are that large) are left out; values beyond 2^53-1 read as `Number.MAX_SAFE_INTEGER`.
 */
export type Settings = ReadonlyMap<number, number>;

/** Settings to send, in order: `[identifier, value]` pairs. */
export type SettingsList = readonly (readonly [id: number, value: number])[];

/** Anything that lists settings to send: a {@link SettingsList} or a {@link Settings} map. */
export type SettingsInput = Iterable<readonly [id: number, value: number]>;

/** Options of {@link serverSettings}. */
export interface ServerSettingsOptions {
  /** Concurrent WebTransport sessions we accept on one connection (at least 1). */
  readonly maxSessions: number;
  /** Largest request field section we accept; default {@link DEFAULT_MAX_FIELD_SECTION_SIZE}. */
  readonly maxFieldSectionSize?: number;
}

/**
 * The SETTINGS our WebTransport server advertises, in wire order. Every WebTransport codepoint a
 * Chromium of the supported range may look for is there: draft-02 `ENABLE_WEBTRANSPORT` and the
 * draft-04 and draft-07 `WEBTRANSPORT_MAX_SESSIONS`; a client picks the newest draft both sides
 * speak. QPACK is static-only (capacity 0, no blocked streams).
 */
export function serverSettings(options: ServerSettingsOptions): SettingsList {
  const { maxSessions, maxFieldSectionSize = DEFAULT_MAX_FIELD_SECTION_SIZE } = options;
  if (!Number.isSafeInteger(maxSessions) || maxSessions < 1) {
    throw new TypeError(`maxSessions = ${maxSessions} must be an integer of at least 1`);
  }
  if (!Number.isSafeInteger(maxFieldSectionSize) || maxFieldSectionSize < 1) {
    throw new TypeError(`maxFieldSectionSize = ${maxFieldSectionSize} must be a positive integer`);
  }
  return [
    [SETTING.QPACK_MAX_TABLE_CAPACITY, 0],
    [SETTING.QPACK_BLOCKED_STREAMS, 0],
    [SETTING.MAX_FIELD_SECTION_SIZE, maxFieldSectionSize],
    [SETTING.ENABLE_CONNECT_PROTOCOL, 1],
    [SETTING.H3_DATAGRAM, 1],
    [SETTING.ENABLE_WEBTRANSPORT_DRAFT02, 1],
    [SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT04, maxSessions],
    [SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT07, maxSessions],
  ];
}

/**
 * SETTINGS frame payload (RFC 9114 §7.2.4): identifier/value pairs, each a varint, back to back.
 *
 * ```text
 * Setting {
 *   Identifier (i),
 *   Value (i),
 * }
 * SETTINGS payload = Setting (..) ...
 * ```
 */
export const settingsPayload = {
  /** Bytes the payload of `settings` takes. */
  byteLength(settings: SettingsInput): number {
    let sum = 0;
    for (const [id, value] of settings) sum += varintLength(id) + varintLength(value);
    return sum;
  },

  /**
   * Writes the payload at `offset`; returns the bytes written. `TypeError` for a repeated
   * identifier or an HTTP/2-only one: we must never send what the peer has to reject.
   */
  encodeInto(view: DataView, offset: number, settings: SettingsInput): number {
    const seen = new Set<number>();
    let at = offset;
    for (const [id, value] of settings) {
      if (seen.has(id)) throw new TypeError(`setting 0x${id.toString(16)} appears twice`);
      if (HTTP2_ONLY_SETTINGS.has(id)) throw new TypeError(`setting 0x${id.toString(16)} is HTTP/2-only`);
      seen.add(id);
      at += writeVarint(view, at, id);
      at += writeVarint(view, at, value);
    }
    return at - offset;
  },

  /**
   * Reads a whole payload. Unknown and reserved identifiers are kept (or, when huge, skipped) and
   * never fail; a repeated identifier, an HTTP/2-only one, or a non-boolean value for a boolean
   * setting is {@link TransportError} `settings-error`; a payload that ends inside a pair is
   * `frame-error`.
   */
  decode(bytes: Uint8Array, offset = 0, end = bytes.length): { value: Settings; bytes: number } {
    const payload = bytes.subarray(offset, end);
    const settings = new Map<number, number>();
    const seen = new Set<bigint>();
    let at = 0;
    while (at < payload.length) {
      const id = readPairPart(payload, at, 'identifier');
      at += id.bytes;
      const value = readPairPart(payload, at, 'value');
      at += value.bytes;
      if (seen.has(id.value)) {
        throw new TransportError('settings-error', `setting 0x${id.value.toString(16)} appears twice`);
      }
      seen.add(id.value);
      if (id.value > BigInt(MAX_SAFE_VARINT)) continue;
      const key = Number(id.value);
      const number = value.value > BigInt(MAX_SAFE_VARINT) ? MAX_SAFE_VARINT : Number(value.value);
      if (HTTP2_ONLY_SETTINGS.has(key)) {
        throw new TransportError('settings-error', `setting 0x${key.toString(16)} is HTTP/2-only`);
      }
      if (BOOLEAN_SETTINGS.has(key) && number > 1) {
        throw new TransportError('settings-error', `setting 0x${key.toString(16)} = ${number} is not 0 or 1`);
      }
      settings.set(key, number);
    }
    return { value: settings, bytes: payload.length };
  },
} as const;

function readPairPart(payload: Uint8Array, at: number, part: string): { value: bigint; bytes: number } {
  try {
    return readVarintBig(payload, at);
  } catch (error) {
    throw new TransportError('frame-error', `SETTINGS payload ends inside a setting ${part}`, {
      cause: error,
    });
  }
}

/** Encodes a SETTINGS payload (see {@link settingsPayload}). */
export function encodeSettings(settings: SettingsInput): Uint8Array {
  const out = new Uint8Array(settingsPayload.byteLength(settings));
  settingsPayload.encodeInto(new DataView(out.buffer), 0, settings);
  return out;
}

/** Decodes a SETTINGS payload (see {@link settingsPayload}). */
export function decodeSettings(payload: Uint8Array): Settings {
  return settingsPayload.decode(payload).value;
}

/** What a client's SETTINGS say about WebTransport. */
export interface PeerWebTransportSupport {
  /** The peer accepts HTTP/3 datagrams (`H3_DATAGRAM` = 1). */
  readonly datagrams: boolean;
  /** The peer enabled WebTransport under any draft's setting. */
  readonly webTransport: boolean;
  /** The peer's limit on field sections we send, when it gave one. */
  readonly maxFieldSectionSize?: number;
}

/**
 * Reads WebTransport support from a peer's SETTINGS. Informational on the server: Chromium only
 * opens sessions when it has seen our settings, and its own settings carry the same flags.
 */
export function peerWebTransportSupport(settings: Settings): PeerWebTransportSupport {
  const positive = (id: number): boolean => (settings.get(id) ?? 0) > 0;
  const maxFieldSectionSize = settings.get(SETTING.MAX_FIELD_SECTION_SIZE);
  return {
    datagrams: positive(SETTING.H3_DATAGRAM),
    webTransport:
      positive(SETTING.ENABLE_WEBTRANSPORT_DRAFT02) ||
      positive(SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT04) ||
      positive(SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT07) ||
      positive(SETTING.WT_MAX_SESSIONS_DRAFT13) ||
      positive(SETTING.WT_ENABLED_DRAFT15),
    ...(maxFieldSectionSize === undefined ? {} : { maxFieldSectionSize }),
  };
}
