import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createTopology,
  findChromium,
  formatIpv6,
  LinkType,
  NetnsError,
  readPcap,
  type Topology,
  type TopologyFor,
  type UdpPacket,
  udpPacketsFromPcap,
} from '../src/index.js';

const execFileAsync = promisify(execFile);

/**
 * A UDP socket in a namespace, driven through stdin (one JSON command per line) and reporting
 * on stdout (one JSON event per line). Arguments: family (udp4/udp6), bind address, mode
 * (`echo` answers every datagram with where it came from), and optionally a host and port to
 * `connect()` to (a connected socket reports the router's ICMP "port unreachable" as
 * ECONNREFUSED, which proves a datagram was delivered to the router itself).
 */
const AGENT = `
const dgram = require('node:dgram');
const readline = require('node:readline');
const [type, host, mode, connectHost, connectPort] = process.argv.slice(1);
const out = (event) => process.stdout.write(JSON.stringify(event) + '\\n');
const socket = dgram.createSocket(type);
socket.on('error', (err) => out({ event: 'error', code: err.code }));
socket.on('message', (msg, from) => {
  const text = msg.toString();
  out({ event: 'message', from: from.address, port: from.port, text });
  if (mode === 'echo') {
    socket.send(JSON.stringify({ seenFrom: from.address, seenPort: from.port, text }), from.port, from.address);
  }
});
socket.bind(0, host, () => {
  const ready = () => out({ event: 'ready', port: socket.address().port });
  if (connectHost) socket.connect(Number(connectPort), connectHost, ready);
  else ready();
});
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, text, host: to, port } = JSON.parse(line);
  const done = (err) => out({ event: 'sent', id, error: err ? err.code : null });
  if (to === undefined) socket.send(text, done);
  else socket.send(text, port, to, done);
});
`;

/** One line the agent printed. */
type AgentEvent =
  | { readonly event: 'ready'; readonly port: number }
  | { readonly event: 'message'; readonly from: string; readonly port: number; readonly text: string }
  | { readonly event: 'sent'; readonly id: number; readonly error: string | null }
  | { readonly event: 'error'; readonly code: string };

/** The test's handle on an {@link AGENT} process. */
class UdpAgent {
  readonly events: AgentEvent[] = [];
  readonly #child: ChildProcess;
  readonly #waiters = new Set<() => void>();
  #nextId = 0;

  private constructor(child: ChildProcess) {
    this.#child = child;
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      this.events.push(JSON.parse(line) as AgentEvent);
      for (const wake of this.#waiters) wake();
    });
  }

  static async start(
    topo: Topology,
    ns: 'internet' | 'router' | 'robot' | 'pilot',
    options: { family?: 4 | 6; bind?: string; echo?: boolean; connect?: { host: string; port: number } } = {},
  ): Promise<UdpAgent> {
    const family = options.family ?? 4;
    const args = ['-e', AGENT, `udp${family}`, options.bind ?? (family === 4 ? '0.0.0.0' : '::')];
    args.push(options.echo === true ? 'echo' : 'plain');
    if (options.connect !== undefined) args.push(options.connect.host, String(options.connect.port));
    const child = topo.spawn(ns, process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    const agent = new UdpAgent(child);
    await agent.next((e) => e.event === 'ready');
    return agent;
  }

  get port(): number {
    const ready = this.events.find((e) => e.event === 'ready');
    if (ready?.event !== 'ready') throw new Error('the agent is not ready');
    return ready.port;
  }

  /** Waits for an event (seen already or still to come) that matches. */
  next<E extends AgentEvent>(match: (event: AgentEvent) => event is E, timeoutMs?: number): Promise<E>;
  next(match: (event: AgentEvent) => boolean, timeoutMs?: number): Promise<AgentEvent>;
  next(match: (event: AgentEvent) => boolean, timeoutMs = 10_000): Promise<AgentEvent> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.events.find(match);
        if (found === undefined) return;
        cleanup();
        resolve(found);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(`no matching agent event within ${timeoutMs} ms; events: ${JSON.stringify(this.events)}`),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** Sends a datagram (to the connected peer when `to` is absent); resolves with the send error code, if any. */
  async send(text: string, to?: { host: string; port: number }): Promise<string | null> {
    const id = this.#nextId++;
    this.#child.stdin!.write(`${JSON.stringify({ id, text, host: to?.host, port: to?.port })}\n`);
    const sent = await this.next(
      (e): e is Extract<AgentEvent, { event: 'sent' }> => e.event === 'sent' && e.id === id,
    );
    return sent.error;
  }

  /** Datagrams received with exactly this text. */
  received(text: string): Extract<AgentEvent, { event: 'message' }>[] {
    return this.events.filter(
      (e): e is Extract<AgentEvent, { event: 'message' }> => e.event === 'message' && e.text === text,
    );
  }

  /** Waits for a datagram with this text. */
  receive(text: string): Promise<Extract<AgentEvent, { event: 'message' }>> {
    return this.next(
      (e): e is Extract<AgentEvent, { event: 'message' }> => e.event === 'message' && e.text === text,
    );
  }

  /** Waits for the reply of an echo agent to the datagram with this text. */
  async echoOf(
    text: string,
    timeoutMs?: number,
  ): Promise<{ seenFrom: string; seenPort: number; from: string; port: number }> {
    const reply = await this.next(
      (e) => e.event === 'message' && e.text.includes(`"text":${JSON.stringify(text)}`),
      timeoutMs,
    );
    if (reply.event !== 'message') throw new Error('unreachable');
    const body = JSON.parse(reply.text) as { seenFrom: string; seenPort: number };
    return { seenFrom: body.seenFrom, seenPort: body.seenPort, from: reply.from, port: reply.port };
  }

  /** How many socket errors with this code the agent reported. */
  errors(code: string): number {
    return this.events.filter((e) => e.event === 'error' && e.code === code).length;
  }
}

