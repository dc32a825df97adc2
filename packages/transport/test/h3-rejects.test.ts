import { describe, it } from 'vitest';
import type { TransportErrorCode } from '../src/errors.js';
import { capsule } from '../src/h3/capsules.js';
import { FrameReader, h3Frame } from '../src/h3/frames.js';
import { decodeHeaders, QpackEncoderStreamReader } from '../src/h3/qpack.js';
import { decodeSettings } from '../src/h3/settings.js';
import { expectCode, hex } from './support/h3-bytes.js';

/** Each HTTP/3 decoder, fed one piece of input from a fresh start. */
const DECODERS = {
  frame: (bytes: Uint8Array) => h3Frame.decode(bytes),
  'control stream': (bytes: Uint8Array) => new FrameReader({ role: 'control' }).push(bytes),
  'request stream': (bytes: Uint8Array) => new FrameReader({ role: 'request' }).push(bytes),
  capsule: (bytes: Uint8Array) => capsule.decode(bytes),
  'field section': (bytes: Uint8Array) => decodeHeaders(bytes),
  'QPACK encoder stream': (bytes: Uint8Array) => new QpackEncoderStreamReader().push(bytes),
  SETTINGS: (bytes: Uint8Array) => decodeSettings(bytes),
} as const;

/**
 * Malformed or forbidden input for each decoder (a one-shot frame or capsule, a frame stream in
 * each role, a QPACK field section or encoder stream, a SETTINGS payload), as hex, with the
 * {@link TransportErrorCode} it must be refused with.
 */
