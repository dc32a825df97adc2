/**
 * The sending side: every packet of a flush leaves in one `sendmmsg(2)` call, with UDP generic
 * segmentation offload (`UDP_SEGMENT`) for runs of equal-sized packets to one destination.
 */
import { Buffer } from 'node:buffer';
import type { Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { UdpBatchError, type UdpDestination } from './errors.js';
import { ADDRESS_SLOT, load, type NativeUdpBatch, type SocketState, socketState } from './native.js';

/** How a sender hands packets to the kernel. */
export type UdpSendMode = 'gso' | 'sendmmsg' | 'dgram';

/** Options of {@link UdpBatchSender}. */
export interface UdpBatchSenderOptions {
  /** Bytes one batch holds; a packet that does not fit sends the batch first. Default 256 KiB. */
  readonly capacityBytes?: number;
  /** Cut runs of equal-sized packets with UDP GSO (Linux 4.18+). Default true. */
  readonly gso?: boolean;
  /** Use the native addon when it is built. Default true; false always uses `dgram.send`. */
  readonly native?: boolean;
}

/** Counters of a {@link UdpBatchSender}. */
export interface UdpBatchStats {
  /** Batches handed over ({@link UdpBatchSender.send} calls with at least one packet). */
  batches: number;
  /** Packets the kernel took in batched calls. */
  batchedPackets: number;
  /** Packets sent with `dgram.send` (no addon, a full send buffer, or behind such packets). */
  fallbackPackets: number;
  /** Times the socket's send buffer was full and the rest of a batch went through `dgram.send`. */
  wouldBlock: number;
  /** Packets whose send failed (reported by `dgram.send`'s callback or counted on a refused batch). */
  sendErrors: number;
}

const MAX_GSO_SEGMENTS = 64;
const DEFAULT_CAPACITY = 256 * 1024;
/** Destinations one batch can address; more sends the batch first. */
const MAX_DESTINATIONS = 64;
const EAGAIN = 11;
const ENOBUFS = 105;
/** errno values with which a kernel or device refuses GSO: sending goes on without it. */
const GSO_REFUSED = new Set([5 /* EIO */, 22 /* EINVAL */, 90 /* EMSGSIZE */, 95 /* EOPNOTSUPP */]);

/**
 * Sends UDP packets for one bound `dgram` socket in batches.
 *
 * Write each packet into {@link UdpBatchSender.packetBuffer} (a view of the batch's own memory),
 * {@link UdpBatchSender.commit} it with its destination, and call {@link UdpBatchSender.send}
 * at the end of a flush: the batch leaves in one system call and the memory is reused at once.
 * Packets leave in the order they were committed, whichever way they go.
 */
export class UdpBatchSender {
  /** Counters since the sender was made. */
  readonly stats: UdpBatchStats = {
    batches: 0,
    batchedPackets: 0,
    fallbackPackets: 0,
    wouldBlock: 0,
    sendErrors: 0,
  };
  readonly #socket: Socket;
  readonly #native: NativeUdpBatch | undefined;
  readonly #state: SocketState | undefined;
  readonly #data: Uint8Array;
  readonly #lengths: Uint32Array;
  readonly #destinations: Uint32Array;
  readonly #addresses = new Uint8Array(MAX_DESTINATIONS * ADDRESS_SLOT);
  readonly #result = new Int32Array(2);
  /** Destinations of this batch: host and port by slot. */
  readonly #slotHost: string[] = [];
  readonly #slotPort: number[] = [];
  /** Encoded addresses, kept across batches. */
  readonly #encoded = new Map<string, Uint8Array>();
  readonly #onSent = (err: Error | null) => {
    if (err) this.stats.sendErrors++;
    if (--this.#pending === 0) for (const resolve of this.#drainWaiters.splice(0)) resolve();
  };
  #drainWaiters: (() => void)[] = [];
  #gso: boolean;
  #ipv6Socket: boolean | undefined;
  #count = 0;
  #used = 0;
  #pending = 0;

  constructor(socket: Socket, options: UdpBatchSenderOptions = {}) {
    const { capacityBytes = DEFAULT_CAPACITY, gso = true, native = true } = options;
    if (!(Number.isInteger(capacityBytes) && capacityBytes >= 1500 && capacityBytes <= 64 * 1024 * 1024)) {
      throw new TypeError(
        `capacityBytes must be an integer from 1500 to 67108864, got ${String(capacityBytes)}`,
      );
    }
    this.#socket = socket;
    this.#state = socketState(socket);
    this.#native = native && this.#state !== undefined ? load().native : undefined;
    this.#gso = gso;
    this.#data = new Uint8Array(capacityBytes);
    // Packets are at least a few bytes; a QUIC packet at least 20.
    const maxPackets = Math.ceil(capacityBytes / 16);
    this.#lengths = new Uint32Array(maxPackets);
    this.#destinations = new Uint32Array(maxPackets);
  }

  /** How packets leave: `gso` or `sendmmsg` through the addon, `dgram` without it. */
  get mode(): UdpSendMode {
    if (this.#native === undefined) return 'dgram';
    return this.#gso ? 'gso' : 'sendmmsg';
  }

  /** Packets committed and not yet sent. */
  get queued(): number {
    return this.#count;
  }

  /** Packets handed to `dgram.send` whose callback has not run yet. */
  get pending(): number {
    return this.#pending;
  }

  /**
   * Memory for the next packet, at least `maxBytes` long: write the packet at its start, then
   * {@link UdpBatchSender.commit} it. Sends the batch first when it has less room than that.
   * The view is valid until the next commit or send.
   *
   * @throws UdpBatchError `batch-full` when `maxBytes` exceeds the whole batch.
   */
  packetBuffer(maxBytes: number): Uint8Array {
    if (maxBytes > this.#data.byteLength) {
      throw new UdpBatchError(
        'batch-full',
        `a packet of up to ${maxBytes} bytes does not fit in a batch of ${this.#data.byteLength}`,
      );
    }
    if (
      this.#used + maxBytes > this.#data.byteLength ||
      this.#count === this.#lengths.length ||
      this.#slotHost.length === MAX_DESTINATIONS
    ) {
      this.send();
    }
    return this.#data.subarray(this.#used, this.#used + maxBytes);
  }

  /**
   * Adds the packet just written into {@link UdpBatchSender.packetBuffer}: its first `length`
   * bytes, for `to`.
   *
   * @throws TypeError when `length` is not a positive integer within the buffer given, or `to`
   *   is not an address literal and port.
   */
  commit(length: number, to: UdpDestination): void {
    if (!(Number.isInteger(length) && length > 0 && this.#used + length <= this.#data.byteLength)) {
      throw new TypeError(
        `commit: length must be a positive integer within the packet buffer, got ${length}`,
      );
    }
    let slot = this.#slotHost.length - 1;
    if (slot < 0 || this.#slotHost[slot] !== to.host || this.#slotPort[slot] !== to.port) {
      slot = this.#slotFor(to);
    }
    this.#lengths[this.#count] = length;
    this.#destinations[this.#count] = slot;
    this.#count++;
    this.#used += length;
  }

  /** Copies `packet` into the batch for `to` (for packets that were not written in place). */
  add(packet: Uint8Array, to: UdpDestination): void {
    this.packetBuffer(packet.byteLength).set(packet);
    this.commit(packet.byteLength, to);
  }

  /**
   * Sends every committed packet, in order: in one system call through the addon, or, for what
   * it cannot take now, through `dgram.send`. The batch is empty afterwards.
   *
   * @throws UdpBatchError `closed` when the socket is closed (the batch is discarded).
   */
  send(): void {
    const count = this.#count;
    if (count === 0) return;
    const handle = this.#state?.handle ?? null;
    if (this.#state !== undefined && handle === null) {
      this.#reset();
      throw new UdpBatchError('closed', 'the UDP socket is closed');
    }
    this.stats.batches++;
    let first = 0;
    // Behind packets still queued in libuv, the batch must wait its turn there too.
    if (this.#native !== undefined && this.#pending === 0 && handle !== null && handle.fd >= 0) {
      first = this.#sendNative(handle.fd, count);
    }
    if (first < count) this.#fallback(first, count);
    this.#reset();
  }

  /** Resolves once every packet handed to `dgram.send` has left (or failed). */
  drained(): Promise<void> {
    if (this.#pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /** Sends packets [0, count) with the addon; returns how many the kernel took. */
  #sendNative(fd: number, count: number): number {
    this.#ipv6Socket ??= this.#socket.address().family === 'IPv6';
    for (let slot = 0; slot < this.#slotHost.length; slot++) {
      this.#addresses.set(this.#encode(this.#slotHost[slot]!, this.#slotPort[slot]!), slot * ADDRESS_SLOT);
    }
    let sent = this.#sendFrom(fd, 0, count);
    const errno = this.#result[1]!;
    if (sent < count && this.#gso && GSO_REFUSED.has(errno)) {
      // The kernel or the device does not do GSO here: go on without it, for good.
      this.#gso = false;
      sent += this.#sendFrom(fd, sent, count);
    }
    // Whatever is left (a full send buffer, or an error dgram.send will report) goes that way.
    return sent;
  }

  /** Packets [from, count) in one addon call; returns how many the kernel took. */
  #sendFrom(fd: number, from: number, count: number): number {
    let offset = 0;
    for (let i = 0; i < from; i++) offset += this.#lengths[i]!;
    const result = this.#result;
    this.#native!.send(
      fd,
      from === 0 ? this.#data : this.#data.subarray(offset),
      from === 0 ? this.#lengths : this.#lengths.subarray(from),
      from === 0 ? this.#destinations : this.#destinations.subarray(from),
      this.#addresses,
      count - from,
      this.#gso ? MAX_GSO_SEGMENTS : 0,
      result,
    );
    this.stats.batchedPackets += result[0]!;
    if (result[1] === EAGAIN || result[1] === ENOBUFS) this.stats.wouldBlock++;
    return result[0]!;
  }

  /** Packets [from, count) through dgram.send, each copied (libuv may hold it after we return). */
  #fallback(from: number, count: number): void {
    let offset = 0;
    for (let i = 0; i < from; i++) offset += this.#lengths[i]!;
    for (let i = from; i < count; i++) {
      const length = this.#lengths[i]!;
      const slot = this.#destinations[i]!;
      const packet = Buffer.from(this.#data.subarray(offset, offset + length));
      offset += length;
      this.stats.fallbackPackets++;
      this.#pending++;
      try {
        this.#socket.send(packet, this.#slotPort[slot]!, this.#slotHost[slot]!, this.#onSent);
      } catch (err) {
        this.#pending--;
        this.stats.sendErrors += count - i;
        this.#reset();
        throw new UdpBatchError('closed', 'the UDP socket is closed', { cause: err });
      }
    }
  }

  #slotFor(to: UdpDestination): number {
    for (let i = 0; i < this.#slotHost.length; i++) {
      if (this.#slotHost[i] === to.host && this.#slotPort[i] === to.port) return i;
    }
    if (!(Number.isInteger(to.port) && to.port > 0 && to.port <= 65_535) || isIP(to.host) === 0) {
      throw new TypeError(
        `a destination must be an IP address literal and a port from 1 to 65535, got ${String(to.host)}:${String(to.port)}`,
      );
    }
    // packetBuffer sent the batch when the table was full, so there is room.
    this.#slotHost.push(to.host);
    this.#slotPort.push(to.port);
    return this.#slotHost.length - 1;
  }

  #encode(host: string, port: number): Uint8Array {
    const key = `${host}|${port}`;
    let encoded = this.#encoded.get(key);
    if (encoded === undefined) {
      encoded = this.#native!.encodeAddress(host, port, this.#ipv6Socket!);
      if (this.#encoded.size >= 4096) this.#encoded.clear();
      this.#encoded.set(key, encoded);
    }
    return encoded;
  }

  #reset(): void {
    this.#count = 0;
    this.#used = 0;
    this.#slotHost.length = 0;
    this.#slotPort.length = 0;
  }
}
