/**
 * Self-signed certificates for the WebTransport server, and their rotation.
 *
 * @packageDocumentation
 */
export {
  CertificateRotation,
  type CertificateRotationOptions,
  type CertificateSource,
} from './rotation.js';
export {
  type CertificateMaterial,
  certificateSha256,
  createSelfSignedCertificate,
  DEFAULT_VALID_DAYS,
  MAX_PINNED_VALIDITY_MS,
  type SelfSignedCertificateOptions,
} from './self-signed.js';
