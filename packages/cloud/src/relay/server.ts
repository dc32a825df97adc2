import type { Clock, Logger } from '@svc/runtime';
import type { UdpDestination } from '@svc/udp-batch';
import type { RelayAllocationRefusal } from '@svc/wire';
import {
  type AttachDecision,
  type PortRange,
  RelayAllocation,
  type RelayAllocationStats,
} from './allocation.js';
import { isRelayTokenProblem, type RelayTokenClaims, RelayTokens } from './tokens.js';

/**
 * The relay of last resort: per relayed session, a pilot-facing and a robot-facing UDP port on
 * this node, each party let in by its own one-use token (`docs/protocol/relay.md`). The pilot's
 * QUIC connection runs end to end with the robot; the relay holds no key of it and forwards its
 * packets as they are. An allocation ends within {@link RELAY_SWEEP_MS} of its session's token
 * expiring unrenewed, of the session ending on the cloud (left, revoked, the robot deleted), or of
 * {@link RelayServer.release}.
 */

/** How often allocations are checked against their expiry and their session, ms. */
export const RELAY_SWEEP_MS = 250;
/** How long the pilot's token in an offer may be used to allocate, ms (shorter if the session token ends sooner). */
export const PILOT_GRANT_MS = 60_000;
/** How long the robot's token in `relay-open` may be used to attach, ms. */
export const ROBOT_GRANT_MS = 30_000;
/** An allocation neither party used within this long is closed, ms. */
export const UNUSED_ALLOCATION_MS = 30_000;
/** At most this many allocations on one node at once. */
export const DEFAULT_MAX_ALLOCATIONS = 1000;

/** Options of {@link RelayServer}. */
export interface RelayServerOptions {
  /** Address named to parties (offers, `relay-allocated`, `relay-open`): an IP literal or a DNS name. */
  readonly publicHost: string;
  /** Address the ports bind: `::` (dual stack), `0.0.0.0`, or a literal. */
  readonly bindHost: string;
  readonly ports?: PortRange;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Whether the cloud still knows the session (not ended, left, revoked); checked every sweep. */
  readonly isSessionLive: (robotId: string, sessionId: string) => boolean;
  readonly maxAllocations?: number;
}

/** What a session's relay needs besides the pilot's token. */
export interface AllocationRequest {
  readonly sessionId: string;
  readonly robotId: string;
  /** The session token's expiry, ms since the epoch: the allocation ends then unless renewed. */
  readonly expiresAt: number;
  /** Bytes a second the robot may send the pilot (from the session's bitrate ceiling), and back. */
  readonly rate: { readonly toPilot: number; readonly toRobot: number };
}

/** An allocation made: the pilot's port, and what the robot is told in `relay-open`. */
export interface AllocationGrant {
  readonly ok: true;
  readonly host: string;
  readonly pilotPort: number;
  readonly robotPort: number;
  readonly robotToken: string;
  readonly expiresInMs: number;
}

/** An allocation refused: a code and words the pilot may read. */
export interface AllocationRefused {
  readonly ok: false;
  readonly code: RelayAllocationRefusal;
  readonly message: string;
}

/** One allocation as metrics and the API see it. */
export interface RelayAllocationView {
  readonly sessionId: string;
  readonly robotId: string;
  readonly attached: boolean;
  readonly pilot: boolean;
  readonly expiresAt: number;
  readonly stats: Readonly<RelayAllocationStats>;
}

interface Entry {
  readonly allocation: RelayAllocation;
  expiresAt: number;
  readonly createdAt: number;
  /** The robot token's id and the address it attached from. */
  robotJti: string | undefined;
  robotFrom: UdpDestination | undefined;
}

/** The relay of this node: see the module comment. */
export class RelayServer {
  readonly tokens: RelayTokens;
  readonly #options: RelayServerOptions;
  readonly #entries = new Map<string, Entry>();
  /** Used token ids and their expiry (ms since the epoch), so a token opens one thing once. */
  readonly #used = new Map<string, number>();
  readonly #timer: ReturnType<Clock['setInterval']>;
  readonly #max: number;
  #closed = false;

  constructor(options: RelayServerOptions) {
    this.#options = options;
    this.#max = options.maxAllocations ?? DEFAULT_MAX_ALLOCATIONS;
    this.tokens = new RelayTokens(() => options.clock.wallNow());
    this.#timer = options.clock.setInterval(() => this.#sweep(), RELAY_SWEEP_MS);
  }

