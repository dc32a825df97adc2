import { type Random, randomBytes, seededRandom } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import { TransportError } from '../src/errors.js';
import { CapsuleReader, capsule, encodeCapsule } from '../src/h3/capsules.js';
import { decodeDatagram, encodeDatagram } from '../src/h3/datagram.js';
import {
  encodeControlStreamPreamble,
  encodeDataFrameHeader,
  encodeFrame,
  encodeWebTransportBidiPreamble,
  FrameReader,
  type FrameStreamRole,
  h3Frame,
} from '../src/h3/frames.js';
import { huffmanDecode } from '../src/h3/huffman.js';
import { decodeHeaders, encodeHeaders, QpackEncoderStreamReader } from '../src/h3/qpack.js';
import { encodeWebTransportResponse, parseWebTransportRequest } from '../src/h3/request.js';
import { serverSettings } from '../src/h3/settings.js';
import { UniStreamReader } from '../src/h3/streams.js';
import { readVarint, readVarintBig, readVarintId } from '../src/h3/varint.js';
import { ascii, concat, hex, toHex } from './support/h3-bytes.js';
import { huffmanEncodeText } from './support/h3-huffman.js';

/** Byte sequences that steer mutations into interesting states: varint edges, known types, GREASE. */
const TOKENS: readonly Uint8Array[] = [
  '00',
  '3f',
  '40',
  '7fff',
  '80',
  'bfffffff',
  'c0',
  'ffffffffffffffff',
  'c000000040000000',
  '4041',
  '4054',
  '01',
  '04',
  '07',
  '21',
  '6843',
  '800078ae',
  'ff',
  '1f',
  '5f',
  '2f',
  'd9',
].map(hex);

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function mutate(input: Uint8Array, random: Random): Uint8Array {
  let bytes = input;
  const rounds = 1 + Math.floor(random() * 4);
  const at = (): number => Math.floor(random() * (bytes.length + 1));
  for (let r = 0; r < rounds; r++) {
    const choice = Math.floor(random() * 6);
    if (choice === 0 && bytes.length > 0) {
      const copy = bytes.slice();
      const i = Math.min(at(), copy.length - 1);
      copy[i] = copy[i]! ^ (1 << Math.floor(random() * 8));
      bytes = copy;
    } else if (choice === 1 && bytes.length > 0) {
      const copy = bytes.slice();
      copy[Math.min(at(), copy.length - 1)] = Math.floor(random() * 256);
      bytes = copy;
    } else if (choice === 2) {
      const i = at();
      bytes = concat(bytes.subarray(0, i), pick(random, TOKENS), bytes.subarray(i));
    } else if (choice === 3) {
      const i = at();
      bytes = concat(
        bytes.subarray(0, i),
        bytes.subarray(Math.min(bytes.length, i + Math.floor(random() * 16))),
      );
    } else if (choice === 4) {
      const i = at();
      const j = Math.min(bytes.length, i + Math.floor(random() * 32));
      bytes = concat(bytes.subarray(0, j), bytes.subarray(i, j), bytes.subarray(j));
    } else {
      bytes = bytes.subarray(0, at());
    }
  }
  return bytes;
}

/** Up to four random cut points, sorted, so a stream is fed in pieces. */
function chunks(bytes: Uint8Array, random: Random): Uint8Array[] {
  const cuts = Array.from({ length: Math.floor(random() * 5) }, () =>
    Math.floor(random() * (bytes.length + 1)),
  );
  cuts.sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let start = 0;
  for (const cut of cuts) {
    out.push(bytes.subarray(start, cut));
    start = cut;
  }
  out.push(bytes.subarray(start));
  return out;
}

