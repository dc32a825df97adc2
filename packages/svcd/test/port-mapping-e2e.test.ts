/**
 * Port mapping as a user sees it, with real network namespaces (`createTopology` of
 * `@svc/testkit`: internet, NAT router, robot LAN in 198.18.0.0/15) and the real `svcd` in the
 * robot namespace, configured with `port_mapping = true`:
 *
 * - with a NAT-PMP gateway on the router, the robot announces the router's public address and
 *   port as a `mapped` candidate, the mapping is a DNAT rule in the router's ruleset, a QUIC
 *   datagram sent from the internet namespace to it reaches svcd's QUIC socket (which answers
 *   with a version negotiation), a change of the public address is announced, and the mapping
 *   is gone after svcd stops;
 * - with no gateway, svcd says why once, keeps running and does not flood the network;
 * - with Debian's miniupnpd 2.3.1 on the router, which refuses to map on a reserved WAN address,
 *   svcd logs the reason each protocol got, once.
 *
 * The gateway that maps is `startNatPmpResponder` of `@svc/testkit`, because miniupnpd 2.3.1 maps
 * nothing when its external address is reserved (ADR 0020). svcd reaches the test's signalling
 * server through a forwarder on 127.0.0.1 in the robot namespace and a Unix socket (which crosses
 * network namespaces), so nothing leaves the topology.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  createTopology,
  freeUdpPort,
  type NatPmpResponder,
  startNatPmpResponder,
  type Topology,
} from '@svc/testkit';
import type { SignalCandidate, SignalClientMessage } from '@svc/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { loadOrCreateCredential } from '../src/credential.js';
import { type ServerConnection, TestSignalServer } from './support/signal-server.js';

const SVCD = fileURLToPath(new URL('../bin/svcd', import.meta.url));
const ROBOT_ID = 'pm-robot';
const MINIUPNPD = '/usr/sbin/miniupnpd';
const IP = '/usr/sbin/ip';
const NFT = '/usr/sbin/nft';

const masqueradeTopology = () => createTopology({ nat: 'masquerade' });
/** A topology with a NAT router (IPv4 on). */
type NatTopology = Awaited<ReturnType<typeof masqueradeTopology>>;

