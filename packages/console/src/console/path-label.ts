import type { paths } from './api/schema.js';

/** A robot as the API shows it (`FleetRobot` of `fleet.ts`). */
type Robot =
  paths['/api/v1/robots']['get']['responses'][200]['content']['application/json']['robots'][number];

/** How pilots reach the robot, as far as the cloud knows it. */
export function pathLabel(robot: Pick<Robot, 'online' | 'sessions' | 'candidates' | 'relay'>): string {
  if (!robot.online) return '—';
  const relayed = robot.sessions.filter((s) => s.path === 'relay').length;
  if (relayed > 0) {
    return relayed === robot.sessions.length
      ? 'relay (through the cloud)'
      : `direct, ${relayed} through the relay`;
  }
  if (robot.candidates.length === 0) return robot.relay ? 'relay only' : 'no address';
  return robot.candidates.some((c) => c.kind === 'mapped') ? 'direct (mapped)' : 'direct';
}