/** Runs `body` on `count` inputs; lets only TransportError escape, and counts both outcomes. */
function fuzz(
  count: number,
  seed: number,
  input: (random: Random, n: number) => Uint8Array,
  body: (bytes: Uint8Array, random: Random) => void,
): { accepted: number; rejected: number } {
  const random = seededRandom(seed);
  let accepted = 0;
  let rejected = 0;
  for (let n = 0; n < count; n++) {
    const bytes = input(random, n);
    try {
      body(bytes, random);
      accepted++;
    } catch (error) {
      if (!(error instanceof TransportError)) {
        throw new Error(`input ${n} (${toHex(bytes)}) threw ${String(error)}`, { cause: error });
      }
      rejected++;
    }
  }
  return { accepted, rejected };
}

const SETTINGS = serverSettings({ maxSessions: 1 });
const CONNECT_BLOCK = concat(
  hex('0000 cf d7 50 8a 089d5c0b8170dc69a659 51 83 63c27f'),
  hex('2f 00 b95d8749c87a3f 89 f058d360ea4567b13f'),
  hex('5f 4b 8f 9d29aee30c044eae05c0b86e3c0781'),
);
const QPACK_SEEDS: readonly Uint8Array[] = [
  CONNECT_BLOCK,
  // The CONNECT a real Chromium 156 sent (see h3-qpack.test.ts).
  hex(
    '0000 d7 cf 508b089d5c0b8170dc6dd034f7 c1 2f00b95d8749c87a3f89f058d360ea4567b13f ' +
      '2f0e4148b782c69b07522b3d895a74a6b65692c1ca900b0131 5f4b909d29aee30c044eae05c0b86e34d32eb7',
  ),
  hex('0000 510b 2f69 6e64 6578 2e68 746d 6c'),
  encodeHeaders([
    [':status', '200'],
    ['sec-webtransport-http3-draft', 'draft02'],
  ]),
  concat(
    hex('0000 5f 50 ce'),
    huffmanEncodeText('Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/150'),
  ),
];
const FRAME_SEEDS: readonly [FrameStreamRole, Uint8Array][] = [
  [
    'control',
    concat(encodeFrame({ type: 'settings', settings: SETTINGS }), hex('21 02 abcd 07 01 00 0d 01 07')),
  ],
  [
    'request',
    concat(
      encodeFrame({ type: 'headers', block: CONNECT_BLOCK }),
      encodeDataFrameHeader(12),
      encodeCapsule({ type: 'close-session', code: 1, reason: '' }),
      hex('0000'),
    ),
  ],
  ['request', concat(encodeWebTransportBidiPreamble(4), ascii('hello'))],
  ['request', concat(encodeWebTransportResponse(200), hex('00 03 616263'))],
];
const CAPSULE_SEEDS: readonly Uint8Array[] = [
  concat(
    encodeCapsule({ type: 'datagram', payload: ascii('one') }),
    encodeCapsule({ type: 'drain-session' }),
    hex('21 03 aabbcc'),
    encodeCapsule({ type: 'close-session', code: 42, reason: 'done' }),
  ),
  encodeCapsule({ type: 'close-session', code: 7, reason: 'é'.repeat(20) }),
];
const UNI_SEEDS: readonly Uint8Array[] = [
  encodeControlStreamPreamble(SETTINGS),
  hex('02 20 20'),
  hex('03 00 c1'),
  concat(hex('4054 04'), ascii('data')),
  hex('21 0102'),
];

