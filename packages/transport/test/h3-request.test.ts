import { describe, expect, it } from 'vitest';
import { TransportError } from '../src/errors.js';
import {
  H3_ERROR,
  h3CodeToWebTransport,
  h3ErrorCodeFor,
  WEBTRANSPORT_ERROR_FIRST,
  WEBTRANSPORT_ERROR_LAST,
  webTransportCodeToH3,
} from '../src/h3/codes.js';
import { decodeHeaders, type HeaderList } from '../src/h3/qpack.js';
import {
  encodeWebTransportResponse,
  parseWebTransportRequest,
  type RequestProblem,
  webTransportResponseHeaders,
} from '../src/h3/request.js';
import { isReservedId } from '../src/h3/varint.js';

const GOOD: HeaderList = [
  [':method', 'CONNECT'],
  [':protocol', 'webtransport'],
  [':scheme', 'https'],
  [':authority', 'robot.local:4433'],
  [':path', '/wt?channel=2'],
  ['origin', 'https://console.example'],
  ['sec-webtransport-http3-draft02', '1'],
];

function without(name: string): HeaderList {
  return GOOD.filter(([n]) => n !== name);
}

function replaced(name: string, value: string): HeaderList {
  return GOOD.map(([n, v]) => [n, n === name ? value : v] as const);
}

describe('extended CONNECT check', () => {
  it('accepts a WebTransport request and reports what the session layer needs', () => {
    expect(parseWebTransportRequest(GOOD)).toEqual({
      ok: true,
      request: {
        authority: 'robot.local:4433',
        path: '/wt?channel=2',
        origin: 'https://console.example',
        draft02: true,
        headers: GOOD.slice(5),
      },
    });
  });

  it('accepts a request without origin or the draft-02 field (a newer, non-browser client)', () => {
    const check = parseWebTransportRequest(GOOD.slice(0, 5));
    expect(check.ok && check.request.origin === undefined && !check.request.draft02).toBe(true);
  });

  it.each<[string, HeaderList, RequestProblem, boolean, number]>([
    ['an uppercase name', [...GOOD, ['User-Agent', 'x']], 'uppercase-name', true, 400],
    ['a name outside the token set', [...GOOD, ['bad name', 'x']], 'invalid-name', true, 400],
    ['an empty name', [...GOOD, ['', 'x']], 'invalid-name', true, 400],
    ['a value with CR LF', [...GOOD, ['x-a', 'a\r\nb']], 'invalid-value', true, 400],
    ['a value with NUL', [...GOOD, ['x-a', 'a\0b']], 'invalid-value', true, 400],
    [
      'a pseudo-header after a regular field',
      [...GOOD, [':path', '/other']],
      'pseudo-after-regular',
      true,
      400,
    ],
    ['a repeated pseudo-header', [[':path', '/a'], ...GOOD], 'duplicate-pseudo', true, 400],
    ['a response pseudo-header', [[':status', '200'], ...GOOD], 'unknown-pseudo', true, 400],
    ['an invented pseudo-header', [[':foo', 'x'], ...GOOD], 'unknown-pseudo', true, 400],
    ['a connection field', [...GOOD, ['connection', 'close']], 'connection-specific', true, 400],
    ['transfer-encoding', [...GOOD, ['transfer-encoding', 'chunked']], 'connection-specific', true, 400],
    ['te other than trailers', [...GOOD, ['te', 'gzip']], 'connection-specific', true, 400],
    ['no :method', without(':method'), 'missing-method', true, 400],
    ['no :scheme', without(':scheme'), 'missing-scheme', true, 400],
    ['no :authority', without(':authority'), 'missing-authority', true, 400],
    ['an empty :authority', replaced(':authority', ''), 'missing-authority', true, 400],
    ['userinfo in :authority', replaced(':authority', 'me@robot:4433'), 'invalid-authority', true, 400],
    ['no :path', without(':path'), 'missing-path', true, 400],
    ['a :path without a leading slash', replaced(':path', 'wt'), 'invalid-path', true, 400],
    ['GET', replaced(':method', 'GET').filter(([n]) => n !== ':protocol'), 'not-connect', false, 405],
    ['GET with :protocol', replaced(':method', 'GET'), 'protocol-without-connect', true, 400],
    ['a plain CONNECT', without(':protocol'), 'not-extended-connect', false, 400],
    ['another protocol', replaced(':protocol', 'websocket'), 'wrong-protocol', false, 400],
    ['the draft-15 protocol token', replaced(':protocol', 'webtransport-h3'), 'wrong-protocol', false, 400],
    ['plain http', replaced(':scheme', 'http'), 'wrong-scheme', false, 400],
    ['two origins', [...GOOD, ['origin', 'https://evil.example']], 'duplicate-origin', false, 400],
  ])('refuses %s', (_label, fields, problem, malformed, status) => {
    const check = parseWebTransportRequest(fields);
    expect(check.ok).toBe(false);
    if (!check.ok) {
      expect({ problem: check.problem, malformed: check.malformed, status: check.status }).toEqual({
        problem,
        malformed,
        status,
      });
      expect(check.message.length).toBeGreaterThan(0);
    }
  });

  it('allows te: trailers', () => {
    expect(parseWebTransportRequest([...GOOD, ['te', 'trailers']]).ok).toBe(true);
  });
});

