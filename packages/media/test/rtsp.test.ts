import { createSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import { inspect } from 'node:util';
import { backoffDelayMs, type Logger, RECONNECT_BACKOFF, type TimerHandle } from '@svc/runtime';
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import { type RunningRtspServer, startRtspServer } from '@svc/testkit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isMediaError, type MediaError, type MediaErrorCode } from '../src/errors.js';
import {
  digestResponse,
  keepAliveIntervalMs,
  parseAuthenticateHeaders,
  parseSessionHeader,
  parseTransportHeader,
  RTSP_LIMITS,
  RtspAuthenticator,
  RtspClient,
  type RtspClientOptions,
  type RtspMessage,
  RtspMessageParser,
  RtspSource,
  type RtspSourceState,
  type RtspSourceStateDetail,
  serializeRequest,
} from '../src/rtsp/index.js';
import type { SdpMedia } from '../src/sdp.js';
import { useCodecRtspServer } from './support/rtsp-server.js';

// ---------------------------------------------------------------------------------------------
// Test tools: an event recorder, a fake clock, a capturing logger, a scripted fake camera.
// ---------------------------------------------------------------------------------------------

/** Records items and lets a test wait until they satisfy a condition. */
class Recorder<T> {
  readonly items: T[] = [];
  readonly #waiters: { check: (items: readonly T[]) => boolean; resolve: () => void }[] = [];

  push = (item: T): void => {
    this.items.push(item);
    for (const waiter of [...this.#waiters]) {
      if (waiter.check(this.items)) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };

  /** Resolves once `check` holds for the items recorded so far. */
  until(check: (items: readonly T[]) => boolean): Promise<void> {
    if (check(this.items)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ check, resolve }));
  }

  /** Resolves once `count` items are recorded. */
  count(count: number): Promise<void> {
    return this.until((items) => items.length >= count);
  }
}

/**
 * Fake time that also records the timers set: a test waits (sockets are real) until the code
 * under test arms a timer, and fires the oldest timer of a given delay by moving time to it.
 */
class RecordingClock extends FakeClock {
  /** The delay of every timer ever set, in order: lets a test wait for a timer to be set. */
  readonly scheduled = new Recorder<number>();
  readonly #live = new Map<TimerHandle, { readonly delayMs: number; readonly dueMs: number }>();

  override setTimeout(callback: () => void, delayMs: number): TimerHandle {
    const handle: TimerHandle = super.setTimeout(() => {
      this.#live.delete(handle);
      callback();
    }, delayMs);
    this.#live.set(handle, { delayMs, dueMs: this.now() + delayMs });
    this.scheduled.push(delayMs);
    return handle;
  }

  override clearTimeout(handle: TimerHandle | undefined): void {
    if (handle !== undefined) this.#live.delete(handle);
    super.clearTimeout(handle);
  }

  /** Delays of the timers waiting, in the order they were set. */
  pending(): number[] {
    return [...this.#live.values()].map((t) => t.delayMs);
  }

  /** Moves time to when the oldest timer with this delay is due, firing it; false when there is none. */
  fire(delayMs: number): boolean {
    for (const timer of this.#live.values()) {
      if (timer.delayMs === delayMs) {
        this.advanceTo(timer.dueMs);
        return true;
      }
    }
    return false;
  }
}

/** A logger that keeps every line; `lines()` gives them (fields and message) as text, redacted. */
function capturingLogger(): { logger: Logger; lines: () => string[] } {
  const logger = memoryLogger();
  return {
    logger,
    lines: () => logger.records.map((r) => `${r.level} ${JSON.stringify(r.fields)} ${r.message}`),
  };
}

/** Resolves with the error `promise` rejects with; fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<MediaError> {
  try {
    await promise;
  } catch (err) {
    return err as MediaError;
  }
  throw new Error('expected a rejection');
}

function expectCode(error: unknown, code: MediaErrorCode): void {
  expect(isMediaError(error, code), `expected MediaError ${code}, got ${String(error)}`).toBe(true);
}

/** A port on 127.0.0.1 where nothing listens (bound by the OS, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An RTP packet: version 2, the payload type, a sequence number, 4 payload bytes. */
function rtpPacket(payloadType: number, sequence: number): Uint8Array {
  const packet = new Uint8Array(16);
  packet[0] = 0x80;
  packet[1] = payloadType & 0x7f;
  packet[2] = sequence >> 8;
  packet[3] = sequence & 0xff;
  packet.set([0xde, 0xad, 0xbe, 0xef], 12);
  return packet;
}

/** An interleaved frame: '$', channel, 16-bit length, payload. */
function interleaved(channel: number, payload: Uint8Array): Uint8Array {
  const frame = new Uint8Array(4 + payload.length);
  frame.set([0x24, channel, payload.length >> 8, payload.length & 0xff], 0);
  frame.set(payload, 4);
  return frame;
}

const ascii = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'latin1'));

/** A request as the fake camera saw it. */
interface SeenRequest {
  readonly method: string;
  readonly uri: string;
  readonly headers: ReadonlyMap<string, string>;
  readonly socket: Socket;
}

type Handler = (request: SeenRequest, socket: Socket) => void;

/** A TCP server speaking just enough RTSP for protocol edge cases the real server cannot produce. */
interface FakeCamera {
  readonly port: number;
  readonly url: (path: string) => string;
  readonly requests: Recorder<SeenRequest>;
  readonly connections: Recorder<Socket>;
  close(): Promise<void>;
}

const fakeCameras = new Set<FakeCamera>();

afterEach(async () => {
  await Promise.all([...fakeCameras].map((camera) => camera.close()));
  fakeCameras.clear();
});

