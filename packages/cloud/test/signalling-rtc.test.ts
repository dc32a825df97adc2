/**
 * WebRTC sessions over signalling (`docs/protocol/webrtc.md`): the offer names the robot's
 * backends and the pilot's STUN and TURN servers with credentials minted for it; a pilot's SDP
 * offer reaches the robot with the robot's own servers, the answer and the candidates go back and
 * forth, and nobody but the session's own pilot and robot takes part. A real svc-cloud with
 * signalling on 127.0.0.1.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadCloudConfig } from '../src/config.js';
import { iceServersFor } from '../src/signalling/rtc.js';
import { databaseBackends } from './support/databases.js';
import { announcement, nextOfType, signallingSuite } from './support/signalling.js';

const SECRET = 'turn-shared-secret-0123456789';
const SDP =
  'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n';
const CANDIDATE = 'candidate:1 1 UDP 2122317823 192.0.2.7 50000 typ host';

describe.each(databaseBackends.slice(0, 1))('WebRTC over signalling on $name', (backend) => {
  const suite = signallingSuite(backend, 'Rtc', {
    ice: {
      stunUrls: ['stun:stun.example.net:3478'],
      turn: {
        urls: ['turn:turn.example.net:3478?transport=udp', 'turns:turn.example.net:443'],
        secret: SECRET,
        ttlSeconds: 600,
      },
    },
  });
  let serial = 0;

  /** A robot online announcing `backends`, and a pilot holding an offer on it. */
  async function offered(backends?: string[]) {
    const robotId = `rtc-amr-${++serial}`;
    const { h, orgId } = suite;
    const robot = await h.onlineRobot(
      await h.robot(robotId, orgId),
      announcement(backends === undefined ? {} : { backends }),
    );
    const token = await h.token({ aud: robotId, scope: 'drive', sub: `user:rtc-${serial}` });
    const { socket: pilot } = await h.connectPilot(token);
    pilot.send({ type: 'connect', robot_id: robotId });
    const offer = await pilot.expect('offer');
    await robot.expect('session-open');
    return { robotId, robot, pilot, offer, sessionId: offer.session_id as string };
  }

  /** Checks a TURN credential the way coturn does with `use-auth-secret`. */
  function turnCredentialValid(
    server: { username: string; credential: string },
    party: string,
    sessionId: string,
  ) {
    const [expiry, who] = server.username.split(':');
    const now = Date.now() / 1000;
    return (
      who === `${party}.${sessionId}` &&
      Number(expiry) > now + 500 &&
      Number(expiry) <= now + 601 &&
      createHmac('sha1', SECRET).update(server.username).digest('base64') === server.credential
    );
  }

  it("offers a WebRTC robot's pilot its backends and servers, TURN with credentials for this session only", async () => {
    const { offer, sessionId } = await offered(['quic', 'webrtc']);
    expect(offer.backends).toEqual(['quic', 'webrtc']);
    const servers = offer.ice_servers as { url: string; username?: string; credential?: string }[];
    expect(servers.map((s) => s.url)).toEqual([
      'stun:stun.example.net:3478',
      'turn:turn.example.net:3478?transport=udp',
      'turns:turn.example.net:443',
    ]);
    expect(servers[0]).toEqual({ url: 'stun:stun.example.net:3478' });
    for (const turn of servers.slice(1)) {
      expect(turnCredentialValid(turn as { username: string; credential: string }, 'pilot', sessionId)).toBe(
        true,
      );
    }
    // No shared secret anywhere in what the pilot gets.
    expect(JSON.stringify(offer)).not.toContain(SECRET);
  });

  it('carries the offer to the robot, the answer to the pilot and the candidates both ways', async () => {
    const { robot, pilot, sessionId } = await offered(['quic', 'webrtc']);
    pilot.send({ type: 'rtc-offer', session_id: sessionId, sdp: SDP });
    const atRobot = await nextOfType(robot, 'rtc-session');
    expect(atRobot).toMatchObject({ session_id: sessionId, sdp: SDP });
    const robotTurn = (
      atRobot.ice_servers as { url: string; username?: string; credential?: string }[]
    ).filter((s) => s.username !== undefined);
    expect(robotTurn).toHaveLength(2);
    for (const turn of robotTurn) {
      expect(turnCredentialValid(turn as { username: string; credential: string }, 'robot', sessionId)).toBe(
        true,
      );
    }

    pilot.send({ type: 'rtc-candidate', session_id: sessionId, candidate: CANDIDATE, mid: '0' });
    expect(await nextOfType(robot, 'rtc-candidate')).toEqual({
      type: 'rtc-candidate',
      session_id: sessionId,
      candidate: CANDIDATE,
      mid: '0',
    });
    robot.send({ type: 'rtc-answer', session_id: sessionId, sdp: SDP });
    expect(await nextOfType(pilot, 'rtc-answer')).toEqual({
      type: 'rtc-answer',
      session_id: sessionId,
      sdp: SDP,
    });
    robot.send({ type: 'rtc-candidate', session_id: sessionId, candidate: CANDIDATE, mid: '0' });
    expect(await nextOfType(pilot, 'rtc-candidate')).toMatchObject({
      session_id: sessionId,
      candidate: CANDIDATE,
    });

    // The robot gives up: the pilot hears why.
    robot.send({
      type: 'rtc-failed',
      session_id: sessionId,
      message: 'the offer has no data channel section',
    });
    expect(await nextOfType(pilot, 'rtc-refused')).toEqual({
      type: 'rtc-refused',
      session_id: sessionId,
      code: 'robot-failed',
      message: 'the robot could not answer: the offer has no data channel section',
    });
  });

  it('refuses an offer for a robot without WebRTC, for a session of another pilot, and past the limit', async () => {
    const plain = await offered();
    expect(plain.offer.backends).toBeUndefined();
    expect(plain.offer.ice_servers).toBeUndefined();
    plain.pilot.send({ type: 'rtc-offer', session_id: plain.sessionId, sdp: SDP });
    expect(await nextOfType(plain.pilot, 'rtc-refused')).toMatchObject({
      code: 'not-allowed',
      message: expect.stringContaining('does not serve sessions on WebRTC; connect with WebTransport'),
    });

    const a = await offered(['webrtc']);
    const b = await offered(['webrtc']);
    // b's pilot names a's session: it is not one of its own.
    b.pilot.send({ type: 'rtc-offer', session_id: a.sessionId, sdp: SDP });
    expect(await nextOfType(b.pilot, 'rtc-refused')).toMatchObject({ session_id: a.sessionId, code: 'gone' });
    // A robot may not answer for a session that is not its own.
    b.robot.send({ type: 'rtc-answer', session_id: a.sessionId, sdp: SDP });
    expect(await nextOfType(b.robot, 'error')).toMatchObject({ code: 'not-allowed' });

    for (let i = 0; i < 4; i++) {
      a.pilot.send({ type: 'rtc-offer', session_id: a.sessionId, sdp: SDP });
      await nextOfType(a.robot, 'rtc-session');
    }
    a.pilot.send({ type: 'rtc-offer', session_id: a.sessionId, sdp: SDP });
    expect(await nextOfType(a.pilot, 'rtc-refused')).toMatchObject({
      code: 'not-allowed',
      message: expect.stringContaining('more than 4 WebRTC offers'),
    });
    // A pilot may not send the robot's messages.
    a.pilot.send({ type: 'rtc-answer', session_id: a.sessionId, sdp: SDP });
    expect(await nextOfType(a.pilot, 'error')).toMatchObject({
      code: 'not-allowed',
      message: '"rtc-answer" is a robot message',
    });
  });
});

