/**
 * RTSP/1.0 messages on a TCP byte stream (RFC 2326 §4, §6, §7, §10.12): request serialisation,
 * and an incremental parser that splits what a server sends into responses, requests the
 * server makes of the client, and interleaved binary frames.
 */
import { redactText } from '@svc/runtime';
import { MediaError } from '../errors.js';

/** Limits on what a server may send; anything larger is an error, never an allocation. */
export const RTSP_LIMITS = {
  /** Start line plus headers plus the blank line. */
  maxHeaderBytes: 16 * 1024,
  /** A message body (an SDP is a few hundred bytes). */
  maxBodyBytes: 1024 * 1024,
} as const;

/** Header fields of one message, in order, looked up case-insensitively. */
export class RtspHeaders {
  readonly #entries: readonly (readonly [string, string])[];

  /** @param entries - `[name, value]` pairs as they appeared. */
  constructor(entries: readonly (readonly [string, string])[]) {
    this.#entries = entries;
  }

  /** The first value of `name`, or undefined. */
  get(name: string): string | undefined {
    const lower = name.toLowerCase();
    return this.#entries.find(([n]) => n.toLowerCase() === lower)?.[1];
  }

  /** Every value of `name`, in order (e.g. one `WWW-Authenticate` per offered scheme). */
  getAll(name: string): string[] {
    const lower = name.toLowerCase();
    return this.#entries.filter(([n]) => n.toLowerCase() === lower).map(([, v]) => v);
  }

  /** All fields in order. */
  entries(): readonly (readonly [string, string])[] {
    return this.#entries;
  }
}

/** A response from the server. */
export interface RtspResponse {
  readonly kind: 'response';
  /** `RTSP/1.0` */
  readonly version: string;
  readonly status: number;
  readonly reason: string;
  readonly headers: RtspHeaders;
  readonly body: Uint8Array;
}

/** A request from the server to the client (RFC 2326 allows e.g. `GET_PARAMETER`, `REDIRECT`). */
export interface RtspServerRequest {
  readonly kind: 'request';
  readonly method: string;
  readonly uri: string;
  readonly version: string;
  readonly headers: RtspHeaders;
  readonly body: Uint8Array;
}

/** An interleaved binary frame: RTP or RTCP carried on the RTSP connection. */
export interface InterleavedFrame {
  readonly kind: 'interleaved';
  /** The channel from the `Transport: ...;interleaved=<rtp>-<rtcp>` of SETUP. */
  readonly channel: number;
  /** A copy; the parser reuses its buffer. */
  readonly payload: Uint8Array;
}

/** What {@link RtspMessageParser.push} yields. */
export type RtspMessage = RtspResponse | RtspServerRequest | InterleavedFrame;

/** A request to send. `CSeq` and the other headers are the caller's. */
export interface RtspRequest {
  readonly method: string;
  readonly uri: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: Uint8Array;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const METHOD = /^[A-Z][A-Z0-9_-]{0,31}$/;
/**
 * True when `text` holds a control character (C0 or DEL) other than horizontal tab: such text
 * cannot go into a header line, and in one received it means garbage.
 */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return true;
  }
  return false;
}

/**
 * Serialises a request (RFC 2326 §6):
 *
 * ```text
 * Request-Line = Method SP Request-URI SP "RTSP/1.0" CRLF
 * *( header-name ":" SP value CRLF )
 * CRLF
 * [ body ]                     ; with Content-Length when present
 * ```
 *
 * @throws TypeError when the method, URI or a header could break the framing (CR, LF, spaces in
 * the URI, a non-token header name): that is caller misuse, not bad data.
 */
export function serializeRequest(request: RtspRequest): Uint8Array {
  if (!METHOD.test(request.method))
    throw new TypeError(`invalid RTSP method ${JSON.stringify(request.method)}`);
  if (request.uri === '' || /\s/.test(request.uri) || hasControlCharacter(request.uri)) {
    throw new TypeError('RTSP request URI must be non-empty without whitespace or control characters');
  }
  let head = `${request.method} ${request.uri} RTSP/1.0\r\n`;
  for (const [name, value] of request.headers) {
    if (!TOKEN.test(name)) throw new TypeError(`invalid RTSP header name ${JSON.stringify(name)}`);
    if (hasControlCharacter(value)) throw new TypeError(`RTSP header ${name} contains a control character`);
    head += `${name}: ${value}\r\n`;
  }
  const body = request.body ?? new Uint8Array(0);
  if (body.length > 0) head += `Content-Length: ${body.length}\r\n`;
  head += '\r\n';
  const headBytes = Buffer.from(head, 'utf8');
  const out = new Uint8Array(headBytes.length + body.length);
  out.set(headBytes, 0);
  out.set(body, headBytes.length);
  return out;
}

/**
 * Serialises a response to a request the server made (RFC 2326 §7): status line, `CSeq`
 * echoed, no body.
 */
