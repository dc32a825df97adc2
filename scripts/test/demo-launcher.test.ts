/**
 * The demo launcher's parts that need neither svc-cloud nor svcd: what `npm start` decides from its
 * arguments and environment, the rate-limited command log, svcd's log lines, the supervisor's
 * restart and give-up policy (with stand-in processes), and the names shared with svc-cloud.
 */
import {
  DEMO_ROBOT_ID as CLOUD_ROBOT_ID,
  DEMO_TOKEN_FILE as CLOUD_TOKEN_FILE,
  demoRobotDir as cloudDir,
} from '@svc/cloud';
import { systemClock } from '@svc/runtime';
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { isDemoError } from '../src/demo/errors.js';
import { DEMO_ROBOT_ID, DEMO_TOKEN_FILE, demoRobotDir, signalUrlOf } from '../src/demo/robot.js';
import { type CommandLine, CommandLog } from '../src/demo/robot-io.js';
import { parseLogLine, SvcdSupervisor } from '../src/demo/svcd-process.js';
import { DEVELOPMENT_DEFAULTS, planStart } from '../src/start-plan.js';

describe('planStart (what npm start runs)', () => {
  it('with nothing set: the development defaults and the demo robot', () => {
    const plan = planStart([], { PATH: '/bin' });
    expect(plan.development).toBe(true);
    expect(plan.demo).toEqual({ on: true });
    expect(plan.env).toMatchObject({ ...DEVELOPMENT_DEFAULTS, SVC_DEMO: '1', PATH: '/bin' });
    expect(plan.cloudArgs).toEqual([]);
  });

  it('leaves every variable the user set as it is, and passes other arguments to svc-cloud', () => {
    const plan = planStart(['--help'], {
      SVC_PROVISIONING: 'self-serve',
      SVC_DEFAULT_ORG_NAME: 'Acme',
      SVC_OIDC_ROLE_MAP: 'staff=viewer',
    });
    expect(plan.env).toMatchObject({
      SVC_PROVISIONING: 'self-serve',
      SVC_DEFAULT_ORG_NAME: 'Acme',
      SVC_OIDC_ROLE_MAP: 'staff=viewer',
      SVC_OIDC_ROLE_CLAIM: 'groups',
    });
    expect(plan.defaultsApplied).toEqual(['SVC_OIDC_ROLE_CLAIM']);
    expect(plan.cloudArgs).toEqual(['--help']);
  });

  it('turns the demo off with --no-demo (telling svc-cloud too) or SVC_DEMO=0', () => {
    const flag = planStart(['--no-demo', '--help'], {});
    expect(flag.demo).toEqual({ on: false, reason: '--no-demo was given' });
    expect(flag.env.SVC_DEMO).toBe('0');
    expect(flag.cloudArgs).toEqual(['--help']);
    expect(planStart([], { SVC_DEMO: '0' }).demo).toEqual({ on: false, reason: 'SVC_DEMO=0' });
  });

  it('with an external identity provider: no development defaults and no demo, unless SVC_DEMO=1 (which svc-cloud refuses by name)', () => {
    const external = { SVC_OIDC_ISSUER: 'https://id.example.com' };
    const plan = planStart([], external);
    expect(plan.development).toBe(false);
    expect(plan.defaultsApplied).toEqual([]);
    expect(plan.env.SVC_PROVISIONING).toBeUndefined();
    expect(plan.demo.on).toBe(false);
    expect(planStart([], { ...external, SVC_DEMO: '1' }).demo).toEqual({ on: true });
  });
});

describe('the names svc-cloud and the launcher share', () => {
  it('are the same on both sides: the robot id, its folder and the token file', () => {
    expect(DEMO_ROBOT_ID).toBe(CLOUD_ROBOT_ID);
    expect(DEMO_TOKEN_FILE).toBe(CLOUD_TOKEN_FILE);
    expect(demoRobotDir('/data')).toBe(cloudDir('/data'));
  });
});

describe('signalUrlOf', () => {
  it('turns the address svc-cloud prints into the ws:// signalling URL, wildcards into loopback', () => {
    expect(signalUrlOf('http://127.0.0.1:8080')).toBe('ws://127.0.0.1:8080/ws');
    expect(signalUrlOf('http://0.0.0.0:9000')).toBe('ws://127.0.0.1:9000/ws');
    expect(signalUrlOf('http://[::1]:9000')).toBe('ws://[::1]:9000/ws');
  });

  it('refuses what svcd would refuse over plain ws://, saying so', () => {
    for (const address of ['http://192.0.2.7:8080', 'https://127.0.0.1:8080', 'nonsense']) {
      let error: unknown;
      try {
        signalUrlOf(address);
      } catch (err) {
        error = err;
      }
      expect(isDemoError(error, 'bad-address'), address).toBe(true);
    }
  });
});

