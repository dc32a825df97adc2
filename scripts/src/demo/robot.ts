import { createSocket } from 'node:dgram';
import { access, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Clock, type Logger, systemClock, TypedEmitter } from '@svc/runtime';
import { writePrivateFile } from '@svc/runtime/node';
import { DemoError } from './errors.js';
import { type H264Clip, parseH264Clip } from './h264-rtp.js';
import { type CommandLine, CommandLog, listenForCommands, startHeartbeat } from './robot-io.js';
import { type RtpLoop, startRtpLoop } from './rtp-looper.js';
import { type SvcdExit, SvcdSupervisor } from './svcd-process.js';

/** The demo robot's id; the same as svc-cloud's `DEMO_ROBOT_ID` (`packages/cloud/src/demo.ts`). */
export const DEMO_ROBOT_ID = 'demo-robot';
/** The token file svc-cloud writes in the robot's folder; the same as its `DEMO_TOKEN_FILE`. */
export const DEMO_TOKEN_FILE = 'enrolment-token';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The daemon, run from its sources. */
export const SVCD_COMMAND = path.join(ROOT, 'packages/svcd/bin/svcd');
/** The bundled clip (`scripts/assets/README.md` says how it was made). */
export const DEMO_CLIP = path.join(ROOT, 'scripts/assets/demo-clip.h264');
/** Frame rate of the bundled clip. */
export const DEMO_CLIP_FPS = 30;
/** The launcher listens and svcd serves on loopback only: the demo is for this machine's browser. */
const LOOPBACK = '127.0.0.1';

/** The robot's folder in svc-cloud's data folder (svc-cloud's `demoRobotDir`). */
export function demoRobotDir(dataDir: string): string {
  return path.join(dataDir, DEMO_ROBOT_ID);
}

/** Names of the robot's channels, as the pilot shows them. */
export const DEMO_CHANNELS = { video: 'camera', sensor: 'heartbeat', command: 'drive' } as const;

/** Options of {@link startDemoRobot}. */
export interface DemoRobotOptions {
  /** svc-cloud's address, e.g. `http://127.0.0.1:8080` (what it prints when it listens). */
  readonly cloudAddress: string;
  /** svc-cloud's data folder (`SVC_DATA_DIR`, default `./svc-data`). */
  readonly dataDir: string;
  /** The launcher's own lines. */
  readonly logger: Logger;
  /** svcd's lines, each at its level. Default: `logger` with `process: "svcd"`. */
  readonly svcdLogger?: Logger;
  /** The environment svcd starts from (its `SVC_*` variables are left out). Default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  readonly clock?: Clock;
  readonly random?: () => number;
  readonly svcdCommand?: string;
  readonly clipFile?: string;
  /** svcd exits in a row without coming online before the launcher gives up. Default 3. */
  readonly maxFailedStarts?: number;
  /** Command lines are written at most this often, ms. Default 1000. */
  readonly commandLogIntervalMs?: number;
  /** Heartbeat period, ms. Default 1000. */
  readonly heartbeatMs?: number;
}

/** Events of a {@link DemoRobot}. */
export type DemoRobotEvents = {
  /** svc-cloud accepted the robot; `firstTime` is false after a reconnection or a restart. */
  online: (firstTime: boolean) => void;
  /** A line of the command log (rate-limited: a held key gives one a second). */
  command: (line: CommandLine) => void;
  /** svcd ended on its own (it is restarted unless `restartInMs` is undefined). */
  'svcd-exit': (exit: SvcdExit) => void;
  /** The launcher stopped trying to run svcd; svc-cloud is not affected. */
  'gave-up': (reason: string) => void;
};

/** The UDP ports of a running demo robot, all on 127.0.0.1. */
export interface DemoPorts {
  /** svcd's RTP input, where the looped clip goes. */
  readonly rtp: number;
  /** svcd's sensor input, where the heartbeat goes. */
  readonly sensor: number;
  /** The launcher's command socket, svcd's command output. */
  readonly command: number;
  /** svcd's WebTransport (QUIC) port. */
  readonly quic: number;
}

/** A running demo robot. */
export interface DemoRobot {
  readonly robotId: string;
  readonly events: TypedEmitter<DemoRobotEvents>;
  readonly dir: string;
  readonly configFile: string;
  readonly ports: DemoPorts;
  /** The clip's codec string, as configured on the video channel. */
  readonly codec: string;
  /** The camera's counters. */
  readonly camera: RtpLoop['stats'];
  /** Commands received so far. */
  commandsReceived(): number;
  /** Heartbeats sent so far. */
  heartbeatsSent(): number;
  /** svcd's supervisor state: `running`, `waiting` (to restart), `gave-up`, ... */
  svcdState(): string;
  /** svcd's process id while it runs. */
  svcdPid(): number | undefined;
  /** Stops svcd, the camera, the heartbeat and the command listener. */
  stop(): Promise<void>;
}

