/**
 * The native addon (`native/udp_batch.c`), loaded once, and the part of Node's dgram socket state
 * it needs. Internal to this package.
 */
import type { Socket } from 'node:dgram';
import { createRequire } from 'node:module';

/** The native addon's surface (`native/udp_batch.c`). */
export interface NativeUdpBatch {
  encodeAddress(host: string, port: number, ipv6Socket: boolean): Uint8Array;
  send(
    fd: number,
    data: Uint8Array,
    lengths: Uint32Array,
    destinations: Uint32Array,
    addresses: Uint8Array,
    count: number,
    gsoSegments: number,
    result: Int32Array,
  ): void;
  startReceiver(
    fd: number,
    data: Uint8Array,
    slotBytes: number,
    lengths: Int32Array,
    addresses: Uint8Array,
    callback: (count: number) => void,
  ): NativeReceiver;
  stopReceiver(receiver: NativeReceiver): void;
  formatAddress(addresses: Uint8Array, slot: number): string;
}

/** A receiver of the addon (a napi External): only passed back to it. */
export type NativeReceiver = { readonly __nativeReceiver: unique symbol };

/** Whether the native addon loaded here, and why not when it did not. */
export type NativeSupport =
  | { readonly available: true }
  | { readonly available: false; readonly reason: string };

/** Bytes of one address slot: the socket address length (4 bytes, native order), then the sockaddr. */
export const ADDRESS_SLOT = 32;

let loaded: { native: NativeUdpBatch | undefined; support: NativeSupport } | undefined;

/** The addon, loaded on first use; `native` is undefined when it is not available here. */
export function load(): { native: NativeUdpBatch | undefined; support: NativeSupport } {
  if (loaded !== undefined) return loaded;
  if (process.platform !== 'linux') {
    loaded = { native: undefined, support: { available: false, reason: 'batched UDP I/O needs Linux' } };
    return loaded;
  }
  try {
    const require = createRequire(import.meta.url);
    const native = require('../build/Release/udp_batch.node') as NativeUdpBatch;
    loaded = { native, support: { available: true } };
  } catch (err) {
    const detail = err instanceof Error ? err.message.split('\n')[0] : String(err);
    loaded = {
      native: undefined,
      support: {
        available: false,
        reason: `the native addon is not built (${detail}); run \`npm rebuild @svc/udp-batch\` with python3, make and g++ installed`,
      },
    };
  }
  return loaded;
}

/** Whether batched sends and receives are available in this process (the addon is built and loads). */
export function nativeSupport(): NativeSupport {
  return load().support;
}

/** The libuv UDP handle of a dgram socket: its descriptor and the switch for Node's own reads. */
export interface UdpHandle {
  readonly fd: number;
  recvStart(): number;
  recvStop(): number;
}

/** The part of Node's dgram socket state this package reads: the libuv handle. */
export interface SocketState {
  handle: UdpHandle | null;
}

/**
 * Node keeps a dgram socket's handle under a private symbol (`socket._handle` is a deprecated
 * accessor for the same object). The descriptor is read from it at every use, so a closed socket
 * (handle gone) is noticed before the kernel sees a stale descriptor.
 */
export function socketState(socket: Socket): SocketState | undefined {
  const symbol = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol');
  if (symbol === undefined) return undefined;
  const state = (socket as unknown as Record<symbol, unknown>)[symbol];
  return typeof state === 'object' && state !== null && 'handle' in state
    ? (state as SocketState)
    : undefined;
}