/** Prints the port of a UDP socket bound to port 0 in the namespace, then exits. */
const FREE_UDP_PORT = `
const s = require('node:dgram').createSocket('udp4');
s.bind(0, () => { process.stdout.write(String(s.address().port)); s.close(); });
`;

/** An HTTP server in the namespace; prints its port, answers every request with a small page. */
const HTTP_SERVER = `
const server = require('node:http').createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  res.end('<!doctype html><title>inside ' + process.argv[2] + '</title><p>' + req.socket.remoteAddress);
});
server.listen(0, process.argv[1], () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
`;

/** Starts {@link HTTP_SERVER} in a namespace and returns its port. */
async function startHttpServer(topo: Topology, ns: 'internet', host: string, label: string): Promise<number> {
  const child = topo.spawn(ns, process.execPath, ['-e', HTTP_SERVER, host, label], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return (JSON.parse(line) as { port: number }).port;
}

async function ipJson(args: readonly string[]): Promise<unknown> {
  const { stdout } = await execFileAsync('ip', ['-j', ...args]);
  return JSON.parse(stdout) as unknown;
}

async function namespaceNames(): Promise<string[]> {
  const { stdout } = await execFileAsync('ip', ['netns', 'list']);
  return stdout
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name !== '');
}

async function linkExists(name: string): Promise<boolean> {
  try {
    await execFileAsync('ip', ['link', 'show', 'dev', name]);
    return true;
  } catch {
    return false;
  }
}

const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');

