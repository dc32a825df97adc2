/**
 * A fleet across a network the test builds (`createTopology` of `@svc/testkit`): svc-cloud and
 * the pilot's Chromium in the "internet" namespace, robots behind the NAT router in the "robot"
 * namespace with their cameras, alice signed in from the test process.
 *
 * svc-cloud's public URL is `http://127.0.0.1:<port>` everywhere: in the internet namespace that is
 * svc-cloud itself (Chromium loads the pages from a secure context), and the test process and the
 * robot reach it through a TCP forwarder on their own loopback (svcd takes `ws://` only for the
 * local host; a deployment has `wss://`), so every token's issuer is the one URL. The robot's QUIC
 * and relay traffic cross the NAT like any robot's; the relay is named by its real address.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { findChromium, type LaunchedChromium, launchChromium } from './chromium.js';
import { type CloudProcess, type SignedInPerson, startCloudProcess } from './cloud-process.js';
import { ffmpegRtpSource, type RunningSource } from './media-sources.js';
import { createTopology, type Topology, type TopologyOptions } from './netns/index.js';
import { freeUdpPort } from './ports.js';
import { type RobotDaemon, type RobotFiles, startRobotDaemon, writeRobotConfig } from './robot-daemon.js';
import { startTcpForwarder, type TcpForwarder } from './tcp-forward.js';

/** A robot behind the router, its camera and daemon running. */
export interface NetnsRobot {
  readonly robotId: string;
  readonly files: RobotFiles;
  readonly daemon: RobotDaemon;
  /** Its ffmpeg test pattern, unless the caller brings its own camera (`camera: false`). */
  readonly camera: RunningSource | undefined;
  /** A pilot session token for it, minted by alice (`ttlSeconds` as the API takes it). */
  token(scope?: 'drive' | 'observe', ttlSeconds?: number): Promise<string>;
  stop(): Promise<void>;
}

/** Options of {@link NetnsFleet.robot}. */
export interface NetnsRobotOptions {
  /** `[agent]` lines besides the defaults, e.g. `relay = true`. */
  readonly agent?: readonly string[];
  /** Extra environment of the daemon. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * `[[channel]]` lines (default one H.264 channel `front` fed by an ffmpeg test pattern on the
   * robot's loopback).
   */
  readonly channels?: readonly string[];
  /** `false`: start no camera (the caller feeds the channels it configured). */
  readonly camera?: false;
}

/** Options of {@link startNetnsFleet}. */
export interface NetnsFleetOptions extends TopologyOptions {
  /** `false`: launch no Chromium (the caller brings its own browser). */
  readonly chromium?: false;
  /** svc-cloud's environment besides the fleet's own (e.g. `SVC_RELAY_PORTS`). */
  readonly cloudEnv?: Readonly<Record<string, string>>;
}

/** The network, the cloud, alice, Chromium. */
export interface NetnsFleet {
  readonly topology: Topology;
  readonly cloud: CloudProcess;
  readonly alice: SignedInPerson;
  /** The internet namespace's Chromium (absent with `chromium: false`). */
  readonly chromium: LaunchedChromium | undefined;
  /** The robot-namespace command prefix (`ip netns exec <robot>`). */
  readonly inRobot: readonly string[];
  robot(robotId: string, options?: NetnsRobotOptions): Promise<NetnsRobot>;
  /**
   * Opens svc-cloud's pilot page in a fresh browser context of the internet namespace's Chromium
   * (loaded from `http://127.0.0.1`, a secure context, as a person there would).
   */
  openPilot(robotId: string, token: string): Promise<{ page: Page; context: BrowserContext }>;
  stop(): Promise<void>;
}

