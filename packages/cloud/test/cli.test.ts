/**
 * The real `svc-cloud` command, as a person runs it: no issuer configured, so it serves the
 * embedded development provider; a login through that provider's page reaches `GET /api/v1/me`.
 * Also: a bad variable stops it with the variable named, its log never holds a token, and SIGTERM
 * stops it cleanly.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeTcpPort } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover, type LoginResult, type LoginTarget, login } from './support/oidc.js';

const BIN = fileURLToPath(new URL('../bin/svc-cloud', import.meta.url));

/** The environment of the test process without any svc-cloud setting, plus `extra`. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('SVC_') && key !== 'DATABASE_URL') env[key] = value;
  }
  return { ...env, ...extra };
}

/** A started `svc-cloud` process with everything it wrote. */
interface Running {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): { stdout: string; stderr: string };
  /** Resolves with the exit code (or signal) once the process ended and both streams closed. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(env: NodeJS.ProcessEnv): Running {
  const child = spawn(BIN, [], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  // 'close' comes after 'exit' and after both streams ended: all output is in.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  return { child, output: () => ({ stdout, stderr }), exited };
}

/** Resolves with the first match of `pattern` in stdout; rejects when the process ends first. */
function waitForOutput(running: Running, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const match = pattern.exec(running.output().stdout);
      if (match === null) return;
      running.child.stdout!.off('data', check);
      resolve(match);
    };
    running.child.stdout!.on('data', check);
    running.exited.then(({ code, signal }) => {
      const { stdout, stderr } = running.output();
      reject(
        new Error(
          `svc-cloud ended (code ${code}, signal ${signal}) before printing ${pattern}:\n${stdout}\n${stderr}`,
        ),
      );
    }, reject);
    check();
  });
}

/** Ends a process this test started, whatever state it is in. */
async function kill(running: Running | undefined): Promise<void> {
  if (running === undefined) return;
  if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  await running.exited;
}