describe('createTopology with a masquerading router', () => {
  let topo: TopologyFor<{ nat: 'masquerade' }>;

  beforeAll(async () => {
    topo = await createTopology({ nat: 'masquerade' });
  });
  afterAll(async () => {
    await topo?.close();
  });

  it('names three namespaces and uses only test addresses', () => {
    expect(Object.keys(topo.namespaces).sort()).toEqual(['internet', 'robot', 'router']);
    for (const name of Object.values(topo.namespaces)) {
      expect(name).toMatch(new RegExp(`^svct-${process.pid}-[0-9a-z]{4}-(internet|router|robot)$`));
    }
    expect(topo.interfaces.test.length).toBeLessThanOrEqual(15);
    expect(topo.addresses.ipv6).toBeUndefined();
    for (const address of Object.values(topo.addresses.ipv4)) expect(address).toMatch(/^198\.1[89]\./);
    expect(topo.addresses.ipv4).toMatchObject({
      cloudWan: '198.18.1.1',
      routerWan: '198.18.1.2',
      routerLan: '198.19.0.1',
      robot: '198.19.0.2',
    });
  });

  it('gives the root namespace only the route of its own link, and the internet namespace no default route', async () => {
    const { stdout: rootRoutes } = await execFileAsync('ip', [
      '-4',
      'route',
      'show',
      'dev',
      topo.interfaces.test,
    ]);
    const slotNet = topo.addresses.ipv4.cloud.replace(/\d+$/, (last) => String(Number(last) - 1));
    expect(rootRoutes.trim()).toBe(`${slotNet}/30 proto kernel scope link src ${topo.addresses.ipv4.test}`);
    const internetRoutes = await topo.run('internet', 'ip', ['-4', 'route', 'show', 'default']);
    expect(internetRoutes.stdout.trim()).toBe('');
    // Every namespace has its loopback up.
    for (const ns of ['internet', 'router', 'robot'] as const) {
      const lo = await topo.run(ns, 'ip', ['-j', 'link', 'show', 'dev', 'lo']);
      expect(lo.stdout).toContain('"UP"');
    }
  });

  it('translates the robot to the WAN address, keeps its port for every destination, and brings replies back', async () => {
    const echoA = await UdpAgent.start(topo, 'internet', { bind: topo.addresses.ipv4.cloudWan, echo: true });
    const echoB = await UdpAgent.start(topo, 'internet', { bind: topo.addresses.ipv4.cloudWan, echo: true });
    const robot = await UdpAgent.start(topo, 'robot');

    expect(await robot.send('to A', { host: topo.addresses.ipv4.cloudWan, port: echoA.port })).toBeNull();
    const replyA = await robot.echoOf('to A');
    expect(replyA).toEqual({
      seenFrom: topo.addresses.ipv4.routerWan,
      seenPort: robot.port,
      from: topo.addresses.ipv4.cloudWan,
      port: echoA.port,
    });
    expect(await robot.send('to B', { host: topo.addresses.ipv4.cloudWan, port: echoB.port })).toBeNull();
    const replyB = await robot.echoOf('to B');
    expect(replyB.seenFrom).toBe(topo.addresses.ipv4.routerWan);
    // One external port for both destinations: an endpoint-independent mapping.
    expect(replyB.seenPort).toBe(replyA.seenPort);
  });

  it('lets nothing from the internet reach the robot until a port is forwarded, and stops after removal', async () => {
    const robot = await UdpAgent.start(topo, 'robot');
    const { stdout: wanPortText } = await topo.run('router', process.execPath, ['-e', FREE_UDP_PORT]);
    const wanPort = Number(wanPortText);
    const prober = await UdpAgent.start(topo, 'internet', {
      connect: { host: topo.addresses.ipv4.routerWan, port: wanPort },
    });
    const direct = await UdpAgent.start(topo, 'internet');

    // No route to the robot LAN from the internet.
    expect(await direct.send('direct', { host: topo.addresses.ipv4.robot, port: robot.port })).toBe(
      'ENETUNREACH',
    );

    // The router drops what arrives for itself unasked, as a home router's firewall does; whether
    // it was forwarded shows below, after a datagram of the same flow that is.
    expect(await prober.send('before')).toBeNull();

    const forward = await topo.forwardPort({ protocol: 'udp', wanPort, lanPort: robot.port });
    try {
      expect(forward.rule.lanAddress).toBe(topo.addresses.ipv4.robot);
      const rules = await topo.routerDnatRules();
      expect(rules).toContainEqual(
        expect.objectContaining({
          protocol: 'udp',
          wanPort,
          lanAddress: topo.addresses.ipv4.robot,
          lanPort: robot.port,
          handle: forward.handle,
        }),
      );
      expect(await topo.routerRuleset()).toContain(`dnat to ${topo.addresses.ipv4.robot}:${robot.port}`);

      // The same flow (same source port) as before the forward reaches the robot now.
      expect(await prober.send('forwarded')).toBeNull();
      const got = await robot.receive('forwarded');
      expect(got).toMatchObject({ from: topo.addresses.ipv4.cloudWan, port: prober.port });
      // The datagram sent before the forward, on the same path, never came.
      expect(robot.received('before')).toEqual([]);
    } finally {
      await forward.remove();
    }
    expect(await topo.routerDnatRules()).toEqual([]);

    // After removal the router drops the flow again: a capture on its WAN sees the datagram
    // arrive, one on the LAN never sees it leave.
    const wan = await topo.capture('router', 'wan0', `udp and dst port ${wanPort}`);
    const lan = await topo.capture('router', 'lan0', 'udp');
    expect(await prober.send('after')).toBeNull();
    await wan.waitFor((packet) => Buffer.from(packet.payload).toString().includes('after'));
    await wan.stop();
    const leftOnLan = await lan.stop();
    expect(leftOnLan.filter((packet) => Buffer.from(packet.payload).toString().includes('after'))).toEqual(
      [],
    );
    expect(robot.received('after')).toEqual([]);
    await forward.remove();
  });

  it('lists the DNAT rules another program keeps in its own table, as miniupnpd does', async () => {
    const robot = topo.addresses.ipv4.robot;
    const foreign = `table inet filter {
  chain prerouting_miniupnpd {
    type nat hook prerouting priority dstnat; policy accept;
    iifname "${topo.interfaces.router.wan}" meta l4proto udp th dport 5000 dnat ip to ${robot}:6000
  }
}
`;
    expect((await topo.run('router', 'nft', ['-f', '-'], { input: foreign })).code).toBe(0);
    try {
      expect(await topo.routerDnatRules()).toEqual([
        expect.objectContaining({
          family: 'inet',
          table: 'filter',
          chain: 'prerouting_miniupnpd',
          protocol: 'udp',
          wanPort: 5000,
          lanAddress: robot,
          lanPort: 6000,
        }),
      ]);
    } finally {
      await topo.run('router', 'nft', ['delete', 'table', 'inet', 'filter']);
    }
  });

  it('captures the UDP payload on both sides of the router: the robot address on the LAN, the WAN address outside', async () => {
    const echo = await UdpAgent.start(topo, 'internet', { bind: topo.addresses.ipv4.cloudWan, echo: true });
    const robot = await UdpAgent.start(topo, 'robot');
    const wan = await topo.capture('router', topo.interfaces.router.wan, `udp and port ${echo.port}`);
    const all = await topo.capture('router', 'any', 'udp');
    const payload = `bytes \u{1F916} ${Date.now()}`;
    await robot.send(payload, { host: topo.addresses.ipv4.cloudWan, port: echo.port });
    await robot.echoOf(payload);

    const isPayload = (p: UdpPacket) => text(p.payload) === payload;
    await wan.waitFor(isPayload);
    const onWan = (await wan.stop()).filter(isPayload);
    expect(onWan).toHaveLength(1);
    expect(onWan[0]).toMatchObject({
      family: 4,
      src: topo.addresses.ipv4.routerWan,
      dst: topo.addresses.ipv4.cloudWan,
      srcPort: robot.port,
      dstPort: echo.port,
    });
    expect(onWan[0]?.payload).toEqual(new Uint8Array(Buffer.from(payload)));

    await all.waitFor((p) => isPayload(p) && p.src === topo.addresses.ipv4.routerWan);
    const onAny = (await all.stop()).filter(isPayload);
    // `any` (Linux cooked v2) sees it arrive on the LAN and leave on the WAN.
    expect(onAny.map((p) => p.src).sort()).toEqual(
      [topo.addresses.ipv4.robot, topo.addresses.ipv4.routerWan].sort(),
    );
    // stop() again gives the same packets.
    expect((await wan.stop()).filter(isPayload)).toEqual(onWan);
  });

  it('lets the test process reach a TCP server in the internet namespace', async () => {
    const port = await startHttpServer(topo, 'internet', '0.0.0.0', 'internet');
    const response = await fetch(`http://${topo.addresses.ipv4.cloud}:${port}/`);
    const body = await response.text();
    expect(body).toContain('<title>inside internet</title>');
    // The server sees the test process at its own address on the link.
    expect(body).toContain(topo.addresses.ipv4.test);
  });

  it('runs Chromium inside the internet namespace through a wrapper script', async () => {
    const port = await startHttpServer(topo, 'internet', topo.addresses.ipv4.cloudWan, 'chromium');
    const tempDir = await mkdtemp(join(tmpdir(), 'netns-chromium-'));
    const browser = await chromium.launch({
      executablePath: topo.wrapperFor('internet', findChromium()),
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      env: { ...process.env, TMPDIR: tempDir },
      timeout: 30_000,
    });
    try {
      const page = await browser.newPage();
      // 198.18.1.1 exists only inside the topology: the root namespace has no route to it.
      await page.goto(`http://${topo.addresses.ipv4.cloudWan}:${port}/`);
      expect(await page.title()).toBe('inside chromium');
    } finally {
      await browser.close();
      await rm(tempDir, { recursive: true, force: true });
    }
  });
});

