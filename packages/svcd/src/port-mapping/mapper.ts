/**
 * `PortMapper`: keeps the robot's QUIC port mapped on the gateway while the daemon runs
 * (`port_mapping = true`, ADR 0020). It asks the protocols in order until one maps the port,
 * renews the lease at half its lifetime, tells its listeners when the public address or port
 * changes (the agent re-announces), removes the mapping at `stop()`, and, when no gateway maps
 * the port, logs the reason once and tries again quietly, backing off to every few minutes.
 */
import { isIPv4 } from 'node:net';
import {
  assertTransition,
  Backoff,
  type BackoffPolicy,
  type Clock,
  type Logger,
  systemClock,
  TypedEmitter,
} from '@svc/runtime';
import type { SignalCandidate } from '@svc/wire';
import {
  failureReason,
  type GatewayClient,
  type MappedPort,
  PortMappingError,
  PROTOCOL_NAMES,
} from './gateway-client.js';
import {
  abortOf,
  type Lease,
  type MapperState,
  PORT_MAPPER_MOVES,
  type PortMapperState,
  publicState,
  timerOf,
} from './state.js';

/**
 * Delays between tries when no gateway maps the port: {@link PORT_MAPPING_RETRY_FLOOR_MS} plus a
 * full-jitter draw whose ceiling doubles from 4 s to 5 minutes. A gateway that comes up a little
 * after the robot (both powered on together) is found within seconds; a robot without a mapping
 * gateway settles to asking every 2 s to 5 minutes, 2.5 minutes on average.
 */
export const PORT_MAPPING_RETRY: BackoffPolicy = Object.freeze({ baseMs: 4000, capMs: 300_000 });
/** The least wait between two tries of all protocols. */
export const PORT_MAPPING_RETRY_FLOOR_MS = 2000;
/** A failed renewal is tried again at half the lease left, until less than this is left. */
const MIN_RENEWAL_LEFT_MS = 2000;
/** How long `stop()` waits for the gateway to confirm the removal. */
const REMOVE_TIMEOUT_MS = 5000;

/** Options of {@link PortMapper}. */
export interface PortMapperOptions {
  /** The UDP port to map: the QUIC port the daemon bound. */
  readonly port: number;
  /** The lease to ask for, in seconds (`port_mapping_lifetime_s`). */
  readonly lifetimeS: number;
  /** One client per protocol, asked in this order (`port_mapping_protocols`). */
  readonly clients: readonly GatewayClient[];
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Uniform draws in [0, 1) for the retry jitter (default `Math.random`). */
  readonly random?: () => number;
}

/** Events of a {@link PortMapper}. */
export type PortMapperEvents = {
  /** The mapped candidate appeared, changed or went away (`undefined`): announce again. */
  changed: (candidate: SignalCandidate | undefined) => void;
};

/** Keeps the QUIC port mapped on the gateway; see the file's comment. */
export class PortMapper extends TypedEmitter<PortMapperEvents> {
  readonly #port: number;
  readonly #lifetimeS: number;
  readonly #clients: readonly GatewayClient[];
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #backoff: Backoff;
  #state: MapperState = { kind: 'idle' };
  /** The mapping announced now. */
  #announced: MappedPort | undefined;
  /** The last failure logged at warn level, so the same one is not logged again. */
  #lastReason: string | undefined;
  /** The request in flight (a try or a renewal), awaited by `stop()`. */
  #inflight: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;

