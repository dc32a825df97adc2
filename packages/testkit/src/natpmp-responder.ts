/**
 * A NAT-PMP (RFC 6886) and PCP (RFC 6887, `MAP` and `ANNOUNCE`) gateway for end-to-end tests of
 * port mapping, run in a router network namespace: it answers on the router's LAN address, port
 * 5351, and makes each mapping real with an nftables DNAT rule on the router's WAN interface
 * (removed when the lease ends, on a delete request, and when the responder stops).
 *
 * It exists because Debian's miniupnpd 2.3.1 refuses to map anything when its external address
 * is reserved (it says "Reserved / private IP address ... Port forwarding is impossible" and
 * answers NAT-PMP with result 3, UPnP with error 501, and refuses `ext_ip=` in such a range),
 * and test topologies may only use the benchmarking range 198.18.0.0/15.
 *
 * The test process calls {@link startNatPmpResponder}, which runs this same file inside the
 * namespace (through the `spawn` it is given, e.g. `topo.spawn('router', ...)`) with tsx; the
 * child reports what it does as JSON lines on stdout and takes commands as JSON lines on stdin.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { createSocket, type RemoteInfo } from 'node:dgram';
import { createRequire } from 'node:module';
import { isIPv4 } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { toolPath } from './netns/commands.js';

/** The port NAT-PMP and PCP servers listen on (RFC 6886 §3, RFC 6887 §19.1). */
export const NAT_PMP_SERVER_PORT = 5351;

/** Options of {@link startNatPmpResponder}. */
export interface NatPmpResponderOptions {
  /**
   * Starts a command inside the router namespace, e.g.
   * `(command, args) => topo.spawn('router', command, args)`.
   */
  readonly spawn: (command: string, args: readonly string[]) => ChildProcess;
  /** The router's LAN address, where requests arrive. */
  readonly lanAddress: string;
  /** The router's public address, announced as the external address. */
  readonly wanAddress: string;
  /** The router's WAN interface, which the DNAT rules match. */
  readonly wanInterface: string;
  /** Longest lease granted, in seconds (default 7200, RFC 6886's recommendation). */
  readonly maxLifetimeS?: number;
  /** How long to wait for the responder to listen (default 10 s). */
  readonly readyTimeoutMs?: number;
}

/** A mapping the responder holds. */
export interface ResponderMapping {
  readonly protocol: 'udp' | 'tcp';
  readonly internalAddress: string;
  readonly internalPort: number;
  readonly externalPort: number;
  readonly lifetimeS: number;
  /** Which protocol created or last renewed it. */
  readonly via: 'natpmp' | 'pcp';
}

/** What the responder reports, in order. */
export type ResponderEvent =
  | { readonly event: 'ready'; readonly address: string; readonly port: number }
  | {
      readonly event: 'request';
      readonly via: 'natpmp' | 'pcp';
      readonly from: string;
      /** `external-address`, `map`, `announce`, or `unsupported`. */
      readonly op: string;
      readonly lifetimeS?: number;
      readonly internalPort?: number;
      /** The result code sent back (0: success). */
      readonly result: number;
    }
  | ({ readonly event: 'mapped' } & ResponderMapping)
  | ({ readonly event: 'unmapped'; readonly reason: 'deleted' | 'expired' | 'stopped' } & ResponderMapping)
  | { readonly event: 'external-address'; readonly address: string }
  | { readonly event: 'error'; readonly message: string };

/** A running responder. */
export interface NatPmpResponder {
  /** Every event so far. */
  readonly events: readonly ResponderEvent[];
  /** The mappings held now. */
  mappings(): ResponderMapping[];
  /**
   * Resolves with the first event (already seen or to come) that matches; rejects after
   * `timeoutMs` (default 30 s) or when the responder exits, with the events seen.
   */
  waitFor(predicate: (event: ResponderEvent) => boolean, timeoutMs?: number): Promise<ResponderEvent>;
  /** Announces another external address from now on (the router's public address changed). */
  setExternalAddress(address: string): Promise<void>;
  /** Stops the responder; its DNAT rules and its nftables table are removed. Safe to call twice. */
  stop(): Promise<void>;
}

/** The configuration the child gets as its one argument. */
interface ChildConfig {
  readonly lanAddress: string;
  readonly wanAddress: string;
  readonly wanInterface: string;
  readonly maxLifetimeS: number;
}

