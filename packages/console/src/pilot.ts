/**
 * The plain pilot page (`/pilot/`): a thin page over `<svc-pilot>` (`@svc/pilot/elements`), which
 * shows the robot's cameras, HUD, statistics and sensors and drives with the keyboard, a gamepad
 * and the stop button.
 *
 * What it needs comes in the URL fragment, which never reaches a server:
 * - `#robot=<robot id>&token=<pilot session token>`: the path of a customer backend that mints
 *   tokens with an API key and sends its user here;
 * - `#robot=<robot id>[&scope=observe]` alone: a person signed in to the console in this tab; the
 *   page mints a token with their access token (`POST /api/v1/session-tokens`) before each attempt.
 *
 * The fragment is removed from the address bar at once and kept in this tab's session storage, so
 * a reload (inside the robot's driver grace) resumes the session; Leave forgets it.
 */
import { fetchSessionToken, type PilotToken } from '@svc/pilot';
import { SVC_PILOT_TAG, type SvcPilotElement } from '@svc/pilot/elements';

/** The console's stored tokens (`app.ts` writes them after sign-in). */
const TOKENS_KEY = 'svc.tokens';
/** What this page was opened with, kept for a reload. */
const SESSION_KEY = 'svc.pilot';

interface PageParameters {
  readonly robot: string;
  readonly token?: string;
  readonly scope: 'drive' | 'observe';
}

const element = (id: string) => document.getElementById(id) as HTMLElement;

function showMessage(text: string): void {
  const message = element('message');
  message.textContent = text;
  message.hidden = false;
}

/**
 * The fragment's parameters (removed from the address bar, kept in session storage), or those
 * kept by an earlier load of this tab.
 */
function takeParameters(): PageParameters | undefined {
  const params = new URLSearchParams(location.hash.slice(1));
  if (location.hash !== '') history.replaceState(null, '', `${location.pathname}${location.search}`);
  const robot = params.get('robot');
  if (robot !== null && robot !== '') {
    const token = params.get('token');
    const taken: PageParameters = {
      robot,
      scope: params.get('scope') === 'observe' ? 'observe' : 'drive',
      ...(token !== null && token !== '' && { token }),
    };
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(taken));
    return taken;
  }
  const kept = sessionStorage.getItem(SESSION_KEY);
  return kept === null ? undefined : (JSON.parse(kept) as PageParameters);
}

/**
 * The token: the one given, or one minted for the console's signed-in person before each attempt
 * (`fetchSessionToken`: a 4xx answer becomes a refusal the cockpit shows instead of retrying);
 * `undefined` when there is neither.
 */
function tokenSource(params: PageParameters): PilotToken | undefined {
  if (params.token !== undefined) return params.token;
  const stored = sessionStorage.getItem(TOKENS_KEY);
  if (stored === null) return undefined;
  const { accessToken } = JSON.parse(stored) as { accessToken: string };
  // A 4xx answer (no access, no such robot, signed out) ends the connection with that refusal.
  return () => fetchSessionToken({ robotId: params.robot, scope: params.scope, accessToken });
}

function main(): void {
  const params = takeParameters();
  if (params === undefined) {
    showMessage('No robot: open this page with #robot=<robot id>&token=<pilot session token>.');
    return;
  }
  const pilot = document.createElement(SVC_PILOT_TAG) as SvcPilotElement;
  pilot.setAttribute('robot', params.robot);
  pilot.setAttribute('scope', params.scope);
  const token = tokenSource(params);
  if (token !== undefined) pilot.token = token;
  element('cockpit').append(pilot);

  const leave = element('leave');
  leave.hidden = false;
  leave.addEventListener('click', () => {
    sessionStorage.removeItem(SESSION_KEY);
    pilot.remove();
    leave.hidden = true;
    showMessage('You left the robot. Open a new link to connect again.');
  });
}

main();
