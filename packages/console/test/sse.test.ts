/**
 * The console's reader of server-sent events (the fleet's live stream): the HTML standard's
 * `text/event-stream` rules, whatever way the bytes are cut into pieces on the way.
 */
import { describe, expect, it } from 'vitest';
import { EventStreamParser, readEventStream, type ServerSentEvent } from '../src/console/sse.js';

function parse(pieces: readonly string[]): ServerSentEvent[] {
  const events: ServerSentEvent[] = [];
  const parser = new EventStreamParser((event) => events.push(event));
  for (const piece of pieces) parser.feed(piece);
  return events;
}

const STREAM =
  ': heartbeat\n\nevent: snapshot\ndata: {"type":"snapshot"}\n\nevent: robot-updated\r\ndata: {"a":1}\r\ndata: {"b":2}\r\n\r\ndata:plain\rid: 7\r\r\n';

describe('EventStreamParser', () => {
  it('gives each event its name and data, ignores comments, and joins data lines', () => {
    expect(parse([STREAM])).toEqual([
      { event: 'snapshot', data: '{"type":"snapshot"}' },
      { event: 'robot-updated', data: '{"a":1}\n{"b":2}' },
      { event: 'message', data: 'plain', id: '7' },
    ]);
  });

  it('gives the same events when the stream arrives one character at a time, or cut at every offset', () => {
    const whole = parse([STREAM]);
    expect(parse([...STREAM])).toEqual(whole);
    for (let cut = 0; cut <= STREAM.length; cut++) {
      expect(parse([STREAM.slice(0, cut), STREAM.slice(cut)])).toEqual(whole);
    }
  });

  it('gives nothing for an event whose blank line has not arrived, nor for an event without data', () => {
    expect(parse(['event: robot-added\ndata: {}\n'])).toEqual([]);
    expect(parse(['event: lonely\n\n'])).toEqual([]);
  });

  it('reads a fetch body until it ends', async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        const bytes = new TextEncoder().encode('event: end\ndata: {"reason":"x"}\n\n');
        controller.enqueue(bytes.slice(0, 5));
        controller.enqueue(bytes.slice(5));
        controller.close();
      },
    });
    const events: ServerSentEvent[] = [];
    await readEventStream(new Response(body), (event) => events.push(event));
    expect(events).toEqual([{ event: 'end', data: '{"reason":"x"}' }]);
  });
});
