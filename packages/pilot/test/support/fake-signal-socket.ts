/**
 * A browser `WebSocket` the test drives by hand, standing in for svc-cloud's signalling: the test
 * delivers server messages and closes it; it records what the pilot sent and how it closed it.
 */
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import {
  encodeSignalMessage,
  parseSignalClientMessage,
  type SignalClientMessage,
  type SignalServerMessage,
  WireError,
} from '@svc/wire';
import { PilotConnection, type PilotConnectOptions, SignalSession } from '../../src/index.js';
import { fakeTransports } from './fake-transport.js';

/** One socket the pilot opened. */
export class FakeSignalSocket {
  onopen: ((event: Event) => void) | null = null;
  onmessage: ((event: MessageEvent) => void) | null = null;
  onclose: ((event: CloseEvent) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  /** Messages the pilot sent, parsed (each checked against the schema). */
  readonly sent: SignalClientMessage[] = [];
  /** The close code the pilot closed it with, if it did. */
  closedWith: number | undefined;

  constructor(
    readonly url: string,
    readonly protocol: string,
  ) {}

  send(text: string): void {
    const message = parseSignalClientMessage(text);
    if (message instanceof WireError) throw message;
    this.sent.push(message);
  }

  close(code = 1000): void {
    this.closedWith = code;
  }

  /** The server sends `message`. */
  receive(message: SignalServerMessage): void {
    this.onmessage?.({ data: encodeSignalMessage(message) } as MessageEvent);
  }

  /** The server sends raw text. */
  receiveText(text: string): void {
    this.onmessage?.({ data: text } as MessageEvent);
  }

  /** The server or the network closes the connection. */
  remoteClose(code: number): void {
    this.onclose?.({ code } as CloseEvent);
  }

  /** The types the pilot sent, in order. */
  sentTypes(): string[] {
    return this.sent.map((m) => m.type);
  }

  /** Plays svc-cloud up to `auth-ok` (challenge, then `auth-ok` once the pilot answered it). */
  authenticate(scope: 'drive' | 'observe' = 'drive', heartbeatMs = 15_000): void {
    this.receive({ type: 'challenge', v: 2, nonce: 'n'.repeat(43) });
    this.receive({ type: 'auth-ok', role: 'pilot', robot_id: 'r1', scope, heartbeat_ms: heartbeatMs });
  }
}

/** A `WebSocket` class whose instances are {@link FakeSignalSocket}s, collected in `sockets`. */
export function fakeSignalSockets(): { sockets: FakeSignalSocket[]; WebSocketImpl: typeof WebSocket } {
  const sockets: FakeSignalSocket[] = [];
  class Fake extends FakeSignalSocket {
    constructor(url: string, protocol: string) {
      super(url, protocol);
      sockets.push(this);
    }
  }
  return { sockets, WebSocketImpl: Fake as unknown as typeof WebSocket };
}

/** A JWT-shaped token (unsigned) whose `exp` is `expSeconds`: the pilot only reads the claim. */
export function tokenExpiringAt(expSeconds: number, scope: 'drive' | 'observe' = 'drive'): string {
  const part = (value: object) =>
    btoa(JSON.stringify(value)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return `${part({ alg: 'EdDSA' })}.${part({ exp: expSeconds, scope })}.sig`;
}

/** The `offer` svc-cloud answers `connect` with. */
export const SIGNAL_OFFER = {
  type: 'offer',
  session_id: 'sess-1',
  robot_id: 'r1',
  role: 'observer',
  candidates: [{ address: '10.0.0.1', port: 4433, family: 'ipv4', kind: 'host' }],
  cert_hashes: ['ab'.repeat(32)],
  channels: [],
  relay: false,
} as const satisfies SignalServerMessage;

/**
 * A {@link PilotConnection} whose signalling runs on fake sockets, on fake time, with fake
 * transports (none with `webTransport: false`: a browser without WebTransport); `extra` adds to or
 * overrides its options.
 */
export function signalledConnection(
  extra: Partial<PilotConnectOptions> & { readonly webTransport?: false } = {},
) {
  const clock = new FakeClock(1000);
  const { sockets, WebSocketImpl } = fakeSignalSockets();
  const { made, create } = fakeTransports();
  const { webTransport, ...rest } = extra;
  const connection = new PilotConnection({
    signalUrl: 'wss://cloud.example/ws',
    robotId: 'r1',
    token: 'tok',
    container: {} as HTMLElement,
    clock,
    random: () => 0.5,
    logger: memoryLogger(),
    ...(webTransport !== false && { createTransport: create }),
    openSignalling: (options) => new SignalSession({ ...options, WebSocketImpl }),
    closeOnPageHide: false,
    ...rest,
  } as PilotConnectOptions);
  const socket = () => {
    const s = sockets.at(-1);
    if (s === undefined) throw new Error('no signalling socket');
    return s;
  };
  return { clock, connection, sockets, made, socket };
}
