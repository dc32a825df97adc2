/**
 * A session on the WebRTC backend end to end (`docs/protocol/webrtc.md`), with the real svc-cloud
 * and the real svcd as processes on loopback and an ffmpeg camera: a pilot in Node (the transport's
 * `offerWebRtc`, what the SDK does with `RTCPeerConnection`) gets its offer through signalling,
 * sends its SDP offer, trickles candidates, says `hello` on the control channel, is welcomed as
 * the driver and reassembles the camera's frames from the datagram channel. A robot that cannot
 * use the offer says so.
 */
import { fileURLToPath } from 'node:url';
import {
  ChromiumSession,
  ffmpegRtpSource,
  freeUdpPort,
  type RobotDaemon,
  startCloudProcess,
  startRobotDaemon,
  writeRobotConfig,
} from '@svc/testkit';
import { offerWebRtc, type WebRtcSession } from '@svc/transport';
import { type AssembledFrame, Reassembler, SIGNAL_SUBPROTOCOL } from '@svc/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { WatchResult } from './fixtures/pilot-page.js';
import { videoChannel } from './support/channels.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));

type Message = Record<string, unknown> & { type: string };

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let signalUrl: string;
let daemon: RobotDaemon;
let mintToken: (robotId?: string) => Promise<string>;
let enrolmentToken: () => Promise<string>;
let waitOnline: (robotId: string) => Promise<void>;
/** The robot as svc-cloud's API shows it to an admin of its org. */
let robotView: (robotId: string) => Promise<Record<string, unknown>>;
const ROBOT = 'rtc-amr';
const withoutQuicHook = fileURLToPath(new URL('./fixtures/without-quic.mjs', import.meta.url));

beforeAll(async () => {
  const cloud = await startCloudProcess();
  cleanups.push(() => cloud.stop());
  const alice = await cloud.signIn('dev-alice');
  enrolmentToken = async () => {
    const enrolment = await cloud.call('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {
      token: alice.accessToken,
      body: {},
    });
    expect(enrolment.status).toBe(201);
    return enrolment.body.token as string;
  };
  const rtpPort = await freeUdpPort();
  const files = await writeRobotConfig({
    robotId: ROBOT,
    signalUrl: cloud.signalUrl,
    channels: videoChannel(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d'),
  });
  const camera = ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 100_000, gop: 30 });
  cleanups.push(() => camera.stop());
  daemon = startRobotDaemon(files, { SVC_ENROLMENT_TOKEN: await enrolmentToken() });
  cleanups.push(() => daemon.stop());
  await daemon.waitForLog('svcd running', 1, 30_000);
  signalUrl = cloud.signalUrl;
  mintToken = async (robotId = ROBOT) => {
    const answer = await cloud.call('POST', '/api/v1/session-tokens', {
      token: alice.accessToken,
      body: { robotId, scope: 'drive' },
    });
    expect(answer.status).toBe(201);
    return answer.body.token as string;
  };
  robotView = async (robotId) => {
    const answer = await cloud.call('GET', `/api/v1/robots/${robotId}`, { token: alice.accessToken });
    expect(answer.status).toBe(200);
    return answer.body.robot as Record<string, unknown>;
  };
  // Online: the robot's announcement reached svc-cloud.
  waitOnline = async (robotId) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const robot = await cloud.call('GET', `/api/v1/robots/${robotId}`, { token: alice.accessToken });
      if (robot.body.robot?.online === true) return;
      if (Date.now() > deadline) throw new Error(`robot ${robotId} never came online`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  await waitOnline(ROBOT);
}, 90_000);

