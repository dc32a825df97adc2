/**
 * The events of `GET /api/v1/orgs/{org}/fleet/events` (server-sent events): their schemas, which
 * the OpenAPI document publishes and the console's client types are made from, and their framing.
 */
import { z } from 'zod';
import { robotSchema } from './robot-view.js';
import { uuid } from './schemas.js';

/** Longest a change waits before the streams hear of it, ms (the feed's default `flushMs`). */
export const FLEET_FLUSH_MS = 100;
/** Period of the heartbeat comment, ms. */
export const FLEET_HEARTBEAT_MS = 15_000;
/** Period of the membership check of every stream, ms. */
export const FLEET_RECHECK_MS = 30_000;
/** Streams one user may hold at once. */
export const FLEET_MAX_STREAMS_PER_USER = 5;

/** Why a stream ended (the `end` event's `reason`). */
export const FLEET_END_REASONS = [
  'membership-removed',
  'org-deleted',
  'credential-expired',
  'too-slow',
  'server-closing',
] as const;

/** One of {@link FLEET_END_REASONS}. */
export type FleetEndReason = (typeof FLEET_END_REASONS)[number];

/** Why a robot left the stream (the `robot-removed` event's `reason`). */
export const FLEET_REMOVAL_REASONS = ['deleted', 'left-org'] as const;

/** One of {@link FLEET_REMOVAL_REASONS}. */
export type FleetRemovalReason = (typeof FLEET_REMOVAL_REASONS)[number];

/** The first event: every robot of the org the caller may see, as `GET /api/v1/robots?org=` lists them. */
export const fleetSnapshotEvent = z.object({
  type: z.literal('snapshot'),
  orgId: uuid,
  robots: z.array(robotSchema).describe('Every robot of the org, by id'),
});

/** A robot joined the org (enrolled), or a robot of it the client has not seen. */
export const fleetRobotAddedEvent = z.object({ type: z.literal('robot-added'), robot: robotSchema });

/** A robot's newest state, after changes coalesced over at most about 100 ms. */
export const fleetRobotUpdatedEvent = z.object({ type: z.literal('robot-updated'), robot: robotSchema });

/** A robot left the org's fleet. */
export const fleetRobotRemovedEvent = z.object({
  type: z.literal('robot-removed'),
  robotId: z.string(),
  reason: z
    .enum(FLEET_REMOVAL_REASONS)
    .describe(
      '`deleted`: the robot (or its record) was deleted; `left-org`: it now belongs to no org or another',
    ),
});

/** The last event: the server ends the stream. */
export const fleetEndEvent = z.object({
  type: z.literal('end'),
  reason: z
    .enum(FLEET_END_REASONS)
    .describe(
      '`membership-removed`: the caller is no longer a member (do not reconnect); `org-deleted`: the org is gone (do not reconnect); `credential-expired`: the access token expired (reconnect with a fresh one); `too-slow`: the client did not read fast enough (reconnect); `server-closing`: the server is shutting down (reconnect with backoff)',
    ),
  message: z.string(),
});

/** One event of the fleet stream: the JSON text of one `data:` line. */
export const fleetEvent = z
  .discriminatedUnion('type', [
    fleetSnapshotEvent,
    fleetRobotAddedEvent,
    fleetRobotUpdatedEvent,
    fleetRobotRemovedEvent,
    fleetEndEvent,
  ])
  .describe(
    'One event of the fleet stream: the JSON of one `data:` line, whose `type` is also the `event:` line',
  );

/** One event of the fleet stream. */
export type FleetEvent = z.output<typeof fleetEvent>;

/** The event as server-sent events frame it: `event: <type>`, one `data:` line of JSON, a blank line. */
export function sseEvent(type: FleetEvent['type'], json: string): string {
  return `event: ${type}\ndata: ${json}\n\n`;
}

/** The comment line that keeps an idle stream alive through proxies. */
export const SSE_HEARTBEAT = ': heartbeat\n\n';

/** The stream's description in the OpenAPI document: how it is framed and what it sends when. */
export const FLEET_STREAM_DESCRIPTION = `Server-sent events (\`text/event-stream\`) over a plain GET, so a browser reads it with \`fetch\` and a streamed body (EventSource cannot send the \`Authorization\` header this API needs). Send \`Authorization: Bearer <access token>\` as to any endpoint (\`x-svc-id-token\` is not needed).

Each event is \`event: <type>\`, one \`data: <JSON>\` line and a blank line; the JSON's \`type\` is the same word. Lines starting with \`:\` are comments: \`: heartbeat\` comes every ${FLEET_HEARTBEAT_MS / 1000} s.

1. \`snapshot\` first: every robot of the org the caller may see, exactly as \`GET /api/v1/robots?org=<org>\` lists them (record, presence on this node, driver, last denial).
2. Then changes, coalesced: at most one event per robot about every ${FLEET_FLUSH_MS} ms, carrying the robot's whole newest state. \`robot-added\` (enrolled into the org), \`robot-updated\` (online or offline, announced, sessions or driver changed, renamed, grants changed, last denial remembered or cleared, last-seen time moved; an online robot's \`lastSeenAt\` moves about once a minute), \`robot-removed\` (deleted). Apply them to a map by \`robotId\`: an update of a robot not seen is an addition, a removal of one not seen does nothing.
3. \`end\` when the server ends the stream: the caller's membership was removed, the org deleted, the access token expired, the client read too slowly, or the server is closing. Membership is checked again every ${FLEET_RECHECK_MS / 1000} s and at once when it is removed through this node.

A caller holds at most ${FLEET_MAX_STREAMS_PER_USER} streams at once (429 \`rate-limited\` beyond). Presence is that of the node answering, as in \`GET /api/v1/robots\`.`;
