/**
 * The port mapper's logic on fake time, with fake protocol clients at the boundary (the library):
 * renewal at half the lease, the announce on a change of address, the removal at stop, and a
 * robot without a mapping gateway logging the reason once and retrying quietly. The user-visible
 * behaviour with real namespaces and gateways is in port-mapping-e2e.test.ts.
 */
import { EventEmitter } from 'node:events';
import type { NetworkInterfaceInfo } from 'node:os';
import type { Gateway } from '@achingbrain/nat-port-mapper';
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import type { SignalCandidate } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { candidateSource } from '../src/candidates.js';
import { ConfigError, parseConfig } from '../src/config.js';
import {
  type GatewayClient,
  type MappedPort,
  type MapRequest,
  PortMappingError,
  type PortMappingProtocol,
} from '../src/port-mapping/gateway-client.js';
import { PORT_MAPPING_RETRY, PORT_MAPPING_RETRY_FLOOR_MS, PortMapper } from '../src/port-mapping/mapper.js';
import { NatPmpClient } from '../src/port-mapping/nat-pmp.js';
import { defaultGatewayFromRouteTable } from '../src/port-mapping/network.js';

const PORT = 4433;
const HOUR_S = 3600;

type Answer = MappedPort | Error | 'hang';

/** A protocol client whose gateway answers what the test says, recording every call. */
class FakeClient implements GatewayClient {
  readonly protocol: PortMappingProtocol;
  readonly maps: { request: MapRequest; signal: AbortSignal }[] = [];
  readonly unmaps: MappedPort[] = [];
  closed = 0;
  /** What the next `map` calls get; the last one repeats. */
  answers: Answer[];
  /** Answers even after the signal aborted (a reply already on its way). */
  ignoreAbort = false;

  constructor(protocol: PortMappingProtocol, ...answers: Answer[]) {
    this.protocol = protocol;
    this.answers = answers;
  }

