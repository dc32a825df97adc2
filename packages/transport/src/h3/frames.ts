import { TransportError } from '../errors.js';
import { type Settings, type SettingsInput, settingsPayload } from './settings.js';
import {
  copyInto,
  readTlvVarint,
  TLV,
  TlvReader,
  type TlvValueAction,
  tlvByteLength,
  tlvValue,
  writeTlvHeader,
} from './tlv.js';
import { readVarint, readVarintId, varintLength, writeVarint } from './varint.js';

/** HTTP/3 frame types (RFC 9114 §7.2) this library encodes or decodes. */
export const FRAME_TYPE = {
  DATA: 0x00,
  HEADERS: 0x01,
  CANCEL_PUSH: 0x03,
  SETTINGS: 0x04,
  PUSH_PROMISE: 0x05,
  GOAWAY: 0x07,
  MAX_PUSH_ID: 0x0d,
} as const;

/**
 * WebTransport stream signal (draft-ietf-webtrans-http3, 0x41 from draft-02 on): at the very start
 * of a bidirectional stream, this varint and a session id say "the rest of this stream is
 * WebTransport data for the session whose CONNECT stream has that id". It looks like a frame type
 * but has no length: everything after the session id is application data.
 */
export const WEBTRANSPORT_STREAM_SIGNAL = 0x41;

/** HTTP/2 frame types with no HTTP/3 meaning; receiving one is H3_FRAME_UNEXPECTED (RFC 9114 §7.2.8). */
const HTTP2_ONLY_FRAME_TYPES: ReadonlySet<number> = new Set([0x02, 0x06, 0x08, 0x09]);

/** Default limit on a buffered frame payload (HEADERS, SETTINGS): 64 KiB. */
export const DEFAULT_MAX_FRAME_PAYLOAD = 64 * 1024;

/** Largest payload of a frame that carries one varint (GOAWAY, MAX_PUSH_ID, CANCEL_PUSH). */
const MAX_VARINT_PAYLOAD = 8;

/**
 * An HTTP/3 frame. DATA carries body bytes (on a WebTransport CONNECT stream: capsules), HEADERS a
 * QPACK field section, SETTINGS the decoded settings; GOAWAY, MAX_PUSH_ID and CANCEL_PUSH one id.
 */
export type H3Frame =
  | { readonly type: 'data'; readonly payload: Uint8Array }
  | { readonly type: 'headers'; readonly block: Uint8Array }
  | { readonly type: 'settings'; readonly settings: Settings }
  | { readonly type: 'goaway'; readonly id: number }
  | { readonly type: 'max-push-id'; readonly pushId: number }
  | { readonly type: 'cancel-push'; readonly pushId: number };

/** A frame to send: like {@link H3Frame}, but SETTINGS may be given as an ordered list. */
export type OutgoingFrame =
  | Exclude<H3Frame, { readonly type: 'settings' }>
  | { readonly type: 'settings'; readonly settings: SettingsInput };

/** The frame type of each frame variant. */
const FRAME_TYPE_OF: { readonly [T in OutgoingFrame['type']]: number } = {
  data: FRAME_TYPE.DATA,
  headers: FRAME_TYPE.HEADERS,
  settings: FRAME_TYPE.SETTINGS,
  goaway: FRAME_TYPE.GOAWAY,
  'max-push-id': FRAME_TYPE.MAX_PUSH_ID,
  'cancel-push': FRAME_TYPE.CANCEL_PUSH,
};

