import 'reflect-metadata';
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { FakeClock } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import {
  type CertificateMaterial,
  CertificateRotation,
  createSelfSignedCertificate,
  MAX_PINNED_VALIDITY_MS,
  type SelfSignedCertificateOptions,
} from '../src/cert/index.js';

const DAY = 86_400_000;

/** Resolves with the next (current, previous) pair given to `onRotate`. */
function rotations(): {
  onRotate: (current: CertificateMaterial, previous: CertificateMaterial) => void;
  next: () => Promise<[CertificateMaterial, CertificateMaterial]>;
} {
  const queue: [CertificateMaterial, CertificateMaterial][] = [];
  const waiters: ((pair: [CertificateMaterial, CertificateMaterial]) => void)[] = [];
  return {
    onRotate: (current, previous) => {
      const waiter = waiters.shift();
      if (waiter !== undefined) waiter([current, previous]);
      else queue.push([current, previous]);
    },
    next: () => {
      const queued = queue.shift();
      if (queued !== undefined) return Promise.resolve(queued);
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

describe('createSelfSignedCertificate', () => {
  it('makes an ECDSA P-256 / SHA-256 certificate that node:crypto parses and that matches its key', async () => {
    const cert = await createSelfSignedCertificate({ commonName: 'robot-42' });
    const parsed = new X509Certificate(cert.certPem);

    expect(parsed.publicKey.asymmetricKeyType).toBe('ec');
    expect(parsed.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(parsed.subject).toBe('CN=robot-42');
    expect(parsed.issuer).toBe('CN=robot-42');
    expect(parsed.verify(parsed.publicKey)).toBe(true);
    expect(parsed.checkPrivateKey(createPrivateKey(cert.keyPem))).toBe(true);
    expect(parsed.ca).toBe(false);
    expect(parsed.keyUsage).toContain('1.3.6.1.5.5.7.3.1'); // extended key usage serverAuth
    const peculiar = new x509.X509Certificate(cert.certPem);
    expect(peculiar.signatureAlgorithm).toMatchObject({ name: 'ECDSA', hash: { name: 'SHA-256' } });
    expect(cert.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });

  it('is valid less than 14 days, 10 days by default, and reports the encoded dates', async () => {
    const now = Date.UTC(2030, 0, 1, 12, 0, 0, 500);
    const cert = await createSelfSignedCertificate({ commonName: 'robot', now });
    const parsed = new X509Certificate(cert.certPem);

    expect(new Date(parsed.validFrom).getTime()).toBe(cert.notBefore.getTime());
    expect(new Date(parsed.validTo).getTime()).toBe(cert.notAfter.getTime());
    const span = cert.notAfter.getTime() - cert.notBefore.getTime();
    expect(span).toBeLessThan(14 * DAY);
    expect(span).toBeLessThan(MAX_PINNED_VALIDITY_MS);
    // 60 s back-dated, 10 days ahead; the certificate keeps whole seconds only.
    expect(cert.notBefore.getTime()).toBe(Date.UTC(2030, 0, 1, 11, 59, 0));
    expect(cert.notAfter.getTime()).toBe(Date.UTC(2030, 0, 11, 12, 0, 0));
  });

  it('refuses a validity Chromium would refuse', async () => {
    await expect(createSelfSignedCertificate({ commonName: 'r', validDays: 14 })).rejects.toThrow(TypeError);
    await expect(
      createSelfSignedCertificate({ commonName: 'r', validDays: 13.9, backdateMs: DAY }),
    ).rejects.toThrow(/below 14 days/);
    await expect(createSelfSignedCertificate({ commonName: 'r', validDays: 0 })).rejects.toThrow(TypeError);
    await expect(createSelfSignedCertificate({ commonName: '' })).rejects.toThrow(TypeError);
    const longest = await createSelfSignedCertificate({ commonName: 'r', validDays: 13.9 });
    expect(longest.notAfter.getTime() - longest.notBefore.getTime()).toBeLessThan(14 * DAY);
  });

  it('lists localhost, 127.0.0.1, ::1 and the given names in subjectAltName', async () => {
    const cert = await createSelfSignedCertificate({
      commonName: 'robot',
      altNames: ['robot-7.local', '192.0.2.10', '2001:db8::7', 'LOCALHOST'],
    });
    const san = new X509Certificate(cert.certPem).subjectAltName?.split(', ') ?? [];

    expect(san).toEqual([
      'DNS:localhost',
      'IP Address:127.0.0.1',
      'IP Address:0:0:0:0:0:0:0:1',
      'DNS:robot-7.local',
      'IP Address:192.0.2.10',
      'IP Address:2001:DB8:0:0:0:0:0:7',
    ]);
  });

  it('gives the SHA-256 of the DER certificate, the value serverCertificateHashes pins', async () => {
    const cert = await createSelfSignedCertificate({ commonName: 'robot' });
    const der = new X509Certificate(cert.certPem).raw;

    expect(hex(cert.sha256)).toBe(createHash('sha256').update(der).digest('hex'));
    expect(cert.sha256.byteLength).toBe(32);
  });

  it('makes a different key and serial number every time', async () => {
    const [a, b] = await Promise.all([
      createSelfSignedCertificate({ commonName: 'robot' }),
      createSelfSignedCertificate({ commonName: 'robot' }),
    ]);
    expect(a.keyPem).not.toBe(b.keyPem);
    expect(new X509Certificate(a.certPem).serialNumber).not.toBe(new X509Certificate(b.certPem).serialNumber);
  });
});

describe('CertificateRotation', () => {
  const start = Date.UTC(2030, 5, 1);

  it('rotates at half the lifetime and announces the current and the previous hash until it expires', async () => {
    const clock = new FakeClock(0, start);
    const seen = rotations();
    const rotation = await CertificateRotation.start({
      commonName: 'robot',
      validDays: 10,
      clock,
      onRotate: seen.onRotate,
    });
    const first = rotation.current();
    expect(rotation.hashes().map(hex)).toEqual([hex(first.sha256)]);
    expect(rotation.nextRotationAt()).toBe(
      first.notBefore.getTime() + (first.notAfter.getTime() - first.notBefore.getTime()) / 2,
    );

    clock.advance(rotation.nextRotationAt() - clock.wallNow() - 1);
    expect(rotation.current()).toBe(first);

    clock.advance(1);
    const [second, previous] = await seen.next();
    expect(previous).toBe(first);
    expect(rotation.current()).toBe(second);
    expect(second.notBefore.getTime()).toBe(clock.wallNow() - 60_000);
    expect(rotation.hashes().map(hex)).toEqual([hex(second.sha256), hex(first.sha256)]);
    expect(rotation.previous()).toBe(first);

    // The next rotation follows the new certificate's own half-life, before the first expires.
    expect(rotation.nextRotationAt()).toBeLessThan(first.notAfter.getTime());
    clock.advance(rotation.nextRotationAt() - clock.wallNow() - 1);
    expect(rotation.hashes().map(hex)).toEqual([hex(second.sha256), hex(first.sha256)]);
    clock.advance(1);
    const [third, beforeThird] = await seen.next();
    expect(beforeThird).toBe(second);
    expect(rotation.hashes().map(hex)).toEqual([hex(third.sha256), hex(second.sha256)]);

    // Stopped, nothing rotates any more; an expired previous certificate is no longer announced.
    rotation.stop();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(second.notAfter.getTime() - clock.wallNow() - 1);
    expect(rotation.hashes()).toHaveLength(2);
    clock.advance(1);
    expect(rotation.previous()).toBeUndefined();
    expect(rotation.hashes().map(hex)).toEqual([hex(third.sha256)]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('retries a failed rotation after the retry delay and reports the failure', async () => {
    const clock = new FakeClock(0, start);
    const seen = rotations();
    let reportFailure: (err: unknown) => void = () => {};
    const failure = new Promise<unknown>((resolve) => {
      reportFailure = resolve;
    });
    let failNext = false;
    const generate = (options: SelfSignedCertificateOptions): Promise<CertificateMaterial> => {
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error('no entropy today'));
      }
      return createSelfSignedCertificate(options);
    };
    const rotation = await CertificateRotation.start({
      commonName: 'robot',
      clock,
      generate,
      retryDelayMs: 5_000,
      onRotate: seen.onRotate,
      onError: (err) => reportFailure(err),
    });
    const first = rotation.current();

    failNext = true;
    clock.advance(rotation.nextRotationAt() - clock.wallNow());
    expect(await failure).toEqual(new Error('no entropy today'));
    expect(rotation.current()).toBe(first);

    clock.advance(4_999);
    expect(rotation.current()).toBe(first);
    clock.advance(1);
    const [second] = await seen.next();
    expect(rotation.current()).toBe(second);
    expect(second).not.toBe(first);
    rotation.stop();
  });

  it('rotates on demand, and stop() cancels the schedule', async () => {
    const clock = new FakeClock(0, start);
    const rotation = await CertificateRotation.start({ commonName: 'robot', clock });
    const first = rotation.current();
    const [a, b] = await Promise.all([rotation.rotateNow(), rotation.rotateNow()]);
    expect(a).toBe(b);
    expect(rotation.previous()).toBe(first);
    expect(clock.pendingTimers).toBe(1);
    rotation.stop();
    expect(clock.pendingTimers).toBe(0);
    await expect(rotation.rotateNow()).rejects.toThrow(/stopped/);
  });

  it('refuses a rotation point outside (0, 1)', async () => {
    await expect(CertificateRotation.start({ commonName: 'robot', rotateAt: 1 })).rejects.toThrow(TypeError);
    await expect(CertificateRotation.start({ commonName: 'robot', rotateAt: 0 })).rejects.toThrow(TypeError);
  });
});