const SELF = fileURLToPath(import.meta.url);
/** The nftables table of the responder in the router namespace. */
const TABLE = 'natpmp_responder';

/**
 * Starts the responder in the router namespace and resolves once it listens.
 *
 * @throws {TypeError} when an address is not IPv4.
 * @throws Error when the child exits or does not listen in time (with its output).
 */
export async function startNatPmpResponder(options: NatPmpResponderOptions): Promise<NatPmpResponder> {
  for (const [name, value] of [
    ['lanAddress', options.lanAddress],
    ['wanAddress', options.wanAddress],
  ] as const) {
    if (!isIPv4(value)) throw new TypeError(`${name} must be an IPv4 address, got ${JSON.stringify(value)}`);
  }
  const config: ChildConfig = {
    lanAddress: options.lanAddress,
    wanAddress: options.wanAddress,
    wanInterface: options.wanInterface,
    maxLifetimeS: options.maxLifetimeS ?? 7200,
  };
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const child = options.spawn(process.execPath, ['--import', tsx, SELF, '--serve', JSON.stringify(config)]);
  const events: ResponderEvent[] = [];
  const held = new Map<string, ResponderMapping>();
  const waiters = new Set<() => void>();
  let stderr = '';
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      for (const wake of [...waiters]) wake();
      resolve();
    });
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  if (child.stdout === null) throw new TypeError('the spawned responder needs a piped stdout');
  createInterface({ input: child.stdout }).on('line', (line) => {
    let event: ResponderEvent;
    try {
      event = JSON.parse(line) as ResponderEvent;
    } catch {
      stderr += `${line}\n`;
      return;
    }
    events.push(event);
    if (event.event === 'mapped') held.set(keyOf(event), withoutEvent(event));
    if (event.event === 'unmapped') held.delete(keyOf(event));
    for (const wake of [...waiters]) wake();
  });

  const waitFor = (predicate: (event: ResponderEvent) => boolean, timeoutMs = 30_000) =>
    new Promise<ResponderEvent>((resolve, reject) => {
      let seen = 0;
      const check = () => {
        for (; seen < events.length; seen++) {
          const event = events[seen]!;
          if (predicate(event)) {
            done();
            resolve(event);
            return;
          }
        }
        if (exited) {
          done();
          reject(
            new Error(`the NAT-PMP responder exited; events: ${JSON.stringify(events)}; stderr: ${stderr}`),
          );
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `no matching NAT-PMP responder event within ${timeoutMs} ms; events: ${JSON.stringify(events)}; stderr: ${stderr}`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  let stopping: Promise<void> | undefined;
  const responder: NatPmpResponder = {
    events,
    mappings: () => [...held.values()],
    waitFor,
    async setExternalAddress(address) {
      if (!isIPv4(address)) throw new TypeError(`expected an IPv4 address, got ${JSON.stringify(address)}`);
      const seen = events.length;
      child.stdin?.write(`${JSON.stringify({ command: 'set-external-address', address })}\n`);
      await waitFor(
        (e) => events.indexOf(e) >= seen && e.event === 'external-address' && e.address === address,
      );
    },
    stop() {
      stopping ??= (async () => {
        if (!exited) {
          child.stdin?.end();
          const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exit;
          clearTimeout(killer);
        }
      })();
      return stopping;
    },
  };
  try {
    await waitFor((e) => e.event === 'ready', options.readyTimeoutMs ?? 10_000);
  } catch (err) {
    await responder.stop();
    throw err;
  }
  return responder;
}

function keyOf(m: ResponderMapping): string {
  return `${m.protocol}/${m.internalAddress}/${m.internalPort}`;
}

function withoutEvent(event: ResponderMapping & { event: string }): ResponderMapping {
  const { protocol, internalAddress, internalPort, externalPort, lifetimeS, via } = event;
  return { protocol, internalAddress, internalPort, externalPort, lifetimeS, via };
}

// ---------------------------------------------------------------------------------------------
// The child: runs inside the router namespace.

interface Held extends ResponderMapping {
  /** nftables rule handle. */
  readonly handle: number;
  /** PCP's mapping nonce (12 bytes, hex); NAT-PMP mappings have none. */
  readonly nonce: string | undefined;
  timer: ReturnType<typeof setTimeout>;
}

/** NAT-PMP result codes (RFC 6886 §3.5). */
const PMP = {
  success: 0,
  unsupportedVersion: 1,
  refused: 2,
  networkFailure: 3,
  outOfResources: 4,
  unsupportedOpcode: 5,
};
/** PCP result codes (RFC 6887 §7.4). */
const PCP = {
  success: 0,
  unsuppVersion: 1,
  notAuthorized: 2,
  malformedRequest: 3,
  unsuppOpcode: 4,
  unsuppOption: 5,
  noResources: 8,
  unsuppProtocol: 9,
  addressMismatch: 12,
};

class ResponderChild {
  readonly #config: ChildConfig;
  readonly #started = Date.now();
  readonly #mappings = new Map<string, Held>();
  readonly #socket = createSocket('udp4');
  #external: string;
  /** Serialises nft calls and the answers that wait on them. */
  #queue: Promise<void> = Promise.resolve();

  constructor(config: ChildConfig) {
    this.#config = config;
    this.#external = config.wanAddress;
  }

  async start(): Promise<void> {
    await nft(
      ['-f', '-'],
      `table ip ${TABLE} {\n  chain prerouting {\n    type nat hook prerouting priority dstnat - 10; policy accept;\n  }\n}\n`,
    );
    this.#socket.on('message', (msg, from) => {
      this.#queue = this.#queue
        .then(() => this.#handle(msg, from))
        .catch((err) => report({ event: 'error', message: String(err) }));
    });
    await new Promise<void>((resolve, reject) => {
      this.#socket.once('error', reject);
      this.#socket.bind(NAT_PMP_SERVER_PORT, this.#config.lanAddress, () => resolve());
    });
    report({ event: 'ready', address: this.#config.lanAddress, port: NAT_PMP_SERVER_PORT });
    createInterface({ input: process.stdin })
      .on('line', (line) => {
        const command = JSON.parse(line) as { command: string; address?: string };
        if (command.command === 'set-external-address' && command.address !== undefined) {
          this.#external = command.address;
          report({ event: 'external-address', address: command.address });
        }
      })
      .on('close', () => void this.stop());
    process.once('SIGTERM', () => void this.stop());
  }

  async stop(): Promise<void> {
    this.#socket.close();
    await this.#queue;
    for (const held of [...this.#mappings.values()]) await this.#remove(held, 'stopped');
    await nft(['delete', 'table', 'ip', TABLE]).catch(() => {});
    process.exit(0);
  }

  /** Seconds since the responder started (the "epoch" of both protocols). */
  #epoch(): number {
    return Math.floor((Date.now() - this.#started) / 1000);
  }

  async #handle(msg: Buffer, from: RemoteInfo): Promise<void> {
    if (msg.length < 2) return;
    const version = msg[0];
    if (version === 0) await this.#natPmp(msg, from);
    else if (version === 2) await this.#pcp(msg, from);
    else {
      // Neither: NAT-PMP's "unsupported version" answer (RFC 6886 §3.5, RFC 6887 §9).
      const reply = Buffer.alloc(8);
      reply.writeUInt8(128 + (msg[1]! & 0x7f), 1);
      reply.writeUInt16BE(PMP.unsupportedVersion, 2);
      reply.writeUInt32BE(this.#epoch(), 4);
      this.#send(reply, from);
      report({
        event: 'request',
        via: 'natpmp',
        from: from.address,
        op: 'unsupported',
        result: PMP.unsupportedVersion,
      });
    }
  }

  /**
   * NAT-PMP (RFC 6886 §3.2, §3.3).
   *
   * ```
   * external address request        mapping request (op 1 UDP, 2 TCP)
   *  0       1                       0       1       2       3
   * +-------+-------+               +-------+-------+-------+-------+
   * | Vers=0| OP=0  |               | Vers=0| OP    |   Reserved    |
   * +-------+-------+               +-------+-------+-------+-------+
   *                                 | Internal Port | Suggested Ext |
   *                                 +-------+-------+-------+-------+
   *                                 |   Requested Lifetime (s)      |
   *                                 +-------+-------+-------+-------+
   * ```
   */
  async #natPmp(msg: Buffer, from: RemoteInfo): Promise<void> {
    const op = msg[1]!;
    if (op === 0 && msg.length >= 2) {
      // Vers, OP=128, Result, Epoch, External IPv4 Address.
      const reply = Buffer.alloc(12);
      reply.writeUInt8(128, 1);
      reply.writeUInt16BE(PMP.success, 2);
      reply.writeUInt32BE(this.#epoch(), 4);
      for (const [i, part] of this.#external.split('.').entries()) reply.writeUInt8(Number(part), 8 + i);
      this.#send(reply, from);
      report({ event: 'request', via: 'natpmp', from: from.address, op: 'external-address', result: 0 });
      return;
    }
    if ((op !== 1 && op !== 2) || msg.length < 12) {
      const reply = Buffer.alloc(8);
      reply.writeUInt8(128 + (op & 0x7f), 1);
      reply.writeUInt16BE(PMP.unsupportedOpcode, 2);
      reply.writeUInt32BE(this.#epoch(), 4);
      this.#send(reply, from);
      report({
        event: 'request',
        via: 'natpmp',
        from: from.address,
        op: 'unsupported',
        result: PMP.unsupportedOpcode,
      });
      return;
    }
    const protocol = op === 1 ? 'udp' : 'tcp';
    const internalPort = msg.readUInt16BE(4);
    const suggested = msg.readUInt16BE(6);
    const lifetimeS = msg.readUInt32BE(8);
    let externalPort = 0;
    let granted = 0;
    let result = PMP.success;
    if (lifetimeS === 0) {
      // Deletion (§3.4): the suggested port is ignored; internal port 0 deletes every mapping
      // of the client for the protocol.
      for (const held of [...this.#mappings.values()]) {
        const mine = held.protocol === protocol && held.internalAddress === from.address;
        if (mine && (internalPort === 0 || held.internalPort === internalPort))
          await this.#remove(held, 'deleted');
      }
    } else if (internalPort === 0) {
      result = PMP.refused;
    } else {
      const made = await this.#map(
        protocol,
        from.address,
        internalPort,
        suggested,
        lifetimeS,
        'natpmp',
        undefined,
      );
      if (made === undefined) result = PMP.outOfResources;
      else ({ externalPort, lifetimeS: granted } = made);
    }
    // Vers, OP=128+op, Result, Epoch, Internal Port, Mapped External Port, Lifetime.
    const reply = Buffer.alloc(16);
    reply.writeUInt8(128 + op, 1);
    reply.writeUInt16BE(result, 2);
    reply.writeUInt32BE(this.#epoch(), 4);
    reply.writeUInt16BE(internalPort, 8);
    reply.writeUInt16BE(externalPort, 10);
    reply.writeUInt32BE(granted, 12);
    this.#send(reply, from);
    report({
      event: 'request',
      via: 'natpmp',
      from: from.address,
      op: 'map',
      lifetimeS,
      internalPort,
      result,
    });
  }

  /**
   * PCP (RFC 6887 §7.1, §11.1): the common request header, then the MAP opcode's fields.
   *
   * ```
   *  0               1               2               3
   * +---------------+-+-------------+---------------+---------------+
   * |  Version = 2  |R|   Opcode    |         Reserved              |
   * +---------------+-+-------------+---------------+---------------+
   * |                 Requested Lifetime (32 bits)                  |
   * +---------------------------------------------------------------+
   * |            PCP Client's IP Address (128 bits, 16 octets)      |
   * +---------------------------------------------------------------+
   * MAP: Mapping Nonce (96 bits) | Protocol | Reserved (24 bits) |
   *      Internal Port | Suggested External Port |
   *      Suggested External IP Address (128 bits)
   * ```
   *
   * Options are not supported: a mandatory one (code < 128) gets UNSUPP_OPTION, others are
   * ignored.
   */
  async #pcp(msg: Buffer, from: RemoteInfo): Promise<void> {
    if (msg.length < 24 || msg.length > 1100 || msg.length % 4 !== 0) {
      if (msg.length >= 4) this.#pcpReply(msg, from, PCP.malformedRequest, 0, undefined);
      report({
        event: 'request',
        via: 'pcp',
        from: from.address,
        op: 'malformed',
        result: PCP.malformedRequest,
      });
      return;
    }
    if ((msg[1]! & 0x80) !== 0) return; // A response: never answered.
    const opcode = msg[1]! & 0x7f;
    const lifetimeS = msg.readUInt32BE(4);
    const client = mappedIpv4(msg.subarray(8, 24));
    if (client !== from.address) {
      this.#pcpReply(msg, from, PCP.addressMismatch, 0, undefined);
      report({
        event: 'request',
        via: 'pcp',
        from: from.address,
        op: 'address-mismatch',
        result: PCP.addressMismatch,
      });
      return;
    }
    if (opcode === 0) {
      this.#pcpReply(msg, from, PCP.success, 0, undefined);
      report({ event: 'request', via: 'pcp', from: from.address, op: 'announce', result: 0 });
      return;
    }
    if (opcode !== 1) {
      this.#pcpReply(msg, from, PCP.unsuppOpcode, 0, undefined);
      report({
        event: 'request',
        via: 'pcp',
        from: from.address,
        op: 'unsupported',
        result: PCP.unsuppOpcode,
      });
      return;
    }
    if (msg.length < 60) {
      this.#pcpReply(msg, from, PCP.malformedRequest, 0, undefined);
      report({ event: 'request', via: 'pcp', from: from.address, op: 'map', result: PCP.malformedRequest });
      return;
    }
    const nonce = msg.subarray(24, 36).toString('hex');
    const protocolNumber = msg[36]!;
    const internalPort = msg.readUInt16BE(40);
    const suggested = msg.readUInt16BE(42);
    const outcome = (result: number, externalPort = 0, granted = 0) => {
      this.#pcpReply(msg, from, result, granted, externalPort);
      report({
        event: 'request',
        via: 'pcp',
        from: from.address,
        op: 'map',
        lifetimeS,
        internalPort,
        result,
      });
    };
    if (hasMandatoryOption(msg.subarray(60))) return outcome(PCP.unsuppOption);
    if (protocolNumber !== 17 && protocolNumber !== 6) return outcome(PCP.unsuppProtocol);
    if (internalPort === 0) return outcome(PCP.malformedRequest);
    const protocol = protocolNumber === 17 ? 'udp' : 'tcp';
    const existing = this.#mappings.get(`${protocol}/${from.address}/${internalPort}`);
    if (existing?.nonce !== undefined && existing.nonce !== nonce) return outcome(PCP.notAuthorized);
    if (lifetimeS === 0) {
      if (existing !== undefined) await this.#remove(existing, 'deleted');
      return outcome(PCP.success);
    }
    const made = await this.#map(protocol, from.address, internalPort, suggested, lifetimeS, 'pcp', nonce);
    if (made === undefined) return outcome(PCP.noResources);
    return outcome(PCP.success, made.externalPort, made.lifetimeS);
  }

  /**
   * A PCP response: the common header (R set, the result, the lifetime, the epoch), then for MAP
   * the request's opcode fields with the assigned external port and address.
   */
  #pcpReply(
    request: Buffer,
    to: RemoteInfo,
    result: number,
    lifetimeS: number,
    externalPort: number | undefined,
  ): void {
    const opcode = request[1]! & 0x7f;
    const body =
      opcode === 1 && request.length >= 60 ? Buffer.from(request.subarray(24, 60)) : Buffer.alloc(0);
    const reply = Buffer.alloc(24 + body.length);
    reply.writeUInt8(2, 0);
    reply.writeUInt8(0x80 | opcode, 1);
    reply.writeUInt8(result, 3);
    reply.writeUInt32BE(lifetimeS, 4);
    reply.writeUInt32BE(this.#epoch(), 8);
    body.copy(reply, 24);
    if (body.length > 0) {
      reply.writeUInt16BE(externalPort ?? 0, 24 + 18);
      const address = result === PCP.success ? this.#external : '0.0.0.0';
      mappedIpv6(address).copy(reply, 24 + 20);
    }
    this.#send(reply, to);
  }

  /** Creates or renews a mapping; `undefined` when no external port is free. */
  async #map(
    protocol: 'udp' | 'tcp',
    internalAddress: string,
    internalPort: number,
    suggested: number,
    lifetimeS: number,
    via: 'natpmp' | 'pcp',
    nonce: string | undefined,
  ): Promise<Held | undefined> {
    const key = `${protocol}/${internalAddress}/${internalPort}`;
    const granted = Math.min(lifetimeS, this.#config.maxLifetimeS);
    const existing = this.#mappings.get(key);
    if (existing !== undefined) {
      clearTimeout(existing.timer);
      const renewed: Held = { ...existing, lifetimeS: granted, via, timer: this.#expiry(key, granted) };
      this.#mappings.set(key, renewed);
      report({ event: 'mapped', ...publicOf(renewed) });
      return renewed;
    }
    const externalPort = this.#freePort(protocol, suggested === 0 ? internalPort : suggested);
    if (externalPort === undefined) return undefined;
    const out = await nft([
      '--json',
      '--echo',
      '--handle',
      'add',
      'rule',
      'ip',
      TABLE,
      'prerouting',
      'iifname',
      this.#config.wanInterface,
      protocol,
      'dport',
      String(externalPort),
      'dnat',
      'to',
      `${internalAddress}:${internalPort}`,
    ]);
    const handle = ruleHandle(out);
    const held: Held = {
      protocol,
      internalAddress,
      internalPort,
      externalPort,
      lifetimeS: granted,
      via,
      handle,
      nonce,
      timer: this.#expiry(key, granted),
    };
    this.#mappings.set(key, held);
    report({ event: 'mapped', ...publicOf(held) });
    return held;
  }

  #expiry(key: string, lifetimeS: number): ReturnType<typeof setTimeout> {
    return setTimeout(() => {
      const held = this.#mappings.get(key);
      if (held !== undefined) this.#queue = this.#queue.then(() => this.#remove(held, 'expired'));
    }, lifetimeS * 1000);
  }

  /** The wanted port when no mapping of the protocol uses it, else the next free one from 1024. */
  #freePort(protocol: 'udp' | 'tcp', wanted: number): number | undefined {
    const used = new Set(
      [...this.#mappings.values()].filter((m) => m.protocol === protocol).map((m) => m.externalPort),
    );
    if (wanted >= 1024 && !used.has(wanted)) return wanted;
    for (let port = 1024; port <= 65535; port++) if (!used.has(port)) return port;
    return undefined;
  }

  async #remove(held: Held, reason: 'deleted' | 'expired' | 'stopped'): Promise<void> {
    clearTimeout(held.timer);
    this.#mappings.delete(`${held.protocol}/${held.internalAddress}/${held.internalPort}`);
    await nft(['delete', 'rule', 'ip', TABLE, 'prerouting', 'handle', String(held.handle)]).catch((err) =>
      report({ event: 'error', message: String(err) }),
    );
    // Flows the rule already steered would keep going to the robot until conntrack forgets them.
    await run(toolPath('conntrack'), [
      '-D',
      '-p',
      held.protocol,
      '--orig-port-dst',
      String(held.externalPort),
    ]).catch(() => {});
    report({ event: 'unmapped', reason, ...publicOf(held) });
  }

  #send(reply: Buffer, to: RemoteInfo): void {
    this.#socket.send(reply, to.port, to.address);
  }
}

function publicOf(held: Held): ResponderMapping {
  const { protocol, internalAddress, internalPort, externalPort, lifetimeS, via } = held;
  return { protocol, internalAddress, internalPort, externalPort, lifetimeS, via };
}

/** The IPv4 address in an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), or `undefined`. */
function mappedIpv4(bytes: Buffer): string | undefined {
  const prefix = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
  if (!bytes.subarray(0, 12).equals(prefix)) return undefined;
  return [...bytes.subarray(12, 16)].join('.');
}

function mappedIpv6(address: string): Buffer {
  const bytes = Buffer.alloc(16);
  bytes.writeUInt16BE(0xffff, 10);
  for (const [i, part] of address.split('.').entries()) bytes.writeUInt8(Number(part), 12 + i);
  return bytes;
}

/** Whether PCP options (code, reserved, length, data padded to 4) hold a mandatory one (code < 128). */
function hasMandatoryOption(options: Buffer): boolean {
  let at = 0;
  while (at + 4 <= options.length) {
    const code = options[at]!;
    if (code < 128) return true;
    const length = options.readUInt16BE(at + 2);
    at += 4 + Math.ceil(length / 4) * 4;
  }
  return false;
}

function ruleHandle(json: string): number {
  const parsed = JSON.parse(json) as { nftables?: { add?: { rule?: { handle?: number } } }[] };
  const handle = parsed.nftables?.find((item) => item.add?.rule?.handle !== undefined)?.add?.rule?.handle;
  if (handle === undefined) throw new Error(`nft reported no rule handle: ${json}`);
  return handle;
}

function report(event: ResponderEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function nft(args: readonly string[], input?: string): Promise<string> {
  return run(toolPath('nft'), args, input);
}

function run(command: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, [...args], (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')}: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

if (process.argv[1] === SELF && process.argv[2] === '--serve') {
  const config = JSON.parse(process.argv[3] ?? '{}') as ChildConfig;
  new ResponderChild(config).start().catch((err: unknown) => {
    report({ event: 'error', message: String(err) });
    process.exit(1);
  });
}
