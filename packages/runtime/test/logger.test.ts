import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  type ConsoleLike,
  consoleLogger,
  isLogLevel,
  LOG_LEVELS,
  type Logger,
  levelRank,
  silentLogger,
} from '../src/index.js';
import { createLogger, loggerOptions } from '../src/node/index.js';
import { memoryLogger } from '../src/testing/index.js';

const JWT = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJyb2JvdC0xIn0.c2lnbmF0dXJlLWJ5dGVz';
const ENROLMENT = 'svc_enr_Q2hvb3NlQVN0cm9uZ1NlY3JldEhlcmVfMTIzNDU2Nzg5MA';
const API_KEY_SECRET = 'dGhpcy1pcy10aGUtc2VjcmV0LXBhcnQtb2YtYS1rZXk';

/** Every secret the lines below carry; none may reach the output. */
const SECRETS = [
  'hunter2',
  'cam-pass',
  'opaque-token',
  'ott-value',
  'field-token',
  'field-access',
  'field-password',
  'field-enrolment',
  'field-authorization',
  'field-key',
  'array-token',
  'child-token',
  ENROLMENT.slice('svc_enr_'.length),
  API_KEY_SECRET,
  JWT,
  JWT.split('.')[2]!,
];

/**
 * The fields of the first line {@link writeSecretLines} writes, `url` as given and each secret
 * field's value passed through `secret`: as written (`secret` keeps the value) and as a logger
 * must show them (`secret` masks it), one shape for both so they cannot drift apart.
 */
function firstLineFields(url: string, secret: (value: string) => string) {
  return {
    robot: 'r1',
    count: 3,
    url,
    token: secret('field-token'),
    accessToken: secret('field-access'),
    nested: {
      password: secret('field-password'),
      enrolment_token: secret('field-enrolment'),
      headers: { authorization: secret('Bearer field-authorization'), accept: 'application/json' },
    },
    list: [{ key: secret('field-key'), id: 'k1' }, { token: secret('array-token') }],
  };
}

/** Writes one line of each kind through `log`: fields with secrets, secrets in the message, an error. */
function writeSecretLines(log: Logger): void {
  log.warn(
    firstLineFields('rtsp://admin:hunter2@cam.local/live', (value) => value),
    'fields carry secrets',
  );
  log.info(
    `dialled rtsp://viewer:cam-pass@10.0.0.5/h264 with ${ENROLMENT}, svc_key_0123abcd_${API_KEY_SECRET} and Bearer ${JWT}`,
  );
  log.info(
    { path: '/api/v1/signalling?robot=r1&token=opaque-token' },
    'invite #/invite?ott=ott-value opened',
  );
  const cause = new Error(`upstream refused ${ENROLMENT}`);
  log.error({ err: new Error('connect to rtsp://admin:hunter2@cam/ failed', { cause }) }, 'session failed');
  log.child({ component: 'signalling', token: 'child-token' }).info({ peer: 'p1' }, 'child line');
}

function expectNoSecret(text: string): void {
  for (const secret of SECRETS) expect(text, `leaked ${secret}`).not.toContain(secret);
}

/** A PassThrough destination and the text written to it so far. */
function capture(): { destination: PassThrough; text: () => string } {
  const destination = new PassThrough();
  let text = '';
  destination.setEncoding('utf8');
  destination.on('data', (chunk: string) => {
    text += chunk;
  });
  return { destination, text: () => text };
}