const REFUSED: readonly (readonly [keyof typeof DECODERS, string, string, TransportErrorCode])[] = [
  ['frame', 'a payload shorter than announced', '00 05 6162', 'frame-error'],
  ['frame', 'a GOAWAY with bytes after its varint', '07 02 04 00', 'frame-error'],
  ['frame', 'an empty GOAWAY', '07 00', 'frame-error'],
  ['frame', 'a MAX_PUSH_ID with a cut varint', '0d 01 40', 'frame-error'],
  ['frame', 'a truncated type', '40', 'frame-error'],
  ['frame', 'a missing length', '01', 'frame-error'],
  ['frame', 'PUSH_PROMISE (never sent to a server)', '05 01 00', 'frame-unexpected'],
  ['frame', 'HTTP/2 PRIORITY (0x2)', '02 00', 'frame-unexpected'],
  ['frame', 'HTTP/2 PING (0x6)', '06 00', 'frame-unexpected'],
  ['frame', 'HTTP/2 WINDOW_UPDATE (0x8)', '08 00', 'frame-unexpected'],
  ['frame', 'HTTP/2 CONTINUATION (0x9)', '09 00', 'frame-unexpected'],
  ['frame', 'the WebTransport signal', '4041 04', 'frame-unexpected'],
  ['frame', 'SETTINGS with a repeated id', '04 04 3301 3301', 'settings-error'],
  ['control stream', 'a first frame other than SETTINGS', '07 01 00', 'missing-settings'],
  ['control stream', 'a reserved frame before SETTINGS', '21 00 04 00', 'missing-settings'],
  ['control stream', 'the WebTransport signal before SETTINGS', '4041 00', 'missing-settings'],
  ['control stream', 'a second SETTINGS', '04 00 04 00', 'frame-unexpected'],
  ['control stream', 'DATA', '04 00 00 00', 'frame-unexpected'],
  ['control stream', 'HEADERS', '04 00 01 00', 'frame-unexpected'],
  ['control stream', 'the WebTransport signal after SETTINGS', '04 00 4041 00', 'frame-unexpected'],
  ['control stream', 'an HTTP/2 frame type', '04 00 06 00', 'frame-unexpected'],
  ['control stream', 'SETTINGS with an HTTP/2 setting', '04 02 0200', 'settings-error'],
  ['request stream', 'DATA before HEADERS', '00 01 61', 'frame-unexpected'],
  ['request stream', 'SETTINGS', '04 00', 'frame-unexpected'],
  ['request stream', 'GOAWAY', '07 01 00', 'frame-unexpected'],
  ['request stream', 'MAX_PUSH_ID', '0d 01 00', 'frame-unexpected'],
  ['request stream', 'CANCEL_PUSH', '03 01 00', 'frame-unexpected'],
  ['request stream', 'PUSH_PROMISE', '05 00', 'frame-unexpected'],
  ['request stream', 'DATA after trailers', '01 00 01 00 00 01 61', 'frame-unexpected'],
  ['request stream', 'HEADERS after trailers', '01 00 01 00 01 00', 'frame-unexpected'],
  ['request stream', 'the WebTransport signal after HEADERS', '01 00 4041 04', 'frame-unexpected'],
  ['request stream', 'HEADERS above the payload limit', '01 80010001', 'frame-error'],
  ['capsule', 'a truncated value', '00 05 6162', 'capsule-error'],
  ['capsule', 'a truncated length', '6843', 'capsule-error'],
  ['capsule', 'a close without its error code', '6843 03 000000', 'capsule-error'],
  ['capsule', 'a close reason that is not UTF-8', '6843 05 00000000 ff', 'capsule-error'],
  ['capsule', 'a close reason above 1024 bytes', `6843 4405 00000000 ${'61'.repeat(1025)}`, 'capsule-error'],
  ['capsule', 'a drain with a value', '800078ae 01 00', 'capsule-error'],
  ['field section', 'Required Insert Count 1 (dynamic table in use)', '0100 d9', 'qpack-error'],
  ['field section', 'Sign bit 1 with Required Insert Count 0', '0080 d9', 'qpack-error'],
  ['field section', 'a prefix without Delta Base', '00', 'qpack-error'],
  ['field section', 'an indexed line into the dynamic table (T=0)', '0000 80', 'qpack-error'],
  ['field section', 'a literal with a dynamic name reference (T=0)', '0000 40 01 61', 'qpack-error'],
  ['field section', 'an indexed line with post-Base index', '0000 10', 'qpack-error'],
  ['field section', 'a literal with post-Base name reference', '0000 00 01 61', 'qpack-error'],
  ['field section', 'static index 99, one past the table', '0000 ff 24', 'qpack-error'],
  ['field section', 'a literal name reference past the table', '0000 5f 54 01 61', 'qpack-error'],
  ['field section', 'a value longer than the section', '0000 51 05 2f', 'qpack-error'],
  ['field section', 'a name longer than the section', '0000 27 05 61', 'qpack-error'],
  ['field section', 'a Huffman value with the EOS symbol', '0000 51 84 ffffffff', 'qpack-error'],
  ['field section', 'a Huffman value with padding of zeros', '0000 51 81 18', 'qpack-error'],
  ['QPACK encoder stream', 'Insert with Name Reference', 'c0 01 61', 'qpack-stream-error'],
  ['QPACK encoder stream', 'Insert with Literal Name', '41 61 01 62', 'qpack-stream-error'],
  ['QPACK encoder stream', 'Duplicate', '00', 'qpack-stream-error'],
  ['QPACK encoder stream', 'a capacity that never ends', '3f ff ff ff ff ff ff ff', 'qpack-stream-error'],
  ['SETTINGS', 'a repeated identifier', '33 01 33 01', 'settings-error'],
  ['SETTINGS', 'a repeated identifier in another encoding', '33 01 4033 01', 'settings-error'],
  ['SETTINGS', 'a repeated huge identifier', 'ffffffffffffffff 00 ffffffffffffffff 01', 'settings-error'],
  ['SETTINGS', 'HTTP/2 ENABLE_PUSH (0x2)', '02 00', 'settings-error'],
  ['SETTINGS', 'HTTP/2 MAX_CONCURRENT_STREAMS (0x3)', '03 3f', 'settings-error'],
  ['SETTINGS', 'HTTP/2 INITIAL_WINDOW_SIZE (0x4)', '04 00', 'settings-error'],
  ['SETTINGS', 'HTTP/2 MAX_FRAME_SIZE (0x5)', '05 00', 'settings-error'],
  ['SETTINGS', 'ENABLE_CONNECT_PROTOCOL = 2', '08 02', 'settings-error'],
  ['SETTINGS', 'H3_DATAGRAM = 2', '33 02', 'settings-error'],
];

describe('HTTP/3 decoders: what they refuse, and with which code', () => {
  it.each(REFUSED)('%s: rejects %s', (decoder, _label, bytes, code) => {
    expectCode(() => DECODERS[decoder](hex(bytes)), code);
  });
});
