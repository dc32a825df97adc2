/**
 * A WebSocket the test drives by hand, for the signalling client's state machine on fake time:
 * the test opens it, delivers server messages and closes it; it records what the client sent and
 * how the client closed it.
 */
import { EventEmitter } from 'node:events';
import { encodeSignalMessage, type SignalClientMessage, type SignalServerMessage } from '@svc/wire';
import type WebSocket from 'ws';

/** How the client ended a socket. */
export type FakeSocketEnd = { readonly code: number; readonly reason: string } | 'terminated';

/** One socket the client opened. */
export class FakeSocket extends EventEmitter {
  readyState = 0;
  /** Messages the client sent, parsed. */
  readonly sent: SignalClientMessage[] = [];
  /** How the client ended it, if it did. */
  endedBy: FakeSocketEnd | undefined;

  constructor(
    readonly url: string,
    readonly protocols: readonly string[],
  ) {
    super();
  }

  send(text: string, callback?: (err?: Error) => void): void {
    this.sent.push(JSON.parse(text) as SignalClientMessage);
    callback?.();
  }

  close(code: number, reason: string): void {
    this.endedBy = { code, reason };
    this.readyState = 2;
    queueMicrotask(() => this.#closed(code, reason));
  }

  terminate(): void {
    this.endedBy = 'terminated';
    this.#closed(1006, '');
  }

  /** The connection opened. */
  open(): void {
    this.readyState = 1;
    this.emit('open');
  }

  /** The server sends `message`. */
  receive(message: SignalServerMessage): void {
    this.emit('message', Buffer.from(encodeSignalMessage(message)), false);
  }

  /** The server (or the network) closes the connection. */
  remoteClose(code: number, reason = ''): void {
    this.#closed(code, reason);
  }

  /** The types the client sent, in order. */
  sentTypes(): string[] {
    return this.sent.map((m) => m.type);
  }

  #closed(code: number, reason: string): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.emit('close', code, Buffer.from(reason));
  }
}

/** A WebSocket class whose instances are {@link FakeSocket}s, collected in `sockets`. */
export function fakeWebSocketClass(sockets: FakeSocket[]): typeof WebSocket {
  class Fake extends FakeSocket {
    constructor(url: string, protocols: string[]) {
      super(url, protocols);
      sockets.push(this);
    }
  }
  return Fake as unknown as typeof WebSocket;
}
