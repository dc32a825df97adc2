/**
 * The life cycle of the daemon's port mapping as one discriminated union: each variant carries
 * only what is valid in it (the lease while there is one, the request in flight while one is,
 * the timer of the next step while waiting for it).
 */
import type { TimerHandle, TransitionTable } from '@svc/runtime';
import type { GatewayClient, MappedPort } from './gateway-client.js';

/**
 * What a `PortMapper` is doing, as its callers see it.
 *
 * - `idle`: constructed, `start()` not called yet;
 * - `mapping`: asking the gateways, one protocol after the other;
 * - `mapped`: a gateway mapped the port; the next renewal is `renewInMs` away;
 * - `renewing`: asking the same gateway to renew the lease (the mapping is still announced);
 * - `waiting`: no gateway mapped the port (or the lease ran out); the next try is `retryInMs` away;
 * - `stopped`: `stop()` was called.
 */
export type PortMapperState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'mapping' }
  | { readonly kind: 'mapped'; readonly mapping: MappedPort; readonly renewInMs: number }
  | { readonly kind: 'renewing'; readonly mapping: MappedPort }
  | { readonly kind: 'waiting'; readonly reason: string; readonly retryInMs: number }
  | { readonly kind: 'stopped' };

/** @internal A lease: the mapping, the client that made it, and when it ends on the mapper's clock. */
export interface Lease {
  readonly mapping: MappedPort;
  readonly client: GatewayClient;
  readonly expiresAt: number;
}

/** @internal The mapper's own state: the public one plus the resources it holds. */
export type MapperState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'mapping'; readonly abort: AbortController }
  | {
      readonly kind: 'mapped';
      readonly lease: Lease;
      readonly renewInMs: number;
      readonly renewTimer: TimerHandle;
    }
  | { readonly kind: 'renewing'; readonly lease: Lease; readonly abort: AbortController }
  | {
      readonly kind: 'waiting';
      readonly reason: string;
      readonly retryInMs: number;
      readonly retryTimer: TimerHandle;
    }
  | { readonly kind: 'stopped' };

/** The life cycle's moves: where each state may go. */
export const PORT_MAPPER_MOVES: TransitionTable<MapperState['kind']> = {
  idle: ['mapping', 'stopped'],
  mapping: ['mapped', 'waiting', 'stopped'],
  // A failed renewal that leaves time on the lease schedules the next try in `mapped`.
  mapped: ['renewing', 'stopped'],
  renewing: ['mapped', 'waiting', 'stopped'],
  waiting: ['mapping', 'stopped'],
  stopped: [],
};

/** The timer a state holds, if any. */
export function timerOf(state: MapperState): TimerHandle | undefined {
  switch (state.kind) {
    case 'mapped':
      return state.renewTimer;
    case 'waiting':
      return state.retryTimer;
    case 'idle':
    case 'mapping':
    case 'renewing':
    case 'stopped':
      return undefined;
    default: {
      const unknown: never = state;
      throw new TypeError(`unknown port mapper state ${String(unknown)}`);
    }
  }
}

/** The request in flight a state holds, if any. */
export function abortOf(state: MapperState): AbortController | undefined {
  switch (state.kind) {
    case 'mapping':
    case 'renewing':
      return state.abort;
    case 'idle':
    case 'mapped':
    case 'waiting':
    case 'stopped':
      return undefined;
    default: {
      const unknown: never = state;
      throw new TypeError(`unknown port mapper state ${String(unknown)}`);
    }
  }
}

/** What callers see of a state: the resources stay inside the mapper. */
export function publicState(state: MapperState): PortMapperState {
  switch (state.kind) {
    case 'idle':
    case 'mapping':
    case 'stopped':
      return { kind: state.kind };
    case 'mapped':
      return { kind: 'mapped', mapping: state.lease.mapping, renewInMs: state.renewInMs };
    case 'renewing':
      return { kind: 'renewing', mapping: state.lease.mapping };
    case 'waiting':
      return { kind: 'waiting', reason: state.reason, retryInMs: state.retryInMs };
    default: {
      const unknown: never = state;
      throw new TypeError(`unknown port mapper state ${String(unknown)}`);
    }
  }
}
