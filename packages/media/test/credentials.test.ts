import { describe, expect, it } from 'vitest';
import { applyRtspCredentials } from '../src/credentials.js';

describe('applyRtspCredentials', () => {
  it('puts percent-encoded credentials into a URL without userinfo', () => {
    expect(
      applyRtspCredentials('rtsp://cam:554/live', {
        SVC_RTSP_USER: 'admin',
        SVC_RTSP_PASSWORD: 'p@ss:w/rd %',
      }),
    ).toBe('rtsp://admin:p%40ss%3Aw%2Frd%20%25@cam:554/live');
  });

  it('round-trips through the URL parser to the original values', () => {
    const url = new URL(
      applyRtspCredentials('rtsp://cam/x', { SVC_RTSP_USER: 'ü s#r', SVC_RTSP_PASSWORD: 'a@b:c?d' }),
    );
    expect(decodeURIComponent(url.username)).toBe('ü s#r');
    expect(decodeURIComponent(url.password)).toBe('a@b:c?d');
    expect(url.hostname).toBe('cam');
    expect(url.pathname).toBe('/x');
  });

  it('keeps credentials already in the URL', () => {
    const url = 'rtsp://mine:own@cam/live';
    expect(applyRtspCredentials(url, { SVC_RTSP_USER: 'other', SVC_RTSP_PASSWORD: 'x' })).toBe(url);
  });

  it('changes nothing when the variables are unset or empty', () => {
    expect(applyRtspCredentials('rtsp://cam/live', {})).toBe('rtsp://cam/live');
    expect(applyRtspCredentials('rtsp://cam/live', { SVC_RTSP_USER: '', SVC_RTSP_PASSWORD: '' })).toBe(
      'rtsp://cam/live',
    );
  });

  it('uses the user alone, or the password with an empty user', () => {
    expect(applyRtspCredentials('rtsp://cam/live', { SVC_RTSP_USER: 'admin' })).toBe('rtsp://admin@cam/live');
    expect(applyRtspCredentials('rtsp://cam/live', { SVC_RTSP_PASSWORD: 'pw' })).toBe('rtsp://:pw@cam/live');
  });

  it('does not mistake an @ in the path or query for userinfo', () => {
    expect(applyRtspCredentials('rtsp://cam/a@b', { SVC_RTSP_USER: 'u', SVC_RTSP_PASSWORD: 'p' })).toBe(
      'rtsp://u:p@cam/a@b',
    );
  });

  it('leaves input without scheme:// alone', () => {
    expect(applyRtspCredentials('cam/live', { SVC_RTSP_USER: 'u' })).toBe('cam/live');
  });
});
