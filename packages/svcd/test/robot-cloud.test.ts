/**
 * Robots with the real svc-cloud and the real svcd, as processes on loopback: enrolment (by the
 * command, by the environment, by the configuration, and what a failure says), the signalling
 * denials and their remedies, open dev enrolment, reconnecting after a cloud restart, and pilots in
 * Chromium that get their offer through signalling with a token alice minted: video, sessions while
 * the cloud is down, refused tokens, a full robot, and one driver among observers.
 */
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { access, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  ChromiumSession,
  type CloudAnswer,
  type CloudProcess,
  enrolByCli,
  ffmpegRtpSource,
  freeUdpPort,
  type RobotConfigOptions,
  type RobotDaemon,
  type RobotFiles,
  type SignedInPerson,
  startCloudProcess,
  startRobotDaemon,
  writeRobotConfig,
} from '@svc/testkit';
import { decodePublisherControl, type PublisherControlMessage } from '@svc/wire';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OfferSummary, PilotOutcome, WatchResult } from './fixtures/pilot-page.js';

const page = fileURLToPath(new URL('./fixtures/pilot-page.ts', import.meta.url));

/** A robot as `GET /api/v1/robots` shows it (the fields these tests read). */
interface RobotView {
  readonly robotId: string;
  readonly orgId: string | null;
  readonly online: boolean;
  readonly sessions: readonly { sessionId: string; role: string }[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let cloud: CloudProcess;
let alice: SignedInPerson;
/** Robot x-refused, enrolled at the start so that a token for it can be minted then; run in its own test. */
let refusedRobot: RobotFiles;
/** A token for robot x-refused whose 30 s lifetime (the shortest) runs out while the other tests run. */
let shortLived: { token: string; expiresAt: string };

beforeAll(async () => {
  cloud = await startCloudProcess();
  alice = await cloud.signIn('dev-alice');
  refusedRobot = await writeRobotConfig({ robotId: 'x-refused', signalUrl: cloud.signalUrl });
  const enrolled = await enrolByCli(refusedRobot, await enrolmentToken());
  expect(enrolled.code, enrolled.stderr).toBe(0);
  shortLived = await sessionToken('x-refused', 'drive', 30);
});
afterAll(async () => {
  await cloud?.stop();
  await refusedRobot?.remove();
});

/** Writes a configuration for a robot of `on` (default: the shared cloud); removed after the test. */
async function newRobot(
  robotId: string,
  options: Omit<RobotConfigOptions, 'robotId' | 'signalUrl'> = {},
  on: CloudProcess = cloud,
): Promise<RobotFiles> {
  const robot = await writeRobotConfig({ robotId, signalUrl: on.signalUrl, ...options });
  cleanups.push(() => robot.remove());
  return robot;
}

/** Starts the robot's daemon; stopped after the test. */
function runDaemon(robot: RobotFiles, env: Record<string, string> = {}): RobotDaemon {
  const daemon = startRobotDaemon(robot, env);
  cleanups.push(() => daemon.stop());
  return daemon;
}

/** A new enrolment token of alice's org. */
async function enrolmentToken(): Promise<string> {
  const answer = await cloud.call('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {
    token: alice.accessToken,
    body: {},
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.token as string;
}

/** `GET /api/v1/robots` as `token` (anonymous without). */
async function robotsSeenBy(token: string | undefined, on: CloudProcess = cloud): Promise<RobotView[]> {
  const answer = await on.call('GET', '/api/v1/robots', token === undefined ? {} : { token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.robots as RobotView[];
}

/** Polls `GET /api/v1/robots/<id>` as alice until `check` holds (60 s at most); returns the robot. */
async function presence(
  robotId: string,
  check: (robot: RobotView) => boolean,
  what: string,
): Promise<RobotView> {
  const deadline = Date.now() + 60_000;
  let last: CloudAnswer | undefined;
  for (;;) {
    last = await cloud.call('GET', `/api/v1/robots/${robotId}`, { token: alice.accessToken });
    if (last.status === 200 && check(last.body.robot as RobotView)) return last.body.robot as RobotView;
    if (Date.now() > deadline)
      throw new Error(
        `robot ${robotId} never became ${what}; last answer ${last.status} ${JSON.stringify(last.body)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const online = (robotId: string) => presence(robotId, (r) => r.online, 'online');

/** Mints a pilot session token as alice. */
async function sessionToken(robotId: string, scope: 'drive' | 'observe', ttlSeconds?: number) {
  const answer = await cloud.call('POST', '/api/v1/session-tokens', {
    token: alice.accessToken,
    body: { robotId, scope, ...(ttlSeconds !== undefined && { ttlSeconds }) },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body as { token: string; expiresAt: string; jti: string };
}

/** An enrolment token the service never issued, shaped like a real one. */
const unknownEnrolmentToken = () => `svc_enr_${randomBytes(32).toString('base64url')}`;

describe('enrolment', () => {
  it('by the command: exit 0 and the robot is in the org; a second robot with the same token is told to get a new one', async () => {
    const token = await enrolmentToken();
    const first = await newRobot('cli-first');
    const enrolled = await enrolByCli(first, token);
    expect(enrolled.code, enrolled.stderr).toBe(0);
    expect(enrolled.stdout).toContain(`enrolled: robot cli-first in org ${alice.orgId}`);
    expect(await robotsSeenBy(alice.accessToken)).toContainEqual(
      expect.objectContaining({ robotId: 'cli-first', orgId: alice.orgId, online: false }),
    );

    const second = await newRobot('cli-second');
    const refused = await enrolByCli(second, token);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('error (token-used): this enrolment token was already used');
    expect(refused.stderr).toContain('create a new one in the console (Fleet, Create enrolment token)');
    expect((await robotsSeenBy(alice.accessToken)).map((r) => r.robotId)).not.toContain('cli-second');
    for (const run of [enrolled, refused]) expect(run.stdout + run.stderr).not.toContain(token);
  });

  it('on first start, by SVC_ENROLMENT_TOKEN and by enrolment_token; a valid token in the environment beats a used one in the file', async () => {
    const byEnv = await newRobot('start-env');
    const envToken = await enrolmentToken();
    const envDaemon = runDaemon(byEnv, { SVC_ENROLMENT_TOKEN: envToken });

    const byFile = await newRobot('start-file', { enrolmentToken: await enrolmentToken() });
    const fileDaemon = runDaemon(byFile);

    // Once start-env is online its token is used up: it is the used token in start-both's file.
    await online('start-env');
    const fresh = await enrolmentToken();
    const both = await newRobot('start-both', { enrolmentToken: envToken });
    const bothDaemon = runDaemon(both, { SVC_ENROLMENT_TOKEN: fresh });

    for (const robotId of ['start-env', 'start-file', 'start-both']) {
      const robot = await online(robotId);
      expect(robot.orgId).toBe(alice.orgId);
    }
    for (const daemon of [envDaemon, fileDaemon, bothDaemon]) {
      expect(daemon.log()).toContain('robot enrolled; the enrolment token is used up');
    }
    const tokens = await cloud.call('GET', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {
      token: alice.accessToken,
    });
    const redeemers = (tokens.body.enrolmentTokens as { redeemedBy: string | null }[]).map(
      (t) => t.redeemedBy,
    );
    expect(redeemers).toEqual(expect.arrayContaining(['start-env', 'start-file', 'start-both']));
    expect(bothDaemon.log()).not.toContain(fresh);
    expect(bothDaemon.log()).not.toContain(envToken);
  });

  it('a first start with a used token is fatal and says what to do; a robot enrolled earlier only warns about a bad token and goes online', async () => {
    const used = await enrolmentToken();
    const enrolled = await newRobot('fatal-earlier');
    expect((await enrolByCli(enrolled, used)).code).toBe(0);

    const fresh = await newRobot('fatal-first', { enrolmentToken: used });
    const fatal = runDaemon(fresh);
    const code = await fatal.exited;
    expect(code).not.toBe(0);
    expect(fatal.log()).toContain(
      'error (token-used): first start without an enrolled key: this enrolment token was already used; ' +
        'create a new one in the console (Fleet, Create enrolment token) and run svcd enrol --token <new token>',
    );
    expect(fatal.log()).not.toContain(used);
    // No key is left behind: the next start is a first start again, and fails as loudly.
    await expect(access(fresh.credentialPath)).rejects.toThrow();

    const bad = unknownEnrolmentToken();
    const keeps = runDaemon(enrolled, { SVC_ENROLMENT_TOKEN: bad });
    await keeps.waitForLog('enrolment failed; continuing with the existing robot key');
    expect(keeps.log()).toContain('token-invalid');
    const robot = await online('fatal-earlier');
    expect(robot.orgId).toBe(alice.orgId);
    expect(keeps.process.exitCode).toBeNull();
    expect(keeps.log()).not.toContain(bad);
  });
});

describe('signalling denials and their remedies', () => {
  it('unknown-robot: a robot never enrolled logs how to enrol, and keeps running', async () => {
    const robot = await newRobot('never-enrolled');
    const daemon = runDaemon(robot);
    await daemon.waitForLog(
      `this robot is not enrolled: create an enrolment token in the console and run \`svcd --config ${robot.configPath} enrol --token <T>\`, or set SVC_ENROLMENT_TOKEN`,
    );
    expect(daemon.log()).toContain('"reason":"unknown-robot"');
    expect(daemon.process.exitCode).toBeNull();
    expect((await robotsSeenBy(alice.accessToken)).map((r) => r.robotId)).not.toContain('never-enrolled');
  });

  it('key-mismatch: a robot with a new key logs the remedy; deleted in the console and enrolled again, it is online', async () => {
    const robot = await newRobot('new-key');
    expect((await enrolByCli(robot, await enrolmentToken())).code).toBe(0);
    await rm(robot.credentialPath);

    const mismatched = runDaemon(robot);
    await mismatched.waitForLog(
      'robot new-key is enrolled with another key: delete the robot in the console and enrol again',
    );
    expect(mismatched.log()).toContain('"reason":"key-mismatch"');
    expect((await presence('new-key', () => true, 'listed')).online).toBe(false);

    const deleted = await cloud.call('DELETE', '/api/v1/robots/new-key', { token: alice.accessToken });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
    await mismatched.stop();
    const again = await enrolByCli(robot, await enrolmentToken());
    expect(again.code, again.stderr).toBe(0);
    const daemon = runDaemon(robot);
    const back = await online('new-key');
    expect(back.orgId).toBe(alice.orgId);
    await daemon.waitForLog('signalling online');
  });
});

describe('open dev enrolment', () => {
  let open: CloudProcess;
  beforeAll(async () => {
    open = await startCloudProcess({ env: { SVC_DEV_OPEN_ENROLMENT: '1' } });
  });
  afterAll(async () => {
    await open?.stop();
  });

  it('a robot without a token goes online; anonymous callers see it, a signed-in person of another org does not', async () => {
    expect(open.log()).toContain('SVC_DEV_OPEN_ENROLMENT=1: unknown robots are trusted on first connection');
    const robot = await newRobot('open-robot', {}, open);
    const daemon = runDaemon(robot);
    await daemon.waitForLog(
      'signalling online (admitted by open dev enrolment: the robot belongs to no org)',
    );
    const deadline = Date.now() + 60_000;
    let seen: RobotView | undefined;
    while (seen?.online !== true) {
      if (Date.now() > deadline) throw new Error('open-robot never listed online for anonymous callers');
      seen = (await robotsSeenBy(undefined, open)).find((r) => r.robotId === 'open-robot');
      if (seen?.online !== true) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(seen.orgId).toBeNull();
    const someone = await open.signIn('dev-alice');
    expect((await robotsSeenBy(someone.accessToken, open)).map((r) => r.robotId)).not.toContain('open-robot');
  });
});

describe('cloud restart', () => {
  it('the robot reconnects and is online again after svc-cloud restarts', async () => {
    const robot = await newRobot('through-restart');
    const daemon = runDaemon(robot, { SVC_ENROLMENT_TOKEN: await enrolmentToken() });
    await online('through-restart');
    await daemon.waitForLog('signalling online');
    await cloud.restart();
    alice = await cloud.signIn('dev-alice');
    const robotAfter = await online('through-restart');
    expect(robotAfter.orgId).toBe(alice.orgId);
    expect(daemon.log().split('signalling online').length - 1).toBeGreaterThanOrEqual(2);
  });
});

/** A UDP socket on 127.0.0.1 that keeps what it receives. */
interface Listener {
  readonly port: number;
  readonly received: Buffer[];
  /** Resolves once `check` holds, re-checked at every datagram (60 s at most). */
  until(check: (received: Buffer[]) => boolean, what: string): Promise<void>;
  close(): Promise<void>;
}

async function listener(): Promise<Listener> {
  const socket: Socket = createSocket('udp4');
  const received: Buffer[] = [];
  const waiters = new Set<() => void>();
  socket.on('message', (m) => {
    received.push(m);
    for (const w of [...waiters]) w();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const result: Listener = {
    port: socket.address().port,
    received,
    until: (check, what) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(test);
          reject(new Error(`never received ${what}; got ${received.map((b) => b.toString()).join(' | ')}`));
        }, 60_000);
        const test = () => {
          if (!check(received)) return;
          clearTimeout(timer);
          waiters.delete(test);
          resolve();
        };
        waiters.add(test);
        test();
      }),
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  cleanups.push(() => result.close());
  return result;
}

describe('pilots in Chromium through signalling', () => {
  let chromium: ChromiumSession;

  beforeAll(async () => {
    chromium = await ChromiumSession.open();
  });
  afterAll(async () => {
    await chromium?.close();
  });

  const run = <T>(exportName: string, args: unknown[]) =>
    chromium.run<T>({ entry: page, exportName, args, timeoutMs: 90_000 });

  it('video: an offer through signalling with a token alice minted, then H.264 from an RTP source decodes; the pilot drives', async () => {
    const FRAMES = 150; // 5 s at 30 fps
    const rtpPort = await freeUdpPort();
    const robot = await newRobot('camera', {
      channels: [
        '[[channel]]',
        'kind = "video"',
        'name = "front"',
        `input = "rtp://127.0.0.1:${rtpPort}"`,
        'codec = "avc1.42c00d"',
        'fps = 30',
      ],
    });
    const daemon = runDaemon(robot, { SVC_ENROLMENT_TOKEN: await enrolmentToken() });
    await online('camera');
    void daemon.waitForLog('pilot session opened').then(
      () => {
        const source = ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: FRAMES, gop: 30 });
        cleanups.push(() => source.stop());
      },
      () => undefined,
    );
    const { token } = await sessionToken('camera', 'drive');
    const [result, during] = await Promise.all([
      run<WatchResult>('watch', [cloud.signalUrl, 'camera', token, 8]),
      presence('camera', (r) => r.sessions.some((s) => s.role === 'driver'), 'driven'),
    ]);
    expect(result.offer?.role).toBe('driver');
    expect(result.offer?.urls).toEqual([`https://127.0.0.1:${robot.quicPort}/`]);
    expect(result.offer?.channels).toEqual([{ id: 1, name: 'front', kind: 'video' }]);
    expect(result.role).toBe('driver');
    expect(result.sessionId).toBe(result.offer?.sessionId);
    expect(during.sessions).toContainEqual({
      sessionId: result.offer?.sessionId,
      role: 'driver',
      path: 'direct',
      backend: 'quic',
    });
    expect(result.message).toBeNull();
    const stats = Object.values(result.stats.channels)[0]!;
    expect(stats.decoded).toBeGreaterThanOrEqual(0.9 * FRAMES);
    expect(stats.painted).toBeGreaterThan(0.8 * FRAMES);
    // The robot reported the session's end: the cloud shows no session any more.
    await presence('camera', (r) => r.sessions.length === 0, 'without sessions');
  });

  it('max_sessions = 1: a second pilot is denied, robot busy', async () => {
    const robot = await newRobot('single-seat', { maxSessions: 1 });
    runDaemon(robot, { SVC_ENROLMENT_TOKEN: await enrolmentToken() });
    await online('single-seat');
    const tokens = [
      (await sessionToken('single-seat', 'drive')).token,
      (await sessionToken('single-seat', 'drive')).token,
    ];
    const [first, second] = await run<PilotOutcome[]>('pilotsViaSignalling', [
      cloud.signalUrl,
      'single-seat',
      tokens,
      { seconds: 30 },
    ]);
    expect(first).toMatchObject({ state: 'connected', role: 'driver' });
    expect(second!.offer).not.toBeNull();
    expect(second).toMatchObject({
      state: 'denied',
      detail: 'robot busy: 1 of 1 sessions in use (max_sessions)',
      role: null,
    });
  });

  it.each([
    ['WebTransport, each pilot with an offer it asked for', undefined, 'crew'],
    ['WebRTC, through the SDK’s signalling session', 'webrtc', 'crew-rtc'],
  ] as const)(
    'one driver among two drive-scoped pilots and an observer (%s): only the driver’s command reaches the robot’s output; sensors reach all; the publisher hears about sessions',
    async (_how, backend, robotId) => {
      const commands = await listener();
      const publisher = await listener();
      const sensorPort = await freeUdpPort();
      const robot = await newRobot(robotId, {
        channels: [
          '[[channel]]',
          'kind = "video"',
          'name = "front"',
          `input = "rtp://127.0.0.1:${await freeUdpPort()}"`,
          'codec = "avc1.42c00d"',
          'fps = 30',
          '[[channel]]',
          'kind = "sensor"',
          'name = "imu"',
          `input = "udp://127.0.0.1:${sensorPort}"`,
          'codec = "json"',
          '[[channel]]',
          'kind = "command"',
          'name = "drive"',
          `output = "udp://127.0.0.1:${commands.port}"`,
          'codec = "json"',
        ],
        publisherControl: `127.0.0.1:${publisher.port}`,
      });
      const daemon = runDaemon(robot, { SVC_ENROLMENT_TOKEN: await enrolmentToken() });
      const decoded = (): PublisherControlMessage[] =>
        publisher.received.map((b) => decodePublisherControl(b));
      const sessionsSeen = () => decoded().filter((m) => m.type === 'session');
      await publisher.until(
        () => decoded().some((m) => m.type === 'video-config' && m.reason === 'profile'),
        'video-config at start',
      );
      expect(decoded().find((m) => m.type === 'video-config')).toMatchObject({
        channel: 1,
        reason: 'profile',
      });
      await online(robotId);

      // Once all three pilots are in, the robot's IMU speaks, ten times a second, until the page is done.
      const sender = createSocket('udp4');
      cleanups.push(() => new Promise<void>((resolve) => sender.close(() => resolve())));
      const sent: string[] = [];
      let sensorTimer: NodeJS.Timeout | undefined;
      cleanups.push(async () => clearInterval(sensorTimer));
      void publisher
        .until(() => sessionsSeen().some((m) => m.state === 'started' && m.sessions === 3), 'three sessions')
        .then(
          () => {
            sensorTimer = setInterval(() => {
              const message = JSON.stringify({ imu: sent.length });
              sent.push(message);
              sender.send(message, sensorPort, '127.0.0.1');
            }, 100);
          },
          () => undefined,
        );

      const tokens = [
        (await sessionToken(robotId, 'drive')).token,
        (await sessionToken(robotId, 'drive')).token,
        (await sessionToken(robotId, 'observe')).token,
      ];
      const outcomes = await run<PilotOutcome[]>('pilotsViaSignalling', [
        cloud.signalUrl,
        robotId,
        tokens,
        { command: '{"linear":0.5}', sensorCount: 3, seconds: 40, ...(backend !== undefined && { backend }) },
      ]);
      clearInterval(sensorTimer);
      expect(outcomes.map((o) => o.state)).toEqual(['connected', 'connected', 'connected']);
      expect(outcomes.map((o) => o.backend)).toEqual(Array(3).fill(backend ?? 'webtransport'));
      expect(outcomes.map((o) => o.offer?.role)).toEqual(['driver', 'observer', 'observer']);
      expect(outcomes.map((o) => o.role)).toEqual(['driver', 'observer', 'observer']);
      expect(outcomes.map((o) => o.commandSent)).toEqual([true, false, false]);
      // The SDK refuses misuse whatever the role: an unknown channel (naming the real ones), an oversized command.
      for (const outcome of outcomes) {
        expect(outcome.misuse).toHaveLength(2);
        expect(outcome.misuse[0]).toMatch(
          /"no-such-channel" is not a command channel of this robot \(command channels: drive\)/,
        );
        expect(outcome.misuse[1]).toMatch(/exceeds 16384/);
      }
      for (const outcome of outcomes) {
        expect(outcome.sensors.length).toBeGreaterThanOrEqual(3);
        for (const text of outcome.sensors) expect(sent).toContain(text);
      }

      // Every session ended (the page closed them): all commands that were going to arrive have.
      await publisher.until(
        () => sessionsSeen().filter((m) => m.state === 'ended').length >= 3,
        'three sessions ended',
      );
      await commands.until((r) => r.length >= 1, "the driver's command");
      expect(commands.received.map((b) => JSON.parse(b.toString('utf8')))).toEqual([
        { pilot: 0, command: '{"linear":0.5}' },
      ]);
      const offered = outcomes.map((o) => o.offer!.sessionId);
      expect(sessionsSeen().filter((m) => m.state === 'started')).toEqual([
        { type: 'session', state: 'started', session_id: offered[0], role: 'driver', sessions: 1 },
        { type: 'session', state: 'started', session_id: offered[1], role: 'observer', sessions: 2 },
        { type: 'session', state: 'started', session_id: offered[2], role: 'observer', sessions: 3 },
      ]);
      expect(
        sessionsSeen()
          .filter((m) => m.state === 'ended')
          .map((m) => m.type === 'session' && m.session_id)
          .sort(),
      ).toEqual([...offered].sort());
      expect(daemon.process.exitCode).toBeNull();
    },
  );

  it('refuses a token for another robot, an expired token and a forged one, at signalling and at the robot', async () => {
    const other = await newRobot('y-other');
    expect((await enrolByCli(other, await enrolmentToken())).code).toBe(0);
    const daemon = runDaemon(refusedRobot);
    await online('x-refused');

    const valid = (await sessionToken('x-refused', 'drive')).token;
    const forOther = (await sessionToken('y-other', 'drive')).token;
    const [header, payload, signature] = valid.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = [
      header,
      Buffer.from(JSON.stringify({ ...claims, sub: 'user:mallory' })).toString('base64url'),
      signature,
    ].join('.');

    const offered = await run<{ offer: OfferSummary | null; error: unknown }>('tryOffer', [
      cloud.signalUrl,
      'x-refused',
      valid,
    ]);
    expect(offered.error).toBeNull();
    const { urls, certificateHashes } = offered.offer!;

    // The short-lived token was minted at the start of this file; wait out its 30 s and the robot's
    // 5 s clock tolerance if the tests before did not take that long already.
    const left = Date.parse(shortLived.expiresAt) + 6_000 - Date.now();
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));

    const cases: [string, string, string, RegExp][] = [
      ['for another robot', forOther, 'forbidden', /wrong-robot/],
      ['expired', shortLived.token, 'bad-token', /\(expired\)/],
      ['forged', forged, 'bad-token', /bad-signature/],
    ];
    for (const [what, token, offerCode, robotReason] of cases) {
      const atSignalling = await run<{ offer: unknown; error: { code: string; message: string } | null }>(
        'tryOffer',
        [cloud.signalUrl, 'x-refused', token],
      );
      expect(atSignalling.offer, what).toBeNull();
      expect(atSignalling.error?.code, what).toBe(offerCode);
      const atRobot = await run<PilotOutcome>('connectDirect', [urls, certificateHashes, token, 20]);
      expect(atRobot.state, what).toBe('denied');
      expect(atRobot.detail, what).toMatch(robotReason);
    }
    const accepted = await run<PilotOutcome>('connectDirect', [urls, certificateHashes, valid, 20]);
    expect(accepted).toMatchObject({ state: 'connected', role: 'driver' });
    for (const secret of [valid, forOther, shortLived.token, forged]) {
      for (const part of secret.split('.')) expect(daemon.log()).not.toContain(part);
    }
  });

  it('while svc-cloud is stopped the robot still admits a pilot with a token minted before, at the address of an earlier offer', async () => {
    const robot = await newRobot('cloudless');
    const daemon = runDaemon(robot, { SVC_ENROLMENT_TOKEN: await enrolmentToken() });
    await online('cloudless');
    const earlier = (await sessionToken('cloudless', 'drive')).token;
    const later = (await sessionToken('cloudless', 'drive')).token;
    const [first] = await run<PilotOutcome[]>('pilotsViaSignalling', [
      cloud.signalUrl,
      'cloudless',
      [earlier],
      { seconds: 30 },
    ]);
    expect(first).toMatchObject({ state: 'connected', role: 'driver' });
    await access(`${robot.credentialPath}.session-jwks.json`);

    await cloud.shutdown();
    try {
      const { urls, certificateHashes } = first!.offer!;
      const direct = await run<PilotOutcome>('connectDirect', [urls, certificateHashes, later, 20]);
      expect(direct).toMatchObject({ state: 'connected', role: 'driver' });
      expect(daemon.process.exitCode).toBeNull();
    } finally {
      await cloud.restart();
      alice = await cloud.signIn('dev-alice');
    }
  });
});
