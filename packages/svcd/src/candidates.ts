import { isIP } from 'node:net';
import { type NetworkInterfaceInfo, networkInterfaces } from 'node:os';
import type { SignalCandidate } from '@svc/wire';
import { MAX_CANDIDATES } from './signalling/announce.js';

/**
 * The addresses a robot announces for its QUIC port (`announce.candidates`): its own host
 * addresses, read from the network interfaces each time, so a new DHCP lease or a second link
 * shows at the next announce, then the public address a gateway mapped (`port_mapping`).
 */

/** A snapshot of the network interfaces, shaped like `os.networkInterfaces()`. */
export type InterfaceTable = Readonly<Record<string, readonly NetworkInterfaceInfo[] | undefined>>;

/** Options of {@link hostCandidates}. */
export interface HostCandidateOptions {
  /** The QUIC port (`quic_port`, or the port actually bound). */
  readonly port: number;
  /** `ipv6` of the configuration: announce global and unique-local IPv6 addresses too. */
  readonly ipv6: boolean;
  /**
   * Addresses the daemon binds explicitly (its `--host` option): when one is given and it is not
   * a wildcard (`0.0.0.0`, `::`), only these are announced. Each must be an IP address literal.
   */
  readonly addresses?: readonly string[];
  /** The interface table; `os.networkInterfaces()` by default (tests pass their own). */
  readonly interfaces?: () => InterfaceTable;
}

/** Options of {@link candidateSource}. */
export interface CandidateSourceOptions extends HostCandidateOptions {
  /**
   * The `mapped` candidate of port mapping (`port_mapping = true`, the `PortMapper`), read on
   * every announce; `undefined` while no gateway holds a mapping.
   */
  readonly mapped?: () => SignalCandidate | undefined;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The host candidates of a robot, IPv4 first, in interface order, without duplicates:
 *
 * - every non-internal IPv4 address;
 * - with `ipv6`, every IPv6 address that a pilot elsewhere could reach: global unicast and
 *   unique-local (`fc00::/7`), never link-local (`fe80::/10`), loopback, multicast or
 *   IPv4-mapped;
 * - loopback (`127.0.0.1`, and `::1` with `ipv6`) only when nothing else is found, so a laptop
 *   with no network still works in development.
 *
 * An explicit address list (the daemon's `--host`) replaces all of this.
 *
 * @throws TypeError when an explicit address is not an IP address literal, or the port is not
 *   a port number.
 */
export function hostCandidates(options: HostCandidateOptions): SignalCandidate[] {
  const { port } = options;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TypeError(`candidate port must be an integer from 1 to 65535, got ${String(port)}`);
  }
  const explicit = (options.addresses ?? []).filter((a) => !WILDCARDS.has(a));
  if (explicit.length > 0)
    return uniqueCandidates(explicit.map((address) => explicitCandidate(address, port)));

  const table = (options.interfaces ?? networkInterfaces)();
  const v4: SignalCandidate[] = [];
  const v6: SignalCandidate[] = [];
  const loopback: SignalCandidate[] = [];
  for (const entries of Object.values(table)) {
    for (const entry of entries ?? []) {
      const family = familyOf(entry);
      if (family === 'ipv4') {
        if (entry.internal || isLoopbackV4(entry.address))
          loopback.push(candidate(entry.address, port, 'ipv4'));
        else v4.push(candidate(entry.address, port, 'ipv4'));
      } else if (family === 'ipv6' && options.ipv6) {
        const address = stripZone(entry.address);
        if (address === '::1') loopback.push(candidate(address, port, 'ipv6'));
        else if (!entry.internal && isReachableV6(address)) v6.push(candidate(address, port, 'ipv6'));
      }
    }
  }
  const found = uniqueCandidates([...v4, ...v6]);
  if (found.length > 0) return found;
  const fallback = uniqueCandidates(loopback);
  if (fallback.length > 0) return fallback;
  // Not even a loopback interface reported (a stripped container): the address always exists.
  return [candidate('127.0.0.1', port, 'ipv4'), ...(options.ipv6 ? [candidate('::1', port, 'ipv6')] : [])];
}

/**
 * A function for the signalling client's `announce` that reads {@link hostCandidates} afresh on
 * every call, followed by the mapped candidate when there is one. The mapped candidate always
 * fits in an announce ({@link MAX_CANDIDATES}), and is left out when it is one of the host
 * candidates already (a robot with a public address, no NAT).
 */
export function candidateSource(options: CandidateSourceOptions): () => SignalCandidate[] {
  const { mapped, ...hostOptions } = options;
  return () => {
    const hosts = hostCandidates(hostOptions);
    const extra = mapped?.();
    if (extra === undefined) return hosts;
    if (hosts.some((h) => h.address === extra.address && h.port === extra.port)) return hosts;
    return [...hosts.slice(0, MAX_CANDIDATES - 1), extra];
  };
}

function explicitCandidate(raw: string, port: number): SignalCandidate {
  const address = stripZone(raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw);
  const version = isIP(address);
  if (version === 0) {
    throw new TypeError(
      `cannot announce ${JSON.stringify(raw)}: the address to bind must be an IP address (e.g. 192.0.2.7 or 2001:db8::7), not a host name`,
    );
  }
  return candidate(address, port, version === 4 ? 'ipv4' : 'ipv6');
}

function candidate(address: string, port: number, family: 'ipv4' | 'ipv6'): SignalCandidate {
  return { address, port, family, kind: 'host' };
}

function uniqueCandidates(list: readonly SignalCandidate[]): SignalCandidate[] {
  const seen = new Set<string>();
  return list.filter((c) => {
    const key = c.address.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Node reports `family` as `'IPv4'`/`'IPv6'` (and as 4/6 in some 18.x releases). */
function familyOf(entry: NetworkInterfaceInfo): 'ipv4' | 'ipv6' | undefined {
  const family: unknown = entry.family;
  if (family === 'IPv4' || family === 4) return 'ipv4';
  if (family === 'IPv6' || family === 6) return 'ipv6';
  return undefined;
}

function stripZone(address: string): string {
  const percent = address.indexOf('%');
  return percent < 0 ? address : address.slice(0, percent);
}

function isLoopbackV4(address: string): boolean {
  return address.startsWith('127.');
}

/** The first 16 bits of an IPv6 address literal (`isIP` already said it is one), or undefined. */
function firstHextet(address: string): number | undefined {
  if (address.startsWith('::')) return 0;
  const head = address.split(':')[0];
  if (head === undefined || head === '') return undefined;
  const value = Number.parseInt(head, 16);
  return Number.isNaN(value) ? undefined : value;
}

/** Global unicast (`2000::/3`) or unique-local (`fc00::/7`). */
function isReachableV6(address: string): boolean {
  if (isIP(address) !== 6) return false;
  const first = firstHextet(address);
  if (first === undefined) return false;
  const globalUnicast = (first & 0xe000) === 0x2000;
  const uniqueLocal = (first & 0xfe00) === 0xfc00;
  return globalUnicast || uniqueLocal;
}
