/**
 * A real svc-cloud for signalling tests: the HTTP app with signalling attached, listening on
 * 127.0.0.1 port 0, a real database, the real OIDC test provider for people, and an ES256 key pair
 * of the test's own for pilot session tokens. Clients are real `ws` WebSockets.
 */
import { generateKeyPairSync, type KeyObject, randomUUID, sign } from 'node:crypto';
import { FakeClock } from '@svc/runtime/testing';
import { robotChallengePayload, SIGNAL_SUBPROTOCOL } from '@svc/wire';
import type { FastifyInstance } from 'fastify';
import { type CryptoKey, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll } from 'vitest';
import WebSocket from 'ws';
import { buildApp } from '../../src/app.js';
import { type CloudConfig, loadCloudConfig } from '../../src/config.js';
import { type CloudDb, type Database, orgs, robots } from '../../src/db/index.js';
import { OidcVerifier } from '../../src/identity/index.js';
import { noInvitationProvider } from '../../src/invitations/index.js';
import {
  type SignallingOptions,
  SignallingServer,
  type VerifiedSessionToken,
} from '../../src/signalling/index.js';
import { checkResponses, violationReporter } from './contract.js';
import type { DatabaseBackend } from './databases.js';
import { type LoginAs, startTestProvider, TEST_AUDIENCE, TEST_CLIENT_ID, type TestProvider } from './oidc.js';

/** Issuer of the tests' pilot session tokens. */
export const TOKEN_ISSUER = 'http://127.0.0.1:8080';

// biome-ignore lint/suspicious/noExplicitAny: messages are read field by field
export type Message = any;

/** How a WebSocket ended. */
export interface Closed {
  readonly code: number;
  readonly reason: string;
}

/**
 * A `ws` client that queues what it receives, so a test awaits messages in order instead of
 * racing event handlers.
 */
export class TestSocket {
  readonly ws: WebSocket;
  /** Resolves with the close code once the connection has ended. */
  readonly closed: Promise<Closed>;
  /** Resolves once the handshake is done; rejects with the HTTP status when the upgrade is refused. */
  readonly opened: Promise<void>;
  private readonly queue: Message[] = [];
  private waiters: Array<(m: Message | undefined) => void> = [];
  private ended: Closed | undefined;

  constructor(url: string, protocols: string[] = [SIGNAL_SUBPROTOCOL]) {
    this.ws = new WebSocket(url, protocols, { perMessageDeflate: false });
    this.ws.on('error', () => undefined);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString('utf8');
        });
        res.on('end', () =>
          reject(
            Object.assign(new Error(`HTTP ${res.statusCode}: ${body}`), { status: res.statusCode, body }),
          ),
        );
      });
      this.ws.once('close', () => reject(new Error('closed before open')));
    });
    this.opened.catch(() => undefined);
    this.ws.on('message', (data, isBinary) => {
      const message = isBinary ? { binary: true } : JSON.parse(data.toString('utf8'));
      const waiter = this.waiters.shift();
      if (waiter !== undefined) waiter(message);
      else this.queue.push(message);
    });
    this.closed = new Promise((resolve) => {
      this.ws.once('close', (code, reason) => {
        this.ended = { code, reason: reason.toString('utf8') };
        for (const waiter of this.waiters) waiter(undefined);
        this.waiters = [];
        resolve(this.ended);
      });
    });
  }

  /** The next message; fails when the connection ends first. */
  async next(): Promise<Message> {
    const message = await this.nextOrClose();
    if (message === undefined) {
      throw new Error(
        `connection closed (${this.ended?.code} ${this.ended?.reason}) while a message was expected`,
      );
    }
    return message;
  }

  /** The next message, or `undefined` when the connection ends first. */
  nextOrClose(): Promise<Message | undefined> {
    const queued = this.queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.ended !== undefined) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The next message, which must be of `type`. */
  async expect(type: string): Promise<Message> {
    const message = await this.next();
    if (message.type !== type) {
      throw new Error(`expected "${type}", got ${JSON.stringify(message)}`);
    }
    return message;
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /**
   * Sends a heartbeat and waits for its ack, returning what came before it: the server handles one
   * connection's messages in order, so everything sent before has been handled.
   */
  async sync(): Promise<Message[]> {
    const t = Math.random();
    this.send({ type: 'heartbeat', t });
    const before: Message[] = [];
    for (;;) {
      const message = await this.next();
      if (message.type === 'heartbeat-ack' && message.t === t) return before;
      before.push(message);
    }
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)
      this.ws.terminate();
  }
}