/** Lets the PassThrough hand what it was given to its `data` listener. */
async function drained(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('createLogger (pino), JSON lines', () => {
  it('writes one JSON object per line with no secret in it, the rest intact', async () => {
    const { destination, text } = capture();
    writeSecretLines(createLogger({ name: 'svcd', destination, pretty: false }));
    await drained();
    const output = text();
    expectNoSecret(output);
    const lines = output
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line).toMatchObject({ name: 'svcd', pid: process.pid });

    expect(lines[0]).toMatchObject({
      level: 40,
      msg: 'fields carry secrets',
      ...firstLineFields('rtsp://***@cam.local/live', () => '***'),
    });
    expect(lines[1]).toMatchObject({
      level: 30,
      msg: 'dialled rtsp://***@10.0.0.5/h264 with svc_enr_***, svc_key_0123abcd_*** and Bearer ***',
    });
    expect(lines[2]).toMatchObject({
      path: '/api/v1/signalling?robot=r1&token=***',
      msg: 'invite #/invite?ott=*** opened',
    });
    expect(lines[3]).toMatchObject({ level: 50, msg: 'session failed' });
    const err = lines[3]!.err as Record<string, unknown>;
    expect(err.message).toContain('connect to rtsp://***@cam/ failed');
    expect(err.message).toContain('upstream refused svc_enr_***');
    expect(err.stack).toContain('connect to rtsp://***@cam/ failed');
    expect(lines[4]).toMatchObject({ component: 'signalling', token: '***', peer: 'p1', msg: 'child line' });
  });

  it('redacts the bindings of children at every generation, and of the root', async () => {
    const { destination, text } = capture();
    const root = createLogger({ name: 'rtsp://u:hunter2@x/', destination, pretty: false });
    const child = root.child({ component: 'session', password: 'field-password' });
    const grandchild = child.child({ peer: 'p', accessToken: 'field-access' });
    grandchild.info('deep');
    child.info('middle');
    root.info('top');
    await drained();
    expectNoSecret(text());
    const [deep, middle, top] = text()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(deep).toMatchObject({ name: 'rtsp://***@x/', component: 'session', password: '***', peer: 'p' });
    expect(deep!.accessToken).toBe('***');
    expect(middle).toMatchObject({ component: 'session', password: '***', msg: 'middle' });
    expect(middle).not.toHaveProperty('peer');
    expect(top).not.toHaveProperty('component');
  });

  it('writes nothing below its level, and nothing at all when silent', async () => {
    const { destination, text } = capture();
    const log = createLogger({ destination, pretty: false, level: 'warn' });
    log.info('dropped');
    log.debug('dropped');
    log.warn('kept');
    createLogger({ destination, pretty: false, level: 'silent' }).fatal('dropped');
    await drained();
    const lines = text().trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, msg: 'kept' });
  });

  it('writes JSON by default when the destination is not a terminal', async () => {
    const { destination, text } = capture();
    createLogger({ destination }).info({ a: 1 }, 'plain');
    await drained();
    expect(JSON.parse(text())).toMatchObject({ a: 1, msg: 'plain' });
  });

  it('gives pino options that Fastify can build the same logger from', () => {
    const options = loggerOptions({ name: 'svc-cloud', level: 'debug' });
    expect(options).toMatchObject({ name: 'svc-cloud', level: 'debug' });
    expect(loggerOptions()).toMatchObject({ level: 'info' });
    expect(loggerOptions()).not.toHaveProperty('name');
  });
});

describe('createLogger (pino), readable lines', () => {
  it('writes readable, redacted text instead of JSON', async () => {
    const { destination, text } = capture();
    writeSecretLines(createLogger({ name: 'svcd', destination, pretty: true }));
    await drained();
    const output = text();
    expectNoSecret(output);
    expect(output).toContain('WARN');
    expect(output).toContain('fields carry secrets');
    expect(output).toContain('rtsp://***@cam.local/live');
    expect(output).toContain('child line');
    // Colour codes only on a terminal.
    expect(output).not.toContain('\u001b[');
    const first = output.split('\n')[0]!;
    expect(() => JSON.parse(first)).toThrow();
  });
});

/** A console that keeps each call: the method and its arguments. */
function fakeConsole(): ConsoleLike & { calls: [keyof ConsoleLike, ...unknown[]][] } {
  const calls: [keyof ConsoleLike, ...unknown[]][] = [];
  return {
    calls,
    debug: (...args) => calls.push(['debug', ...args]),
    info: (...args) => calls.push(['info', ...args]),
    warn: (...args) => calls.push(['warn', ...args]),
    error: (...args) => calls.push(['error', ...args]),
  };
}

