import { isIPv4 } from 'node:net';
import { isRecord, mustRun, NetnsError, runCommand, toolPath } from './commands.js';

/**
 * What the router does to IPv4 between the robot LAN and the internet:
 * - `none`: routing only; the internet namespace gets a route to the robot LAN.
 * - `masquerade`: a NAT the way Linux routers are, with source ports kept when free, so one
 *   robot socket appears under one external port to every destination (endpoint-independent
 *   mapping, in practice).
 * - `symmetric`: masquerade with `fully-random` ports, so each destination sees its own external port.
 *
 * With a NAT nothing from the internet reaches the robot LAN unless a port is forwarded, and the
 * router drops what arrives for itself unasked, as home routers' firewalls do: such a packet
 * leaves no connection-tracking entry behind, which would otherwise take the external port a
 * later outgoing flow of the LAN host needs, and make the NAT pick another (hole punching fails
 * on that). IPv6
 * is never translated nor filtered: the robot and the internet reach each other directly.
 */
export type NatMode = 'none' | 'masquerade' | 'symmetric';

/** The nftables table of the kit in the router namespace (family `ip`: IPv6 passes untouched). */
export const NAT_TABLE = 'svct';

/** Interface names inside the router namespace. */
export const ROUTER_WAN = 'wan0';
export const ROUTER_LAN = 'lan0';

/**
 * The router's ruleset for a NAT mode (`none` translates nothing); `blockUdpOut` drops every UDP
 * datagram from the LAN to the WAN, as a network that allows only TCP does.
 */
export function natRuleset(nat: NatMode, options: { readonly blockUdpOut?: boolean } = {}): string {
  const masquerade =
    nat === 'none'
      ? ''
      : `oifname "${ROUTER_WAN}" ${nat === 'symmetric' ? 'masquerade fully-random' : 'masquerade'}`;
  const udpOut =
    options.blockUdpOut === true
      ? `iifname "${ROUTER_LAN}" oifname "${ROUTER_WAN}" meta l4proto udp drop`
      : '';
  return `table ip ${NAT_TABLE} {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
  }
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    ${masquerade}
  }
  chain input {
    type filter hook input priority filter; policy accept;
    iifname "${ROUTER_WAN}" ct state established,related accept
    iifname "${ROUTER_WAN}" drop
  }
  chain forward {
    type filter hook forward priority filter; policy accept;
    ${udpOut}
    iifname "${ROUTER_WAN}" oifname "${ROUTER_LAN}" ct state established,related accept
    iifname "${ROUTER_WAN}" oifname "${ROUTER_LAN}" ct status dnat accept
    iifname "${ROUTER_WAN}" oifname "${ROUTER_LAN}" drop
  }
}
`;
}

/** A port forwarded on the router: datagrams (or connections) to the router's WAN port go to the LAN host. */
export interface PortForwardRule {
  readonly protocol: 'udp' | 'tcp';
  /** The port on the router's WAN address. */
  readonly wanPort: number;
  /** The LAN host; the robot by default. */
  readonly lanAddress?: string;
  readonly lanPort: number;
}

/** A forwarded port; remove it to close the hole again. */
export interface PortForward {
  /** The nftables rule handle (in the chain `prerouting` of the table `svct`). */
  readonly handle: number;
  readonly rule: Required<PortForwardRule>;
  /**
   * Deletes the rule and forgets the router's connection-tracking entries of the port, so packets
   * already flowing stop reaching the LAN at once. Safe to call more than once.
   */
  remove(): Promise<void>;
}

/** A DNAT rule in the router's ruleset, whoever added it (the kit, or miniupnpd). */
export interface DnatRule {
  readonly family: string;
  readonly table: string;
  readonly chain: string;
  readonly handle: number;
  /** Undefined when the rule matches no single transport protocol. */
  readonly protocol: 'udp' | 'tcp' | undefined;
  /** Undefined when the rule matches no single destination port. */
  readonly wanPort: number | undefined;
  readonly lanAddress: string | undefined;
  readonly lanPort: number | undefined;
}

function checkPort(name: string, port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new TypeError(`${name} must be an integer from 1 to 65535, got ${port}`);
  }
}

/** The checked rule with its defaults. */
export function completeRule(rule: PortForwardRule, robot: string): Required<PortForwardRule> {
  if (rule.protocol !== 'udp' && rule.protocol !== 'tcp') {
    throw new TypeError(`protocol must be 'udp' or 'tcp', got ${String(rule.protocol)}`);
  }
  checkPort('wanPort', rule.wanPort);
  checkPort('lanPort', rule.lanPort);
  const lanAddress = rule.lanAddress ?? robot;
  if (!isIPv4(lanAddress)) throw new TypeError(`lanAddress must be an IPv4 address, got ${lanAddress}`);
  return { protocol: rule.protocol, wanPort: rule.wanPort, lanAddress, lanPort: rule.lanPort };
}

