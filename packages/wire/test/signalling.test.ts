import { describe, expect, it } from 'vitest';
import {
  encodeSignalMessage,
  isRobotAuth,
  MAX_SIGNAL_MESSAGE_BYTES,
  parseSignalClientMessage,
  parseSignalServerMessage,
  robotChallengePayload,
  type SignalClientMessage,
  type SignalServerMessage,
  WireError,
} from '../src/index.js';

const key = 'A'.repeat(43);
const sig = 'B'.repeat(86);
const hash = 'ab'.repeat(32);

function client(text: string): SignalClientMessage {
  const parsed = parseSignalClientMessage(text);
  if (parsed instanceof WireError) throw parsed;
  return parsed;
}

describe('signalling v2 messages', () => {
  it('tells a robot auth from a pilot auth', () => {
    const robot = client(JSON.stringify({ type: 'auth', v: 2, robot_id: 'amr-7', public_key: key, sig }));
    const pilot = client(JSON.stringify({ type: 'auth', v: 2, token: 'eyJ.x.y' }));
    expect(robot.type === 'auth' && isRobotAuth(robot)).toBe(true);
    expect(pilot.type === 'auth' && isRobotAuth(pilot)).toBe(false);
  });

  it('parses an announce with candidates, hashes, channels and sessions', () => {
    const announce = {
      type: 'announce',
      candidates: [{ address: '192.0.2.7', port: 4433, family: 'ipv4', kind: 'host' }],
      cert_hashes: [hash],
      channels: [{ id: 1, name: 'front', kind: 'video', codec: 'avc1.42e01f' }],
      max_sessions: 4,
      relay: false,
      sessions: [{ session_id: 's1', role: 'driver', sub: 'user:1' }],
    };
    expect(client(JSON.stringify(announce))).toEqual(announce);
  });

  it('names the field that is wrong', () => {
    const bad = parseSignalClientMessage(
      JSON.stringify({ type: 'auth', v: 2, robot_id: 'amr-7', public_key: 'short', sig }),
    );
    expect(bad).toBeInstanceOf(WireError);
    expect((bad as WireError).code).toBe('signal-message');
    expect((bad as WireError).message).toContain('public_key');
  });

  it('refuses JSON that is not an object of a known type, and oversized text', () => {
    for (const text of ['not json', '42', '{"type":"launch"}', '{"type":"connect","robot_id":"../x"}']) {
      expect(parseSignalClientMessage(text)).toBeInstanceOf(WireError);
    }
    const big = JSON.stringify({ type: 'heartbeat', pad: 'x'.repeat(MAX_SIGNAL_MESSAGE_BYTES) });
    expect((parseSignalClientMessage(big) as WireError).message).toContain('longer than');
  });

  it('refuses unknown fields (strict objects), so typos do not pass silently', () => {
    expect(parseSignalClientMessage('{"type":"heartbeat","tt":1}')).toBeInstanceOf(WireError);
  });

  it('round-trips server messages and refuses to encode an invalid one', () => {
    const offer = {
      type: 'offer' as const,
      session_id: 's1',
      robot_id: 'amr-7',
      role: 'observer' as const,
      candidates: [{ address: '::1', port: 4433, family: 'ipv6' as const, kind: 'host' as const }],
      cert_hashes: [hash],
      channels: [],
      relay: false,
    };
    expect(parseSignalServerMessage(encodeSignalMessage(offer))).toEqual(offer);
    expect(() => encodeSignalMessage({ ...offer, cert_hashes: ['nothex'] })).toThrow(TypeError);
    expect(parseSignalServerMessage('{"type":"denied","reason":"because","message":""}')).toBeInstanceOf(
      WireError,
    );
  });

  it('parses the pilot messages of the driver slot and refuses malformed ones, naming the field', () => {
    const good = [
      { type: 'request-control', session_id: 's1' },
      { type: 'answer-control', request_id: 'r1', grant: true },
      { type: 'answer-control', request_id: 'r1', grant: false },
      { type: 'take-control', session_id: 's1' },
      { type: 'release-control', session_id: 's1' },
    ];
    for (const message of good) expect(client(JSON.stringify(message))).toEqual(message);
    const bad: [unknown, string][] = [
      [{ type: 'answer-control', request_id: 'r1', grant: 'yes' }, 'grant'],
      [{ type: 'answer-control', grant: true }, 'request_id'],
      [{ type: 'request-control', session_id: '' }, 'session_id'],
      [{ type: 'take-control', session_id: 's'.repeat(129) }, 'session_id'],
      [{ type: 'release-control', session_id: 's1', role: 'driver' }, '(root)'],
    ];
    for (const [message, field] of bad) {
      const parsed = parseSignalClientMessage(JSON.stringify(message));
      expect(parsed).toBeInstanceOf(WireError);
      expect((parsed as WireError).message).toContain(field);
    }
  });

  it('round-trips the server messages of the driver slot and refuses an unknown outcome', () => {
    const messages = [
      {
        type: 'driver' as const,
        robot_id: 'amr-7',
        session_id: 's1',
        user: { id: 'user:6f1c', name: 'Olga' },
      },
      { type: 'driver' as const, robot_id: 'amr-7', session_id: null, user: null },
      {
        type: 'control-request' as const,
        request_id: 'r1',
        session_id: 's1',
        user: { id: 'key:k1', name: null },
        expires_in_ms: 10_000,
      },
      {
        type: 'control-pending' as const,
        request_id: 'r1',
        session_id: 's2',
        driver: { id: 'user:6f1c', name: 'Olga' },
        expires_in_ms: 9_500,
      },
      {
        type: 'control-result' as const,
        request_id: 'r1',
        session_id: 's2',
        outcome: 'granted' as const,
        message: 'you drive now',
      },
      { type: 'session-role' as const, session_id: 's2', role: 'driver' as const },
    ];
    for (const message of messages)
      expect(parseSignalServerMessage(encodeSignalMessage(message))).toEqual(message);
    const odd = { ...messages[4]!, outcome: 'maybe' };
    expect(() => encodeSignalMessage(odd as never)).toThrow(/outcome/);
    expect(parseSignalServerMessage(JSON.stringify(odd))).toBeInstanceOf(WireError);
    expect(parseSignalServerMessage(JSON.stringify({ ...messages[0]!, user: { id: 'u' } }))).toBeInstanceOf(
      WireError,
    );
  });

  it('parses the WebRTC messages and refuses oversized SDP, long candidates and servers that are not STUN or TURN', () => {
    const sdp = 'v=0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n';
    const rtc = [
      { type: 'rtc-offer', session_id: 's1', sdp },
      { type: 'rtc-answer', session_id: 's1', sdp },
      {
        type: 'rtc-candidate',
        session_id: 's1',
        candidate: 'candidate:1 1 UDP 1 192.0.2.7 5000 typ host',
        mid: '0',
      },
      { type: 'rtc-failed', session_id: 's1', message: 'no data channel section' },
    ];
    for (const message of rtc) expect(client(JSON.stringify(message))).toEqual(message);
    const tooLong = parseSignalClientMessage(
      JSON.stringify({ type: 'rtc-offer', session_id: 's1', sdp: 'x'.repeat(16 * 1024 + 1) }),
    );
    expect((tooLong as WireError).message).toContain('sdp');
    const longCandidate = parseSignalClientMessage(
      JSON.stringify({ type: 'rtc-candidate', session_id: 's1', candidate: 'c'.repeat(1025), mid: '0' }),
    );
    expect((longCandidate as WireError).message).toContain('candidate');
    const session = {
      type: 'rtc-session',
      session_id: 's1',
      sdp,
      ice_servers: [{ url: 'turns:turn.example.net:443', username: '1:robot.s1', credential: 'c2VjcmV0' }],
    } satisfies SignalServerMessage;
    expect(parseSignalServerMessage(encodeSignalMessage(session))).toEqual(session);
    expect(() =>
      encodeSignalMessage({ ...session, ice_servers: [{ url: 'https://turn.example.net' }] }),
    ).toThrow(/ice_servers\.0\.url: a stun:, stuns:, turn: or turns: URL/);
    expect(() =>
      encodeSignalMessage({ type: 'rtc-refused', session_id: 's1', code: 'nope' as 'gone', message: '' }),
    ).toThrow(/code/);
  });

  it('signs a domain-separated payload that binds the nonce and the robot id', () => {
    expect(new TextDecoder().decode(robotChallengePayload('n0nce', 'amr-7'))).toBe(
      'svc-signal-v2:n0nce:amr-7',
    );
  });
});
