import dgram from 'node:dgram';
import { describe, expect, it } from 'vitest';
import { MediaError } from '../src/errors.js';
import { RtpClock } from '../src/rtp/clock.js';
import { isRtcp, parseRtpPacket } from '../src/rtp/packet.js';
import { ReorderBuffer } from '../src/rtp/reorder.js';
import { parseRtpUrl, UdpRtpSource } from '../src/rtp/udp-source.js';
import type { RtpPacket } from '../src/types.js';

const hex = (s: string) =>
  Uint8Array.from(
    s
      .replace(/\s+/g, '')
      .match(/../g)!
      .map((h) => Number.parseInt(h, 16)),
  );

describe('parseRtpPacket', () => {
  it('reads the golden packet field by field', () => {
    const bytes = hex(
      [
        'b1', // V=2, P=1, X=1, CC=1
        'e0', // M=1, PT=96
        'fffe', // sequence number 65534
        '0001d4c0', // timestamp 120000
        'deadbeef', // SSRC
        '00000007', // CSRC 7
        'bede 0001', // extension profile 0xbede, length 1 word
        '11223344', // extension data
        'aabbcc', // payload
        '00 02', // padding: one zero byte and the count (2)
      ].join(''),
    );
    expect(parseRtpPacket(bytes)).toEqual({
      marker: true,
      payloadType: 96,
      sequenceNumber: 65534,
      timestamp: 120000,
      ssrc: 0xdeadbeef,
      payload: hex('aabbcc'),
    });
  });

  it('refuses every truncation and impossible field with malformed-rtp', () => {
    const good = hex('b1e0fffe0001d4c0deadbeef00000007bede000111223344aabbcc0002');
    for (let length = 0; length < 28; length++) {
      expect(() => parseRtpPacket(good.subarray(0, length)), `length ${length}`).toThrow(MediaError);
    }
    const v1 = good.slice();
    v1[0] = 0x71;
    expect(() => parseRtpPacket(v1)).toThrow(/version 1/);
    const badPadding = good.slice();
    badPadding[badPadding.length - 1] = 40;
    expect(() => parseRtpPacket(badPadding)).toThrow(/padding/);
  });

  it('recognises RTCP sharing the port', () => {
    expect(isRtcp(hex('80c80006'))).toBe(true); // sender report, PT 200
    expect(isRtcp(hex('80600001'))).toBe(false);
  });
});

describe('RtpClock', () => {
  it('keeps capture times increasing across the 32-bit wrap', () => {
    const clock = new RtpClock(90_000);
    const start = clock.toMicros(0xffff_fa24); // 1500 ticks before the wrap
    const after = clock.toMicros(0x0000_0bb8); // 3000 ticks after it: 4500 ticks = 50 ms later
    expect(Math.abs(after - start - 50_000)).toBeLessThanOrEqual(1);
    expect(() => new RtpClock(0)).toThrow(TypeError);
  });
});

function packet(seq: number, ssrc = 1, ts = seq * 3000): RtpPacket {
  return {
    marker: false,
    payloadType: 96,
    sequenceNumber: seq & 0xffff,
    timestamp: ts >>> 0,
    ssrc,
    payload: new Uint8Array([seq & 0xff]),
  };
}

function recorder() {
  const events: string[] = [];
  return {
    events,
    sink: {
      onPacket: (p: RtpPacket) => events.push(`p${p.sequenceNumber}`),
      onLoss: (n: number) => events.push(`loss${n}`),
      onRestart: (why: string) => events.push(`restart:${why}`),
    },
  };
}

describe('ReorderBuffer', () => {
  it('passes in-order packets straight through, across the sequence wrap', () => {
    const { events, sink } = recorder();
    const buffer = new ReorderBuffer(sink);
    for (const seq of [65534, 65535, 0, 1]) buffer.handlePacket(packet(seq), 0);
    expect(events).toEqual(['p65534', 'p65535', 'p0', 'p1']);
  });

  it('puts reordered packets back in place and drops duplicates', () => {
    const { events, sink } = recorder();
    const buffer = new ReorderBuffer(sink);
    for (const seq of [10, 12, 13, 11, 11, 12, 14]) buffer.handlePacket(packet(seq), 0);
    expect(events).toEqual(['p10', 'p11', 'p12', 'p13', 'p14']);
    expect(buffer.stats).toMatchObject({ duplicates: 2, lost: 0, reordered: 2 });
  });

  it('declares a gap lost after the delay, then releases what waited', () => {
    const { events, sink } = recorder();
    const buffer = new ReorderBuffer(sink, { maxDelayMs: 20 });
    buffer.handlePacket(packet(1), 0);
    buffer.handlePacket(packet(4), 5);
    buffer.handlePacket(packet(5), 6);
    expect(buffer.nextDeadlineMs()).toBe(25);
    buffer.handleTick(24);
    expect(events).toEqual(['p1']);
    buffer.handleTick(25);
    expect(events).toEqual(['p1', 'loss2', 'p4', 'p5']);
    buffer.handlePacket(packet(2), 30); // too late
    expect(buffer.stats).toMatchObject({ lost: 2, late: 1 });
  });

  it('declares a gap lost when the buffer fills', () => {
    const { events, sink } = recorder();
    const buffer = new ReorderBuffer(sink, { capacity: 2, maxDelayMs: 1000 });
    for (const seq of [1, 3, 4, 5]) buffer.handlePacket(packet(seq), 0);
    expect(events).toEqual(['p1', 'loss1', 'p3', 'p4', 'p5']);
  });

  it('treats an SSRC change or a wild sequence jump as a clean restart', () => {
    const { events, sink } = recorder();
    const buffer = new ReorderBuffer(sink);
    buffer.handlePacket(packet(100, 1), 0);
    buffer.handlePacket(packet(102, 1), 0);
    buffer.handlePacket(packet(7, 2), 0);
    buffer.handlePacket(packet(8, 2), 0);
    buffer.handlePacket(packet(40_000, 2), 0);
    expect(events).toEqual(['p100', 'restart:ssrc', 'p7', 'p8', 'restart:sequence', 'p40000']);
    expect(buffer.stats.restarts).toBe(2);
  });
});

