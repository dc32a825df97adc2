/**
 * Fleet's Path column: a relayed session is never invisible, and a robot's reachability is named
 * from what it announced.
 */
import { describe, expect, it } from 'vitest';
import { pathLabel } from '../src/console/path-label.js';

const host = { address: '198.19.0.2', port: 4433, family: 'ipv4', kind: 'host' } as const;
const mapped = { address: '198.18.1.2', port: 4433, family: 'ipv4', kind: 'mapped' } as const;
const session = (path: 'direct' | 'relay', backend: 'quic' | 'webrtc' = 'quic') => ({
  sessionId: `s-${path}-${backend}`,
  role: 'observer' as const,
  path,
  backend,
});
const QUIC = ['quic'] as ('quic' | 'webrtc')[];
const BOTH = ['quic', 'webrtc'] as ('quic' | 'webrtc')[];
const WEBRTC = ['webrtc'] as ('quic' | 'webrtc')[];

describe('the Path column', () => {
  it('says relay for a robot whose sessions go through the relay', () => {
    expect(
      pathLabel({
        online: true,
        relay: true,
        backends: QUIC,
        candidates: [host],
        sessions: [session('relay')],
      }),
    ).toBe('relay (through the cloud)');
    expect(
      pathLabel({
        online: true,
        relay: true,
        backends: QUIC,
        candidates: [host],
        sessions: [session('direct'), session('relay')],
      }),
    ).toBe('direct, 1 through the relay');
  });

  it('says TURN for a robot whose sessions are all relayed by a TURN server on WebRTC', () => {
    expect(
      pathLabel({
        online: true,
        relay: false,
        backends: WEBRTC,
        candidates: [],
        sessions: [session('relay', 'webrtc')],
      }),
    ).toBe('relay (TURN)');
  });

  it('names how a robot without relayed sessions is reached', () => {
    expect(
      pathLabel({ online: true, relay: true, backends: BOTH, candidates: [host, mapped], sessions: [] }),
    ).toBe('direct (mapped)');
    expect(
      pathLabel({
        online: true,
        relay: false,
        backends: QUIC,
        candidates: [host],
        sessions: [session('direct')],
      }),
    ).toBe('direct');
    expect(pathLabel({ online: true, relay: true, backends: QUIC, candidates: [], sessions: [] })).toBe(
      'relay only',
    );
    expect(pathLabel({ online: true, relay: false, backends: QUIC, candidates: [], sessions: [] })).toBe(
      'no address',
    );
    expect(pathLabel({ online: true, relay: false, backends: WEBRTC, candidates: [], sessions: [] })).toBe(
      'WebRTC (ICE)',
    );
    expect(pathLabel({ online: false, relay: true, backends: [], candidates: [], sessions: [] })).toBe('—');
  });
});
