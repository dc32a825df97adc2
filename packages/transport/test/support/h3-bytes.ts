import { expect } from 'vitest';
import { TransportError, type TransportErrorCode } from '../../src/errors.js';

/** Bytes from a hex string; spaces, newlines and `|` separators are ignored. */
export function hex(text: string): Uint8Array {
  const clean = text.replace(/[\s|]+/g, '');
  if (clean.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(clean)) throw new TypeError(`not hex: ${text}`);
  return Uint8Array.from({ length: clean.length / 2 }, (_, i) =>
    Number.parseInt(clean.slice(2 * i, 2 * i + 2), 16),
  );
}

/** Lowercase hex of `bytes`, no separators. */
export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** ASCII/Latin-1 text as bytes. */
export function ascii(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** The parts, one after the other, in a new array. */
export function concat(...parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Runs `action` and returns the {@link TransportError} it throws; fails the test otherwise. */
export function transportErrorOf(action: () => unknown): TransportError {
  try {
    action();
  } catch (error) {
    if (error instanceof TransportError) return error;
    throw new Error(`expected a TransportError, got ${String(error)}`, { cause: error });
  }
  throw new Error('expected a TransportError, but nothing was thrown');
}

/** Asserts that `action` throws a {@link TransportError} with `code`. */
export function expectCode(action: () => unknown, code: TransportErrorCode): void {
  expect(transportErrorOf(action).code).toBe(code);
}

/** Splits `bytes` into pieces at the given cut points (sorted, within range). */
export function splitAt(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  for (const cut of cuts) {
    out.push(bytes.subarray(start, cut));
    start = cut;
  }
  out.push(bytes.subarray(start));
  return out;
}

/** Splits `bytes` into single bytes. */
export function bytewise(bytes: Uint8Array): Uint8Array[] {
  return Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
}
