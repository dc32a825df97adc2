import { describe, expect, it } from 'vitest';
import {
  isSecretFieldName,
  isSecretParameterName,
  redactFields,
  redactText,
  redactUrl,
  SECRET_FIELD_NAMES,
} from '../src/index.js';

describe('redactUrl', () => {
  it.each([
    ['rtsp://user:pass@host/', 'rtsp://***@host/'],
    [
      'rtsp://admin:s3cret@192.168.1.64:554/Streaming/Channels/101',
      'rtsp://***@192.168.1.64:554/Streaming/Channels/101',
    ],
    ['rtsp://admin@cam.local/live', 'rtsp://***@cam.local/live'],
    ['rtsp://:onlypassword@cam/', 'rtsp://***@cam/'],
    ['rtsp://u:p%40ss%2Fword@[::1]:8554/x', 'rtsp://***@[::1]:8554/x'],
    ['RTSP://User:Pw@Host/A', 'RTSP://***@Host/A'],
  ])('removes userinfo: %s', (input, expected) => {
    expect(redactUrl(input)).toBe(expected);
  });

  it.each([
    'rtsp://127.0.0.1:8554/h264',
    'rtsp://cam/cam/realmonitor?channel=1&subtype=0',
    'rtsp://cam/axis-media/media.amp?videocodec=h264&resolution=640x480',
    'rtsp://cam/live?keyframe=1',
    'not a url at all',
    '',
  ])('leaves a URL without secrets exactly as it was: %j', (url) => {
    expect(redactUrl(url)).toBe(url);
  });

  it('redacts values of secret-looking query parameters, case-insensitively', () => {
    expect(redactUrl('rtsp://cam/live?user=admin&password=hunter2&channel=1')).toBe(
      'rtsp://cam/live?user=admin&password=***&channel=1',
    );
    expect(
      redactUrl('rtsp://cam/s?TOKEN=abc;Access_Token=def&X-Amz-Signature=0f&apikey=k&sig=s&auth=a'),
    ).toBe('rtsp://cam/s?TOKEN=***;Access_Token=***&X-Amz-Signature=***&apikey=***&sig=***&auth=***');
    expect(redactUrl('rtsp://cam/s?pwd=1&pass=2&secret=3&credential=4&key=5&X-Amz-Credential=6')).toBe(
      'rtsp://cam/s?pwd=***&pass=***&secret=***&credential=***&key=***&X-Amz-Credential=***',
    );
  });

  it('redacts credentials that cameras put in the path', () => {
    expect(redactUrl('rtsp://10.0.0.5:554/user=admin&password=123456&channel=1&stream=0.sdp')).toBe(
      'rtsp://10.0.0.5:554/user=admin&password=***&channel=1&stream=0.sdp',
    );
  });

  it('keeps a password with unencoded reserved characters out of the result', () => {
    for (const password of ['pa/ss', 'pa?ss', 'pa#ss', 'p@ss', 'a b']) {
      const url = `rtsp://admin:${password}@cam.example/stream`;
      const redacted = redactUrl(url);
      expect(redacted).not.toContain(password);
      expect(redacted).toMatch(/^rtsp:\/\/\*\*\*@/);
    }
  });

  it('redacts userinfo of input that has no scheme', () => {
    expect(redactUrl('admin:secret@10.0.0.1/stream')).toBe('***@10.0.0.1/stream');
    expect(redactUrl('10.0.0.1/stream@2')).toBe('10.0.0.1/stream@2');
  });

  it('does not throw on odd input', () => {
    for (const input of ['://@', '@', 'rtsp://', 'rtsp://@', '?password', '=&=;', '\u0000rtsp://a:b@c']) {
      expect(() => redactUrl(input)).not.toThrow();
    }
    expect(redactUrl('\u0000rtsp://a:b@c')).not.toContain('a:b');
  });
});

describe('redactText', () => {
  it('redacts every URL inside a message and keeps the rest', () => {
    const text =
      'connect to rtsp://admin:hunter2@10.0.0.1:554/live failed; then tried "rtsp://x:y@cam/b?token=t" (timeout)';
    expect(redactText(text)).toBe(
      'connect to rtsp://***@10.0.0.1:554/live failed; then tried "rtsp://***@cam/b?token=***" (timeout)',
    );
  });

  it('leaves text without URLs unchanged', () => {
    expect(redactText('ECONNREFUSED 127.0.0.1:554')).toBe('ECONNREFUSED 127.0.0.1:554');
  });
});

/** A JWT shaped like the ones the cloud issues (header, claims, signature). */
const JWT = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJyb2JvdC0xIn0.c2lnbmF0dXJlLWJ5dGVz';
const ENROLMENT = 'svc_enr_Q2hvb3NlQVN0cm9uZ1NlY3JldEhlcmVfMTIzNDU2Nzg5MA';
const API_KEY_SECRET = 'dGhpcy1pcy10aGUtc2VjcmV0LXBhcnQtb2YtYS1rZXk';