describe('svc-cloud (the real command)', () => {
  let dataDir: string;
  let cloud: Running | undefined;
  let address: string;
  let tokens: LoginResult;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-cloud-cli-'));
    const port = await freeTcpPort();
    cloud = run(cleanEnv({ SVC_PORT: String(port), SVC_DATA_DIR: join(dataDir, 'data') }));
    const match = await waitForOutput(cloud, /svc-cloud listening on (\S+) \(public URL (\S+)\)/);
    address = match[1]!;
    expect(match[2]).toBe(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    await kill(cloud);
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  it('prints the address it listens on', () => {
    expect(address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(cloud!.output().stdout).toContain(`svc-cloud listening on ${address}`);
  });

  it('names the embedded issuer in GET /api/v1/console-config', async () => {
    const response = await fetch(`${address}/api/v1/console-config`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      issuer: `${address}/dev-oidc`,
      clientId: 'svc-console',
      apiResource: `${address}/api`,
      provisioning: 'self-serve',
      developmentProvider: true,
    });
  });

  it('lets a person log in through the embedded provider’s page and answers GET /api/v1/me with their org', async () => {
    const config = (await (await fetch(`${address}/api/v1/console-config`)).json()) as {
      issuer: string;
      clientId: string;
      apiResource: string;
    };
    const endpoints = await discover(config.issuer);
    expect(endpoints.issuer).toBe(config.issuer);
    const target: LoginTarget = {
      authorizationEndpoint: endpoints.authorizationEndpoint,
      tokenEndpoint: endpoints.tokenEndpoint,
      clientId: config.clientId,
      // The console's own page, as the browser sends it (see the console's redirectUri()).
      redirectUri: `${address}/console/`,
      audience: config.apiResource,
    };
    tokens = await login(target, { sub: 'dev-alice' });
    const me = await fetch(`${address}/api/v1/me`, {
      headers: { authorization: `Bearer ${tokens.accessToken}`, 'x-svc-id-token': tokens.idToken },
    });
    expect(me.status).toBe(200);
    const body = (await me.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      user: { email: 'alice@example.test', emailVerified: true },
      status: 'ready',
      firstLogin: true,
      orgs: [expect.objectContaining({ role: 'owner' })],
    });
    // A typed name works too, and is another person.
    const dora = await login(target, { name: 'dora' });
    const doraMe = await fetch(`${address}/api/v1/me`, {
      headers: { authorization: `Bearer ${dora.accessToken}`, 'x-svc-id-token': dora.idToken },
    });
    expect(((await doraMe.json()) as { user: { email: string } }).user.email).toBe('dora@example.test');
  });

  it('stops cleanly on SIGTERM, and its log never held a token, even one sent in a query string', async () => {
    expect(tokens, 'the login test ran').toBeDefined();
    const { accessToken, idToken } = tokens;
    const headers = { authorization: `Bearer ${accessToken}`, 'x-svc-id-token': idToken };
    const query = `access_token=${accessToken}&id_token=${idToken}`;
    const requests: [string, number][] = [
      [`/api/v1/me?${query}`, 200],
      [`/api/v1/orgs?${query}`, 200],
      [`/api/v1/no-such-endpoint?${query}`, 404],
      [`/dev-oidc/me?${query}`, 400], // the provider refuses a token in both header and query
    ];
    for (const [path, status] of requests) {
      const response = await fetch(`${address}${path}`, { headers });
      await response.arrayBuffer();
      expect(response.status, path).toBe(status);
    }
    // A token that does not verify, in the header: the refusal is logged without it.
    const forged = `${accessToken.slice(0, -4)}AAAA`;
    const refused = await fetch(`${address}/api/v1/orgs`, { headers: { authorization: `Bearer ${forged}` } });
    expect(refused.status).toBe(401);

    cloud!.child.kill('SIGTERM');
    const { code, signal } = await cloud!.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });

    const { stdout, stderr } = cloud!.output();
    const log = `${stdout}\n${stderr}`;
    // The log (complete only now the process has ended) says loudly that anyone can sign in as
    // anyone, and it did record these requests (so the scan below looks at something).
    expect(log).toMatch(/embedded DEVELOPMENT identity provider/);
    expect(log).toContain('"url":"/api/v1/me"');
    expect(log).toContain('"url":"/api/v1/no-such-endpoint"');
    expect(log).toMatch(/"statusCode":401/);
    for (const secret of [accessToken, idToken, forged]) {
      expect(log).not.toContain(secret);
      // No fragment of a JWT either (header, payload or signature part).
      for (const part of secret.split('.')) expect(log).not.toContain(part);
    }
    expect(log).not.toMatch(/bearer /i);
    expect(log).not.toMatch(/access_token=|id_token=/);
    expect(log).not.toMatch(/x-svc-id-token/i);
  });

  it('writes its log as JSON lines on stderr (not a terminal), stdout holding its own output only', () => {
    const { stdout, stderr } = cloud!.output();
    expect(stdout).toMatch(/^svc-cloud listening on \S+ \(public URL \S+\)\n$/);
    const lines = stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; name: string; msg: string });
    expect(lines.find((line) => /embedded DEVELOPMENT identity provider/.test(line.msg))).toMatchObject({
      level: 40,
      name: 'svc-cloud',
    });
    expect(lines.find((line) => line.msg === 'svc-cloud stopping')).toMatchObject({ level: 30 });
  });

  it('exits non-zero naming the variable when the configuration is bad', async () => {
    const bad = run(
      cleanEnv({
        SVC_PROVISIONING: 'nope',
        SVC_PORT: String(await freeTcpPort()),
        SVC_DATA_DIR: join(dataDir, 'bad'),
      }),
    );
    try {
      const { code } = await bad.exited;
      expect(code).not.toBe(0);
      expect(code).toBe(2);
      const { stdout, stderr } = bad.output();
      expect(stderr).toContain('SVC_PROVISIONING: "nope" is not one of self-serve, invite-only, default-org');
      expect(stdout).not.toContain('listening');
    } finally {
      await kill(bad);
    }
  });
});
