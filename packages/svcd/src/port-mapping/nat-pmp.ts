/**
 * NAT-PMP (RFC 6886) through `@achingbrain/nat-port-mapper`'s `pmpNat`.
 *
 * The library's NAT-PMP gateway (4.0.5) has no timeout of its own and keeps a request that got no
 * answer at the head of its queue forever, so every request here gets a fresh gateway object
 * (one socket on the client port 5350, closed after the answer) and a deadline. Its `ttl` is sent
 * as the lifetime field unchanged, so it is given in seconds here (its documentation says
 * milliseconds, which the UPnP path divides). Its `unmap` deletes a TCP mapping whatever was
 * mapped, so a UDP mapping is removed with an explicit request of lifetime 0 (§3.4).
 */
import { EventEmitter } from 'node:events';
import { type Gateway, pmpNat } from '@achingbrain/nat-port-mapper';
import {
  type GatewayClient,
  type MappedPort,
  type MapRequest,
  PortMappingError,
  withTimeout,
} from './gateway-client.js';
import { defaultGateway, localAddressToward } from './network.js';

/** The NAT-PMP server port (RFC 6886 §3). */
export const NAT_PMP_PORT = 5351;

/** Options of {@link NatPmpClient}. */
export interface NatPmpClientOptions {
  /** The gateway to ask (`port_mapping_gateway`); the IPv4 default gateway when absent. */
  readonly gateway?: string;
  /** The robot's address to map to (its bound address); the one toward the gateway when absent. */
  readonly internalAddress?: string;
  /** How long one request waits for the answer (default 3 s). */
  readonly timeoutMs?: number;
  /** The default gateway, for tests (default: `/proc/net/route`). */
  readonly findGateway?: () => Promise<string>;
  /** The library's constructor, for tests. */
  readonly createGateway?: (address: string) => Gateway;
}

/** NAT-PMP's result codes (RFC 6886 §3.5), as the library reports them in `code`. */
const RESULT_CODES: Readonly<Record<number, string>> = {
  1: 'unsupported version',
  2: 'not authorized or refused',
  3: 'network failure (the gateway has no public address)',
  4: 'out of resources',
  5: 'unsupported opcode',
};

/** {@link GatewayClient} for NAT-PMP. */
export class NatPmpClient implements GatewayClient {
  readonly protocol = 'natpmp' as const;
  readonly #options: NatPmpClientOptions;
  readonly #timeoutMs: number;

  constructor(options: NatPmpClientOptions = {}) {
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? 3000;
  }

  async map(request: MapRequest, signal: AbortSignal): Promise<MappedPort> {
    const gateway = this.#options.gateway ?? (await (this.#options.findGateway ?? defaultGateway)());
    const internalAddress =
      this.#options.internalAddress ?? (await localAddressToward(gateway, NAT_PMP_PORT));
    const mapping = await this.#request(gateway, signal, (pmp, deadline) =>
      pmp.map(request.internalPort, internalAddress, {
        protocol: 'udp',
        externalPort: request.externalPort ?? request.internalPort,
        // Sent as the lifetime field as it is: seconds (see the file's comment).
        ttl: request.lifetimeS,
        autoRefresh: false,
        signal: deadline,
      }),
    );
    if (mapping.externalHost === '' || mapping.externalPort === 0) {
      throw new PortMappingError(
        'failed',
        `NAT-PMP: gateway ${gateway} answered without a public address or port (${mapping.externalHost}:${mapping.externalPort})`,
      );
    }
    return {
      protocol: 'natpmp',
      gateway,
      internalAddress,
      internalPort: request.internalPort,
      externalAddress: mapping.externalHost,
      externalPort: mapping.externalPort,
      lifetimeS: request.lifetimeS,
    };
  }

  async unmap(mapping: MappedPort, signal: AbortSignal): Promise<void> {
    // RFC 6886 §3.4: lifetime 0 and suggested external port 0 delete the mapping.
    await this.#request(mapping.gateway, signal, (pmp, deadline) =>
      pmp.map(mapping.internalPort, '', {
        protocol: 'udp',
        externalPort: 0,
        ttl: 0,
        autoRefresh: false,
        signal: deadline,
      }),
    );
  }

  async close(): Promise<void> {
    // Nothing is held between requests.
  }

  /** One request on a fresh library gateway, with a deadline; the gateway is closed after. */
  async #request<T>(
    address: string,
    signal: AbortSignal,
    call: (pmp: Gateway, deadline: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const pmp = (this.#options.createGateway ?? pmpNat)(address);
    // The library re-emits socket errors (an unreachable network) as 'error' events.
    const socketFailed = new Promise<never>((_, reject) => {
      if (pmp instanceof EventEmitter) pmp.on('error', reject);
    });
    socketFailed.catch(() => {});
    const deadline = withTimeout(signal, this.#timeoutMs);
    try {
      return await Promise.race([call(pmp, deadline), socketFailed]);
    } catch (err) {
      signal.throwIfAborted();
      throw describe(err, address, this.#timeoutMs, deadline.aborted);
    } finally {
      try {
        await pmp.stop();
      } catch {
        // The socket was already closed after an error.
      }
    }
  }
}

function describe(err: unknown, gateway: string, timeoutMs: number, timedOut: boolean): PortMappingError {
  if (timedOut) {
    return new PortMappingError(
      'no-answer',
      `NAT-PMP: no answer from ${gateway}:${NAT_PMP_PORT} within ${timeoutMs / 1000} s`,
      { cause: err },
    );
  }
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number') {
    return new PortMappingError(
      'refused',
      `NAT-PMP: gateway ${gateway} refused (result ${code}: ${RESULT_CODES[code] ?? 'unknown result code'})`,
      { cause: err },
    );
  }
  const text = err instanceof Error ? err.message : String(err);
  return new PortMappingError('failed', `NAT-PMP: cannot reach ${gateway}: ${text}`, { cause: err });
}
