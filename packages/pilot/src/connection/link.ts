import type { Logger } from '@svc/runtime';
import { ControlLineReader, type ControlMessage, encodeControlMessage, WireError } from '@svc/wire';
import type { PilotPath } from './candidates.js';
import type { PilotTransport } from './options.js';

/** What a {@link Link} reports, each time with itself, so the connection can tell a late report. */
export interface LinkListener {
  /** One datagram arrived. */
  datagram(link: Link, bytes: Uint8Array): void;
  /** One well-formed control message arrived (malformed lines are skipped). */
  control(link: Link, message: ControlMessage): void;
  /** The link ended: the transport closed or failed, or the robot ended the control stream. Once. */
  ended(link: Link, reason: string): void;
}

/**
 * One transport to the robot with its control stream (one JSON line per message) and its
 * datagrams: writes, and the reading loops that report to a {@link LinkListener}.
 */
export class Link {
  /** The candidate URL the transport answered on. */
  readonly url: string;
  #path: PilotPath;
  readonly #transport: PilotTransport;
  readonly #controlReadable: ReadableStream<Uint8Array>;
  readonly #control: WritableStreamDefaultWriter<Uint8Array>;
  readonly #datagrams: WritableStreamDefaultWriter<Uint8Array>;
  readonly #logger: Logger;
  #ended = false;
  #closed = false;

  private constructor(
    url: string,
    path: PilotPath,
    transport: PilotTransport,
    control: { readonly readable: ReadableStream<Uint8Array>; readonly writable: WritableStream<Uint8Array> },
    logger: Logger,
  ) {
    this.url = url;
    this.#path = path;
    this.#transport = transport;
    this.#controlReadable = control.readable;
    this.#control = control.writable.getWriter();
    this.#datagrams = transport.datagrams.writable.getWriter();
    this.#logger = logger;
  }

  /**
   * Opens the control stream on a transport that is ready. Nothing is read until {@link start}.
   * Closes the transport when the stream cannot be opened.
   *
   * @throws what `createBidirectionalStream` rejects with.
   */
  static async open(
    url: string,
    transport: PilotTransport,
    logger: Logger,
    path: PilotPath = 'direct',
  ): Promise<Link> {
    try {
      return new Link(url, path, transport, await transport.createBidirectionalStream(), logger);
    } catch (err) {
      transport.close({ closeCode: 0, reason: 'no control stream' });
      throw err;
    }
  }

  /**
   * How its packets travel: straight to the robot, or through a relay (svc-cloud's, or on WebRTC
   * a TURN server's).
   */
  get path(): PilotPath {
    return this.#path;
  }

  /** Whether the link was closed or its transport ended. */
  get closed(): boolean {
    return this.#closed || this.#ended;
  }

  /** The path changed under the same transport (WebRTC: ICE selected another candidate pair). */
  setPath(path: PilotPath): void {
    this.#path = path;
  }

  /** Largest datagram the transport sends now. */
  get maxDatagramSize(): number {
    return this.#transport.datagrams.maxDatagramSize;
  }

  /** Starts reading datagrams and control lines, and watching the transport's end. */
  start(listener: LinkListener): void {
    void this.#readControl(listener);
    void this.#readDatagrams(listener);
    this.#transport.closed.then(
      (info) => {
        const why = [info.closeCode, info.reason].filter((part) => part !== undefined && part !== '');
        this.#end(listener, `the robot closed the connection${why.length > 0 ? ` (${why.join(': ')})` : ''}`);
      },
      (err: unknown) => this.#end(listener, `the connection failed: ${errorText(err)}`),
    );
  }

  /**
   * Writes one control message. A message that breaks the schema is logged and not sent; a write
   * that fails means the link is ending, which the listener hears about.
   */
  send(message: ControlMessage): void {
    let line: Uint8Array;
    try {
      line = encodeControlMessage(message);
    } catch (err) {
      this.#logger.warn({ err, type: message.type }, 'a control message breaks the schema and was not sent');
      return;
    }
    this.#control.write(line).catch((err: unknown) => {
      this.#logger.debug({ err, type: message.type }, 'a control message was not sent: the link is ending');
    });
  }

  /** Sends one datagram; one the browser cannot queue is lost like one lost on the path. */
  sendDatagram(bytes: Uint8Array): void {
    this.#datagrams.write(bytes).catch(() => undefined);
  }

  /** Closes the transport (once); the end is still reported to the listener. */
  close(info: WebTransportCloseInfo): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#transport.close(info);
    } catch (err) {
      this.#logger.debug({ err }, 'closing the transport failed; it was closing already');
    }
  }

  async #readControl(listener: LinkListener): Promise<void> {
    const reader = this.#controlReadable.getReader();
    const lines = new ControlLineReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const message of lines.push(value)) {
          if (message instanceof WireError)
            this.#logger.debug({ err: message }, 'a malformed control line was skipped');
          else listener.control(this, message);
        }
      }
      this.#end(listener, 'the robot closed the control stream');
    } catch (err) {
      this.#end(listener, `the control stream failed: ${errorText(err)}`);
    }
  }

  async #readDatagrams(listener: LinkListener): Promise<void> {
    const reader = this.#transport.datagrams.readable.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        // The transport's close follows, with its reason.
        if (done) return;
        listener.datagram(this, value);
      }
    } catch (err) {
      this.#end(listener, `receiving datagrams failed: ${errorText(err)}`);
    }
  }

  #end(listener: LinkListener, reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    listener.ended(this, reason);
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
