/**
 * What port mapping needs to know of the robot's own network: its IPv4 default gateway (the
 * NAT-PMP server, RFC 6886 §3) and its address toward a gateway (the internal client a mapping
 * forwards to).
 */
import { createSocket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { PortMappingError } from './gateway-client.js';

/** Linux's IPv4 routing table. */
export const ROUTE_TABLE_FILE = '/proc/net/route';

/** `RTF_GATEWAY`: the route goes through a gateway. */
const RTF_GATEWAY = 0x2;

/**
 * The gateway of the IPv4 default route with the lowest metric in the text of
 * `/proc/net/route`, or `undefined` when there is none. Addresses there are 32-bit hex in host
 * (little-endian) byte order: `010013C6` is 198.19.0.1.
 */
export function defaultGatewayFromRouteTable(text: string): string | undefined {
  let best: { gateway: string; metric: number } | undefined;
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const [, destination, gatewayHex, flagsHex, , , metricText, mask] = fields;
    if (destination !== '00000000' || mask !== '00000000' || gatewayHex === undefined) continue;
    const flags = Number.parseInt(flagsHex ?? '0', 16);
    if ((flags & RTF_GATEWAY) === 0 || !/^[0-9A-Fa-f]{8}$/.test(gatewayHex)) continue;
    const value = Number.parseInt(gatewayHex, 16);
    const gateway = [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, value >>> 24].join('.');
    const metric = Number(metricText ?? 0);
    if (best === undefined || metric < best.metric) best = { gateway, metric };
  }
  return best?.gateway;
}

/**
 * The robot's IPv4 default gateway, read from `/proc/net/route` each time (a new DHCP lease may
 * bring another).
 *
 * @throws PortMappingError (`no-gateway`) when the table cannot be read or has no default route.
 */
export async function defaultGateway(file = ROUTE_TABLE_FILE): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new PortMappingError(
      'no-gateway',
      `cannot read the routing table (${file}: ${(err as Error).message}); set port_mapping_gateway`,
      { cause: err },
    );
  }
  const gateway = defaultGatewayFromRouteTable(text);
  if (gateway === undefined) {
    throw new PortMappingError(
      'no-gateway',
      'this host has no IPv4 default route, so no gateway to ask; set port_mapping_gateway',
    );
  }
  return gateway;
}

/**
 * The robot's own IPv4 address on the way to `host`: the source address the kernel picks for a
 * UDP socket connected there (connecting a UDP socket sends nothing).
 *
 * @throws PortMappingError (`failed`) when there is no route to `host`.
 */
export async function localAddressToward(host: string, port: number): Promise<string> {
  if (!isIPv4(host)) throw new TypeError(`expected an IPv4 address, got ${JSON.stringify(host)}`);
  const socket = createSocket('udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(port, host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return socket.address().address;
  } catch (err) {
    throw new PortMappingError('failed', `no route to the gateway ${host}: ${(err as Error).message}`, {
      cause: err,
    });
  } finally {
    socket.close();
  }
}