/** Forwards TCP on 127.0.0.1 (a port it prints) to a Unix socket; runs in the robot namespace. */
const FORWARDER = `
const net = require('node:net');
const target = process.argv[1];
const server = net.createServer((client) => {
  const upstream = net.connect(target);
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

/**
 * Sends a 1200-byte QUIC long-header packet of an unknown version (0x1a2a3a4a, reserved for
 * exercising negotiation, RFC 9000 §15) every 250 ms until an answer comes, and prints it: a QUIC
 * server answers with a version negotiation packet (version 0). Runs in the internet namespace.
 */
const QUIC_PROBE = `
const dgram = require('node:dgram');
const [host, port, timeoutMs] = process.argv.slice(1);
const socket = dgram.createSocket('udp4');
const packet = Buffer.alloc(1200);
packet[0] = 0xc0;
packet.writeUInt32BE(0x1a2a3a4a, 1);
packet[5] = 8;
packet.fill(0x11, 6, 14);
packet[14] = 8;
packet.fill(0x22, 15, 23);
let timer;
socket.on('message', (msg, from) => {
  clearInterval(timer);
  console.log(JSON.stringify({ from: from.address, port: from.port, longHeader: (msg[0] & 0x80) !== 0, version: msg.readUInt32BE(1) }));
  socket.close();
});
const send = () => socket.send(packet, Number(port), host);
socket.bind(0, () => { send(); timer = setInterval(send, 250); });
setTimeout(() => { console.log(JSON.stringify({ timeout: true })); process.exit(0); }, Number(timeoutMs)).unref();
`;

/** One line svcd logged (pino JSON on stderr). */
interface LogLine {
  readonly level: number;
  readonly msg: string;
}
const WARN = 40;

/** The real svcd in the robot namespace, its log parsed line by line. */
class RobotProcess {
  readonly lines: LogLine[] = [];
  readonly exited: Promise<number | null>;
  readonly #child: ReturnType<Topology['spawn']>;
  readonly #waiters = new Set<() => void>();
  #ended = false;

  constructor(topo: NatTopology, configPath: string) {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('SVC_')) env[key] = value;
    this.#child = topo.spawn('robot', SVCD, ['--config', configPath], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [this.#child.stdout, this.#child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (text) => {
        let line: LogLine;
        try {
          line = JSON.parse(text) as LogLine;
        } catch {
          line = { level: 0, msg: text };
        }
        this.lines.push(line);
        this.#wake();
      });
    }
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code) => {
        this.#ended = true;
        this.#wake();
        resolve(code);
      });
    });
  }

  get running(): boolean {
    return !this.#ended;
  }

  /** Lines whose message matches. */
  matching(pattern: RegExp): LogLine[] {
    return this.lines.filter((line) => pattern.test(line.msg));
  }

  /** The first line whose message matches, waiting at most `timeoutMs`; fails if svcd exits first. */
  waitForLine(pattern: RegExp, timeoutMs = 30_000): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`svcd never logged ${pattern}; log:\n${this.#text()}`));
      }, timeoutMs);
      const check = () => {
        const found = this.lines.find((line) => pattern.test(line.msg));
        if (found !== undefined || this.#ended) {
          clearTimeout(timer);
          this.#waiters.delete(check);
          if (found !== undefined) resolve(found);
          else reject(new Error(`svcd exited before logging ${pattern}; log:\n${this.#text()}`));
        }
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** SIGTERM, as systemd stops it; resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.#ended) return this.exited;
    this.#child.kill('SIGTERM');
    const killer = setTimeout(() => this.#child.kill('SIGKILL'), 20_000);
    const code = await this.exited;
    clearTimeout(killer);
    return code;
  }

  #wake(): void {
    for (const check of [...this.#waiters]) check();
  }

  #text(): string {
    return this.lines.map((line) => line.msg).join('\n');
  }
}

/** Resolves with `promise`, or rejects after `ms` saying what did not happen. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

type Announce = Extract<SignalClientMessage, { type: 'announce' }>;

function mappedOf(message: SignalClientMessage): SignalCandidate | undefined {
  return message.type === 'announce' ? message.candidates.find((c) => c.kind === 'mapped') : undefined;
}

/** Everything one test started, undone in reverse order after it, whatever happened. */
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  const errors: unknown[] = [];
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length > 0) throw errors[0];
});

