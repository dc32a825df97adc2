import type { ControlMessage } from '@svc/wire';
import type { PilotTransport, TransportFactory } from '../../src/index.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A WebTransport stand-in that a test plays the robot with: it answers or refuses, says control
 * messages, sends datagrams and hangs up when told. Its incoming streams stay open after a close,
 * so a test can deliver what was still in flight (a late datagram or control line).
 */
export class FakeTransport implements PilotTransport {
  readonly ready: Promise<void>;
  readonly closed: Promise<WebTransportCloseInfo>;
  readonly datagrams: PilotTransport['datagrams'];
  /** Datagrams the pilot sent. */
  readonly sentDatagrams: Uint8Array[] = [];
  /** How the pilot closed this transport, once it did. */
  closedWith: WebTransportCloseInfo | undefined;
  #controlText = '';
  #answer!: () => void;
  #refuse!: (err: Error) => void;
  #end!: (info: WebTransportCloseInfo) => void;
  #controlIn!: ReadableStreamDefaultController<Uint8Array>;
  #datagramsIn!: ReadableStreamDefaultController<Uint8Array>;
  readonly #controlReadable: ReadableStream<Uint8Array>;

  constructor(
    readonly url: string,
    readonly options: WebTransportOptions,
  ) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.#answer = resolve;
      this.#refuse = reject;
    });
    this.ready.catch(() => undefined);
    this.closed = new Promise<WebTransportCloseInfo>((resolve) => {
      this.#end = resolve;
    });
    this.#controlReadable = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controlIn = controller;
      },
    });
    this.datagrams = {
      readable: new ReadableStream<Uint8Array>({
        start: (controller) => {
          this.#datagramsIn = controller;
        },
      }),
      writable: new WritableStream<Uint8Array>({
        write: (chunk) => {
          this.sentDatagrams.push(chunk);
        },
      }),
      maxDatagramSize: 1200,
    };
  }

  createBidirectionalStream(): Promise<{
    readable: ReadableStream<Uint8Array>;
    writable: WritableStream<Uint8Array>;
  }> {
    return Promise.resolve({
      readable: this.#controlReadable,
      writable: new WritableStream<Uint8Array>({
        write: (chunk) => {
          this.#controlText += decoder.decode(chunk);
        },
      }),
    });
  }

  close(info: WebTransportCloseInfo = {}): void {
    this.closedWith ??= info;
    this.#end(info);
  }

  /** The robot answers: the transport is ready. */
  answer(): void {
    this.#answer();
  }

  /** The candidate does not answer. */
  refuse(message = 'connection refused'): void {
    this.#refuse(new Error(message));
  }

  /** The robot writes these control messages, in one chunk. */
  say(...messages: ControlMessage[]): void {
    this.#controlIn.enqueue(encoder.encode(messages.map((m) => `${JSON.stringify(m)}\n`).join('')));
  }

  /** The robot sends a datagram. */
  datagram(bytes: Uint8Array): void {
    this.#datagramsIn.enqueue(bytes);
  }

  /** The robot closes the control stream. */
  endControl(): void {
    this.#controlIn.close();
  }

  /** The robot closes the transport. */
  hangUp(info: WebTransportCloseInfo = { closeCode: 0, reason: 'shutting down' }): void {
    this.#end(info);
  }

  /** The control messages the pilot wrote, in order. */
  get sent(): ControlMessage[] {
    return this.#controlText
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as ControlMessage);
  }
}

/** A transport factory that keeps every transport it made. */
export function fakeTransports(): { readonly made: FakeTransport[]; readonly create: TransportFactory } {
  const made: FakeTransport[] = [];
  return {
    made,
    create: (url, options) => {
      const transport = new FakeTransport(url, options);
      made.push(transport);
      return transport;
    },
  };
}
