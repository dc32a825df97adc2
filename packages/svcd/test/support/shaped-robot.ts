/**
 * A robot seen through the link shaper: a fleet robot with the given channels, a `LinkShaper` in
 * front of its `quic_port`, a session token, and the robot's offer from svc-cloud. The pilot
 * connects to {@link ShapedRobot.urls} (the shaper) with the offer's certificate hashes.
 */
import { fileURLToPath } from 'node:url';
import { type Impairment, LinkShaper } from '@svc/shaper';
import type { OfferSummary } from '../fixtures/pilot-page.js';
import type { BrowserFleet } from './browser-fleet.js';
import type { FleetRobot } from './fleet.js';

const page = fileURLToPath(new URL('../fixtures/pilot-page.ts', import.meta.url));

/** What {@link shapedRobot} sets up. */
export interface ShapedRobotOptions {
  readonly robotId: string;
  /** `[[channel]]` tables, as TOML lines. */
  readonly channels: readonly string[];
  /** `[publisher_control] udp`. */
  readonly publisherControl?: string;
  /** Impairment of the robot → pilot direction at start. */
  readonly down: Impairment;
  readonly seed: number;
  /** Scope of the session token (default `observe`). */
  readonly scope?: 'drive' | 'observe';
}

/** A robot behind the shaper, ready for a pilot. */
export interface ShapedRobot {
  readonly robot: FleetRobot;
  readonly shaper: LinkShaper;
  readonly token: string;
  readonly offer: OfferSummary;
  /** The shaper's address, as the pilot's candidate list. */
  readonly urls: string[];
}

/** Sets it up; everything is removed after the current test. */
export async function shapedRobot(t: BrowserFleet, options: ShapedRobotOptions): Promise<ShapedRobot> {
  const robot = await t.fleet.robot(options.robotId, [...options.channels], {
    ...(options.publisherControl !== undefined && { publisherControl: options.publisherControl }),
  });
  t.defer(() => robot.remove());
  const shaper = await LinkShaper.start({
    listen: { address: '127.0.0.1', port: 0 },
    target: { address: '127.0.0.1', port: robot.files.quicPort },
    down: options.down,
    seed: options.seed,
  });
  t.defer(() => shaper.close());
  const token = await robot.token(options.scope ?? 'observe');
  const { offer } = await t.chromium.run<{ offer: OfferSummary | null }>({
    entry: page,
    exportName: 'tryOffer',
    args: [t.fleet.cloud.signalUrl, options.robotId, token],
  });
  if (offer === null) throw new Error(`no offer for robot ${options.robotId}`);
  return { robot, shaper, token, offer, urls: [`https://127.0.0.1:${shaper.address().port}/`] };
}
