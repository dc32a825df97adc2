import { describe, expect, it } from 'vitest';
import { parseDuration, parseEndpoint, parseFraction, parseRate, parseSize } from '../src/units.js';

describe('command-line units', () => {
  it('rates in bit/s multiples, returned in kbit/s', () => {
    expect(parseRate('2mbit')).toBe(2000);
    expect(parseRate('500kbit')).toBe(500);
    expect(parseRate('1.5Mbit/s')).toBe(1500);
    expect(parseRate('1gbit')).toBe(1_000_000);
    expect(parseRate('0')).toBe(0);
    expect(parseRate('unlimited')).toBe(0);
    expect(() => parseRate('2000')).toThrow(/got "2000", expected a rate with a unit/);
    expect(() => parseRate('2mbps')).toThrow(/e\.g\. 2mbit/);
  });

  it('durations in ms or s, returned in ms', () => {
    expect(parseDuration('40ms')).toBe(40);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('500us')).toBe(0.5);
    expect(parseDuration('0')).toBe(0);
    expect(() => parseDuration('40')).toThrow(/got "40", expected a duration with a unit/);
  });

  it('fractions as a percentage or from 0 to 1', () => {
    expect(parseFraction('5%')).toBeCloseTo(0.05);
    expect(parseFraction('0.05')).toBe(0.05);
    expect(parseFraction('100%')).toBe(1);
    expect(() => parseFraction('5')).toThrow(/got "5", expected a percentage such as 5%/);
    expect(() => parseFraction('150%')).toThrow(/150%/);
    expect(() => parseFraction('-1%')).toThrow(/-1%/);
  });

  it('sizes in bytes, decimal or binary multiples', () => {
    expect(parseSize('64KiB')).toBe(65_536);
    expect(parseSize('65536')).toBe(65_536);
    expect(parseSize('64kB')).toBe(64_000);
    expect(parseSize('1MiB')).toBe(1_048_576);
    expect(() => parseSize('64 KB/s')).toThrow(/expected a size in bytes/);
  });

  it('endpoints as IPv4 or bracketed IPv6 with a port, never a name', () => {
    expect(parseEndpoint('127.0.0.1:4433')).toEqual({ address: '127.0.0.1', port: 4433 });
    expect(parseEndpoint('[::1]:0')).toEqual({ address: '::1', port: 0 });
    expect(() => parseEndpoint('localhost:4433')).toThrow(/an IP address, not a name/);
    expect(() => parseEndpoint('127.0.0.1')).toThrow(/got "127.0.0.1"/);
    expect(() => parseEndpoint('127.0.0.1:70000')).toThrow(/70000/);
    expect(() => parseEndpoint('999.0.0.1:1')).toThrow(/999/);
  });
});
