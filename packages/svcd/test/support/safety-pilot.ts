/**
 * Runs in Chromium (bundled by `pilot-tab.ts`): one pilot connection a test drives step by step
 * from Node, through `globalThis.safetyPilot`, while it can close or reload the page under it.
 */
import {
  PilotConnection,
  type PilotConnectionStats,
  type RobotAddress,
  requestOffer,
  type SendCommandOptions,
} from '@svc/pilot';

/** What {@link connect} reports once the connection settled. */
export interface Settled {
  readonly state: string;
  readonly role: string | null;
  readonly sessionId: string | null;
  /** `connection.refusal`, when there is one. */
  readonly refusal: { readonly code: string; readonly message: string } | null;
}

let connection: PilotConnection | undefined;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Connects (through svc-cloud's offer, or to `offer` when given: the link shaper's address) with
 * `token` and waits until the session is connected with a clock offset, or it ended.
 */
async function connect(
  token: string,
  source: { signalUrl: string; robotId: string } | { offer: RobotAddress },
): Promise<Settled> {
  connection?.close();
  let sessionId: string | null = null;
  const area = document.createElement('div');
  document.body.append(area);
  const current = PilotConnection.connect({
    ...source,
    token,
    container: area,
    onState: (state, detail) => {
      if (state === 'connected') sessionId = detail ?? null;
    },
  });
  connection = current;
  const deadline = performance.now() + 20_000;
  const ready = () =>
    (current.state === 'connected' && current.robotClockMs() !== undefined) ||
    current.state === 'denied' ||
    current.state === 'closed';
  while (!ready() && performance.now() < deadline) await sleep(20);
  return {
    state: current.state,
    role: current.role ?? null,
    sessionId,
    refusal: current.refusal ?? null,
  };
}

/** The robot's certificate hashes from svc-cloud's offer (to connect through a shaper with them). */
async function hashes(signalUrl: string, robotId: string, token: string): Promise<string[]> {
  const offer = await requestOffer({ signalUrl, robotId, token });
  return [...offer.certificateHashes];
}

function active(): PilotConnection {
  if (connection === undefined) throw new TypeError('connect first');
  return connection;
}

const api = {
  connect,
  hashes,
  /** `sendCommand('drive', payload, options)`. */
  send: (payload: string, options: SendCommandOptions = {}): boolean =>
    active().sendCommand('drive', payload, options),
  /** The robot's clock now, as the pilot estimates it. */
  robotNow: (): number | null => active().robotClockMs() ?? null,
  stats: (): PilotConnectionStats => active().stats(),
  state: (): string => active().state,
  close: (): void => connection?.close(),
};

/** The page's handle for the test. */
export type SafetyPilot = typeof api;

(globalThis as unknown as { safetyPilot: SafetyPilot }).safetyPilot = api;