/**
 * Deletes the router's conntrack entries of flows towards its WAN port: an entry made before a
 * forward was added (or removed) would keep steering that flow the old way until it times out
 * (30 s for UDP), as on a real Linux router.
 */
export async function forgetFlows(
  ip: string,
  router: string,
  rule: Required<PortForwardRule>,
  routerWan: string,
): Promise<void> {
  const conntrack = toolPath('conntrack');
  const args = ['netns', 'exec', router, conntrack, '-D', '-p', rule.protocol];
  args.push('--orig-dst', routerWan, '--orig-port-dst', String(rule.wanPort));
  const result = await runCommand(ip, args);
  // conntrack exits with 1 when no entry matched; its summary line says how many were deleted.
  if (result.code !== 0 && !/\b0 flow entries have been deleted/.test(result.stderr)) {
    throw new NetnsError(
      'command-failed',
      `\`conntrack ${args.slice(4).join(' ')}\` in ${router} failed: ${result.stderr.trim()}`,
    );
  }
}

/** Adds the DNAT rule and returns its handle. */
export async function addForward(
  ip: string,
  router: string,
  rule: Required<PortForwardRule>,
): Promise<number> {
  const nft = toolPath('nft');
  const out = await mustRun(ip, [
    'netns',
    'exec',
    router,
    nft,
    '--json',
    '--echo',
    '--handle',
    'add',
    'rule',
    'ip',
    NAT_TABLE,
    'prerouting',
    'iifname',
    ROUTER_WAN,
    rule.protocol,
    'dport',
    String(rule.wanPort),
    'dnat',
    'to',
    `${rule.lanAddress}:${rule.lanPort}`,
  ]);
  const handle = findHandle(JSON.parse(out) as unknown);
  if (handle === undefined) {
    throw new NetnsError('command-failed', `nft did not report the handle of the new rule: ${out}`);
  }
  return handle;
}

/** Deletes a rule of the kit's prerouting chain; a rule already gone is fine. */
export async function deleteForward(ip: string, router: string, handle: number): Promise<void> {
  const nft = toolPath('nft');
  const result = await runCommand(ip, [
    'netns',
    'exec',
    router,
    nft,
    'delete',
    'rule',
    'ip',
    NAT_TABLE,
    'prerouting',
    'handle',
    String(handle),
  ]);
  if (result.code !== 0 && !/No such file or directory/.test(result.stderr)) {
    throw new NetnsError(
      'command-failed',
      `cannot delete nft rule ${handle} in ${router}: ${result.stderr.trim()}`,
    );
  }
}

/** The `handle` of the first rule in `nft --json --echo --handle` output. */
function findHandle(json: unknown): number | undefined {
  if (!isRecord(json) || !Array.isArray(json.nftables)) return undefined;
  for (const item of json.nftables) {
    if (!isRecord(item)) continue;
    const action = item.add ?? item.insert;
    if (isRecord(action) && isRecord(action.rule) && typeof action.rule.handle === 'number') {
      return action.rule.handle;
    }
  }
  return undefined;
}

/**
 * The DNAT rules in a ruleset printed by `nft --json list ruleset`: the rules with a `dnat`
 * statement, with the protocol and destination port they match (as `udp dport`, `th dport`
 * with `meta l4proto`, or `ip protocol`).
 */
export function dnatRules(json: unknown): DnatRule[] {
  if (!isRecord(json) || !Array.isArray(json.nftables)) return [];
  const rules: DnatRule[] = [];
  for (const item of json.nftables) {
    if (!isRecord(item) || !isRecord(item.rule)) continue;
    const rule = item.rule;
    const expr = Array.isArray(rule.expr) ? rule.expr : [];
    let protocol: 'udp' | 'tcp' | undefined;
    let wanPort: number | undefined;
    let dnat: Record<string, unknown> | undefined;
    for (const statement of expr) {
      if (!isRecord(statement)) continue;
      if (isRecord(statement.dnat)) dnat = statement.dnat;
      const match = statement.match;
      if (!isRecord(match) || match.op !== '==' || !isRecord(match.left)) continue;
      const { payload, meta } = match.left;
      if (isRecord(payload) && payload.field === 'dport' && typeof match.right === 'number') {
        wanPort = match.right;
        if (payload.protocol === 'udp' || payload.protocol === 'tcp') protocol = payload.protocol;
      }
      const isL4proto =
        (isRecord(meta) && meta.key === 'l4proto') ||
        (isRecord(payload) && payload.protocol === 'ip' && payload.field === 'protocol');
      if (isL4proto && (match.right === 'udp' || match.right === 'tcp')) protocol = match.right;
    }
    if (dnat === undefined) continue;
    rules.push({
      family: String(rule.family),
      table: String(rule.table),
      chain: String(rule.chain),
      handle: typeof rule.handle === 'number' ? rule.handle : -1,
      protocol,
      wanPort,
      lanAddress: typeof dnat.addr === 'string' ? dnat.addr : undefined,
      lanPort: typeof dnat.port === 'number' ? dnat.port : undefined,
    });
  }
  return rules;
}
