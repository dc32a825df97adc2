import { encodeSignalMessage, type SignalServerMessage } from '@svc/wire';
import type { PilotLink, RobotLink, RobotPresence } from './presence.js';

/** The socket a connection talks through: the part of `ws`'s WebSocket it uses. */
export interface SignalSocket {
  readonly readyState: number;
  /** The `readyState` of an open socket. */
  readonly OPEN: number;
  send(text: string): void;
  close(code: number, reason: string): void;
  /** Drops the socket without a closing handshake. */
  terminate(): void;
}

/** What a verified pilot session token allows, kept while the pilot is connected. */
export interface PilotClaims {
  /** The robot the token is for (`aud`). */
  readonly robotId: string;
  readonly sub: string;
  readonly scope: 'drive' | 'observe';
  readonly jti: string;
  /** Expiry, seconds since the epoch. */
  readonly exp: number;
  /** For an API key's token, the customer's own user id it named. */
  readonly act?: string;
}

/** Who a connection's `auth` says it is. */
export type ConnectionRole = 'robot' | 'pilot';

/**
 * Where a signalling connection is in its life. Each variant holds only what is valid in it:
 *
 * - `challenged`: the challenge is sent; `auth` must come before `deadline` (monotonic ms);
 * - `authenticating`: `auth` came and is being checked (signature or token, database lookup);
 *   anything else the client sends meanwhile breaks the protocol; the deadline still holds;
 * - `robot`: an authenticated robot, online with its presence;
 * - `pilot`: an authenticated pilot, with the sessions offered on this connection;
 * - `closed`: closed by the server (`code` sent) or by the peer; messages that still arrive are
 *   late and ignored.
 */
export type ConnectionState =
  | { readonly kind: 'challenged'; readonly nonce: string; readonly deadline: number }
  | { readonly kind: 'authenticating'; readonly role: ConnectionRole; readonly deadline: number }
  | { readonly kind: 'robot'; readonly presence: RobotPresence }
  | { readonly kind: 'pilot'; readonly claims: PilotClaims; readonly sessions: Set<string> }
  | { readonly kind: 'closed'; readonly code: number };

/** Every state but `closed`. */
export type OpenState = Exclude<ConnectionState, { kind: 'closed' }>;

/** The pilot state, as the pilot handlers receive it. */
export type PilotState = Extract<ConnectionState, { kind: 'pilot' }>;

/** What moves a connection from one state to the next (see {@link nextState}). */
export type ConnectionEvent =
  | { readonly type: 'auth'; readonly role: ConnectionRole }
  | { readonly type: 'admit-robot'; readonly presence: RobotPresence }
  | { readonly type: 'admit-pilot'; readonly claims: PilotClaims }
  | { readonly type: 'close'; readonly code: number };

/**
 * The connection's transitions, all of them: the state after `event` in `from`, or `undefined`
 * when the event makes no sense there. Closing a closed connection leaves it as it is (a socket
 * may end after the server closed it).
 *
 * ```text
 * challenged --auth--> authenticating --admit-robot--> robot
 *                                     --admit-pilot--> pilot
 * any open state --close--> closed
 * ```
 */
export function nextState(from: ConnectionState, event: ConnectionEvent): ConnectionState | undefined {
  if (event.type === 'close') return from.kind === 'closed' ? from : { kind: 'closed', code: event.code };
  switch (from.kind) {
    case 'challenged':
      return event.type === 'auth'
        ? { kind: 'authenticating', role: event.role, deadline: from.deadline }
        : undefined;
    case 'authenticating':
      if (event.type === 'admit-robot' && from.role === 'robot') {
        return { kind: 'robot', presence: event.presence };
      }
      if (event.type === 'admit-pilot' && from.role === 'pilot') {
        return { kind: 'pilot', claims: event.claims, sessions: new Set() };
      }
      return undefined;
    case 'robot':
    case 'pilot':
    case 'closed':
      return undefined;
    default:
      return from satisfies never;
  }
}

/** Limits of a connection's {@link RateBucket}. */
export interface RatePolicy {
  /** Messages a second, refilled continuously. */
  readonly perSecond: number;
  /** Messages that may come at once. */
  readonly burst: number;
  /** How long a connection may stay over the rate before it is closed, ms. */
  readonly closeAfterMs: number;
}

/** What {@link RateBucket.take} decided about one message. */
export type RateVerdict = 'admitted' | 'dropped' | 'over-too-long';

/**
 * A token bucket per connection: a message is admitted while tokens are left, else dropped; a
 * connection that stays over the rate for `closeAfterMs` is to be closed. A run over the limit
 * ends after a second without a dropped message.
 */
export class RateBucket {
  readonly #policy: RatePolicy;
  #tokens: number;
  #refillAt: number;
  /** Start of the current run over the rate, or -1. */
  #overSince = -1;
  #lastDropAt = 0;

  constructor(policy: RatePolicy, now: number) {
    this.#policy = policy;
    this.#tokens = policy.burst;
    this.#refillAt = now;
  }

  /** Takes a token for a message arriving at `now` (monotonic ms). */
  take(now: number): RateVerdict {
    const elapsed = now - this.#refillAt;
    if (elapsed > 0) {
      this.#tokens = Math.min(this.#policy.burst, this.#tokens + (elapsed * this.#policy.perSecond) / 1000);
      this.#refillAt = now;
    }
    const inRun = this.#overSince >= 0 && now - this.#lastDropAt < 1000;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      if (!inRun) this.#overSince = -1;
      return 'admitted';
    }
    if (!inRun) this.#overSince = now;
    this.#lastDropAt = now;
    return now - this.#overSince >= this.#policy.closeAfterMs ? 'over-too-long' : 'dropped';
  }
}

