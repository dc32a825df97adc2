/**
 * The real `svc-cloud` command as a child process, for tests that run the service together with
 * other real processes (the robot daemon, a browser): a fresh embedded database, a free port on
 * 127.0.0.1, no rate limit, and people signed in through the embedded development provider.
 *
 * @packageDocumentation
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { discover, type LoginResult, login } from './oidc-login.js';
import { freeTcpPort } from './ports.js';

/** `packages/cloud/bin/svc-cloud`, the same relative path from `src/` and from `dist/`. */
const SVC_CLOUD = fileURLToPath(new URL('../../cloud/bin/svc-cloud', import.meta.url));

/** The line `svc-cloud` prints on stdout once it accepts connections. */
const LISTENING = /svc-cloud listening on (\S+) /;

/** How long a start may take: a fresh embedded database needs a few seconds, more on a busy machine. */
const START_TIMEOUT_MS = 90_000;

/** Options of {@link startCloudProcess}. */
export interface CloudProcessOptions {
  /** Extra environment variables (e.g. `SVC_DEV_OPEN_ENROLMENT: '1'`), over the defaults set here. */
  readonly env?: Readonly<Record<string, string>>;
  /** The port to listen on, when a test must know it first (e.g. for an issuer's redirect URIs). Default: a free one. */
  readonly port?: number;
  /**
   * Runs the process through this command prefix (e.g. `['ip', 'netns', 'exec', '<namespace>']`
   * to start it in a test's network namespace). Default: none.
   */
  readonly prefix?: readonly string[];
  /** `SVC_HOST`, the address it listens on (default `127.0.0.1`). */
  readonly host?: string;
}

/** An HTTP answer of the service: status and parsed JSON body (`undefined` when there is none). */
export interface CloudAnswer {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the API answered.
  readonly body: any;
}

/** Options of {@link CloudProcess.call}. */
export interface CloudCallOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** Sent as JSON. */
  readonly body?: unknown;
}

/** A person signed in through the embedded development provider, after `GET /api/v1/me`. */
export interface SignedInPerson extends LoginResult {
  /** The user's id in the service. */
  readonly userId: string;
  /** The first org of `GET /api/v1/me` (with self-serve provisioning: the org the user owns). */
  readonly orgId: string;
  /** The body of `GET /api/v1/me`. */
  readonly me: Record<string, unknown>;
}

/** A running `svc-cloud` process. */
export interface CloudProcess {
  /** `http://127.0.0.1:<port>`. */
  readonly address: string;
  readonly port: number;
  /** `ws://127.0.0.1:<port>/ws`, the robots' `signal_url`. */
  readonly signalUrl: string;
  /** The embedded database's directory (kept across {@link CloudProcess.restart}). */
  readonly dataDir: string;
  /** True while the process runs. */
  readonly running: boolean;
  /**
   * Signs `sub` in (a user of the development provider's login page, e.g. `dev-alice`) with the
   * authorization code flow, then calls `GET /api/v1/me` (which provisions the user on first login).
   */
  signIn(sub: string): Promise<SignedInPerson>;
  /** One HTTP request to the service. */
  call(method: string, path: string, options?: CloudCallOptions): Promise<CloudAnswer>;
  /** Resolves when the log (all runs) contains `text` at least `times` times; rejects after `timeoutMs`. */
  waitForLog(text: string | RegExp, times?: number, timeoutMs?: number): Promise<void>;
  /** Stops the process with SIGTERM and waits for its exit; the data directory stays. */
  shutdown(): Promise<void>;
  /** {@link CloudProcess.shutdown} when running, then starts again on the same port and data directory. */
  restart(): Promise<void>;
  /** Stops the process (SIGKILL when SIGTERM is not enough) and removes the data directory. */
  stop(): Promise<void>;
  /** Everything the process wrote on stdout and stderr, over all runs. */
  log(): string;
}

/** The test process's environment without any svc-cloud setting, plus `extra`. */
function cleanEnv(extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('SVC_') && key !== 'DATABASE_URL') env[key] = value;
  }
  return { ...env, ...extra };
}

/**
 * Starts `packages/cloud/bin/svc-cloud` with a fresh data directory (embedded PGlite), a free port on
 * 127.0.0.1, `SVC_RATE_LIMIT_PER_MINUTE=0` and none of the test process's `SVC_*` or `DATABASE_URL`,
 * and waits for `svc-cloud listening on`.
 *
 * @throws Error with the process's output when it exits before listening or does not start in time.
 */
