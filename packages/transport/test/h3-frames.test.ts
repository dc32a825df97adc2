import { seededRandom } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import {
  encodeDataFrameHeader,
  encodeFrame,
  encodeUniStreamPreamble,
  encodeWebTransportBidiPreamble,
  FrameReader,
  type FrameReaderEvent,
  type FrameStreamRole,
  h3Frame,
  type OutgoingFrame,
  STREAM_TYPE,
} from '../src/h3/frames.js';
import { encodeHeaders } from '../src/h3/qpack.js';
import { encodeWebTransportResponse } from '../src/h3/request.js';
import { serverSettings } from '../src/h3/settings.js';
import { type UniStreamEvent, UniStreamReader } from '../src/h3/streams.js';
import { ascii, bytewise, concat, expectCode, hex, splitAt, toHex } from './support/h3-bytes.js';

/** Feeds `chunks` to a fresh reader, ends the stream, and merges adjacent data events. */
function readAll(
  role: FrameStreamRole,
  chunks: readonly Uint8Array[],
  maxPayload?: number,
): FrameReaderEvent[] {
  const reader = new FrameReader(maxPayload === undefined ? { role } : { role, maxPayload });
  const events = chunks.flatMap((chunk) => reader.push(chunk));
  reader.end();
  return mergeData(events);
}

function mergeData(events: readonly FrameReaderEvent[]): FrameReaderEvent[] {
  const out: FrameReaderEvent[] = [];
  for (const event of events) {
    const last = out.at(-1);
    if (
      last !== undefined &&
      (event.type === 'data' || event.type === 'webtransport-data') &&
      last.type === event.type
    ) {
      out[out.length - 1] = { type: event.type, payload: concat(last.payload, event.payload) };
    } else {
      out.push(
        event.type === 'data' || event.type === 'webtransport-data'
          ? { ...event, payload: event.payload.slice() }
          : event,
      );
    }
  }
  return out;
}

const SETTINGS_FRAME = encodeFrame({ type: 'settings', settings: serverSettings({ maxSessions: 1 }) });

