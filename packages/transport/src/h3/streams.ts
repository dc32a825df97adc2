import { TransportError } from '../errors.js';
import { VarintCollector } from './collector.js';
import { FrameReader, type H3Frame, STREAM_TYPE } from './frames.js';
import { QpackEncoderStreamReader } from './qpack.js';
import { readVarint, readVarintId } from './varint.js';

/** What a peer's unidirectional stream turned out to be, when it is not WebTransport. */
export type UniStreamKind = 'control' | 'qpack-encoder' | 'qpack-decoder' | 'unknown';

/**
 * What a {@link UniStreamReader} yields: the stream's kind once its type is known, then the
 * control stream's frames, or, for a WebTransport stream, its session id and raw data.
 */
export type UniStreamEvent =
  | { readonly type: 'stream-type'; readonly kind: UniStreamKind; readonly streamType: number }
  | { readonly type: 'webtransport-stream'; readonly sessionId: number }
  | { readonly type: 'webtransport-data'; readonly payload: Uint8Array }
  | H3Frame;

/** Options of {@link UniStreamReader}. */
export interface UniStreamReaderOptions {
  /** Largest SETTINGS payload accepted on a control stream; the {@link FrameReader} default otherwise. */
  readonly maxPayload?: number;
}

type UniReaderState = 'type' | 'session' | 'control' | 'encoder' | 'drain' | 'webtransport' | 'failed';

/**
 * Incremental reader of one unidirectional stream opened by the peer (a client).
 *
 * ```text
 * Unidirectional Stream Header {
 *   Stream Type (i),
 *   [Session ID (i)],     only for WebTransport (0x54)
 * }
 * ```
 *
 * - control (0x00): a `stream-type` event, then the frames of the control stream, checked by a
 *   {@link FrameReader} in the control role.
 * - QPACK encoder (0x02): checked to carry nothing but "capacity 0" (`qpack-stream-error`).
 * - QPACK decoder (0x03): drained; with no dynamic table in use there is nothing to act on.
 * - WebTransport (0x54): a `webtransport-stream` event with the session id, then
 *   `webtransport-data` events.
 * - push (0x01): `stream-creation-error` (only servers push).
 * - anything else, reserved types included: a `stream-type` event of kind `unknown`, then the
 *   stream's bytes are discarded (RFC 9114 §6.2); the caller may instead stop reading with
 *   H3_STREAM_CREATION_ERROR.
 *
 * The connection-wide rules (at most one control, encoder and decoder stream each) need state
 * across streams and stay with the caller. After a throw the reader is spent.
 */
export class UniStreamReader {
  readonly #maxPayload: number | undefined;
  readonly #streamType = new VarintCollector();
  readonly #sessionId = new VarintCollector();
  #state: UniReaderState = 'type';
  #kind: UniStreamKind | 'webtransport' | undefined;
  #frames: FrameReader | undefined;
  #encoder: QpackEncoderStreamReader | undefined;

  /** A reader for one unidirectional stream the peer opened. */
  constructor(options: UniStreamReaderOptions = {}) {
    this.#maxPayload = options.maxPayload;
  }

  /** The stream's kind once its type has arrived. */
  get kind(): UniStreamKind | 'webtransport' | undefined {
    return this.#kind;
  }

  /** Takes the next bytes of the stream; returns the events they complete, in order. */
  push(chunk: Uint8Array): UniStreamEvent[] {
    if (this.#state === 'failed') throw new TransportError('closed', 'stream reader failed earlier');
    try {
      return this.#push(chunk);
    } catch (error) {
      this.#state = 'failed';
      throw error;
    }
  }

  /**
   * Declares the end of the stream. A stream may end before its type arrives (RFC 9114 §6.2). The
   * control and QPACK streams are critical: their end is `critical-stream-closed`.
   */
  end(): void {
    switch (this.#state) {
      case 'failed':
        throw new TransportError('closed', 'stream reader failed earlier');
      case 'control':
      case 'encoder':
        this.#state = 'failed';
        throw new TransportError('critical-stream-closed', `the peer closed its ${this.#kind} stream`);
      case 'drain':
        if (this.#kind === 'qpack-decoder') {
          this.#state = 'failed';
          throw new TransportError('critical-stream-closed', 'the peer closed its qpack-decoder stream');
        }
        return;
      case 'type':
      case 'session':
      case 'webtransport':
        return;
      default: {
        const unreachable: never = this.#state;
        throw new TypeError(`unknown reader state ${String(unreachable)}`);
      }
    }
  }

  #push(chunk: Uint8Array): UniStreamEvent[] {
    const events: UniStreamEvent[] = [];
    let offset = 0;
    if (this.#state === 'type') {
      offset = this.#streamType.take(chunk, offset);
      if (!this.#streamType.done) return events;
      this.#begin(readVarintId(this.#streamType.bytes(), 0).value, events);
    }
    if (this.#state === 'session') {
      offset = this.#sessionId.take(chunk, offset);
      if (!this.#sessionId.done) return events;
      let sessionId: number;
      try {
        sessionId = readVarint(this.#sessionId.bytes(), 0).value;
      } catch (error) {
        throw new TransportError('frame-error', 'WebTransport session id is too large', { cause: error });
      }
      events.push({ type: 'webtransport-stream', sessionId });
      this.#state = 'webtransport';
    }
    if (offset >= chunk.length) return events;
    const rest = offset === 0 ? chunk : chunk.subarray(offset);
    // Read through a widened local: #begin changed the state behind the compiler's narrowing.
    const state = this.#state as UniReaderState;
    switch (state) {
      case 'control':
        events.push(...this.#frames!.push(rest));
        break;
      case 'encoder':
        this.#encoder!.push(rest);
        break;
      case 'webtransport':
        events.push({ type: 'webtransport-data', payload: rest });
        break;
      case 'drain':
        break;
      case 'type':
      case 'session':
      case 'failed':
        throw new TypeError(`stream reader left in state ${state}`);
      default: {
        const unreachable: never = state;
        throw new TypeError(`unknown reader state ${String(unreachable)}`);
      }
    }
    return events;
  }

  #begin(streamType: number, events: UniStreamEvent[]): void {
    let kind: UniStreamKind;
    switch (streamType) {
      case STREAM_TYPE.CONTROL:
        kind = 'control';
        this.#frames = new FrameReader(
          this.#maxPayload === undefined
            ? { role: 'control' }
            : { role: 'control', maxPayload: this.#maxPayload },
        );
        this.#state = 'control';
        break;
      case STREAM_TYPE.QPACK_ENCODER:
        kind = 'qpack-encoder';
        this.#encoder = new QpackEncoderStreamReader();
        this.#state = 'encoder';
        break;
      case STREAM_TYPE.QPACK_DECODER:
        kind = 'qpack-decoder';
        this.#state = 'drain';
        break;
      case STREAM_TYPE.PUSH:
        throw new TransportError('stream-creation-error', 'a client opened a push stream');
      case STREAM_TYPE.WEBTRANSPORT:
        this.#kind = 'webtransport';
        this.#state = 'session';
        return;
      default:
        kind = 'unknown';
        this.#state = 'drain';
    }
    this.#kind = kind;
    events.push({ type: 'stream-type', kind, streamType });
  }
}
