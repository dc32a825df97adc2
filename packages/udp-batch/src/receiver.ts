/**
 * The receiving side: every datagram waiting on the socket is read by one `recvmmsg(2)` into
 * memory allocated once, and JavaScript runs once per read instead of once per datagram.
 */
import type { RemoteInfo, Socket } from 'node:dgram';
import { getSystemErrorName } from 'node:util';
import { UdpBatchError, type UdpDestination } from './errors.js';
import { ADDRESS_SLOT, load, type NativeReceiver, type NativeUdpBatch, socketState } from './native.js';

/** How a receiver reads: `recvmmsg` in batches through the addon, or Node's `message` events. */
export type UdpReceiveMode = 'recvmmsg' | 'dgram';

/** Options of {@link UdpBatchReceiver}. */
export interface UdpBatchReceiverOptions {
  /**
   * One datagram and where it came from. `packet` is a view of the receiver's memory, valid only
   * during the call (the next read overwrites it): copy what must be kept. `from` objects are
   * shared between datagrams from the same source; do not change them.
   */
  readonly onPacket: (packet: Uint8Array, from: UdpDestination) => void;
  /**
   * After the datagrams of one read: one `recvmmsg` call, or, in `dgram` mode, the datagrams Node
   * delivered before the event loop's check phase. Work that is best done once for many datagrams
   * (sending what they caused) goes here.
   */
  readonly onBatchEnd?: () => void;
  /**
   * Longest datagram taken (default 65 536, any UDP datagram); a longer one is dropped and
   * counted in `truncated`. Memory is this times {@link UdpBatchReceiverOptions.batchSize}.
   */
  readonly maxPacketBytes?: number;
  /** Most datagrams one read takes (default 32). */
  readonly batchSize?: number;
  /** Use the native addon when it is built. Default true; false always uses `message` events. */
  readonly native?: boolean;
}

/** Counters of a {@link UdpBatchReceiver}. */
export interface UdpBatchReceiverStats {
  /** Reads that returned datagrams (system calls; `message` events in `dgram` mode). */
  reads: number;
  /** Datagrams handed to `onPacket`. */
  packets: number;
  /** Datagrams longer than `maxPacketBytes`, dropped. */
  truncated: number;
  /** Failed reads, each also emitted as an `error` event of the socket (as Node does). */
  errors: number;
}

const DEFAULT_MAX_PACKET = 65_536;
const DEFAULT_BATCH = 32;
/** Address families as Linux numbers them in a `sockaddr`. */
const AF_INET = 2;
/** Sources remembered (each an object reused for its datagrams); the table starts over beyond. */
const MAX_SOURCES = 4096;

/**
 * Receives the datagrams of one bound `dgram` socket in batches, in place of its `message` events.
 *
 * With the native addon, Node's own reads of the socket are stopped and a duplicate of its
 * descriptor is watched on the event loop; each time it is readable, one `recvmmsg` takes every
 * datagram waiting (up to `batchSize`) into memory allocated once. Without the addon (not Linux,
 * not built, or `native: false`) it listens to `message` events instead; the callbacks are the
 * same. {@link UdpBatchReceiver.close} it before closing the socket (closing the socket also
 * closes it); afterwards the socket's `message` events work again.
 */
export class UdpBatchReceiver {
  /** Counters since the receiver was made. */
  readonly stats: UdpBatchReceiverStats = { reads: 0, packets: 0, truncated: 0, errors: 0 };
  readonly #socket: Socket;
  readonly #onPacket: (packet: Uint8Array, from: UdpDestination) => void;
  readonly #onBatchEnd: (() => void) | undefined;
  readonly #native: NativeUdpBatch | undefined;
  #receiver: NativeReceiver | undefined;
  readonly #slotBytes: number;
  readonly #data: Uint8Array;
  readonly #lengths: Int32Array;
  readonly #addresses: Uint8Array;
  readonly #addressView: DataView;
  readonly #sources = new Map<number | string, UdpDestination>();
  #batchEndPending = false;
  #closed = false;

