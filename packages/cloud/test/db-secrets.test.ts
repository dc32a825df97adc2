import { redactUrl } from '@svc/runtime';
import { describe, expect, it } from 'vitest';
import { hashSecret, newSecret } from '../src/db/index.js';

describe('hashSecret', () => {
  it('is the SHA-256 of the UTF-8 text, in lowercase hex', () => {
    // FIPS 180-2 test vector for "abc".
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashSecret('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});

describe('newSecret', () => {
  it('is the prefix followed by base64url of 32 random bytes by default', () => {
    const secret = newSecret('svc_key_');
    expect(secret).toMatch(/^svc_key_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice('svc_key_'.length), 'base64url')).toHaveLength(32);
  });

  it('takes another length, and never repeats', () => {
    expect(newSecret('inv_', 16)).toMatch(/^inv_[A-Za-z0-9_-]{22}$/);
    const seen = new Set(Array.from({ length: 1000 }, () => newSecret('')));
    expect(seen.size).toBe(1000);
  });

  it('refuses fewer than 16 bytes', () => {
    expect(() => newSecret('x', 8)).toThrow(TypeError);
    expect(() => newSecret('x', 16.5)).toThrow(TypeError);
  });
});

describe('redactUrl on database URLs (the one redaction of @svc/runtime)', () => {
  it('masks the credentials and password parameters, and keeps the rest', () => {
    expect(redactUrl('postgres://svc:s3cret@db.example:5432/svc')).toBe('postgres://***@db.example:5432/svc');
    expect(redactUrl('postgresql://db.example/svc?sslmode=require&password=s3cret&sslpassword=k3y')).toBe(
      'postgresql://db.example/svc?sslmode=require&password=***&sslpassword=***',
    );
    expect(redactUrl('postgres://db.example/svc')).toBe('postgres://db.example/svc');
  });

  it('masks the password even in text that is not a URL', () => {
    expect(redactUrl('postgres://svc:s3cret@[bad/svc')).not.toContain('s3cret');
  });
});