async function startFakeCamera(handler: Handler, onConnect?: (socket: Socket) => void): Promise<FakeCamera> {
  const requests = new Recorder<SeenRequest>();
  const connections = new Recorder<Socket>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    connections.push(socket);
    onConnect?.(socket);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const [startLine = '', ...headerLines] = buffered.slice(0, end).split('\r\n');
        buffered = buffered.slice(end + 4);
        const [method = '', uri = ''] = startLine.split(' ');
        const headers = new Map<string, string>();
        for (const line of headerLines) {
          const colon = line.indexOf(':');
          headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
        }
        const request = { method, uri, headers, socket };
        requests.push(request);
        handler(request, socket);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const camera: FakeCamera = {
    port,
    url: (path) => `rtsp://127.0.0.1:${port}${path}`,
    requests,
    connections,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  fakeCameras.add(camera);
  return camera;
}

/** Writes a response echoing the request's CSeq. */
function reply(request: SeenRequest, status: string, headers: Record<string, string> = {}, body = ''): void {
  let text = `RTSP/1.0 ${status}\r\nCSeq: ${request.headers.get('cseq') ?? ''}\r\n`;
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  if (body !== '') text += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  request.socket.write(`${text}\r\n${body}`);
}

const FAKE_SDP = [
  'v=0',
  'o=- 1 1 IN IP4 127.0.0.1',
  's=fake',
  't=0 0',
  'a=control:*',
  'm=video 0 RTP/AVP 96',
  'a=rtpmap:96 H264/90000',
  'a=fmtp:96 packetization-mode=1',
  'a=control:stream=0',
  '',
].join('\r\n');

interface CameraScript {
  /** `Public` of the OPTIONS answer. */
  readonly public?: string;
  /** `Session` of the SETUP answer. */
  readonly session?: string;
  /** Extra handling; return true when the request was answered. */
  readonly override?: (request: SeenRequest) => boolean;
  /** Called after PLAY was answered. */
  readonly afterPlay?: (socket: Socket, setup: SeenRequest) => void;
}

/** A well-behaved camera: answers the whole session with the fake SDP. */
function scriptedCamera(script: CameraScript = {}): Handler {
  let setup: SeenRequest | undefined;
  return (request, socket) => {
    if (request.method === 'SETUP') setup = request;
    if (script.override?.(request)) return;
    switch (request.method) {
      case 'OPTIONS':
        reply(request, '200 OK', {
          Public: script.public ?? 'OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER',
        });
        break;
      case 'DESCRIBE':
        reply(
          request,
          '200 OK',
          { 'Content-Type': 'application/sdp', 'Content-Base': `${request.uri}/` },
          FAKE_SDP,
        );
        break;
      case 'SETUP': {
        const asked = request.headers.get('transport') ?? '';
        const transport = asked.includes('/TCP')
          ? 'RTP/AVP/TCP;unicast;interleaved=0-1'
          : `${asked};server_port=6970-6971;ssrc=1234ABCD`;
        reply(request, '200 OK', { Session: script.session ?? 'F00D;timeout=60', Transport: transport });
        break;
      }
      case 'PLAY':
        reply(request, '200 OK', { 'RTP-Info': `url=${request.uri}stream=0;seq=1;rtptime=0` });
        if (setup !== undefined) script.afterPlay?.(socket, setup);
        break;
      default:
        reply(request, '200 OK');
    }
  };
}

/** A client with callbacks recording into the returned recorders. */
function recordingClient(options: Omit<RtspClientOptions, 'onRtp' | 'onError' | 'onDescription'>): {
  client: RtspClient;
  packets: Recorder<Uint8Array>;
  errors: Recorder<MediaError>;
  descriptions: Recorder<SdpMedia>;
} {
  const packets = new Recorder<Uint8Array>();
  const errors = new Recorder<MediaError>();
  const descriptions = new Recorder<SdpMedia>();
  const client = new RtspClient({
    ...options,
    onRtp: (packet) => packets.push(packet),
    onError: errors.push,
    onDescription: descriptions.push,
  });
  clients.add(client);
  return { client, packets, errors, descriptions };
}

const clients = new Set<RtspClient>();
const sources = new Set<RtspSource>();

afterEach(async () => {
  await Promise.all([...clients].map((c) => c.stop()));
  await Promise.all([...sources].map((s) => s.stop()));
  clients.clear();
  sources.clear();
});

// ---------------------------------------------------------------------------------------------
// Wire format
// ---------------------------------------------------------------------------------------------

describe('serializeRequest', () => {
  it('writes the request line, headers, blank line and body with Content-Length', () => {
    const bytes = serializeRequest({
      method: 'SET_PARAMETER',
      uri: 'rtsp://cam/live',
      headers: [
        ['CSeq', '7'],
        ['Session', 'abc'],
      ],
      body: ascii('x: 1\r\n'),
    });
    expect(Buffer.from(bytes).toString('latin1')).toBe(
      'SET_PARAMETER rtsp://cam/live RTSP/1.0\r\nCSeq: 7\r\nSession: abc\r\nContent-Length: 6\r\n\r\nx: 1\r\n',
    );
  });

  it('refuses input that would break the framing', () => {
    expect(() => serializeRequest({ method: 'get', uri: 'rtsp://a/', headers: [] })).toThrow(TypeError);
    expect(() => serializeRequest({ method: 'GET', uri: 'rtsp://a/ b', headers: [] })).toThrow(TypeError);
    expect(() =>
      serializeRequest({ method: 'GET', uri: 'rtsp://a/', headers: [['X', 'a\r\nEvil: 1']] }),
    ).toThrow(TypeError);
    expect(() => serializeRequest({ method: 'GET', uri: 'rtsp://a/', headers: [['Bad Name', '1']] })).toThrow(
      TypeError,
    );
  });
});

/** A response, an interleaved RTP frame, an interleaved RTCP frame, a server request, a response with body. */
const GOLDEN_STREAM = [
  ascii('RTSP/1.0 200 OK\r\nCSeq: 1\r\nPublic: OPTIONS, DESCRIBE\r\n\r\n'),
  interleaved(0, rtpPacket(96, 1)),
  interleaved(1, ascii('\x80\xc8\x00\x06')),
  ascii('GET_PARAMETER rtsp://client RTSP/1.0\r\nCSeq: 9\r\n\r\n'),
  ascii('RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Type: application/sdp\r\nContent-Length: 5\r\n\r\nv=0\r\n'),
];

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** A comparable summary of parsed messages. */
function summary(messages: readonly RtspMessage[]): unknown[] {
  return messages.map((m) =>
    m.kind === 'interleaved'
      ? { kind: m.kind, channel: m.channel, payload: [...m.payload] }
      : m.kind === 'response'
        ? {
            kind: m.kind,
            status: m.status,
            reason: m.reason,
            headers: m.headers.entries(),
            body: [...m.body],
          }
        : { kind: m.kind, method: m.method, uri: m.uri, headers: m.headers.entries(), body: [...m.body] },
  );
}

describe('RtspMessageParser', () => {
  const whole = concat(GOLDEN_STREAM);

  it('splits responses, server requests and interleaved frames, field by field', () => {
    const messages = new RtspMessageParser().push(whole);
    expect(summary(messages)).toEqual([
      {
        kind: 'response',
        status: 200,
        reason: 'OK',
        headers: [
          ['CSeq', '1'],
          ['Public', 'OPTIONS, DESCRIBE'],
        ],
        body: [],
      },
      // '$' 0x00 0x00 0x10: channel 0, 16 bytes of RTP
      { kind: 'interleaved', channel: 0, payload: [...rtpPacket(96, 1)] },
      // '$' 0x01 0x00 0x04: channel 1 (RTCP), 4 bytes
      { kind: 'interleaved', channel: 1, payload: [0x80, 0xc8, 0x00, 0x06] },
      { kind: 'request', method: 'GET_PARAMETER', uri: 'rtsp://client', headers: [['CSeq', '9']], body: [] },
      {
        kind: 'response',
        status: 200,
        reason: 'OK',
        headers: [
          ['CSeq', '2'],
          ['Content-Type', 'application/sdp'],
          ['Content-Length', '5'],
        ],
        body: [...ascii('v=0\r\n')],
      },
    ]);
  });

  it('gives the same messages however the stream is split (every split point, and byte by byte)', () => {
    const expected = summary(new RtspMessageParser().push(whole));
    for (let cut = 0; cut <= whole.length; cut++) {
      const parser = new RtspMessageParser();
      const messages = [...parser.push(whole.subarray(0, cut)), ...parser.push(whole.subarray(cut))];
      expect(summary(messages)).toEqual(expected);
      expect(parser.bufferedBytes).toBe(0);
    }
    const parser = new RtspMessageParser();
    const messages = [...whole].flatMap((byte) => parser.push(new Uint8Array([byte])));
    expect(summary(messages)).toEqual(expected);
  });

  it('returns nothing for a truncated stream, at every offset, and keeps the bytes', () => {
    for (let cut = 0; cut < GOLDEN_STREAM[0]!.length; cut++) {
      const parser = new RtspMessageParser();
      expect(parser.push(GOLDEN_STREAM[0]!.subarray(0, cut))).toEqual([]);
    }
  });

  it('accepts bare LF line ends, folded headers, a missing reason and CRLF between messages', () => {
    const messages = new RtspMessageParser().push(ascii('\r\nRTSP/1.0 454\nCSeq: 3\nX-Long: a\n  b\n\n'));
    expect(summary(messages)).toEqual([
      {
        kind: 'response',
        status: 454,
        reason: '',
        headers: [
          ['CSeq', '3'],
          ['X-Long', 'a b'],
        ],
        body: [],
      },
    ]);
  });

  it('returns independent copies of payloads', () => {
    const parser = new RtspMessageParser();
    const [first] = parser.push(interleaved(0, rtpPacket(96, 1)));
    parser.push(interleaved(0, rtpPacket(96, 2)));
    expect(first?.kind === 'interleaved' && first.payload[3]).toBe(1);
  });

  it.each([
    ['HTTP/1.1 200 OK\r\n\r\n', /"HTTP\/1.1 200 OK" is neither an RTSP status line nor a request line/],
    ['<html>', /starts with byte 0x3c/],
    ['\x00\x01', /starts with byte 0x00/],
    ['RTSP/1.0 2000 OK\r\n\r\n', /neither an RTSP status line/],
    ['RTSP/1.0 200 OK\r\nno colon here\r\n\r\n', /"no colon here" is not a header line/],
    ['RTSP/1.0 200 OK\r\n folded first\r\n\r\n', /continuation line before any header/],
    ['RTSP/1.0 200 OK\r\nX: a\x01b\r\n\r\n', /control character/],
    ['RTSP/1.0 200 OK\r\nContent-Length: -1\r\n\r\n', /Content-Length "-1" is not a number/],
    ['RTSP/1.0 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n', /conflicting Content-Length/],
    [
      `RTSP/1.0 200 OK\r\nContent-Length: ${RTSP_LIMITS.maxBodyBytes + 1}\r\n\r\n`,
      /exceeds the 1048576-byte limit/,
    ],
    ['RTSP/1.0 200 OK\r\nContent-Length: 99999999999\r\n\r\n', /not a number/],
  ])('rejects %j with malformed-rtsp', (text, pattern) => {
    const parser = new RtspMessageParser();
    let error: unknown;
    try {
      parser.push(ascii(text));
    } catch (err) {
      error = err;
    }
    expectCode(error, 'malformed-rtsp');
    expect((error as Error).message).toMatch(pattern);
    // The connection cannot be resynchronised: the parser stays failed.
    expect(() => parser.push(ascii('RTSP/1.0 200 OK\r\n\r\n'))).toThrow(error as Error);
  });

  it('rejects a head longer than 16 KiB without waiting for its end', () => {
    const parser = new RtspMessageParser();
    parser.push(ascii('RTSP/1.0 200 OK\r\n'));
    const header = ascii(`X-Pad: ${'a'.repeat(RTSP_LIMITS.maxHeaderBytes)}`);
    expect(() => parser.push(header)).toThrow(/no end of headers within 16384 bytes/);
  });

  it('accepts a body of exactly the limit and the largest interleaved frame', () => {
    const body = 'x'.repeat(RTSP_LIMITS.maxBodyBytes);
    const parser = new RtspMessageParser();
    const big = new Uint8Array(65535).fill(7);
    const messages = parser.push(
      concat([
        ascii(`RTSP/1.0 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
        interleaved(3, big),
      ]),
    );
    expect(messages.map((m) => m.kind)).toEqual(['response', 'interleaved']);
    expect(messages[0]?.kind === 'response' && messages[0].body.length).toBe(RTSP_LIMITS.maxBodyBytes);
    expect(messages[1]?.kind === 'interleaved' && messages[1].payload.length).toBe(65535);
  });

  it('redacts URLs it quotes in errors', () => {
    expect(() =>
      new RtspMessageParser().push(ascii('RTSP/1.0 200 OK\r\nX Y rtsp://u:hunter2@x\r\n\r\n')),
    ).toThrow(/rtsp:\/\/\*\*\*@x/);
  });
});

describe('headers', () => {
  it('reads Session ids and timeouts', () => {
    expect(parseSessionHeader('12345678;timeout=30')).toEqual({ id: '12345678', timeoutS: 30 });
    expect(parseSessionHeader(' abc ; Timeout = 5 ')).toEqual({ id: 'abc', timeoutS: 5 });
    expect(parseSessionHeader('abc')).toEqual({ id: 'abc', timeoutS: 60 });
    expect(parseSessionHeader('abc;timeout=0')).toEqual({ id: 'abc', timeoutS: 60 });
    expect(parseSessionHeader('abc;timeout=x')).toEqual({ id: 'abc', timeoutS: 60 });
    expect(() => parseSessionHeader(';timeout=5')).toThrow(/no usable id/);
  });

  it('reads the transport the server chose', () => {
    expect(parseTransportHeader('RTP/AVP/TCP;unicast;interleaved=2-3;ssrc=0A1B2C3D;mode="PLAY"')).toEqual({
      protocol: 'RTP/AVP/TCP',
      tcp: true,
      interleaved: [2, 3],
    });
    expect(
      parseTransportHeader(
        'RTP/AVP;unicast;client_port=5000-5001;server_port=6000-6001;source=10.0.0.9, RTP/AVP/TCP',
      ),
    ).toEqual({ protocol: 'RTP/AVP', tcp: false, serverPorts: [6000, 6001], source: '10.0.0.9' });
    expect(parseTransportHeader('rtp/avp/udp;unicast;interleaved=300-301')).toEqual({
      protocol: 'rtp/avp/udp',
      tcp: false,
    });
    expect(() => parseTransportHeader('MP2T/H2221/UDP;unicast')).toThrow(/not RTP\/AVP/);
  });
});

// ---------------------------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------------------------

describe('Digest and Basic', () => {
  const rfc7616 = {
    username: 'Mufasa',
    password: 'Circle of Life',
    realm: 'http-auth@example.org',
    nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
    method: 'GET',
    uri: '/dir/index.html',
    qop: { cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ', nc: '00000001' },
  };

  it('computes the published vectors (RFC 2617 §3.5, RFC 7616 §3.9.1)', () => {
    expect(
      digestResponse({
        algorithm: 'MD5',
        username: 'Mufasa',
        password: 'Circle Of Life',
        realm: 'testrealm@host.com',
        nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
        method: 'GET',
        uri: '/dir/index.html',
        qop: { cnonce: '0a4f113b', nc: '00000001' },
      }),
    ).toBe('6629fae49393a05397450978507c4ef1');
    expect(digestResponse({ ...rfc7616, algorithm: 'MD5' })).toBe('8ca523f5e9506fed4657c9700eebdbec');
    expect(digestResponse({ ...rfc7616, algorithm: 'SHA-256' })).toBe(
      '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
    );
  });

  it('parses several challenges in one header and quoted strings with escapes', () => {
    const challenges = parseAuthenticateHeaders([
      'Digest realm="a \\"b\\"", nonce=abc, qop="auth,auth-int", Basic realm="x"',
      'Negotiate abc==',
    ]);
    expect(challenges.map((c) => [c.scheme, Object.fromEntries(c.params)])).toEqual([
      ['digest', { realm: 'a "b"', nonce: 'abc', qop: 'auth,auth-int' }],
      ['basic', { realm: 'x' }],
      ['negotiate', {}],
    ]);
    expect(parseAuthenticateHeaders(['', ',,,', '=', '"unterminated', 'Digest realm="x'])).toEqual([
      { scheme: 'digest', params: new Map([['realm', 'x']]) },
    ]);
  });

  it('prefers Digest (SHA-256 first) over Basic and answers in the RFC 7616 form', () => {
    const challenges = parseAuthenticateHeaders([
      'Basic realm="GStreamer RTSP Server"',
      `Digest realm="${rfc7616.realm}", qop="auth, auth-int", algorithm=MD5, nonce="${rfc7616.nonce}", opaque="FQhe"`,
      `Digest realm="${rfc7616.realm}", qop="auth, auth-int", algorithm=SHA-256, nonce="${rfc7616.nonce}", opaque="FQhe"`,
    ]);
    const auth = RtspAuthenticator.fromChallenges(challenges, rfc7616, { cnonce: () => rfc7616.qop.cnonce });
    expect(auth?.scheme).toBe('digest');
    expect(auth?.authorization('GET', '/dir/index.html')).toBe(
      `Digest username="Mufasa", realm="http-auth@example.org", nonce="${rfc7616.nonce}", uri="/dir/index.html", ` +
        'response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", algorithm=SHA-256, ' +
        `opaque="FQhe", qop=auth, nc=00000001, cnonce="${rfc7616.qop.cnonce}"`,
    );
    // The nonce count goes up with each use of the same nonce.
    expect(auth?.authorization('GET', '/dir/index.html')).toContain('nc=00000002');
  });

  it('answers the legacy form without qop (what GStreamer sends)', () => {
    const [challenge] = parseAuthenticateHeaders([
      'Digest realm="GStreamer RTSP Server", nonce="db66a2cd390d87d0"',
    ]);
    const auth = RtspAuthenticator.fromChallenges([challenge!], { username: 'u', password: 'p "w\\' });
    const header = auth?.authorization('DESCRIBE', 'rtsp://127.0.0.1:8554/h264') ?? '';
    const expected = digestResponse({
      algorithm: 'MD5',
      username: 'u',
      password: 'p "w\\',
      realm: 'GStreamer RTSP Server',
      nonce: 'db66a2cd390d87d0',
      method: 'DESCRIBE',
      uri: 'rtsp://127.0.0.1:8554/h264',
    });
    expect(header).toBe(
      `Digest username="u", realm="GStreamer RTSP Server", nonce="db66a2cd390d87d0", uri="rtsp://127.0.0.1:8554/h264", response="${expected}"`,
    );
  });

  it('uses Basic when it is all that is offered, and nothing when nothing usable is', () => {
    const basic = RtspAuthenticator.fromChallenges(parseAuthenticateHeaders(['Basic realm="cam"']), {
      username: 'Aladdin',
      password: 'open sesame',
    });
    expect(basic?.authorization('DESCRIBE', 'rtsp://x/')).toBe('Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==');
    const unusable = parseAuthenticateHeaders([
      'Digest realm="r", nonce="n", algorithm=SHA-512-256',
      'Digest realm="r", nonce="n", qop="auth-int"',
      'Digest realm="r"',
      'Negotiate',
    ]);
    expect(RtspAuthenticator.fromChallenges(unusable, { username: 'a', password: 'b' })).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// Timers: pure arithmetic, no sleeping
// ---------------------------------------------------------------------------------------------

describe('keepAliveIntervalMs', () => {
  it('is half the session timeout, at least a second', () => {
    expect(keepAliveIntervalMs(60)).toBe(30_000);
    expect(keepAliveIntervalMs(10)).toBe(5000);
    expect(keepAliveIntervalMs(3)).toBe(1500);
    expect(keepAliveIntervalMs(1)).toBe(1000);
    expect(keepAliveIntervalMs(0)).toBe(30_000);
    expect(keepAliveIntervalMs(Number.NaN)).toBe(30_000);
    expect(keepAliveIntervalMs(10_000_000)).toBe(43_200_000);
  });
});

describe("RtspSource's reconnect policy (RECONNECT_BACKOFF)", () => {
  it('draws uniformly below a ceiling that doubles from 500 ms up to 30 s', () => {
    const ceilings = Array.from(
      { length: 10 },
      (_, attempt) => backoffDelayMs(attempt, () => 0.999_999_9, RECONNECT_BACKOFF) + 1,
    );
    expect(ceilings).toEqual([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000]);
    expect(backoffDelayMs(3, () => 0.5, RECONNECT_BACKOFF)).toBe(2000);
    expect(backoffDelayMs(3, () => 0, RECONNECT_BACKOFF)).toBe(0);
    expect(backoffDelayMs(1000, () => 0.5, RECONNECT_BACKOFF)).toBe(15_000);
    expect(backoffDelayMs(2, () => 1, { baseMs: 100, capMs: 250 })).toBe(249);
  });
});

// ---------------------------------------------------------------------------------------------
// Against the real GStreamer RTSP server
// ---------------------------------------------------------------------------------------------

describe('RtspClient against GStreamer', () => {
  const server = useCodecRtspServer();

  it.each([
    ['tcp', '/h264', 96, 'H264'],
    ['udp', '/h264', 96, 'H264'],
    ['tcp', '/h265', 96, 'H265'],
    ['udp', '/mjpeg', 26, 'JPEG'],
  ] as const)(
    'plays over %s: %s as payload type %i (%s)',
    async (transport, path, payloadType, encodingName) => {
      const { client, packets, descriptions } = recordingClient({ url: server().url(path), transport });
      const media = await client.start();
      expect(media).toMatchObject({ payloadType, encodingName, clockRate: 90000 });
      expect(client.media).toBe(media);
      expect(descriptions.items).toEqual([media]);
      expect(client.state).toBe('playing');
      await packets.count(30);
      for (const packet of packets.items) {
        expect(packet[0]! >> 6).toBe(2); // RTP version 2; no RTCP reaches onRtp
        expect(packet[1]! & 0x7f).toBe(payloadType);
      }
      if (encodingName === 'H264') {
        expect(media.fmtp.get('packetization-mode')).toBe('1');
        expect(media.fmtp.get('sprop-parameter-sets')).toMatch(/^[A-Za-z0-9+/=]+,[A-Za-z0-9+/=]+$/);
      }
      await client.stop();
      expect(client.state).toBe('closed');
      const delivered = client.packetsReceived;
      await client.stop();
      expect(client.packetsReceived).toBe(delivered);
    },
  );

  it('reports an unknown mount as not-found, naming the URL', async () => {
    const { client } = recordingClient({ url: server().url('/no-such-mount') });
    const error = await rejection(client.start());
    expectCode(error, 'not-found');
    expect(error.message).toBe(
      `no such stream/mount at rtsp://127.0.0.1:${server().port}/no-such-mount (DESCRIBE answered 404 Not Found)`,
    );
    expect(client.state).toBe('closed');
  });

  it('reports a port where nothing listens as unreachable', async () => {
    const port = await closedPort();
    const { client } = recordingClient({ url: `rtsp://u:hunter2@127.0.0.1:${port}/x` });
    const error = await rejection(client.start());
    expectCode(error, 'unreachable');
    expect(error.message).toMatch(new RegExp(`cannot connect to 127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    expect(inspect(error, { depth: 10 })).not.toContain('hunter2');
  });

  it('reports an unresolvable host as unreachable', async () => {
    const { client } = recordingClient({ url: 'rtsp://camera.invalid/x' });
    expectCode(await rejection(client.start()), 'unreachable');
  });

  it('rejects URLs it cannot use with bad-url, credentials redacted', async () => {
    for (const url of ['http://u:hunter2@cam/x', 'rtsp://u:hunter2@[bad/x', 'rtsp://u:hunter2@cam:0/x']) {
      const error = await rejection(new RtspClient({ url }).start());
      expectCode(error, 'bad-url');
      // Everything a logger's error serialiser could print, causes included.
      expect(inspect(error, { depth: 10 })).not.toContain('hunter2');
    }
  });

  it('refuses a second start()', async () => {
    const { client } = recordingClient({ url: server().url('/mjpeg') });
    await client.start();
    await expect(client.start()).rejects.toThrow(TypeError);
  });

  it('stops cleanly while still connecting: start() rejects with closed', async () => {
    const { client } = recordingClient({ url: server().url('/h264') });
    const starting = client.start();
    await client.stop();
    expectCode(await rejection(starting), 'closed');
  });
});

describe('RtspClient authentication against GStreamer', () => {
  const user = 'operator';
  const password = 'Pa55:w/rd@cam!';
  const withCredentials = (url: string, pw = password): string =>
    url.replace('rtsp://', `rtsp://${encodeURIComponent(user)}:${encodeURIComponent(pw)}@`);
  const servers: RunningRtspServer[] = [];

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  async function protectedServer(authMethods: readonly ('basic' | 'digest')[]): Promise<RunningRtspServer> {
    const server = await startRtspServer({
      mounts: [{ path: '/cam', codec: 'h264' }],
      user,
      password,
      authMethods,
    });
    servers.push(server);
    return server;
  }

  it.each([
    [['basic'], 'basic'],
    [['digest'], 'digest'],
    [['basic', 'digest'], 'digest'],
  ] as const)(
    'plays with the right credentials when the server offers %j (answers with %s)',
    async (methods, used) => {
      const server = await protectedServer(methods);
      const { logger, lines } = capturingLogger();
      const { client, packets } = recordingClient({ url: withCredentials(server.url('/cam')), logger });
      await client.start();
      await packets.count(10);
      expect(lines().filter((l) => l.includes('RTSP authenticating'))).toEqual([
        `debug {"scheme":"${used}","method":"DESCRIBE"} RTSP authenticating`,
      ]);
    },
  );

  it('rejects a wrong password with unauthorized, naming the variables but not the secret', async () => {
    const server = await protectedServer(['basic', 'digest']);
    const wrong = 'wrong-Secret-42';
    const url = withCredentials(server.url('/cam'), wrong);
    const { logger, lines } = capturingLogger();
    const { client } = recordingClient({ url, logger });
    const error = await rejection(client.start());
    expectCode(error, 'unauthorized');
    expect(error.message).toMatch(/rejected the credentials/);
    expect(error.message).toMatch(/SVC_RTSP_USER/);
    expect(error.message).toMatch(/SVC_RTSP_PASSWORD/);
    for (const text of [inspect(error, { depth: 10 }), ...lines()]) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(encodeURIComponent(wrong));
      expect(text).not.toContain(url);
      expect(text).not.toContain(`${user}:`);
    }
  });

  it('says credentials are needed when the URL has none', async () => {
    const server = await protectedServer(['digest']);
    const error = await rejection(recordingClient({ url: server.url('/cam') }).client.start());
    expectCode(error, 'unauthorized');
    expect(error.message).toMatch(/requires credentials: set SVC_RTSP_USER and SVC_RTSP_PASSWORD/);
  });

  it('never logs or reports the password or the credentialed URL in a whole session', async () => {
    const server = await protectedServer(['basic', 'digest']);
    const { logger, lines } = capturingLogger();
    const messages: string[] = [];
    const secretUrl = withCredentials(server.url('/cam'));

    // A good session over TCP and one over UDP, with keep-alives and TEARDOWN.
    for (const transport of ['tcp', 'udp'] as const) {
      const clock = new RecordingClock();
      const { client, packets } = recordingClient({ url: secretUrl, logger, transport, clock });
      await client.start();
      await packets.count(5);
      expect(clock.fire(30_000)).toBe(true); // a keep-alive
      // The answer re-arms the keep-alive timer.
      await clock.scheduled.until((delays) => delays.filter((d) => d === 30_000).length === 2);
      await client.stop();
    }
    // Failures: wrong mount, wrong password, and a source that reconnects.
    for (const url of [withCredentials(server.url('/nope')), withCredentials(server.url('/cam'), 'bad')]) {
      const error = await rejection(recordingClient({ url, logger }).client.start());
      messages.push(inspect(error, { depth: 10 }));
    }
    const states = new Recorder<RtspSourceStateDetail | undefined>();
    const source = new RtspSource({
      url: withCredentials(server.url('/nope')),
      logger,
      onStateChange: (_state, detail) => states.push(detail),
    });
    sources.add(source);
    source.start();
    await states.until((items) => items.some((d) => d?.error !== undefined));
    await source.stop();
    for (const detail of states.items) if (detail?.error) messages.push(detail.error.message);

    expect(lines().length).toBeGreaterThan(20);
    for (const text of [...lines(), ...messages]) {
      expect(text).not.toContain(password);
      expect(text).not.toContain(encodeURIComponent(password));
      expect(text).not.toContain(`${user}:`);
    }
    expect(lines().some((l) => l.includes('rtsp://127.0.0.1'))).toBe(true);
  });
});

describe('RtspSource against GStreamer', () => {
  it('plays again after the camera restarts: playing → backoff → playing, and packets flow', async () => {
    const server = await startRtspServer({ mounts: [{ path: '/cam', codec: 'h264' }] });
    try {
      const states = new Recorder<[RtspSourceState, RtspSourceStateDetail | undefined]>();
      const packets = new Recorder<number>();
      const descriptions = new Recorder<SdpMedia>();
      const source = new RtspSource({
        url: server.url('/cam'),
        random: () => 0.5,
        onStateChange: (state, detail) => states.push([state, detail]),
        onRtp: () => packets.push(states.items.length),
        onDescription: descriptions.push,
      });
      sources.add(source);
      source.start();
      await states.until((items) => items.some(([s]) => s === 'playing'));
      await packets.count(10);

      await server.restart();
      await states.until((items) => items.filter(([s]) => s === 'playing').length === 2);
      const stateCountAtReplay = states.items.length;
      await packets.until((items) => items.filter((n) => n >= stateCountAtReplay).length >= 10);
      await source.stop();

      const sequence = states.items.map(([s]) => s);
      expect(sequence.slice(0, 2)).toEqual(['connecting', 'playing']);
      const firstBackoff = states.items.find(([s]) => s === 'backoff');
      expectCode(firstBackoff?.[1]?.error, 'unreachable');
      expect(firstBackoff?.[1]?.retryInMs).toBe(250); // 0.5 × 500 ms
      expect(sequence.slice(2).filter((s) => s !== 'connecting' && s !== 'backoff')).toEqual([
        'playing',
        'stopped',
      ]);
      expect(descriptions.items.length).toBe(2);
      expect(descriptions.items[1]).toMatchObject({ encodingName: 'H264', payloadType: 96 });
    } finally {
      await server.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Protocol edge cases against a fake camera
// ---------------------------------------------------------------------------------------------

describe('RtspClient against a fake camera', () => {
  it('follows DESCRIBE redirects to the real server, logging redacted URLs', async () => {
    const server = await startRtspServer({ mounts: [{ path: '/real', codec: 'mjpeg' }] });
    try {
      const target = `${server.url('/real')}?token=s3cr3t-token`;
      const hop2 = await startFakeCamera(
        scriptedCamera({
          override: (request) => {
            if (request.method !== 'DESCRIBE') return false;
            reply(request, '301 Moved Permanently', { Location: target });
            return true;
          },
        }),
      );
      const hop1 = await startFakeCamera(
        scriptedCamera({
          override: (request) => {
            if (request.method !== 'DESCRIBE') return false;
            // A relative redirect on the same server first, then to another server.
            if (request.uri.endsWith('/first')) reply(request, '302 Found', { Location: '/second' });
            else reply(request, '307 Temporary Redirect', { Location: hop2.url('/third') });
            return true;
          },
        }),
      );
      const { logger, lines } = capturingLogger();
      const { client, packets } = recordingClient({ url: hop1.url('/first'), logger });
      const media = await client.start();
      expect(media.encodingName).toBe('JPEG');
      await packets.count(3);
      expect(hop1.requests.items.filter((r) => r.method === 'DESCRIBE').map((r) => r.uri)).toEqual([
        hop1.url('/first'),
        hop1.url('/second'),
      ]);
      const redirects = lines().filter((l) => l.includes('RTSP DESCRIBE redirected'));
      expect(redirects).toHaveLength(3);
      expect(redirects[2]).toContain(`"to":"${server.url('/real')}?token=***"`);
      expect(lines().join('\n')).not.toContain('s3cr3t-token');
    } finally {
      await server.stop();
    }
  });

  it('gives up after 3 redirects with rtsp-status', async () => {
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method !== 'DESCRIBE') return false;
          reply(request, '302 Found', { Location: `${request.uri}x` });
          return true;
        },
      }),
    );
    const error = await rejection(recordingClient({ url: camera.url('/a') }).client.start());
    expectCode(error, 'rtsp-status');
    expect(error.message).toBe(`more than 3 redirects from ${camera.url('/a')}`);
    expect(camera.requests.items.filter((r) => r.method === 'DESCRIBE')).toHaveLength(4);
  });

  it('follows 305 Use Proxy: the same request URL, sent to the server the Location names', async () => {
    const proxy = await startFakeCamera(scriptedCamera());
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method !== 'DESCRIBE') return false;
          reply(request, '305 Use Proxy', { Location: proxy.url('/') });
          return true;
        },
      }),
    );
    const { client } = recordingClient({ url: camera.url('/a') });
    await client.start();
    expect(proxy.requests.items.map((r) => [r.method, r.uri])).toEqual([
      ['OPTIONS', camera.url('/a')],
      ['DESCRIBE', camera.url('/a')],
      ['SETUP', `${camera.url('/a')}/stream=0`],
      ['PLAY', `${camera.url('/a')}/`],
    ]);
  });

  it('drops credentials when redirected to another host', async () => {
    const other = await startFakeCamera(scriptedCamera());
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method !== 'DESCRIBE') return false;
          reply(request, '302 Found', { Location: other.url('/x').replace('127.0.0.1', 'localhost') });
          return true;
        },
      }),
    );
    const { client } = recordingClient({ url: camera.url('/a').replace('rtsp://', 'rtsp://u:p@') });
    await client.start();
    expect(other.requests.items.every((r) => !r.headers.has('authorization'))).toBe(true);
  });

  it('reports other statuses as rtsp-status with code and reason', async () => {
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method !== 'SETUP') return false;
          reply(request, '461 Unsupported Transport');
          return true;
        },
      }),
    );
    const error = await rejection(recordingClient({ url: camera.url('/a') }).client.start());
    expectCode(error, 'rtsp-status');
    expect(error.message).toBe(`SETUP ${camera.url('/a')}/stream=0 answered 461 Unsupported Transport`);
  });

  it.each([
    ['an HTTP answer', 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n', /neither an RTSP status line/],
    ['a huge Content-Length', 'RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: 2000000000\r\n\r\n', /exceeds/],
    ['binary noise', '\x00\xff\x13\x37garbage', /starts with byte 0x00/],
    ['an endless header', `RTSP/1.0 200 OK\r\nX: ${'y'.repeat(20_000)}`, /no end of headers/],
  ])('fails with malformed-rtsp on %s', async (_label, answer, pattern) => {
    const camera = await startFakeCamera((request) => request.socket.write(Buffer.from(answer, 'latin1')));
    const error = await rejection(recordingClient({ url: camera.url('/a') }).client.start());
    expectCode(error, 'malformed-rtsp');
    expect(error.message).toMatch(pattern);
  });

  it('fails with malformed-sdp when DESCRIBE returns something else', async () => {
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method !== 'DESCRIBE') return false;
          reply(request, '200 OK', { 'Content-Type': 'text/html' }, '<html>login</html>');
          return true;
        },
      }),
    );
    expectCode(await rejection(recordingClient({ url: camera.url('/a') }).client.start()), 'malformed-sdp');
  });

  it('times out when the camera never answers', async () => {
    const clock = new RecordingClock();
    const camera = await startFakeCamera(() => undefined);
    const { client } = recordingClient({ url: camera.url('/a'), clock, timeoutMs: 4321 });
    const starting = client.start();
    await camera.requests.count(1);
    expect(clock.fire(4321)).toBe(true);
    const error = await rejection(starting);
    expectCode(error, 'timeout');
    expect(error.message).toBe(`no answer to OPTIONS ${camera.url('/a')} within 4321 ms`);
  });

  it('sends GET_PARAMETER keep-alives every timeout/2 with the session id', async () => {
    const clock = new RecordingClock();
    const camera = await startFakeCamera(scriptedCamera({ session: 'ABC123;timeout=10' }));
    const { client } = recordingClient({ url: camera.url('/a'), clock });
    await client.start();
    expect(clock.pending()).toEqual([5000]);
    for (let round = 1; round <= 3; round++) {
      clock.fire(5000);
      // The answer re-arms the timer for the next round.
      await clock.scheduled.until((delays) => delays.filter((d) => d === 5000).length === round + 1);
      expect(clock.pending()).toEqual([5000]);
    }
    const keepAlives = camera.requests.items.filter((r) => r.method === 'GET_PARAMETER');
    expect(keepAlives.map((r) => [r.uri, r.headers.get('session')])).toEqual([
      [`${camera.url('/a')}/`, 'ABC123'],
      [`${camera.url('/a')}/`, 'ABC123'],
      [`${camera.url('/a')}/`, 'ABC123'],
    ]);
    const stopping = client.stop();
    await camera.requests.until((items) => items.some((r) => r.method === 'TEARDOWN'));
    await stopping;
    expect(camera.requests.items.map((r) => r.method)).toEqual([
      'OPTIONS',
      'DESCRIBE',
      'SETUP',
      'PLAY',
      'GET_PARAMETER',
      'GET_PARAMETER',
      'GET_PARAMETER',
      'TEARDOWN',
    ]);
  });

  it('keeps alive with OPTIONS when the camera does not list GET_PARAMETER; default timeout 60 s', async () => {
    const clock = new RecordingClock();
    const camera = await startFakeCamera(
      scriptedCamera({ public: 'OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN', session: 'S1' }),
    );
    const { client } = recordingClient({ url: camera.url('/a'), clock });
    await client.start();
    expect(clock.pending()).toEqual([30_000]);
    clock.fire(30_000);
    await camera.requests.count(5);
    expect(camera.requests.items[4]).toMatchObject({ method: 'OPTIONS' });
    expect(camera.requests.items[4]?.headers.get('session')).toBe('S1');
  });

  it('goes idle → starting → playing → failed when the camera drops the connection, then closed on stop()', async () => {
    const camera = await startFakeCamera(scriptedCamera());
    const { client, errors } = recordingClient({ url: camera.url('/a') });
    expect(client.state).toBe('idle');
    const starting = client.start();
    expect(client.state).toBe('starting');
    await starting;
    expect(client.state).toBe('playing');
    const [socket] = camera.connections.items;
    socket?.destroy();
    await errors.count(1);
    expect(client.state).toBe('failed');
    // No TEARDOWN on a connection that is gone.
    await client.stop();
    expect(client.state).toBe('closed');
    expect(camera.requests.items.map((r) => r.method)).not.toContain('TEARDOWN');
  });

  it('refuses start() after stop(), with a TypeError', async () => {
    const { client } = recordingClient({ url: 'rtsp://127.0.0.1:1/never' });
    await client.stop();
    expect(client.state).toBe('closed');
    await expect(client.start()).rejects.toThrow(TypeError);
  });

  it('ignores and counts packets that arrive while the session is closing', async () => {
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method !== 'TEARDOWN') return false;
          // The camera is still sending when TEARDOWN reaches it.
          request.socket.write(interleaved(0, rtpPacket(96, 7)));
          request.socket.write(interleaved(0, rtpPacket(96, 8)));
          reply(request, '200 OK');
          return true;
        },
      }),
    );
    const { client, packets } = recordingClient({ url: camera.url('/a') });
    await client.start();
    expect(client.lateEvents).toBe(0);
    await client.stop();
    expect(packets.items).toHaveLength(0);
    expect(client.packetsReceived).toBe(0);
    expect(client.lateEvents).toBe(2);
  });

  it('reports a camera that drops the connection mid-stream through onError, once', async () => {
    const camera = await startFakeCamera(
      scriptedCamera({
        afterPlay: (socket) => {
          socket.write(interleaved(0, rtpPacket(96, 1)));
          socket.end();
        },
      }),
    );
    const { client, packets, errors } = recordingClient({ url: camera.url('/a') });
    await client.start();
    await errors.count(1);
    expect(packets.items).toHaveLength(1);
    expectCode(errors.items[0], 'unreachable');
    expect(errors.items[0]?.message).toBe(`the camera at 127.0.0.1:${camera.port} closed the connection`);
    await client.stop();
    expect(errors.items).toHaveLength(1);
  });

  it('delivers only RTP of the negotiated interleaved channel, and answers the camera’s own requests', async () => {
    const answers = new Recorder<string>();
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method !== 'SETUP') return false;
          reply(request, '200 OK', { Session: 'S', Transport: 'RTP/AVP/TCP;unicast;interleaved=4-5' });
          return true;
        },
        afterPlay: (socket) => {
          socket.write(
            concat([
              interleaved(0, rtpPacket(96, 1)), // another channel
              interleaved(5, rtpPacket(96, 2)), // the RTCP channel
              interleaved(4, ascii('\x80\xc9\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00')), // RTCP on the RTP channel
              interleaved(4, ascii('\x80\x60\x00')), // too short for RTP
              ascii('OPTIONS * RTSP/1.0\r\nCSeq: 77\r\n\r\n'),
              interleaved(4, rtpPacket(96, 3)),
              ascii('ANNOUNCE rtsp://x RTSP/1.0\r\nCSeq: 78\r\n\r\n'),
            ]),
          );
        },
      }),
      (socket) => {
        let text = '';
        socket.on('data', (chunk) => {
          text += chunk.toString('latin1');
          if (text.includes('CSeq: 78')) answers.push(text);
        });
      },
    );
    const { client, packets } = recordingClient({ url: camera.url('/a') });
    await client.start();
    await answers.count(1);
    expect(answers.items[0]).toContain('RTSP/1.0 200 OK\r\nCSeq: 77\r\n\r\n');
    expect(answers.items[0]).toContain('RTSP/1.0 501 Not Implemented\r\nCSeq: 78\r\n\r\n');
    expect(packets.items.map((p) => p[3])).toEqual([3]);
  });

  it('over UDP binds an even/odd port pair and accepts packets only from the camera', async () => {
    const camera = await startFakeCamera(scriptedCamera());
    const { client, packets } = recordingClient({ url: camera.url('/a'), transport: 'udp' });
    await client.start();
    const setup = camera.requests.items.find((r) => r.method === 'SETUP');
    const match = /^RTP\/AVP;unicast;client_port=(\d+)-(\d+)$/.exec(setup?.headers.get('transport') ?? '');
    const rtpPort = Number(match?.[1]);
    expect(rtpPort % 2).toBe(0);
    expect(Number(match?.[2])).toBe(rtpPort + 1);

    const send = async (from: string, packet: Uint8Array, port = rtpPort): Promise<void> => {
      const socket = createSocket('udp4');
      await new Promise<void>((resolve) => socket.bind(0, from, resolve));
      await new Promise<void>((resolve, reject) =>
        socket.send(packet, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())),
      );
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    };
    await send('127.0.0.2', rtpPacket(96, 1)); // a stranger
    await send('127.0.0.1', rtpPacket(96, 2), rtpPort + 1); // the RTCP port
    await send('127.0.0.1', rtpPacket(96, 3)); // the camera's address
    await packets.count(1);
    await send('127.0.0.1', rtpPacket(96, 4));
    await packets.count(2);
    expect(packets.items.map((p) => p[3])).toEqual([3, 4]);
  });

  it('authenticates with Digest qop=auth, counting nonce uses, and fails on a second 401', async () => {
    let accept = true;
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method === 'OPTIONS') return false;
          const authorization = request.headers.get('authorization');
          if (authorization === undefined || !accept) {
            reply(request, '401 Unauthorized', {
              'WWW-Authenticate':
                'Digest realm="cam", nonce="n0nce", qop="auth", algorithm=SHA-256, opaque="op"',
            });
            return true;
          }
          return false;
        },
      }),
    );
    const { client } = recordingClient({ url: camera.url('/a').replace('rtsp://', 'rtsp://admin:pw@') });
    await client.start();
    const authorized = camera.requests.items.filter((r) => r.headers.has('authorization'));
    expect(authorized.map((r) => r.method)).toEqual(['DESCRIBE', 'SETUP', 'PLAY']);
    expect(authorized.map((r) => /nc=(\w+)/.exec(r.headers.get('authorization') ?? '')?.[1])).toEqual([
      '00000001',
      '00000002',
      '00000003',
    ]);
    const header = authorized[0]?.headers.get('authorization') ?? '';
    const cnonce = /cnonce="([^"]+)"/.exec(header)?.[1] ?? '';
    expect(header).toContain(
      `response="${digestResponse({
        algorithm: 'SHA-256',
        username: 'admin',
        password: 'pw',
        realm: 'cam',
        nonce: 'n0nce',
        method: 'DESCRIBE',
        uri: camera.url('/a'),
        qop: { cnonce, nc: '00000001' },
      })}"`,
    );
    await client.stop();

    accept = false;
    const second = recordingClient({ url: camera.url('/b').replace('rtsp://', 'rtsp://admin:pw@') });
    const error = await rejection(second.client.start());
    expectCode(error, 'unauthorized');
    expect(error.message).toBe(
      `the camera at ${camera.url('/b')} rejected the credentials (DESCRIBE answered 401 twice); check SVC_RTSP_USER and SVC_RTSP_PASSWORD`,
    );
  });
});