describe('HTTP/3 frames: golden bytes', () => {
  it('encodes HEADERS with `:status 200`', () => {
    // 01: type HEADERS | 03: length | 00 00: QPACK prefix | d9: static index 25, `:status 200`.
    expect(toHex(encodeFrame({ type: 'headers', block: encodeHeaders([[':status', '200']]) }))).toBe(
      '01030000d9',
    );
  });

  it('encodes the WebTransport success response with the draft-02 header', () => {
    const expected = concat(
      hex('01 29'), //          HEADERS, length 41
      hex('00 00 d9'), //       QPACK prefix, `:status 200`
      hex('27 15'), //          literal name, not Huffman, length 7 + 21 = 28
      ascii('sec-webtransport-http3-draft'),
      hex('07'), //             value length 7
      ascii('draft02'),
    );
    expect(toHex(encodeWebTransportResponse(200))).toBe(toHex(expected));
    // A refusal carries no draft header; `:status 404` is static index 27 (db).
    expect(toHex(encodeWebTransportResponse(404))).toBe('01030000db');
  });

  it.each<[string, OutgoingFrame, string]>([
    ['DATA', { type: 'data', payload: ascii('hello') }, '00 05 68656c6c6f'],
    ['empty DATA', { type: 'data', payload: new Uint8Array(0) }, '00 00'],
    ['GOAWAY for stream 4', { type: 'goaway', id: 4 }, '07 01 04'],
    ['GOAWAY with a 2-byte id', { type: 'goaway', id: 400 }, '07 02 4190'],
    ['MAX_PUSH_ID 3', { type: 'max-push-id', pushId: 3 }, '0d 01 03'],
    ['CANCEL_PUSH 2', { type: 'cancel-push', pushId: 2 }, '03 01 02'],
    ['empty SETTINGS', { type: 'settings', settings: [] }, '04 00'],
  ])('encodes and decodes %s', (_label, frame, bytes) => {
    const encoded = encodeFrame(frame);
    expect(toHex(encoded)).toBe(toHex(hex(bytes)));
    const decoded = h3Frame.decode(encoded);
    expect(decoded.bytes).toBe(encoded.length);
    if (frame.type === 'settings') expect(decoded.value).toEqual({ type: 'settings', settings: new Map() });
    else expect(decoded.value).toEqual(frame);
  });

  it('writes DATA frame headers for payloads sent separately', () => {
    expect(toHex(encodeDataFrameHeader(5))).toBe('0005');
    expect(toHex(encodeDataFrameHeader(16384))).toBe('0080004000');
  });

  it('writes frames at an offset and refuses a buffer that is too small', () => {
    const frame: OutgoingFrame = { type: 'data', payload: ascii('abc') };
    const view = new DataView(new ArrayBuffer(h3Frame.byteLength(frame) + 2));
    expect(h3Frame.encodeInto(view, 2, frame)).toBe(5);
    expect(toHex(new Uint8Array(view.buffer))).toBe('00000003616263');
    expect(() => h3Frame.encodeInto(new DataView(new ArrayBuffer(4)), 0, frame)).toThrow(TypeError);
  });

  it('opens WebTransport streams with the signal or stream type and the session id', () => {
    // 40 41: 0x41 as a 2-byte varint (it is above 63) | 04: session id 4.
    expect(toHex(encodeWebTransportBidiPreamble(4))).toBe('404104');
    // 40 54: stream type 0x54 | 08: session id 8.
    expect(toHex(encodeUniStreamPreamble(STREAM_TYPE.WEBTRANSPORT, 8))).toBe('405408');
    expect(toHex(encodeUniStreamPreamble(STREAM_TYPE.QPACK_ENCODER))).toBe('02');
    expect(() => encodeUniStreamPreamble(STREAM_TYPE.WEBTRANSPORT)).toThrow(TypeError);
    expect(() => encodeUniStreamPreamble(STREAM_TYPE.CONTROL, 4)).toThrow(TypeError);
  });
});

describe('HTTP/3 frames: one-shot decoding', () => {
  it('skips unknown and reserved frame types', () => {
    expect(h3Frame.decode(hex('21 03 aabbcc'))).toEqual({ value: undefined, bytes: 5 });
    expect(h3Frame.decode(hex('ffffffffffffffff 01 00'))).toEqual({ value: undefined, bytes: 10 });
  });

  it('gives DATA and HEADERS payloads as views, not copies', () => {
    const bytes = hex('00 03 616263');
    const frame = h3Frame.decode(bytes).value;
    expect(frame?.type === 'data' && frame.payload.buffer === bytes.buffer).toBe(true);
  });

  // What the frame decoder and readers refuse, and with which code: h3-rejects.test.ts.
});

describe('FrameReader on a control stream', () => {
  const stream = concat(
    SETTINGS_FRAME,
    hex('21 02 abcd'), // reserved frame type 0x21, skipped
    hex('0d 01 07'), // MAX_PUSH_ID 7
    hex('07 01 00'), // GOAWAY 0
  );
  const expected: FrameReaderEvent[] = [
    { type: 'settings', settings: new Map(serverSettings({ maxSessions: 1 })) },
    { type: 'max-push-id', pushId: 7 },
    { type: 'goaway', id: 0 },
  ];

  it('yields the same frames whatever the chunking', () => {
    expect(readAll('control', [stream])).toEqual(expected);
    expect(readAll('control', bytewise(stream))).toEqual(expected);
    const random = seededRandom(9114);
    for (let round = 0; round < 200; round++) {
      const cuts = Array.from({ length: 4 }, () => Math.floor(random() * (stream.length + 1))).sort(
        (a, b) => a - b,
      );
      expect(readAll('control', splitAt(stream, cuts))).toEqual(expected);
    }
  });

  it('checks a SETTINGS length against the limit before buffering it', () => {
    // 04 | 80 01 00 00: length 65536, exactly the 64 KiB default, is accepted; one more is not.
    expect(() => new FrameReader({ role: 'control' }).push(hex('04 80010000'))).not.toThrow();
    expectCode(() => new FrameReader({ role: 'control' }).push(hex('04 80010001')), 'frame-error');
    expectCode(() => new FrameReader({ role: 'control', maxPayload: 16 }).push(hex('04 11')), 'frame-error');
    // A length beyond 2^53-1 is refused too.
    expectCode(() => new FrameReader({ role: 'control' }).push(hex('04 ffffffffffffffff')), 'frame-error');
  });

  it('is spent after an error', () => {
    const reader = new FrameReader({ role: 'control' });
    expectCode(() => reader.push(hex('07 01 00')), 'missing-settings');
    expectCode(() => reader.push(SETTINGS_FRAME), 'closed');
    expectCode(() => reader.end(), 'closed');
  });
});

