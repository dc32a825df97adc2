/**
 * The production {@link GatewayClient}s, one per protocol `port_mapping_protocols` names, in its
 * order.
 */
import type { GatewayClient, PortMappingProtocol } from './gateway-client.js';
import { NatPmpClient } from './nat-pmp.js';
import { UpnpClient } from './upnp.js';

/** Options of {@link createGatewayClients}. */
export interface GatewayClientsOptions {
  /** `port_mapping_protocols`: which protocols to ask, first first. */
  readonly protocols: readonly PortMappingProtocol[];
  /** `port_mapping_gateway`: the gateway to ask instead of the default gateway (NAT-PMP) or any found (UPnP). */
  readonly gateway?: string;
  /** The robot's address to map to, when the daemon binds one; found per gateway otherwise. */
  readonly internalAddress?: string;
}

/** One client per protocol, in the configured order. */
export function createGatewayClients(options: GatewayClientsOptions): GatewayClient[] {
  const shared = {
    ...(options.gateway !== undefined && { gateway: options.gateway }),
    ...(options.internalAddress !== undefined && { internalAddress: options.internalAddress }),
  };
  return options.protocols.map((protocol): GatewayClient => {
    switch (protocol) {
      case 'natpmp':
        return new NatPmpClient(shared);
      case 'upnp':
        return new UpnpClient(shared);
      default: {
        const unknown: never = protocol;
        throw new TypeError(`unknown port mapping protocol ${String(unknown)}`);
      }
    }
  });
}