export function serializeResponse(status: number, reason: string, cseq: string | undefined): Uint8Array {
  if (!Number.isInteger(status) || status < 100 || status > 999 || hasControlCharacter(reason)) {
    throw new TypeError('invalid RTSP status line');
  }
  const cseqLine = cseq === undefined || hasControlCharacter(cseq) ? '' : `CSeq: ${cseq}\r\n`;
  return Buffer.from(`RTSP/1.0 ${status} ${reason}\r\n${cseqLine}\r\n`, 'latin1');
}

/** A growable byte buffer read from the front. */
class ByteQueue {
  data = new Uint8Array(4096);
  start = 0;
  end = 0;

  get length(): number {
    return this.end - this.start;
  }

  append(chunk: Uint8Array): void {
    if (this.end + chunk.length > this.data.length) {
      const used = this.length;
      if (used + chunk.length <= this.data.length) {
        this.data.copyWithin(0, this.start, this.end);
      } else {
        const grown = new Uint8Array(Math.max(this.data.length * 2, used + chunk.length));
        grown.set(this.data.subarray(this.start, this.end), 0);
        this.data = grown;
      }
      this.start = 0;
      this.end = used;
    }
    this.data.set(chunk, this.end);
    this.end += chunk.length;
  }

  /** The byte at `offset`, or -1 past the end. */
  byteAt(offset: number): number {
    return offset < this.length ? (this.data[this.start + offset] ?? -1) : -1;
  }

  copy(offset: number, length: number): Uint8Array {
    return this.data.slice(this.start + offset, this.start + offset + length);
  }

  text(offset: number, length: number): string {
    return Buffer.from(this.data.buffer, this.data.byteOffset + this.start + offset, length).toString(
      'latin1',
    );
  }

  consume(count: number): void {
    this.start += count;
    if (this.start === this.end) {
      this.start = 0;
      this.end = 0;
    }
  }
}

/** The parsed head of a text message waiting for its body. */
interface PendingHead {
  readonly headBytes: number;
  readonly bodyBytes: number;
  readonly build: (body: Uint8Array) => RtspResponse | RtspServerRequest;
}

const CR = 0x0d;
const LF = 0x0a;
const DOLLAR = 0x24;

function malformed(problem: string): MediaError {
  return new MediaError('malformed-rtsp', `malformed RTSP from the server: ${problem}`);
}

/** Quotes at most 40 characters of a line for an error message. */
function quote(line: string): string {
  return JSON.stringify(redactText(line.length > 40 ? `${line.slice(0, 40)}...` : line));
}

/**
 * Splits the byte stream of an RTSP connection into messages. Feed it every chunk the socket
 * yields; chunks may split messages anywhere.
 *
 * Between messages a server may send interleaved binary data (RFC 2326 §10.12):
 *
 * ```text
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  '$' (0x24)   |    channel    |     payload length (bytes)    |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  payload: one RTP or RTCP packet ...                          |
 * ```
 *
 * The 16-bit length bounds a frame at 64 KiB. Otherwise a message is text (RFC 2326 §6, §7):
 *
 * ```text
 * Status-Line  = "RTSP/" 1*DIGIT "." 1*DIGIT SP 3DIGIT SP Reason-Phrase CRLF
 * Request-Line = Method SP Request-URI SP "RTSP/" 1*DIGIT "." 1*DIGIT CRLF
 * *( field-name ":" [ value ] CRLF )   ; a line starting with SP or HT continues the previous
 * CRLF
 * body of exactly Content-Length bytes (none when the header is absent)
 * ```
 *
 * Bare LF line ends and CR/LF between messages are tolerated. The head is limited to
 * {@link RTSP_LIMITS.maxHeaderBytes} and the body to {@link RTSP_LIMITS.maxBodyBytes}.
 * After an error the parser stays failed: the connection cannot be resynchronised.
 */
export class RtspMessageParser {
  readonly #queue = new ByteQueue();
  #pending: PendingHead | undefined;
  /** How far the search for the end of the head has looked, relative to the queue start. */
  #scanned = 0;
  /** The start line of the message in progress has been checked. */
  #startLineChecked = false;
  #failure: MediaError | undefined;

  /** Bytes received but not yet returned as messages. */
  get bufferedBytes(): number {
    return this.#queue.length;
  }

