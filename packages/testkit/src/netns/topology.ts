import { type ChildProcess, type SpawnOptions, spawn as spawnProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  type AddressesFor,
  type HostAddresses,
  INTERNET_PILOT_ROUTER,
  INTERNET_ROUTER,
  INTERNET_TEST,
  PILOT_ADDRESSES,
  type PilotAddresses,
  plan,
  ROBOT_LAN,
  rootSlotAddressTaken,
  SLOTS,
  TEST_LINK_PREFIX,
  type TopologyAddresses,
  type TopologyOptions,
} from './addresses.js';
import { type PacketCapture, startCapture } from './capture.js';
import {
  type CommandResult,
  endChildren,
  isRecord,
  mustRun,
  NetnsError,
  type RunCommandOptions,
  requireRoot,
  runCommand,
  shellQuote,
  toolPath,
  track,
  waitUntil,
} from './commands.js';
import {
  killNamespaceProcesses,
  listNamespaces,
  namespaceName,
  newTag,
  PILOT_ROLES,
  ROLES,
  type Role,
  removeLeftovers,
} from './names.js';
import {
  addForward,
  completeRule,
  type DnatRule,
  deleteForward,
  dnatRules,
  forgetFlows,
  type NatMode,
  natRuleset,
  type PortForward,
  type PortForwardRule,
  ROUTER_LAN,
  ROUTER_WAN,
} from './router.js';

/** Interface names: inside the namespaces they are fixed, the test process's side is per topology. */
export interface TopologyInterfaces {
  /** The test process's side of the link to the internet namespace, in the root namespace. */
  readonly test: string;
  readonly internet: { readonly test: string; readonly router: string };
  readonly router: { readonly wan: string; readonly lan: string };
  readonly robot: { readonly router: string };
}

/** The namespaces of a topology by role: three always, the pilot side's two with `pilotNat`. */
export type TopologyNamespaces = Readonly<Record<'internet' | 'router' | 'robot', string>> &
  Readonly<Partial<Record<'pilot-router' | 'pilot', string>>>;

/** A namespace by role (`'robot'`) or by its name (`topo.namespaces.robot`). */
export type NamespaceRef = Role | (string & Record<never, never>);

/**
 * The topology {@link createTopology} returns for options `O`, with the address families typed as
 * present or absent: `let topo: TopologyFor<{ ipv6: true }>`.
 */
export type TopologyFor<O extends TopologyOptions> = Topology<AddressesFor<O>>;

/** What a command run by {@link Topology.run} ended with. */
export type RunResult = CommandResult;

/**
 * Three network namespaces the test made: `internet` (svc-cloud, the pilot's Chromium), `router`
 * (NAT, miniupnpd) and `robot` (svcd, cameras on 127.0.0.1), plus a link from the internet
 * namespace to the test process. No route leads to the machine's real interfaces.
 */
export interface Topology<A extends TopologyAddresses = TopologyAddresses> {
  /** The namespace names, for tools that take one (`ip netns exec NAME`); the pilot side's when it has one. */
  readonly namespaces: TopologyNamespaces;
  /** The addresses by family; see {@link createTopology} for the plan. */
  readonly addresses: A;
  readonly interfaces: TopologyInterfaces;
  readonly nat: NatMode;
  /**
   * The pilot side's addresses (IPv4), when the topology has one ({@link TopologyOptions.pilotNat}):
   * its namespaces are the roles `pilot-router` and `pilot`.
   */
  readonly pilot: PilotAddresses | undefined;
  /**
   * Starts a process inside a namespace (through `ip netns exec`), in a process group of its
   * own; {@link Topology.close} kills it if it still runs.
   */
  spawn(ns: NamespaceRef, command: string, args?: readonly string[], options?: SpawnOptions): ChildProcess;
  /** Runs a command inside a namespace to its end; resolves whatever the exit code. */
  run(
    ns: NamespaceRef,
    command: string,
    args?: readonly string[],
    options?: RunCommandOptions,
  ): Promise<RunResult>;
  /**
   * Writes an executable shell script that runs `executable "$@"` inside the namespace, and
   * returns its path: for Playwright's `executablePath`, and helpers that take a binary path.
   */
  wrapperFor(ns: NamespaceRef, executable: string): string;
  /**
   * Starts tcpdump on an interface of a namespace (`any` for all), with an optional BPF filter
   * such as `udp port 5000`; resolves once tcpdump listens.
   */
  capture(ns: NamespaceRef, iface: string, filter?: string): Promise<PacketCapture>;
  /**
   * Forwards a port of the router's WAN address to a LAN host (nft DNAT), at once also for flows
   * the router already tracks. Needs a NAT (`masquerade` or `symmetric`) and IPv4.
   */
  forwardPort(rule: PortForwardRule): Promise<PortForward>;
  /** The router's whole nftables ruleset as `nft list ruleset` prints it (miniupnpd's tables too). */
  routerRuleset(): Promise<string>;
  /** Every DNAT rule in the router's ruleset: the kit's forwards and the mappings miniupnpd made. */
  routerDnatRules(): Promise<DnatRule[]>;
  /**
   * Kills every process in the namespaces (tracked or not), deletes the links and namespaces,
   * removes the temporary files, and checks that nothing is left. Safe to call more than once.
   */
  close(): Promise<void>;
}

