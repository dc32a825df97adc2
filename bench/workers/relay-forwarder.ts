/**
 * The relay alone in a process of its own, for the `reach` suite's throughput figure (c): svc-cloud's
 * `RelayServer` on 127.0.0.1, allocations made on the parent's request, its counters on request.
 * Its CPU time is then the relay's and nothing else's.
 *
 * Messages from the parent: `{ allocate: n, rate }` → `{ allocations: [{pilotPort, robotPort,
 * robotToken}] }`; `{ totals: true }` → `{ totals: {packets, bytes, overRate, strangers} }`.
 */
import { RelayServer } from '@svc/cloud';
import { silentLogger, systemClock } from '@svc/runtime';

type Message =
  | { readonly allocate: number; readonly rate: { readonly toPilot: number; readonly toRobot: number } }
  | { readonly totals: true };

const relay = new RelayServer({
  publicHost: '127.0.0.1',
  bindHost: '127.0.0.1',
  clock: systemClock,
  logger: silentLogger,
  isSessionLive: () => true,
  maxAllocations: 10_000,
});

process.on('message', (message: Message) => {
  void handle(message).then((answer) => process.send?.(answer));
});
process.on('disconnect', () => {
  void relay.close().then(() => process.exit(0));
});

async function handle(message: Message): Promise<unknown> {
  if ('totals' in message) {
    let packets = 0;
    let bytes = 0;
    let overRate = 0;
    let strangers = 0;
    for (const a of relay.list()) {
      packets += a.stats.packetsToPilot + a.stats.packetsToRobot;
      bytes += a.stats.bytesToPilot + a.stats.bytesToRobot;
      overRate += a.stats.overRate;
      strangers += a.stats.strangers;
    }
    return { totals: { packets, bytes, overRate, strangers } };
  }
  const allocations = [];
  for (let i = 0; i < message.allocate; i++) {
    const sessionId = `bench-${relay.size}`;
    const grant = relay.grant(sessionId, 'bench-robot', Date.now() + 600_000);
    const made = await relay.allocate(grant.token, {
      sessionId,
      robotId: 'bench-robot',
      expiresAt: Date.now() + 600_000,
      rate: message.rate,
    });
    if (!made.ok) throw new Error(`allocation refused: ${made.code} ${made.message}`);
    allocations.push({ pilotPort: made.pilotPort, robotPort: made.robotPort, robotToken: made.robotToken });
  }
  return { allocations };
}

process.send?.({ ready: true });