/** Builds the topology and starts everything but robots. */
export async function startNetnsFleet(options: NetnsFleetOptions = {}): Promise<NetnsFleet> {
  const { chromium: withChromium, cloudEnv, ...topologyOptions } = options;
  const topology = (await createTopology(topologyOptions)) as Topology;
  const stops: (() => Promise<unknown>)[] = [() => topology.close()];
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const v4 = topology.addresses.ipv4;
    const v6 = topology.addresses.ipv6;
    const cloudHost = v4?.cloud ?? v6!.cloud;
    const inInternet = ['ip', 'netns', 'exec', topology.namespaces.internet];
    const inRobot = ['ip', 'netns', 'exec', topology.namespaces.robot];
    const cloud = await startCloudProcess({
      prefix: inInternet,
      host: v4 === undefined ? '::' : '0.0.0.0',
      env: { SVC_RELAY_HOST: cloudHost, ...cloudEnv },
    });
    stops.push(() => cloud.stop());
    const fromTest = await startTcpForwarder({ targetHost: cloudHost, targetPort: cloud.port });
    stops.push(() => fromTest.stop());
    const alice = await cloud.signIn('dev-alice').catch((err: unknown) => {
      throw new Error(`${String(err)}\n${cloud.log().slice(-3000)}`);
    });
    const forwarder: TcpForwarder = await startTcpForwarder({
      prefix: inRobot,
      targetHost: cloudHost,
      targetPort: cloud.port,
    });
    stops.push(() => forwarder.stop());
    const chromium =
      withChromium === false
        ? undefined
        : await launchChromium({ executablePath: topology.wrapperFor('internet', findChromium()) });
    if (chromium !== undefined) stops.push(() => chromium.close());
    const robots = new Set<NetnsRobot>();
    return {
      topology,
      cloud,
      alice,
      chromium,
      inRobot,
      async robot(robotId, robotOptions = {}) {
        const enrolment = await cloud.call('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {
          token: alice.accessToken,
          body: {},
        });
        if (enrolment.status !== 201) throw new Error(`enrolment token: ${enrolment.status}`);
        const rtpPort = await freeUdpPort();
        const files = await writeRobotConfig({
          robotId,
          signalUrl: `ws://127.0.0.1:${forwarder.port}/ws`,
          channels: robotOptions.channels ?? videoChannel(`rtp://127.0.0.1:${rtpPort}`),
          agent: robotOptions.agent ?? [],
        });
        const camera =
          robotOptions.camera === false
            ? undefined
            : ffmpegRtpSource({ codec: 'h264', port: rtpPort, frames: 100_000, gop: 30, prefix: inRobot });
        const daemon = startRobotDaemon(
          files,
          { SVC_ENROLMENT_TOKEN: enrolment.body.token as string, ...robotOptions.env },
          { prefix: inRobot, host: null },
        );
        const robot: NetnsRobot = {
          robotId,
          files,
          daemon,
          camera,
          async token(scope = 'drive', ttlSeconds) {
            const answer = await cloud.call('POST', '/api/v1/session-tokens', {
              token: alice.accessToken,
              body: { robotId, scope, ...(ttlSeconds === undefined ? {} : { ttlSeconds }) },
            });
            if (answer.status !== 201)
              throw new Error(`session token: ${answer.status} ${JSON.stringify(answer.body)}`);
            return answer.body.token as string;
          },
          async stop() {
            robots.delete(robot);
            await daemon.stop();
            await camera?.stop();
            await files.remove();
          },
        };
        robots.add(robot);
        stops.push(() => robot.stop());
        await whenOnline(cloud, alice, robotId);
        return robot;
      },
      async openPilot(robotId, token) {
        if (chromium === undefined)
          throw new TypeError('openPilot: this fleet has no Chromium (chromium: false)');
        const context = await chromium.browser.newContext();
        stops.push(() => context.close());
        const page = await context.newPage();
        const fragment = `robot=${encodeURIComponent(robotId)}&token=${encodeURIComponent(token)}`;
        await page.goto(`http://127.0.0.1:${cloud.port}/pilot/#${fragment}`);
        return { page, context };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function whenOnline(cloud: CloudProcess, alice: SignedInPerson, robotId: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await cloud.call('GET', `/api/v1/robots/${robotId}`, { token: alice.accessToken });
    if (answer.status === 200 && answer.body.robot.online === true) return;
    if (Date.now() > deadline)
      throw new Error(`robot ${robotId} never came online: ${JSON.stringify(answer.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One H.264 video channel called `front` fed from `input`. */
function videoChannel(input: string): string[] {
  return [
    '[[channel]]',
    'kind = "video"',
    'name = "front"',
    `input = "${input}"`,
    'codec = "avc1.42c00d"',
    'fps = 30',
  ];
}