describe('redactText: each secret kind in a log line', () => {
  it.each([
    ['URL userinfo', 'dialling rtsp://admin:pw@cam/ now', 'dialling rtsp://***@cam/ now', 'admin:pw'],
    [
      'a secret query parameter',
      'GET https://cloud.example/api/v1/signalling?robot=r1&token=opaque123 upgraded',
      'GET https://cloud.example/api/v1/signalling?robot=r1&token=*** upgraded',
      'opaque123',
    ],
    [
      'a secret fragment parameter holding a JWT',
      `open https://cloud.example/pilot/#robot=r&token=${JWT} to drive`,
      'open https://cloud.example/pilot/#robot=r&token=*** to drive',
      'eyJ',
    ],
    [
      'a one-time token parameter',
      'invite https://cloud.example/console/#/invite?email=a%40b.example&ott=one-time-42 sent',
      'invite https://cloud.example/console/#/invite?email=a%40b.example&ott=*** sent',
      'one-time-42',
    ],
    [
      'secret parameters of a request path without scheme',
      'incoming request GET /api/v1/signalling?robot=r1&access_token=abc123 from 10.0.0.9',
      'incoming request GET /api/v1/signalling?robot=r1&access_token=*** from 10.0.0.9',
      'abc123',
    ],
    [
      'secret parameters of a hash route',
      'route #/invite?email=a@b.example&token=tok-1&ott=ott-2 opened',
      'route #/invite?email=a@b.example&token=***&ott=*** opened',
      'tok-1',
    ],
    [
      'an enrolment token',
      `svcd enrol --token ${ENROLMENT} failed`,
      'svcd enrol --token svc_enr_*** failed',
      ENROLMENT,
    ],
    [
      'an API key, public prefix kept',
      `key svc_key_0123abcd_${API_KEY_SECRET} refused`,
      'key svc_key_0123abcd_*** refused',
      API_KEY_SECRET,
    ],
    [
      'a malformed API key, whole',
      'key svc_key_NOTHEXAT_secretpart refused',
      'key svc_key_*** refused',
      'secretpart',
    ],
    ['a bare JWT', `claims of ${JWT} expired`, 'claims of [jwt ***] expired', 'c2lnbmF0dXJl'],
    [
      'a Bearer credential',
      'Authorization: Bearer opaque-credential-1',
      'Authorization: Bearer ***',
      'opaque',
    ],
    ['a Bearer JWT', `authorization: bearer ${JWT}`, 'authorization: bearer ***', 'eyJ'],
    ['a Basic credential', 'Authorization: Basic YWRtaW46cHc=', 'Authorization: Basic ***', 'YWRtaW46cHc'],
  ])('redacts %s', (_, line, expected, secret) => {
    const redacted = redactText(line);
    expect(redacted).toBe(expected);
    expect(redacted).not.toContain(secret);
  });

  it("keeps an API key's public part alone as it is: it names the key", () => {
    expect(redactText('revoked svc_key_0123abcd (ci)')).toBe('revoked svc_key_0123abcd (ci)');
    expect(redactText('API keys start with svc_key_.')).toBe('API keys start with svc_key_.');
  });

  it('redacts several secrets of different kinds in one line', () => {
    const line = `rtsp://u:p@cam/a ${ENROLMENT} svc_key_89abcdef_${API_KEY_SECRET} ${JWT} Bearer xyz`;
    expect(redactText(line)).toBe('rtsp://***@cam/a svc_enr_*** svc_key_89abcdef_*** [jwt ***] Bearer ***');
  });

  it('leaves ordinary log lines alone', () => {
    for (const line of [
      'frame 1234 delivered in 12 ms (issue #15, rung=idr)',
      'GET /api/v1/robots?limit=20&cursor=abc 200',
      'channel=1&subtype=0 negotiated',
      'svcd 0.1.0 starting on eth0',
    ]) {
      expect(redactText(line)).toBe(line);
    }
  });

  it('is idempotent', () => {
    const line = `rtsp://u:p@cam/?token=t ${ENROLMENT} svc_key_0123abcd_${API_KEY_SECRET} ${JWT} Bearer b /x?ott=o`;
    const once = redactText(line);
    expect(redactText(once)).toBe(once);
  });
});

