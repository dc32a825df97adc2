import { TransportError } from '../errors.js';
import { VarintCollector } from './collector.js';
import { readVarint, readVarintId, varintLength, writeVarint } from './varint.js';

/**
 * The type-length-value layout that HTTP/3 frames (RFC 9114 §7.1) and capsules (RFC 9297 §3.2)
 * share, and the helpers that read and write it for both.
 *
 * ```text
 * Record {
 *   Type (i),
 *   Length (i),
 *   Value (..),      Length bytes
 * }
 * ```
 *
 * The kinds of record, each with the noun its messages use and the error code a malformed one
 * raises.
 */
export const TLV = {
  frame: { name: 'frame', error: 'frame-error' },
  capsule: { name: 'capsule', error: 'capsule-error' },
} as const;

/** One of the {@link TLV} record kinds. */
export type TlvKind = (typeof TLV)[keyof typeof TLV];

const EMPTY = new Uint8Array(0);

/** Bytes a record of `type` with a value of `length` bytes takes. `TypeError` for a bad varint. */
export function tlvByteLength(type: number, length: number): number {
  return varintLength(type) + varintLength(length) + length;
}

/**
 * Writes a record's type and length at `offset` and returns where its value starts.
 *
 * @throws TypeError when the header and a value of `length` bytes do not fit in `view`.
 */
export function writeTlvHeader(
  view: DataView,
  offset: number,
  type: number,
  length: number,
  kind: TlvKind,
): number {
  let at = offset + writeVarint(view, offset, type);
  at += writeVarint(view, at, length);
  if (at + length > view.byteLength) {
    throw new TypeError(
      `${kind.name} value of ${length} bytes does not fit at offset ${at} of ${view.byteLength}`,
    );
  }
  return at;
}

/** Copies `bytes` into `view` at `offset` (the caller checked that they fit). */
export function copyInto(view: DataView, offset: number, bytes: Uint8Array): void {
  new Uint8Array(view.buffer, view.byteOffset + offset, bytes.length).set(bytes);
}

/**
 * Reads the type or the length of a record header at `offset` with `read`.
 *
 * @throws TransportError with the kind's code (`frame-error`, `capsule-error`) when the varint is
 * truncated or too large for `read`.
 */
export function readTlvVarint(
  bytes: Uint8Array,
  offset: number,
  field: 'type' | 'length',
  read: (bytes: Uint8Array, offset: number) => { value: number; bytes: number },
  kind: TlvKind,
): { value: number; bytes: number } {
  try {
    return read(bytes, offset);
  } catch (error) {
    throw new TransportError(kind.error, `${kind.name} ${field} is truncated or too large`, { cause: error });
  }
}

/**
 * The value of a record whose header ends at `start` of `view`: a view into `view`, not a copy.
 *
 * @throws TransportError with the kind's code when fewer than `length` bytes follow the header.
 */
export function tlvValue(
  view: Uint8Array,
  type: number,
  start: number,
  length: number,
  kind: TlvKind,
): Uint8Array {
  if (length > view.length - start) {
    throw new TransportError(
      kind.error,
      `${kind.name} of type 0x${type.toString(16)} announces ${length} bytes, ${view.length - start} left`,
    );
  }
  return view.subarray(start, start + length);
}

/**
 * What a {@link TlvReader} does with the value of a record whose header it has just read:
 * - `stream`: hands it to `onValuePiece` in pieces, as its bytes arrive, without buffering it;
 * - `buffer`: collects it whole (the subclass checked its length first) for `onValue`;
 * - `skip`: discards it unbuffered;
 * - `raw`: the header was a switch, not a record: every later byte of the stream goes to `onRaw`.
 */
export type TlvValueAction = 'stream' | 'buffer' | 'skip' | 'raw';

type TlvReaderState = 'header' | 'stream' | 'buffer' | 'skip' | 'raw' | 'failed';

/**
 * Incremental reader of a stream of records, fed in chunks of any size: it gathers each header
 * even when it is split across chunks, then streams, buffers or skips the value as the subclass
 * decides in `onHeader`. After a throw the reader is spent: later calls throw `closed`.
 */
export abstract class TlvReader<Event> {
  readonly #kind: TlvKind;
  readonly #type = new VarintCollector();
  readonly #length = new VarintCollector();
  #state: TlvReaderState = 'header';
  #recordType = 0;
  #remaining = 0;
  #buffer: Uint8Array = EMPTY;
  #filled = 0;

  /** A reader of records of `kind`. */
  protected constructor(kind: TlvKind) {
    this.#kind = kind;
  }