/** A pilot's signalling connection: authenticated, with the offer of one session. */
async function signalledPilot(token: string, robotId = ROBOT) {
  const ws = new WebSocket(signalUrl, SIGNAL_SUBPROTOCOL);
  cleanups.push(() => ws.close());
  const inbox: Message[] = [];
  let wake: (() => void) | undefined;
  ws.on('message', (data) => {
    inbox.push(JSON.parse(String(data)) as Message);
    wake?.();
  });
  const next = async (type: string, timeoutMs = 15_000): Promise<Message> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const at = inbox.findIndex((m) => m.type === type);
      if (at >= 0) return inbox.splice(at, 1)[0]!;
      if (Date.now() > deadline) throw new Error(`no "${type}"; got ${inbox.map((m) => m.type).join(', ')}`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
  };
  const send = (message: Message) => ws.send(JSON.stringify(message));
  await next('challenge');
  send({ type: 'auth', v: 2, token });
  await next('auth-ok');
  send({ type: 'connect', robot_id: robotId });
  const offer = await next('offer');
  return { ws, send, next, offer, sessionId: offer.session_id as string, close: () => ws.close() };
}

describe('a session on the WebRTC backend', () => {
  it('reaches the robot through signalling, is welcomed as the driver and shows the camera', async () => {
    const token = await mintToken();
    const pilot = await signalledPilot(token);
    expect(pilot.offer.backends).toEqual(['quic', 'webrtc']);

    const rtc = await offerWebRtc({
      path: '/',
      bindAddress: '127.0.0.1',
      onCandidate: (candidate, mid) =>
        pilot.send({ type: 'rtc-candidate', session_id: pilot.sessionId, candidate, mid }),
    });
    cleanups.push(() => rtc.close());
    pilot.send({ type: 'rtc-offer', session_id: pilot.sessionId, sdp: rtc.sdp });
    const answer = await pilot.next('rtc-answer');
    rtc.acceptAnswer(answer.sdp as string);
    // The robot's candidates, as they come (after its answer).
    const trickle = (async () => {
      for (;;) {
        const candidate = await pilot.next('rtc-candidate', 60_000).catch(() => undefined);
        if (candidate === undefined) return;
        rtc.addRemoteCandidate(candidate.candidate as string, candidate.mid as string);
      }
    })();
    const session: WebRtcSession = await rtc.session;
    void trickle;

    let control = '';
    const frames: AssembledFrame[] = [];
    let reassembler: Reassembler | undefined;
    let unread = '';
    session.setHandlers({
      onControlData: (bytes) => {
        const text = new TextDecoder().decode(bytes);
        control += text;
        // Echo the robot's heartbeats from the reader, as the SDK does: a silent pilot is let go.
        unread += text;
        const complete = unread.split('\n');
        unread = complete.pop()!;
        for (const line of complete) {
          const message = JSON.parse(line) as Message;
          if (message.type === 'heartbeat') session.writeControl(new TextEncoder().encode(`${line}\n`));
        }
      },
      onDatagram: (datagram) => reassembler?.handleDatagram(datagram, performance.now()),
    });
    session.writeControl(
      new TextEncoder().encode(
        `${JSON.stringify({ type: 'hello', v: 1, token, session_id: pilot.sessionId })}\n`,
      ),
    );
    const lines = () =>
      control
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Message);
    const until = async (check: () => boolean, what: string) => {
      const deadline = Date.now() + 15_000;
      while (!check()) {
        if (Date.now() > deadline) throw new Error(`${what}; control so far: ${control.slice(0, 2000)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await until(() => lines().some((m) => m.type === 'welcome' || m.type === 'denied'), 'no welcome');
    const welcome = lines().find((m) => m.type === 'welcome')!;
    expect(welcome).toMatchObject({ session_id: pilot.sessionId, role: 'driver' });
    const video = (welcome.channels as { id: number; kind: string }[]).find((c) => c.kind === 'video')!;
    reassembler = new Reassembler({ channel: video.id, onFrame: (frame) => frames.push(frame) });

    // The camera's pictures arrive whole: keyframes and the frames after them.
    await until(() => frames.length >= 45 && frames.some((f) => f.keyframe), 'too few frames');
    expect(frames.filter((f) => f.keyframe).length).toBeGreaterThan(0);
    // The robot's heartbeat comes on the control channel, as on WebTransport.
    await until(() => lines().some((m) => m.type === 'heartbeat'), 'no heartbeat');

    // svc-cloud hears the session started.
    const started = await pilot.next('driver', 15_000);
    expect(started).toMatchObject({ robot_id: ROBOT, session_id: pilot.sessionId });
    // And shows it, on WebRTC, to the robot's admins (the console's Sessions now).
    const robot = await robotView(ROBOT);
    expect(robot.backends).toEqual(['quic', 'webrtc']);
    expect(robot.sessions).toContainEqual({
      sessionId: pilot.sessionId,
      role: 'driver',
      path: 'direct',
      backend: 'webrtc',
    });
    session.close(0, 'pilot closed');
  }, 60_000);

  it('tells the pilot why when the robot cannot use its offer', async () => {
    const pilot = await signalledPilot(await mintToken());
    pilot.send({ type: 'rtc-offer', session_id: pilot.sessionId, sdp: 'v=0\r\nthis is not an offer\r\n' });
    const refused = await pilot.next('rtc-refused');
    expect(refused).toMatchObject({ session_id: pilot.sessionId, code: 'robot-failed' });
    expect(refused.message).toMatch(/^the robot could not answer: the pilot's WebRTC offer cannot be used/);
  }, 30_000);

  it('in a browser without WebTransport, the pilot SDK takes WebRTC and shows the camera', async () => {
    const chromium = await ChromiumSession.open();
    cleanups.push(() => chromium.close());
    const result = await chromium.run<WatchResult & { hadWebTransport: boolean }>({
      entry: page,
      exportName: 'watchWithoutWebTransport',
      args: [signalUrl, ROBOT, await mintToken(), 3],
      timeoutMs: 60_000,
    });
    expect(result.hadWebTransport).toBe(true); // it was there, and the test took it away
    expect(result.states).toContain('connected');
    expect(result.stats.backend).toBe('webrtc');
    expect(result.stats.path).toBe('direct');
    const video = Object.values(result.stats.channels)[0]!;
    expect(video.painted).toBeGreaterThan(30); // of about 90 in 3 s
    expect(result.message).toBeNull();
  }, 90_000);

  it('a robot whose install has no QUIC binding serves on WebRTC, and a browser with WebTransport takes it', async () => {
    const robotId = 'rtc-no-quic';
    const rtpPort = await freeUdpPort();
    const files = await writeRobotConfig({
      robotId,
      signalUrl,
      channels: videoChannel(`rtp://127.0.0.1:${rtpPort}`, 'avc1.42c00d'),
    });
    const camera = ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 100_000, gop: 30 });
    cleanups.push(() => camera.stop());
    const withoutQuic = startRobotDaemon(files, {
      SVC_ENROLMENT_TOKEN: await enrolmentToken(),
      NODE_OPTIONS: `--import ${withoutQuicHook}`,
    });
    cleanups.push(() => withoutQuic.stop());
    await withoutQuic.waitForLog('svcd running', 1, 30_000);
    expect(withoutQuic.log()).toMatch(/no QUIC on this machine: pilots are served on WebRTC only/);
    expect(withoutQuic.log()).toMatch(/does not load on linux-x64: Cannot find package '@matrixai\/quic/);
    await waitOnline(robotId);
    const pilot = await signalledPilot(await mintToken(robotId), robotId);
    expect(pilot.offer).toMatchObject({ backends: ['webrtc'], candidates: [] });
    pilot.close();
    expect(await robotView(robotId)).toMatchObject({ backends: ['webrtc'], candidates: [], relay: false });

    const chromium = await ChromiumSession.open();
    cleanups.push(() => chromium.close());
    const result = await chromium.run<WatchResult>({
      entry: page,
      exportName: 'watch',
      args: [signalUrl, robotId, await mintToken(robotId), 3],
      timeoutMs: 60_000,
    });
    expect(result.states).toContain('connected');
    expect(result.stats.backend).toBe('webrtc');
    const video = Object.values(result.stats.channels)[0]!;
    expect(video.painted).toBeGreaterThan(30); // of about 90 in 3 s
    expect(result.message).toBeNull();
  }, 120_000);

  it('ends on SIGTERM after serving WebRTC sessions, without being killed (libdatachannel released)', async () => {
    daemon.process.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    expect(daemon.log()).not.toMatch(/terminate called|Napi::Error/);
  }, 30_000);
});