  /**
   * Takes the next chunk of the stream and returns the messages it completed, in order.
   *
   * @throws MediaError `malformed-rtsp` on anything that is not RTSP or exceeds a limit.
   */
  push(chunk: Uint8Array): RtspMessage[] {
    if (this.#failure !== undefined) throw this.#failure;
    this.#queue.append(chunk);
    const out: RtspMessage[] = [];
    try {
      for (let message = this.#next(); message !== undefined; message = this.#next()) out.push(message);
    } catch (err) {
      this.#failure = err instanceof MediaError ? err : malformed(String(err));
      throw this.#failure;
    }
    return out;
  }

  #next(): RtspMessage | undefined {
    const q = this.#queue;
    if (this.#pending === undefined) {
      while (q.length > 0 && (q.byteAt(0) === CR || q.byteAt(0) === LF)) q.consume(1);
      if (q.length === 0) return undefined;
      if (q.byteAt(0) === DOLLAR) {
        if (q.length < 4) return undefined;
        const channel = q.byteAt(1);
        const size = (q.byteAt(2) << 8) | q.byteAt(3);
        if (q.length < 4 + size) return undefined;
        const payload = q.copy(4, size);
        q.consume(4 + size);
        return { kind: 'interleaved', channel, payload };
      }
      const headBytes = this.#findHeadEnd();
      if (headBytes === undefined) return undefined;
      this.#pending = parseHead(q.text(0, headBytes), headBytes);
      this.#scanned = 0;
      this.#startLineChecked = false;
    }
    const pending = this.#pending;
    if (q.length < pending.headBytes + pending.bodyBytes) return undefined;
    const body = q.copy(pending.headBytes, pending.bodyBytes);
    q.consume(pending.headBytes + pending.bodyBytes);
    this.#pending = undefined;
    return pending.build(body);
  }

  /** Length of the head including its blank line, once it is all buffered. */
  #findHeadEnd(): number | undefined {
    const q = this.#queue;
    const first = q.byteAt(0);
    if (first < 0x41 || first > 0x5a) {
      throw malformed(
        `a message starts with byte 0x${first.toString(16).padStart(2, '0')}, not a letter or '$'`,
      );
    }
    const limit = Math.min(q.length, RTSP_LIMITS.maxHeaderBytes);
    for (let i = Math.max(1, this.#scanned); i < limit; i++) {
      if (q.byteAt(i) !== LF) continue;
      if (!this.#startLineChecked) {
        // The first line break: reject garbage now instead of waiting for 16 KiB of it.
        checkStartLine(q.text(0, i).replace(/\r$/, ''));
        this.#startLineChecked = true;
      }
      if (q.byteAt(i + 1) === LF) return i + 2;
      if (q.byteAt(i + 1) === CR && q.byteAt(i + 2) === LF) return i + 3;
    }
    if (q.length >= RTSP_LIMITS.maxHeaderBytes) {
      throw malformed(`no end of headers within ${RTSP_LIMITS.maxHeaderBytes} bytes`);
    }
    // Resume a few bytes back so a blank line split across chunks is still found.
    this.#scanned = Math.max(1, limit - 3);
    return undefined;
  }
}

const STATUS_LINE = /^(RTSP\/\d{1,2}\.\d{1,2}) (\d{3})(?: (.*))?$/;
const REQUEST_LINE = /^([A-Z][A-Z0-9_-]{0,31}) (\S+) (RTSP\/\d{1,2}\.\d{1,2})$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*(.*)$/;

/** Throws unless `line` is an RTSP status line or request line. */
function checkStartLine(line: string): void {
  if (!STATUS_LINE.test(line) && !REQUEST_LINE.test(line)) {
    throw malformed(`${quote(line)} is neither an RTSP status line nor a request line`);
  }
}

/** Parses the head (start line, headers, blank line) into a builder waiting for the body. */
function parseHead(head: string, headBytes: number): PendingHead {
  const lines = head.split(/\r?\n/);
  const startLine = lines[0] ?? '';
  const entries: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    if (hasControlCharacter(line)) throw malformed(`header line ${quote(line)} contains a control character`);
    const last = entries[entries.length - 1];
    if (line[0] === ' ' || line[0] === '\t') {
      if (last === undefined) throw malformed('a continuation line before any header');
      last[1] = `${last[1]} ${line.trim()}`;
      continue;
    }
    const match = HEADER_LINE.exec(line);
    if (match?.[1] === undefined) throw malformed(`${quote(line)} is not a header line`);
    entries.push([match[1], (match[2] ?? '').trim()]);
  }
  const headers = new RtspHeaders(entries);
  const bodyBytes = contentLength(headers);

  const status = STATUS_LINE.exec(startLine);
  if (status !== null) {
    const version = status[1] ?? '';
    const code = Number(status[2]);
    const reason = (status[3] ?? '').trim();
    if (code < 100) throw malformed(`status code ${code}`);
    return {
      headBytes,
      bodyBytes,
      build: (body) => ({ kind: 'response', version, status: code, reason, headers, body }),
    };
  }
  const request = REQUEST_LINE.exec(startLine);
  if (request === null) throw malformed(`${quote(startLine)} is neither a status line nor a request line`);
  const method = request[1] ?? '';
  const uri = request[2] ?? '';
  const version = request[3] ?? '';
  return {
    headBytes,
    bodyBytes,
    build: (body) => ({ kind: 'request', method, uri, version, headers, body }),
  };
}

/** The body length from `Content-Length` (0 when absent), checked against the limit. */
function contentLength(headers: RtspHeaders): number {
  const values = headers.getAll('content-length');
  if (values.length === 0) return 0;
  const first = values[0] ?? '';
  if (values.some((v) => v !== first)) throw malformed('conflicting Content-Length headers');
  if (!/^\d{1,10}$/.test(first)) throw malformed(`Content-Length ${quote(first)} is not a number`);
  const length = Number(first);
  if (length > RTSP_LIMITS.maxBodyBytes) {
    throw malformed(`Content-Length ${length} exceeds the ${RTSP_LIMITS.maxBodyBytes}-byte limit`);
  }
  return length;
}