/** A robot of the test: an id and an Ed25519 key pair. */
export interface TestRobot {
  readonly robotId: string;
  readonly privateKey: KeyObject;
  /** Raw 32-byte public key, base64url. */
  readonly publicKey: string;
}

/** Makes a robot identity (not stored anywhere). */
export function newRobotIdentity(robotId: string): TestRobot {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  return { robotId, privateKey, publicKey: String(jwk.x) };
}

/** The robot's `auth` answer to a challenge. */
export function robotAuth(robot: TestRobot, nonce: string): Record<string, unknown> {
  const sig = sign(null, robotChallengePayload(nonce, robot.robotId), robot.privateKey).toString('base64url');
  return { type: 'auth', v: 2, robot_id: robot.robotId, public_key: robot.publicKey, sig };
}

/** A plausible `announce`. */
export function announcement(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'announce',
    candidates: [
      { address: '192.0.2.7', port: 4433, family: 'ipv4', kind: 'host' },
      { address: '2001:db8::7', port: 4433, family: 'ipv6', kind: 'host' },
    ],
    cert_hashes: ['a1'.repeat(32), 'b2'.repeat(32)],
    channels: [
      { id: 1, name: 'front', kind: 'video', codec: 'avc1.42e01f' },
      { id: 2, name: 'drive', kind: 'command', codec: 'json' },
    ],
    max_sessions: 4,
    relay: false,
    sessions: [],
    ...overrides,
  };
}

/** Options of {@link startSignalling}. */
export interface SignallingHarnessOptions {
  readonly backend: DatabaseBackend;
  readonly provider: TestProvider;
  readonly env?: Record<string, string>;
  /** Overrides of the signalling options (the database, verifier and clock are the harness's). */
  readonly signalling?: Partial<Omit<SignallingOptions, 'db' | 'verifySessionToken' | 'clock'>>;
}

/** An HTTP answer. */
export interface HttpAnswer {
  readonly status: number;
  readonly body: Message;
}

/** svc-cloud listening, with signalling, and what a test needs around it. */
export interface SignallingHarness {
  readonly app: FastifyInstance;
  readonly config: CloudConfig;
  readonly database: Database;
  readonly db: CloudDb;
  readonly signalling: SignallingServer;
  /**
   * Signalling's clock: time moves only when the test advances it (the wall clock starts at the
   * real time, so tokens and the HTTP API agree with it).
   */
  readonly clock: FakeClock;
  /** `http://127.0.0.1:PORT`. */
  readonly base: string;
  /** `ws://127.0.0.1:PORT/ws`. */
  readonly wsUrl: string;
  /** Opens a WebSocket to `/ws` (closed by {@link SignallingHarness.closeSockets}). */
  socket(protocols?: string[]): TestSocket;
  /** Closes every socket the test opened. */
  closeSockets(): void;
  /** A robot identity stored in `robots` with `orgId` (enrolled unless `orgId` is null). */
  robot(robotId: string, orgId: string | null): Promise<TestRobot>;
  /** Connects `robot`, answers the challenge and returns the socket and the answer. */
  connectRobot(robot: TestRobot): Promise<{ socket: TestSocket; answer: Message }>;
  /** Connects a robot and announces it; the socket is authenticated and announced. */
  onlineRobot(robot: TestRobot, announce?: Record<string, unknown>): Promise<TestSocket>;
  /** A pilot session token signed with the harness's key (or `key: 'foreign'`, a key nobody trusts). */
  token(claims: {
    aud: string;
    scope: 'drive' | 'observe';
    sub?: string;
    expInS?: number;
    key?: 'foreign';
  }): Promise<string>;
  /** Connects a pilot with `token` and returns the socket and the answer to its `auth`. */
  connectPilot(token: string): Promise<{ socket: TestSocket; answer: Message }>;
  /** Signs a person in at the provider; returns their access token and first org. */
  signIn(who: LoginAs): Promise<{ token: string; orgId: string }>;
  /** A real HTTP request to the listening server. */
  http(method: 'GET' | 'POST' | 'DELETE', path: string, token?: string): Promise<HttpAnswer>;
  dispose(): Promise<void>;
}

