/**
 * Capture times from RTCP sender reports: the mapping of RTP time to the camera's wall clock
 * (extrapolated at the clock rate, across the RTP timestamp's wrap), the fallback to arrival
 * (no report, or a camera clock more than 5 s off), and the pipeline that times every access unit
 * with it on fake time.
 */
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import { RtpPipeline } from '../src/ingest.js';
import { CaptureClock } from '../src/rtp/capture-clock.js';
import type { SenderReport } from '../src/rtp/rtcp.js';
import type { CaptureTime } from '../src/types.js';
import { concat, hex } from './support/rtp-builders.js';

const WALL = Date.UTC(2026, 0, 1);

const report = (rtpTimestamp: number, wallMs: number, ssrc = 7): SenderReport => ({
  ssrc,
  wallMs,
  rtpTimestamp,
  packetCount: 0,
  octetCount: 0,
});

describe('CaptureClock', () => {
  it('maps an RTP timestamp through the latest sender report at the clock rate', () => {
    const clock = new CaptureClock({ clockRate: 90_000 });
    clock.handleSenderReport(report(1_000_000, WALL));
    // 3000 ticks at 90 kHz after the report: 33.3 ms later; 9000 before it: 100 ms earlier.
    expect(clock.captureTime(7, 1_003_000, WALL + 40)).toEqual({
      wallMs: WALL + 3000 / 90,
      source: 'sender-report',
    });
    expect(clock.captureTime(7, 991_000, WALL)).toEqual({ wallMs: WALL - 100, source: 'sender-report' });
    // A newer report replaces the older one.
    clock.handleSenderReport(report(2_000_000, WALL + 5));
    expect(clock.captureTime(7, 2_000_000, WALL + 10).wallMs).toBe(WALL + 5);
  });

  it('maps across the wrap of the 32-bit RTP timestamp, both ways', () => {
    const clock = new CaptureClock({ clockRate: 90_000 });
    clock.handleSenderReport(report(0xffff_fe00, WALL));
    // 0x200 + 0x100 ticks later, past the wrap.
    expect(clock.captureTime(7, 0x100, WALL).wallMs).toBeCloseTo(WALL + (0x300 * 1000) / 90_000, 9);
    clock.handleSenderReport(report(0x10, WALL));
    expect(clock.captureTime(7, 0xffff_fff0, WALL).wallMs).toBeCloseTo(WALL - (0x20 * 1000) / 90_000, 9);
  });

  it('uses the stream clock rate it was given (an 8 kHz clock ticks 8 times a ms)', () => {
    const clock = new CaptureClock({ clockRate: 8000 });
    clock.handleSenderReport(report(0, WALL));
    expect(clock.captureTime(7, 8000, WALL + 1000).wallMs).toBe(WALL + 1000);
  });

  it('falls back to arrival without a report of the stream’s own source', () => {
    const clock = new CaptureClock({ clockRate: 90_000 });
    expect(clock.captureTime(7, 123, WALL + 3)).toEqual({ wallMs: WALL + 3, source: 'arrival' });
    clock.handleSenderReport(report(0, WALL, 8));
    expect(clock.captureTime(7, 123, WALL + 3)).toEqual({ wallMs: WALL + 3, source: 'arrival' });
    expect(clock.captureTime(undefined, 123, WALL + 3).source).toBe('arrival');
    expect(clock.stats).toMatchObject({ senderReports: 1, mapped: 0, arrival: 3 });
  });

  it('a camera clock more than 5 s off the arrival falls back to arrival, and says so once', () => {
    const logger = memoryLogger();
    const clock = new CaptureClock({ clockRate: 90_000, logger });
    clock.handleSenderReport(report(0, WALL - 60_000));
    for (let i = 0; i < 3; i++) {
      expect(clock.captureTime(7, i * 3000, WALL + i * 33)).toEqual({
        wallMs: WALL + i * 33,
        source: 'arrival',
      });
    }
    // Within 5 s it is believed.
    clock.handleSenderReport(report(0, WALL - 4_900));
    expect(clock.captureTime(7, 0, WALL).source).toBe('sender-report');
    const warnings = logger.records.filter((r) => r.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/more than 5 s from their arrival: its clock is not synchronised/);
    expect(clock.stats.unsynchronised).toBe(3);
  });

  it('refuses a clock rate that is not a positive number', () => {
    expect(() => new CaptureClock({ clockRate: 0 })).toThrow(TypeError);
  });
});

