import { describe, expect, it } from 'vitest';
import {
  ControlLineReader,
  type ControlMessage,
  encodeControlMessage,
  MAX_CONTROL_LINE_BYTES,
  WireError,
} from '../src/index.js';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('control stream lines', () => {
  it('round-trips every message kind, split at any byte', () => {
    const messages: ControlMessage[] = [
      { type: 'hello', v: 1, token: 'eyJ...' },
      { type: 'hello', v: 1, token: 'eyJ...', session_id: 'sess-42' },
      {
        type: 'welcome',
        session_id: 's1',
        role: 'driver',
        channels: [{ id: 1, name: 'front', kind: 'video', codec: 'avc1.42e01f' }],
        qos: { profile: 'balanced', presentation_delay_ms: 100 },
      },
      { type: 'denied', reason: 'token expired' },
      { type: 'ping', t: 12.5 },
      { type: 'pong', t: 12.5, robot_time: 99.25 },
      { type: 'request-keyframe', channel: 1 },
      { type: 'loss', channel: 1, chunk_loss: 0.02, frames_lost: 1 },
      { type: 'set-qos', profile: 'latency' },
      { type: 'agent-stats', channels: { '1': { frames_sent: 30 } } },
      { type: 'pilot-stats', channels: { '1': { decoded: 29 } } },
      { type: 'bye' },
    ];
    const stream = Uint8Array.from(messages.flatMap((m) => [...encodeControlMessage(m)]));
    for (const step of [1, 3, 7, stream.length]) {
      const reader = new ControlLineReader();
      const out: unknown[] = [];
      for (let i = 0; i < stream.length; i += step) out.push(...reader.push(stream.subarray(i, i + step)));
      expect(out).toEqual(messages);
    }
  });

  it('reports bad lines with a coded error and keeps reading', () => {
    const reader = new ControlLineReader();
    const out = reader.push(bytes('not json\n{"type":"ping"}\n{"type":"teleport"}\n{"type":"ping","t":1}\n'));
    expect(out.slice(0, 3).map((e) => (e instanceof WireError ? e.code : e))).toEqual([
      'control-message',
      'control-message',
      'control-message',
    ]);
    expect((out[1] as WireError).message).toContain('"ping" rejected at t');
    expect(out[3]).toEqual({ type: 'ping', t: 1 });
  });

  it('skips a line that is too long without buffering it', () => {
    const reader = new ControlLineReader();
    const huge = new Uint8Array(MAX_CONTROL_LINE_BYTES + 10).fill(0x61);
    const out = [...reader.push(huge), ...reader.push(bytes('\n{"type":"bye"}\n'))];
    expect(out).toHaveLength(2);
    expect(out[0]).toBeInstanceOf(WireError);
    expect(out[1]).toEqual({ type: 'bye' });
  });

  it('refuses to send a message that breaks the schema', () => {
    expect(() => encodeControlMessage({ type: 'request-keyframe', channel: 0 })).toThrow(TypeError);
  });
});