describe('h3 fuzzing: only TransportError escapes', () => {
  it('varint readers on 20 000 random byte strings', () => {
    const result = fuzz(
      20_000,
      0x5eed_0101,
      (random) => randomBytes(random, Math.floor(random() * 10)),
      (bytes) => {
        const offset = bytes.length > 0 ? Math.floor(bytes.length / 3) : 0;
        readVarintBig(bytes, offset);
        readVarintId(bytes, offset);
        readVarint(bytes, offset);
      },
    );
    expect(result.accepted).toBeGreaterThan(5_000);
    expect(result.rejected).toBeGreaterThan(1_000);
  });

  it('FrameReader and h3Frame.decode on 30 000 mutated streams, fed in random pieces', () => {
    let events = 0;
    const result = fuzz(
      30_000,
      0x5eed_0102,
      (random, n) => mutate(FRAME_SEEDS[n % FRAME_SEEDS.length]![1], random),
      (bytes, random) => {
        const role = random() < 0.5 ? 'control' : 'request';
        try {
          for (let at = 0; at < bytes.length; ) at += h3Frame.decode(bytes, at).bytes;
        } catch (error) {
          if (!(error instanceof TransportError)) throw error;
        }
        const reader = new FrameReader({ role, maxPayload: 4096 });
        for (const piece of chunks(bytes, random)) events += reader.push(piece).length;
        reader.end();
      },
    );
    expect(result.accepted).toBeGreaterThan(3_000);
    expect(result.rejected).toBeGreaterThan(3_000);
    expect(events).toBeGreaterThan(10_000);
  });

  it('QPACK decoding and the request check on 30 000 mutated field sections', () => {
    let requests = 0;
    let refusals = 0;
    const result = fuzz(
      30_000,
      0x5eed_0103,
      (random, n) => mutate(QPACK_SEEDS[n % QPACK_SEEDS.length]!, random),
      (bytes) => {
        // The check never throws: it answers with the request or a problem.
        if (parseWebTransportRequest(decodeHeaders(bytes, { maxFieldSectionSize: 4096 })).ok) requests++;
        else refusals++;
      },
    );
    expect(result.accepted).toBeGreaterThan(3_000);
    expect(result.rejected).toBeGreaterThan(3_000);
    expect(requests).toBeGreaterThan(100);
    expect(refusals).toBeGreaterThan(500);
  });

  it('QPACK encoder stream and Huffman decoder on 15 000 random inputs', () => {
    const result = fuzz(
      15_000,
      0x5eed_0104,
      (random) => randomBytes(random, Math.floor(random() * 24)),
      (bytes, random) => {
        if (random() < 0.5) huffmanDecode(bytes, 32);
        else new QpackEncoderStreamReader().push(bytes);
      },
    );
    expect(result.accepted).toBeGreaterThan(500);
    expect(result.rejected).toBeGreaterThan(5_000);
  });

  it('CapsuleReader and capsule.decode on 20 000 mutated capsule streams, fed in random pieces', () => {
    let capsules = 0;
    const result = fuzz(
      20_000,
      0x5eed_0105,
      (random, n) => mutate(CAPSULE_SEEDS[n % CAPSULE_SEEDS.length]!, random),
      (bytes, random) => {
        try {
          for (let at = 0; at < bytes.length; ) at += capsule.decode(bytes, at).bytes;
        } catch (error) {
          if (!(error instanceof TransportError)) throw error;
        }
        const reader = new CapsuleReader({ maxDatagramPayload: 1024 });
        for (const piece of chunks(bytes, random)) capsules += reader.push(piece).length;
        reader.end();
      },
    );
    expect(result.accepted).toBeGreaterThan(2_000);
    expect(result.rejected).toBeGreaterThan(2_000);
    expect(capsules).toBeGreaterThan(5_000);
  });

  it('UniStreamReader and datagram decoding on 15 000 mutated streams', () => {
    const result = fuzz(
      15_000,
      0x5eed_0106,
      (random, n) =>
        n % 3 === 2
          ? mutate(encodeDatagram(4 * (n % 100), ascii('payload')), random)
          : mutate(UNI_SEEDS[n % UNI_SEEDS.length]!, random),
      (bytes, random) => {
        if (random() < 0.3) {
          decodeDatagram(bytes);
          return;
        }
        const reader = new UniStreamReader({ maxPayload: 1024 });
        for (const piece of chunks(bytes, random)) reader.push(piece);
      },
    );
    expect(result.accepted).toBeGreaterThan(2_000);
    expect(result.rejected).toBeGreaterThan(1_000);
  });
});