describe('createTopology with a symmetric NAT', () => {
  let topo: TopologyFor<{ nat: 'symmetric' }>;

  beforeAll(async () => {
    topo = await createTopology({ nat: 'symmetric' });
  });
  afterAll(async () => {
    await topo?.close();
  });

  it('gives one robot socket a different external port for each destination', async () => {
    const echoA = await UdpAgent.start(topo, 'internet', { bind: topo.addresses.ipv4.cloudWan, echo: true });
    const echoB = await UdpAgent.start(topo, 'internet', { bind: topo.addresses.ipv4.cloudWan, echo: true });
    const robot = await UdpAgent.start(topo, 'robot');
    await robot.send('to A', { host: topo.addresses.ipv4.cloudWan, port: echoA.port });
    await robot.send('to B', { host: topo.addresses.ipv4.cloudWan, port: echoB.port });
    const [a, b] = await Promise.all([robot.echoOf('to A'), robot.echoOf('to B')]);
    expect(a.seenFrom).toBe(topo.addresses.ipv4.routerWan);
    expect(b.seenFrom).toBe(topo.addresses.ipv4.routerWan);
    expect(a.seenPort).not.toBe(b.seenPort);
  });
});

describe('createTopology with a pilot side', () => {
  let topo: TopologyFor<{ pilotNat: 'masquerade' }>;
  let blocked: TopologyFor<{ pilotNat: 'masquerade'; pilotUdp: false }>;

  beforeAll(async () => {
    topo = await createTopology({ pilotNat: 'masquerade' });
    blocked = await createTopology({ pilotNat: 'masquerade', pilotUdp: false });
  });
  afterAll(async () => {
    await topo?.close();
    await blocked?.close();
  });

  it('puts the pilot behind its own NAT, and lets pilot and robot reach each other only by punching through', async () => {
    const pilotSide = topo.pilot!;
    const echo = await UdpAgent.start(topo, 'internet', { bind: pilotSide.internet, echo: true });
    const pilot = await UdpAgent.start(topo, 'pilot');
    await pilot.send('hello', { host: pilotSide.internet, port: echo.port });
    const echoed = await pilot.echoOf('hello');
    expect(echoed.seenFrom).toBe(pilotSide.routerWan);

    // The robot's first datagram to the pilot's public port is dropped by the pilot's router, and
    // leaves nothing behind that would change the robot's own mapping; once both have sent, each
    // reaches the other at the other's public address and port.
    const robot = await UdpAgent.start(topo, 'robot');
    await robot.send('to pilot, unasked', { host: pilotSide.routerWan, port: pilot.port });
    await pilot.send('to robot', { host: topo.addresses.ipv4.routerWan, port: robot.port });
    await robot.send('to pilot', { host: pilotSide.routerWan, port: pilot.port });
    const [atPilot, atRobot] = await Promise.all([
      pilot.next((e) => e.event === 'message' && e.text === 'to pilot'),
      robot.next((e) => e.event === 'message' && e.text === 'to robot'),
    ]);
    expect(atPilot).toMatchObject({ from: topo.addresses.ipv4.routerWan, port: robot.port });
    expect(atRobot).toMatchObject({ from: pilotSide.routerWan, port: pilot.port });
    expect(pilot.events.some((e) => e.event === 'message' && e.text === 'to pilot, unasked')).toBe(false);
  });

  it('with pilotUdp false, lets no UDP of the pilot out while TCP still passes', async () => {
    const pilotSide = blocked.pilot!;
    const echo = await UdpAgent.start(blocked, 'internet', { bind: pilotSide.internet, echo: true });
    const pilot = await UdpAgent.start(blocked, 'pilot');
    await pilot.send('hello', { host: pilotSide.internet, port: echo.port });
    await expect(pilot.echoOf('hello', 1_000)).rejects.toThrow(/no matching agent event/);
    const port = await startHttpServer(blocked, 'internet', pilotSide.internet, 'tcp passes');
    const fetched = await blocked.run('pilot', process.execPath, [
      '-e',
      'fetch(process.argv[1]).then((r) => r.text()).then((t) => process.stdout.write(t))',
      `http://${pilotSide.internet}:${port}/`,
    ]);
    expect(fetched.stdout).toContain('tcp passes');
  });
});

