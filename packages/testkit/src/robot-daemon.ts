/**
 * The real `svcd` process as deployed (no `--dev`): a configuration written for a robot that talks
 * to a real svc-cloud, `svcd --config <file> enrol ...` as a command, and
 * `svcd --config <file> --host 127.0.0.1` as a daemon whose log can be waited on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeUdpPort } from './ports.js';

/** `packages/svcd/bin/svcd`, the same relative path from `src/` and from `dist/`. */
const SVCD = fileURLToPath(new URL('../../svcd/bin/svcd', import.meta.url));

/** What goes into a robot's configuration. */
export interface RobotConfigOptions {
  readonly robotId: string;
  /** svc-cloud's `ws://127.0.0.1:<port>/ws`. */
  readonly signalUrl: string;
  /** `enrolment_token` in the file. */
  readonly enrolmentToken?: string;
  /** `max_sessions` (default 4). */
  readonly maxSessions?: number;
  /** `[[channel]]` tables, as TOML lines (each table starts with `[[channel]]`). */
  readonly channels?: readonly string[];
  /** `[publisher_control] udp = "<address>:<port>"`. */
  readonly publisherControl?: string;
  /** More `[agent]` lines (TOML), e.g. `relay = true`. */
  readonly agent?: readonly string[];
}

/** A robot's directory: its configuration, credential and state. */
export interface RobotFiles {
  readonly robotId: string;
  readonly dir: string;
  readonly configPath: string;
  readonly credentialPath: string;
  /** The QUIC port written into the configuration. */
  readonly quicPort: number;
  /** Removes the directory. */
  remove(): Promise<void>;
}

/** Writes a configuration for `options.robotId` in a fresh directory. */
export async function writeRobotConfig(options: RobotConfigOptions): Promise<RobotFiles> {
  const dir = await mkdtemp(path.join(tmpdir(), `svcd-${options.robotId}-`));
  const configPath = path.join(dir, 'svcd.toml');
  const credentialPath = path.join(dir, 'credential');
  const quicPort = await freeUdpPort();
  const lines = [
    '[agent]',
    `robot_id = "${options.robotId}"`,
    `signal_url = "${options.signalUrl}"`,
    `credential_path = "${credentialPath}"`,
    `quic_port = ${quicPort}`,
    `max_sessions = ${options.maxSessions ?? 4}`,
    ...(options.enrolmentToken === undefined ? [] : [`enrolment_token = "${options.enrolmentToken}"`]),
    ...(options.agent ?? []),
    ...(options.channels ?? []),
    ...(options.publisherControl === undefined
      ? []
      : ['[publisher_control]', `udp = "${options.publisherControl}"`]),
  ];
  await writeFile(configPath, `${lines.join('\n')}\n`);
  return {
    robotId: options.robotId,
    dir,
    configPath,
    credentialPath,
    quicPort,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The test process's environment without any `SVC_*` setting, plus `extra`. */
function cleanEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('SVC_')) env[key] = value;
  return { ...env, ...extra };
}

/** How a finished `svcd` command ended and what it wrote. */
export interface SvcdResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `svcd <args>` to its end (at most `timeoutMs`, then SIGKILL) with a clean environment plus `env`. */
export function runSvcd(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  timeoutMs = 60_000,
): Promise<SvcdResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(SVCD, [...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `svcd --config <file> enrol --token <token>`. */
export function enrolByCli(robot: RobotFiles, token: string): Promise<SvcdResult> {
  return runSvcd(['--config', robot.configPath, 'enrol', '--token', token]);
}

/** A running (or ended) `svcd --config <file> --host 127.0.0.1`. */
export interface RobotDaemon {
  readonly process: ChildProcess;
  /** stdout and stderr so far. */
  log(): string;
  /** The exit code once the process ended (`null` after a signal). */
  readonly exited: Promise<number | null>;
  /**
   * Resolves when the log contains `text` at least `times` times; rejects when the process ends
   * first or after `timeoutMs`, with the log.
   */
  waitForLog(text: string | RegExp, times?: number, timeoutMs?: number): Promise<void>;
  /** SIGTERM (SIGKILL when that is not enough) and waits for the exit. */
  stop(): Promise<void>;
}

/** Where and how {@link startRobotDaemon} runs the daemon. */
export interface RobotDaemonOptions {
  /**
   * Runs the process through this command prefix (e.g. `['ip', 'netns', 'exec', '<namespace>']`
   * to start it in a test's network namespace). Default: none.
   */
  readonly prefix?: readonly string[];
  /** `--host`: the address to bind and announce (default `127.0.0.1`); `null` binds all and announces the interfaces'. */
  readonly host?: string | null;
  /** The `svcd` command (default: this checkout's `packages/svcd/bin/svcd`), e.g. another install's. */
  readonly svcd?: string;
}

/**
 * Starts `svcd --config <robot.configPath> --host 127.0.0.1` (or the options' host) with a clean
 * environment plus `env`.
 */
export function startRobotDaemon(
  robot: RobotFiles,
  env: Readonly<Record<string, string>> = {},
  options: RobotDaemonOptions = {},
): RobotDaemon {
  const host = options.host === undefined ? '127.0.0.1' : options.host;
  const [command, ...args] = [
    ...(options.prefix ?? []),
    options.svcd ?? SVCD,
    '--config',
    robot.configPath,
    ...(host === null ? [] : ['--host', host]),
  ];
  const child = spawn(command!, args, {
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const check of [...waiters]) check();
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    wake();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    wake();
  });
  let ended = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('close', (code) => {
      ended = true;
      wake();
      resolve(code);
    });
  });
  return {
    process: child,
    log: () => out,
    exited,
    waitForLog(text, times = 1, timeoutMs = 30_000) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`svcd ${robot.robotId} never logged ${String(text)} x${times}; log:\n${out}`));
        }, timeoutMs);
        const check = () => {
          if (countMatches(out, text) >= times) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          } else if (ended) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(
              new Error(
                `svcd ${robot.robotId} exited (${child.exitCode}) before logging ${String(text)}; log:\n${out}`,
              ),
            );
          }
        };
        waiters.add(check);
        check();
      });
    },
    async stop() {
      if (!ended) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

/** How often `pattern` occurs in `text`. */
function countMatches(text: string, pattern: string | RegExp): number {
  if (typeof pattern === 'string') return text.split(pattern).length - 1;
  const flags = pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`;
  return [...text.matchAll(new RegExp(pattern.source, flags))].length;
}
