/**
 * A reader of svc-cloud's fleet stream for tests: `fetch` with a streamed body, as the console
 * reads it. Events are queued as they arrive, each decoded with the schema the OpenAPI document
 * publishes, so a test awaits them in order (and an event that breaks the contract fails it).
 */
import { z } from 'zod';
import { type FleetEvent, fleetEvent } from '../../src/api/fleet-events.js';

/** An open fleet stream. */
export class FleetStream {
  /** The HTTP status and headers of the answer. */
  readonly response: Response;
  /** Every event received so far, in order. */
  readonly seen: FleetEvent[] = [];
  /** Comments (`: heartbeat`) received so far. */
  readonly comments: string[] = [];
  /** Resolves once the server has ended the body (or the test aborted it). */
  readonly ended: Promise<void>;
  readonly #abort: AbortController;
  readonly #queue: FleetEvent[] = [];
  #waiters: Array<(event: FleetEvent | undefined) => void> = [];
  #done = false;
  #failure: Error | undefined;

  private constructor(response: Response, abort: AbortController) {
    this.response = response;
    this.#abort = abort;
    this.ended = this.#read().catch((err: unknown) => {
      if (!abort.signal.aborted) this.#failure = err instanceof Error ? err : new Error(String(err));
    });
    void this.ended.finally(() => {
      this.#done = true;
      for (const waiter of this.#waiters) waiter(undefined);
      this.#waiters = [];
    });
  }

  /** Opens `GET /api/v1/orgs/{orgId}/fleet/events` with `token`; the answer must be a stream. */
  static async open(base: string, orgId: string, token: string): Promise<FleetStream> {
    const abort = new AbortController();
    const response = await fetch(`${base}/api/v1/orgs/${orgId}/fleet/events`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      signal: abort.signal,
    });
    if (response.status !== 200) {
      throw new Error(`the fleet stream answered ${response.status}: ${await response.text()}`);
    }
    return new FleetStream(response, abort);
  }

  /** The next event; fails when the stream ends first. */
  async next(): Promise<FleetEvent> {
    const event = await this.#nextOrEnd();
    if (event === undefined) {
      throw new Error(
        `the stream ended while an event was expected${this.#failure ? `: ${this.#failure.message}` : ''}`,
      );
    }
    return event;
  }

  /** Events until one satisfies `predicate`; returns it and those skipped before it. */
  async until<E extends FleetEvent>(
    predicate: (event: FleetEvent) => event is E,
  ): Promise<{ event: E; skipped: FleetEvent[] }>;
  async until(
    predicate: (event: FleetEvent) => boolean,
  ): Promise<{ event: FleetEvent; skipped: FleetEvent[] }>;
  async until(
    predicate: (event: FleetEvent) => boolean,
  ): Promise<{ event: FleetEvent; skipped: FleetEvent[] }> {
    const skipped: FleetEvent[] = [];
    for (;;) {
      const event = await this.next();
      if (predicate(event)) return { event, skipped };
      skipped.push(event);
    }
  }

  /** The next event, or `undefined` when the stream has ended. */
  #nextOrEnd(): Promise<FleetEvent | undefined> {
    const queued = this.#queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#done) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Closes the stream from the client's side. */
  close(): void {
    this.#abort.abort();
  }

  async #read(): Promise<void> {
    const body = this.response.body;
    if (body === null) throw new Error('the answer has no body');
    const decoder = new TextDecoder();
    let buffer = '';
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        this.#block(block);
      }
    }
    if (buffer !== '') throw new Error(`the stream ended inside an event: ${JSON.stringify(buffer)}`);
  }

  /** One event block: `event:` and one `data:` line, or comments. */
  #block(block: string): void {
    let name: string | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else if (line.startsWith('event: ')) name = line.slice('event: '.length);
      else if (line.startsWith('data: ')) {
        if (data !== undefined) throw new Error(`an event with two data lines: ${block}`);
        data = line.slice('data: '.length);
      } else throw new Error(`an unexpected line in the stream: ${JSON.stringify(line)}`);
    }
    if (data === undefined) return;
    // The contract: the data line fits the schema of the OpenAPI document, `type` names the event.
    const event = z.decode(fleetEvent, JSON.parse(data));
    if (event.type !== name) throw new Error(`event "${name}" carries type "${event.type}"`);
    this.seen.push(event);
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(event);
    else this.#queue.push(event);
  }
}