describe('rtp:// inputs', () => {
  it('parses unicast, multicast and IPv6 endpoints', () => {
    expect(parseRtpUrl('rtp://127.0.0.1:5004')).toEqual({
      bindAddress: '127.0.0.1',
      port: 5004,
      rtcpPort: 5005,
      family: 4,
    });
    expect(parseRtpUrl('rtp://239.1.2.3:5004?interface=127.0.0.1')).toEqual({
      bindAddress: '0.0.0.0',
      port: 5004,
      rtcpPort: 5005,
      family: 4,
      group: '239.1.2.3',
      interfaceAddress: '127.0.0.1',
    });
    expect(parseRtpUrl('rtp://[::1]:6000')).toEqual({
      bindAddress: '::1',
      port: 6000,
      rtcpPort: 6001,
      family: 6,
    });
    expect(parseRtpUrl('rtp://[ff02::1234]:6000')).toMatchObject({
      bindAddress: '::',
      group: 'ff02::1234',
      family: 6,
    });
  });

  it('explains what is wrong with a bad rtp:// URL', () => {
    expect(() => parseRtpUrl('rtp://camera.local:5004')).toThrow(/IP address/);
    expect(() => parseRtpUrl('rtp://127.0.0.1')).toThrow(/port/);
    expect(() => parseRtpUrl('rtp://u:p@127.0.0.1:5004')).toThrow(/no credentials/);
    expect(() => parseRtpUrl('udp://127.0.0.1:5004')).toThrow(/rtp:\/\//);
    expect(() => parseRtpUrl('rtp://239.1.1.1:5004?interface=::1')).toThrow(/IPv4/);
    expect(() => parseRtpUrl('rtp://127.0.0.1:5004?rtcp=5004')).toThrow(/other than the RTP port 5004/);
    expect(() => parseRtpUrl('rtp://127.0.0.1:5004?rtcp=x')).toThrow(/rtcp=x must be a port/);
  });

  it('takes the RTCP port from ?rtcp=, none for ?rtcp=none, and none above port 65534', () => {
    expect(parseRtpUrl('rtp://127.0.0.1:5004?rtcp=7000').rtcpPort).toBe(7000);
    expect(parseRtpUrl('rtp://127.0.0.1:5004?rtcp=none').rtcpPort).toBeUndefined();
    expect(parseRtpUrl('rtp://127.0.0.1:65535').rtcpPort).toBeUndefined();
  });

  for (const [family, address] of [
    ['IPv4', '127.0.0.1'],
    ['IPv6', '::1'],
  ] as const) {
    for (const batchedReceives of [true, false]) {
      it(`receives a burst of datagrams on ${family} loopback, whole and in order (${batchedReceives ? 'recvmmsg' : 'dgram'})`, async () => {
        const received: Uint8Array[] = [];
        const probe = dgram.createSocket(family === 'IPv4' ? 'udp4' : 'udp6');
        await new Promise<void>((resolve) => probe.bind(0, address, resolve));
        const port = probe.address().port;
        probe.close();
        const source = await UdpRtpSource.open({
          url: family === 'IPv4' ? `rtp://${address}:${port}` : `rtp://[${address}]:${port}`,
          // Each packet is lent for the call only: kept as a copy.
          onRtp: (p) => received.push(p.slice()),
          batchedReceives,
        });
        expect(source.receiveMode).toBe(batchedReceives ? 'recvmmsg' : 'dgram');
        const sender = dgram.createSocket(family === 'IPv4' ? 'udp4' : 'udp6');
        const packet = (i: number) => {
          const p = new Uint8Array(1200).fill(i & 0xff);
          p.set([0x80, 96, i >> 8, i & 0xff]);
          return p;
        };
        try {
          for (let i = 0; i < 100; i++) sender.send(packet(i), port, address);
          while (received.length < 100) await new Promise((r) => setTimeout(r, 10));
          for (const [i, p] of received.entries()) expect(Buffer.from(p).equals(packet(i))).toBe(true);
          expect(source.port).toBe(port);
        } finally {
          sender.close();
          await source.close();
        }
      });
    }
  }

  it('says when the port is taken', async () => {
    const taken = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => taken.bind(0, '127.0.0.1', resolve));
    try {
      await expect(
        UdpRtpSource.open({ url: `rtp://127.0.0.1:${taken.address().port}`, onRtp: () => {} }),
      ).rejects.toThrow(/already in use/);
    } finally {
      taken.close();
    }
  });
});