describe('CommandLog', () => {
  const command = (n: number, linear: number) =>
    new TextEncoder().encode(JSON.stringify({ v: 1, type: 'drive', seq: n, linear, angular: 0 }));

  it('writes a held key as one line a second, and always the last command', () => {
    const clock = new FakeClock();
    const lines: CommandLine[] = [];
    const log = new CommandLog({ clock, intervalMs: 1000, write: (line) => lines.push(line) });
    // A key held for 2.5 s at 20 commands a second, then released (one zero command).
    for (let n = 1; n <= 50; n++) {
      log.handleCommand(command(n, 0.5));
      clock.advance(50);
    }
    log.handleCommand(command(51, 0));
    clock.advance(2000);
    expect(lines.length).toBeLessThanOrEqual(4);
    expect(lines[0]).toMatchObject({ count: 1, total: 1 });
    expect(lines.reduce((sum, line) => sum + line.count, 0)).toBe(51);
    expect(JSON.parse(lines.at(-1)!.text)).toMatchObject({ seq: 51, linear: 0 });
    expect(log.total).toBe(51);
    // A quiet spell later, the next command is written at once.
    log.handleCommand(command(52, 0.5));
    expect(lines.at(-1)).toMatchObject({ count: 1, total: 52 });
    log.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('cuts a long command in its line', () => {
    const clock = new FakeClock();
    const lines: CommandLine[] = [];
    const log = new CommandLog({ clock, intervalMs: 1000, write: (line) => lines.push(line) });
    log.handleCommand(new TextEncoder().encode('x'.repeat(1000)));
    expect(lines[0]!.text.length).toBeLessThan(200);
  });
});

describe("svcd's log lines", () => {
  it('keeps the level, message and fields of a pino JSON line, and reads plain text too', () => {
    const line = JSON.stringify({
      level: 40,
      time: 1,
      pid: 2,
      hostname: 'h',
      name: 'svcd',
      channel: 'camera',
      msg: 'camera status: offline',
    });
    expect(parseLogLine(line)).toEqual({
      level: 'warn',
      message: 'camera status: offline',
      fields: { channel: 'camera' },
    });
    expect(parseLogLine('error (token-used): this enrolment token was already used')).toMatchObject({
      level: 'error',
      message: 'error (token-used): this enrolment token was already used',
    });
    expect(parseLogLine('plain words').level).toBe('info');
  });
});

describe('SvcdSupervisor (with stand-ins for svcd)', () => {
  const supervisors: SvcdSupervisor[] = [];
  afterEach(async () => {
    for (const supervisor of supervisors.splice(0)) await supervisor.stop();
  });

  /** A supervisor of `node -e <script>`; restarts come at once (random 0: no backoff wait). */
  function supervise(script: string, maxFailedStarts = 3) {
    const logger = memoryLogger();
    const supervisor = new SvcdSupervisor({
      command: process.execPath,
      args: ['-e', script],
      environment: async () => ({ PATH: process.env.PATH }),
      svcdLogger: logger,
      clock: systemClock,
      random: () => 0,
      maxFailedStarts,
    });
    supervisors.push(supervisor);
    return { supervisor, logger };
  }

  it('gives up after svcd dies again and again before coming online, with its last words', async () => {
    const { supervisor } = supervise(
      "console.error('error (token-used): this enrolment token was already used'); process.exit(1)",
    );
    const exits: (number | null)[] = [];
    supervisor.on('exit', (exit) => exits.push(exit.code));
    const reason = new Promise<string>((resolve) => supervisor.on('gave-up', resolve));
    supervisor.start();
    expect(await reason).toMatch(/3 times in a row without coming online.*token-used/);
    expect(exits).toEqual([1, 1, 1]);
    expect(supervisor.state).toBe('gave-up');
  });

  it('restarts svcd that dies after it was online, and says when it is online again', async () => {
    const online = JSON.stringify({ level: 30, msg: 'signalling online' });
    const { supervisor, logger } = supervise(
      `console.error(${JSON.stringify(online)}); setTimeout(() => process.exit(3), 50)`,
    );
    const onlines: boolean[] = [];
    supervisor.on('online', (first) => onlines.push(first));
    supervisor.start();
    await expect.poll(() => onlines.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    expect(onlines.slice(0, 3)).toEqual([true, false, false]);
    expect(supervisor.state).not.toBe('gave-up');
    expect(logger.records.some((l) => l.message === 'signalling online' && l.level === 'info')).toBe(true);
  });

  it('does not restart svcd that exits 0 (told to stop by a signal), and stops one that runs', async () => {
    const quits = supervise('process.exit(0)').supervisor;
    const exited = new Promise((resolve) => quits.on('exit', resolve));
    quits.start();
    await exited;
    expect(quits.state).toBe('ended');

    const runs = supervise(
      "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000)",
    ).supervisor;
    runs.start();
    await expect.poll(() => runs.pid).toBeDefined();
    const pid = runs.pid!;
    await runs.stop();
    expect(runs.state).toBe('stopped');
    expect(() => process.kill(pid, 0)).toThrow();
  });
});
