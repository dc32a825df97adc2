import { type ChildProcess, execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Why a topology operation failed; callers branch on this, never on the message. */
export type NetnsErrorCode =
  /** The process is not root (network namespaces, veths and nftables need CAP_NET_ADMIN). */
  | 'not-root'
  /** A system tool (`ip`, `nft`, `tcpdump`, `conntrack`) is not installed. */
  | 'missing-tool'
  /** A system command exited with an error. */
  | 'command-failed'
  /** A condition polled for did not come true before its deadline. */
  | 'timeout'
  /** The topology was already closed. */
  | 'closed';

/** The error of the network-namespace topology kit, with a stable {@link NetnsErrorCode}. */
export class NetnsError extends Error {
  /** What went wrong, for callers to branch on. */
  readonly code: NetnsErrorCode;

  constructor(code: NetnsErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NetnsError';
    this.code = code;
  }
}

/** The system tools the kit runs, and the Debian package of each. */
const TOOL_PACKAGES = {
  ip: 'iproute2',
  nft: 'nftables',
  tcpdump: 'tcpdump',
  conntrack: 'conntrack',
} as const;

/** A system tool the kit runs. */
export type Tool = keyof typeof TOOL_PACKAGES;

/** Where Debian puts administration tools; a non-login root shell may lack them on its PATH. */
const SYSTEM_DIRS = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'] as const;

const found = new Map<Tool, string>();

/**
 * Returns the absolute path of a system tool.
 *
 * @throws NetnsError `missing-tool` naming the Debian package to install.
 */
export function toolPath(tool: Tool): string {
  const known = found.get(tool);
  if (known !== undefined) return known;
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== ''), ...SYSTEM_DIRS];
  for (const dir of dirs) {
    const path = join(dir, tool);
    try {
      accessSync(path, constants.X_OK);
      found.set(tool, path);
      return path;
    } catch {
      // not in this directory
    }
  }
  throw new NetnsError(
    'missing-tool',
    `\`${tool}\` is missing (Debian package ${TOOL_PACKAGES[tool]}): the network-namespace test topologies ` +
      `need it. Install it as root with \`apt-get install ${TOOL_PACKAGES[tool]}\`; the whole set is ` +
      '`apt-get install iproute2 nftables tcpdump conntrack` (`npm test` installs them via scripts/ensure-system.sh).',
  );
}

/**
 * Throws unless the process runs as root.
 *
 * @throws NetnsError `not-root`.
 */
export function requireRoot(): void {
  if (process.getuid?.() !== 0) {
    throw new NetnsError(
      'not-root',
      'network-namespace test topologies need root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create namespaces, ' +
        'veth pairs and nftables rules); run the tests as root, as `npm test` does on the project machines.',
    );
  }
}

/** How a finished command ended. */
export interface CommandResult {
  /** The exit code, or null when a signal ended the command. */
  readonly code: number | null;
  /** The signal that ended the command, if any. */
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  /** Written to the command's standard input, which is then closed. */
  readonly input?: string;
  /** The command is killed (SIGKILL) after this long. Default 30 000 ms. */
  readonly timeoutMs?: number;
}

/**
 * Runs a command without a shell and resolves with how it ended, whatever its exit code.
 *
 * @throws Error when the command cannot be started at all (for example ENOENT).
 */
export function runCommand(
  file: string,
  args: readonly string[],
  options: RunCommandOptions = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
        timeout: options.timeoutMs ?? 30_000,
        killSignal: 'SIGKILL',
      },
      (err, stdout, stderr) => {
        if (err === null) {
          resolve({ code: 0, signal: null, stdout, stderr });
          return;
        }
        const failure = err as NodeJS.ErrnoException & { code?: unknown; signal?: NodeJS.Signals | null };
        if (typeof failure.code === 'number' || (failure.signal ?? null) !== null) {
          resolve({
            code: typeof failure.code === 'number' ? failure.code : null,
            signal: failure.signal ?? null,
            stdout,
            stderr,
          });
          return;
        }
        reject(new Error(`cannot run ${file}: ${err.message}`, { cause: err }));
      },
    );
    if (options.input !== undefined) {
      child.stdin?.on('error', () => {
        // The command may exit without reading its input; its exit status tells what happened.
      });
      child.stdin?.end(options.input);
    }
  });
}

/**
 * Runs a command and returns its standard output.
 *
 * @throws NetnsError `command-failed` with the command line and its standard error.
 */
export async function mustRun(
  file: string,
  args: readonly string[],
  options: RunCommandOptions = {},
): Promise<string> {
  const result = await runCommand(file, args, options);
  if (result.code !== 0) {
    const how = result.code === null ? `was killed by ${result.signal}` : `exited with ${result.code}`;
    throw new NetnsError(
      'command-failed',
      `\`${[file, ...args].join(' ')}\` ${how}: ${result.stderr.trim() || result.stdout.trim() || '(no output)'}`,
    );
  }
  return result.stdout;
}

/** Polling interval of {@link waitUntil}. */
const POLL_MS = 20;

/**
 * Polls `check` until it returns true; the only way the kit waits for the system (no fixed sleeps).
 *
 * @param what - What is awaited, for the timeout message ("the links are up").
 * @throws NetnsError `timeout` after `timeoutMs`, or whatever `check` throws.
 */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) {
      throw new NetnsError('timeout', `timed out after ${timeoutMs} ms waiting until ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Whether a parsed JSON value is an object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Quotes a string for a POSIX shell script (single quotes, embedded quotes escaped). */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** Keeps a child in the set while it runs. */
export function track(children: Set<ChildProcess>, child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
  child.once('error', () => children.delete(child));
}

/**
 * SIGTERM to each child's process group (or the child alone when it leads none), then SIGKILL
 * to those still running after a grace period.
 */
export async function endChildren(children: readonly ChildProcess[], graceMs: number): Promise<void> {
  const running = children.filter((child) => child.exitCode === null && child.signalCode === null);
  const exits = running.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  const signal = (child: ChildProcess, name: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, name);
    } catch {
      child.kill(name);
    }
  };
  for (const child of running) signal(child, 'SIGTERM');
  const timer = setTimeout(() => {
    for (const child of running) signal(child, 'SIGKILL');
  }, graceMs);
  await Promise.all(exits);
  clearTimeout(timer);
}