describe('createTopology with IPv6', () => {
  const topologies: Topology[] = [];
  afterEach(async () => {
    await Promise.all(topologies.splice(0).map((t) => t.close()));
  });

  it('IPv6 only: the robot reaches the internet with its own ULA address and has no IPv4 but loopback', async () => {
    const topo = await createTopology({ ipv4: false, ipv6: true });
    topologies.push(topo);
    expect(topo.addresses.ipv4).toBeUndefined();
    const v6 = topo.addresses.ipv6;
    for (const address of Object.values(v6)) expect(address).toMatch(/^fd00:/);
    const echo = await UdpAgent.start(topo, 'internet', { family: 6, bind: v6.cloudWan, echo: true });
    const robot = await UdpAgent.start(topo, 'robot', { family: 6 });
    await robot.send('hello v6', { host: v6.cloudWan, port: echo.port });
    expect(await robot.echoOf('hello v6')).toEqual({
      seenFrom: v6.robot,
      seenPort: robot.port,
      from: v6.cloudWan,
      port: echo.port,
    });

    for (const ns of ['internet', 'router', 'robot'] as const) {
      const shown = await topo.run(ns, 'ip', ['-4', '-o', 'addr', 'show']);
      expect(shown.stdout.trim().split('\n')).toEqual([
        expect.stringMatching(/^1: lo +inet 127\.0\.0\.1\/8 /),
      ]);
    }
    const tentative = await topo.run('robot', 'ip', ['-6', '-o', 'addr', 'show', 'tentative']);
    expect(tentative.stdout.trim()).toBe('');
    await expect(topo.forwardPort({ protocol: 'udp', wanPort: 1, lanPort: 1 })).rejects.toThrow(TypeError);
  });

  it('dual stack behind a NAT: the internet reaches the robot directly over IPv6, not over IPv4', async () => {
    const topo = await createTopology({ nat: 'masquerade', ipv6: true });
    topologies.push(topo);
    const robot6 = await UdpAgent.start(topo, 'robot', { family: 6, echo: true });
    const peer6 = await UdpAgent.start(topo, 'internet', { family: 6 });
    await peer6.send('inbound v6', { host: topo.addresses.ipv6.robot, port: robot6.port });
    expect(await peer6.echoOf('inbound v6')).toMatchObject({ seenFrom: topo.addresses.ipv6.cloudWan });
    const peer4 = await UdpAgent.start(topo, 'internet');
    expect(await peer4.send('inbound v4', { host: topo.addresses.ipv4.robot, port: robot6.port })).toBe(
      'ENETUNREACH',
    );

    // The test process reaches the internet namespace over IPv6 too.
    const port = await startHttpServer(topo, 'internet', '::', 'internet');
    const response = await fetch(`http://[${topo.addresses.ipv6.cloud}]:${port}/`);
    expect(await response.text()).toContain(topo.addresses.ipv6.test);
  });
});

