/**
 * The life cycle of the daemon's signalling connection as one discriminated union: each variant
 * carries only what is valid in it (the socket while there is one, the handshake timer while the
 * handshake runs, the heartbeat bookkeeping while online, the retry timer while waiting).
 */
import type { TimerHandle, TransitionTable } from '@svc/runtime';
import type { DenialReason } from '@svc/wire';
import type WebSocket from 'ws';

/**
 * What a `SignallingClient` is doing, as its callers see it.
 *
 * - `idle`: constructed, `start()` not called yet;
 * - `connecting`: opening the WebSocket;
 * - `authenticating`: connected, answering the challenge;
 * - `online`: `auth-ok` received, announced, heartbeating;
 * - `backoff`: the connection failed or was lost; the next attempt starts in `retryInMs`;
 * - `denied`: the cloud refused this robot (`unknown-robot`, `key-mismatch`, deleted); the next
 *   attempt is 5 minutes away;
 * - `stopped`: `stop()` was called.
 */
export type SignallingState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'connecting' }
  | { readonly kind: 'authenticating' }
  | {
      readonly kind: 'online';
      /** The org the robot is enrolled in, `null` when admitted by open dev enrolment. */
      readonly orgId: string | null;
    }
  | {
      readonly kind: 'backoff';
      /** When the next attempt starts. */
      readonly retryInMs: number;
      /** Why the connection ended, for people (no secrets). */
      readonly reason: string;
      /** The WebSocket close code, when there was a close. */
      readonly closeCode?: number;
    }
  | {
      readonly kind: 'denied';
      readonly retryInMs: number;
      readonly reason: string;
      readonly closeCode?: number;
      /** The reason the cloud gave, when it sent one. */
      readonly denial?: DenialReason;
    }
  | { readonly kind: 'stopped' };

/** Why a connection ended, as the `backoff` and `denied` states carry it. */
export interface ConnectionEnd {
  readonly reason: string;
  readonly closeCode?: number;
  readonly denial?: DenialReason;
}

/** @internal The client's own state: the public one plus the resources it holds. */
export type ConnectionState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'connecting'; readonly ws: WebSocket; readonly handshakeTimer: TimerHandle }
  | { readonly kind: 'authenticating'; readonly ws: WebSocket; readonly handshakeTimer: TimerHandle }
  | {
      readonly kind: 'online';
      readonly ws: WebSocket;
      readonly orgId: string | null;
      readonly heartbeatMs: number;
      /** Clock time (ms) of `auth-ok`: a connection that held long enough resets the backoff. */
      readonly onlineAt: number;
      /** Clock time (ms) of the last message from the cloud. */
      lastHeardAt: number;
      /** The next heartbeat; replaced at each one. */
      heartbeatTimer: TimerHandle | undefined;
      /**
       * The last announce sent on this connection without its sessions (those travel as
       * `session-started`/`session-ended`), to notice other changes at heartbeats.
       */
      lastAnnounce: string | undefined;
    }
  | ({ readonly kind: 'backoff'; readonly retryInMs: number; readonly retryTimer: TimerHandle } & Omit<
      ConnectionEnd,
      'denial'
    >)
  | ({
      readonly kind: 'denied';
      readonly retryInMs: number;
      readonly retryTimer: TimerHandle;
    } & ConnectionEnd)
  | { readonly kind: 'stopped' };

/**
 * The life cycle's moves: where each state may go. `backoff` follows itself (and `denied`) when
 * the WebSocket class refuses the URL outright, before any connection exists.
 */
export const SIGNALLING_MOVES: TransitionTable<ConnectionState['kind']> = {
  idle: ['connecting', 'backoff', 'stopped'],
  connecting: ['authenticating', 'backoff', 'denied', 'stopped'],
  authenticating: ['online', 'backoff', 'denied', 'stopped'],
  online: ['backoff', 'denied', 'stopped'],
  backoff: ['connecting', 'backoff', 'stopped'],
  denied: ['connecting', 'backoff', 'stopped'],
  stopped: [],
};

/** The socket a state holds, if any. */
export function socketOf(state: ConnectionState): WebSocket | undefined {
  switch (state.kind) {
    case 'connecting':
    case 'authenticating':
    case 'online':
      return state.ws;
    case 'idle':
    case 'backoff':
    case 'denied':
    case 'stopped':
      return undefined;
    default: {
      const unknown: never = state;
      throw new TypeError(`unknown signalling state ${String(unknown)}`);
    }
  }
}

/** The timer a state holds, if any. */
export function timerOf(state: ConnectionState): TimerHandle | undefined {
  switch (state.kind) {
    case 'connecting':
    case 'authenticating':
      return state.handshakeTimer;
    case 'online':
      return state.heartbeatTimer;
    case 'backoff':
    case 'denied':
      return state.retryTimer;
    case 'idle':
    case 'stopped':
      return undefined;
    default: {
      const unknown: never = state;
      throw new TypeError(`unknown signalling state ${String(unknown)}`);
    }
  }
}

/** What callers see of a state: the resources stay inside the client. */
export function publicState(state: ConnectionState): SignallingState {
  switch (state.kind) {
    case 'idle':
    case 'connecting':
    case 'authenticating':
    case 'stopped':
      return { kind: state.kind };
    case 'online':
      return { kind: 'online', orgId: state.orgId };
    case 'backoff':
      return {
        kind: 'backoff',
        retryInMs: state.retryInMs,
        reason: state.reason,
        ...(state.closeCode !== undefined && { closeCode: state.closeCode }),
      };
    case 'denied':
      return {
        kind: 'denied',
        retryInMs: state.retryInMs,
        reason: state.reason,
        ...(state.closeCode !== undefined && { closeCode: state.closeCode }),
        ...(state.denial !== undefined && { denial: state.denial }),
      };
    default: {
      const unknown: never = state;
      throw new TypeError(`unknown signalling state ${String(unknown)}`);
    }
  }
}