describe('FrameReader on a request stream', () => {
  const headers = encodeFrame({ type: 'headers', block: hex('0000 d9') });
  const body = ascii('a body that arrives in pieces');
  const stream = concat(
    headers,
    hex('21 00'), // empty reserved frame
    encodeDataFrameHeader(10),
    body.subarray(0, 10),
    hex('00 00'), // empty DATA
    encodeDataFrameHeader(body.length - 10),
    body.subarray(10),
    hex('ffffffffffffffff 02 6162'), // unknown type beyond 2^53, skipped
    headers, // trailers
    hex('21 01 00'), // unknown frames may follow the trailers
  );

  it('passes DATA on as it arrives and yields HEADERS whole, whatever the chunking', () => {
    const expected: FrameReaderEvent[] = [
      { type: 'headers', block: hex('0000 d9') },
      { type: 'data', payload: body },
      { type: 'headers', block: hex('0000 d9') },
    ];
    expect(readAll('request', [stream])).toEqual(expected);
    expect(readAll('request', bytewise(stream))).toEqual(expected);
  });

  it('hands DATA out without copying or buffering it', () => {
    const chunk = concat(headers, encodeDataFrameHeader(1000), new Uint8Array(10));
    const events = new FrameReader({ role: 'request' }).push(chunk);
    const data = events[1];
    expect(data?.type === 'data' && data.payload.buffer === chunk.buffer && data.payload.length === 10).toBe(
      true,
    );
  });

  it('fails with frame-error when the stream ends inside a frame, at every offset (reader and one-shot)', () => {
    const boundaries = new Set([0]);
    let at = 0;
    while (at < stream.length) {
      at += h3Frame.decode(stream, at).bytes;
      boundaries.add(at);
    }
    for (let length = 0; length <= stream.length; length++) {
      const cut = stream.subarray(0, length);
      const reader = new FrameReader({ role: 'request' });
      reader.push(cut);
      const decodeAll = (): void => {
        for (let at = 0; at < cut.length; ) at += h3Frame.decode(cut, at).bytes;
      };
      if (boundaries.has(length)) {
        reader.end();
        decodeAll();
      } else {
        expectCode(() => reader.end(), 'frame-error');
        expectCode(decodeAll, 'frame-error');
      }
    }
  });

  it('turns into a pass-through when the stream opens with the WebTransport signal', () => {
    const stream = concat(encodeWebTransportBidiPreamble(4), ascii('hello, '), hex('0102'));
    const expected: FrameReaderEvent[] = [
      { type: 'webtransport-stream', sessionId: 4 },
      { type: 'webtransport-data', payload: concat(ascii('hello, '), hex('0102')) },
    ];
    expect(readAll('request', [stream])).toEqual(expected);
    expect(readAll('request', bytewise(stream))).toEqual(expected);
    const reader = new FrameReader({ role: 'request' });
    expect(reader.push(hex('40'))).toEqual([]);
    expect(reader.isWebTransport).toBe(false);
    expect(reader.push(hex('41 4004'))).toEqual([{ type: 'webtransport-stream', sessionId: 4 }]);
    expect(reader.isWebTransport).toBe(true);
    // Bytes that look like frames are data now.
    expect(mergeData(reader.push(hex('04 00')))).toEqual([
      { type: 'webtransport-data', payload: hex('0400') },
    ]);
    reader.end();
  });
});

