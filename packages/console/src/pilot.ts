/**
 * The plain pilot page (`/pilot/`): watches a robot's cameras and drives it with the keyboard.
 *
 * What it needs comes in the URL fragment, which never reaches a server:
 * - `#robot=<robot id>&token=<pilot session token>`: the path of a customer backend that mints
 *   tokens with an API key and sends its user here;
 * - `#robot=<robot id>[&scope=observe]` alone: a person signed in to the console in this tab; the
 *   page mints a token with their access token (`POST /api/v1/session-tokens`) before each attempt.
 *
 * The token is removed from the address bar at once. Arrow keys or WASD drive while held (a command
 * ten times a second on the robot's first command channel, a stop when released); observers see
 * the video only.
 */
import { PilotConnection, type PilotConnectionStats, type PilotToken } from '@svc/pilot';

/** The console's stored tokens (`app.ts` writes them after sign-in). */
const TOKENS_KEY = 'svc.tokens';
const COMMAND_INTERVAL_MS = 100;

const element = (id: string) => document.getElementById(id) as HTMLElement;

function showState(text: string, error = false): void {
  const state = element('state');
  state.textContent = text;
  state.className = error ? 'error' : '';
}

/** Reads and removes the fragment's parameters, so the token stays out of history and screenshots. */
function takeParameters(): URLSearchParams {
  const params = new URLSearchParams(location.hash.slice(1));
  if (location.hash !== '') history.replaceState(null, '', `${location.pathname}${location.search}`);
  return params;
}

/** A token source: the one given, or one minted for the console's signed-in person on each call. */
function tokenSource(params: URLSearchParams, robotId: string): { token: PilotToken } | { problem: string } {
  const given = params.get('token');
  if (given !== null && given !== '') return { token: given };
  const stored = sessionStorage.getItem(TOKENS_KEY);
  if (stored === null) {
    return {
      problem:
        'No pilot session token: open this page with #robot=<id>&token=<token>, or sign in at /console/ in this tab first.',
    };
  }
  const { accessToken } = JSON.parse(stored) as { accessToken: string };
  const scope = params.get('scope') === 'observe' ? 'observe' : 'drive';
  return {
    token: async () => {
      const response = await fetch('/api/v1/session-tokens', {
        method: 'POST',
        headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ robotId, scope }),
      });
      const body = (await response.json().catch(() => ({}))) as {
        token?: string;
        error?: { message?: string };
      };
      if (!response.ok || body.token === undefined) {
        throw new Error(
          `cannot get a session token (${response.status}): ${body.error?.message ?? 'no detail'}`,
        );
      }
      return body.token;
    },
  };
}

/** Direction keys held now → a drive command (linear and angular velocity, -1..1). */
function driveCommand(held: ReadonlySet<string>): { linear: number; angular: number } {
  const on = (...keys: string[]) => keys.some((k) => held.has(k));
  const linear = (on('ArrowUp', 'w') ? 1 : 0) - (on('ArrowDown', 's') ? 1 : 0);
  const angular = (on('ArrowLeft', 'a') ? 1 : 0) - (on('ArrowRight', 'd') ? 1 : 0);
  return { linear: linear * 0.5, angular: angular * 0.5 };
}

function describeStats(stats: PilotConnectionStats): string {
  const lines = [`rtt ${stats.rttMs?.toFixed(1) ?? '–'} ms · sessions ${stats.sessions}`];
  for (const [id, c] of Object.entries(stats.channels)) {
    lines.push(
      `channel ${id}: decoded ${c.decoded} · painted ${c.painted} · repaired ${c.reassembler.framesRepaired} · lost ${c.reassembler.framesLost} · latency p50 ${c.latency.p50Ms?.toFixed(1) ?? '–'} ms`,
    );
  }
  return lines.join('\n');
}

function main(): void {
  const params = takeParameters();
  const robotId = params.get('robot');
  if (robotId === null || robotId === '') {
    showState('No robot: open this page with #robot=<robot id>&token=<pilot session token>.', true);
    return;
  }
  element('robot').textContent = robotId;
  const source = tokenSource(params, robotId);
  if ('problem' in source) {
    showState(source.problem, true);
    return;
  }
  const { token } = source;
  const connection = PilotConnection.connect({
    signalUrl: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`,
    robotId,
    token,
    container: element('video'),
    onState: (state, detail) => {
      const error = state === 'denied';
      showState(detail === undefined || state === 'connected' ? state : `${state}: ${detail}`, error);
      element('role').textContent = state === 'connected' ? (connection.role ?? '') : '';
      element('leave').hidden = state === 'closed' || state === 'denied';
    },
  });
  element('leave').addEventListener('click', () => connection.close());

  const held = new Set<string>();
  const commandChannel = () => connection.channels.find((c) => c.kind === 'command')?.name;
  const send = () => {
    const channel = commandChannel();
    if (channel !== undefined && connection.role === 'driver')
      connection.sendCommand(channel, JSON.stringify(driveCommand(held)));
  };
  const driveKeys = new Set(['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'w', 'a', 's', 'd']);
  addEventListener('keydown', (event) => {
    if (!driveKeys.has(event.key)) return;
    event.preventDefault();
    held.add(event.key);
  });
  addEventListener('keyup', (event) => {
    if (!held.delete(event.key)) return;
    if (held.size === 0) send(); // the stop goes out at once
  });
  addEventListener('blur', () => {
    if (held.size === 0) return;
    held.clear();
    send();
  });
  setInterval(() => {
    if (held.size > 0) send();
    element('stats').textContent = describeStats(connection.stats());
  }, COMMAND_INTERVAL_MS);
}

main();
