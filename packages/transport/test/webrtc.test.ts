/**
 * The WebRTC backend's session over real libdatachannel peer connections on loopback: the robot
 * answers with `answerWebRtc`, the test plays the pilot with a peer connection of its own that
 * makes the offer with the same negotiated channels. Datagrams, the control stream as one byte
 * stream, the close with its code, a vanished pilot, a forged fingerprint, a bad offer.
 */

import { RTC_MAX_DATAGRAM_BYTES as MAX_DATAGRAM_BYTES } from '@svc/wire';
import nodeDataChannel, { type PeerConnection } from 'node-datachannel';
import { afterEach, describe, expect, it } from 'vitest';
import { isTransportError } from '../src/errors.js';
import type { SessionCloseInfo } from '../src/session.js';
import { createChannels } from '../src/webrtc/channels.js';
import { answerWebRtc, type WebRtcAnswer } from '../src/webrtc/peer.js';
import { WebRtcSession } from '../src/webrtc/session.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

interface Connected {
  readonly robot: WebRtcSession;
  readonly pilot: WebRtcSession;
  readonly pilotPc: PeerConnection;
  readonly answer: WebRtcAnswer;
}

/** A session between the robot and the test's pilot, both sides as `WebRtcSession`s. */
async function connect(
  tamper: (offer: string) => string = (offer) => offer,
  onError?: (err: unknown) => void,
): Promise<Connected> {
  const pilot = new nodeDataChannel.PeerConnection('pilot', { iceServers: [], bindAddress: '127.0.0.1' });
  cleanups.push(() => pilot.close());
  const offerMade = new Promise<string>((resolve) => pilot.onLocalDescription((sdp) => resolve(sdp)));
  const pilotCandidates: [string, string][] = [];
  pilot.onLocalCandidate((candidate, mid) => pilotCandidates.push([candidate, mid]));
  const channels = createChannels(pilot);
  const opened = new Promise<void>((resolve) => {
    let open = 0;
    for (const channel of Object.values(channels)) channel.onOpen(() => ++open === 3 && resolve());
  });
  const offer = tamper(await offerMade);
  const robotCandidates: [string, string][] = [];
  const answer = await answerWebRtc({
    offerSdp: offer,
    path: '/robots/r1',
    bindAddress: '127.0.0.1',
    // Kept until the pilot has the answer, as signalling orders them.
    onCandidate: (candidate, mid) => robotCandidates.push([candidate, mid]),
    connectTimeoutMs: 5000,
    ...(onError !== undefined && { onError }),
  });
  cleanups.push(() => answer.close());
  pilot.setRemoteDescription(answer.sdp, 'answer');
  for (const [candidate, mid] of robotCandidates) pilot.addRemoteCandidate(candidate, mid);
  await new Promise((resolve) => setTimeout(resolve, 50));
  for (const [candidate, mid] of pilotCandidates) answer.addRemoteCandidate(candidate, mid);
  pilot.onLocalCandidate((candidate, mid) => answer.addRemoteCandidate(candidate, mid));
  const robot = await answer.session;
  await opened;
  return { robot, pilot: new WebRtcSession('pilot', '/robots/r1', pilot, channels), pilotPc: pilot, answer };
}

function until<T>(check: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      const value = check();
      if (value !== undefined) resolve(value);
      else if (Date.now() > deadline) reject(new Error('timed out'));
      else setTimeout(poll, 10);
    };
    poll();
  });
}