  map(request: MapRequest, signal: AbortSignal): Promise<MappedPort> {
    this.maps.push({ request, signal });
    const answer = this.answers.length > 1 ? this.answers.shift()! : this.answers[0]!;
    if (answer === 'hang') {
      return new Promise((_, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    if (this.ignoreAbort) return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    if (signal.aborted) return Promise.reject(signal.reason);
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  }

  async unmap(mapping: MappedPort): Promise<void> {
    this.unmaps.push(mapping);
  }

  async close(): Promise<void> {
    this.closed++;
  }
}

function mapped(protocol: PortMappingProtocol, externalAddress: string, externalPort = PORT): MappedPort {
  return {
    protocol,
    gateway: '198.19.0.1',
    internalAddress: '198.19.0.2',
    internalPort: PORT,
    externalAddress,
    externalPort,
    lifetimeS: HOUR_S,
  };
}

const NO_PMP = new PortMappingError('no-answer', 'NAT-PMP: no answer from 198.19.0.1:5351 within 3 s');
const NO_UPNP = new PortMappingError(
  'no-answer',
  'UPnP: no UPnP-IGD v2 gateway answered an SSDP search within 5 s',
);

function harness(clients: FakeClient[], random = () => 0.5) {
  const clock = new FakeClock();
  const logger = memoryLogger();
  const mapper = new PortMapper({ port: PORT, lifetimeS: HOUR_S, clients, logger, clock, random });
  const changes: (SignalCandidate | undefined)[] = [];
  mapper.on('changed', (candidate) => changes.push(candidate));
  const lines = (level: 'info' | 'warn') =>
    logger.records.filter((r) => r.level === level).map((r) => r.message);
  return { clock, logger, mapper, changes, lines };
}

/** Lets the mapper's awaits run (the fake clients answer at once). */
async function settle(clock: FakeClock): Promise<void> {
  await clock.advanceAsync(0);
}

describe('port mapper', () => {
  it('maps the QUIC port, announces the public address, renews at half the lease and removes it at stop', async () => {
    const pmp = new FakeClient('natpmp', mapped('natpmp', '198.18.1.2'));
    const upnp = new FakeClient('upnp', NO_UPNP);
    const { clock, mapper, changes, lines } = harness([pmp, upnp]);

    mapper.start();
    await settle(clock);
    const candidate = { address: '198.18.1.2', port: PORT, family: 'ipv4', kind: 'mapped' };
    expect(mapper.candidate()).toEqual(candidate);
    expect(changes).toEqual([candidate]);
    expect(pmp.maps.map((m) => m.request)).toEqual([{ internalPort: PORT, lifetimeS: HOUR_S }]);
    expect(upnp.maps).toEqual([]);
    expect(lines('info')).toEqual([
      'port mapping: UDP 198.18.1.2:4433 on the gateway 198.19.0.1 (NAT-PMP) forwards to QUIC port 4433; announced as a mapped candidate, renewed every 1800 s',
    ]);
    expect(mapper.state).toMatchObject({ kind: 'mapped', renewInMs: 1_800_000 });

    await clock.advanceAsync(1_800_000 - 1);
    expect(pmp.maps).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(pmp.maps[1]?.request).toEqual({ internalPort: PORT, lifetimeS: HOUR_S, externalPort: PORT });
    await clock.advanceAsync(1_800_000);
    expect(pmp.maps).toHaveLength(3);
    // Renewals that change nothing say nothing and announce nothing.
    expect(changes).toHaveLength(1);
    expect(lines('info')).toHaveLength(1);

    await mapper.stop();
    expect(pmp.unmaps).toEqual([mapped('natpmp', '198.18.1.2')]);
    expect(lines('info').at(-1)).toBe(
      'port mapping: removed UDP 198.18.1.2:4433 from the gateway 198.19.0.1',
    );
    expect([pmp.closed, upnp.closed]).toEqual([1, 1]);
    expect(mapper.candidate()).toBeUndefined();
    expect(mapper.state).toEqual({ kind: 'stopped' });
    expect(clock.pendingTimers).toBe(0);
    expect(changes).toHaveLength(1);
    expect(lines('warn')).toEqual([]);
  });

  it('announces again when a renewal brings another public address or port', async () => {
    const pmp = new FakeClient(
      'natpmp',
      mapped('natpmp', '198.18.1.2'),
      mapped('natpmp', '198.18.1.3'),
      mapped('natpmp', '198.18.1.3', 40_001),
    );
    const { clock, mapper, changes, lines } = harness([pmp]);
    mapper.start();
    await settle(clock);
    await clock.advanceAsync(1_800_000);
    expect(changes.map((c) => `${c?.address}:${c?.port}`)).toEqual(['198.18.1.2:4433', '198.18.1.3:4433']);
    expect(lines('info')[1]).toBe(
      'port mapping: the public address changed from 198.18.1.2:4433 to 198.18.1.3:4433; announcing it',
    );
    await clock.advanceAsync(1_800_000);
    expect(changes.at(-1)).toEqual({ address: '198.18.1.3', port: 40_001, family: 'ipv4', kind: 'mapped' });
    // The next renewal asks for the port the gateway gave.
    await clock.advanceAsync(1_800_000);
    expect(pmp.maps.at(-1)?.request.externalPort).toBe(40_001);
    await mapper.stop();
  });

  it('without a gateway logs the reason once, retries quietly, backing off, and speaks again when the reason changes or it maps', async () => {
    const pmp = new FakeClient('natpmp', NO_PMP);
    const upnp = new FakeClient('upnp', NO_UPNP);
    const { clock, mapper, changes, lines } = harness([pmp, upnp], () => 0.999);

    mapper.start();
    await settle(clock);
    expect(lines('warn')).toEqual([
      'port mapping: no gateway mapped UDP port 4433 (NAT-PMP: no answer from 198.19.0.1:5351 within 3 s; UPnP: no UPnP-IGD v2 gateway answered an SSDP search within 5 s); announcing host candidates only and trying again, less and less often (at most every 5 minutes)',
    ]);
    expect(mapper.candidate()).toBeUndefined();
    expect(changes).toEqual([]);

    // Ten more tries, each wait about twice the last (up to 5 minutes); the log stays at one line.
    const waits: number[] = [];
    for (let i = 0; i < 10; i++) {
      const state = mapper.state;
      if (state.kind !== 'waiting') throw new Error(`expected waiting, got ${state.kind}`);
      waits.push(state.retryInMs);
      await clock.advanceAsync(state.retryInMs);
    }
    expect(pmp.maps).toHaveLength(11);
    expect(upnp.maps).toHaveLength(11);
    expect(lines('warn')).toHaveLength(1);
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(PORT_MAPPING_RETRY_FLOOR_MS);
    expect(Math.max(...waits)).toBeLessThanOrEqual(PORT_MAPPING_RETRY_FLOOR_MS + PORT_MAPPING_RETRY.capMs);
    expect(waits.slice(0, 4)).toEqual([5996, 9992, 17_984, 33_968]);

    // A gateway appears that refuses: a new reason, said once.
    pmp.answers = [
      new PortMappingError('refused', 'NAT-PMP: gateway 198.19.0.1 refused (result 3: network failure)'),
    ];
    await clock.advanceAsync(329_999);
    await clock.advanceAsync(329_999);
    expect(lines('warn')).toHaveLength(2);
    expect(lines('warn')[1]).toContain('NAT-PMP: gateway 198.19.0.1 refused (result 3: network failure)');

    // Then it maps: said and announced.
    pmp.answers = [mapped('natpmp', '198.18.1.2')];
    await clock.advanceAsync(329_999);
    expect(mapper.state.kind).toBe('mapped');
    expect(changes).toEqual([{ address: '198.18.1.2', port: PORT, family: 'ipv4', kind: 'mapped' }]);
    expect(lines('info')).toHaveLength(1);
    await mapper.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  it('asks the protocols in order and keeps to the one that mapped', async () => {
    const pmp = new FakeClient('natpmp', NO_PMP);
    const upnp = new FakeClient('upnp', mapped('upnp', '198.18.1.2'));
    const { clock, mapper, lines } = harness([pmp, upnp]);
    mapper.start();
    await settle(clock);
    expect(mapper.candidate()?.address).toBe('198.18.1.2');
    expect(lines('warn')).toEqual([]);
    expect(lines('info')[0]).toContain('(UPnP)');
    await clock.advanceAsync(1_800_000);
    expect([pmp.maps.length, upnp.maps.length]).toEqual([1, 2]);
    await mapper.stop();
    expect([pmp.unmaps.length, upnp.unmaps.length]).toEqual([0, 1]);
  });

  it('keeps a mapping whose renewal fails while the lease lasts, then drops it and says so', async () => {
    const pmp = new FakeClient('natpmp', mapped('natpmp', '198.18.1.2'), NO_PMP);
    const upnp = new FakeClient('upnp', NO_UPNP);
    const { clock, mapper, changes, lines } = harness([pmp, upnp]);
    mapper.start();
    await settle(clock);
    await clock.advanceAsync(1_800_000);
    expect(mapper.candidate()?.address).toBe('198.18.1.2');
    expect(mapper.state).toMatchObject({ kind: 'mapped', renewInMs: 900_000 });
    expect(lines('warn')).toEqual([
      'port mapping: renewing the lease failed: NAT-PMP: no answer from 198.19.0.1:5351 within 3 s; the mapping holds for another 1800 s, trying again in 900 s',
    ]);
    // Half the rest each time, quietly, until the lease runs out.
    const renewals = pmp.maps.length;
    await clock.advanceAsync(1_800_000);
    expect(pmp.maps.length - renewals).toBeGreaterThan(5);
    expect(mapper.candidate()).toBeUndefined();
    expect(changes.at(-1)).toBeUndefined();
    expect(changes).toHaveLength(2);
    expect(lines('warn').slice(1)).toEqual([
      'port mapping: lost UDP 198.18.1.2:4433, the lease ran out without a renewal (NAT-PMP: no answer from 198.19.0.1:5351 within 3 s); announcing host candidates only',
    ]);
    // Only the gateway that held the lease was asked to renew.
    expect(upnp.maps).toEqual([]);
    expect(mapper.state.kind).toBe('waiting');
    await mapper.stop();
    expect(pmp.unmaps).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('stops a try in flight without leaving a timer, a mapping or a log line behind', async () => {
    const pmp = new FakeClient('natpmp', 'hang');
    const { clock, mapper, changes, logger } = harness([pmp]);
    mapper.start();
    await settle(clock);
    expect(mapper.state.kind).toBe('mapping');
    await mapper.stop();
    expect(pmp.maps[0]?.signal.aborted).toBe(true);
    expect(pmp.unmaps).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
    expect(changes).toEqual([]);
    expect(logger.records.filter((r) => r.level !== 'debug')).toEqual([]);
  });

  it('removes a mapping whose answer arrives after stop', async () => {
    const pmp = new FakeClient('natpmp', mapped('natpmp', '198.18.1.2'));
    pmp.ignoreAbort = true;
    const { clock, mapper, changes } = harness([pmp]);
    mapper.start();
    // stop() before the answer is handled.
    await mapper.stop();
    expect(pmp.unmaps).toEqual([mapped('natpmp', '198.18.1.2')]);
    expect(changes).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('counts an answer without a usable public address as a failure', async () => {
    const pmp = new FakeClient('natpmp', mapped('natpmp', ''));
    const { clock, mapper, lines } = harness([pmp]);
    mapper.start();
    await settle(clock);
    expect(mapper.candidate()).toBeUndefined();
    expect(lines('warn')[0]).toContain(
      'NAT-PMP: gateway 198.19.0.1 answered with an unusable public address ""',
    );
    await mapper.stop();
  });

  it('logs a failure that is not the library’s coded error by its text', async () => {
    const pmp = new FakeClient('natpmp', new Error('EHOSTUNREACH 198.19.0.1:5351\nstack'));
    const { clock, mapper, lines } = harness([pmp]);
    mapper.start();
    await settle(clock);
    expect(lines('warn')[0]).toContain('(NAT-PMP: EHOSTUNREACH 198.19.0.1:5351)');
    await mapper.stop();
  });
});

describe('NAT-PMP client', () => {
  /** The library's gateway as far as the client uses it: `map` answers as told, `stop` is counted. */
  function libraryGateway(map: Gateway['map']): Gateway & EventEmitter & { stops: number } {
    const gateway = Object.assign(new EventEmitter(), {
      id: '198.19.0.1',
      host: '198.19.0.1',
      port: 5351,
      family: 'IPv4' as const,
      stops: 0,
      map,
      mapAll: () => {
        throw new Error('not used');
      },
      unmap: async () => {},
      externalIp: async () => '198.18.1.2',
      async stop() {
        gateway.stops++;
      },
    });
    return gateway;
  }

  const request = { internalPort: PORT, lifetimeS: HOUR_S };
  const options = { gateway: '198.19.0.1', internalAddress: '198.19.0.2' };

  it('asks for the UDP port with the lifetime in seconds and closes the socket after', async () => {
    const seen: unknown[] = [];
    const gateway = libraryGateway(async (port, host, opts) => {
      seen.push({ port, host, protocol: opts?.protocol, ttl: opts?.ttl, externalPort: opts?.externalPort });
      return {
        externalHost: '198.18.1.2',
        externalPort: 40_000,
        internalHost: host,
        internalPort: port,
        protocol: 'UDP',
      };
    });
    const client = new NatPmpClient({ ...options, createGateway: () => gateway });
    const mapping = await client.map(request, new AbortController().signal);
    expect(seen).toEqual([
      { port: PORT, host: '198.19.0.2', protocol: 'udp', ttl: HOUR_S, externalPort: PORT },
    ]);
    expect(mapping).toEqual({
      protocol: 'natpmp',
      gateway: '198.19.0.1',
      internalAddress: '198.19.0.2',
      internalPort: PORT,
      externalAddress: '198.18.1.2',
      externalPort: 40_000,
      lifetimeS: HOUR_S,
    });
    expect(gateway.stops).toBe(1);

    // Removal: lifetime 0 and external port 0 for the UDP port (RFC 6886 §3.4).
    seen.length = 0;
    await client.unmap(mapping, new AbortController().signal);
    expect(seen).toEqual([{ port: PORT, host: '', protocol: 'udp', ttl: 0, externalPort: 0 }]);
  });

  it('says what the gateway answered when it refuses, and what the socket said when it fails', async () => {
    const refused = Object.assign(new Error('Network Failure (gateway may have not obtained a DHCP lease)'), {
      code: 3,
    });
    const client = new NatPmpClient({
      ...options,
      createGateway: () => libraryGateway(() => Promise.reject(refused)),
    });
    await expect(client.map(request, new AbortController().signal)).rejects.toMatchObject({
      code: 'refused',
      message:
        'NAT-PMP: gateway 198.19.0.1 refused (result 3: network failure (the gateway has no public address))',
    });

    const failing = libraryGateway(() => new Promise(() => {}));
    const broken = new NatPmpClient({ ...options, createGateway: () => failing });
    const pending = broken.map(request, new AbortController().signal);
    failing.emit('error', new Error('send ENETUNREACH 198.19.0.1:5351'));
    await expect(pending).rejects.toMatchObject({
      code: 'failed',
      message: 'NAT-PMP: cannot reach 198.19.0.1: send ENETUNREACH 198.19.0.1:5351',
    });
    expect(failing.stops).toBe(1);
  });
});

describe('default gateway', () => {
  const HEADER = 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT';

  it('reads the IPv4 default route with the lowest metric from /proc/net/route', () => {
    const table = [
      HEADER,
      'wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0',
      'eth0\t00000000\t010013C6\t0003\t0\t0\t100\t00000000\t0\t0\t0',
      'eth0\t000013C6\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0',
    ].join('\n');
    expect(defaultGatewayFromRouteTable(table)).toBe('198.19.0.1');
  });

  it('finds none without a default route through a gateway', () => {
    expect(defaultGatewayFromRouteTable(HEADER)).toBeUndefined();
    // A default route straight onto a link (no RTF_GATEWAY) has no gateway to ask.
    expect(
      defaultGatewayFromRouteTable(`${HEADER}\nppp0\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0`),
    ).toBeUndefined();
  });
});

describe('announced candidates', () => {
  const LAN: Record<string, NetworkInterfaceInfo[]> = {
    eth0: [
      {
        address: '198.19.0.2',
        netmask: '255.255.255.0',
        family: 'IPv4',
        mac: '02:00:00:00:00:01',
        internal: false,
        cidr: '198.19.0.2/24',
      },
    ],
  };
  const mappedCandidate: SignalCandidate = {
    address: '198.18.1.2',
    port: 40_000,
    family: 'ipv4',
    kind: 'mapped',
  };

  it('adds the mapped candidate after the host candidates, and only while there is one', () => {
    let current: SignalCandidate | undefined = mappedCandidate;
    const source = candidateSource({ port: PORT, ipv6: false, interfaces: () => LAN, mapped: () => current });
    expect(source()).toEqual([
      { address: '198.19.0.2', port: PORT, family: 'ipv4', kind: 'host' },
      mappedCandidate,
    ]);
    current = undefined;
    expect(source()).toEqual([{ address: '198.19.0.2', port: PORT, family: 'ipv4', kind: 'host' }]);
  });

  it('keeps the mapped candidate within the announce limit, and leaves it out when it is a host candidate', () => {
    const many: Record<string, NetworkInterfaceInfo[]> = {
      eth0: Array.from({ length: 20 }, (_, i) => ({ ...LAN.eth0![0]!, address: `198.19.0.${i + 2}` })),
    };
    const full = candidateSource({
      port: PORT,
      ipv6: false,
      interfaces: () => many,
      mapped: () => mappedCandidate,
    })();
    expect(full).toHaveLength(16);
    expect(full.at(-1)).toEqual(mappedCandidate);

    const self = { ...mappedCandidate, address: '198.19.0.2', port: PORT };
    expect(candidateSource({ port: PORT, ipv6: false, interfaces: () => LAN, mapped: () => self })()).toEqual(
      [{ address: '198.19.0.2', port: PORT, family: 'ipv4', kind: 'host' }],
    );
  });
});

describe('port mapping configuration', () => {
  const AGENT = '[agent]\nrobot_id = "r1"\nsignal_url = "wss://cloud.example/ws"\n';

  function issuesOf(text: string): string[] {
    try {
      parseConfig(text);
    } catch (err) {
      if (err instanceof ConfigError) return err.issues.map((i) => i.message);
      throw err;
    }
    throw new Error('the configuration was accepted');
  }

  it('defaults to off, NAT-PMP then UPnP, an hour’s lease and the default gateway', () => {
    const { agent } = parseConfig(AGENT);
    expect(agent).toMatchObject({
      port_mapping: false,
      port_mapping_protocols: ['natpmp', 'upnp'],
      port_mapping_lifetime_s: 3600,
    });
    expect(agent.port_mapping_gateway).toBeUndefined();
    const chosen = parseConfig(
      `${AGENT}port_mapping = true\nport_mapping_protocols = ["upnp"]\nport_mapping_lifetime_s = 600\nport_mapping_gateway = "192.168.1.1"\n`,
    ).agent;
    expect(chosen).toMatchObject({
      port_mapping: true,
      port_mapping_protocols: ['upnp'],
      port_mapping_lifetime_s: 600,
      port_mapping_gateway: '192.168.1.1',
    });
  });

  it('names the key, the value and what was expected', () => {
    expect(
      issuesOf(
        `${AGENT}port_mapping_protocols = ["pcp"]\nport_mapping_lifetime_s = 5\nport_mapping_gateway = "router.local"\n`,
      ),
    ).toEqual([
      'agent.port_mapping_protocols[0] = "pcp": expected "natpmp" or "upnp"',
      'agent.port_mapping_lifetime_s = 5: expected an integer in 10..86400',
      'agent.port_mapping_gateway = "router.local": expected an IPv4 address (the gateway to ask), e.g. 192.168.1.1',
    ]);
    expect(issuesOf(`${AGENT}port_mapping_protocols = []\n`)).toEqual([
      'agent.port_mapping_protocols = an array: expected at least one of "natpmp" or "upnp"',
    ]);
    expect(issuesOf(`${AGENT}port_mapping_protocols = ["upnp", "upnp"]\n`)).toEqual([
      'agent.port_mapping_protocols = an array: expected each protocol at most once',
    ]);
    expect(issuesOf(`${AGENT}port_mapping_lifetim = 600\n`)).toEqual([
      'unknown key agent.port_mapping_lifetim; did you mean port_mapping_lifetime_s?',
    ]);
  });
});
