import { type ChildProcessByStdio, spawn } from 'node:child_process';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TestSocket, until } from './support/udp.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/svc-shaper');

/** A running `svc-shaper` with its output collected line by line. */
interface Run {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  readonly stdout: string[];
  readonly stderr: () => string;
  readonly exit: Promise<number | null>;
}

const runs: Run[] = [];
const sockets: TestSocket[] = [];
afterEach(async () => {
  for (const run of runs.splice(0)) {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await run.exit;
  }
  for (const s of sockets.splice(0)) await s.close();
});

function start(args: string[]): Run {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    stdout.push(...lines);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exit = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  const run = { child, stdout, stderr: () => stderr, exit };
  runs.push(run);
  return run;
}

async function socket(echo = false): Promise<TestSocket> {
  const s = await TestSocket.open(echo);
  sockets.push(s);
  return s;
}

describe('svc-shaper', () => {
  it('prints the address it listens on, relays both ways, and exits 0 on SIGTERM with its counters', async () => {
    const target = await socket(true);
    const run = start(['--listen', '127.0.0.1:0', '--target', `127.0.0.1:${target.port}`, '--delay', '5ms']);
    await until(() => run.stdout.length > 0, 'the listening line', 20_000);
    const match =
      /^svc-shaper listening on 127\.0\.0\.1:(\d+), forwarding to 127\.0\.0\.1:(\d+), seed 1$/.exec(
        run.stdout[0]!,
      );
    expect(match?.[2]).toBe(String(target.port));
    const client = await socket();
    for (let i = 0; i < 5; i++) await client.send(Buffer.from(`hello ${i}`), Number(match?.[1]));
    await until(() => client.arrivals.length === 5, 'five echoes through the shaper');
    expect(client.arrivals.map((a) => a.data.toString())).toEqual([0, 1, 2, 3, 4].map((i) => `hello ${i}`));
    run.child.kill('SIGTERM');
    expect(await run.exit).toBe(0);
    expect(run.stdout.at(-1)).toMatch(
      /^closed up in 5 \(\d+ B\) forwarded 5 .* \| down in 5 .* forwarded 5 /,
    );
  });

  it('prints JSON lines, periodic stats included, with per-direction options applied', async () => {
    const target = await socket();
    const run = start([
      ...['--listen', '127.0.0.1:0', '--target', `127.0.0.1:${target.port}`, '--json'],
      ...[
        '--loss',
        '5%',
        '--down-loss',
        '0',
        '--up-rate',
        '2mbit',
        '--burst-loss',
        '2%',
        '--burst-length',
        '3',
      ],
      ...['--seed', '9', '--stats-interval', '50ms'],
    ]);
    await until(() => run.stdout.some((l) => l.includes('"event":"stats"')), 'a stats line', 20_000);
    const listening = JSON.parse(run.stdout[0]!);
    expect(listening).toMatchObject({
      event: 'listening',
      address: '127.0.0.1',
      seed: 9,
      up: { loss: 0.05, rateKbps: 2000, burstLoss: { rate: 0.02, meanBurst: 3 } },
      down: { loss: 0, rateKbps: 0, burstLoss: { rate: 0.02, meanBurst: 3 } },
    });
    expect(listening.port).toBeGreaterThan(0);
    const stats = JSON.parse(run.stdout.find((l) => l.includes('"event":"stats"'))!);
    expect(stats).toMatchObject({ up: { datagramsIn: 0, dropped: { random: 0 } }, clients: 0 });
    run.child.kill('SIGINT');
    expect(await run.exit).toBe(0);
  });

  it('rejects a bad argument with exit code 2 and a message naming it', async () => {
    const cases: [string[], RegExp][] = [
      [['--rate', 'fast'], /--rate: got "fast", expected a rate with a unit/],
      [['--up-loss', '150%'], /--up-loss: got "150%"/],
      [['--burst-loss', '60%', '--burst-length', '1'], /--burst-loss: got 0\.6, expected at most/],
      [['--burst-loss', '5%'], /--burst-loss needs --burst-length/],
      [['--sideways', '1'], /Unknown option '--sideways'/],
    ];
    const target = await socket();
    const results = await Promise.all(
      cases.map(async ([args]) => {
        const run = start(['--listen', '127.0.0.1:0', '--target', `127.0.0.1:${target.port}`, ...args]);
        return { code: await run.exit, stderr: run.stderr() };
      }),
    );
    for (const [k, [, message]] of cases.entries()) {
      expect(results[k]).toMatchObject({ code: 2, stderr: expect.stringMatching(message) });
    }
    const missing = start(['--listen', '127.0.0.1:0']);
    expect(await missing.exit).toBe(2);
    expect(missing.stderr()).toMatch(/--target <address:port> is required/);
  });

  it('--help describes every option and exits 0', async () => {
    const run = start(['--help']);
    expect(await run.exit).toBe(0);
    const text = run.stdout.join('\n');
    for (const option of [
      '--rate',
      '--queue',
      '--delay',
      '--jitter',
      '--reorder',
      '--loss',
      '--burst-loss',
    ]) {
      expect(text).toContain(option);
    }
    expect(text).toContain('--up-<name>');
  });
});
