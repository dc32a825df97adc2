import type { paths } from './api/schema.js';

/** A robot as the API shows it (`FleetRobot` of `fleet.ts`). */
type Robot =
  paths['/api/v1/robots']['get']['responses'][200]['content']['application/json']['robots'][number];

/** How pilots reach the robot, as far as the cloud knows it. */
export function pathLabel(
  robot: Pick<Robot, 'online' | 'sessions' | 'candidates' | 'relay' | 'backends'>,
): string {
  if (!robot.online) return '—';
  const relayed = robot.sessions.filter((s) => s.path === 'relay');
  if (relayed.length > 0) {
    if (relayed.length < robot.sessions.length) return `direct, ${relayed.length} through the relay`;
    return relayed.every((s) => s.backend === 'webrtc') ? 'relay (TURN)' : 'relay (through the cloud)';
  }
  if (robot.candidates.length === 0) {
    // A robot on WebRTC needs no announced address: ICE finds one, or TURN relays.
    if (robot.backends.includes('webrtc')) return 'WebRTC (ICE)';
    return robot.relay ? 'relay only' : 'no address';
  }
  return robot.candidates.some((c) => c.kind === 'mapped') ? 'direct (mapped)' : 'direct';
}