describe('STUN and TURN configuration', () => {
  it('reads the servers and needs a secret of some length with TURN', () => {
    const config = loadCloudConfig({
      SVC_STUN_URLS: 'stun:stun.example.net:3478, stun:[2001:db8::1]:3478',
      SVC_TURN_URLS: 'turn:turn.example.net:3478?transport=tcp,turns:turn.example.net:443',
      SVC_TURN_SECRET: SECRET,
    });
    expect(config.ice).toEqual({
      stunUrls: ['stun:stun.example.net:3478', 'stun:[2001:db8::1]:3478'],
      turn: {
        urls: ['turn:turn.example.net:3478?transport=tcp', 'turns:turn.example.net:443'],
        secret: SECRET,
        ttlSeconds: 3600,
      },
    });
    expect(loadCloudConfig({}).ice).toEqual({ stunUrls: [] });
    // RFC 7065: a turns: URL may name its transport, which can only be TCP.
    expect(
      loadCloudConfig({ SVC_TURN_URLS: 'turns:turn.example.net:443?transport=tcp', SVC_TURN_SECRET: SECRET })
        .ice.turn?.urls,
    ).toEqual(['turns:turn.example.net:443?transport=tcp']);
    expect(() =>
      loadCloudConfig({ SVC_TURN_URLS: 'turns:turn.example.net:443?transport=udp', SVC_TURN_SECRET: SECRET }),
    ).toThrow(/is not a URL like/);
    expect(() => loadCloudConfig({ SVC_TURN_URLS: 'turn:t.example.net:3478' })).toThrow(
      /SVC_TURN_SECRET.*is needed with SVC_TURN_URLS/,
    );
    expect(() =>
      loadCloudConfig({ SVC_TURN_URLS: 'turn:t.example.net:3478', SVC_TURN_SECRET: 'short' }),
    ).toThrow(/shorter than 16 characters/);
    expect(() => loadCloudConfig({ SVC_STUN_URLS: 'http://stun.example.net' })).toThrow(
      /SVC_STUN_URLS.*"http:\/\/stun.example.net" is not a URL like stun:/,
    );
    // The secret never appears in an error.
    expect(() => loadCloudConfig({ SVC_TURN_SECRET: SECRET })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(SECRET) }),
    );
  });

  it('mints credentials that expire with the configured lifetime', () => {
    const servers = iceServersFor(
      { stunUrls: [], turn: { urls: ['turn:t.example.net:3478'], secret: SECRET, ttlSeconds: 60 } },
      'sess-1',
      'robot',
      1_000_000,
    );
    expect(servers).toEqual([
      {
        url: 'turn:t.example.net:3478',
        username: '1000060:robot.sess-1',
        credential: createHmac('sha1', SECRET).update('1000060:robot.sess-1').digest('base64'),
      },
    ]);
  });
});