describe('WebRTC session (node-datachannel)', () => {
  it('carries datagrams both ways and the control stream as one ordered byte stream', async () => {
    const { robot, pilot } = await connect();
    expect(robot.backend).toBe('webrtc');
    expect(robot.kind).toBe('direct');
    expect(robot.remoteAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(robot.maxDatagramBytes()).toBe(MAX_DATAGRAM_BYTES);

    const atRobot: Uint8Array[] = [];
    const controlAtRobot: Uint8Array[] = [];
    // Sent before the handlers are set: kept and handed over.
    pilot.writeControl(new TextEncoder().encode('{"type":"hello"}\n'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    robot.setHandlers({ onDatagram: (d) => atRobot.push(d), onControlData: (b) => controlAtRobot.push(b) });
    const atPilot: Uint8Array[] = [];
    const controlAtPilot: Uint8Array[] = [];
    pilot.setHandlers({ onDatagram: (d) => atPilot.push(d), onControlData: (b) => controlAtPilot.push(b) });

    for (let i = 0; i < 50; i++) {
      expect(pilot.sendDatagram(new Uint8Array(MAX_DATAGRAM_BYTES).fill(i))).toBe(true);
      expect(robot.sendDatagram(new Uint8Array([i, 1, 2, 3]))).toBe(true);
    }
    // A control write larger than one message arrives whole and in order.
    const big = new Uint8Array(100_000).map((_, i) => i % 251);
    robot.writeControl(big);
    robot.writeControl(new TextEncoder().encode('after\n'));

    await until(() => (atRobot.length === 50 && atPilot.length === 50 ? true : undefined));
    expect(new Set(atRobot.map((d) => d[0]))).toEqual(new Set(Array.from({ length: 50 }, (_, i) => i)));
    expect(atRobot.every((d) => d.byteLength === MAX_DATAGRAM_BYTES)).toBe(true);
    const controlBytes = () => Buffer.concat(controlAtPilot);
    await until(() => (controlBytes().byteLength === 100_006 ? true : undefined));
    expect(Buffer.compare(controlBytes().subarray(0, 100_000), Buffer.from(big))).toBe(0);
    expect(controlBytes().subarray(100_000).toString()).toBe('after\n');
    expect(Buffer.concat(controlAtRobot).toString()).toBe('{"type":"hello"}\n');
    expect(robot.stats().sentPackets).toBe(50);
  });

  it('survives a handler that throws: the error is reported, the session carries on', async () => {
    const errors: unknown[] = [];
    const { robot, pilot } = await connect(undefined, (err) => errors.push(err));
    let control = '';
    robot.setHandlers({
      onDatagram: () => {
        throw new Error('a bug in the datagram handler');
      },
      onControlData: (bytes) => {
        control += new TextDecoder().decode(bytes);
      },
    });
    pilot.sendDatagram(new Uint8Array([1]));
    pilot.writeControl(new TextEncoder().encode('still here\n'));
    await until(() => (control === 'still here\n' ? true : undefined));
    expect(errors).toEqual([expect.objectContaining({ message: 'a bug in the datagram handler' })]);
    expect(robot.closed).toBe(false);
  });

  it('tells the peer the code and reason of a close', async () => {
    const { robot, pilot } = await connect();
    const closes: SessionCloseInfo[] = [];
    pilot.setHandlers({ onClose: (info) => closes.push(info) });
    const robotCloses: SessionCloseInfo[] = [];
    robot.setHandlers({ onClose: (info) => robotCloses.push(info) });
    robot.close(4003, 'token revoked');
    expect(robot.closed).toBe(true);
    expect(robot.sendDatagram(new Uint8Array(4))).toBe(false);
    expect(robotCloses).toEqual([{ code: 4003, reason: 'token revoked', by: 'local' }]);
    expect(await until(() => closes[0])).toEqual({ code: 4003, reason: 'token revoked', by: 'peer' });
  });

  it('ends the session when the pilot vanishes without a word', async () => {
    const { robot, pilotPc } = await connect();
    const closes: SessionCloseInfo[] = [];
    robot.setHandlers({ onClose: (info) => closes.push(info) });
    pilotPc.close();
    expect(await until(() => closes[0], 15_000)).toMatchObject({ by: 'transport' });
    expect(robot.closed).toBe(true);
  }, 20_000);

  it('refuses a peer whose DTLS certificate is not the one the offer names', async () => {
    const forged = (offer: string) =>
      offer.replace(/a=fingerprint:sha-256 ([0-9A-F:]+)/, (_m, fp: string) => {
        const first = fp.slice(0, 2) === '00' ? '11' : '00';
        return `a=fingerprint:sha-256 ${first}${fp.slice(2)}`;
      });
    const failure = await connect(forged).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isTransportError(failure)).toBe(true);
    expect(String((failure as Error).message)).toMatch(
      /WebRTC connection (failed|closed)|no WebRTC connection/,
    );
  }, 20_000);

  it('answers an offer that is not SDP with a coded error that says so', async () => {
    const failure = await answerWebRtc({
      offerSdp: 'hello',
      path: '/robots/r1',
      onCandidate: () => undefined,
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isTransportError(failure) && failure.code).toBe('message-error');
    expect((failure as Error).message).toMatch(/the pilot's WebRTC offer cannot be used/);
  });
});