/**
 * Starts the demo robot against the svc-cloud at `cloudAddress`: writes its configuration, starts
 * the camera, the heartbeat and the command listener, then `svcd` (with the enrolment token
 * svc-cloud wrote, on a first start). Resolves once all of that is started, not once the robot is
 * online (the `online` event says so).
 *
 * @throws {DemoError} `bad-address` for a cloud address svcd could not use over plain `ws://`,
 *   `bad-clip` for a clip that cannot loop.
 */
export async function startDemoRobot(options: DemoRobotOptions): Promise<DemoRobot> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const { logger } = options;
  const signalUrl = signalUrlOf(options.cloudAddress);
  const clip = parseH264Clip(new Uint8Array(await readFile(options.clipFile ?? DEMO_CLIP)));
  const dir = path.resolve(demoRobotDir(options.dataDir));
  const credentialFile = path.join(dir, 'credential');
  const configFile = path.join(dir, 'svcd.toml');
  await mkdir(dir, { recursive: true, mode: 0o700 });

  const events = new TypedEmitter<DemoRobotEvents>(logger);
  const commandLog = new CommandLog({
    clock,
    intervalMs: options.commandLogIntervalMs ?? 1000,
    write: (line) => {
      logger.info(
        { channel: DEMO_CHANNELS.command, count: line.count, total: line.total },
        `demo robot: command on "${DEMO_CHANNELS.command}": ${line.text}${line.count > 1 ? ` (and ${line.count - 1} before it since the last line)` : ''}`,
      );
      events.safeEmit('command', line);
    },
  });
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };
  try {
    const commands = await listenForCommands(LOOPBACK, (d) => commandLog.handleCommand(d), logger);
    stops.push(async () => {
      commandLog.close();
      await commands.close();
    });
    const [rtp, sensor, quic] = await freeUdpPorts(3);
    const ports: DemoPorts = { rtp: rtp!, sensor: sensor!, command: commands.port, quic: quic! };
    await writeConfig(configFile, { signalUrl, credentialFile, ports, clip });

    const camera = await startRtpLoop({
      clip,
      fps: DEMO_CLIP_FPS,
      target: { host: LOOPBACK, port: ports.rtp },
      clock,
      random,
      logger,
    });
    stops.push(() => camera.stop());
    const heartbeat = await startHeartbeat({
      target: { host: LOOPBACK, port: ports.sensor },
      clock,
      periodMs: options.heartbeatMs ?? 1000,
      status: () => ({ commands: commandLog.total, lastCommand: commandLog.latest ?? null }),
      logger,
    });
    stops.push(() => heartbeat.stop());

    const svcd = new SvcdSupervisor({
      command: options.svcdCommand ?? SVCD_COMMAND,
      args: ['--config', configFile, '--host', LOOPBACK],
      environment: () => svcdEnvironment(options.env ?? process.env, dir, credentialFile),
      svcdLogger: options.svcdLogger ?? logger.child({ process: 'svcd' }),
      clock,
      random,
      maxFailedStarts: options.maxFailedStarts ?? 3,
    });
    svcd.on('online', (first) => events.safeEmit('online', first));
    svcd.on('exit', (exit) => {
      events.safeEmit('svcd-exit', exit);
      if (exit.code === 0) {
        logger.info('demo robot: svcd stopped (a signal asked it to); not started again');
        return;
      }
      logger.warn(
        { code: exit.code, signal: exit.signal, tail: exit.tail },
        exit.restartInMs === undefined
          ? `demo robot: svcd exited (${exitText(exit)})`
          : `demo robot: svcd exited (${exitText(exit)}); starting it again in ${(exit.restartInMs / 1000).toFixed(1)} s`,
      );
    });
    svcd.on('gave-up', (reason) => {
      logger.error({ reason }, `demo robot: gave up (svc-cloud keeps running): ${reason}`);
      events.safeEmit('gave-up', reason);
    });
    stops.push(() => svcd.stop());
    logger.info(
      {
        robotId: DEMO_ROBOT_ID,
        config: configFile,
        camera: `rtp://${LOOPBACK}:${ports.rtp} (${clip.codec}, ${clip.frames.length} frames looped at ${DEMO_CLIP_FPS} fps)`,
        heartbeat: `udp://${LOOPBACK}:${ports.sensor}`,
        commands: `udp://${LOOPBACK}:${ports.command}`,
      },
      `demo robot: starting svcd for ${DEMO_ROBOT_ID}`,
    );
    svcd.start();

    return {
      robotId: DEMO_ROBOT_ID,
      events,
      dir,
      configFile,
      ports,
      codec: clip.codec,
      camera: camera.stats,
      commandsReceived: () => commandLog.total,
      heartbeatsSent: () => heartbeat.sent,
      svcdState: () => svcd.state,
      svcdPid: () => svcd.pid,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * The environment of one svcd start: the launcher's without any `SVC_*` variable (those configure
 * svc-cloud), plus `SVC_ENROLMENT_TOKEN` while the robot has no enrolment record.
 *
 * @throws {DemoError} `no-enrolment` when there is neither a record nor a token.
 */
async function svcdEnvironment(
  base: NodeJS.ProcessEnv,
  dir: string,
  credentialFile: string,
): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) if (!key.startsWith('SVC_')) env[key] = value;
  // svcd keeps `<credential>.enrolled` once a token enrolled it (enrolment.ts, enrolmentRecordPath).
  if (await exists(`${credentialFile}.enrolled`)) return env;
  let token: string;
  try {
    token = (await readFile(path.join(dir, DEMO_TOKEN_FILE), 'utf8')).trim();
  } catch (cause) {
    throw new DemoError(
      'no-enrolment',
      `the demo robot is not enrolled here and svc-cloud wrote no enrolment token into ${dir}: ` +
        'svc-cloud needs SVC_DEMO=1 (npm start sets it), and when it says the robot is enrolled already ' +
        `(its credential was lost), delete robot ${DEMO_ROBOT_ID} in the console and start again`,
      { cause },
    );
  }
  return { ...env, SVC_ENROLMENT_TOKEN: token };
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * `ws://<host>:<port>/ws` of an `http://` address; a wildcard host becomes loopback.
 *
 * @throws {DemoError} `bad-address` for anything svcd would refuse over plain `ws://` (only
 *   loopback is allowed without TLS).
 */