async function topology(): Promise<NatTopology> {
  const topo = await masqueradeTopology();
  cleanups.push(() => topo.close());
  const dir = await mkdtemp(path.join(tmpdir(), 'svcd-port-mapping-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  scratch.set(topo, dir);
  return topo;
}
const scratch = new WeakMap<NatTopology, string>();
const dirOf = (topo: NatTopology): string => scratch.get(topo)!;

/**
 * A signalling server in the test process that the robot reaches at ws://127.0.0.1:<port>/ws in
 * its own namespace: a forwarder there, a Unix socket, a bridge here.
 */
async function signalling(topo: NatTopology, robots: Map<string, string>, heartbeatMs = 15_000) {
  const server = await TestSignalServer.start({ robots, heartbeatMs });
  cleanups.push(() => server.stop());
  const socketPath = path.join(dirOf(topo), 'signal.sock');
  const open = new Set<Socket>();
  const bridge: Server = createServer((client) => {
    const upstream = netConnect(server.port, '127.0.0.1');
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => bridge.listen(socketPath, resolve));
  cleanups.push(async () => {
    for (const s of open) s.destroy();
    await new Promise<void>((resolve) => bridge.close(() => resolve()));
  });
  const forwarder = topo.spawn('robot', process.execPath, ['-e', FORWARDER, socketPath], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(async () => {
    if (forwarder.exitCode === null && forwarder.signalCode === null) {
      const gone = new Promise((resolve) => forwarder.once('exit', resolve));
      forwarder.kill('SIGTERM');
      await gone;
    }
  });
  const port = await within(
    new Promise<number>((resolve) =>
      createInterface({ input: forwarder.stdout! }).once('line', (line) => resolve(Number(line))),
    ),
    10_000,
    'the signalling forwarder listening in the robot namespace',
  );
  return { server, url: `ws://127.0.0.1:${port}/ws` };
}

/** Writes svcd.toml and the robot's key; starts svcd in the robot namespace. */
async function startRobot(
  topo: NatTopology,
  signalUrl: string,
  robots: Map<string, string>,
  extra: readonly string[] = [],
): Promise<{ robot: RobotProcess; quicPort: number }> {
  const dir = dirOf(topo);
  const credentialPath = path.join(dir, 'credential');
  const credential = await loadOrCreateCredential(credentialPath);
  robots.set(ROBOT_ID, credential.publicKey);
  const quicPort = await freeUdpPort();
  const configPath = path.join(dir, 'svcd.toml');
  await writeFile(
    configPath,
    [
      '[agent]',
      `robot_id = "${ROBOT_ID}"`,
      `signal_url = "${signalUrl}"`,
      `credential_path = "${credentialPath}"`,
      `quic_port = ${quicPort}`,
      'port_mapping = true',
      ...extra,
      '',
    ].join('\n'),
  );
  const robot = new RobotProcess(topo, configPath);
  cleanups.push(() => robot.stop());
  return { robot, quicPort };
}

/** Sends the QUIC probe from the internet namespace and returns what came back. */
async function probeQuic(topo: NatTopology, host: string, port: number) {
  const result = await topo.run('internet', process.execPath, [
    '-e',
    QUIC_PROBE,
    host,
    String(port),
    '10000',
  ]);
  return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as {
    from?: string;
    port?: number;
    longHeader?: boolean;
    version?: number;
    timeout?: boolean;
  };
}

/** The robot's next announce that satisfies `predicate`. */
function nextAnnounce(
  connection: ServerConnection,
  predicate: (announce: Announce) => boolean,
  timeoutMs: number,
  what: string,
): Promise<Announce> {
  return within(
    connection.messages.next((m) => m.type === 'announce' && predicate(m)) as Promise<Announce>,
    timeoutMs,
    what,
  );
}

describe('port mapping end to end (network namespaces, the real svcd)', () => {
  it('maps the QUIC port on the NAT gateway, announces it, carries datagrams from the internet, follows an address change and removes it at shutdown', {
    timeout: 120_000,
  }, async () => {
    const topo = await topology();
    const v4 = topo.addresses.ipv4;
    const responder: NatPmpResponder = await startNatPmpResponder({
      spawn: (command, args) => topo.spawn('router', command, args, { stdio: ['pipe', 'pipe', 'pipe'] }),
      lanAddress: v4.routerLan,
      wanAddress: v4.routerWan,
      wanInterface: topo.interfaces.router.wan,
    });
    cleanups.push(() => responder.stop());
    const robots = new Map<string, string>();
    // Heartbeats a minute apart: an announce sooner than that comes from svcd's re-announce.
    const { server, url } = await signalling(topo, robots, 60_000);
    const { robot, quicPort } = await startRobot(topo, url, robots, ['port_mapping_lifetime_s = 10']);

    const connection = await within(server.connections.next(), 30_000, 'the robot connecting');
    const first = await nextAnnounce(
      connection,
      (a) => mappedOf(a) !== undefined,
      20_000,
      'an announce with a mapped candidate',
    );
    const mapped = mappedOf(first)!;
    expect(mapped).toEqual({ address: v4.routerWan, port: quicPort, family: 'ipv4', kind: 'mapped' });
    // The host candidate still comes first: a pilot on the robot's LAN takes it.
    expect(first.candidates[0]).toEqual({ address: v4.robot, port: quicPort, family: 'ipv4', kind: 'host' });
    await robot.waitForLine(/^port mapping: UDP 198\.18\.1\.2:\d+ on the gateway 198\.19\.0\.1 \(NAT-PMP\)/);

    // The mapping is a DNAT rule on the router, to the robot's QUIC port.
    expect(await topo.routerDnatRules()).toContainEqual(
      expect.objectContaining({
        protocol: 'udp',
        wanPort: mapped.port,
        lanAddress: v4.robot,
        lanPort: quicPort,
      }),
    );
    // A datagram from the internet to the public address reaches svcd's QUIC socket, whose
    // answer (a version negotiation) comes back through the NAT from the same address.
    const answer = await probeQuic(topo, mapped.address, mapped.port);
    expect(answer).toEqual({ from: v4.routerWan, port: mapped.port, longHeader: true, version: 0 });

    // The router's public address changes: the next renewal learns it and svcd announces it.
    const newWan = '198.18.1.3';
    const added = await topo.run('router', IP, [
      'addr',
      'add',
      `${newWan}/24`,
      'dev',
      topo.interfaces.router.wan,
    ]);
    expect(added.code).toBe(0);
    await responder.setExternalAddress(newWan);
    const moved = await nextAnnounce(
      connection,
      (a) => mappedOf(a)?.address === newWan,
      20_000,
      'an announce with the new public address',
    );
    expect(mappedOf(moved)).toEqual({ address: newWan, port: mapped.port, family: 'ipv4', kind: 'mapped' });
    expect(
      robot.matching(/^port mapping: the public address changed from 198\.18\.1\.2:\d+ to 198\.18\.1\.3:\d+/),
    ).toHaveLength(1);
    expect(await probeQuic(topo, newWan, mapped.port)).toMatchObject({ from: newWan, version: 0 });

    // At shutdown svcd deletes the mapping: the gateway hears the deletion and the rule is gone.
    expect(await robot.stop()).toBe(0);
    await responder.waitFor(
      (e) => e.event === 'unmapped' && e.reason === 'deleted' && e.internalPort === quicPort,
      5000,
    );
    expect(responder.mappings()).toEqual([]);
    expect((await topo.routerDnatRules()).filter((rule) => rule.wanPort === mapped.port)).toEqual([]);
    expect(
      robot.matching(/^port mapping: removed UDP 198\.18\.1\.3:\d+ from the gateway 198\.19\.0\.1$/),
    ).toHaveLength(1);
    expect(robot.lines.filter((line) => line.level >= WARN && /port mapping/.test(line.msg))).toEqual([]);
  });

  it('without a gateway says why once, keeps running and does not flood the network', {
    timeout: 90_000,
  }, async () => {
    const topo = await topology();
    const v4 = topo.addresses.ipv4;
    const capture = await topo.capture(
      'router',
      topo.interfaces.router.lan,
      'udp port 5351 or udp port 1900',
    );
    cleanups.push(() => capture.stop());
    const robots = new Map<string, string>();
    const { server, url } = await signalling(topo, robots, 1000);
    const { robot } = await startRobot(topo, url, robots);
    const connection = await within(server.connections.next(), 30_000, 'the robot connecting');
    const announce = await nextAnnounce(connection, () => true, 30_000, 'the first announce');
    expect(announce.candidates.map((c) => c.kind)).toEqual(['host']);

    const line = await robot.waitForLine(/^port mapping: no gateway mapped UDP port/, 30_000);
    expect(line.level).toBe(WARN);
    expect(line.msg).toContain(`NAT-PMP: no answer from ${v4.routerLan}:5351 within 3 s`);
    expect(line.msg).toContain('UPnP: no UPnP-IGD v2 gateway answered an SSDP search within 5 s');
    expect(line.msg).toContain('announcing host candidates only and trying again, less and less often');

    // Three heartbeats later: still one line, still running, and at most a second try (the
    // first retry comes 2 to 6 s after a failed try).
    const heartbeats = () => connection.messages.items.filter((m) => m.type === 'heartbeat').length;
    const seen = heartbeats();
    for (let i = 1; i <= 3; i++) {
      await within(
        connection.messages.next((m) => m.type === 'heartbeat' && heartbeats() >= seen + i),
        10_000,
        `heartbeat ${i} after the warning`,
      );
    }
    expect(robot.running).toBe(true);
    expect(robot.matching(/^port mapping/)).toHaveLength(1);
    const packets = await capture.stop();
    const natPmp = packets.filter((p) => p.dstPort === 5351 && p.src === v4.robot).length;
    expect(natPmp).toBeGreaterThanOrEqual(1);
    expect(natPmp).toBeLessThanOrEqual(2);
    expect(packets.filter((p) => p.dstPort === 1900 && p.src === v4.robot).length).toBeLessThanOrEqual(12);
    expect(await robot.stop()).toBe(0);
  });

  it('against miniupnpd 2.3.1 on a reserved WAN address logs the refusal of each protocol once', {
    timeout: 90_000,
  }, async () => {
    const topo = await topology();
    const dir = dirOf(topo);
    // miniupnpd's nftables backend adds its rules to chains it expects in `table inet filter`.
    const chains = await topo.run('router', NFT, ['-f', '-'], {
      input: [
        'table inet filter {',
        '  chain forward { type filter hook forward priority filter; policy accept; jump miniupnpd; }',
        '  chain miniupnpd { }',
        '  chain prerouting { type nat hook prerouting priority dstnat; policy accept; jump prerouting_miniupnpd; }',
        '  chain postrouting { type nat hook postrouting priority srcnat; policy accept; jump postrouting_miniupnpd; }',
        '  chain prerouting_miniupnpd { }',
        '  chain postrouting_miniupnpd { }',
        '}',
        '',
      ].join('\n'),
    });
    expect(chains.code).toBe(0);
    const conf = path.join(dir, 'miniupnpd.conf');
    await writeFile(
      conf,
      [
        `ext_ifname=${topo.interfaces.router.wan}`,
        `listening_ip=${topo.interfaces.router.lan}`,
        'http_port=0',
        'enable_upnp=yes',
        'enable_natpmp=yes',
        'secure_mode=yes',
        'system_uptime=no',
        `uuid=${randomUUID()}`,
        `lease_file=${path.join(dir, 'upnp.leases')}`,
        `minissdpdsocket=${path.join(dir, 'minissdpd.sock')}`,
        'allow 1024-65535 198.19.0.0/24 1024-65535',
        'deny 0-65535 0.0.0.0/0 0-65535',
        '',
      ].join('\n'),
    );
    const miniupnpd = topo.spawn(
      'router',
      MINIUPNPD,
      ['-d', '-f', conf, '-P', path.join(dir, 'miniupnpd.pid')],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let upnpLog = '';
    const listening = new Promise<void>((resolve) => {
      for (const stream of [miniupnpd.stdout!, miniupnpd.stderr!]) {
        stream.setEncoding('utf8').on('data', (chunk: string) => {
          upnpLog += chunk;
          if (/Listening for NAT-PMP\/PCP traffic/.test(upnpLog) && /HTTP listening on port/.test(upnpLog))
            resolve();
        });
      }
    });
    cleanups.push(async () => {
      if (miniupnpd.exitCode === null && miniupnpd.signalCode === null) {
        const gone = new Promise((resolve) => miniupnpd.once('exit', resolve));
        miniupnpd.kill('SIGTERM');
        await gone;
      }
    });
    await within(listening, 10_000, 'miniupnpd listening');
    expect(upnpLog).toContain(
      'Reserved / private IP address 198.18.1.2 on ext interface wan0: Port forwarding is impossible',
    );

    const robots = new Map<string, string>();
    const { url } = await signalling(topo, robots);
    const { robot } = await startRobot(topo, url, robots);
    const line = await robot.waitForLine(/^port mapping: no gateway mapped UDP port/, 30_000);
    expect(line.msg).toContain(
      'NAT-PMP: gateway 198.19.0.1 refused (result 3: network failure (the gateway has no public address))',
    );
    expect(line.msg).toContain('UPnP: gateway 198.19.0.1 refused the mapping (Code 501 - ActionFailed)');
    expect(robot.matching(/^port mapping/)).toHaveLength(1);
    expect(await topo.routerDnatRules()).toEqual([]);
    expect(await robot.stop()).toBe(0);
  });
});
