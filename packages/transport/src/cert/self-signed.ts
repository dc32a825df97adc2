// @peculiar/x509 resolves its algorithm providers through tsyringe, which needs the Reflect
// metadata API; the polyfill must be loaded before the library.
import 'reflect-metadata';
import { createHash, KeyObject, randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';

/** One day in milliseconds. */
const DAY_MS = 86_400_000;

/**
 * Longest validity Chromium accepts for a certificate pinned through `serverCertificateHashes`
 * (notAfter - notBefore must not exceed 14 days). Certificates made here stay strictly below it.
 */
export const MAX_PINNED_VALIDITY_MS = 14 * DAY_MS;

/** Default lifetime of a generated certificate, in days. */
export const DEFAULT_VALID_DAYS = 10;

/** Default back-dating of `notBefore`, so a peer whose clock is slightly behind still accepts it. */
const DEFAULT_BACKDATE_MS = 60_000;

/** Names every certificate carries in its subjectAltName, in addition to the caller's. */
const DEFAULT_ALT_NAMES = ['localhost', '127.0.0.1', '::1'] as const;

/** ECDSA over P-256 with SHA-256: the only key type Chromium pins with `serverCertificateHashes`. */
const SIGNING_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A certificate with its private key, as a QUIC server needs it and a browser pins it. */
export interface CertificateMaterial {
  /** The certificate, PEM (`-----BEGIN CERTIFICATE-----`). */
  readonly certPem: string;
  /** The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). */
  readonly keyPem: string;
  /** SHA-256 of the DER certificate: the value `serverCertificateHashes` pins. */
  readonly sha256: Uint8Array;
  /** Start of validity as written in the certificate (whole seconds). */
  readonly notBefore: Date;
  /** End of validity as written in the certificate (whole seconds). */
  readonly notAfter: Date;
}

/** Options of {@link createSelfSignedCertificate}. */
export interface SelfSignedCertificateOptions {
  /** Subject and issuer common name, for example the robot id. */
  commonName: string;
  /**
   * Lifetime in days counted from `now`; defaults to 10. Together with the back-dating it must
   * stay below 14 days, Chromium's limit for pinned certificates.
   */
  validDays?: number;
  /** Extra DNS names or IP addresses for the subjectAltName (localhost, 127.0.0.1 and ::1 are always present). */
  altNames?: readonly string[];
  /** Issue time in milliseconds since the epoch; defaults to `Date.now()`. Injected by tests. */
  now?: number;
  /** How far `notBefore` lies before `now`, in milliseconds; defaults to 60 000. */
  backdateMs?: number;
}

/**
 * Creates a self-signed ECDSA P-256 / SHA-256 server certificate that Chromium accepts through
 * `serverCertificateHashes`: valid less than 14 days, subjectAltName with localhost, 127.0.0.1,
 * ::1 and the given names, extended key usage serverAuth.
 *
 * @throws TypeError when the options are invalid or the validity would reach 14 days.
 */
export async function createSelfSignedCertificate(
  options: SelfSignedCertificateOptions,
): Promise<CertificateMaterial> {
  const {
    commonName,
    validDays = DEFAULT_VALID_DAYS,
    altNames = [],
    backdateMs = DEFAULT_BACKDATE_MS,
  } = options;
  if (typeof commonName !== 'string' || commonName.length === 0) {
    throw new TypeError('commonName must be a non-empty string');
  }
  if (!(Number.isFinite(validDays) && validDays > 0)) {
    throw new TypeError(`validDays must be a positive number, got ${validDays}`);
  }
  if (!(Number.isFinite(backdateMs) && backdateMs >= 0)) {
    throw new TypeError(`backdateMs must be a non-negative number, got ${backdateMs}`);
  }
  const now = options.now ?? Date.now();
  const notBefore = new Date(now - backdateMs);
  const notAfter = new Date(now + validDays * DAY_MS);
  assertPinnableValidity(notBefore, notAfter);

  const keys = (await webcrypto.subtle.generateKey(SIGNING_ALGORITHM, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerialNumber(),
      name: [{ CN: [commonName] }],
      notBefore,
      notAfter,
      keys,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension(subjectAltNames(altNames)),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  const der = new Uint8Array(cert.rawData);
  // The encoded times drop milliseconds; report what the certificate really says.
  assertPinnableValidity(cert.notBefore, cert.notAfter);
  const keyPem = KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' });
  return Object.freeze({
    certPem: cert.toString('pem'),
    keyPem: typeof keyPem === 'string' ? keyPem : keyPem.toString('utf8'),
    sha256: certificateSha256(der),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
  });
}

/** SHA-256 of a DER certificate, the value a browser pins with `serverCertificateHashes`. */
export function certificateSha256(der: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(der).digest());
}

/** Throws when a validity period would be refused by Chromium for a pinned certificate. */
function assertPinnableValidity(notBefore: Date, notAfter: Date): void {
  const span = notAfter.getTime() - notBefore.getTime();
  if (!(span > 0 && span < MAX_PINNED_VALIDITY_MS)) {
    throw new TypeError(
      `certificate validity must be positive and below 14 days (Chromium's limit for pinned ` +
        `certificates), got ${(span / DAY_MS).toFixed(3)} days`,
    );
  }
}

/** A random positive 128-bit serial number, hex encoded (RFC 5280 allows up to 20 octets). */
function randomSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  bytes[0] |= 0x01;
  return bytes.toString('hex');
}

/** The subjectAltName entries: the defaults first, then the caller's names, without duplicates. */
function subjectAltNames(extra: readonly string[]): x509.JsonGeneralName[] {
  const seen = new Set<string>();
  const names: x509.JsonGeneralName[] = [];
  for (const raw of [...DEFAULT_ALT_NAMES, ...extra]) {
    if (typeof raw !== 'string' || raw.length === 0) {
      throw new TypeError(`altNames entries must be non-empty strings, got ${String(raw)}`);
    }
    const key = raw.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    names.push({ type: isIP(raw) === 0 ? 'dns' : 'ip', value: raw });
  }
  return names;
}