/** Starts svc-cloud with signalling on a fresh database of `backend`, listening on 127.0.0.1:0. */
export async function startSignalling(options: SignallingHarnessOptions): Promise<SignallingHarness> {
  const config = loadCloudConfig({
    SVC_OIDC_ISSUER: options.provider.issuer,
    SVC_OIDC_AUDIENCE: TEST_AUDIENCE,
    SVC_OIDC_CLIENT_ID: TEST_CLIENT_ID,
    SVC_PUBLIC_URL: TOKEN_ISSUER,
    SVC_RATE_LIMIT_PER_MINUTE: '0',
    ...options.env,
  });
  const { database, dispose: disposeDatabase } = await options.backend.create();
  const clock = new FakeClock(0, Date.now());
  const trusted = await generateKeyPair('ES256');
  const foreign = await generateKeyPair('ES256');
  const verifySessionToken = async (token: string): Promise<VerifiedSessionToken> => {
    const { payload } = await jwtVerify(token, trusted.publicKey, {
      algorithms: ['ES256'],
      issuer: TOKEN_ISSUER,
      currentDate: new Date(clock.wallNow()),
    });
    const { sub, aud, scope, jti, exp } = payload as Record<string, unknown>;
    if (
      typeof sub !== 'string' ||
      typeof aud !== 'string' ||
      (scope !== 'drive' && scope !== 'observe') ||
      typeof jti !== 'string' ||
      typeof exp !== 'number'
    ) {
      throw Object.assign(new Error('the token lacks sub, aud, scope, jti or exp'), {
        code: 'claim-invalid',
      });
    }
    return { sub, aud, scope, jti, exp };
  };
  const signalling = new SignallingServer({
    db: database.db,
    verifySessionToken,
    devOpenEnrolment: config.devOpenEnrolment,
    clock,
    // The tests call sweep() themselves after moving the clock.
    sweepIntervalMs: 3_600_000,
    ...options.signalling,
  });
  const app = await buildApp({
    config,
    database,
    verifier: new OidcVerifier({
      issuer: config.identity.issuer,
      audience: config.identity.audience,
      clientId: config.identity.clientId,
      jwksUri: options.provider.jwksUri,
      userinfoUri: options.provider.userinfoUri,
    }),
    invitationProvider: noInvitationProvider,
    mail: { async send() {} },
    logger: false,
    signalling,
  });
  signalling.attach(app.server);
  app.addHook('preClose', () => signalling.close());
  // Every answer of the API is checked against its route's declared schemas (see contract.ts).
  const reportViolations = violationReporter(checkResponses(app));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address !== 'object') throw new Error('no address');
  const base = `http://127.0.0.1:${address.port}`;
  const wsUrl = `ws://127.0.0.1:${address.port}/ws`;
  const sockets = new Set<TestSocket>();

  const harness: SignallingHarness = {
    app,
    config,
    database,
    db: database.db,
    signalling,
    clock,
    base,
    wsUrl,
    socket(protocols) {
      const socket = new TestSocket(wsUrl, protocols);
      sockets.add(socket);
      return socket;
    },
    closeSockets() {
      for (const socket of sockets) socket.close();
      sockets.clear();
    },
    async robot(robotId, orgId) {
      const robot = newRobotIdentity(robotId);
      await database.db.insert(robots).values({
        robotId,
        orgId,
        publicKey: robot.publicKey,
        enrolledAt: orgId === null ? null : new Date(clock.wallNow()),
      });
      return robot;
    },
    async connectRobot(robot) {
      const socket = harness.socket();
      const challenge = await socket.expect('challenge');
      socket.send(robotAuth(robot, challenge.nonce));
      return { socket, answer: await socket.next() };
    },
    async onlineRobot(robot, announce = announcement()) {
      const { socket, answer } = await harness.connectRobot(robot);
      if (answer.type !== 'auth-ok')
        throw new Error(`robot ${robot.robotId} not admitted: ${JSON.stringify(answer)}`);
      socket.send(announce);
      await socket.sync();
      return socket;
    },
    async token(claims) {
      const now = Math.floor(clock.wallNow() / 1000);
      return new SignJWT({ scope: claims.scope })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(TOKEN_ISSUER)
        .setSubject(claims.sub ?? 'user:pilot')
        .setAudience(claims.aud)
        .setJti(randomUUID())
        .setIssuedAt(now)
        .setExpirationTime(now + (claims.expInS ?? 300))
        .sign((claims.key === 'foreign' ? foreign : trusted).privateKey as CryptoKey);
    },
    async connectPilot(token) {
      const socket = harness.socket();
      await socket.expect('challenge');
      socket.send({ type: 'auth', v: 2, token });
      return { socket, answer: await socket.next() };
    },
    async signIn(who) {
      const tokens = await options.provider.login(who);
      const me = await fetch(`${base}/api/v1/me`, {
        headers: { authorization: `Bearer ${tokens.accessToken}`, 'x-svc-id-token': tokens.idToken },
      });
      const body = (await me.json()) as { orgs: Array<{ id: string }> };
      const orgId = body.orgs[0]?.id;
      if (orgId === undefined) throw new Error(`no org for ${JSON.stringify(who)}: ${JSON.stringify(body)}`);
      return { token: tokens.accessToken, orgId };
    },
    async http(method, path, token) {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      });
      const text = await response.text();
      reportViolations();
      return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
    },
    async dispose() {
      harness.closeSockets();
      await app.close();
      await disposeDatabase();
      reportViolations();
    },
  };
  return harness;
}

