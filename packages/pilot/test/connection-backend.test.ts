/**
 * Which transport a `PilotConnection` takes (`backend`): WebTransport where the browser has it and
 * the robot serves QUIC, WebRTC where the robot serves it otherwise, and a state that says why
 * when neither can be had. Fake time and a fake signalling WebSocket (the test plays svc-cloud);
 * the WebRTC session itself is proven in Chromium (`svcd/test/webrtc-e2e.test.ts`).
 */
import type { SignalServerMessage } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import type { PilotConnectOptions } from '../src/index.js';
import { settle } from './support/connection-harness.js';
import { SIGNAL_OFFER, signalledConnection } from './support/fake-signal-socket.js';

const OFFER = SIGNAL_OFFER;

/** A connection whose offer comes from `offer`; `webTransport: false` is a browser without it. */
async function offered(
  offer: SignalServerMessage,
  options: { webTransport: boolean; backend?: PilotConnectOptions['backend'] },
) {
  const states: [string, string | undefined][] = [];
  const { connection, made, sockets } = signalledConnection({
    ...(!options.webTransport && { webTransport: false as const }),
    ...(options.backend !== undefined && { backend: options.backend }),
  });
  connection.on('state', (state, detail) => states.push([state, detail]));
  connection.connect();
  await settle();
  sockets.at(-1)!.authenticate('drive');
  sockets.at(-1)!.receive(offer);
  await settle();
  return { states, made, sent: sockets.at(-1)!.sent };
}

describe('PilotConnection backend choice', () => {
  it('takes WebTransport for a robot that serves QUIC, in a browser that has it', async () => {
    const t = await offered({ ...OFFER, backends: ['quic', 'webrtc'] }, { webTransport: true });
    expect(t.made.map((x) => x.url)).toEqual(['https://10.0.0.1:4433/']);
    expect(t.sent.some((m) => m.type === 'rtc-offer')).toBe(false);
  });

  it('says why when the browser has no WebTransport and the robot serves no WebRTC', async () => {
    const t = await offered(OFFER, { webTransport: false });
    expect(t.states.at(-1)).toEqual([
      'reconnecting',
      expect.stringContaining(
        "this browser has no WebTransport, and robot r1 does not serve sessions on WebRTC; use a browser with WebTransport (Chromium 97 or later) or update the robot's svcd",
      ),
    ]);
  });

  it('says why when the pilot asks for WebRTC only and the robot serves none, and dials nothing', async () => {
    const t = await offered(OFFER, { webTransport: true, backend: 'webrtc' });
    expect(t.made).toEqual([]);
    expect(t.states.at(-1)).toEqual([
      'reconnecting',
      expect.stringContaining(
        "robot r1 does not serve sessions on WebRTC, and this pilot asked for WebRTC only (backend: 'webrtc')",
      ),
    ]);
  });

  it('takes WebRTC for a robot that serves only WebRTC and announces no address, though the browser has WebTransport', async () => {
    const t = await offered(
      { ...OFFER, candidates: [], relay: false, backends: ['webrtc'] },
      { webTransport: true },
    );
    expect(t.made).toEqual([]);
    // Node has no RTCPeerConnection: the attempt got as far as the WebRTC dial, and says so.
    expect(t.states.at(-1)).toEqual([
      'reconnecting',
      expect.stringMatching(
        /^WebRTC: this browser has no RTCPeerConnection \(WebRTC\), which this robot needs/,
      ),
    ]);
  });

  it("falls back to WebRTC when neither the robot's QUIC addresses nor the relay answer", async () => {
    const t = await offered({ ...OFFER, relay: false, backends: ['quic', 'webrtc'] }, { webTransport: true });
    expect(t.made.map((x) => x.url)).toEqual(['https://10.0.0.1:4433/']);
    t.made[0]!.refuse('no route to host');
    await settle();
    // Node has no RTCPeerConnection: the attempt went on to WebRTC, and says both why nots.
    expect(t.states.at(-1)).toEqual([
      'reconnecting',
      expect.stringMatching(/no route to host.*; then WebRTC: this browser has no RTCPeerConnection/),
    ]);
  });

  it('does not fall back to WebRTC with backend: webtransport', async () => {
    const t = await offered(
      { ...OFFER, relay: false, backends: ['quic', 'webrtc'] },
      { webTransport: true, backend: 'webtransport' },
    );
    t.made[0]!.refuse('no route to host');
    await settle();
    expect(t.states.at(-1)).toEqual(['reconnecting', expect.not.stringContaining('WebRTC')]);
  });
});