describe('RtspClient re-authentication', () => {
  it('answers a fresh challenge (stale nonce) in the middle of a session with the new nonce', async () => {
    let nonce = 'first';
    const camera = await startFakeCamera(
      scriptedCamera({
        override: (request) => {
          if (request.method === 'OPTIONS') return false;
          const authorization = request.headers.get('authorization') ?? '';
          if (!authorization.includes(`nonce="${nonce}"`)) {
            reply(request, '401 Unauthorized', {
              'WWW-Authenticate': `Digest realm="cam", nonce="${nonce}", stale=${authorization === '' ? 'false' : 'true'}`,
            });
            return true;
          }
          // The camera expires its nonce after DESCRIBE.
          if (request.method === 'DESCRIBE') nonce = 'second';
          return false;
        },
      }),
    );
    const { client } = recordingClient({ url: camera.url('/a').replace('rtsp://', 'rtsp://admin:pw@') });
    await client.start();
    expect(
      camera.requests.items.map((r) => [
        r.method,
        /nonce="(\w+)"/.exec(r.headers.get('authorization') ?? '')?.[1],
      ]),
    ).toEqual([
      ['OPTIONS', undefined],
      ['DESCRIBE', undefined],
      ['DESCRIBE', 'first'],
      ['SETUP', 'first'],
      ['SETUP', 'second'],
      ['PLAY', 'second'],
    ]);
  });
});