describe('Topology.close', () => {
  it('kills the processes, removes every namespace and link, and can be called again', async () => {
    const topo = await createTopology();
    const names = Object.values(topo.namespaces);
    const testLink = topo.interfaces.test;
    expect((await namespaceNames()).filter((n) => names.includes(n)).sort()).toEqual([...names].sort());
    expect(await linkExists(testLink)).toBe(true);

    const tracked = topo.spawn('robot', process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      stdio: 'ignore',
    });
    // A process the topology did not start itself (as Playwright starts a browser through a wrapper).
    const untracked = spawn(
      topo.wrapperFor('router', process.execPath),
      ['-e', 'setInterval(() => {}, 1000)'],
      {
        stdio: 'ignore',
      },
    );
    const exits = [once(tracked, 'exit'), once(untracked, 'exit')];
    try {
      await topo.close();
      await Promise.all(exits);
      for (const name of names) expect(await namespaceNames()).not.toContain(name);
      expect(await linkExists(testLink)).toBe(false);
      const links = (await ipJson(['link', 'show'])) as { ifname: string }[];
      expect(links.map((l) => l.ifname).filter((n) => n === testLink)).toEqual([]);
      await topo.close();
      expect(() => topo.spawn('robot', 'true')).toThrow(NetnsError);
    } finally {
      untracked.kill('SIGKILL');
      await topo.close();
    }
  });

  it('deletes the namespaces a crashed run left behind', async () => {
    // A pid that has just ended stands for the crashed test process.
    const gone = spawn(process.execPath, ['-e', '']);
    await once(gone, 'exit');
    const leftover = `svct-${gone.pid}-zz99-robot`;
    await execFileAsync('ip', ['netns', 'add', leftover]);
    let topo: Topology | undefined;
    try {
      topo = await createTopology({ nat: 'none' });
      expect(await namespaceNames()).not.toContain(leftover);
      expect(await namespaceNames()).toContain(topo.namespaces.robot);
    } finally {
      await topo?.close();
      await execFileAsync('ip', ['netns', 'delete', leftover]).catch(() => undefined);
    }
  });

  it('routes without NAT when nat is none', async () => {
    const topo = await createTopology({ nat: 'none' });
    try {
      const robot = await UdpAgent.start(topo, 'robot', { echo: true });
      const peer = await UdpAgent.start(topo, 'internet');
      await peer.send('routed', { host: topo.addresses.ipv4.robot, port: robot.port });
      expect(await peer.echoOf('routed')).toMatchObject({
        seenFrom: topo.addresses.ipv4.cloudWan,
        seenPort: peer.port,
      });
      expect((await topo.routerRuleset()).trim()).toBe('');
    } finally {
      await topo.close();
    }
  });
});

