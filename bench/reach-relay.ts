/**
 * The `reach` suite's figure (c): how much the relay forwards per core. svc-cloud's `RelayServer`
 * runs alone in a child process (`workers/relay-forwarder.ts`); this process plays many relayed
 * sessions at once, each a robot sending 8 Mbit/s of QUIC-sized datagrams to its robot-facing port
 * and a pilot answering with small acknowledgements, through `@svc/udp-batch` so the load costs
 * little. The figure is the payload the relay forwarded (both ways) per second of the relay
 * process's CPU time, read from `/proc`.
 */
import { fork } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UdpBatchReceiver, UdpBatchSender } from '@svc/udp-batch';
import { encodeRelayControl } from '@svc/wire';
import type { BenchResult } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const worker = path.join(here, 'workers/relay-forwarder.ts');

/** What (c) runs with. */
export interface RelayLoad {
  /** Relayed sessions at once. */
  readonly sessions: number;
  /** Each session's video, robot → pilot, bits per second. */
  readonly bitrate: number;
  /** Datagram size, bytes (a QUIC packet towards Chromium). */
  readonly packetBytes: number;
  /** One acknowledgement of this size from the pilot per `ackEvery` datagrams. */
  readonly ackBytes: number;
  readonly ackEvery: number;
  /** Measured for this long after a warm-up, s. */
  readonly seconds: number;
}

export const RELAY_LOAD: RelayLoad = {
  sessions: 48,
  bitrate: 8_000_000,
  packetBytes: 1200,
  ackBytes: 60,
  ackEvery: 4,
  seconds: 10,
};

const TICK_MS = 5;
const WARMUP_MS = 2000;

interface Allocation {
  readonly pilotPort: number;
  readonly robotPort: number;
  readonly robotToken: string;
}

interface Leg {
  readonly robot: Socket;
  readonly pilot: Socket;
  readonly robotSend: UdpBatchSender;
  readonly pilotSend: UdpBatchSender;
  readonly receivers: UdpBatchReceiver[];
  readonly allocation: Allocation;
  /** Datagrams the pilot received. */
  received: number;
  /** Datagrams owed by the robot (fractional, carried from tick to tick). */
  owed: number;
}