describe('RtspSource with an injected clock', () => {
  it('retries with capped exponential backoff and full jitter', async () => {
    const port = await closedPort();
    const clock = new RecordingClock();
    const states = new Recorder<[RtspSourceState, RtspSourceStateDetail | undefined]>();
    const draws = [0.999_999, 0.5, 0.25, 0.999_999, 0.1, 0.999_999, 0.999_999, 0.999_999];
    const source = new RtspSource({
      url: `rtsp://127.0.0.1:${port}/x`,
      clock,
      random: () => draws.shift() ?? 0,
      onStateChange: (state, detail) => states.push([state, detail]),
    });
    sources.add(source);
    source.start();
    const delays: number[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      await states.until((items) => items.filter(([s]) => s === 'backoff').length === attempt + 1);
      const [, detail] = states.items[states.items.length - 1]!;
      expectCode(detail?.error, 'unreachable');
      delays.push(detail?.retryInMs ?? -1);
      expect(clock.fire(detail?.retryInMs ?? -1)).toBe(true);
    }
    // Ceilings 500, 1000, 2000, 4000, 8000, 16000, 30000 (cap), 30000, times the draws.
    expect(delays).toEqual([499, 500, 500, 3999, 800, 15_999, 29_999, 29_999]);
    await source.stop();
    expect(states.items.map(([s]) => s).slice(-1)).toEqual(['stopped']);
    expect(clock.pending()).toEqual([]);
  });

  it('restarts a session that stops sending after stallTimeoutMs, and resets the backoff after a healthy session', async () => {
    const clock = new RecordingClock();
    let mode: 'refuse' | 'serve' = 'refuse';
    let cameraSocket: Socket | undefined;
    const camera = await startFakeCamera(
      scriptedCamera({
        afterPlay: (socket) => {
          cameraSocket = socket;
          socket.write(interleaved(0, rtpPacket(96, 1)));
        },
      }),
      (socket) => {
        if (mode === 'refuse') socket.destroy();
      },
    );
    const states = new Recorder<[RtspSourceState, RtspSourceStateDetail | undefined]>();
    const packets = new Recorder<Uint8Array>();
    const source = new RtspSource({
      url: camera.url('/a'),
      clock,
      random: () => 0.999_999,
      stallTimeoutMs: 5000,
      healthyAfterMs: 10_000,
      onStateChange: (state, detail) => states.push([state, detail]),
      onRtp: packets.push,
    });
    sources.add(source);
    const backoffs = (): number[] =>
      states.items.filter(([s]) => s === 'backoff').map(([, d]) => d?.retryInMs ?? -1);
    source.start();
    // Three refused connections: the backoff grows.
    for (let n = 1; n <= 3; n++) {
      await states.until(() => backoffs().length === n);
      if (n === 3) mode = 'serve';
      clock.fire(backoffs()[n - 1]!);
    }
    expect(backoffs()).toEqual([499, 999, 1999]);
    await states.until((items) => items.some(([s]) => s === 'playing'));
    await packets.count(1);
    // A packet every 4 s for 12 s keeps the session up (healthy for more than 10 s)...
    for (let n = 2; n <= 4; n++) {
      clock.advance(4000);
      cameraSocket?.write(interleaved(0, rtpPacket(96, n)));
      await packets.count(n);
    }
    expect(backoffs()).toHaveLength(3);
    // ...then the camera stops sending: the stall check fires 5 s after the last packet.
    clock.advance(5000);
    await states.until(() => backoffs().length === 4);
    const stall = states.items[states.items.length - 1]?.[1];
    expectCode(stall?.error, 'timeout');
    expect(stall?.error?.message).toBe(`no RTP from ${camera.url('/a')} for 5000 ms`);
    // The session had been healthy: back to the first ceiling.
    expect(backoffs()[3]).toBe(499);
    await source.stop();
  });

  it('re-arms the stall check while packets keep coming', async () => {
    const clock = new RecordingClock();
    let cameraSocket: Socket | undefined;
    const camera = await startFakeCamera(
      scriptedCamera({
        afterPlay: (socket) => {
          cameraSocket = socket;
        },
      }),
    );
    const states = new Recorder<RtspSourceState>();
    const packets = new Recorder<Uint8Array>();
    const source = new RtspSource({
      url: camera.url('/a'),
      clock,
      stallTimeoutMs: 5000,
      onStateChange: states.push,
      onRtp: packets.push,
    });
    sources.add(source);
    source.start();
    await states.until((items) => items.includes('playing'));
    clock.advance(3000);
    cameraSocket?.write(interleaved(0, rtpPacket(96, 1)));
    await packets.count(1);
    expect(clock.fire(5000)).toBe(true);
    expect(clock.now()).toBe(5000);
    // 2 s since the last packet: checked again 3 s later, still playing.
    expect(clock.pending()).toContain(3000);
    expect(states.items).toEqual(['connecting', 'playing']);
    await source.stop();
    expect(states.items).toEqual(['connecting', 'playing', 'stopped']);
  });
});
