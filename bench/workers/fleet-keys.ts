/** Keys of the signalling benchmark's simulated robots, derived from their index. */
import { createHash, createPrivateKey, type KeyObject } from 'node:crypto';

/** The PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** Robot `i`'s id. */
export function benchRobotId(i: number): string {
  return `bench-${i}`;
}

/** Robot `i`'s private key and its raw public key in base64url. */
export function benchRobotKey(i: number): { key: KeyObject; publicKey: string } {
  const seed = createHash('sha256').update(`svc-bench-robot-${i}`).digest();
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
  return { key, publicKey: String(key.export({ format: 'jwk' }).x) };
}