describe('WebTransport responses', () => {
  it('answers success with the draft-02 header, and refusals without it', () => {
    expect(webTransportResponseHeaders(200)).toEqual([
      [':status', '200'],
      ['sec-webtransport-http3-draft', 'draft02'],
    ]);
    expect(webTransportResponseHeaders(200, { draft02: false })).toEqual([[':status', '200']]);
    expect(webTransportResponseHeaders(404, { headers: [['server', 'svcd']] })).toEqual([
      [':status', '404'],
      ['server', 'svcd'],
    ]);
    expect(() => webTransportResponseHeaders(101)).toThrow(TypeError);
    expect(() => webTransportResponseHeaders(600)).toThrow(TypeError);
  });

  it('encodes a HEADERS frame that decodes back to the same fields', () => {
    const frame = encodeWebTransportResponse(405);
    // 01: HEADERS | length | then the QPACK block.
    expect(frame[0]).toBe(0x01);
    expect(decodeHeaders(frame.subarray(2))).toEqual([[':status', '405']]);
  });
});

describe('error codes', () => {
  it('maps WebTransport application codes into the HTTP/3 range, skipping reserved points', () => {
    expect(webTransportCodeToH3(0)).toBe(WEBTRANSPORT_ERROR_FIRST);
    expect(webTransportCodeToH3(0x1d)).toBe(WEBTRANSPORT_ERROR_FIRST + 0x1d);
    // 0x1e lands one further on: WEBTRANSPORT_ERROR_FIRST + 0x1e is a reserved 0x1f * N + 0x21 point.
    expect(isReservedId(WEBTRANSPORT_ERROR_FIRST + 0x1e)).toBe(true);
    expect(webTransportCodeToH3(0x1e)).toBe(WEBTRANSPORT_ERROR_FIRST + 0x1f);
    expect(webTransportCodeToH3(0xffffffff)).toBe(WEBTRANSPORT_ERROR_LAST);
    expect(() => webTransportCodeToH3(2 ** 32)).toThrow(TypeError);
  });

  it('maps back every code it maps forward, and nothing else', () => {
    for (let code = 0; code < 5000; code++) {
      const h3 = webTransportCodeToH3(code);
      expect(isReservedId(h3)).toBe(false);
      expect(h3CodeToWebTransport(h3)).toBe(code);
    }
    for (const code of [0xfffffff0, 0xffffffff])
      expect(h3CodeToWebTransport(webTransportCodeToH3(code))).toBe(code);
    expect(h3CodeToWebTransport(WEBTRANSPORT_ERROR_FIRST + 0x1e)).toBeUndefined();
    expect(h3CodeToWebTransport(WEBTRANSPORT_ERROR_FIRST - 1)).toBeUndefined();
    expect(h3CodeToWebTransport(WEBTRANSPORT_ERROR_LAST + 1)).toBeUndefined();
    expect(h3CodeToWebTransport(H3_ERROR.NO_ERROR)).toBeUndefined();
  });

  it('names the HTTP/3 code for each library error', () => {
    const cases = [
      ['frame-error', H3_ERROR.FRAME_ERROR],
      ['varint-error', H3_ERROR.FRAME_ERROR],
      ['frame-unexpected', H3_ERROR.FRAME_UNEXPECTED],
      ['missing-settings', H3_ERROR.MISSING_SETTINGS],
      ['settings-error', H3_ERROR.SETTINGS_ERROR],
      ['critical-stream-closed', H3_ERROR.CLOSED_CRITICAL_STREAM],
      ['stream-creation-error', H3_ERROR.STREAM_CREATION_ERROR],
      ['qpack-error', H3_ERROR.QPACK_DECOMPRESSION_FAILED],
      ['qpack-stream-error', H3_ERROR.QPACK_ENCODER_STREAM_ERROR],
      ['capsule-error', H3_ERROR.MESSAGE_ERROR],
      ['message-error', H3_ERROR.MESSAGE_ERROR],
      ['datagram-error', H3_ERROR.DATAGRAM_ERROR],
      ['closed', H3_ERROR.NO_ERROR],
    ] as const;
    for (const [code, h3] of cases)
      expect([code, h3ErrorCodeFor(new TransportError(code, 'x'))]).toEqual([code, h3]);
  });
});
