import { runCommand } from './commands.js';
import type { NatMode } from './router.js';

/** Options of {@link createTopology}. */
export interface TopologyOptions {
  /** What the router does to IPv4 ({@link NatMode}). Default `masquerade`. */
  readonly nat?: NatMode;
  /** IPv4 addresses on every link. Default true. */
  readonly ipv4?: boolean;
  /** ULA IPv6 addresses on every link, routed without NAT. Default false. */
  readonly ipv6?: boolean;
  /**
   * A pilot side: a `pilot` namespace behind a second router (`pilot-router`) with this NAT on
   * IPv4, linked to the internet namespace, which then routes between the two routers. IPv4
   * only. Default: no pilot side.
   */
  readonly pilotNat?: NatMode;
  /** `false`: the pilot's router drops every UDP datagram the pilot sends out. Default true. */
  readonly pilotUdp?: boolean;
}

/** The IPv4 addresses of a topology's pilot side ({@link TopologyOptions.pilotNat}). */
export interface PilotAddresses {
  /** The internet namespace on the link to the pilot's router. */
  readonly internet: string;
  /** The pilot's router's WAN address (the pilot's public address behind its NAT). */
  readonly routerWan: string;
  /** The pilot's router's LAN address, the pilot's gateway. */
  readonly routerLan: string;
  /** The pilot. */
  readonly pilot: string;
}

/** The pilot side's addresses: one plan, as the robot side's. */
export const PILOT_ADDRESSES: PilotAddresses = Object.freeze({
  internet: '198.18.2.1',
  routerWan: '198.18.2.2',
  routerLan: '198.20.0.1',
  pilot: '198.20.0.2',
});

/** The addresses of one family in a topology. */
export interface HostAddresses {
  /** The test process, on the root side of the link to the internet namespace. */
  readonly test: string;
  /** The internet namespace on the link to the test process: where the test calls svc-cloud. */
  readonly cloud: string;
  /** The internet namespace on the link to the router: where the robot reaches svc-cloud. */
  readonly cloudWan: string;
  /** The router's WAN address (the robot's public address behind a NAT). */
  readonly routerWan: string;
  /** The router's LAN address, the robot's gateway (miniupnpd listens here). */
  readonly routerLan: string;
  /** The robot. */
  readonly robot: string;
}

/** `HostAddresses` when the family is on, `undefined` when off, either when not known statically. */
type AddressesIf<Flag, Default extends boolean> = Flag extends true
  ? HostAddresses
  : Flag extends false
    ? undefined
    : Default extends true
      ? HostAddresses
      : undefined;

/** The value of an option key in the options type, or undefined when the key is absent. */
type OptionOf<O, K extends keyof TopologyOptions> = K extends keyof O ? O[K] : undefined;

/** The addresses of a topology, by family; undefined for a family that is off. */
export interface TopologyAddresses {
  readonly ipv4: HostAddresses | undefined;
  readonly ipv6: HostAddresses | undefined;
}

/** The addresses of a topology made with options `O`: a family is there when `O` turns it on. */
export interface AddressesFor<O extends TopologyOptions> extends TopologyAddresses {
  readonly ipv4: AddressesIf<OptionOf<O, 'ipv4'>, true>;
  readonly ipv6: AddressesIf<OptionOf<O, 'ipv6'>, false>;
}

/** Interface names inside the namespaces (each namespace has its own, so they are fixed). */
export const INTERNET_TEST = 'test0';
export const INTERNET_ROUTER = 'isp0';
/** The internet namespace's link to the pilot's router. */
export const INTERNET_PILOT_ROUTER = 'isp1';
export const ROBOT_LAN = 'eth0';

/** Root-side links `svct-test0` … `svct-test63`: one slot per topology alive on the machine. */
export const SLOTS = 64;
export const TEST_LINK_PREFIX = 'svct-test';

/**
 * The addresses of a topology. Only the link to the test process depends on the slot, so
 * topologies of test files running at the same time do not collide in the root namespace:
 * slot k has 198.18.0.(4k+1)/30 (internet) and 198.18.0.(4k+2)/30 (test), and
 * fd00:18:0:k::1/64 and fd00:18:0:k::2/64.
 */
export function plan(slot: number): { readonly ipv4: HostAddresses; readonly ipv6: HostAddresses } {
  const block = slot.toString(16);
  return {
    ipv4: Object.freeze({
      test: `198.18.0.${4 * slot + 2}`,
      cloud: `198.18.0.${4 * slot + 1}`,
      cloudWan: '198.18.1.1',
      routerWan: '198.18.1.2',
      routerLan: '198.19.0.1',
      robot: '198.19.0.2',
    }),
    ipv6: Object.freeze({
      test: canonicalIpv6(`fd00:18:0:${block}::2`),
      cloud: canonicalIpv6(`fd00:18:0:${block}::1`),
      cloudWan: 'fd00:18:1::1',
      routerWan: 'fd00:18:1::2',
      routerLan: 'fd00:19::1',
      robot: 'fd00:19::2',
    }),
  };
}

/** The RFC 5952 form of an IPv6 address (`fd00:18:0:0::1` is `fd00:18::1`), as Node prints it. */
function canonicalIpv6(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1);
}

/** Whether something that is not the kit already uses the root-side addresses of this slot. */
export async function rootSlotAddressTaken(ip: string, slot: number): Promise<boolean> {
  const addresses = plan(slot);
  const v4 = await runCommand(ip, ['-o', 'addr', 'show', 'to', `${addresses.ipv4.cloud}/30`]);
  const v6 = await runCommand(ip, ['-o', 'addr', 'show', 'to', `${addresses.ipv6.cloud}/64`]);
  return v4.stdout.trim() !== '' || v6.stdout.trim() !== '';
}
