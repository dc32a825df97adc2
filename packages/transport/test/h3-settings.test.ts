import { describe, expect, it } from 'vitest';
import { encodeControlStreamPreamble } from '../src/h3/frames.js';
import {
  decodeSettings,
  encodeSettings,
  peerWebTransportSupport,
  SETTING,
  serverSettings,
  settingsPayload,
} from '../src/h3/settings.js';
import { expectCode, hex, toHex } from './support/h3-bytes.js';

/** The first bytes of our control stream with `maxSessions: 1`. */
const OUR_CONTROL_STREAM = [
  '00', //                  stream type: control
  '04', //                  frame type: SETTINGS
  '20', //                  frame length: 32
  '01 00', //               QPACK_MAX_TABLE_CAPACITY = 0
  '07 00', //               QPACK_BLOCKED_STREAMS = 0
  '06 80004000', //         MAX_FIELD_SECTION_SIZE = 16384 (4-byte varint)
  '08 01', //               ENABLE_CONNECT_PROTOCOL = 1
  '33 01', //               H3_DATAGRAM = 1
  'ab603742 01', //         ENABLE_WEBTRANSPORT (draft-02) = 1; 4-byte varint id 0x2b603742
  'ab603743 01', //         WEBTRANSPORT_MAX_SESSIONS (drafts 04-05) = 1
  'c0000000c671706a 01', // WEBTRANSPORT_MAX_SESSIONS (drafts 07-12) = 1; 8-byte varint id
].join('');

describe('SETTINGS we send', () => {
  it('opens our control stream with the golden SETTINGS frame', () => {
    expect(toHex(encodeControlStreamPreamble(serverSettings({ maxSessions: 1 })))).toBe(
      toHex(hex(OUR_CONTROL_STREAM)),
    );
  });

  it('lists every WebTransport codepoint Chromium may look for, with maxSessions where it applies', () => {
    const settings = new Map(serverSettings({ maxSessions: 4, maxFieldSectionSize: 8192 }));
    expect(settings.get(SETTING.ENABLE_WEBTRANSPORT_DRAFT02)).toBe(1);
    expect(settings.get(SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT04)).toBe(4);
    expect(settings.get(SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT07)).toBe(4);
    expect(settings.get(SETTING.H3_DATAGRAM)).toBe(1);
    expect(settings.get(SETTING.ENABLE_CONNECT_PROTOCOL)).toBe(1);
    expect(settings.get(SETTING.QPACK_MAX_TABLE_CAPACITY)).toBe(0);
    expect(settings.get(SETTING.QPACK_BLOCKED_STREAMS)).toBe(0);
    expect(settings.get(SETTING.MAX_FIELD_SECTION_SIZE)).toBe(8192);
    // Later drafts' codepoints would promise features (flow control, webtransport-h3) we lack.
    expect(settings.has(SETTING.WT_MAX_SESSIONS_DRAFT13)).toBe(false);
    expect(settings.has(SETTING.WT_ENABLED_DRAFT15)).toBe(false);
  });

  it('refuses nonsense options and settings a peer would have to reject', () => {
    expect(() => serverSettings({ maxSessions: 0 })).toThrow(TypeError);
    expect(() => serverSettings({ maxSessions: 1.5 })).toThrow(TypeError);
    expect(() => serverSettings({ maxSessions: 1, maxFieldSectionSize: 0 })).toThrow(TypeError);
    expect(() =>
      encodeSettings([
        [0x33, 1],
        [0x33, 1],
      ]),
    ).toThrow(TypeError);
    expect(() => encodeSettings([[0x04, 65535]])).toThrow(TypeError);
  });
});

describe('SETTINGS we receive', () => {
  it('decodes what we encode', () => {
    const list = serverSettings({ maxSessions: 2 });
    expect([...decodeSettings(encodeSettings(list))]).toEqual(list);
  });

  it('keeps unknown and reserved identifiers, and reads a huge reserved one without failing', () => {
    const settings = decodeSettings(
      hex(
        [
          '21 05', //                 reserved 0x21 = 5
          '4040 00', //               unknown 0x40 = 0 (2-byte id)
          'ffffffffffffffff 3f', //   reserved-looking id 2^62-1 = 63: too large for a number, skipped
          '06 ffffffffffffffff', //   MAX_FIELD_SECTION_SIZE = 2^62-1: saturates at 2^53-1
        ].join(''),
      ),
    );
    expect([...settings]).toEqual([
      [0x21, 5],
      [0x40, 0],
      [0x06, Number.MAX_SAFE_INTEGER],
    ]);
  });

  it('decodes an empty SETTINGS payload', () => {
    expect(decodeSettings(new Uint8Array(0)).size).toBe(0);
  });

  // The SETTINGS payloads it refuses: h3-rejects.test.ts.

  it('rejects a payload that ends inside a setting with frame-error, at every offset', () => {
    const payload = encodeSettings(serverSettings({ maxSessions: 1 }));
    const ends = new Set<number>();
    let at = 0;
    for (const [id, value] of serverSettings({ maxSessions: 1 })) {
      at += settingsPayload.byteLength([[id, value]]);
      ends.add(at);
    }
    for (let length = 0; length < payload.length; length++) {
      const cut = payload.subarray(0, length);
      if (length === 0 || ends.has(length)) expect(() => decodeSettings(cut)).not.toThrow();
      else expectCode(() => decodeSettings(cut), 'frame-error');
    }
  });

  it('reads what a client says about WebTransport under each draft', () => {
    expect(peerWebTransportSupport(new Map([[SETTING.H3_DATAGRAM, 1]]))).toEqual({
      datagrams: true,
      webTransport: false,
    });
    expect(
      peerWebTransportSupport(
        new Map([
          [SETTING.ENABLE_WEBTRANSPORT_DRAFT02, 1],
          [SETTING.MAX_FIELD_SECTION_SIZE, 262144],
        ]),
      ),
    ).toEqual({ datagrams: false, webTransport: true, maxFieldSectionSize: 262144 });
    for (const id of [
      SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT04,
      SETTING.WEBTRANSPORT_MAX_SESSIONS_DRAFT07,
      SETTING.WT_MAX_SESSIONS_DRAFT13,
      SETTING.WT_ENABLED_DRAFT15,
    ]) {
      expect(peerWebTransportSupport(new Map([[id, 1]])).webTransport).toBe(true);
      expect(peerWebTransportSupport(new Map([[id, 0]])).webTransport).toBe(false);
    }
  });
});
