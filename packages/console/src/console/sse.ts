/**
 * Server-sent events read from a `fetch` body, because the browser's `EventSource` cannot send the
 * API's `authorization` and `x-svc-id-token` headers. Parses the `text/event-stream` format of the
 * HTML standard: lines `field: value`, events ended by a blank line, `data` lines joined with
 * `\n`, comments (`:`) ignored, CR, LF and CRLF line ends. (The registry's SSE parsers publish a
 * `source` export condition that this repository's own `source` condition would pick up.)
 */

/** One event. */
export interface ServerSentEvent {
  /** `event:`; `message` when absent. */
  readonly event: string;
  readonly data: string;
  /** `id:`, when the event had one. */
  readonly id?: string;
}

/**
 * A push parser: feed it text as it arrives, it calls `onEvent` for each complete event.
 * Bytes of a partly received line are kept until the line ends.
 */
export class EventStreamParser {
  #buffer = '';
  #event = '';
  #data: string[] = [];
  #id: string | undefined;
  readonly #onEvent: (event: ServerSentEvent) => void;

  constructor(onEvent: (event: ServerSentEvent) => void) {
    this.#onEvent = onEvent;
  }

  /** Takes the next piece of the stream's text. */
  feed(text: string): void {
    this.#buffer += text;
    for (;;) {
      const end = this.#buffer.search(/\r\n|\r|\n/);
      if (end < 0) return;
      // A lone CR at the end of the buffer may be the first half of CRLF: wait for the next piece.
      if (this.#buffer[end] === '\r' && end === this.#buffer.length - 1) return;
      const line = this.#buffer.slice(0, end);
      const width = this.#buffer.startsWith('\r\n', end) ? 2 : 1;
      this.#buffer = this.#buffer.slice(end + width);
      this.#line(line);
    }
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#data.length > 0) {
        this.#onEvent({
          event: this.#event === '' ? 'message' : this.#event,
          data: this.#data.join('\n'),
          ...(this.#id !== undefined && { id: this.#id }),
        });
      }
      this.#event = '';
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
  }
}

/**
 * Reads `response`'s body as an event stream until it ends or `signal` aborts.
 *
 * @throws Error when the body cannot be read (the connection broke)
 */
export async function readEventStream(
  response: Response,
  onEvent: (event: ServerSentEvent) => void,
): Promise<void> {
  if (response.body === null) return;
  const parser = new EventStreamParser(onEvent);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    parser.feed(value);
  }
}