  /** The address parties reach this node's relay at. */
  get publicHost(): string {
    return this.#options.publicHost;
  }

  /** Allocations open now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The pilot's token for an offer: good for `relay-allocate` of this session, once, for a minute. */
  grant(
    sessionId: string,
    robotId: string,
    sessionExpiresAt: number,
  ): { host: string; token: string; expiresInMs: number } {
    const now = this.#options.clock.wallNow();
    const exp = Math.min(sessionExpiresAt, now + PILOT_GRANT_MS);
    return {
      host: this.#options.publicHost,
      token: this.tokens.mint({ sid: sessionId, rid: robotId, party: 'pilot', exp }),
      expiresInMs: Math.max(0, exp - now),
    };
  }

  /**
   * Opens the relay of a session for its pilot, whose `token` must be the pilot's token of that
   * very session, unused. The robot's token for `relay-open` comes back with the ports.
   */
  async allocate(token: string, request: AllocationRequest): Promise<AllocationGrant | AllocationRefused> {
    const claims = this.#checkToken(token, 'pilot', request.sessionId, request.robotId);
    if (!('jti' in claims)) return claims;
    this.#used.set(claims.jti, claims.exp);
    const now = this.#options.clock.wallNow();
    if (request.expiresAt <= now) return refused('expired', 'the session token has expired; renew it first');
    if (this.#closed) return refused('unavailable', 'the relay is shutting down; connect again');
    if (this.#entries.has(request.sessionId)) {
      return refused(
        'replayed',
        `session ${request.sessionId} already has its relay; connect again for a new session`,
      );
    }
    if (this.#entries.size >= this.#max) {
      return refused('unavailable', `this relay node serves ${this.#max} sessions already; try again later`);
    }
    let allocation: RelayAllocation;
    try {
      allocation = await RelayAllocation.open({
        sessionId: request.sessionId,
        robotId: request.robotId,
        bindHost: this.#options.bindHost,
        ...(this.#options.ports === undefined ? {} : { ports: this.#options.ports }),
        rate: request.rate,
        now: () => this.#options.clock.now(),
        authorizeAttach: (robotToken, from) => this.#authorizeAttach(request.sessionId, robotToken, from),
        onAttached: (from) =>
          this.#options.logger.info(
            { sessionId: request.sessionId, robot: addressText(from) },
            'relay: robot attached',
          ),
        onPilot: (from) =>
          this.#options.logger.info(
            { sessionId: request.sessionId, pilot: addressText(from) },
            'relay: pilot arrived',
          ),
      });
    } catch (err) {
      this.#options.logger.error({ err: String(err) }, 'relay: cannot open ports for a session');
      return refused('unavailable', 'the relay could not open a port now; try again');
    }
    if (this.#closed || this.#entries.has(request.sessionId)) {
      await allocation.close();
      return refused('unavailable', 'the relay is shutting down; connect again');
    }
    this.#entries.set(request.sessionId, {
      allocation,
      expiresAt: request.expiresAt,
      createdAt: this.#options.clock.now(),
      robotJti: undefined,
      robotFrom: undefined,
    });
    const robotExp = Math.min(request.expiresAt, now + ROBOT_GRANT_MS);
    this.#options.logger.info(
      {
        sessionId: request.sessionId,
        robotId: request.robotId,
        pilotPort: allocation.pilotPort,
        robotPort: allocation.robotPort,
      },
      'relay: allocated',
    );
    return {
      ok: true,
      host: this.#options.publicHost,
      pilotPort: allocation.pilotPort,
      robotPort: allocation.robotPort,
      robotToken: this.tokens.mint({
        sid: request.sessionId,
        rid: request.robotId,
        party: 'robot',
        exp: robotExp,
      }),
      expiresInMs: Math.max(0, request.expiresAt - now),
    };
  }

  /** The session's token was renewed: its relay lives until `expiresAt` (ms since the epoch). */
  renew(sessionId: string, expiresAt: number): boolean {
    const entry = this.#entries.get(sessionId);
    if (entry === undefined) return false;
    entry.expiresAt = Math.max(entry.expiresAt, expiresAt);
    return true;
  }

  /** Whether a session has its relay open. */
  has(sessionId: string): boolean {
    return this.#entries.has(sessionId);
  }

  /** Closes a session's relay now. */
  async release(sessionId: string, reason: string): Promise<void> {
    const entry = this.#entries.get(sessionId);
    if (entry === undefined) return;
    this.#entries.delete(sessionId);
    const { stats } = entry.allocation;
    this.#options.logger.info(
      {
        sessionId,
        robotId: entry.allocation.robotId,
        reason,
        bytesToPilot: stats.bytesToPilot,
        bytesToRobot: stats.bytesToRobot,
        overRate: stats.overRate,
        strangers: stats.strangers,
      },
      'relay: closed',
    );
    await entry.allocation.close();
  }

  /** The open allocations. */
  list(): RelayAllocationView[] {
    return [...this.#entries.values()].map(({ allocation, expiresAt }) => ({
      sessionId: allocation.sessionId,
      robotId: allocation.robotId,
      attached: allocation.attached,
      pilot: allocation.pilot !== undefined,
      expiresAt,
      stats: { ...allocation.stats },
    }));
  }

  /** Closes every allocation and stops the sweep. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#options.clock.clearInterval(this.#timer);
    await Promise.all([...this.#entries.keys()].map((id) => this.release(id, 'relay shutting down')));
  }

  #authorizeAttach(sessionId: string, token: string, from: UdpDestination): AttachDecision {
    const entry = this.#entries.get(sessionId);
    if (entry === undefined) return { ok: false, code: 'gone', message: 'this relay allocation has ended' };
    const claims = this.tokens.check(token);
    if (isRelayTokenProblem(claims)) return { ok: false, ...claims };
    if (claims.party !== 'robot' || claims.rid !== entry.allocation.robotId) {
      return { ok: false, code: 'bad-token', message: 'the token is not this robot’s relay token' };
    }
    if (claims.sid !== sessionId) {
      return { ok: false, code: 'wrong-session', message: 'the token is for another session’s relay port' };
    }
    const expiresInMs = Math.max(0, entry.expiresAt - this.#options.clock.wallNow());
    if (
      entry.robotJti === claims.jti &&
      entry.robotFrom !== undefined &&
      sameAddress(entry.robotFrom, from)
    ) {
      return { ok: true, expiresInMs };
    }
    if (this.#used.has(claims.jti) || entry.robotJti !== undefined) {
      return { ok: false, code: 'replayed', message: 'this relay token was already used' };
    }
    this.#used.set(claims.jti, claims.exp);
    entry.robotJti = claims.jti;
    entry.robotFrom = { host: from.host, port: from.port };
    return { ok: true, expiresInMs };
  }

  #checkToken(
    token: string,
    party: 'pilot' | 'robot',
    sessionId: string,
    robotId: string,
  ): RelayTokenClaims | AllocationRefused {
    const claims = this.tokens.check(token);
    if (isRelayTokenProblem(claims)) return { ok: false, ...claims };
    if (claims.party !== party) return refused('bad-token', `this is not a ${party}’s relay token`);
    if (claims.sid !== sessionId || claims.rid !== robotId) {
      return refused('wrong-session', 'the relay token is for another session');
    }
    if (this.#used.has(claims.jti)) return refused('replayed', 'this relay token was already used');
    return claims;
  }

  #sweep(): void {
    const wall = this.#options.clock.wallNow();
    const now = this.#options.clock.now();
    for (const [jti, exp] of this.#used) if (exp <= wall) this.#used.delete(jti);
    for (const [sessionId, entry] of this.#entries) {
      const { allocation } = entry;
      const reason =
        entry.expiresAt <= wall
          ? 'the session token expired without renewal'
          : !this.#options.isSessionLive(allocation.robotId, sessionId)
            ? 'the session ended'
            : now - entry.createdAt > UNUSED_ALLOCATION_MS &&
                !(allocation.attached && allocation.pilot !== undefined)
              ? 'unused: a party never came'
              : undefined;
      if (reason !== undefined) void this.release(sessionId, reason);
    }
  }
}

function refused(code: RelayAllocationRefusal, message: string): AllocationRefused {
  return { ok: false, code, message };
}

function sameAddress(a: UdpDestination, b: UdpDestination): boolean {
  return a.port === b.port && a.host === b.host;
}

function addressText(a: UdpDestination): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