/** One H.264 access unit as a single-NAL RTP packet with the marker bit: an IDR slice. */
function rtpPacket(sequence: number, timestamp: number, ssrc = 7): Uint8Array {
  const header = new Uint8Array(12);
  const view = new DataView(header.buffer);
  view.setUint8(0, 0x80);
  view.setUint8(1, 0x80 | 96);
  view.setUint16(2, sequence);
  view.setUint32(4, timestamp);
  view.setUint32(8, ssrc);
  return concat([header, hex('65 88 84 00 33 ff')]);
}

/** A sender report of SSRC 7 saying `rtpTimestamp` was at `wallMs`. */
function senderReport(rtpTimestamp: number, wallMs: number): Uint8Array {
  const bytes = new Uint8Array(28);
  const view = new DataView(bytes.buffer);
  view.setUint8(0, 0x80);
  view.setUint8(1, 200);
  view.setUint16(2, 6);
  view.setUint32(4, 7);
  const ntp = wallMs / 1000 + 2_208_988_800;
  view.setUint32(8, Math.floor(ntp));
  view.setUint32(12, Math.round((ntp % 1) * 2 ** 32));
  view.setUint32(16, rtpTimestamp);
  return bytes;
}

describe('RtpPipeline capture times', () => {
  const setUp = () => {
    const clock = new FakeClock(1000, WALL);
    const logger = memoryLogger();
    const times: CaptureTime[] = [];
    const pipeline = new RtpPipeline({
      codec: 'avc1.42c00d',
      family: 'h264',
      clock,
      logger,
      onAccessUnit: (_au, capture) => times.push(capture),
    });
    return { clock, logger, times, pipeline };
  };

  it('without sender reports, each access unit is timed by the arrival of its first packet', () => {
    const { clock, times, pipeline } = setUp();
    pipeline.handleRtp(rtpPacket(1, 3000), clock.now());
    clock.advance(33);
    pipeline.handleRtp(rtpPacket(2, 6000), clock.now());
    expect(times).toEqual([
      { wallMs: WALL, source: 'arrival' },
      { wallMs: WALL + 33, source: 'arrival' },
    ]);
  });

  it('with sender reports (on the RTCP port or multiplexed on the RTP port), by their mapping', () => {
    const { clock, times, pipeline } = setUp();
    // The camera says RTP time 0 was 20 ms before now on its wall clock.
    pipeline.handleRtcp(senderReport(0, WALL - 20), clock.now());
    pipeline.handleRtp(rtpPacket(1, 900), clock.now()); // 10 ms after RTP time 0
    pipeline.handleRtp(senderReport(9000, WALL + 100), clock.now()); // rtcp-mux: a newer report
    pipeline.handleRtp(rtpPacket(2, 9900), clock.now());
    expect(times.map((t) => t.source)).toEqual(['sender-report', 'sender-report']);
    expect(times[0]!.wallMs).toBeCloseTo(WALL - 10, 3);
    expect(times[1]!.wallMs).toBeCloseTo(WALL + 110, 3);
    expect(pipeline.stats.rtcp).toBe(2);
  });

  it('malformed RTCP is counted and dropped, logged at most once a minute, never thrown', () => {
    const { clock, logger, times, pipeline } = setUp();
    for (let i = 0; i < 50; i++) {
      pipeline.handleRtcp(hex('80c8 0006 0000'), clock.now());
      clock.advance(100);
    }
    clock.advance(60_000);
    pipeline.handleRtcp(hex('40c8 0000'), clock.now());
    pipeline.handleRtp(rtpPacket(1, 0), clock.now());
    expect(pipeline.stats.malformedRtcp).toBe(51);
    const lines = logger.records.filter((r) => /malformed RTCP/.test(r.message));
    expect(lines).toHaveLength(2);
    expect(times).toHaveLength(1);
  });
});
