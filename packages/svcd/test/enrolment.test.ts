import { execFile } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeServer, freeTcpPort, listenLocal } from '@svc/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { loadOrCreateCredential } from '../src/credential.js';
import {
  EnrolmentError,
  type EnrolmentErrorCode,
  enrol,
  enrolmentBaseUrl,
  enrolmentRecordPath,
  enrolOnStart,
  isEnrolmentError,
  redeemEnrolmentToken,
} from '../src/enrolment.js';
import { capturingLogger, readableLog } from './support/log-lines.js';

const svcd = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/svcd');

type TokenState = 'unused' | 'used' | 'expired' | 'revoked';

interface EnrolRequest {
  method: string | undefined;
  url: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

/**
 * A stand-in for svc-cloud's `POST /api/v1/enrol`, speaking the contract: single-use tokens, 410 with
 * the token's state, 401 for unknown tokens, 409 for a robot enrolled with another key, 400 for a
 * malformed request. `answer` lets a test force any other reply.
 */
class FakeCloud {
  readonly server: Server;
  readonly requests: EnrolRequest[] = [];
  readonly tokens = new Map<string, TokenState>();
  readonly robots = new Map<string, string>();
  answer: ((res: ServerResponse) => void) | undefined;
  base = '';

  constructor() {
    this.server = createServer((req, res) => void this.#handle(req, res));
  }

  async start(): Promise<this> {
    this.base = `http://127.0.0.1:${await listenLocal(this.server)}`;
    return this;
  }

  tokensReceived(): unknown[] {
    return this.requests.map((r) => (r.body as { token?: unknown }).token);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += chunk;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    if (req.url !== '/api/v1/enrol' || req.method !== 'POST') {
      return send(res, 404, { error: { code: 'not-found', message: 'no such route' } });
    }
    this.requests.push({ method: req.method, url: req.url, contentType: req.headers['content-type'], body });
    if (this.answer !== undefined) return this.answer(res);
    const { robotId, publicKey, token } = (body ?? {}) as Record<string, unknown>;
    if (
      typeof robotId !== 'string' ||
      typeof token !== 'string' ||
      typeof publicKey !== 'string' ||
      Buffer.from(publicKey, 'base64url').length !== 32
    ) {
      return send(res, 400, { error: { code: 'invalid-request', message: 'robotId, publicKey, token' } });
    }
    const state = this.tokens.get(token);
    if (state === undefined)
      return send(res, 401, { error: { code: 'enrolment-token-invalid', message: 'unknown token' } });
    if (state !== 'unused')
      return send(res, 410, { error: { code: `enrolment-token-${state}`, message: `token ${state}` } });
    const known = this.robots.get(robotId);
    if (known !== undefined && known !== publicKey)
      return send(res, 409, { error: { code: 'robot-enrolled', message: 'enrolled with another key' } });
    this.tokens.set(token, 'used');
    this.robots.set(robotId, publicKey);
    send(res, 201, { robotId, orgId: 'org-7', enrolledAt: '2026-11-30T10:00:00.000Z' });
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

let cloud: FakeCloud;
let dir: string;
beforeEach(async () => {
  cloud = await new FakeCloud().start();
  dir = await mkdtemp(path.join(tmpdir(), 'svcd-enrol-'));
});
afterEach(async () => {
  await closeServer(cloud.server);
  await rm(dir, { recursive: true, force: true });
});

describe('enrolment address', () => {
  it.each([
    ['wss://cloud.example/ws', undefined, 'https://cloud.example'],
    ['wss://cloud.example:8443/ws', undefined, 'https://cloud.example:8443'],
    ['wss://cloud.example/ws/', undefined, 'https://cloud.example'],
    ['wss://cloud.example/svc/ws', undefined, 'https://cloud.example/svc'],
    ['ws://localhost:8080/ws', undefined, 'http://localhost:8080'],
    ['ws://127.0.0.1:9/ws?x=1', undefined, 'http://127.0.0.1:9'],
    ['wss://cloud.example/ws', 'wss://staging.example/ws', 'https://staging.example'],
    ['wss://cloud.example/ws', 'https://staging.example/', 'https://staging.example'],
    ['wss://cloud.example/ws', 'http://[::1]:3000', 'http://[::1]:3000'],
  ])('%s with --signal-url %s gives %s', (signalUrl, override, expected) => {
    expect(enrolmentBaseUrl(signalUrl, override)).toBe(expected);
  });

  it.each([
    ['not a url', /--signal-url "not a url" is not a URL/],
    ['ftp://cloud.example/ws', /has scheme ftp:/],
    ['ws://192.168.1.20/ws', /is not encrypted; use wss:\/\//],
    ['https://user:secret@cloud.example', /must not carry a user name or password/],
  ])('refuses --signal-url %s', (override, message) => {
    let err: unknown;
    try {
      enrolmentBaseUrl('wss://cloud.example/ws', override);
    } catch (e) {
      err = e;
    }
    expect(isEnrolmentError(err, 'bad-url')).toBe(true);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain('secret');
  });
});

describe('enrol', () => {
  it('sends the robot id, the public key and the token, and returns the org', async () => {
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    cloud.tokens.set('svc_enr_good', 'unused');
    const result = await enrol({
      baseUrl: `${cloud.base}/`,
      robotId: 'rover-7',
      credential,
      token: 'svc_enr_good',
    });
    expect(result).toEqual({
      robotId: 'rover-7',
      orgId: 'org-7',
      enrolledAt: '2026-11-30T10:00:00.000Z',
      baseUrl: cloud.base,
    });
    expect(cloud.requests).toHaveLength(1);
    const [request] = cloud.requests;
    expect(request).toMatchObject({ method: 'POST', url: '/api/v1/enrol', contentType: 'application/json' });
    const body = request!.body as Record<string, string>;
    expect(Object.keys(body).sort()).toEqual(['publicKey', 'robotId', 'token']);
    expect(body).toEqual({ robotId: 'rover-7', publicKey: credential.publicKey, token: 'svc_enr_good' });
    // The key the service received is the one the robot signs with.
    const message = new TextEncoder().encode('nonce');
    const registered = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: body.publicKey! },
      format: 'jwk',
    });
    expect(verify(null, message, registered, credential.sign(message))).toBe(true);
  });

  const TOKEN = 'svc_enr_s3cr3t-token-value';
  const remedy =
    /create a new one in the console \(Fleet, Create enrolment token\) and run svcd enrol --token <new token>$/;
  it.each<[string, (c: FakeCloud) => void, EnrolmentErrorCode, RegExp]>([
    [
      'a used token',
      (c) => c.tokens.set(TOKEN, 'used'),
      'token-used',
      /^this enrolment token was already used; /,
    ],
    [
      'an expired token',
      (c) => c.tokens.set(TOKEN, 'expired'),
      'token-expired',
      /^this enrolment token has expired; /,
    ],
    [
      'a revoked token',
      (c) => c.tokens.set(TOKEN, 'revoked'),
      'token-revoked',
      /^this enrolment token was revoked; /,
    ],
    ['an unknown token', () => {}, 'token-invalid', /does not know this enrolment token \(mistyped/],
    [
      'a robot enrolled with another key',
      (c) => {
        c.tokens.set(TOKEN, 'unused');
        c.robots.set('rover-7', Buffer.alloc(32, 1).toString('base64url'));
      },
      'robot-enrolled',
      /^robot "rover-7" is already enrolled in another organisation or with another key; delete it in the console \(Fleet\) and enrol again/,
    ],
    [
      'a 410 without a body',
      (c) => {
        c.answer = (res) => res.writeHead(410).end();
      },
      'token-used',
      remedy,
    ],
    [
      'a 400',
      (c) => {
        c.answer = (res) =>
          send(res, 400, {
            error: { code: 'invalid-request', message: `publicKey is not 32 bytes (token ${TOKEN})` },
          });
      },
      'rejected',
      /^the service refused the enrolment request as invalid \(the service said: publicKey is not 32 bytes \(token \*\*\*\)\)$/,
    ],
    [
      'a 429',
      (c) => {
        c.answer = (res) => res.writeHead(429, { 'retry-after': '7' }).end();
      },
      'rate-limited',
      /too many enrolment requests; wait 7 s and try again$/,
    ],
    [
      'a 503',
      (c) => {
        c.answer = (res) => send(res, 503, { error: { code: 'unavailable', message: 'database down' } });
      },
      'server-error',
      /^the service failed \(HTTP 503\) \(the service said: database down\); try again later/,
    ],
    [
      'a redirect',
      (c) => {
        c.answer = (res) => res.writeHead(308, { location: 'https://elsewhere.example/api/v1/enrol' }).end();
      },
      'rejected',
      /redirects \(HTTP 308 to https:\/\/elsewhere\.example\/api\/v1\/enrol\); set --signal-url/,
    ],
    [
      'a 201 that does not fit the contract',
      (c) => {
        c.answer = (res) => send(res, 201, { ok: true });
      },
      'server-error',
      /answered 201 without \{ robotId, orgId, enrolledAt \}/,
    ],
  ])('maps %s to its code and remedy', async (_what, arrange, code, message) => {
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    arrange(cloud);
    const err = await enrol({ baseUrl: cloud.base, robotId: 'rover-7', credential, token: TOKEN }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EnrolmentError);
    expect((err as EnrolmentError).code).toBe(code);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain(TOKEN);
    if (code.startsWith('token-') && code !== 'token-invalid') expect((err as Error).message).toMatch(remedy);
    expect(cloud.tokensReceived()).toEqual([TOKEN]);
  });

  it('names a base URL that is not the service (404)', async () => {
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    const err = await enrol({ baseUrl: `${cloud.base}/wrong`, robotId: 'r', credential, token: TOKEN }).catch(
      (e: unknown) => e,
    );
    expect(isEnrolmentError(err, 'rejected')).toBe(true);
    expect((err as Error).message).toBe(
      `${cloud.base}/wrong/api/v1/enrol does not exist (404); check that signal_url (or --signal-url) names the svc-cloud service`,
    );
  });

  it('refuses a token that is not shaped like one without sending it', async () => {
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    const err = await enrol({ baseUrl: cloud.base, robotId: 'r', credential, token: 'hunter2' }).catch(
      (e: unknown) => e,
    );
    expect(isEnrolmentError(err, 'token-invalid')).toBe(true);
    expect((err as Error).message).toMatch(/starts with svc_enr_/);
    expect((err as Error).message).not.toContain('hunter2');
    expect(cloud.requests).toEqual([]);
  });

  it('reports an unreachable service with the address to check', async () => {
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    const port = await freeTcpPort();
    const err = await enrol({
      baseUrl: `http://127.0.0.1:${port}`,
      robotId: 'r',
      credential,
      token: TOKEN,
    }).catch((e: unknown) => e);
    expect(isEnrolmentError(err, 'unreachable')).toBe(true);
    expect((err as Error).message).toBe(
      `cannot reach http://127.0.0.1:${port}/api/v1/enrol (ECONNREFUSED); check signal_url (or --signal-url) and the robot's network, then try again`,
    );
  });

  it('gives up on a service that never answers', async () => {
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    cloud.answer = () => {};
    const err = await enrol({
      baseUrl: cloud.base,
      robotId: 'r',
      credential,
      token: TOKEN,
      timeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(isEnrolmentError(err, 'unreachable')).toBe(true);
    expect((err as Error).message).toMatch(/^cannot reach .* \(no answer within 300 ms\); check signal_url/);
  });
});

describe('redeeming a token once', () => {
  it('remembers the enrolment next to the credential and does not send the same token twice', async () => {
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    cloud.tokens.set('svc_enr_once', 'unused');
    const options = { baseUrl: cloud.base, robotId: 'rover-7', credential, token: 'svc_enr_once' };
    const first = await redeemEnrolmentToken(options);
    expect(first.status).toBe('enrolled');
    const recordFile = enrolmentRecordPath(credential.path);
    expect((await stat(recordFile)).mode & 0o777).toBe(0o600);
    const record = await readFile(recordFile, 'utf8');
    expect(record).not.toContain('svc_enr_once');
    expect(JSON.parse(record)).toMatchObject({ robotId: 'rover-7', orgId: 'org-7', baseUrl: cloud.base });

    const second = await redeemEnrolmentToken(options);
    expect(second).toEqual({ status: 'already-redeemed', record: first.record });
    expect(cloud.requests).toHaveLength(1);

    // Another token (e.g. after the robot was deleted in the console) is redeemed.
    cloud.tokens.set('svc_enr_twice', 'unused');
    expect((await redeemEnrolmentToken({ ...options, token: 'svc_enr_twice' })).status).toBe('enrolled');
    expect(cloud.tokensReceived()).toEqual(['svc_enr_once', 'svc_enr_twice']);
  });
});

describe('enrolment at start', () => {
  const config = (extra: string, env: Record<string, string> = {}) =>
    parseConfig(
      [
        '[agent]',
        'robot_id = "rover-7"',
        `signal_url = "${cloud.base.replace('http:', 'ws:')}/ws"`,
        `credential_path = "${path.join(dir, 'keys', 'credential')}"`,
        extra,
      ].join('\n'),
      'svcd.toml',
      env,
    );
  const credentialFile = () => path.join(dir, 'keys', 'credential');

  it('enrols on first run with the configured token, then starts again without redeeming it twice', async () => {
    cloud.tokens.set('svc_enr_first', 'unused');
    const { logger, lines } = capturingLogger();
    const first = await enrolOnStart({ config: config('enrolment_token = "svc_enr_first"'), logger });
    expect(first.status).toBe('enrolled');
    expect(first.credential.created).toBe(true);
    expect(cloud.robots.get('rover-7')).toBe(first.credential.publicKey);
    expect(lines()).toEqual([
      expect.stringMatching(/^info: robot enrolled; the enrolment token is used up and may be removed/),
    ]);

    const second = await enrolOnStart({ config: config('enrolment_token = "svc_enr_first"'), logger });
    expect(second.status).toBe('already-redeemed');
    expect(second.credential.publicKey).toBe(first.credential.publicKey);
    expect(cloud.requests).toHaveLength(1);
    expect(lines().at(-1)).toMatch(/^info: the configured enrolment token was redeemed earlier/);
    expect(lines().join('\n')).not.toContain('svc_enr_first');
  });

  it('takes SVC_ENROLMENT_TOKEN over the configuration key', async () => {
    cloud.tokens.set('svc_enr_env', 'unused');
    cloud.tokens.set('svc_enr_file', 'unused');
    const { logger } = capturingLogger();
    const started = await enrolOnStart({
      config: config('enrolment_token = "svc_enr_file"', { SVC_ENROLMENT_TOKEN: 'svc_enr_env' }),
      logger,
    });
    expect(started.status).toBe('enrolled');
    expect(cloud.tokensReceived()).toEqual(['svc_enr_env']);
  });

  it('is fatal on first run: the error says what to do, and the next start is a first run again', async () => {
    cloud.tokens.set('svc_enr_used', 'used');
    const { logger } = capturingLogger();
    const start = () => enrolOnStart({ config: config('enrolment_token = "svc_enr_used"'), logger });
    const err = await start().catch((e: unknown) => e);
    expect(isEnrolmentError(err, 'token-used')).toBe(true);
    expect((err as Error).message).toMatch(/already used; create a new one in the console/);
    // The service refused the key, so it is not kept: the robot does not start unenrolled next time.
    expect(await exists(credentialFile())).toBe(false);
    expect(isEnrolmentError(await start().catch((e: unknown) => e), 'token-used')).toBe(true);
    expect(cloud.requests).toHaveLength(2);
  });

  it('keeps a first-run key the service may have registered (unreachable) and still fails', async () => {
    const port = await freeTcpPort();
    const { logger } = capturingLogger();
    const err = await enrolOnStart({
      config: config('enrolment_token = "svc_enr_x"'),
      signalUrl: `ws://127.0.0.1:${port}/ws`,
      logger,
    }).catch((e: unknown) => e);
    expect(isEnrolmentError(err, 'unreachable')).toBe(true);
    expect(await exists(credentialFile())).toBe(true);
  });

  it('only warns when the robot already has a key, and the daemon goes on', async () => {
    const existing = await loadOrCreateCredential(credentialFile());
    cloud.tokens.set('svc_enr_late', 'expired');
    const { logger, lines } = capturingLogger();
    const started = await enrolOnStart({ config: config('enrolment_token = "svc_enr_late"'), logger });
    expect(started.status).toBe('failed');
    expect(started.credential.publicKey).toBe(existing.publicKey);
    expect(started.status === 'failed' && started.error.code).toBe('token-expired');
    expect(lines()).toHaveLength(1);
    expect(lines()[0]).toMatch(
      /^warn: enrolment failed; continuing with the existing robot key: this enrolment token has expired; create a new one/,
    );
    expect(lines()[0]).not.toContain('svc_enr_late');
    expect(await exists(credentialFile())).toBe(true);
  });

  it('without a token creates the key and says the robot must be enrolled', async () => {
    const { logger, lines } = capturingLogger();
    const started = await enrolOnStart({ config: config(''), logger });
    expect(started.status).toBe('no-token');
    expect(started.credential.created).toBe(true);
    expect(cloud.requests).toEqual([]);
    expect(lines()).toHaveLength(1);
    expect(lines()[0]).toMatch(/^warn: created a new robot key; the robot is not enrolled yet/);
    expect(lines()[0]).toContain('unknown-robot');
    expect(lines()[0]).toContain('svcd --config <file> enrol --token <token>');

    const again = capturingLogger();
    expect((await enrolOnStart({ config: config(''), logger: again.logger })).status).toBe('no-token');
    expect(again.lines()).toEqual([]);
  });
});

describe('svcd enrol (the real command)', () => {
  interface Run {
    code: number;
    stdout: string;
    stderr: string;
  }
  const run = (args: string[], env: Record<string, string> = {}): Promise<Run> => {
    const base = { ...process.env };
    delete base.SVC_ENROLMENT_TOKEN;
    return new Promise((resolve) => {
      execFile(svcd, args, { env: { ...base, ...env } }, (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      });
    });
  };
  let configFile: string;
  const writeConfig = async (extra = '') => {
    configFile = path.join(dir, 'svcd.toml');
    await writeFile(
      configFile,
      [
        '[agent]',
        'robot_id = "rover-7"',
        'signal_url = "wss://unused.example/ws"',
        `credential_path = "${path.join(dir, 'credential')}"`,
        extra,
      ].join('\n'),
    );
  };
  let server: FakeCloud;
  let signalUrl: string;
  beforeEach(() => {
    server = cloud;
    signalUrl = `${server.base.replace('http:', 'ws:')}/ws`;
  });

  /** `svcd --config <file> enrol [--token <token>] --signal-url <the fake cloud>`. */
  const enrol = (token: string | undefined, env: Record<string, string> = {}): Promise<Run> =>
    run(
      [
        '--config',
        configFile,
        'enrol',
        ...(token === undefined ? [] : ['--token', token]),
        '--signal-url',
        signalUrl,
      ],
      env,
    );

  it('enrols and prints one line, creating the key', async () => {
    await writeConfig();
    server.tokens.set('svc_enr_cli', 'unused');
    const ok = await enrol('svc_enr_cli');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe(`enrolled: robot rover-7 in org org-7 at ${server.base}\n`);
    expect(readableLog(ok.stderr)).toMatch(/^info: created the robot key/);
    expect(ok.stderr).not.toContain('svc_enr_cli');
    const credential = await loadOrCreateCredential(path.join(dir, 'credential'));
    expect(server.robots.get('rover-7')).toBe(credential.publicKey);
  });

  it('fails with the code and the remedy on 410, exit 1', async () => {
    await writeConfig();
    server.tokens.set('svc_enr_spent', 'used');
    const failed = await enrol('svc_enr_spent');
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toContain(
      'error (token-used): this enrolment token was already used; create a new one in the console (Fleet, Create enrolment token) and run svcd enrol --token <new token>\n',
    );
    expect(failed.stderr).not.toContain('svc_enr_spent');
  });

  it('takes --token over SVC_ENROLMENT_TOKEN over the configuration key', async () => {
    await writeConfig('enrolment_token = "svc_enr_from_file"');
    for (const token of ['svc_enr_from_flag', 'svc_enr_from_env', 'svc_enr_from_file'])
      server.tokens.set(token, 'unused');
    const env = { SVC_ENROLMENT_TOKEN: 'svc_enr_from_env' };
    const results = [
      await enrol('svc_enr_from_flag', env),
      await enrol(undefined, env),
      await enrol(undefined),
    ];
    expect(results.map((r) => r.code)).toEqual([0, 0, 0]);
    expect(server.tokensReceived()).toEqual(['svc_enr_from_flag', 'svc_enr_from_env', 'svc_enr_from_file']);
  });

  it('without any token exits 2 with the usage', async () => {
    await writeConfig();
    const none = await run(['--config', configFile, 'enrol']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(
      /^svcd enrol: no enrolment token: give --token <token>, set SVC_ENROLMENT_TOKEN/,
    );
    expect(none.stderr).toContain('svcd --config <path> enrol [--token <token>] [--signal-url <url>]');
  });
});