/** Measures (c) and reports it. */
export async function measureRelayThroughput(
  report: (r: BenchResult) => void,
  load = RELAY_LOAD,
): Promise<void> {
  const child = fork(worker, [], {
    execArgv: ['--conditions=source', '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const answers: unknown[] = [];
  const waiters: ((m: unknown) => void)[] = [];
  child.on('message', (m) => {
    const waiter = waiters.shift();
    if (waiter !== undefined) waiter(m);
    else answers.push(m);
  });
  const next = () =>
    new Promise<unknown>((resolve) => {
      const queued = answers.shift();
      if (queued !== undefined) resolve(queued);
      else waiters.push(resolve);
    });
  const legs: Leg[] = [];
  try {
    await next(); // ready
    const rate = { toPilot: (load.bitrate / 8) * 2, toRobot: (load.bitrate / 8) * 0.5 };
    child.send({ allocate: load.sessions, rate });
    const { allocations } = (await next()) as { allocations: Allocation[] };
    for (const allocation of allocations) legs.push(await openLeg(allocation));

    const packet = new Uint8Array(load.packetBytes).fill(0x5a);
    packet[0] = 0x40;
    const ack = new Uint8Array(load.ackBytes).fill(0x33);
    ack[0] = 0x41;
    const perTick = (load.bitrate / 8 / load.packetBytes) * (TICK_MS / 1000);
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      const ticks = (now - last) / TICK_MS;
      last = now;
      for (const leg of legs) {
        leg.owed += perTick * ticks;
        const count = Math.floor(leg.owed);
        leg.owed -= count;
        const to = { host: '127.0.0.1', port: leg.allocation.robotPort };
        for (let i = 0; i < count; i++) leg.robotSend.add(packet, to);
        leg.robotSend.send();
      }
    }, TICK_MS);
    try {
      await sleep(WARMUP_MS);
      const before = await snapshot(child.pid!, legs, next, child);
      await sleep(load.seconds * 1000);
      const after = await snapshot(child.pid!, legs, next, child);
      const seconds = (after.at - before.at) / 1000;
      const cpu = after.cpuSeconds - before.cpuSeconds;
      const bytes = after.totals.bytes - before.totals.bytes;
      const forwardedBps = (bytes * 8) / seconds;
      const params = {
        ...load,
        offeredMbps: (load.sessions * load.bitrate) / 1e6,
        forwardedMbps: forwardedBps / 1e6,
        relayCpuShare: cpu / seconds,
        datagramsForwarded: after.totals.packets - before.totals.packets,
        droppedOverRate: after.totals.overRate - before.totals.overRate,
        pilotReceived: legs.reduce((a, l) => a + l.received, 0),
        sendMode: legs[0]?.robotSend.mode,
      };
      report({
        name: '(c) relay forwarding, payload per core of relay CPU',
        value: (bytes * 8) / cpu / 1e9,
        unit: 'Gbit/s per core',
        better: 'higher',
        params,
      });
      report({
        name: '(c) relay CPU per forwarded datagram',
        value: (cpu * 1e6) / Math.max(1, after.totals.packets - before.totals.packets),
        unit: 'µs',
        better: 'lower',
        params,
      });
    } finally {
      clearInterval(timer);
    }
  } finally {
    for (const leg of legs) {
      for (const r of leg.receivers) r.close();
      leg.robot.close();
      leg.pilot.close();
    }
    child.disconnect();
    await new Promise((resolve) => child.once('exit', resolve));
  }

  /** Binds a robot and a pilot socket, attaches the robot, and lets the pilot claim its port. */
  async function openLeg(allocation: Allocation): Promise<Leg> {
    const robot = await bound();
    const pilot = await bound();
    const leg: Leg = {
      robot,
      pilot,
      robotSend: new UdpBatchSender(robot),
      pilotSend: new UdpBatchSender(pilot),
      receivers: [],
      allocation,
      received: 0,
      owed: 0,
    };
    const attached = new Promise<void>((resolve) => {
      leg.receivers.push(
        new UdpBatchReceiver(robot, {
          maxPacketBytes: 2048,
          onPacket: (bytes) => {
            if (bytes[0] === 0) resolve();
          },
        }),
      );
    });
    leg.receivers.push(
      new UdpBatchReceiver(pilot, {
        maxPacketBytes: 2048,
        onPacket: (_bytes, from) => {
          leg.received++;
          if (leg.received % load.ackEvery === 0) leg.pilotSend.add(ackBytes, from);
        },
        onBatchEnd: () => leg.pilotSend.send(),
      }),
    );
    const ackBytes = new Uint8Array(load.ackBytes).fill(0x41);
    robot.send(
      encodeRelayControl({ type: 'attach', token: allocation.robotToken }),
      allocation.robotPort,
      '127.0.0.1',
    );
    await attached;
    pilot.send(Uint8Array.of(0x40, 1, 2, 3), allocation.pilotPort, '127.0.0.1');
    return leg;
  }
}

async function snapshot(
  pid: number,
  _legs: readonly Leg[],
  next: () => Promise<unknown>,
  child: { send(m: unknown): boolean },
): Promise<{ at: number; cpuSeconds: number; totals: { packets: number; bytes: number; overRate: number } }> {
  child.send({ totals: true });
  const { totals } = (await next()) as { totals: { packets: number; bytes: number; overRate: number } };
  return { at: performance.now(), cpuSeconds: await cpuSeconds(pid), totals };
}

/** User plus system CPU seconds of `pid` (`/proc/<pid>/stat`, 10 ms ticks). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function bound(): Promise<Socket> {
  const socket = createSocket({ type: 'udp4', recvBufferSize: 1 << 20, sendBufferSize: 1 << 20 });
  return new Promise((resolve) => socket.bind(0, '127.0.0.1', () => resolve(socket)));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
