import { createHash, randomBytes } from 'node:crypto';

/**
 * SHA-256 of `secret` as lowercase hex: what the database keeps of API keys and invitation
 * tokens (`secret_hash`, `token_hash`). These secrets are 32 random bytes, so a fast hash is
 * enough; a password hash would add nothing.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * A new random secret: `prefix` followed by `bytes` random bytes in base64url (no padding),
 * e.g. `newSecret('svc_key_')`.
 */
export function newSecret(prefix: string, bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < 16) {
    throw new TypeError(`newSecret: bytes must be an integer of at least 16, got ${bytes}`);
  }
  return prefix + randomBytes(bytes).toString('base64url');
}