describe('consoleLogger', () => {
  it('writes the redacted message, then the redacted fields, through the matching console method', () => {
    const target = fakeConsole();
    writeSecretLines(consoleLogger({ console: target }));
    expectNoSecret(JSON.stringify(target.calls));
    expect(target.calls.map(([method]) => method)).toEqual(['warn', 'info', 'info', 'error', 'info']);
    expect(target.calls[0]).toEqual([
      'warn',
      'fields carry secrets',
      expect.objectContaining({
        robot: 'r1',
        token: '***',
        nested: expect.objectContaining({ password: '***' }),
      }),
    ]);
    // A message alone is written alone.
    expect(target.calls[1]).toEqual([
      'info',
      'dialled rtsp://***@10.0.0.5/h264 with svc_enr_***, svc_key_0123abcd_*** and Bearer ***',
    ]);
    expect(target.calls[4]).toEqual([
      'info',
      'child line',
      { component: 'signalling', token: '***', peer: 'p1' },
    ]);
  });

  it('maps trace and debug to console.debug, fatal to console.error, and filters by level', () => {
    const target = fakeConsole();
    const all = consoleLogger({ console: target, level: 'trace' });
    for (const level of LOG_LEVELS) all[level](level);
    expect(target.calls).toEqual([
      ['debug', 'trace'],
      ['debug', 'debug'],
      ['info', 'info'],
      ['warn', 'warn'],
      ['error', 'error'],
      ['error', 'fatal'],
    ]);

    const quiet = fakeConsole();
    const log = consoleLogger({ console: quiet });
    log.debug('dropped at the default info level');
    log.info('kept');
    consoleLogger({ console: quiet, level: 'silent' }).fatal('dropped');
    expect(quiet.calls).toEqual([['info', 'kept']]);
  });

  it('logs an Error given in place of the fields under err, as pino does', () => {
    const target = fakeConsole();
    consoleLogger({ console: target }).error(new Error('dial rtsp://a:hunter2@cam/ failed'), 'dial failed');
    expect(target.calls).toEqual([
      ['error', 'dial failed', { err: expect.objectContaining({ message: 'dial rtsp://***@cam/ failed' }) }],
    ]);
  });
});

describe('memoryLogger', () => {
  it('keeps every line redacted, with level, message and fields; children share the records', () => {
    const log = memoryLogger();
    writeSecretLines(log);
    expectNoSecret(JSON.stringify(log.records));
    expect(log.records.map(({ level, message }) => [level, message])).toEqual([
      ['warn', 'fields carry secrets'],
      ['info', 'dialled rtsp://***@10.0.0.5/h264 with svc_enr_***, svc_key_0123abcd_*** and Bearer ***'],
      ['info', 'invite #/invite?ott=*** opened'],
      ['error', 'session failed'],
      ['info', 'child line'],
    ]);
    expect(log.records[0]!.fields).toMatchObject({ robot: 'r1', count: 3, token: '***' });
    expect(log.records[1]!.fields).toEqual({});
    expect(log.records[4]!.fields).toEqual({ component: 'signalling', token: '***', peer: 'p1' });
  });

  it('logs an Error given in place of the fields under err', () => {
    const log = memoryLogger();
    log.warn(new Error(`refused ${ENROLMENT}`), 'enrolment refused');
    expect(log.records).toEqual([
      {
        level: 'warn',
        message: 'enrolment refused',
        fields: { err: expect.objectContaining({ message: 'refused svc_enr_***' }) },
      },
    ]);
  });

  it('appends to the array it was given', () => {
    const records: Parameters<typeof memoryLogger>[0] = [];
    memoryLogger(records).child({ a: 1 }).info('x');
    expect(records).toEqual([{ level: 'info', message: 'x', fields: { a: 1 } }]);
  });
});

describe('levels and silentLogger', () => {
  it('ranks levels lowest first with silent above all, and recognises level names', () => {
    expect(LOG_LEVELS.map(levelRank)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(levelRank('silent')).toBeGreaterThan(levelRank('fatal'));
    expect(isLogLevel('warn')).toBe(true);
    expect(isLogLevel('silent')).toBe(true);
    expect(isLogLevel('verbose')).toBe(false);
    expect(isLogLevel(undefined)).toBe(false);
  });

  it('silentLogger discards everything, children included', () => {
    expect(() => {
      silentLogger.error({ token: 'x' }, 'nothing');
      silentLogger.child({ a: 1 }).fatal('nothing');
    }).not.toThrow();
    expect(silentLogger.child({ a: 1 })).toBe(silentLogger);
  });
});
