import { describe, expect, it } from 'vitest';
import {
  decodePublisherControl,
  encodePublisherControl,
  MAX_PUBLISHER_CONTROL_BYTES,
  type PublisherControlMessage,
  WireError,
} from '../src/index.js';

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const bytes = (s: string) => new TextEncoder().encode(s);

describe('publisher-control datagrams', () => {
  const messages: PublisherControlMessage[] = [
    {
      type: 'video-config',
      channel: 1,
      profile: 'balanced',
      maxBitrateKbps: 3000,
      latencyBudgetMs: 100,
      maxGopMs: 10_000,
      preferIntraRefresh: true,
      suggestedFps: 0,
      reason: 'profile',
    },
    { type: 'recovery-request', channel: 2, kind: 'intra_refresh', reason: 'loss' },
    { type: 'layer', channel: 1, layer: 0, name: 'low', reason: 'down' },
    { type: 'session', state: 'started', session_id: 'sess-1', role: 'driver', sessions: 1 },
    { type: 'driver-idle', session_id: 'sess-1', idle_ms: 1000 },
  ];

  it('encodes each message as one JSON object with exactly the specification field names', () => {
    expect(JSON.parse(text(encodePublisherControl(messages[0]!)))).toEqual({
      type: 'video-config',
      channel: 1,
      profile: 'balanced',
      maxBitrateKbps: 3000,
      latencyBudgetMs: 100,
      maxGopMs: 10_000,
      preferIntraRefresh: true,
      suggestedFps: 0,
      reason: 'profile',
    });
    expect(text(encodePublisherControl(messages[3]!))).toBe(
      '{"type":"session","state":"started","session_id":"sess-1","role":"driver","sessions":1}',
    );
    for (const m of messages) expect(text(encodePublisherControl(m))).not.toContain('\n');
  });

  it('encodes the driver-idle extension with its two fields, and refuses one without a session', () => {
    expect(text(encodePublisherControl(messages[4]!))).toBe(
      '{"type":"driver-idle","session_id":"sess-1","idle_ms":1000}',
    );
    expect(() => decodePublisherControl(bytes('{"type":"driver-idle","session_id":"","idle_ms":5}'))).toThrow(
      /driver-idle" rejected at session_id/,
    );
    expect(() =>
      decodePublisherControl(bytes('{"type":"driver-idle","session_id":"s","idle_ms":-1}')),
    ).toThrow(/driver-idle" rejected at idle_ms/);
  });

  it('round-trips every type through decode', () => {
    for (const m of messages) expect(decodePublisherControl(encodePublisherControl(m))).toEqual(m);
  });

  it('refuses to encode a message outside the schema, naming the field', () => {
    const bad = { ...messages[0]!, maxBitrateKbps: 1.5 } as PublisherControlMessage;
    expect(() => encodePublisherControl(bad)).toThrow(/video-config" at maxBitrateKbps/);
    const role = { ...messages[3]!, role: 'pilot' } as unknown as PublisherControlMessage;
    expect(() => encodePublisherControl(role)).toThrow(TypeError);
  });

  it('decodes bad datagrams to a coded error that says what was wrong', () => {
    const cases: [Uint8Array, RegExp][] = [
      [bytes('not json'), /not UTF-8 JSON/],
      [Uint8Array.of(0xff, 0xfe), /not UTF-8 JSON/],
      [bytes('{"type":"teleport"}'), /"teleport" rejected at type/],
      [
        bytes('{"type":"session","state":"paused","session_id":"a","role":"driver","sessions":0}'),
        /at state/,
      ],
      [
        bytes('{"type":"recovery-request","channel":0,"kind":"idr","reason":"x"}'),
        /"recovery-request" rejected at channel/,
      ],
      [
        bytes('{"type":"layer","channel":1,"layer":0,"name":"low","reason":"up","extra":1}'),
        /"layer" rejected/,
      ],
      [new Uint8Array(MAX_PUBLISHER_CONTROL_BYTES + 1), /exceeds/],
    ];
    for (const [datagram, message] of cases) {
      let thrown: unknown;
      try {
        decodePublisherControl(datagram);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(WireError);
      expect((thrown as WireError).code).toBe('publisher-control');
      expect((thrown as WireError).message).toMatch(message);
    }
  });
});
