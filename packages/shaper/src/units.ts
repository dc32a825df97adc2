/**
 * Values with units as the command line takes them. Each parser returns the value in the unit
 * of the API (kbit/s, ms, bytes, a fraction) or throws a `TypeError` whose message says what was
 * expected, for the CLI to prefix with the argument's name.
 */
import { isIP } from 'node:net';
import type { Endpoint } from './options.js';

const NUMBER = String.raw`(\d+(?:\.\d+)?|\.\d+)`;

const RATE_UNITS: Record<string, number> = { bit: 0.001, kbit: 1, mbit: 1000, gbit: 1_000_000 };
const DURATION_UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };
const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1000,
  kib: 1024,
  mb: 1_000_000,
  mib: 1024 * 1024,
};

/** `2mbit`, `500kbit`, `1.5mbit/s`, `0` or `unlimited` → kbit/s. */
export function parseRate(text: string): number {
  const expected = 'a rate with a unit (bit, kbit, mbit or gbit), e.g. 2mbit or 500kbit, or 0 for unlimited';
  if (text === '0' || text.toLowerCase() === 'unlimited') return 0;
  const match = new RegExp(`^${NUMBER}\\s*(bit|kbit|mbit|gbit)(?:/s)?$`, 'i').exec(text.trim());
  if (match === null) throw new TypeError(`got "${text}", expected ${expected}`);
  return Number(match[1]) * RATE_UNITS[match[2]!.toLowerCase()]!;
}

/** `40ms`, `1.5s`, `500us`, `0` → ms. */
export function parseDuration(text: string): number {
  if (text === '0') return 0;
  const match = new RegExp(`^${NUMBER}\\s*(us|ms|s)$`, 'i').exec(text.trim());
  if (match === null)
    throw new TypeError(`got "${text}", expected a duration with a unit (ms or s), e.g. 40ms or 1.5s`);
  return Number(match[1]) * DURATION_UNITS[match[2]!.toLowerCase()]!;
}

/** `5%` or `0.05` → 0.05. */
export function parseFraction(text: string): number {
  const match = new RegExp(`^${NUMBER}\\s*(%?)$`).exec(text.trim());
  const value = match === null ? Number.NaN : Number(match[1]) / (match[2] === '%' ? 100 : 1);
  if (!(value >= 0 && value <= 1)) {
    throw new TypeError(
      `got "${text}", expected a percentage such as 5% or a fraction from 0 to 1 such as 0.05`,
    );
  }
  return value;
}

/** `64KiB`, `1MiB`, `65536`, `64kB` → bytes (a whole number). */
export function parseSize(text: string): number {
  const match = new RegExp(`^${NUMBER}\\s*([a-z]*)$`, 'i').exec(text.trim());
  const factor = match === null ? undefined : SIZE_UNITS[match[2]!.toLowerCase()];
  if (match === null || factor === undefined) {
    throw new TypeError(
      `got "${text}", expected a size in bytes, optionally with B, kB, KiB, MB or MiB, e.g. 64KiB`,
    );
  }
  return Math.round(Number(match[1]) * factor);
}

/** A plain non-negative number, e.g. a mean burst length `3` or `2.5`. */
export function parseNumber(text: string, expected: string): number {
  if (!new RegExp(`^${NUMBER}$`).test(text.trim()))
    throw new TypeError(`got "${text}", expected ${expected}`);
  return Number(text);
}

/** `127.0.0.1:4433` or `[::1]:4433` → an endpoint; names are refused (the relay never resolves). */
export function parseEndpoint(text: string): Endpoint {
  const expected = 'an address and port such as 127.0.0.1:4433 or [::1]:4433 (an IP address, not a name)';
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(text.trim());
  const address = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (address === undefined || isIP(address) === 0 || !(port >= 0 && port <= 65535)) {
    throw new TypeError(`got "${text}", expected ${expected}`);
  }
  return { address, port };
}