  /**
   * Starts receiving at once.
   *
   * @throws UdpBatchError `not-bound` when the socket is not bound yet (or already closed).
   * @throws TypeError for options out of range.
   */
  constructor(socket: Socket, options: UdpBatchReceiverOptions) {
    const { maxPacketBytes = DEFAULT_MAX_PACKET, batchSize = DEFAULT_BATCH, native = true } = options;
    if (!(Number.isInteger(maxPacketBytes) && maxPacketBytes >= 1 && maxPacketBytes <= DEFAULT_MAX_PACKET)) {
      throw new TypeError(`maxPacketBytes must be an integer from 1 to 65536, got ${String(maxPacketBytes)}`);
    }
    if (!(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= 1024)) {
      throw new TypeError(`batchSize must be an integer from 1 to 1024, got ${String(batchSize)}`);
    }
    const state = socketState(socket);
    const handle = state?.handle ?? null;
    let bound = true;
    try {
      socket.address();
    } catch {
      bound = false;
    }
    if (!bound || (state !== undefined && handle === null)) {
      throw new UdpBatchError('not-bound', 'bind the UDP socket before receiving from it in batches');
    }
    this.#socket = socket;
    this.#onPacket = options.onPacket;
    this.#onBatchEnd = options.onBatchEnd;
    const addon = native && handle !== null && handle.fd >= 0 ? load().native : undefined;
    this.#slotBytes = addon === undefined ? 0 : maxPacketBytes;
    const slots = addon === undefined ? 0 : batchSize;
    this.#data = new Uint8Array(this.#slotBytes * slots);
    this.#lengths = new Int32Array(slots);
    this.#addresses = new Uint8Array(slots * ADDRESS_SLOT);
    this.#addressView = new DataView(this.#addresses.buffer);
    socket.once('close', this.#onSocketClose);
    if (addon !== undefined && handle !== null) {
      handle.recvStop();
      try {
        this.#receiver = addon.startReceiver(
          handle.fd,
          this.#data,
          this.#slotBytes,
          this.#lengths,
          this.#addresses,
          this.#onRead,
        );
        this.#native = addon;
        return;
      } catch {
        // The event loop would not watch the descriptor: Node reads it as before.
        handle.recvStart();
      }
    }
    this.#native = undefined;
    socket.on('message', this.#onMessage);
  }

  /** How datagrams are read: `recvmmsg` in batches through the addon, or `dgram` events. */
  get mode(): UdpReceiveMode {
    return this.#native === undefined ? 'dgram' : 'recvmmsg';
  }

  /**
   * Stops receiving; when the socket is still open, Node's `message` events take over again.
   * Safe to call more than once.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.off('close', this.#onSocketClose);
    if (this.#native === undefined) {
      this.#socket.off('message', this.#onMessage);
      return;
    }
    this.#native.stopReceiver(this.#receiver!);
    this.#receiver = undefined;
    const handle = socketState(this.#socket)?.handle ?? null;
    handle?.recvStart();
  }

  readonly #onSocketClose = (): void => this.close();

  /** One `recvmmsg` read: `count` datagrams in the slots, or `-errno` for a failed read. */
  readonly #onRead = (count: number): void => {
    if (this.#closed) return;
    if (count < 0) {
      this.stats.errors++;
      this.#socket.emit('error', readError(count));
      return;
    }
    this.stats.reads++;
    const data = this.#data;
    const lengths = this.#lengths;
    const slotBytes = this.#slotBytes;
    for (let i = 0; i < count && !this.#closed; i++) {
      const length = lengths[i]!;
      if (length < 0) {
        this.stats.truncated++;
        continue;
      }
      this.stats.packets++;
      const start = i * slotBytes;
      this.#onPacket(data.subarray(start, start + length), this.#source(i));
    }
    if (!this.#closed) this.#onBatchEnd?.();
  };

  /** `dgram` mode: one datagram; the batch ends in the check phase, after Node's read turn. */
  readonly #onMessage = (msg: Buffer, rinfo: RemoteInfo): void => {
    this.stats.reads++;
    this.stats.packets++;
    this.#onPacket(msg, { host: rinfo.address, port: rinfo.port });
    if (this.#onBatchEnd !== undefined && !this.#batchEndPending) {
      this.#batchEndPending = true;
      setImmediate(this.#endBatch);
    }
  };

  readonly #endBatch = (): void => {
    this.#batchEndPending = false;
    if (!this.#closed) this.#onBatchEnd?.();
  };

  /** The source of slot `i`, one shared object per address and port. */
  #source(i: number): UdpDestination {
    const view = this.#addressView;
    const at = i * ADDRESS_SLOT;
    const family = view.getUint16(at + 4, true);
    const port = view.getUint16(at + 6, false);
    const key =
      family === AF_INET
        ? view.getUint32(at + 8, false) * 65_536 + port
        : String.fromCharCode(...this.#addresses.subarray(at + 4, at + ADDRESS_SLOT));
    let from = this.#sources.get(key);
    if (from === undefined) {
      from = Object.freeze({ host: this.#native!.formatAddress(this.#addresses, i), port });
      if (this.#sources.size >= MAX_SOURCES) this.#sources.clear();
      this.#sources.set(key, from);
    }
    return from;
  }
}

/** A failed read as Node reports one of its own (`errno`, `code`, `syscall`). */
function readError(errno: number): NodeJS.ErrnoException {
  let code: string;
  try {
    code = getSystemErrorName(errno);
  } catch {
    code = `E${-errno}`;
  }
  const err: NodeJS.ErrnoException = new Error(`recvmmsg ${code}`);
  err.errno = errno;
  err.code = code;
  err.syscall = 'recvmmsg';
  return err;
}
