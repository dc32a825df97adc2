import { seededRandom as prng } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import { MediaError } from '../src/errors.js';
import { RTSP_LIMITS, RtspMessageParser } from '../src/rtsp/message.js';
import { decodeSpropParameterSets, findVideoMedia, parseSdp, resolveControlUrl } from '../src/sdp.js';

const ascii = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'latin1'));

function frame(channel: number, length: number): Uint8Array {
  const out = new Uint8Array(4 + length);
  out.set([0x24, channel, length >> 8, length & 0xff]);
  for (let i = 0; i < length; i++) out[4 + i] = (i * 37) & 0xff;
  out[4] = 0x80;
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

const SDP = [
  'v=0',
  'o=- 16911870122323389914 1 IN IP4 127.0.0.1',
  's=Session streamed with GStreamer',
  't=0 0',
  'a=control:*',
  'm=video 0 RTP/AVP 96',
  'c=IN IP4 0.0.0.0',
  'a=rtpmap:96 H264/90000',
  'a=fmtp:96 packetization-mode=1;sprop-parameter-sets=Z0LAFdoFB+wFqDAwNSgAAAMACAAAAwHkeLF1,aM48gA==;profile-level-id=42c015',
  'a=control:stream=0',
  'm=audio 0 RTP/AVP 0 8',
  'a=control:rtsp://192.168.0.90/axis-media/media.amp/trackID=2',
  'm=application 0 RTP/AVP 107',
  'a=rtpmap:107 vnd.onvif.metadata/90000',
  '',
].join('\r\n');

/** Response streams seen on real connections: answers, bodies, interleaved RTP and RTCP. */
const STREAMS: readonly Uint8Array[] = [
  concat([
    ascii(
      'RTSP/1.0 200 OK\r\nCSeq: 1\r\nPublic: OPTIONS, DESCRIBE, GET_PARAMETER, PLAY, SETUP, TEARDOWN\r\n\r\n',
    ),
    ascii(
      `RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Type: application/sdp\r\nContent-Base: rtsp://127.0.0.1:8554/h264/\r\nContent-Length: ${SDP.length}\r\n\r\n${SDP}`,
    ),
  ]),
  concat([
    ascii(
      'RTSP/1.0 200 OK\r\nCSeq: 4\r\nSession: 8JQ1oCgWUzBAVaTf;timeout=60\r\nRTP-Info: url=rtsp://x/stream=0;seq=1\r\n\r\n',
    ),
    frame(0, 1200),
    frame(1, 28),
    frame(0, 12),
    ascii('GET_PARAMETER rtsp://cam RTSP/1.0\r\nCSeq: 5\r\n\r\n'),
    frame(0, 300),
  ]),
  ascii(
    'RTSP/1.0 401 Unauthorized\r\nCSeq: 3\r\nWWW-Authenticate: Basic realm="cam"\r\nWWW-Authenticate: Digest realm="cam", nonce="abc"\r\n\r\n',
  ),
  ascii('RTSP/1.0 302 Found\nCSeq: 2\nLocation: rtsp://other/x\n  continued\n\n'),
];

/** Byte sequences that steer mutations into interesting parser states. */
const TOKENS = [
  '\r\n',
  '\r\n\r\n',
  '\n\n',
  '$',
  'Content-Length: ',
  'Content-Length: 99999999\r\n',
  'Content-Length: 1048577',
  'RTSP/1.0 ',
  ' 200 OK',
  '\x00',
  '\xff',
  ':',
  ' ',
  '\t',
  '65535',
  '-1',
].map(ascii);

function mutate(input: Uint8Array, random: () => number): Uint8Array {
  let bytes = input;
  const rounds = 1 + Math.floor(random() * 4);
  const at = (): number => Math.floor(random() * (bytes.length + 1));
  for (let r = 0; r < rounds; r++) {
    const choice = Math.floor(random() * 6);
    if (choice === 0 && bytes.length > 0) {
      const copy = bytes.slice();
      copy[Math.min(at(), copy.length - 1)] = Math.floor(random() * 256);
      bytes = copy;
    } else if (choice === 1) {
      const token = TOKENS[Math.floor(random() * TOKENS.length)]!;
      const i = at();
      bytes = concat([bytes.subarray(0, i), token, bytes.subarray(i)]);
    } else if (choice === 2) {
      const i = at();
      const j = Math.min(bytes.length, i + Math.floor(random() * 64));
      bytes = concat([bytes.subarray(0, i), bytes.subarray(j)]);
    } else if (choice === 3) {
      const i = at();
      const j = Math.min(bytes.length, i + Math.floor(random() * 128));
      bytes = concat([bytes.subarray(0, j), bytes.subarray(i, j), bytes.subarray(j)]);
    } else if (choice === 4) {
      bytes = bytes.subarray(0, at());
    } else {
      // An interleaved header with a random channel and length.
      const i = at();
      const header = new Uint8Array([
        0x24,
        Math.floor(random() * 256),
        Math.floor(random() * 256),
        Math.floor(random() * 256),
      ]);
      bytes = concat([bytes.subarray(0, i), header, bytes.subarray(i)]);
    }
  }
  return bytes;
}

describe('fuzzing', () => {
  it('RtspMessageParser throws nothing but MediaError on 100 000 mutated byte streams split at random points', () => {
    const random = prng(0x5eed_0001);
    let accepted = 0;
    let rejected = 0;
    let messages = 0;
    for (let n = 0; n < 100_000; n++) {
      const stream = mutate(STREAMS[n % STREAMS.length]!, random);
      const parser = new RtspMessageParser();
      const cuts = [0, stream.length];
      for (let c = Math.floor(random() * 4); c > 0; c--)
        cuts.push(Math.floor(random() * (stream.length + 1)));
      cuts.sort((a, b) => a - b);
      try {
        for (let i = 1; i < cuts.length; i++) {
          for (const message of parser.push(stream.subarray(cuts[i - 1], cuts[i]))) {
            messages++;
            if (message.kind === 'interleaved') expect(message.payload.length).toBeLessThanOrEqual(65535);
            else expect(message.body.length).toBeLessThanOrEqual(RTSP_LIMITS.maxBodyBytes);
          }
        }
        accepted++;
      } catch (err) {
        if (!(err instanceof MediaError) || err.code !== 'malformed-rtsp') {
          throw new Error(
            `seed stream ${n} threw ${String(err)}: ${JSON.stringify(Buffer.from(stream).toString('latin1'))}`,
          );
        }
        rejected++;
      }
      expect(parser.bufferedBytes).toBeLessThanOrEqual(stream.length);
    }
    // Both paths were exercised.
    expect(accepted).toBeGreaterThan(10_000);
    expect(rejected).toBeGreaterThan(10_000);
    expect(messages).toBeGreaterThan(50_000);
  });

  it('parseSdp throws nothing but MediaError on 100 000 mutated descriptions', () => {
    const random = prng(0x5eed_0002);
    const source = ascii(SDP);
    let accepted = 0;
    let rejected = 0;
    for (let n = 0; n < 100_000; n++) {
      const text = Buffer.from(mutate(source, random)).toString('latin1');
      try {
        const sdp = parseSdp(text);
        for (const media of sdp.media) {
          resolveControlUrl('rtsp://cam/live', media.control);
          const sprop = media.fmtp.get('sprop-parameter-sets');
          if (sprop !== undefined) decodeSpropParameterSets(sprop);
        }
        findVideoMedia(sdp);
        accepted++;
      } catch (err) {
        if (!(err instanceof MediaError) || err.code !== 'malformed-sdp') {
          throw new Error(`description ${n} threw ${String(err)}: ${JSON.stringify(text)}`);
        }
        rejected++;
      }
    }
    expect(accepted).toBeGreaterThan(10_000);
    expect(rejected).toBeGreaterThan(10_000);
  });
});