/** What {@link signallingSuite} gives its tests once `beforeAll` ran. */
export interface SignallingSuite {
  readonly h: SignallingHarness;
  /** The org the suite's robots are enrolled in. */
  readonly orgId: string;
}

/**
 * A signalling harness for one `describe`: started with one org before its tests, its sockets
 * closed after each test, disposed with its identity provider after all of them.
 */
export function signallingSuite(
  backend: DatabaseBackend,
  orgName: string,
  signalling?: SignallingHarnessOptions['signalling'],
): SignallingSuite {
  let provider: TestProvider | undefined;
  const suite: { h?: SignallingHarness; orgId?: string } = {};
  beforeAll(async () => {
    provider = await startTestProvider();
    suite.h = await startSignalling({
      backend,
      provider,
      ...(signalling === undefined ? {} : { signalling }),
    });
    const [org] = await suite.h.db.insert(orgs).values({ name: orgName }).returning({ id: orgs.id });
    suite.orgId = org!.id;
  });
  afterEach(() => suite.h?.closeSockets());
  afterAll(async () => {
    await suite.h?.dispose();
    await provider?.close();
  });
  return {
    get h() {
      return suite.h!;
    },
    get orgId() {
      return suite.orgId!;
    },
  };
}

/**
 * The next message of `type` on `socket` (others, such as who drives, are skipped). Answers to
 * asynchronous handlers may come after a later heartbeat's.
 */
export async function nextOfType(socket: TestSocket, type: string): Promise<Message> {
  for (;;) {
    const message = await socket.next();
    if (message.type === type) return message;
  }
}
