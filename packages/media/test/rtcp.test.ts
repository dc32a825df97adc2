/**
 * RTCP sender reports (RFC 3550 §6.4.1): golden bytes built from the RFC's layout, compound
 * packets, every malformation the parser names, truncation at every offset, fuzzed input.
 */
import { randomBytes, seededRandom } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import { isMediaError } from '../src/errors.js';
import { ntpToUnixMs, parseRtcpCompound } from '../src/rtp/rtcp.js';
import { concat, hex } from './support/rtp-builders.js';

/** 2026-01-01T00:00:00.500Z as NTP: seconds since 1900 and the fraction of a second (1/2^32). */
const NTP_SECONDS = Date.UTC(2026, 0, 1) / 1000 + 2_208_988_800;

/** A sender report without report blocks, field by field. */
const SR = hex(
  [
    '80', // V=2, P=0, RC=0
    'c8', // PT=200 (SR)
    '0006', // length: 7 words - 1
    'deadbeef', // SSRC of sender
    NTP_SECONDS.toString(16).padStart(8, '0'), // NTP seconds
    '80000000', // NTP fraction: 0.5 s
    '00015f90', // RTP timestamp 90 000
    '0000002a', // sender's packet count 42
    '00012345', // sender's octet count 74 565
  ].join(''),
);

/** An SDES with one CNAME item "cam" (the usual second packet of a compound). */
const SDES = hex(
  [
    '81', // V=2, P=0, SC=1
    'ca', // PT=202 (SDES)
    '0003', // length: 4 words - 1
    'deadbeef', // SSRC
    '01', // CNAME
    '03', // length 3
    '63616d', // "cam"
    '000000', // end of items, then null octets to the 32-bit boundary
  ].join(''),
);

/** A receiver report with no blocks. */
const RR = hex('80c90001 deadbeef');

const expectMalformed = (bytes: Uint8Array, message: RegExp) => {
  let thrown: unknown;
  try {
    parseRtcpCompound(bytes);
  } catch (err) {
    thrown = err;
  }
  expect(isMediaError(thrown, 'malformed-rtcp'), String(thrown)).toBe(true);
  expect((thrown as Error).message).toMatch(message);
};

describe('RTCP sender reports', () => {
  it('reads every field of a sender report: NTP time as Unix ms, RTP time, counts', () => {
    expect(parseRtcpCompound(SR)).toEqual({
      packets: 1,
      senderReports: [
        {
          ssrc: 0xdeadbeef,
          wallMs: Date.UTC(2026, 0, 1) + 500,
          rtpTimestamp: 90_000,
          packetCount: 42,
          octetCount: 74_565,
        },
      ],
    });
  });

  it('walks a compound packet: SR with a report block, SDES, then a second SR', () => {
    const block = hex('00000001 00000000 00000000 00000000 00000000 00000000');
    const withBlock = concat([SR, block]);
    withBlock[0] = 0x81; // RC=1
    withBlock[3] = 0x0c; // 13 words - 1
    const second = SR.slice();
    second.set(hex('cafef00d'), 4);
    const compound = parseRtcpCompound(concat([withBlock, SDES, second]));
    expect(compound.packets).toBe(3);
    expect(compound.senderReports.map((r) => r.ssrc)).toEqual([0xdeadbeef, 0xcafef00d]);
  });

  it('a receiver report alone carries no sender report', () => {
    expect(parseRtcpCompound(concat([RR, SDES]))).toEqual({ packets: 2, senderReports: [] });
  });

  it('padding on the last packet is skipped; the sender report inside still reads', () => {
    const padded = concat([SR, hex('00000004')]);
    padded[0] = 0xa0; // P=1
    padded[3] = 0x07; // 8 words - 1
    expect(parseRtcpCompound(padded).senderReports[0]?.rtpTimestamp).toBe(90_000);
  });

  it('names each malformation with the code malformed-rtcp', () => {
    expectMalformed(hex('80c8'), /shorter than the 4-byte RTCP header/);
    const v1 = SR.slice();
    v1[0] = 0x40;
    expectMalformed(v1, /version 1, expected 2/);
    const long = SR.slice();
    long[3] = 0x07;
    expectMalformed(long, /says 32 bytes, 28 are left/);
    expectMalformed(concat([SR, hex('80c9')]), /2 bytes left after packet 1/);
    const shortSr = hex('80c80001 deadbeef');
    expectMalformed(shortSr, /sender report of 8 bytes is shorter than the 28/);
    const claimsBlocks = SR.slice();
    claimsBlocks[0] = 0x81; // RC=1 without the 24 bytes
    expectMalformed(claimsBlocks, /shorter than the 52 its 1 report blocks need/);
    const paddedFirst = concat([SR, SDES]);
    paddedFirst[0] = 0xa0;
    expectMalformed(paddedFirst, /packet 0 is padded but not the last one/);
    const zeroPadding = SR.slice();
    zeroPadding[0] = 0xa0;
    zeroPadding[27] = 0;
    expectMalformed(zeroPadding, /padding of 0 bytes is impossible/);
  });

  it('a compound cut anywhere but between two packets is malformed', () => {
    const compound = concat([SR, SDES, RR]);
    const boundaries = new Set([SR.length, SR.length + SDES.length]);
    for (let cut = 0; cut < compound.length; cut++) {
      const part = compound.subarray(0, cut);
      if (boundaries.has(cut)) expect(() => parseRtcpCompound(part)).not.toThrow();
      else expect(() => parseRtcpCompound(part), `cut at ${cut}`).toThrow(/malformed RTCP/);
    }
  });

  it('fuzzed datagrams either parse or throw malformed-rtcp, nothing else', () => {
    const random = seededRandom(16);
    for (let i = 0; i < 5000; i++) {
      const bytes = randomBytes(random, Math.floor(random() * 80));
      // Half of them look like RTCP: version 2, a known packet type.
      if (i % 2 === 0 && bytes.length > 1) {
        bytes[0] = 0x80 | (bytes[0]! & 0x3f);
        bytes[1] = 200 + (bytes[1]! % 5);
      }
      try {
        parseRtcpCompound(bytes);
      } catch (err) {
        expect(isMediaError(err, 'malformed-rtcp'), String(err)).toBe(true);
      }
    }
  });

  it('NTP time maps to Unix time, and past the 2036 era rollover', () => {
    expect(ntpToUnixMs(2_208_988_800, 0)).toBe(0);
    expect(ntpToUnixMs(NTP_SECONDS, 0x4000_0000)).toBe(Date.UTC(2026, 0, 1) + 250);
    // Era 1: NTP seconds wrapped to small numbers on 2036-02-07T06:28:16Z.
    expect(ntpToUnixMs(10, 0)).toBe(Date.UTC(2036, 1, 7, 6, 28, 26));
  });
});
