/**
 * The organisation's fleet, live: `GET /api/v1/orgs/{org}/fleet/events` sends a snapshot of every
 * robot, then each robot's newest state as it changes (docs/cloud.md, "Live fleet"). The stream
 * reconnects with back-off when it breaks, and says so; it stops for good when the person is no
 * longer a member or the organisation is gone.
 */
import { backoffDelayMs, RECONNECT_BACKOFF } from '@svc/runtime';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiProblem, authHeaders, problemOf } from './api/client.js';
import type { paths } from './api/schema.js';
import { useSession } from './auth.js';
import { readEventStream } from './sse.js';

/** A robot as the fleet shows it (the same view as `GET /api/v1/robots`). */
export type FleetRobot =
  paths['/api/v1/robots']['get']['responses'][200]['content']['application/json']['robots'][number];

/** The stream's state. */
export type FleetState = 'loading' | 'live' | 'reconnecting' | 'stopped';

/** What {@link useFleet} gives the page. */
export interface Fleet {
  readonly state: FleetState;
  /** Every robot, by name then id (a stable order: rows do not jump when presence changes). */
  readonly robots: readonly FleetRobot[];
  /** Why the stream stopped or keeps failing. */
  readonly error: Error | undefined;
}

/** One event of the stream (the JSON of its `data:` line). */
type FleetEvent =
  | { readonly type: 'snapshot'; readonly robots: FleetRobot[] }
  | { readonly type: 'robot-added' | 'robot-updated'; readonly robot: FleetRobot }
  | { readonly type: 'robot-removed'; readonly robotId: string }
  | { readonly type: 'end'; readonly reason: string; readonly message: string };

/** Reasons the server ends a stream that reconnecting cannot fix. */
const FINAL_END_REASONS = new Set(['membership-removed', 'org-deleted']);

/** Applies one event to `robots` (in place); returns whether the list changed. */
export function applyFleetEvent(robots: Map<string, FleetRobot>, event: FleetEvent): boolean {
  switch (event.type) {
    case 'snapshot':
      robots.clear();
      for (const robot of event.robots) robots.set(robot.robotId, robot);
      return true;
    case 'robot-added':
    case 'robot-updated':
      robots.set(event.robot.robotId, event.robot);
      return true;
    case 'robot-removed':
      return robots.delete(event.robotId);
    case 'end':
      return false;
    default: {
      const never: never = event;
      return never;
    }
  }
}

/** The robots of `robots` in the fleet's order. */
export function fleetOrder(robots: Iterable<FleetRobot>): FleetRobot[] {
  return [...robots].sort(
    (a, b) => (a.name ?? a.robotId).localeCompare(b.name ?? b.robotId) || a.robotId.localeCompare(b.robotId),
  );
}

/** The live fleet of `orgId`. */
export function useFleet(orgId: string): Fleet {
  const { user } = useSession();
  const queries = useQueryClient();
  const [fleet, setFleet] = useState<Fleet>({ state: 'loading', robots: [], error: undefined });
  const signedIn = user !== null;

  useEffect(() => {
    if (!signedIn) return;
    const abort = new AbortController();
    const robots = new Map<string, FleetRobot>();
    let frame: number | undefined;
    // Events in one animation frame make one render.
    const publish = () => {
      if (frame !== undefined) return;
      frame = requestAnimationFrame(() => {
        frame = undefined;
        setFleet({ state: 'live', robots: fleetOrder(robots.values()), error: undefined });
      });
    };

    const run = async () => {
      for (let attempt = 0; !abort.signal.aborted; attempt++) {
        let final: Error | undefined;
        try {
          const response = await fetch(`/api/v1/orgs/${encodeURIComponent(orgId)}/fleet/events`, {
            headers: { accept: 'text/event-stream', ...authHeaders() },
            signal: abort.signal,
          });
          if (!response.ok) {
            const problem = problemOf(await response.json().catch(() => undefined), response.status);
            // A refusal will not change by asking again (a 401 opens the "session ended" dialog).
            if (response.status !== 429 && response.status < 500) throw problem;
            throw new Error(problem.message);
          }
          await readEventStream(response, (message) => {
            const event = JSON.parse(message.data) as FleetEvent;
            if (event.type === 'snapshot') attempt = 0;
            if (event.type === 'end') {
              if (FINAL_END_REASONS.has(event.reason)) final = new Error(event.message);
              return;
            }
            if (applyFleetEvent(robots, event)) publish();
          });
          if (final !== undefined) throw new ApiProblem('forbidden', final.message, 403);
        } catch (err) {
          if (abort.signal.aborted) return;
          if (err instanceof ApiProblem) {
            if (err.status === 401) return void queries.invalidateQueries({ queryKey: ['me'] });
            if (err.status === 403 || err.status === 404) {
              void queries.invalidateQueries({ queryKey: ['me'] });
              setFleet((f) => ({ ...f, state: 'stopped', error: err }));
              return;
            }
          }
          setFleet((f) => ({
            ...f,
            state: f.state === 'loading' ? 'loading' : 'reconnecting',
            error:
              attempt >= 2
                ? new Error(
                    `The fleet's live updates keep failing (${err instanceof Error ? err.message : String(err)}); still trying.`,
                  )
                : undefined,
          }));
        }
        await new Promise((resolve) =>
          setTimeout(resolve, backoffDelayMs(attempt, Math.random, RECONNECT_BACKOFF)),
        );
      }
    };
    void run();
    return () => {
      abort.abort();
      if (frame !== undefined) cancelAnimationFrame(frame);
    };
  }, [orgId, signedIn, queries]);

  return fleet;
}
