/**
 * A small fleet for end-to-end tests: one real svc-cloud process, alice signed in (she owns her
 * org), and robots of her org, each a real `svcd` process enrolled with a token alice created,
 * online in signalling, with pilot session tokens minted by alice. What a pilot page needs is the
 * cloud's `signalUrl`, the robot id and a token.
 */
import {
  type CloudProcess,
  type RobotConfigOptions,
  type RobotDaemon,
  type RobotFiles,
  type SignedInPerson,
  startCloudProcess,
  startRobotDaemon,
  writeRobotConfig,
} from '@svc/testkit';

/** A robot of the fleet, its daemon running. */
export interface FleetRobot {
  readonly files: RobotFiles;
  /** The current daemon process (a new one after {@link FleetRobot.restart}). */
  readonly daemon: RobotDaemon;
  /** Everything every daemon process of this robot logged. */
  log(): string;
  /** A pilot session token for this robot, minted by alice. */
  token(scope?: 'drive' | 'observe'): Promise<string>;
  /** Stops the daemon and starts it again with the same files (key, enrolment, certificate). */
  restart(): Promise<void>;
  /** Stops the daemon and removes the robot's files. */
  remove(): Promise<void>;
}

/** The cloud, alice, and a way to add robots. */
export interface Fleet {
  readonly cloud: CloudProcess;
  readonly alice: SignedInPerson;
  /**
   * Writes a configuration for `robotId` with `channels` (TOML lines), starts its daemon with a
   * fresh enrolment token in `SVC_ENROLMENT_TOKEN`, and resolves once svc-cloud shows it online.
   */
  robot(
    robotId: string,
    channels: readonly string[],
    options?: Omit<RobotConfigOptions, 'robotId' | 'signalUrl' | 'channels'>,
  ): Promise<FleetRobot>;
  /** Removes every robot and stops the cloud. */
  stop(): Promise<void>;
}

/** Starts svc-cloud (embedded database) and signs alice in. */
export async function startFleet(): Promise<Fleet> {
  const cloud = await startCloudProcess();
  const robots = new Set<FleetRobot>();
  let alice: SignedInPerson;
  try {
    alice = await cloud.signIn('dev-alice');
  } catch (err) {
    await cloud.stop();
    throw err;
  }

  const expectStatus = (answer: { status: number; body: unknown }, status: number, what: string) => {
    if (answer.status !== status)
      throw new Error(`${what}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.body)}`);
  };

  const enrolmentToken = async (): Promise<string> => {
    const answer = await cloud.call('POST', `/api/v1/orgs/${alice.orgId}/enrolment-tokens`, {
      token: alice.accessToken,
      body: {},
    });
    expectStatus(answer, 201, 'create an enrolment token');
    return answer.body.token as string;
  };

  const whenOnline = async (robotId: string): Promise<void> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const answer = await cloud.call('GET', `/api/v1/robots/${robotId}`, { token: alice.accessToken });
      if (answer.status === 200 && answer.body.robot.online === true) return;
      if (Date.now() > deadline)
        throw new Error(
          `robot ${robotId} never came online: ${answer.status} ${JSON.stringify(answer.body)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  return {
    cloud,
    alice,
    async robot(robotId, channels, options = {}) {
      const files = await writeRobotConfig({ robotId, signalUrl: cloud.signalUrl, channels, ...options });
      let daemon = startRobotDaemon(files, { SVC_ENROLMENT_TOKEN: await enrolmentToken() });
      let earlierLogs = '';
      const robot: FleetRobot = {
        files,
        get daemon() {
          return daemon;
        },
        log: () => earlierLogs + daemon.log(),
        async token(scope = 'drive') {
          const answer = await cloud.call('POST', '/api/v1/session-tokens', {
            token: alice.accessToken,
            body: { robotId, scope },
          });
          expectStatus(answer, 201, `mint a ${scope} token for ${robotId}`);
          return answer.body.token as string;
        },
        async restart() {
          await daemon.stop();
          earlierLogs += daemon.log();
          daemon = startRobotDaemon(files);
        },
        async remove() {
          robots.delete(robot);
          await daemon.stop();
          await files.remove();
        },
      };
      robots.add(robot);
      await whenOnline(robotId);
      return robot;
    },
    async stop() {
      for (const robot of [...robots]) await robot.remove();
      await cloud.stop();
    },
  };
}