export async function startCloudProcess(options: CloudProcessOptions = {}): Promise<CloudProcess> {
  const root = await mkdtemp(join(tmpdir(), 'svc-cloud-process-'));
  const dataDir = join(root, 'data');
  const port = options.port ?? (await freeTcpPort());
  const address = `http://127.0.0.1:${port}`;
  const env = cleanEnv({
    SVC_HOST: options.host ?? '127.0.0.1',
    SVC_PORT: String(port),
    SVC_PUBLIC_URL: address,
    SVC_DATA_DIR: dataDir,
    SVC_RATE_LIMIT_PER_MINUTE: '0',
    ...options.env,
  });
  let out = '';
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const check of [...waiters]) check();
  };
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let runs = 0;

  const launch = async (): Promise<void> => {
    const [command, ...args] = [...(options.prefix ?? []), SVC_CLOUD];
    const started = spawn(command!, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    runs += 1;
    const run = runs;
    started.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      wake();
    });
    started.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      wake();
    });
    // 'close' comes after 'exit' and after both streams ended: all output is in.
    exited = new Promise<void>((resolve) => {
      started.once('close', () => {
        wake();
        resolve();
      });
    });
    await waitFor(
      () => countMatches(out, LISTENING) >= run,
      () => started.exitCode !== null || started.signalCode !== null,
      `svc-cloud listening on (start ${run})`,
      START_TIMEOUT_MS,
    );
  };

  const isRunning = () => child !== undefined && child.exitCode === null && child.signalCode === null;

  const shutdown = async (): Promise<void> => {
    if (child === undefined) return;
    if (isRunning()) child.kill('SIGTERM');
    await exited;
  };

  /** Waits until `done()` holds, re-checked at every output; fails early when `failed()` holds. */
  function waitFor(
    done: () => boolean,
    failed: () => boolean,
    what: string,
    timeoutMs: number,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`svc-cloud: no ${what} within ${timeoutMs} ms; output:\n${out}`));
      }, timeoutMs);
      const check = () => {
        if (done()) {
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        } else if (failed()) {
          clearTimeout(timer);
          waiters.delete(check);
          reject(new Error(`svc-cloud exited before ${what}; output:\n${out}`));
        }
      };
      waiters.add(check);
      check();
    });
  }

  const call = async (
    method: string,
    path: string,
    callOptions: CloudCallOptions = {},
  ): Promise<CloudAnswer> => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (callOptions.token !== undefined) headers.authorization = `Bearer ${callOptions.token}`;
    if (callOptions.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${address}${path}`, {
      method,
      headers,
      ...(callOptions.body !== undefined && { body: JSON.stringify(callOptions.body) }),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: response.status, body };
  };

  try {
    await launch();
  } catch (err) {
    await shutdown();
    await rm(root, { recursive: true, force: true });
    throw err;
  }

  return {
    address,
    port,
    signalUrl: `ws://127.0.0.1:${port}/ws`,
    dataDir,
    get running() {
      return isRunning();
    },
    async signIn(sub) {
      const config = await call('GET', '/api/v1/console-config');
      if (config.status !== 200) throw new Error(`GET /api/v1/console-config answered ${config.status}`);
      const { issuer, clientId, apiResource } = config.body as {
        issuer: string;
        clientId: string;
        apiResource: string;
      };
      const endpoints = await discover(issuer);
      const tokens = await login(
        {
          authorizationEndpoint: endpoints.authorizationEndpoint,
          tokenEndpoint: endpoints.tokenEndpoint,
          clientId,
          // The console's own page, as a browser sends it.
          redirectUri: `${address}/console/`,
          audience: apiResource,
        },
        { sub },
      );
      const response = await fetch(`${address}/api/v1/me`, {
        headers: { authorization: `Bearer ${tokens.accessToken}`, 'x-svc-id-token': tokens.idToken },
      });
      const me = (await response.json()) as {
        user?: { id?: string };
        orgs?: { id: string }[];
      } & Record<string, unknown>;
      const userId = me.user?.id;
      const orgId = me.orgs?.[0]?.id;
      if (response.status !== 200 || userId === undefined || orgId === undefined) {
        throw new Error(`GET /api/v1/me for ${sub} answered ${response.status}: ${JSON.stringify(me)}`);
      }
      return { ...tokens, userId, orgId, me };
    },
    call,
    waitForLog(text, times = 1, timeoutMs = 30_000) {
      return waitFor(
        () => countMatches(out, text) >= times,
        () => false,
        `log line ${String(text)} x${times}`,
        timeoutMs,
      );
    },
    shutdown,
    async restart() {
      await shutdown();
      await launch();
    },
    async stop() {
      if (isRunning()) {
        child!.kill('SIGTERM');
        const killer = setTimeout(() => child?.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(killer);
      }
      await rm(root, { recursive: true, force: true });
    },
    log: () => out,
  };
}

/** How often `pattern` occurs in `text`. */
function countMatches(text: string, pattern: string | RegExp): number {
  if (typeof pattern === 'string') return text.split(pattern).length - 1;
  const flags = pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`;
  return [...text.matchAll(new RegExp(pattern.source, flags))].length;
}
