import { describe, expect, it } from 'vitest';
import { decodeRtcClose, encodeRtcClose } from '../src/index.js';

describe('the WebRTC session channel', () => {
  it('carries a close with its code and its reason, cut to 512 characters', () => {
    expect(decodeRtcClose(encodeRtcClose({ code: 4003, reason: 'token revoked' }))).toEqual({
      code: 4003,
      reason: 'token revoked',
    });
    expect(decodeRtcClose(encodeRtcClose({ code: 0, reason: 'x'.repeat(600) }))?.reason).toHaveLength(512);
  });

  it('ignores what is not a close, and reads a malformed close as a clean one without a reason', () => {
    for (const text of ['', 'not json', '42', 'null', '{"type":"open"}', '[1]']) {
      expect(decodeRtcClose(text)).toBeUndefined();
    }
    expect(decodeRtcClose('{"type":"close","code":-1,"reason":7}')).toEqual({ code: 0, reason: '' });
    expect(decodeRtcClose('{"type":"close","code":1.5}')).toEqual({ code: 0, reason: '' });
  });
});