describe.each([
  {
    name: 'isSecretParameterName',
    isSecret: isSecretParameterName,
    secret: [
      'password',
      'Passwd',
      'pwd',
      'token',
      'access_token',
      'apiKey',
      'api_key',
      'secret',
      'Authorization',
      'sig',
      'signature',
      'credential',
    ],
    ordinary: ['user', 'channel', 'subtype', 'videocodec', 'resolution', 'keyframe', 'stream'],
  },
  {
    name: 'isSecretFieldName',
    isSecret: isSecretFieldName,
    secret: [
      ...SECRET_FIELD_NAMES,
      // The listed names in any case and with any separators.
      'Token',
      'access_token',
      'accessToken',
      'X-Svc-Id-Token',
      'set-cookie',
      'enrolment.token',
      // Names that end in a secret word.
      'invitationToken',
      'pilot_token',
      'dbPassword',
      'sessionSecret',
      'x-api-key',
      'devicePrivateKey',
    ],
    ordinary: ['publicKey', 'keyframe', 'tokenCount', 'robot', 'url', 'message', 'secretHash', 'keys'],
  },
])('$name', ({ isSecret, secret, ordinary }) => {
  it.each(secret)('knows %s', (name) => {
    expect(isSecret(name)).toBe(true);
  });

  it.each(ordinary)('leaves %s alone', (name) => {
    expect(isSecret(name)).toBe(false);
  });
});

describe('redactFields', () => {
  it('masks fields named as secrets at any depth, inside arrays too, and keeps the rest', () => {
    // One shape for what goes in and what must come out: secret-named values through `secret`,
    // `inline` an ordinary string with an enrolment token in it.
    const fields = (secret: (value: string) => string, inline: string) => ({
      robot: 'r1',
      token: secret('t0'),
      accessToken: secret('t1'),
      password: secret('p1'),
      enrolment_token: secret('t2'),
      authorization: secret('Bearer t3'),
      key: secret('k1'),
      count: 3,
      nested: {
        deeper: { password: secret('p2'), keep: true },
        peers: [{ token: secret('t4'), id: 'a' }, { id: 'b' }],
      },
      list: [{ key: secret('k2') }, inline],
      missing: undefined,
      secretButUndefined: undefined as string | undefined,
    });
    expect(redactFields(fields((value) => value, 'svc_enr_inline'))).toEqual(
      fields(() => '***', 'svc_enr_***'),
    );
  });

  it('redacts secrets inside the strings of fields with ordinary names', () => {
    expect(redactFields({ url: 'rtsp://admin:pw@cam/', note: `got ${JWT}` })).toEqual({
      url: 'rtsp://***@cam/',
      note: 'got [jwt ***]',
    });
  });

  it('shows an error by name, redacted message, code, stack and cause', () => {
    const cause = Object.assign(new Error(`enrolment with ${ENROLMENT} refused`), { code: 'ECONNRESET' });
    const error = new TypeError('dial rtsp://admin:pw@cam/ failed', { cause });
    const shown = redactFields({ err: error }) as { err: Record<string, unknown> };
    expect(shown.err).toMatchObject({
      name: 'TypeError',
      message: 'dial rtsp://***@cam/ failed',
      cause: { name: 'Error', message: 'enrolment with svc_enr_*** refused', code: 'ECONNRESET' },
    });
    expect(shown.err.stack).toContain('dial rtsp://***@cam/ failed');
    const text = JSON.stringify(shown);
    expect(text).not.toContain('admin:pw');
    expect(text).not.toContain(ENROLMENT);
  });

  it('cuts cycles short, and copies an object that appears twice without a cycle', () => {
    const shared = { id: 's', token: 't' };
    const node: Record<string, unknown> = { name: 'loop', shared, again: shared };
    node.self = node;
    node.list = [node, shared];
    expect(redactFields(node)).toEqual({
      name: 'loop',
      shared: { id: 's', token: '***' },
      again: { id: 's', token: '***' },
      self: '[...]',
      list: ['[...]', { id: 's', token: '***' }],
    });
    const error = new Error('outer');
    error.cause = error;
    expect(redactFields(error)).toMatchObject({ message: 'outer', cause: '[...]' });
  });

  it('stops at a depth no log object reaches', () => {
    let deep: Record<string, unknown> = { password: 'p' };
    for (let i = 0; i < 20; i++) deep = { next: deep };
    const text = JSON.stringify(redactFields(deep));
    expect(text).toContain('[...]');
    expect(text).not.toContain('"p"');
  });

  it('shows other objects by a redacted description, and never throws', () => {
    const throwing = {
      get boom(): string {
        throw new Error('getter');
      },
    };
    class Loud {
      toString(): string {
        throw new Error('toString');
      }
    }
    expect(
      redactFields({
        bytes: new Uint8Array(12),
        at: new Date(Date.UTC(2026, 0, 2)),
        url: new URL('rtsp://admin:pw@cam/live?token=x'),
        map: new Map([['token', 'x']]),
        invalidDate: new Date(Number.NaN),
        throwing,
        loud: new Loud(),
        big: 12n,
        nothing: null,
      }),
    ).toEqual({
      bytes: '[12 bytes]',
      at: '2026-01-02T00:00:00.000Z',
      url: 'rtsp://***@cam/live?token=***',
      map: '[object Map]',
      invalidDate: '[unreadable]',
      throwing: '[unreadable]',
      loud: '[unreadable]',
      big: 12n,
      nothing: null,
    });
  });
});
