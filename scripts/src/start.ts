/**
 * `npm start` (after `scripts/start.sh` checked Node, the dependencies and built the pages):
 * svc-cloud, and with the development provider the demonstration robot (`docs/demo.md`), until
 * Ctrl-C or SIGTERM.
 *
 *   npm start [-- --no-demo] [svc-cloud arguments]
 *
 * Policy on children: svc-cloud ending ends `npm start` (with its exit code, after the demo robot
 * is stopped); the demo robot's `svcd` dying is reported and restarted with backoff, and after
 * three deaths in a row without coming online the demo gives up while svc-cloud keeps running.
 *
 * stdout carries the lines a person reads first (svc-cloud's address, the demo robot online and
 * who can drive it); the logs of svc-cloud, the launcher and svcd go to stderr.
 *
 * @packageDocumentation
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@svc/runtime/node';
import { type DemoRobot, startDemoRobot } from './demo/robot.js';
import { NO_DEMO_ARGUMENT, planStart } from './start-plan.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SVC_CLOUD = path.join(ROOT, 'packages/cloud/bin/svc-cloud');
/** The line svc-cloud prints on stdout once it accepts connections. */
const LISTENING = /^svc-cloud listening on (\S+) \(public URL (\S+)\)/;
/** svc-cloud's default data folder (`CLOUD_DEFAULTS.dataDir`), relative to where it runs. */
const DEFAULT_DATA_DIR = './svc-data';

const say = (line: string) => process.stdout.write(`npm start: ${line}\n`);

async function main(): Promise<number> {
  const plan = planStart(process.argv.slice(2), process.env);
  const log = createLogger({ name: 'demo-robot' });
  const svcdLog = createLogger({ name: 'svcd (demo robot)' });

  if (plan.development) {
    const org = plan.env.SVC_DEFAULT_ORG_NAME;
    say(
      plan.env.SVC_PROVISIONING === 'default-org'
        ? `development sign-in: test users join the org "${org}" by their group (${plan.env.SVC_OIDC_ROLE_MAP})`
        : `development sign-in, provisioning ${plan.env.SVC_PROVISIONING}`,
    );
  }
  say(
    plan.demo.on
      ? `demo robot on (off: npm start -- ${NO_DEMO_ARGUMENT}, or SVC_DEMO=0)`
      : `demo robot off: ${plan.demo.reason}`,
  );

  const cloud = spawn(SVC_CLOUD, [...plan.cloudArgs], {
    env: plan.env,
    stdio: ['inherit', 'pipe', 'inherit'],
  });
  const cloudExited = new Promise<number>((resolve) =>
    cloud.once('close', (code, signal) =>
      resolve(code ?? (signal === null ? 1 : 128 + signalNumber(signal))),
    ),
  );
  /** The demo robot once svc-cloud listens: starting, started, or undefined when it could not start. */
  let demo: Promise<DemoRobot | undefined> | undefined;
  let stopping = false;

  createInterface({ input: cloud.stdout!, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
    process.stdout.write(`${line}\n`);
    const listening = LISTENING.exec(line);
    if (listening === null || !plan.demo.on || stopping || demo !== undefined) return;
    const [, address, publicUrl] = listening as unknown as [string, string, string];
    demo = startDemoRobot({
      cloudAddress: address,
      dataDir: plan.env.SVC_DATA_DIR?.trim() || DEFAULT_DATA_DIR,
      logger: log,
      svcdLogger: svcdLog,
    }).then(
      (robot) => {
        robot.events.on('online', (first) =>
          say(
            first
              ? `demo robot ${robot.robotId} online; sign in as Bob (operator) at ${publicUrl}/console/ to drive it (Vera, the viewer, may watch)`
              : `demo robot ${robot.robotId} online again`,
          ),
        );
        robot.events.on('gave-up', (reason) =>
          say(
            `demo robot stopped: ${reason}; svc-cloud keeps running (npm start -- ${NO_DEMO_ARGUMENT} to skip it)`,
          ),
        );
        return robot;
      },
      (err: unknown) => {
        log.error({ err }, `demo robot: cannot start: ${(err as Error).message}`);
        return undefined;
      },
    );
  });
  const stopDemo = async () => (await demo)?.stop();

  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second Ctrl-C: no more waiting.
      cloud.kill('SIGKILL');
      const pid = (await demo)?.svcdPid();
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
      process.exit(130);
    }
    stopping = true;
    say(`${signal}: stopping${demo === undefined ? '' : ' the demo robot and'} svc-cloud`);
    await stopDemo();
    if (cloud.exitCode === null && cloud.signalCode === null) cloud.kill('SIGTERM');
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  const code = await cloudExited;
  if (!stopping) {
    say(`svc-cloud exited (code ${code}); stopping`);
    stopping = true;
  }
  await stopDemo();
  return code;
}

/** The number of a signal, for the shell's 128 + n exit code. */
function signalNumber(signal: NodeJS.Signals): number {
  return { SIGINT: 2, SIGTERM: 15, SIGKILL: 9 }[signal as string] ?? 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('npm start failed:', err);
    process.exit(1);
  },
);