  /** @throws {TypeError} when the port, the lifetime or the client list is unusable. */
  constructor(options: PortMapperOptions) {
    super(options.logger);
    const { port, lifetimeS, clients } = options;
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new TypeError(`port mapping needs a UDP port from 1 to 65535, got ${String(port)}`);
    }
    if (!Number.isInteger(lifetimeS) || lifetimeS < 1) {
      throw new TypeError(`port mapping needs a lifetime of at least 1 s, got ${String(lifetimeS)}`);
    }
    if (clients.length === 0) throw new TypeError('port mapping needs at least one protocol');
    this.#port = port;
    this.#lifetimeS = lifetimeS;
    this.#clients = clients;
    this.#logger = options.logger;
    this.#clock = options.clock ?? systemClock;
    this.#backoff = new Backoff(PORT_MAPPING_RETRY, options.random);
  }

  /** What the mapper is doing. */
  get state(): PortMapperState {
    return publicState(this.#state);
  }

  /** The `mapped` candidate to announce, while a gateway holds the mapping. */
  candidate(): SignalCandidate | undefined {
    const mapping = this.#announced;
    if (mapping === undefined) return undefined;
    return { address: mapping.externalAddress, port: mapping.externalPort, family: 'ipv4', kind: 'mapped' };
  }

  /**
   * Starts the first try. Failures never throw: they show in the log and the `waiting` state.
   *
   * @throws {TypeError} when called twice, or after `stop()`.
   */
  start(): void {
    if (this.#state.kind !== 'idle') {
      throw new TypeError(`PortMapper.start() may be called once (the mapper is ${this.#state.kind})`);
    }
    this.#try();
  }

  /**
   * Stops renewing and removes the mapping from the gateway (waiting at most a few seconds for
   * it to confirm). Emits nothing. Resolves when the clients are closed.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#shutdown();
    return this.#stopping;
  }

  async #shutdown(): Promise<void> {
    const state = this.#state;
    const lease = state.kind === 'mapped' || state.kind === 'renewing' ? state.lease : undefined;
    this.#move({ kind: 'stopped' });
    this.#announced = undefined;
    await this.#inflight;
    if (lease !== undefined) await this.#remove(lease.client, lease.mapping);
    await Promise.all(this.#clients.map((client) => client.close().catch(() => {})));
  }

  /**
   * The one place the state changes: checks the move and releases what the old state held (its
   * timer; its request in flight, which only `stopped` leaves unfinished).
   */
  #move(next: MapperState): void {
    const previous = this.#state;
    assertTransition('PortMapper', PORT_MAPPER_MOVES, previous.kind, next.kind);
    this.#clock.clearTimeout(timerOf(previous));
    if (next.kind === 'stopped') abortOf(previous)?.abort(new Error('port mapping stopped'));
    this.#state = next;
  }

  /** Asks every protocol in order until one maps the port. */
  #try(): void {
    const abort = new AbortController();
    this.#move({ kind: 'mapping', abort });
    this.#inflight = this.#tryAll(abort.signal);
  }

  async #tryAll(signal: AbortSignal): Promise<void> {
    const reasons: string[] = [];
    for (const client of this.#clients) {
      let mapping: MappedPort;
      try {
        mapping = checked(await client.map({ internalPort: this.#port, lifetimeS: this.#lifetimeS }, signal));
      } catch (err) {
        if (signal.aborted) return;
        reasons.push(failureReason(client.protocol, err));
        continue;
      }
      if (signal.aborted) {
        // Stopped while the answer was on its way: the mapping must not outlive the daemon.
        await this.#remove(client, mapping);
        return;
      }
      if (reasons.length > 0)
        this.#logger.debug({ tried: reasons }, 'port mapping: earlier protocols failed');
      this.#mapped(client, mapping);
      return;
    }
    this.#failed(reasons.join('; '));
  }

  /** A gateway mapped (or renewed) the port: announce it if it is new, schedule the renewal. */
  #mapped(client: GatewayClient, mapping: MappedPort): void {
    const lease: Lease = { mapping, client, expiresAt: this.#clock.now() + mapping.lifetimeS * 1000 };
    const renewInMs = mapping.lifetimeS * 500;
    const renewTimer = this.#clock.setTimeout(() => this.#renew(), renewInMs);
    this.#move({ kind: 'mapped', lease, renewInMs, renewTimer });
    this.#backoff.reset();
    this.#lastReason = undefined;
    const before = this.#announced;
    this.#announced = mapping;
    const where = `${mapping.externalAddress}:${mapping.externalPort}`;
    const fields = {
      protocol: mapping.protocol,
      gateway: mapping.gateway,
      external: where,
      internal: `${mapping.internalAddress}:${mapping.internalPort}`,
      lifetime_s: mapping.lifetimeS,
    };
    if (before === undefined) {
      this.#logger.info(
        fields,
        `port mapping: UDP ${where} on the gateway ${mapping.gateway} (${PROTOCOL_NAMES[mapping.protocol]}) forwards to QUIC port ${mapping.internalPort}; announced as a mapped candidate, renewed every ${renewInMs / 1000} s`,
      );
    } else if (
      before.externalAddress !== mapping.externalAddress ||
      before.externalPort !== mapping.externalPort
    ) {
      this.#logger.info(
        { ...fields, was: `${before.externalAddress}:${before.externalPort}` },
        `port mapping: the public address changed from ${before.externalAddress}:${before.externalPort} to ${where}; announcing it`,
      );
    } else {
      this.#logger.debug(fields, 'port mapping: renewed');
      return;
    }
    this.safeEmit('changed', this.candidate());
  }

  #renew(): void {
    const state = this.#state;
    if (state.kind !== 'mapped') return;
    const abort = new AbortController();
    this.#move({ kind: 'renewing', lease: state.lease, abort });
    this.#inflight = this.#renewing(state.lease, abort.signal);
  }

  async #renewing(lease: Lease, signal: AbortSignal): Promise<void> {
    const { client, mapping: held } = lease;
    let mapping: MappedPort;
    try {
      mapping = checked(
        await client.map(
          { internalPort: this.#port, lifetimeS: this.#lifetimeS, externalPort: held.externalPort },
          signal,
        ),
      );
    } catch (err) {
      if (!signal.aborted) this.#renewalFailed(lease, failureReason(client.protocol, err));
      return;
    }
    if (signal.aborted) {
      // `stop()` removes the lease it saw; a renewal that moved the port leaves a second one.
      if (mapping.externalPort !== held.externalPort) await this.#remove(client, mapping);
      return;
    }
    this.#mapped(client, mapping);
  }

  #renewalFailed(lease: Lease, reason: string): void {
    const leftMs = lease.expiresAt - this.#clock.now();
    if (leftMs >= MIN_RENEWAL_LEFT_MS) {
      const renewInMs = Math.floor(leftMs / 2);
      const renewTimer = this.#clock.setTimeout(() => this.#renew(), renewInMs);
      this.#move({ kind: 'mapped', lease, renewInMs, renewTimer });
      this.#note(
        reason,
        `port mapping: renewing the lease failed: ${reason}; the mapping holds for another ${Math.round(leftMs / 1000)} s, trying again in ${Math.round(renewInMs / 1000)} s`,
      );
      return;
    }
    const { mapping } = lease;
    this.#announced = undefined;
    this.#lastReason = reason;
    this.#logger.warn(
      { protocol: mapping.protocol, gateway: mapping.gateway, reason },
      `port mapping: lost UDP ${mapping.externalAddress}:${mapping.externalPort}, the lease ran out without a renewal (${reason}); announcing host candidates only`,
    );
    this.#wait(reason);
    this.safeEmit('changed', undefined);
  }

  /** No protocol mapped the port: say why (once per reason) and back off. */
  #failed(reason: string): void {
    this.#note(
      reason,
      `port mapping: no gateway mapped UDP port ${this.#port} (${reason}); announcing host candidates only and trying again, less and less often (at most every 5 minutes)`,
    );
    this.#wait(reason);
  }

  /** Logs `message` at warn level unless `reason` was the last one logged (then at debug). */
  #note(reason: string, message: string): void {
    if (reason === this.#lastReason) {
      this.#logger.debug({ reason }, message);
      return;
    }
    this.#lastReason = reason;
    this.#logger.warn({ port: this.#port, reason }, message);
  }

  #wait(reason: string): void {
    const retryInMs = PORT_MAPPING_RETRY_FLOOR_MS + this.#backoff.next();
    const retryTimer = this.#clock.setTimeout(() => this.#try(), retryInMs);
    this.#move({ kind: 'waiting', reason, retryInMs, retryTimer });
  }

  /** Removes `mapping` from the gateway, logging the outcome. */
  async #remove(client: GatewayClient, mapping: MappedPort): Promise<void> {
    const abort = new AbortController();
    const timer = this.#clock.setTimeout(
      () => abort.abort(new Error(`no answer within ${REMOVE_TIMEOUT_MS / 1000} s`)),
      REMOVE_TIMEOUT_MS,
    );
    const where = `${mapping.externalAddress}:${mapping.externalPort}`;
    try {
      await client.unmap(mapping, abort.signal);
      this.#logger.info(
        { protocol: mapping.protocol, gateway: mapping.gateway, external: where },
        `port mapping: removed UDP ${where} from the gateway ${mapping.gateway}`,
      );
    } catch (err) {
      const reason = abort.signal.aborted
        ? `${PROTOCOL_NAMES[mapping.protocol]}: no answer within ${REMOVE_TIMEOUT_MS / 1000} s`
        : failureReason(client.protocol, err);
      this.#logger.warn(
        { protocol: mapping.protocol, gateway: mapping.gateway, external: where, reason },
        `port mapping: could not remove UDP ${where} from the gateway (${reason}); the gateway drops it when its lease of ${mapping.lifetimeS} s ends`,
      );
    } finally {
      this.#clock.clearTimeout(timer);
    }
  }
}

/** A mapping the mapper can announce: an IPv4 public address and a port. */
function checked(mapping: MappedPort): MappedPort {
  const { externalAddress, externalPort, lifetimeS } = mapping;
  if (
    !isIPv4(externalAddress) ||
    !Number.isInteger(externalPort) ||
    externalPort < 1 ||
    externalPort > 65535
  ) {
    throw new PortMappingError(
      'failed',
      `${PROTOCOL_NAMES[mapping.protocol]}: gateway ${mapping.gateway} answered with an unusable public address ${JSON.stringify(externalAddress)} port ${externalPort}`,
    );
  }
  if (!(lifetimeS > 0)) {
    throw new PortMappingError(
      'failed',
      `${PROTOCOL_NAMES[mapping.protocol]}: gateway ${mapping.gateway} gave a lease of ${lifetimeS} s`,
    );
  }
  return mapping;
}
