/**
 * Checks an Ed25519 public key as a robot presents it at enrolment (RFC 8032, section 5.1.3):
 * canonical base64url, a point on the curve, not of small order.
 */
import { createPublicKey } from 'node:crypto';

/** The field prime 2^255 - 19. */
const P = 2n ** 255n - 19n;
/** The curve constant d = -121665 / 121666 mod p. */
const D = mod(-121665n * inverse(121666n));
/** A square root of -1 mod p: 2^((p-1)/4). */
const SQRT_M1 = power(2n, (P - 1n) / 4n);

function mod(a: bigint): bigint {
  const r = a % P;
  return r >= 0n ? r : r + P;
}

function power(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = mod(base);
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return result;
}

function inverse(a: bigint): bigint {
  return power(a, P - 2n);
}

/**
 * Why `key` is not a usable Ed25519 public key, or `undefined` when it is: 32 bytes in canonical
 * base64url without padding, the encoding of a point on the curve, and not a point of small order
 * (such a "key" verifies signatures nobody made). A key generated on a robot always passes.
 */
export function ed25519KeyProblem(key: string): string | undefined {
  const expected = "expected the robot's raw 32-byte Ed25519 public key in base64url without padding";
  if (!/^[A-Za-z0-9_-]{43}$/.test(key)) return `${expected} (43 characters)`;
  const bytes = Buffer.from(key, 'base64url');
  if (bytes.length !== 32 || bytes.toString('base64url') !== key) return `${expected}; it is not canonical`;
  const point = decodePoint(bytes);
  if (point === undefined) return 'is 32 bytes but not an Ed25519 public key (not a point on the curve)';
  if (isSmallOrder(point)) return 'is an Ed25519 point of small order, which is not a usable public key';
  try {
    createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key }, format: 'jwk' });
  } catch {
    return 'is not accepted as an Ed25519 public key';
  }
  return undefined;
}

/** A point in extended coordinates (X, Y, Z, T) with x = X/Z, y = Y/Z, xy = T/Z. */
type Point = readonly [bigint, bigint, bigint, bigint];

/** Decodes a compressed point: y little-endian, the top bit the sign of x. */
function decodePoint(bytes: Uint8Array): Point | undefined {
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(bytes[i]!);
  const sign = y >> 255n;
  y &= (1n << 255n) - 1n;
  if (y >= P) return undefined;
  const u = mod(y * y - 1n);
  const v = mod(D * y * y + 1n);
  const v3 = mod(v * v * v);
  let x = mod(u * v3 * power(u * v3 * v3 * v, (P - 5n) / 8n));
  const vx2 = mod(v * x * x);
  if (vx2 === mod(-u)) x = mod(x * SQRT_M1);
  else if (vx2 !== u) return undefined;
  if (x === 0n && sign === 1n) return undefined;
  if ((x & 1n) !== sign) x = P - x;
  return [x, y, 1n, mod(x * y)];
}

/** Doubling on the twisted Edwards curve with a = -1 (extended coordinates). */
function double([x1, y1, z1]: Point): Point {
  const a = mod(x1 * x1);
  const b = mod(y1 * y1);
  const c = mod(2n * z1 * z1);
  const e = mod((x1 + y1) * (x1 + y1) - a - b);
  const g = mod(b - a);
  const f = mod(g - c);
  const h = mod(-a - b);
  return [mod(e * f), mod(g * h), mod(f * g), mod(e * h)];
}

/** Whether 8·P is the neutral element (0, 1): the eight points of small order. */
function isSmallOrder(point: Point): boolean {
  const [x, y, z] = double(double(double(point)));
  return x === 0n && y === z;
}