/** Options of {@link SignalConnection}. */
export interface SignalConnectionOptions {
  /** The challenge's nonce. */
  readonly nonce: string;
  /** When the connection opened (monotonic ms). */
  readonly now: number;
  /** Time allowed from the challenge to a decided `auth`, ms. */
  readonly authTimeoutMs: number;
  /** The limits of the connection's {@link RateBucket}. */
  readonly rate: RatePolicy;
  /**
   * Called once, when the connection leaves its last open state for `closed` (whoever closed it),
   * with that state: the server releases what it held (the robot's presence, the pilot's sessions).
   */
  readonly onClosed: (connection: SignalConnection, from: OpenState) => void;
}

const EVENT_WORDS: Record<ConnectionEvent['type'], string> = {
  auth: 'start authenticating',
  'admit-robot': 'admit a robot',
  'admit-pilot': 'admit a pilot',
  close: 'close',
};

/**
 * One signalling WebSocket and its state. The state changes only through {@link nextState}; a
 * change that makes no sense in the current state is a bug of the caller and throws a
 * `TypeError`. Messages arriving once the connection is closed are the server's to ignore.
 */
export class SignalConnection implements PilotLink, RobotLink {
  /** The WebSocket. */
  readonly socket: SignalSocket;
  /** When anything was last heard from the peer (monotonic ms): the silence deadline counts from it. */
  lastHeard: number;
  /** The connection's message rate limit. */
  readonly rate: RateBucket;
  #state: ConnectionState;
  readonly #onClosed: SignalConnectionOptions['onClosed'];

  constructor(socket: SignalSocket, options: SignalConnectionOptions) {
    this.socket = socket;
    this.lastHeard = options.now;
    this.rate = new RateBucket(options.rate, options.now);
    this.#state = { kind: 'challenged', nonce: options.nonce, deadline: options.now + options.authTimeoutMs };
    this.#onClosed = options.onClosed;
  }

  /** The current state. */
  get state(): ConnectionState {
    return this.#state;
  }

  /** Whether the connection is closed or closing (read after an `await`, when it may have changed). */
  get isClosed(): boolean {
    return this.#state.kind === 'closed';
  }

  /**
   * `auth` came: checking it starts. Returns the challenge's nonce (what a robot signed).
   *
   * @throws {TypeError} unless the connection is `challenged`.
   */
  beginAuth(role: ConnectionRole): string {
    const from = this.#state;
    this.#apply({ type: 'auth', role });
    return from.kind === 'challenged' ? from.nonce : '';
  }

  /**
   * The robot's `auth` checked out: it is online with `presence`.
   *
   * @throws {TypeError} unless the connection is authenticating a robot.
   */
  admitRobot(presence: RobotPresence): void {
    this.#apply({ type: 'admit-robot', presence });
  }

  /**
   * The pilot's token checked out.
   *
   * @throws {TypeError} unless the connection is authenticating a pilot.
   */
  admitPilot(claims: PilotClaims): PilotState {
    return this.#apply({ type: 'admit-pilot', claims }) as PilotState;
  }

  /**
   * Closes the connection with `code` (a WebSocket close frame with `reason`, cut to the 123 bytes
   * a close frame allows). `false`, and nothing sent, when it was closed already.
   */
  close(code: number, reason: string): boolean {
    if (this.isClosed) return false;
    this.#apply({ type: 'close', code });
    this.socket.close(code, truncate(reason, 120));
    return true;
  }

  /** The socket ended (the peer closed it, or the network dropped it). */
  ended(code: number): void {
    if (!this.isClosed) this.#apply({ type: 'close', code });
  }

  /** Forgets a session offered on this connection (see {@link PilotLink}); a no-op unless a pilot. */
  forget(sessionId: string): void {
    if (this.#state.kind === 'pilot') this.#state.sessions.delete(sessionId);
  }

  /** Sends a message; nothing once the connection is closed or the socket is not open. */
  send(message: SignalServerMessage): void {
    this.sendRaw(encodeSignalMessage(message));
  }

  /** Sends text as it is (see {@link SignalConnection.send}). */
  sendRaw(text: string): void {
    if (this.isClosed || this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(text);
  }

  /** Sends `denied` with `reason` and `message` (cut to 512 characters), then closes with `code`. */
  deny(reason: SignalDenial, message: string, code: number): void {
    this.send({ type: 'denied', reason, message: truncate(message, 512) });
    this.close(code, reason);
  }

  /** The one place the state changes. */
  #apply(event: ConnectionEvent): ConnectionState {
    const from = this.#state;
    const to = nextState(from, event);
    if (to === undefined) {
      const where = from.kind === 'authenticating' ? `authenticating a ${from.role}` : from.kind;
      throw new TypeError(`signalling connection: cannot ${EVENT_WORDS[event.type]} when ${where}`);
    }
    this.#state = to;
    if (to.kind === 'closed' && from.kind !== 'closed') this.#onClosed(this, from);
    return to;
  }
}

/** The reasons of a `denied` message. */
export type SignalDenial = Extract<SignalServerMessage, { type: 'denied' }>['reason'];

/**
 * `text` cut to `max` bytes of UTF-8 with an ellipsis (close reasons may hold 123 bytes, messages
 * are kept under 512 characters).
 */
export function truncate(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = text.slice(0, max - 1);
  while (Buffer.byteLength(out) > max - 3) out = out.slice(0, -1);
  return `${out}…`;
}
