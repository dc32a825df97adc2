import { describe, expect, it } from 'vitest';
import { isSecretParameterName, redactText, redactUrl } from '../src/index.js';

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

  it('leaves URLs without secrets exactly as they were', () => {
    for (const url of [
      'rtsp://127.0.0.1:8554/h264',
      'rtsp://cam/cam/realmonitor?channel=1&subtype=0',
      'rtsp://cam/axis-media/media.amp?videocodec=h264&resolution=640x480',
      'rtsp://cam/live?keyframe=1',
      'not a url at all',
      '',
    ]) {
      expect(redactUrl(url)).toBe(url);
    }
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

describe('isSecretParameterName', () => {
  it('knows secret names and leaves ordinary ones alone', () => {
    for (const name of [
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
    ]) {
      expect(isSecretParameterName(name)).toBe(true);
    }
    for (const name of ['user', 'channel', 'subtype', 'videocodec', 'resolution', 'keyframe', 'stream']) {
      expect(isSecretParameterName(name)).toBe(false);
    }
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