export function signalUrlOf(cloudAddress: string): string {
  let url: URL;
  try {
    url = new URL(cloudAddress);
  } catch (cause) {
    throw new DemoError('bad-address', `"${cloudAddress}" is not svc-cloud's http:// address`, { cause });
  }
  if (url.protocol !== 'http:')
    throw new DemoError('bad-address', `"${cloudAddress}" is not svc-cloud's http:// address`);
  const host =
    { '0.0.0.0': '127.0.0.1', '[::]': '[::1]', localhost: '127.0.0.1' }[url.hostname] ?? url.hostname;
  if (!['127.0.0.1', '[::1]'].includes(host))
    throw new DemoError(
      'bad-address',
      `svc-cloud listens on ${url.hostname}, not loopback: the demo robot signals over plain ws://, which svcd allows on loopback only (run npm start -- --no-demo)`,
    );
  return `ws://${host}:${url.port}/ws`;
}

/** What the configuration needs. */
interface ConfigValues {
  readonly signalUrl: string;
  readonly credentialFile: string;
  readonly ports: DemoPorts;
  readonly clip: H264Clip;
}

/** Writes the robot's `svcd.toml` (0600, atomically): one camera, one heartbeat, one drive channel. */
async function writeConfig(file: string, values: ConfigValues): Promise<void> {
  const { ports } = values;
  // TOML basic strings take JSON's escapes.
  const text = [
    '# The demo robot of npm start: written by scripts/src/demo/robot.ts at every start (edits are lost).',
    '[agent]',
    `robot_id = ${JSON.stringify(DEMO_ROBOT_ID)}`,
    `signal_url = ${JSON.stringify(values.signalUrl)}`,
    `credential_path = ${JSON.stringify(values.credentialFile)}`,
    `quic_port = ${ports.quic}`,
    '',
    '[[channel]]',
    'kind = "video"',
    `name = ${JSON.stringify(DEMO_CHANNELS.video)}`,
    `input = "rtp://${LOOPBACK}:${ports.rtp}?rtcp=none"`,
    `codec = ${JSON.stringify(values.clip.codec)}`,
    `fps = ${DEMO_CLIP_FPS}`,
    '',
    '[[channel]]',
    'kind = "sensor"',
    `name = ${JSON.stringify(DEMO_CHANNELS.sensor)}`,
    `input = "udp://${LOOPBACK}:${ports.sensor}"`,
    'codec = "json"',
    '',
    '[[channel]]',
    'kind = "command"',
    `name = ${JSON.stringify(DEMO_CHANNELS.command)}`,
    `output = "udp://${LOOPBACK}:${ports.command}"`,
    'codec = "json"',
    '',
  ].join('\n');
  await writePrivateFile(file, text);
}

/**
 * `count` UDP ports on loopback that were free a moment ago, for svcd to bind (all held at once, so
 * they differ, then released).
 */
async function freeUdpPorts(count: number): Promise<number[]> {
  const sockets = Array.from({ length: count }, () => createSocket('udp4'));
  try {
    await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.bind(0, LOOPBACK, resolve))));
    return sockets.map((s) => s.address().port);
  } finally {
    await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

function exitText(exit: SvcdExit): string {
  return exit.signal === null ? `code ${exit.code}` : `signal ${exit.signal}`;
}