function payloadLength(frame: OutgoingFrame): number {
  switch (frame.type) {
    case 'data':
      return frame.payload.length;
    case 'headers':
      return frame.block.length;
    case 'settings':
      return settingsPayload.byteLength(frame.settings);
    case 'goaway':
      return varintLength(frame.id);
    case 'max-push-id':
    case 'cancel-push':
      return varintLength(frame.pushId);
    default: {
      const unreachable: never = frame;
      throw new TypeError(`unknown frame ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * HTTP/3 frame layout (RFC 9114 §7.1): a type, the payload length, the payload (the record layout
 * of `tlv.ts`, shared with capsules).
 *
 * ```text
 * HTTP/3 Frame {
 *   Type (i),
 *   Length (i),
 *   Frame Payload (..),
 * }
 * ```
 *
 * Payloads: DATA and HEADERS are opaque bytes; SETTINGS is a list of identifier/value varint
 * pairs; GOAWAY (a stream or push id), MAX_PUSH_ID and CANCEL_PUSH (a push id) are exactly one
 * varint, with nothing left over.
 */
export const h3Frame = {
  /** Bytes the whole frame takes. */
  byteLength(frame: OutgoingFrame): number {
    return tlvByteLength(FRAME_TYPE_OF[frame.type], payloadLength(frame));
  },

  /** Writes the frame at `offset`; returns the bytes written. `TypeError` when it does not fit. */
  encodeInto(view: DataView, offset: number, frame: OutgoingFrame): number {
    const length = payloadLength(frame);
    const at = writeTlvHeader(view, offset, FRAME_TYPE_OF[frame.type], length, TLV.frame);
    switch (frame.type) {
      case 'data':
        copyInto(view, at, frame.payload);
        break;
      case 'headers':
        copyInto(view, at, frame.block);
        break;
      case 'settings':
        settingsPayload.encodeInto(view, at, frame.settings);
        break;
      case 'goaway':
        writeVarint(view, at, frame.id);
        break;
      case 'max-push-id':
      case 'cancel-push':
        writeVarint(view, at, frame.pushId);
        break;
      default: {
        const unreachable: never = frame;
        throw new TypeError(`unknown frame ${JSON.stringify(unreachable)}`);
      }
    }
    return at + length - offset;
  },

  /**
   * Reads one whole frame at `offset` of a buffer that ends at `end`. `value` is `undefined` for a
   * frame of unknown or reserved type (skipped, as RFC 9114 §9 requires). DATA and HEADERS
   * payloads are views into `bytes`, not copies. Throws {@link TransportError}: `frame-error` when
   * the frame is truncated or its payload malformed, `frame-unexpected` for HTTP/2-only types,
   * PUSH_PROMISE (servers never receive it) and the WebTransport stream signal (not a frame), and
   * `settings-error` from SETTINGS.
   */
  decode(bytes: Uint8Array, offset = 0, end = bytes.length): { value: H3Frame | undefined; bytes: number } {
    const view = bytes.subarray(offset, end);
    const type = readTlvVarint(view, 0, 'type', readVarintId, TLV.frame);
    const kind = classify(type.value);
    if (kind === 'webtransport-signal') {
      throw new TransportError('frame-unexpected', 'WebTransport stream signal where a frame was expected');
    }
    const length = readTlvVarint(view, type.bytes, 'length', readVarint, TLV.frame);
    const start = type.bytes + length.bytes;
    const payload = tlvValue(view, type.value, start, length.value, TLV.frame);
    return {
      value: kind === 'skip' ? undefined : parsePayload(type.value, payload),
      bytes: start + length.value,
    };
  },
} as const;

/** Encodes one frame (see {@link h3Frame}). */
export function encodeFrame(frame: OutgoingFrame): Uint8Array {
  const out = new Uint8Array(h3Frame.byteLength(frame));
  h3Frame.encodeInto(new DataView(out.buffer), 0, frame);
  return out;
}

/**
 * The type and length of a DATA frame of `payloadLength` bytes, so a large payload can be sent
 * after it without being copied into one buffer.
 */
export function encodeDataFrameHeader(payloadLength: number): Uint8Array {
  const out = new Uint8Array(1 + varintLength(payloadLength));
  writeVarint(new DataView(out.buffer), 1, payloadLength);
  return out;
}

type FrameKind = 'data' | 'buffered' | 'varint' | 'skip' | 'webtransport-signal';

/** How a frame type is handled; throws for types that must never arrive at a server. */
function classify(type: number): FrameKind {
  switch (type) {
    case FRAME_TYPE.DATA:
      return 'data';
    case FRAME_TYPE.HEADERS:
    case FRAME_TYPE.SETTINGS:
      return 'buffered';
    case FRAME_TYPE.GOAWAY:
    case FRAME_TYPE.MAX_PUSH_ID:
    case FRAME_TYPE.CANCEL_PUSH:
      return 'varint';
    case FRAME_TYPE.PUSH_PROMISE:
      throw new TransportError('frame-unexpected', 'PUSH_PROMISE sent to a server');
    case WEBTRANSPORT_STREAM_SIGNAL:
      return 'webtransport-signal';
    default:
      if (HTTP2_ONLY_FRAME_TYPES.has(type)) {
        throw new TransportError('frame-unexpected', `HTTP/2-only frame type 0x${type.toString(16)}`);
      }
      return 'skip';
  }
}

function parsePayload(type: number, payload: Uint8Array): H3Frame {
  switch (type) {
    case FRAME_TYPE.DATA:
      return { type: 'data', payload };
    case FRAME_TYPE.HEADERS:
      return { type: 'headers', block: payload };
    case FRAME_TYPE.SETTINGS:
      return { type: 'settings', settings: settingsPayload.decode(payload).value };
    case FRAME_TYPE.GOAWAY:
      return { type: 'goaway', id: readSoleVarint(payload, 'GOAWAY') };
    case FRAME_TYPE.MAX_PUSH_ID:
      return { type: 'max-push-id', pushId: readSoleVarint(payload, 'MAX_PUSH_ID') };
    case FRAME_TYPE.CANCEL_PUSH:
      return { type: 'cancel-push', pushId: readSoleVarint(payload, 'CANCEL_PUSH') };
    default:
      throw new TypeError(`frame type 0x${type.toString(16)} has no payload parser`);
  }
}

function readSoleVarint(payload: Uint8Array, name: string): number {
  let read: { value: number; bytes: number };
  try {
    read = readVarint(payload, 0);
  } catch (error) {
    throw new TransportError(
      'frame-error',
      `${name} payload of ${payload.length} bytes holds no whole varint`,
      {
        cause: error,
      },
    );
  }
  if (read.bytes !== payload.length) {
    throw new TransportError(
      'frame-error',
      `${name} payload has ${payload.length - read.bytes} bytes after its varint`,
    );
  }
  return read.value;
}

/** The kind of stream a {@link FrameReader} reads: the peer's control stream or a request stream. */
export type FrameStreamRole = 'control' | 'request';

/** Options of {@link FrameReader}. */
export interface FrameReaderOptions {
  /** Which stream this reader reads; sets the frame order rules. */
  readonly role: FrameStreamRole;
  /** Largest HEADERS or SETTINGS payload accepted; default {@link DEFAULT_MAX_FRAME_PAYLOAD}. */
  readonly maxPayload?: number;
}

/**
 * What a {@link FrameReader} yields: whole frames (DATA in pieces, as the bytes arrive), or, on a
 * request stream that starts with the WebTransport signal, the session id and then raw data.
 */
export type FrameReaderEvent =
  | H3Frame
  | { readonly type: 'webtransport-stream'; readonly sessionId: number }
  | { readonly type: 'webtransport-data'; readonly payload: Uint8Array };

/**
 * Incremental HTTP/3 frame reader for one stream: feed it the stream's bytes in chunks of any size
 * with {@link FrameReader.push}, call {@link FrameReader.end} when the stream ends.
 *
 * - DATA payloads are passed on in pieces as they arrive (views into the pushed chunks), so a body
 *   is never buffered; a DATA frame may therefore yield several `data` events.
 * - HEADERS and SETTINGS are buffered whole, after their announced length has been checked
 *   against `maxPayload` (`frame-error` when larger).
 * - Unknown and reserved frame types are skipped without being buffered.
 * - Control stream rules (RFC 9114 §6.2.1, §7.2): the first frame must be SETTINGS
 *   (`missing-settings`), a second SETTINGS, DATA, HEADERS or the WebTransport signal is
 *   `frame-unexpected`.
 * - Request stream rules (RFC 9114 §4.1, §7.2): SETTINGS, GOAWAY, MAX_PUSH_ID and CANCEL_PUSH are
 *   `frame-unexpected`, so are DATA before the first HEADERS and anything but unknown frames after
 *   trailers. The WebTransport signal (0x41 + session id) as the very first bytes turns the
 *   reader into a pass-through: one `webtransport-stream` event, then `webtransport-data` for
 *   every later byte. Anywhere else it is `frame-unexpected`.
 * - HTTP/2-only types and PUSH_PROMISE are `frame-unexpected` everywhere.
 *
 * After a throw the reader is spent: later calls throw `closed`.
 */
export class FrameReader extends TlvReader<FrameReaderEvent> {
  readonly #role: FrameStreamRole;
  readonly #maxPayload: number;
  #atStart = true;
  #headersSeen = 0;
  #settingsSeen = false;

  /** A reader for one stream in `options.role`; `TypeError` for a negative or fractional limit. */
  constructor(options: FrameReaderOptions) {
    super(TLV.frame);
    this.#role = options.role;
    this.#maxPayload = options.maxPayload ?? DEFAULT_MAX_FRAME_PAYLOAD;
    if (!Number.isSafeInteger(this.#maxPayload) || this.#maxPayload < 0) {
      throw new TypeError(`maxPayload = ${this.#maxPayload} must be a non-negative integer`);
    }
  }

  /** True once the stream turned out to be a WebTransport stream (see the class notes). */
  get isWebTransport(): boolean {
    return this.raw;
  }

  protected override onHeader(type: number, length: number, events: FrameReaderEvent[]): TlvValueAction {
    const atStart = this.#atStart;
    this.#atStart = false;
    if (this.#role === 'control' && !this.#settingsSeen && type !== FRAME_TYPE.SETTINGS) {
      throw new TransportError(
        'missing-settings',
        `control stream starts with frame type 0x${type.toString(16)}, not SETTINGS`,
      );
    }
    const kind = classify(type);
    if (kind === 'webtransport-signal') {
      if (this.#role !== 'request' || !atStart) {
        throw new TransportError(
          'frame-unexpected',
          `WebTransport stream signal ${atStart ? 'on a control stream' : 'after the start of a stream'}`,
        );
      }
      // The signal's second varint, read as a length, is the session id; the rest is data.
      events.push({ type: 'webtransport-stream', sessionId: length });
      return 'raw';
    }
    this.#checkOrder(type, kind);
    switch (kind) {
      case 'data':
        return 'stream';
      case 'skip':
        return 'skip';
      case 'buffered':
      case 'varint':
        this.checkLength(type, length, kind === 'varint' ? MAX_VARINT_PAYLOAD : this.#maxPayload);
        return 'buffer';
      default: {
        const unreachable: never = kind;
        throw new TypeError(`unknown frame kind ${String(unreachable)}`);
      }
    }
  }

  protected override onValuePiece(piece: Uint8Array, events: FrameReaderEvent[]): void {
    events.push({ type: 'data', payload: piece });
  }

  protected override onValue(type: number, payload: Uint8Array, events: FrameReaderEvent[]): 'header' {
    events.push(parsePayload(type, payload));
    return 'header';
  }

  protected override onRaw(bytes: Uint8Array, events: FrameReaderEvent[]): void {
    events.push({ type: 'webtransport-data', payload: bytes });
  }

  #checkOrder(type: number, kind: FrameKind): void {
    const name = `frame type 0x${type.toString(16)}`;
    if (this.#role === 'control') {
      if (!this.#settingsSeen) {
        this.#settingsSeen = true;
        return;
      }
      if (type === FRAME_TYPE.SETTINGS || type === FRAME_TYPE.DATA || type === FRAME_TYPE.HEADERS) {
        throw new TransportError('frame-unexpected', `${name} on the control stream`);
      }
      return;
    }
    if (kind === 'skip') return;
    if (
      type === FRAME_TYPE.SETTINGS ||
      type === FRAME_TYPE.GOAWAY ||
      type === FRAME_TYPE.MAX_PUSH_ID ||
      type === FRAME_TYPE.CANCEL_PUSH
    ) {
      throw new TransportError('frame-unexpected', `${name} on a request stream`);
    }
    if (this.#headersSeen === 0 && type === FRAME_TYPE.DATA) {
      throw new TransportError('frame-unexpected', 'DATA before HEADERS on a request stream');
    }
    if (this.#headersSeen >= 2) {
      throw new TransportError('frame-unexpected', `${name} after the trailers of a request stream`);
    }
    if (type === FRAME_TYPE.HEADERS) this.#headersSeen++;
  }
}

/**
 * Encodes a frame-like stream preamble: `first` then, when given, `second`, each a varint. Used for
 * stream types and for the WebTransport signals (see {@link encodeWebTransportBidiPreamble}).
 */
function encodeVarints(first: number, second?: number): Uint8Array {
  const out = new Uint8Array(varintLength(first) + (second === undefined ? 0 : varintLength(second)));
  const view = new DataView(out.buffer);
  const at = writeVarint(view, 0, first);
  if (second !== undefined) writeVarint(view, at, second);
  return out;
}

/**
 * The bytes that open a bidirectional WebTransport stream we initiate for the session whose
 * CONNECT stream id is `sessionId`: `0x41`, then the session id; application data follows.
 */
export function encodeWebTransportBidiPreamble(sessionId: number): Uint8Array {
  return encodeVarints(WEBTRANSPORT_STREAM_SIGNAL, sessionId);
}

/** Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2, draft-ietf-webtrans-http3). */
export const STREAM_TYPE = {
  CONTROL: 0x00,
  PUSH: 0x01,
  QPACK_ENCODER: 0x02,
  QPACK_DECODER: 0x03,
  /** WebTransport unidirectional stream; the session id follows the type. */
  WEBTRANSPORT: 0x54,
} as const;

/**
 * The bytes that open one of our unidirectional streams: the stream type, and for a WebTransport
 * stream the session id after it.
 */
export function encodeUniStreamPreamble(streamType: number, sessionId?: number): Uint8Array {
  if ((streamType === STREAM_TYPE.WEBTRANSPORT) !== (sessionId !== undefined)) {
    throw new TypeError('a session id goes with, and only with, the WebTransport stream type');
  }
  return encodeVarints(streamType, sessionId);
}

/**
 * The first bytes of our control stream: its stream type, then our SETTINGS frame (which must be
 * its first frame).
 */
export function encodeControlStreamPreamble(settings: SettingsInput): Uint8Array {
  const frame: OutgoingFrame = { type: 'settings', settings };
  const out = new Uint8Array(1 + h3Frame.byteLength(frame));
  out[0] = STREAM_TYPE.CONTROL;
  h3Frame.encodeInto(new DataView(out.buffer), 1, frame);
  return out;
}
