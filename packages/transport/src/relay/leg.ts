import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type Clock, systemClock, type TimerHandle } from '@svc/runtime';
import { decodeRelayControl, encodeRelayControl, isWireError, type RelayRefusal } from '@svc/wire';
import type { SocketAddress } from '../quic/types.js';

/**
 * The robot's leg of svc-cloud's relay: for each relayed session, an `attach` with the robot's
 * token, sent from the QUIC port to the session's robot-facing relay port until the relay answers
 * (`docs/protocol/relay.md`). The QUIC packets of that session then travel the same way, and the
 * endpoint serves them like any client's: the relay only moves them.
 */

/** What to attach to. */
export interface RelayAttachRequest {
  /** The relay's host as `relay-open` names it (an IP literal or a DNS name). */
  readonly host: string;
  readonly port: number;
  /** The robot's token from `relay-open`. */
  readonly token: string;
  /** Give up after this long without an answer, ms (default 5000). */
  readonly timeoutMs?: number;
}

/** How an attach ended. */
export type RelayAttachResult =
  | { readonly ok: true; readonly address: SocketAddress; readonly expiresInMs: number }
  | {
      readonly ok: false;
      readonly code: RelayRefusal | 'timeout' | 'unresolved';
      readonly message: string;
    };

/** Options of {@link RelayLegs}. */
export interface RelayLegsOptions {
  /** Sends a datagram from the QUIC port. */
  readonly send: (bytes: Uint8Array, to: SocketAddress) => void;
  /** Whether the QUIC port is IPv6 (dual stack): IPv4 relays are then reached IPv4-mapped. */
  readonly ipv6Socket: boolean;
  readonly clock?: Clock;
  /** Resolves a relay host name (default `dns.lookup`). */
  readonly lookup?: (host: string) => Promise<string>;
}

/** An attach is sent again after this long without an answer, ms. */
export const RELAY_ATTACH_RETRY_MS = 200;
const DEFAULT_TIMEOUT_MS = 5000;

interface Pending {
  readonly key: string;
  readonly address: SocketAddress;
  readonly bytes: Uint8Array;
  readonly deadline: number;
  timer: TimerHandle | undefined;
  readonly resolve: (result: RelayAttachResult) => void;
}

/** Every relay attachment of one QUIC port. */
export class RelayLegs {
  readonly #options: RelayLegsOptions;
  readonly #clock: Clock;
  readonly #pending = new Map<string, Pending>();
  /** Relay addresses attached, as `host:port` keys (IPv4-mapped addresses unwrapped). */
  readonly #attached = new Set<string>();
  #closed = false;

  constructor(options: RelayLegsOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  /** Attaches to one relay port; resolves when the relay answers or the time is up. Never rejects. */
  async attach(request: RelayAttachRequest): Promise<RelayAttachResult> {
    let host: string;
    try {
      host =
        isIP(request.host) === 0 ? await (this.#options.lookup ?? defaultLookup)(request.host) : request.host;
    } catch (err) {
      return {
        ok: false,
        code: 'unresolved',
        message: `cannot resolve the relay host ${request.host}: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
    if (isIP(host) === 6 && !this.#options.ipv6Socket) {
      return {
        ok: false,
        code: 'unresolved',
        message: `the relay ${host} is IPv6 but the QUIC port is IPv4 only (set ipv6 = true in [agent])`,
      };
    }
    const address = { host, port: request.port };
    const key = keyOf(address);
    this.#pending.get(key)?.resolve({ ok: false, code: 'timeout', message: 'replaced by a newer attach' });
    let bytes: Uint8Array;
    try {
      bytes = encodeRelayControl({ type: 'attach', token: request.token });
    } catch (err) {
      return { ok: false, code: 'bad-token', message: err instanceof Error ? err.message : String(err) };
    }
    if (this.#closed) return { ok: false, code: 'gone', message: 'the QUIC port is closing' };
    return new Promise<RelayAttachResult>((resolve) => {
      const pending: Pending = {
        key,
        address,
        bytes,
        deadline: this.#clock.now() + (request.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        timer: undefined,
        resolve: (result) => {
          this.#clock.clearTimeout(pending.timer);
          if (this.#pending.get(key) === pending) this.#pending.delete(key);
          resolve(result);
        },
      };
      this.#pending.set(key, pending);
      this.#sendAttach(pending);
    });
  }

  /** A non-QUIC datagram arrived on the QUIC port: the relay's answer to an attach, if it is one. */
  handle(msg: Uint8Array, from: SocketAddress): void {
    const pending = this.#pending.get(keyOf(from));
    if (pending === undefined) return;
    const message = decodeRelayControl(msg);
    if (isWireError(message) || message.type === 'attach') return;
    if (message.type === 'attached') {
      this.#attached.add(pending.key);
      pending.resolve({ ok: true, address: pending.address, expiresInMs: message.expiresInMs });
    } else {
      pending.resolve({ ok: false, code: message.code, message: message.message });
    }
  }

  /** Whether `host`:`port` is a relay port this QUIC port attached to (a relayed session's peer). */
  isRelay(host: string, port: number): boolean {
    return this.#attached.has(keyOf({ host, port }));
  }

  /** Forgets an attachment (its session ended). */
  detach(host: string, port: number): void {
    this.#attached.delete(keyOf({ host, port }));
  }

  /** Gives up every attach under way. */
  close(): void {
    this.#closed = true;
    for (const pending of [...this.#pending.values()]) {
      pending.resolve({ ok: false, code: 'gone', message: 'the QUIC port is closing' });
    }
    this.#attached.clear();
  }

  #sendAttach(pending: Pending): void {
    if (this.#pending.get(pending.key) !== pending) return;
    const now = this.#clock.now();
    if (now >= pending.deadline) {
      pending.resolve({
        ok: false,
        code: 'timeout',
        message: `the relay at ${pending.key} did not answer (UDP to it blocked, or the port closed)`,
      });
      return;
    }
    this.#options.send(pending.bytes, pending.address);
    pending.timer = this.#clock.setTimeout(
      () => this.#sendAttach(pending),
      Math.min(RELAY_ATTACH_RETRY_MS, pending.deadline - now),
    );
  }
}

async function defaultLookup(host: string): Promise<string> {
  return (await dnsLookup(host)).address;
}

/** `host:port` with IPv4-mapped IPv6 addresses unwrapped, so both spellings of a peer match. */
function keyOf(address: SocketAddress): string {
  const host =
    address.host.toLowerCase().startsWith('::ffff:') && isIP(address.host.slice(7)) === 4
      ? address.host.slice(7)
      : address.host.toLowerCase();
  return `${host}:${address.port}`;
}
