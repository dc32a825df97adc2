/**
 * The link shaper as a process of its own (`svc-shaper --json`), for figures whose jitter must be
 * the shaper's alone: in the bench's own process its timers would share an event loop with the
 * picture source, the RTP relay and the browser's driver, and their pauses would add to the link's.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../packages/shaper/bin/svc-shaper');

/** A running `svc-shaper`. */
export interface ShaperProcess {
  /** The port pilots send to on 127.0.0.1. */
  readonly port: number;
  /** Stops it; resolves with the counters it printed as it closed. */
  close(): Promise<unknown>;
}

/**
 * Starts `svc-shaper --listen 127.0.0.1:0 --target 127.0.0.1:<targetPort> <args>` and resolves
 * once it listens.
 */
export async function startShaperProcess(
  targetPort: number,
  args: readonly string[],
): Promise<ShaperProcess> {
  const child = spawn(
    bin,
    ['--listen', '127.0.0.1:0', '--target', `127.0.0.1:${targetPort}`, '--json', ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const events: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      events.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      return;
    }
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const next = (event: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const found = events.find((e) => e.event === event);
        if (found !== undefined) resolve(found);
        else if (child.exitCode !== null || child.signalCode !== null)
          reject(new Error(`svc-shaper exited before "${event}": ${stderr.trim()}`));
        else waiters.push(check);
      };
      child.once('exit', () => {
        for (const w of waiters.splice(0)) w();
      });
      check();
    });
  const listening = await next('listening');
  return {
    port: listening.port as number,
    close: async () => {
      child.kill('SIGTERM');
      const closed = await next('closed').catch(() => undefined);
      await exited;
      return closed;
    },
  };
}