  /**
   * Takes the next bytes of the stream; returns the events they complete, in order.
   *
   * @throws TransportError for malformed records or rule breaks (the reader is then spent), and
   * `closed` once it is spent.
   */
  push(chunk: Uint8Array): Event[] {
    if (this.#state === 'failed') this.#throwSpent();
    try {
      return this.#push(chunk);
    } catch (error) {
      this.#state = 'failed';
      throw error;
    }
  }

  /**
   * Declares the end of the stream.
   *
   * @throws TransportError with the kind's code when the stream ends inside a record (RFC 9114
   * §7.1, RFC 9297 §3.3), and `closed` when the reader is spent.
   */
  end(): void {
    if (this.#state === 'failed') this.#throwSpent();
    if (this.#state === 'raw') return;
    if (this.#state !== 'header' || this.#type.started) {
      this.#state = 'failed';
      throw new TransportError(this.#kind.error, `stream ended inside a ${this.#kind.name}`);
    }
  }

  /** True once a `raw` action turned the rest of the stream into raw bytes. */
  protected get raw(): boolean {
    return this.#state === 'raw';
  }

  /**
   * Called with each whole record header: checks it (throwing to fail the reader), may append
   * events, and says what to do with the value.
   */
  protected abstract onHeader(type: number, length: number, events: Event[]): TlvValueAction;

  /** Called with each whole buffered value; returns `raw` when no record may follow it. */
  protected abstract onValue(type: number, value: Uint8Array, events: Event[]): 'header' | 'raw';

  /** Called with each piece of a streamed value (a view into the pushed chunk). */
  protected onValuePiece(_piece: Uint8Array, _events: Event[]): void {
    throw new TypeError(`this ${this.#kind.name} reader streams no values`);
  }

  /** Called with the bytes that follow a `raw` switch (a view into the pushed chunk). */
  protected abstract onRaw(bytes: Uint8Array, events: Event[]): void;

  /**
   * For `onHeader`: refuses a value longer than `limit` before anything is allocated for it.
   *
   * @throws TransportError with the kind's code when `length > limit`.
   */
  protected checkLength(type: number, length: number, limit: number): void {
    if (length > limit) {
      throw new TransportError(
        this.#kind.error,
        `${this.#kind.name} of type 0x${type.toString(16)} announces ${length} bytes, more than the ${limit} allowed`,
      );
    }
  }

  #push(chunk: Uint8Array): Event[] {
    const events: Event[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      switch (this.#state) {
        case 'header':
          offset = this.#readHeader(chunk, offset, events);
          break;
        case 'stream':
        case 'skip': {
          const count = Math.min(this.#remaining, chunk.length - offset);
          if (this.#state === 'stream') this.onValuePiece(chunk.subarray(offset, offset + count), events);
          offset += count;
          this.#remaining -= count;
          if (this.#remaining === 0) this.#state = 'header';
          break;
        }
        case 'buffer': {
          const count = Math.min(this.#buffer.length - this.#filled, chunk.length - offset);
          this.#buffer.set(chunk.subarray(offset, offset + count), this.#filled);
          this.#filled += count;
          offset += count;
          if (this.#filled === this.#buffer.length) this.#finishValue(events);
          break;
        }
        case 'raw':
          this.onRaw(chunk.subarray(offset), events);
          offset = chunk.length;
          break;
        case 'failed':
          this.#throwSpent();
          break;
        default: {
          const unreachable: never = this.#state;
          throw new TypeError(`unknown reader state ${String(unreachable)}`);
        }
      }
    }
    return events;
  }

  #readHeader(chunk: Uint8Array, offset: number, events: Event[]): number {
    let at = offset;
    if (!this.#type.done) at = this.#type.take(chunk, at);
    if (this.#type.done && !this.#length.done) at = this.#length.take(chunk, at);
    if (!this.#length.done) return at;
    const type = readVarintId(this.#type.bytes(), 0).value;
    const length = readTlvVarint(this.#length.bytes(), 0, 'length', readVarint, this.#kind).value;
    this.#type.reset();
    this.#length.reset();
    const action = this.onHeader(type, length, events);
    switch (action) {
      case 'stream':
      case 'skip':
        this.#remaining = length;
        this.#state = length === 0 ? 'header' : action;
        break;
      case 'buffer':
        this.#recordType = type;
        this.#buffer = new Uint8Array(length);
        this.#filled = 0;
        this.#state = 'buffer';
        if (length === 0) this.#finishValue(events);
        break;
      case 'raw':
        this.#state = 'raw';
        break;
      default: {
        const unreachable: never = action;
        throw new TypeError(`unknown value action ${String(unreachable)}`);
      }
    }
    return at;
  }

  #finishValue(events: Event[]): void {
    const value = this.#buffer;
    this.#buffer = EMPTY;
    this.#state = this.onValue(this.#recordType, value, events);
  }

  #throwSpent(): never {
    throw new TransportError('closed', `${this.#kind.name} reader failed earlier`);
  }
}