const READY_TIMEOUT_MS = 10_000;
const CLOSE_TIMEOUT_MS = 10_000;
const TERM_GRACE_MS = 3000;

/** Writes `/proc/sys` values inside a namespace: one `sh`, the paths and values as arguments. */
const SYSCTL_SCRIPT = 'while [ "$#" -gt 1 ]; do printf "%s" "$2" > "$1" || exit 1; shift 2; done';

/** Whether the kernel has IPv6 at all (not booted with `ipv6.disable=1`). */
const KERNEL_IPV6 = '/proc/sys/net/ipv6';

type State =
  | { readonly kind: 'open'; readonly children: Set<ChildProcess> }
  | { readonly kind: 'closing'; readonly done: Promise<void> };

function isRole(ns: string): ns is Role {
  return (ROLES as readonly string[]).includes(ns) || (PILOT_ROLES as readonly string[]).includes(ns);
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The pilot side of a topology, as {@link createTopology} was asked for it. */
interface PilotSide {
  readonly nat: NatMode;
  readonly udp: boolean;
}

class NamespaceTopology<O extends TopologyOptions> implements TopologyFor<O> {
  readonly namespaces: TopologyNamespaces;
  /** Every role's name, created or not. */
  readonly #names: Readonly<Record<Role, string>>;
  readonly nat: NatMode;
  readonly #pilot: PilotSide | undefined;
  /** The roles whose namespaces this topology has. */
  readonly #roles: readonly Role[];
  readonly #ip: string;
  readonly #tempDir: string;
  readonly #ipv4: boolean;
  readonly #ipv6: boolean;
  #state: State = { kind: 'open', children: new Set() };
  /** The slot, from the moment its root-side link exists; the addresses follow from it. */
  #slot: number | undefined;
  #addresses: AddressesFor<O> | undefined;
  #files = 0;

  constructor(ip: string, tag: string, nat: NatMode, ipv4: boolean, ipv6: boolean, pilot?: PilotSide) {
    this.#ip = ip;
    this.nat = nat;
    this.#pilot = pilot;
    this.#roles = pilot === undefined ? ROLES : [...ROLES, ...PILOT_ROLES];
    this.#ipv4 = ipv4;
    this.#ipv6 = ipv6;
    this.#names = Object.freeze({
      internet: namespaceName(tag, 'internet'),
      router: namespaceName(tag, 'router'),
      robot: namespaceName(tag, 'robot'),
      'pilot-router': namespaceName(tag, 'pilot-router'),
      pilot: namespaceName(tag, 'pilot'),
    });
    this.namespaces = Object.freeze(
      Object.fromEntries(this.#roles.map((role) => [role, this.#names[role]])),
    ) as TopologyNamespaces;
    this.#tempDir = mkdtempSync(join(tmpdir(), `svct-${tag}-`));
  }

  get pilot(): PilotAddresses | undefined {
    return this.#pilot === undefined ? undefined : PILOT_ADDRESSES;
  }

  get addresses(): AddressesFor<O> {
    if (this.#addresses === undefined) throw new Error('internal: the topology has no slot yet');
    return this.#addresses;
  }

  get interfaces(): TopologyInterfaces {
    if (this.#slot === undefined) throw new Error('internal: the topology has no slot yet');
    return {
      test: `${TEST_LINK_PREFIX}${this.#slot}`,
      internet: { test: INTERNET_TEST, router: INTERNET_ROUTER },
      router: { wan: ROUTER_WAN, lan: ROUTER_LAN },
      robot: { router: ROBOT_LAN },
    };
  }

  #open(): Extract<State, { kind: 'open' }> {
    if (this.#state.kind !== 'open') throw new NetnsError('closed', 'the topology is closed');
    return this.#state;
  }

  /** The namespace name for a role or a name of this topology. */
  #resolve(ns: NamespaceRef): string {
    if (isRole(ns) && this.#roles.includes(ns)) return this.#names[ns];
    const names = this.#roles.map((role) => this.#names[role]);
    if (names.includes(ns)) return ns;
    throw new TypeError(
      `unknown namespace ${ns}: expected ${this.#roles.join(', ')} or one of ${names.join(', ')}`,
    );
  }

  /** Runs `ip [-n NS] -batch -` with one command per line. */
  async #batch(role: Role | undefined, lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return;
    const prefix = role === undefined ? [] : ['-n', this.#names[role]];
    await mustRun(this.#ip, [...prefix, '-batch', '-'], { input: `${lines.join('\n')}\n` });
  }

  async #sysctl(role: Role, values: readonly (readonly [string, string])[]): Promise<void> {
    if (values.length === 0) return;
    const args = ['netns', 'exec', this.#names[role], 'sh', '-c', SYSCTL_SCRIPT, 'sh'];
    for (const [path, value] of values) args.push(`/proc/sys/net/${path}`, value);
    await mustRun(this.#ip, args);
  }

  /**
   * Claims the first free slot by creating its root-side link, whose peer lands in the internet
   * namespace. Creating a link is atomic, so two test files never get the same slot.
   */
  async #claimSlot(): Promise<void> {
    for (let slot = 0; slot < SLOTS; slot += 1) {
      const link = `${TEST_LINK_PREFIX}${slot}`;
      if (await rootSlotAddressTaken(this.#ip, slot)) continue;
      const args = ['link', 'add', link, 'type', 'veth', 'peer', 'name', INTERNET_TEST];
      const created = await runCommand(this.#ip, [...args, 'netns', this.#names.internet]);
      if (created.code === 0) {
        const addresses = plan(slot);
        this.#slot = slot;
        this.#addresses = Object.freeze({
          ipv4: this.#ipv4 ? addresses.ipv4 : undefined,
          ipv6: this.#ipv6 ? addresses.ipv6 : undefined,
        }) as AddressesFor<O>;
        return;
      }
      // Taken by another topology meanwhile: try the next slot; any other failure is an error.
      const shown = await runCommand(this.#ip, ['link', 'show', 'dev', link]);
      if (shown.code !== 0) {
        throw new NetnsError('command-failed', `\`ip ${args.join(' ')}\` failed: ${created.stderr.trim()}`);
      }
    }
    throw new NetnsError(
      'command-failed',
      `all ${SLOTS} topology slots are in use (links ${TEST_LINK_PREFIX}0 to ${TEST_LINK_PREFIX}${SLOTS - 1})`,
    );
  }

  /** Builds the namespaces, links, addresses, routes and rules; see {@link createTopology}. */
  async build(): Promise<void> {
    this.#open();
    const kernelIpv6 = existsSync(KERNEL_IPV6);
    if (this.#ipv6 && !kernelIpv6) {
      throw new NetnsError('command-failed', `the kernel has no IPv6 (${KERNEL_IPV6} is missing)`);
    }
    for (const role of this.#roles) await mustRun(this.#ip, ['netns', 'add', this.#names[role]]);

    for (const role of this.#roles) {
      const values: [string, string][] = [];
      // Duplicate address detection would hold every new IPv6 address, link-local ones too,
      // "tentative" (unusable) for a second or more.
      if (kernelIpv6) values.push(['ipv6/conf/default/accept_dad', '0'], ['ipv6/conf/all/accept_dad', '0']);
      if (role === 'router' && this.#ipv4) values.push(['ipv4/ip_forward', '1']);
      if (role === 'router' && this.#ipv6) values.push(['ipv6/conf/all/forwarding', '1']);
      // With a pilot side, the internet namespace routes between the two routers.
      if ((role === 'pilot-router' || role === 'internet') && this.#pilot !== undefined)
        values.push(['ipv4/ip_forward', '1']);
      await this.#sysctl(role, values);
    }

    const { router, robot } = this.#names;
    await this.#batch('internet', [
      'link set lo up',
      `link add ${INTERNET_ROUTER} type veth peer name ${ROUTER_WAN} netns ${router}`,
    ]);
    await this.#batch('router', [
      'link set lo up',
      `link add ${ROUTER_LAN} type veth peer name ${ROBOT_LAN} netns ${robot}`,
    ]);
    await this.#batch('robot', ['link set lo up']);

    await this.#claimSlot();
    const v4 = this.addresses.ipv4 as HostAddresses | undefined;
    const v6 = this.addresses.ipv6 as HostAddresses | undefined;
    const testLink = this.interfaces.test;
    if (kernelIpv6) {
      // Only this link of the root namespace is touched: no DAD on it, and IPv6 on when asked.
      if (v6 !== undefined) await writeFile(`${KERNEL_IPV6}/conf/${testLink}/disable_ipv6`, '0');
      await writeFile(`${KERNEL_IPV6}/conf/${testLink}/accept_dad`, '0');
    }

    const address = (
      family: HostAddresses | undefined,
      host: keyof HostAddresses,
      prefix: number,
      dev: string,
    ) =>
      family === undefined
        ? []
        : [`addr add ${family[host]}/${prefix} dev ${dev}${family === v6 ? ' nodad' : ''}`];
    await this.#batch(undefined, [
      ...address(v4, 'test', 30, testLink),
      ...address(v6, 'test', 64, testLink),
      `link set ${testLink} up`,
    ]);
    if (this.#pilot !== undefined) await this.#buildPilotSide(this.#pilot);
    await this.#batch('internet', [
      ...address(v4, 'cloud', 30, INTERNET_TEST),
      ...address(v6, 'cloud', 64, INTERNET_TEST),
      ...address(v4, 'cloudWan', 24, INTERNET_ROUTER),
      ...address(v6, 'cloudWan', 64, INTERNET_ROUTER),
      `link set ${INTERNET_TEST} up`,
      `link set ${INTERNET_ROUTER} up`,
    ]);
    await this.#batch('router', [
      ...address(v4, 'routerWan', 24, ROUTER_WAN),
      ...address(v6, 'routerWan', 64, ROUTER_WAN),
      ...address(v4, 'routerLan', 24, ROUTER_LAN),
      ...address(v6, 'routerLan', 64, ROUTER_LAN),
      `link set ${ROUTER_WAN} up`,
      `link set ${ROUTER_LAN} up`,
    ]);
    await this.#batch('robot', [
      ...address(v4, 'robot', 24, ROBOT_LAN),
      ...address(v6, 'robot', 64, ROBOT_LAN),
      `link set ${ROBOT_LAN} up`,
    ]);

    // The robot and the router route "up" to the internet namespace, which has no default route
    // at all, so no packet can leave the topology. The internet namespace knows the robot LAN
    // only without NAT, and always over IPv6 (never translated).
    const internetRoutes: string[] = [];
    const routerRoutes: string[] = [];
    const robotRoutes: string[] = [];
    if (v4 !== undefined) {
      if (this.nat === 'none') internetRoutes.push(`route add 198.19.0.0/24 via ${v4.routerWan}`);
      routerRoutes.push(`route add default via ${v4.cloudWan}`);
      robotRoutes.push(`route add default via ${v4.routerLan}`);
    }
    if (v6 !== undefined) {
      internetRoutes.push(`route add fd00:19::/64 via ${v6.routerWan}`);
      routerRoutes.push(`route add ::/0 via ${v6.cloudWan}`);
      robotRoutes.push(`route add ::/0 via ${v6.routerLan}`);
    }
    await this.#batch('internet', internetRoutes);
    await this.#batch('router', routerRoutes);
    await this.#batch('robot', robotRoutes);

    if (v4 !== undefined && this.nat !== 'none') {
      await mustRun(this.#ip, ['netns', 'exec', router, toolPath('nft'), '-f', '-'], {
        input: natRuleset(this.nat),
      });
    }

    await waitUntil(
      'every link of the topology is up and no IPv6 address is tentative',
      () => this.#ready(),
      READY_TIMEOUT_MS,
    );
  }

  /**
   * The pilot side: `internet` isp1 (198.18.2.1/24) ══ wan0 (198.18.2.2/24) `pilot-router` lan0
   * (198.20.0.1/24) ══ eth0 (198.20.0.2/24) `pilot`, the router's NAT and UDP rule, and the routes.
   */
  async #buildPilotSide(side: PilotSide): Promise<void> {
    const a = PILOT_ADDRESSES;
    const router = this.#names['pilot-router'];
    await this.#batch('internet', [
      `link add ${INTERNET_PILOT_ROUTER} type veth peer name ${ROUTER_WAN} netns ${router}`,
      `addr add ${a.internet}/24 dev ${INTERNET_PILOT_ROUTER}`,
      `link set ${INTERNET_PILOT_ROUTER} up`,
      ...(side.nat === 'none' ? [`route add 198.20.0.0/24 via ${a.routerWan}`] : []),
    ]);
    await this.#batch('pilot-router', [
      'link set lo up',
      `link add ${ROUTER_LAN} type veth peer name ${ROBOT_LAN} netns ${this.#names.pilot}`,
      `addr add ${a.routerWan}/24 dev ${ROUTER_WAN}`,
      `addr add ${a.routerLan}/24 dev ${ROUTER_LAN}`,
      `link set ${ROUTER_WAN} up`,
      `link set ${ROUTER_LAN} up`,
      `route add default via ${a.internet}`,
    ]);
    await this.#batch('pilot', [
      'link set lo up',
      `addr add ${a.pilot}/24 dev ${ROBOT_LAN}`,
      `link set ${ROBOT_LAN} up`,
      `route add default via ${a.routerLan}`,
    ]);
    if (side.nat !== 'none' || !side.udp) {
      await mustRun(this.#ip, ['netns', 'exec', router, toolPath('nft'), '-f', '-'], {
        input: natRuleset(side.nat, { blockUdpOut: !side.udp }),
      });
    }
  }

  /** Whether every link is up and no IPv6 address still runs duplicate address detection. */
  async #ready(): Promise<boolean> {
    const queries: (readonly string[])[] = [
      ...this.#roles.map((role) => ['-n', this.#names[role], '-j', 'addr', 'show']),
      ['-j', 'addr', 'show', 'dev', this.interfaces.test],
    ];
    for (const query of queries) {
      const links = JSON.parse(await mustRun(this.#ip, query)) as unknown;
      for (const link of asArray(links)) {
        if (!isRecord(link)) continue;
        const up = link.ifname === 'lo' ? asArray(link.flags).includes('UP') : link.operstate === 'UP';
        if (!up) return false;
        if (asArray(link.addr_info).some((info) => isRecord(info) && info.tentative === true)) return false;
      }
    }
    return true;
  }

  spawn(
    ns: NamespaceRef,
    command: string,
    args: readonly string[] = [],
    options: SpawnOptions = {},
  ): ChildProcess {
    const state = this.#open();
    const child = spawnProcess(this.#ip, ['netns', 'exec', this.#resolve(ns), command, ...args], {
      ...options,
      // A process group of its own, so close() also ends the processes it starts.
      detached: true,
    });
    track(state.children, child);
    return child;
  }

  run(
    ns: NamespaceRef,
    command: string,
    args: readonly string[] = [],
    options: RunCommandOptions = {},
  ): Promise<RunResult> {
    this.#open();
    return runCommand(this.#ip, ['netns', 'exec', this.#resolve(ns), command, ...args], options);
  }

  wrapperFor(ns: NamespaceRef, executable: string): string {
    this.#open();
    const name = this.#resolve(ns);
    this.#files += 1;
    const path = join(this.#tempDir, `${this.#files}-${basename(executable)}`);
    const script = [
      '#!/bin/sh',
      `# Runs ${executable} inside the network namespace ${name} (written by @svc/testkit).`,
      `exec ${shellQuote(this.#ip)} netns exec ${shellQuote(name)} ${shellQuote(executable)} "$@"`,
      '',
    ].join('\n');
    writeFileSync(path, script, { mode: 0o755 });
    return path;
  }

  capture(ns: NamespaceRef, iface: string, filter?: string): Promise<PacketCapture> {
    const state = this.#open();
    this.#files += 1;
    const file = join(this.#tempDir, `capture-${this.#files}.pcap`);
    return startCapture(this.#ip, this.#resolve(ns), iface, filter, file, (child) =>
      track(state.children, child),
    );
  }

  async forwardPort(rule: PortForwardRule): Promise<PortForward> {
    this.#open();
    const v4 = this.addresses.ipv4 as HostAddresses | undefined;
    if (v4 === undefined || this.nat === 'none') {
      throw new TypeError(
        `forwardPort needs IPv4 and a NAT; this topology has nat '${this.nat}' and ipv4 ${v4 !== undefined}`,
      );
    }
    const complete = completeRule(rule, v4.robot);
    const router = this.#names.router;
    const handle = await addForward(this.#ip, router, complete);
    await forgetFlows(this.#ip, router, complete, v4.routerWan);
    let removing: Promise<void> | undefined;
    return {
      handle,
      rule: complete,
      remove: () => {
        removing ??= (async () => {
          // Once closed, the rule went with the router namespace.
          if (this.#state.kind !== 'open') return;
          await deleteForward(this.#ip, router, handle);
          await forgetFlows(this.#ip, router, complete, v4.routerWan);
        })();
        return removing;
      },
    };
  }

  async routerRuleset(): Promise<string> {
    this.#open();
    return mustRun(this.#ip, ['netns', 'exec', this.#names.router, toolPath('nft'), 'list', 'ruleset']);
  }

  async routerDnatRules(): Promise<DnatRule[]> {
    this.#open();
    const nft = toolPath('nft');
    const out = await mustRun(this.#ip, [
      'netns',
      'exec',
      this.#names.router,
      nft,
      '--json',
      '--handle',
      'list',
      'ruleset',
    ]);
    return dnatRules(JSON.parse(out) as unknown);
  }

  close(): Promise<void> {
    if (this.#state.kind === 'closing') return this.#state.done;
    const done = this.#teardown(this.#state);
    this.#state = { kind: 'closing', done };
    return done;
  }

  async #teardown(open: Extract<State, { kind: 'open' }>): Promise<void> {
    const errors: unknown[] = [];
    const attempt = async (step: () => Promise<void>) => {
      try {
        await step();
      } catch (err) {
        errors.push(err);
      }
    };
    // The tracked processes and their groups: SIGTERM first, so they can clean up.
    await attempt(() => endChildren([...open.children], TERM_GRACE_MS));
    // Whatever else runs in the namespaces (a browser started through a wrapper, a daemon).
    for (const role of this.#roles) await attempt(() => killNamespaceProcesses(this.#ip, this.#names[role]));
    // Deleting one end of a veth deletes both. Done explicitly, so that nothing waits for the
    // kernel's asynchronous clean-up of deleted namespaces.
    const links: [string[], string][] = [
      [['-n', this.#names.internet], INTERNET_ROUTER],
      [['-n', this.#names.router], ROUTER_LAN],
      ...(this.#pilot === undefined
        ? []
        : ([
            [['-n', this.#names.internet], INTERNET_PILOT_ROUTER],
            [['-n', this.#names['pilot-router']], ROUTER_LAN],
          ] as [string[], string][])),
    ];
    const slot = this.#slot;
    if (slot !== undefined) links.unshift([[], `${TEST_LINK_PREFIX}${slot}`]);
    for (const [prefix, link] of links) {
      await attempt(async () => {
        const shown = await runCommand(this.#ip, [...prefix, 'link', 'show', 'dev', link]);
        if (shown.code === 0) await mustRun(this.#ip, [...prefix, 'link', 'delete', 'dev', link]);
      });
    }
    await attempt(async () => {
      const existing = new Set(await listNamespaces(this.#ip));
      for (const role of this.#roles) {
        const name = this.#names[role];
        if (existing.has(name)) await mustRun(this.#ip, ['netns', 'delete', name]);
      }
    });
    await attempt(async () => rmSync(this.#tempDir, { recursive: true, force: true }));
    await attempt(() =>
      waitUntil(
        'the namespaces and the root-side link of the topology are gone',
        async () => {
          const names = new Set(await listNamespaces(this.#ip));
          if (this.#roles.some((role) => names.has(this.#names[role]))) return false;
          if (slot === undefined) return true;
          const shown = await runCommand(this.#ip, ['link', 'show', 'dev', `${TEST_LINK_PREFIX}${slot}`]);
          return shown.code !== 0;
        },
        CLOSE_TIMEOUT_MS,
      ),
    );
    if (errors.length > 0) {
      throw new NetnsError(
        'command-failed',
        `closing the topology failed: ${errors.map(String).join('; ')}`,
        {
          cause: errors[0],
        },
      );
    }
  }
}

/**
 * Creates a topology of network namespaces for end-to-end tests:
 *
 * ```
 * test process ─ svct-testK ══ test0 ─[internet]─ isp0 ══ wan0 ─[router]─ lan0 ══ eth0 ─[robot]
 * 198.18.0.(4K+2)/30   198.18.0.(4K+1)/30   198.18.1.1/24   198.18.1.2/24   198.19.0.1/24   198.19.0.2/24
 * fd00:18:0:K::2/64    fd00:18:0:K::1/64    fd00:18:1::1/64 fd00:18:1::2/64 fd00:19::1/64   fd00:19::2/64
 * ```
 *
 * With `pilotNat`, a pilot side hangs off the internet namespace too (IPv4 only):
 *
 * ```
 * [internet] isp1 ══ wan0 ─[pilot-router]─ lan0 ══ eth0 ─[pilot]
 * 198.18.2.1/24   198.18.2.2/24   198.20.0.1/24   198.20.0.2/24
 * ```
 *
 * and the internet namespace forwards between the two routers.
 *
 * Every namespace has `lo` up. The router forwards, with the NAT of `options.nat` on IPv4 and
 * none on IPv6. The internet namespace has no default route, and the test process gets only
 * the route of its own link, so no packet can reach the machine's real interfaces. K is a slot
 * from 0 to 63, so test files running at the same time get one each; the first is slot 0
 * (`cloud` 198.18.0.1, `test` 198.18.0.2). Namespaces of earlier runs whose process has ended
 * are deleted first. Always {@link Topology.close} it (in `afterAll` or `afterEach`).
 *
 * @throws NetnsError `not-root`, or `missing-tool` naming the Debian package to install.
 * @throws TypeError when IPv4 and IPv6 are both off, or `nat` is unknown.
 */
export async function createTopology<const O extends TopologyOptions = Record<never, never>>(
  options?: O,
): Promise<TopologyFor<O>> {
  const nat = options?.nat ?? 'masquerade';
  const ipv4 = options?.ipv4 ?? true;
  const ipv6 = options?.ipv6 ?? false;
  for (const [name, mode] of [
    ['nat', nat],
    ['pilotNat', options?.pilotNat ?? 'none'],
  ] as const) {
    if (mode !== 'none' && mode !== 'masquerade' && mode !== 'symmetric') {
      throw new TypeError(`${name} must be 'none', 'masquerade' or 'symmetric', got ${String(mode)}`);
    }
  }
  if (options?.pilotNat !== undefined && !ipv4) throw new TypeError('a pilot side (pilotNat) needs IPv4');
  const pilot =
    options?.pilotNat === undefined ? undefined : { nat: options.pilotNat, udp: options.pilotUdp ?? true };
  if (!ipv4 && !ipv6) throw new TypeError('a topology needs IPv4 or IPv6; ipv4 and ipv6 are both false');
  requireRoot();
  const ip = toolPath('ip');
  if ((ipv4 && nat !== 'none') || pilot !== undefined) toolPath('nft');
  await removeLeftovers(ip);
  const topology = new NamespaceTopology<O>(ip, newTag(), nat, ipv4, ipv6, pilot);
  try {
    await topology.build();
  } catch (err) {
    await topology.close().catch(() => undefined);
    throw err;
  }
  return topology;
}
