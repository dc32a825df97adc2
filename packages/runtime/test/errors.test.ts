import { describe, expect, it } from 'vitest';
import { CodedError, codedErrorGuard } from '../src/index.js';

type WireCode = 'short-datagram' | 'bad-version';
class WireError extends CodedError<WireCode> {}

type MediaCode = 'timeout' | 'bad-sdp';
class MediaError extends CodedError<MediaCode> {
  override readonly name = 'MediaError';
}

const isWireError = codedErrorGuard(WireError);
const isMediaError = codedErrorGuard(MediaError);

describe('CodedError', () => {
  it('carries its code, message and cause', () => {
    const cause = new RangeError('offset 12 past the end');
    const error = new WireError('short-datagram', 'datagram of 3 bytes', { cause });
    expect(error.code).toBe('short-datagram');
    expect(error.message).toBe('datagram of 3 bytes');
    expect(error.cause).toBe(cause);
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(CodedError);
    expect(error.stack).toContain('datagram of 3 bytes');
  });

  it('has no cause unless given one', () => {
    expect('cause' in new WireError('bad-version', 'version 9')).toBe(false);
  });

  it('is named after the subclass, or what the subclass names itself', () => {
    expect(new WireError('bad-version', 'x').name).toBe('WireError');
    expect(new MediaError('timeout', 'x').name).toBe('MediaError');
    expect(String(new WireError('bad-version', 'version 9'))).toBe('WireError: version 9');
  });

  it('is not an instance of a sibling subclass', () => {
    const wire = new WireError('bad-version', 'x');
    const media = new MediaError('timeout', 'x');
    expect(wire instanceof MediaError).toBe(false);
    expect(media instanceof WireError).toBe(false);
  });
});

describe('codedErrorGuard', () => {
  it('recognises its own class, with or without a code', () => {
    const error = new WireError('short-datagram', 'x');
    expect(isWireError(error)).toBe(true);
    expect(isWireError(error, 'short-datagram')).toBe(true);
    expect(isWireError(error, 'bad-version')).toBe(false);
  });

  it('refuses other classes, plain errors, look-alikes and non-errors', () => {
    expect(isWireError(new MediaError('timeout', 'x'))).toBe(false);
    expect(isMediaError(new WireError('bad-version', 'x'))).toBe(false);
    const lookAlike = Object.assign(new Error('x'), { code: 'short-datagram', name: 'WireError' });
    expect(isWireError(lookAlike)).toBe(false);
    expect(isWireError(lookAlike, 'short-datagram')).toBe(false);
    for (const value of [undefined, null, 'short-datagram', { code: 'short-datagram' }]) {
      expect(isWireError(value)).toBe(false);
    }
  });

  it('narrows the type so the code can be branched on', () => {
    const error: unknown = new MediaError('bad-sdp', 'no m= line');
    if (!isMediaError(error)) throw new Error('expected a MediaError');
    const code: MediaCode = error.code;
    expect(code).toBe('bad-sdp');
  });
});
