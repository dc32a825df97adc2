import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeUdpPort } from '@svc/testkit';

export { freeUdpPort };

const svcd = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/svcd');

/** A running `svcd --dev` process. */
export interface DevDaemon {
  readonly url: string;
  readonly hash: string;
  readonly process: ChildProcess;
  /** Everything the daemon logged so far (all runs). */
  log(): string;
  /** Stops the process and starts it again with the same configuration and state directory. */
  restart(): Promise<void>;
  /** Resolves when the log contains `text` at least `times` times. */
  waitForLog(text: string, times?: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Writes a config with one video channel and starts `svcd --config <file> --dev` on 127.0.0.1. */
export async function startDevDaemon(channel: { input: string; codec: string }): Promise<DevDaemon> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svcd-dev-'));
  const config = path.join(dir, 'svcd.toml');
  await writeFile(
    config,
    [
      '[agent]',
      'robot_id = "e2e-robot"',
      'signal_url = "ws://localhost/ws"',
      `credential_path = "${path.join(dir, 'credential')}"`,
      `quic_port = ${await freeUdpPort()}`,
      'max_sessions = 4',
      '[[channel]]',
      'kind = "video"',
      'name = "front"',
      `input = "${channel.input}"`,
      `codec = "${channel.codec}"`,
      'fps = 30',
    ].join('\n'),
  );
  let out = '';
  const waiters: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const check of waiters.splice(0)) check();
  };
  let child!: ChildProcess;
  let exited!: Promise<void>;
  const launch = () => {
    child = spawn(svcd, ['--config', config, '--dev', '--host', '127.0.0.1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  };
  const halt = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  launch();
  const waitForLog = (text: string, times = 1, timeoutMs = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`svcd never logged "${text}" x${times}; log:\n${out}`)),
        timeoutMs,
      );
      const check = () => {
        if (out.split(text).length - 1 >= times) {
          clearTimeout(timer);
          resolve();
        } else if (child.exitCode !== null) {
          clearTimeout(timer);
          reject(new Error(`svcd exited (${child.exitCode}) before logging "${text}"; log:\n${out}`));
        } else {
          waiters.push(check);
        }
      };
      check();
    });
  await waitForLog('dev: pilot URL');
  const match = /dev: pilot URL (\S+) certificate sha-256 ([0-9a-f]{64})/.exec(out)!;
  return {
    url: match[1]!,
    hash: match[2]!,
    get process() {
      return child;
    },
    log: () => out,
    waitForLog,
    async restart() {
      await halt();
      const runs = out.split('dev: pilot URL').length - 1;
      launch();
      await waitForLog('dev: pilot URL', runs + 1);
    },
    async stop() {
      await halt();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