describe('readPcap and udpPacketsFromPcap', () => {
  /** Global header: little-endian, microseconds, snap length 262144, the given link type. */
  const globalHeader = (linkType: number): number[] => [
    ...[0xd4, 0xc3, 0xb2, 0xa1], // magic a1b2c3d4, little-endian: microsecond timestamps
    ...[0x02, 0x00, 0x04, 0x00], // version 2.4
    ...[0, 0, 0, 0], // thiszone
    ...[0, 0, 0, 0], // sigfigs
    ...[0x00, 0x00, 0x04, 0x00], // snap length 262144
    ...[linkType & 0xff, (linkType >> 8) & 0xff, 0, 0], // link type
  ];
  const le32 = (n: number): number[] => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff];
  const record = (data: number[]): number[] => [
    ...le32(1_700_000_000), // seconds
    ...le32(250_000), // microseconds
    ...le32(data.length), // captured length
    ...le32(data.length), // original length
    ...data,
  ];
  // IPv4 198.19.0.2:40000 -> 198.18.1.1:7000, payload "hi"
  const ipv4Udp = [
    ...[0x45, 0x00, 0x00, 0x1e], // version 4, IHL 5; total length 30
    ...[0x12, 0x34, 0x40, 0x00], // identification; don't fragment, offset 0
    ...[0x40, 0x11, 0x00, 0x00], // TTL 64, protocol 17 (UDP), checksum (not checked)
    ...[198, 19, 0, 2], // source
    ...[198, 18, 1, 1], // destination
    ...[0x9c, 0x40, 0x1b, 0x58], // source port 40000, destination port 7000
    ...[0x00, 0x0a, 0x00, 0x00], // UDP length 10, checksum
    ...[0x68, 0x69], // "hi"
  ];
  const ethernet = [...[2, 0, 0, 0, 0, 1], ...[2, 0, 0, 0, 0, 2], 0x08, 0x00]; // dst MAC, src MAC, IPv4
  // IPv6 fd00:19::2:5000 -> fd00:18:1::1:6000, payload "v6!"
  const ipv6Udp = [
    ...[0x60, 0x00, 0x00, 0x00], // version 6, class, flow label
    ...[0x00, 0x0b, 0x11, 0x40], // payload length 11, next header 17 (UDP), hop limit 64
    ...[0xfd, 0x00, 0x00, 0x19, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02], // source fd00:19::2
    ...[0xfd, 0x00, 0x00, 0x18, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01], // destination fd00:18:1::1
    ...[0x13, 0x88, 0x17, 0x70], // source port 5000, destination port 6000
    ...[0x00, 0x0b, 0x00, 0x00], // UDP length 11, checksum
    ...[0x76, 0x36, 0x21], // "v6!"
  ];
  const sll2 = [
    ...[0x86, 0xdd, 0x00, 0x00], // protocol IPv6, reserved
    ...[0, 0, 0, 3], // interface index
    ...[0x00, 0x01, 0x04, 0x06], // ARPHRD_ETHER, outgoing, address length 6
    ...[2, 0, 0, 0, 0, 1, 0, 0], // address, padded to 8
  ];

  it('decodes IPv4 UDP over Ethernet', () => {
    const bytes = new Uint8Array([...globalHeader(LinkType.EN10MB), ...record([...ethernet, ...ipv4Udp])]);
    expect(udpPacketsFromPcap(bytes)).toEqual([
      {
        time: 1_700_000_000_250,
        family: 4,
        src: '198.19.0.2',
        dst: '198.18.1.1',
        srcPort: 40000,
        dstPort: 7000,
        payload: new Uint8Array([0x68, 0x69]),
      },
    ]);
  });

  it('decodes IPv6 UDP in a Linux cooked v2 capture, and skips other protocols', () => {
    const tcp = [...ipv4Udp];
    tcp[9] = 6;
    const bytes = new Uint8Array([
      ...globalHeader(LinkType.LINUX_SLL2),
      ...record([...sll2, ...ipv6Udp]),
      ...record([0x08, 0x00, ...sll2.slice(2), ...tcp]),
    ]);
    const packets = udpPacketsFromPcap(bytes);
    expect(packets).toHaveLength(1);
    expect(packets[0]).toMatchObject({
      family: 6,
      src: 'fd00:19::2',
      dst: 'fd00:18:1::1',
      srcPort: 5000,
      dstPort: 6000,
    });
    expect(text(packets[0]?.payload ?? new Uint8Array())).toBe('v6!');
  });

  it('decodes Linux cooked v1, big-endian files and nanosecond timestamps', () => {
    const sll = [0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
    const header = [
      ...[0xa1, 0xb2, 0x3c, 0x4d], // magic a1b23c4d, big-endian: nanosecond timestamps
      ...[0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0], // version, thiszone, sigfigs, snap length
      ...[0, 0, 0, LinkType.LINUX_SLL], // link type 113
    ];
    const data = [...sll, ...ipv4Udp];
    const be32 = (n: number): number[] => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
    const bytes = new Uint8Array([
      ...header,
      ...be32(10), // seconds
      ...be32(500_000_000), // nanoseconds
      ...be32(data.length),
      ...be32(data.length),
      ...data,
    ]);
    const [packet] = udpPacketsFromPcap(bytes);
    expect(packet).toMatchObject({ time: 10_500, src: '198.19.0.2', srcPort: 40000 });
  });

  it('stops at a record cut short, at every offset, and rejects what is not pcap', () => {
    const whole = [...globalHeader(LinkType.EN10MB), ...record([...ethernet, ...ipv4Udp])];
    for (let cut = 0; cut < whole.length; cut += 1) {
      const bytes = new Uint8Array(whole.slice(0, cut));
      if (cut < 24) {
        expect(() => readPcap(bytes)).toThrow(/not a pcap file/);
        continue;
      }
      const file = readPcap(bytes);
      expect(file.records).toEqual([]);
      expect(file.incompleteTail).toBe(cut > 24);
    }
    expect(readPcap(new Uint8Array(whole)).incompleteTail).toBe(false);
    expect(() => readPcap(new Uint8Array(24))).toThrow(/magic number 0x00000000/);
    const huge = [...globalHeader(LinkType.EN10MB), ...le32(0), ...le32(0), ...le32(0x7fffffff), ...le32(0)];
    expect(() => readPcap(new Uint8Array(huge))).toThrow(/claims 2147483647 bytes/);
  });

  it('skips IP fragments and datagrams cut by the snap length', () => {
    const fragment = [...ipv4Udp];
    fragment[6] = 0x20; // more fragments
    const cut = [...ethernet, ...ipv4Udp].slice(0, -1);
    const bytes = new Uint8Array([
      ...globalHeader(LinkType.EN10MB),
      ...record([...ethernet, ...fragment]),
      ...record(cut),
    ]);
    expect(readPcap(bytes).records).toHaveLength(2);
    expect(udpPacketsFromPcap(bytes)).toEqual([]);
  });

  it('formats IPv6 addresses as RFC 5952 says', () => {
    const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));
    expect(formatIpv6(bytes('fd000019000000000000000000000002'))).toBe('fd00:19::2');
    expect(formatIpv6(bytes('00000000000000000000000000000001'))).toBe('::1');
    expect(formatIpv6(bytes('00000000000000000000000000000000'))).toBe('::');
    expect(formatIpv6(bytes('20010db8000000010000000000000001'))).toBe('2001:db8:0:1::1');
    expect(formatIpv6(bytes('20010db8000000000001000000000001'))).toBe('2001:db8::1:0:0:1');
    expect(formatIpv6(bytes('fd000018000000000000000000000000'))).toBe('fd00:18::');
    expect(formatIpv6(bytes('00000000000000000000ffffc6120101'))).toBe('::ffff:198.18.1.1');
    expect(formatIpv6(bytes('20010db8000100020003000400050006'))).toBe('2001:db8:1:2:3:4:5:6');
  });
});
