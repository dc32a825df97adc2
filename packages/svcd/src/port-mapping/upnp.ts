/**
 * UPnP-IGD v2 (`AddAnyPortMapping` of WANIPConnection:2) through `@achingbrain/nat-port-mapper`'s
 * `upnpNat`: the gateway is found by an SSDP search on the robot's interfaces, then kept for the
 * renewals and the removal (found again after a failure).
 *
 * Two things of the library (4.0.5) are worked around here: a lease shorter than 3600 s is sent
 * as 3600 s (so {@link MappedPort.lifetimeS} says 3600 and renewals follow it), and its `unmap`
 * sends `DeletePortMapping` with an empty `NewProtocol` and the internal port as the external
 * port, which miniupnpd does not delete; the removal here calls the same SOAP action with the
 * mapped port and `UDP` through the gateway's device, and falls back to `unmap` when the library's
 * shape differs.
 */
import { type Gateway, upnpNat } from '@achingbrain/nat-port-mapper';
import {
  type GatewayClient,
  type MappedPort,
  type MapRequest,
  PortMappingError,
  withTimeout,
} from './gateway-client.js';
import { localAddressToward } from './network.js';

/** The service whose actions map ports. */
const WAN_IP_CONNECTION_2 = 'urn:schemas-upnp-org:service:WANIPConnection:2';
/** The library never asks for a shorter lease. */
const LIBRARY_MIN_LEASE_S = 3600;

/** Options of {@link UpnpClient}. */
export interface UpnpClientOptions {
  /** Only a gateway at this address is used (`port_mapping_gateway`). */
  readonly gateway?: string;
  /** The robot's address to map to (its bound address); the one toward the gateway when absent. */
  readonly internalAddress?: string;
  /** How long the SSDP search waits for a gateway (default 5 s). */
  readonly searchTimeoutMs?: number;
  /** How long one SOAP request waits (default 5 s). */
  readonly timeoutMs?: number;
  /** The gateways an SSDP search finds, for tests (default: the library's search). */
  readonly findGateways?: (signal: AbortSignal) => AsyncIterable<Gateway>;
}

/** The part of the library's gateway device that sends a SOAP action. */
interface SoapDevice {
  run(
    service: string,
    action: string,
    args: [string, string | number][],
    options?: { signal?: AbortSignal },
  ): Promise<unknown>;
}

/** {@link GatewayClient} for UPnP-IGD v2. */
export class UpnpClient implements GatewayClient {
  readonly protocol = 'upnp' as const;
  readonly #options: UpnpClientOptions;
  readonly #searchTimeoutMs: number;
  readonly #timeoutMs: number;
  /** The gateway found by the last search, while it keeps answering. */
  #gateway: Gateway | undefined;

  constructor(options: UpnpClientOptions = {}) {
    this.#options = options;
    this.#searchTimeoutMs = options.searchTimeoutMs ?? 5000;
    this.#timeoutMs = options.timeoutMs ?? 5000;
  }