describe('UniStreamReader', () => {
  function readUni(chunks: readonly Uint8Array[]): UniStreamEvent[] {
    const reader = new UniStreamReader();
    return chunks.flatMap((chunk) => reader.push(chunk));
  }

  it('reads a control stream into frames, whatever the chunking', () => {
    const stream = concat(hex('00'), SETTINGS_FRAME, hex('07 01 04'));
    const expected: UniStreamEvent[] = [
      { type: 'stream-type', kind: 'control', streamType: 0 },
      { type: 'settings', settings: new Map(serverSettings({ maxSessions: 1 })) },
      { type: 'goaway', id: 4 },
    ];
    expect(readUni([stream])).toEqual(expected);
    expect(readUni(bytewise(stream))).toEqual(expected);
  });

  it('applies the control stream rules', () => {
    expectCode(() => new UniStreamReader().push(hex('00 07 01 00')), 'missing-settings');
    expectCode(() => new UniStreamReader({ maxPayload: 4 }).push(hex('00 04 05')), 'frame-error');
  });

  it('reads a WebTransport stream as session id and raw data', () => {
    const stream = concat(encodeUniStreamPreamble(STREAM_TYPE.WEBTRANSPORT, 4), ascii('payload'));
    const merged = (events: UniStreamEvent[]): unknown[] => {
      const data = events.flatMap((e) => (e.type === 'webtransport-data' ? [...e.payload] : []));
      return [...events.filter((e) => e.type !== 'webtransport-data'), Uint8Array.from(data)];
    };
    const expected = [{ type: 'webtransport-stream', sessionId: 4 }, ascii('payload')];
    expect(merged(readUni([stream]))).toEqual(expected);
    expect(merged(readUni(bytewise(stream)))).toEqual(expected);
    const reader = new UniStreamReader();
    reader.push(stream);
    expect(reader.kind).toBe('webtransport');
    reader.end();
  });

  it('checks the QPACK encoder stream and drains the decoder stream', () => {
    expect(readUni([hex('02 20 20')])).toEqual([
      { type: 'stream-type', kind: 'qpack-encoder', streamType: 2 },
    ]);
    expectCode(() => new UniStreamReader().push(hex('02 c0 01 61')), 'qpack-stream-error');
    expect(readUni([hex('03 c1 41 01')])).toEqual([
      { type: 'stream-type', kind: 'qpack-decoder', streamType: 3 },
    ]);
  });

  it('drains unknown and reserved stream types, and refuses push streams', () => {
    expect(readUni([hex('21 ffff'), hex('00 01 02')])).toEqual([
      { type: 'stream-type', kind: 'unknown', streamType: 0x21 },
    ]);
    expect(readUni([hex('ffffffffffffffff 00')])).toEqual([
      { type: 'stream-type', kind: 'unknown', streamType: Number.MAX_SAFE_INTEGER },
    ]);
    expectCode(() => new UniStreamReader().push(hex('01 00')), 'stream-creation-error');
  });

  it('tolerates a stream that ends before its type, but not the end of a critical stream', () => {
    new UniStreamReader().end();
    const partial = new UniStreamReader();
    partial.push(hex('40'));
    partial.end();
    for (const start of ['00', '02', '03']) {
      const reader = new UniStreamReader();
      reader.push(hex(start));
      expectCode(() => reader.end(), 'critical-stream-closed');
    }
    const unknown = new UniStreamReader();
    unknown.push(hex('21'));
    unknown.end();
  });
});
