/**
 * Test support for the signalling client: a small svc-cloud `/ws` that plays the server side of
 * `docs/protocol/signalling.md` (challenge, Ed25519 verification with node:crypto, auth-ok or
 * denied, heartbeat-ack), records what robots send, and lets a test push messages; helpers for
 * the fake clock's timers and a memory logger's lines.
 */

import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FakeClock, LogRecord } from '@svc/runtime/testing';
import { listenLocal } from '@svc/testkit';
import {
  encodeSignalMessage,
  isWireError,
  parseSignalClientMessage,
  robotChallengePayload,
  SIGNAL_CLOSE,
  SIGNAL_SUBPROTOCOL,
  type SignalClientMessage,
  type SignalServerMessage,
} from '@svc/wire';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import type { SignallingCredential } from '../../src/signalling/client.js';

/** Items in arrival order, and a way to wait for the next one that matches and was not taken yet. */
export class Recorder<T> {
  readonly items: T[] = [];
  readonly #taken: boolean[] = [];
  readonly #waiters: { predicate: (item: T) => boolean; resolve: (item: T) => void }[] = [];

  push(item: T): void {
    const index = this.items.push(item) - 1;
    this.#taken.push(false);
    const at = this.#waiters.findIndex((w) => w.predicate(item));
    if (at < 0) return;
    const [waiter] = this.#waiters.splice(at, 1);
    this.#taken[index] = true;
    waiter?.resolve(item);
  }

