/**
 * `npm run bench -- reach` (issue 18): reaching robots behind NAT.
 *
 * - (a) capture → glass p50, relayed and direct, and (b) frames painted under 5 % loss in bursts
 *   of 3 on the robot's leg, relayed and direct: a robot behind a NAT router in namespaces the
 *   suite builds, the pilot's Chromium beside svc-cloud (`reach-paths.ts`);
 * - (c) the relay's forwarding per core of its CPU, many sessions of 8 Mbit/s (`reach-relay.ts`);
 * - (d) connect → first picture when the direct path is blocked and the relay is allowed;
 * - (e) relay → direct: how long after the router maps the robot's port the session runs on the
 *   direct path, and the frames the move lost.
 *
 * `SVC_BENCH_REACH=relay` runs (c) alone, `paths` the others.
 */
import { measureRelayThroughput, RELAY_LOAD } from '../reach-relay.js';
import type { BenchSuite } from '../types.js';

const parts = process.env.SVC_BENCH_REACH ?? 'all';

export const suite: BenchSuite = {
  description:
    'reaching robots behind NAT: the relay against the direct path, relay throughput, the move to direct',
  parameters: { parts, relayLoad: RELAY_LOAD },
  async run(report) {
    if (parts === 'all' || parts === 'paths') {
      const { measurePathFigures } = await import('../reach-paths.js');
      await measurePathFigures(report);
    }
    if (parts === 'all' || parts === 'relay') await measureRelayThroughput(report);
  },
};