  async map(request: MapRequest, signal: AbortSignal): Promise<MappedPort> {
    const gateway = this.#gateway ?? (await this.#search(signal));
    const internalAddress =
      this.#options.internalAddress ?? (await localAddressToward(gateway.host, gateway.port));
    const deadline = withTimeout(signal, this.#timeoutMs);
    let mapped: Awaited<ReturnType<Gateway['map']>>;
    try {
      mapped = await gateway.map(request.internalPort, internalAddress, {
        protocol: 'udp',
        externalPort: request.externalPort ?? request.internalPort,
        ttl: request.lifetimeS * 1000,
        autoRefresh: false,
        description: 'svcd QUIC',
        signal: deadline,
      });
    } catch (err) {
      signal.throwIfAborted();
      this.#gateway = undefined;
      throw describe(err, 'the mapping', gateway.host, this.#timeoutMs, deadline.aborted);
    }
    this.#gateway = gateway;
    const mapping: MappedPort = {
      protocol: 'upnp',
      gateway: gateway.host,
      internalAddress,
      internalPort: request.internalPort,
      externalAddress: mapped.externalHost,
      externalPort: mapped.externalPort,
      lifetimeS: Math.max(request.lifetimeS, LIBRARY_MIN_LEASE_S),
    };
    if (mapped.externalHost === '' || !(mapped.externalPort > 0)) {
      await this.unmap(mapping, signal).catch(() => {});
      throw new PortMappingError(
        'refused',
        `UPnP: gateway ${gateway.host} mapped the port but reports no public address (GetExternalIPAddress gave ${JSON.stringify(mapped.externalHost)})`,
      );
    }
    return mapping;
  }

  async unmap(mapping: MappedPort, signal: AbortSignal): Promise<void> {
    const gateway = this.#gateway;
    if (gateway === undefined) {
      throw new PortMappingError('no-gateway', `UPnP: gateway ${mapping.gateway} is no longer known`);
    }
    const deadline = withTimeout(signal, this.#timeoutMs);
    const device = soapDevice(gateway);
    try {
      if (device === undefined) await gateway.unmap(mapping.internalPort, { signal: deadline });
      else
        await device.run(
          WAN_IP_CONNECTION_2,
          'DeletePortMapping',
          [
            ['NewRemoteHost', ''],
            ['NewExternalPort', mapping.externalPort],
            ['NewProtocol', 'UDP'],
          ],
          { signal: deadline },
        );
    } catch (err) {
      signal.throwIfAborted();
      throw describe(err, 'the removal', gateway.host, this.#timeoutMs, deadline.aborted);
    }
  }

  async close(): Promise<void> {
    // The library's `stop()` would send its own removal (see the file's comment); nothing else
    // is held: SOAP requests are one HTTP request each.
    this.#gateway = undefined;
  }

  /** The first IPv4 gateway an SSDP search finds (the configured one only, when set). */
  async #search(signal: AbortSignal): Promise<Gateway> {
    const search = withTimeout(signal, this.#searchTimeoutMs);
    const found =
      this.#options.findGateways ??
      ((s: AbortSignal) => upnpNat({ autoRefresh: false }).findGateways({ signal: s, searchInterval: 1000 }));
    try {
      for await (const gateway of found(search)) {
        if (gateway.family !== 'IPv4') continue;
        if (this.#options.gateway !== undefined && gateway.host !== this.#options.gateway) continue;
        return gateway;
      }
    } catch (err) {
      signal.throwIfAborted();
      if (!search.aborted) {
        throw new PortMappingError('failed', `UPnP: the SSDP search failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
    signal.throwIfAborted();
    const which =
      this.#options.gateway === undefined
        ? 'no UPnP-IGD v2 gateway'
        : `the gateway ${this.#options.gateway} did not`;
    throw new PortMappingError(
      'no-answer',
      `UPnP: ${which} answered an SSDP search within ${this.#searchTimeoutMs / 1000} s`,
    );
  }
}

/** The library's device behind a gateway, when it has the shape this file relies on. */
function soapDevice(gateway: Gateway): SoapDevice | undefined {
  const device = (gateway as unknown as { gateway?: Partial<SoapDevice> }).gateway;
  return typeof device?.run === 'function' ? (device as SoapDevice) : undefined;
}

function describe(
  err: unknown,
  what: string,
  gateway: string,
  timeoutMs: number,
  timedOut: boolean,
): PortMappingError {
  if (timedOut) {
    return new PortMappingError(
      'no-answer',
      `UPnP: gateway ${gateway} did not answer within ${timeoutMs / 1000} s`,
      { cause: err },
    );
  }
  const text = err instanceof Error ? err.message : String(err);
  // The library's SOAP fault ("Code 501 - ActionFailed") is an error named UPnPError.
  if (err instanceof Error && err.name === 'UPnPError') {
    return new PortMappingError('refused', `UPnP: gateway ${gateway} refused ${what} (${text})`, {
      cause: err,
    });
  }
  return new PortMappingError('failed', `UPnP: gateway ${gateway}: ${text}`, { cause: err });
}