  /** The earliest item not yet taken that matches, waiting for it if there is none. */
  next(predicate: (item: T) => boolean = () => true): Promise<T> {
    const index = this.items.findIndex((item, i) => !this.#taken[i] && predicate(item));
    if (index >= 0) {
      this.#taken[index] = true;
      return Promise.resolve(this.items[index] as T);
    }
    return new Promise((resolve) => this.#waiters.push({ predicate, resolve }));
  }
}

/**
 * Runs the one pending timer of `clock` (moving time to it); fails when there is not exactly one.
 * Returns the delay it had left.
 */
export function runOnly(clock: FakeClock): number {
  const due = clock.nextDueMs();
  if (clock.pendingTimers !== 1 || due === undefined) {
    throw new Error(`expected one pending timer, found ${clock.pendingTimers}`);
  }
  const left = due - clock.now();
  clock.advanceTo(due);
  return left;
}

/** The delay left of each pending timer of `clock` (this suite never has more than one). */
export function pendingDelays(clock: FakeClock): number[] {
  const due = clock.nextDueMs();
  if (due === undefined) return [];
  if (clock.pendingTimers > 1)
    throw new Error(`expected at most one pending timer, found ${clock.pendingTimers}`);
  return [due - clock.now()];
}

/** Everything a memory logger kept, one line per record, for checks that no secret was logged. */
export function logText(logger: { readonly records: readonly LogRecord[] }): string {
  return logger.records.map((r) => `${r.level} ${r.message} ${JSON.stringify(r.fields)}`).join('\n');
}

/** A fresh Ed25519 key pair in the shape of the daemon's `RobotCredential`. */
export function testCredential(): SignallingCredential {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('Ed25519 JWK without x');
  return {
    publicKey: jwk.x,
    sign: (bytes: Uint8Array) => new Uint8Array(sign(null, bytes, privateKey)),
  };
}

/** What the test server saw of one robot connection. */
export class ServerConnection {
  readonly socket: WebSocket;
  readonly protocol: string;
  /** Messages the robot sent, each checked against the contract's schema. */
  readonly messages = new Recorder<SignalClientMessage>();
  /** Text the robot sent that broke the schema (the test fails on any). */
  readonly invalid: string[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  nonce = '';
  /** Whether the robot's `auth` signature verified against the key it presented. */
  signatureVerified = false;
  sig = '';

  constructor(socket: WebSocket) {
    this.socket = socket;
    this.protocol = socket.protocol;
    this.closed = new Promise((resolve) => {
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') }));
    });
  }

  /** Sends a message of the contract (checked against the schema). */
  send(message: SignalServerMessage): void {
    this.socket.send(encodeSignalMessage(message));
  }

  /** Sends anything at all, for the robustness tests. */
  sendRaw(data: string | Buffer, binary = false): void {
    this.socket.send(data, { binary });
  }

  /** The next message of a type the robot sent. */
  next<T extends SignalClientMessage['type']>(type: T): Promise<Extract<SignalClientMessage, { type: T }>> {
    return this.messages.next((m) => m.type === type) as Promise<Extract<SignalClientMessage, { type: T }>>;
  }

  close(code: number, reason = ''): void {
    this.socket.close(code, reason);
  }
}

/** Options of {@link TestSignalServer.start}. */
export interface TestSignalServerOptions {
  /** Enrolled robots: id to public key (base64url). Shared, so a test may enrol while running. */
  readonly robots: Map<string, string>;
  /** `heartbeat_ms` of `auth-ok`. */
  readonly heartbeatMs?: number;
  /** Listen on this port of 127.0.0.1 (a restart); port 0 by default. */
  readonly port?: number;
  /** `org_id` of `auth-ok`. */
  readonly orgId?: string | null;
}

/** svc-cloud's `/ws` as far as a robot can tell. */
export class TestSignalServer {
  readonly port: number;
  readonly connections = new Recorder<ServerConnection>();
  /** Answer heartbeats (a test turns this off to play a silent cloud). */
  ackHeartbeats = true;
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #options: TestSignalServerOptions;

  private constructor(http: Server, wss: WebSocketServer, port: number, options: TestSignalServerOptions) {
    this.#http = http;
    this.#wss = wss;
    this.port = port;
    this.#options = options;
  }

  static async start(options: TestSignalServerOptions): Promise<TestSignalServer> {
    const http = createServer((_req, res) => res.writeHead(404).end());
    const wss = new WebSocketServer({
      noServer: true,
      handleProtocols: (protocols) => (protocols.has(SIGNAL_SUBPROTOCOL) ? SIGNAL_SUBPROTOCOL : false),
    });
    let port: number;
    if (options.port === undefined) {
      port = await listenLocal(http);
    } else {
      const wanted = options.port;
      await new Promise<void>((resolve, reject) => {
        http.once('error', reject);
        http.listen(wanted, '127.0.0.1', () => resolve());
      });
      port = wanted;
    }
    const server = new TestSignalServer(http, wss, port, options);
    http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      server.#upgrade(req, socket, head),
    );
    return server;
  }

  /** `ws://127.0.0.1:<port>/ws` with a secret-looking parameter, to prove logs redact it. */
  get url(): string {
    return `ws://127.0.0.1:${this.port}/ws?access_token=sekrit-in-url`;
  }

  /** Stops as a crashed process would: every connection dropped without a close frame. */
  async stop(): Promise<void> {
    for (const client of this.#wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await new Promise<void>((resolve, reject) => this.#http.close((err) => (err ? reject(err) : resolve())));
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const offered = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim());
    if (!offered.includes(SIGNAL_SUBPROTOCOL)) {
      socket.end('HTTP/1.1 426 Upgrade Required\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws));
  }

  #accept(ws: WebSocket): void {
    const connection = new ServerConnection(ws);
    connection.nonce = randomBytes(32).toString('base64url');
    let authenticated = false;
    ws.on('message', (data, isBinary) => {
      const text = isBinary ? '' : data.toString();
      const message = parseSignalClientMessage(text);
      if (isWireError(message)) {
        connection.invalid.push(text);
        ws.close(SIGNAL_CLOSE.protocolError, 'bad message');
        return;
      }
      connection.messages.push(message);
      if (message.type === 'auth' && 'robot_id' in message && !authenticated) {
        connection.sig = message.sig;
        authenticated = this.#authenticate(ws, connection, message);
      } else if (message.type === 'heartbeat' && this.ackHeartbeats) {
        connection.send({ type: 'heartbeat-ack' });
      }
    });
    connection.send({ type: 'challenge', v: 2, nonce: connection.nonce });
    this.connections.push(connection);
  }

  #authenticate(
    ws: WebSocket,
    connection: ServerConnection,
    auth: Extract<SignalClientMessage, { type: 'auth'; robot_id: string }>,
  ): boolean {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: auth.public_key }, format: 'jwk' });
    const payload = robotChallengePayload(connection.nonce, auth.robot_id);
    connection.signatureVerified = verify(null, payload, key, Buffer.from(auth.sig, 'base64url'));
    if (!connection.signatureVerified) {
      connection.send({ type: 'denied', reason: 'bad-signature', message: 'signature did not verify' });
      ws.close(SIGNAL_CLOSE.unauthenticated);
      return false;
    }
    const enrolled = this.#options.robots.get(auth.robot_id);
    if (enrolled === undefined || enrolled !== auth.public_key) {
      const unknown = enrolled === undefined;
      connection.send({
        type: 'denied',
        reason: unknown ? 'unknown-robot' : 'key-mismatch',
        message: unknown
          ? 'this robot is not enrolled; redeem an enrolment token'
          : 'enrolled with another key; delete the robot in the console and enrol again',
      });
      ws.close(SIGNAL_CLOSE.denied);
      return false;
    }
    connection.send({
      type: 'auth-ok',
      role: 'robot',
      robot_id: auth.robot_id,
      org_id: this.#options.orgId === undefined ? 'org-1' : this.#options.orgId,
      heartbeat_ms: this.#options.heartbeatMs ?? 15_000,
    });
    return true;
  }
}
