import type { Clock, TimerHandle } from '@svc/runtime';
import type { PilotTransport, RobotAddress, TransportFactory } from './options.js';

/** Default wait for a candidate before the next one is tried as well (Happy Eyeballs style). */
export const CANDIDATE_STAGGER_MS = 250;

/**
 * Default head start of the direct candidates over the relay: the relay is dialled this long after
 * the first direct candidate unless every direct one failed sooner.
 */
export const RELAY_HEAD_START_MS = 200;

/** How a session's packets travel: straight to the robot, or through svc-cloud's relay. */
export type PilotPath = 'direct' | 'relay';

/** The relay as a late entrant of the race: its URL comes once svc-cloud allocated the port. */
export interface RelayEntrant {
  /** `https://<relay>:<port>/` for this session; rejects with why there is no relay. */
  readonly url: Promise<string>;
  readonly headStartMs: number;
}

/** Options of {@link raceCandidates}. */
export interface CandidateRaceOptions {
  readonly address: RobotAddress;
  readonly staggerMs: number;
  readonly clock: Clock;
  readonly createTransport: TransportFactory;
  /** Ends the race: every candidate still trying is closed, and the race settles as failed. */
  readonly signal: AbortSignal;
  /** The relay, when the robot allows it and svc-cloud serves one. */
  readonly relay?: RelayEntrant;
}

/** How a race ended: the first candidate that answered, or why none did. */
export type CandidateRaceResult =
  | { readonly ok: true; readonly transport: PilotTransport; readonly url: string; readonly path: PilotPath }
  | { readonly ok: false; readonly reason: string };

const LOST_RACE = { closeCode: 0, reason: 'another candidate answered first' } as const;
const CALLED_OFF = { closeCode: 0, reason: 'pilot closed' } as const;

/**
 * Orders the robot's direct candidate URLs for the race as RFC 8305 does: IPv6 first, then the
 * families alternating (`[v6]`, v4, `[v6]`, v4, ...), each family in the robot's order.
 */
export function happyEyeballsOrder(urls: readonly string[]): string[] {
  const v6 = urls.filter((u) => u.includes('://['));
  const v4 = urls.filter((u) => !u.includes('://['));
  const out: string[] = [];
  for (let i = 0; i < Math.max(v6.length, v4.length); i++) {
    if (i < v6.length) out.push(v6[i]!);
    if (i < v4.length) out.push(v4[i]!);
  }
  return out;
}

/**
 * Opens a transport on the first path that answers: the robot's direct candidates in
 * {@link happyEyeballsOrder}, each next one when the previous failed or after the stagger; and the
 * relay, once its URL is known and the direct ones had their head start (or all failed). The
 * losers are closed. Never rejects.
 */
export function raceCandidates(options: CandidateRaceOptions): Promise<CandidateRaceResult> {
  const { address, clock, signal, relay } = options;
  const urls = happyEyeballsOrder(address.urls);
  const serverCertificateHashes = address.certificateHashes.map((h) => ({
    algorithm: 'sha-256',
    value: fromHex(h),
  }));
  return new Promise<CandidateRaceResult>((resolve) => {
    const trying: PilotTransport[] = [];
    const failures: string[] = [];
    let next = 0;
    let directFailed = 0;
    let settled = false;
    let timer: TimerHandle | undefined;
    let relayTimer: TimerHandle | undefined;
    /** The relay: not in the race, waiting for its head start or URL, dialling, or out. */
    let relayState: 'none' | 'waiting' | 'dialing' | 'failed' = relay === undefined ? 'none' : 'waiting';
    let relayHeadStartOver = false;
    let relayUrl: string | undefined;
    const settle = (result: CandidateRaceResult, closeInfo: WebTransportCloseInfo): void => {
      settled = true;
      clock.clearTimeout(timer);
      clock.clearTimeout(relayTimer);
      signal.removeEventListener('abort', abort);
      for (const transport of trying)
        if (!result.ok || transport !== result.transport) transport.close(closeInfo);
      resolve(result);
    };
    const abort = (): void => {
      if (!settled) settle({ ok: false, reason: 'the race was called off' }, CALLED_OFF);
    };
    const allFailed = (): boolean =>
      directFailed === urls.length && (relayState === 'none' || relayState === 'failed');
    const checkAllFailed = (): void => {
      if (settled || !allFailed()) return;
      const relayWord =
        relayState === 'none'
          ? '; the robot does not allow the cloud relay (relay = false in its [agent] configuration), so no other path is tried'
          : '';
      settle(
        {
          ok: false,
          reason:
            urls.length === 0 && relayState === 'failed'
              ? `no path to the robot: ${failures.join('; ')}`
              : `no path to the robot answered: ${failures.join('; ')}${relayWord}`,
        },
        LOST_RACE,
      );
    };
    const dial = (url: string, path: PilotPath, failed: (err: unknown) => void): void => {
      let transport: PilotTransport;
      try {
        transport = options.createTransport(url, { serverCertificateHashes });
      } catch (err) {
        failed(err);
        return;
      }
      trying.push(transport);
      transport.closed.catch(() => undefined);
      transport.ready.then(
        () => {
          if (settled) transport.close(LOST_RACE);
          else settle({ ok: true, transport, url, path }, LOST_RACE);
        },
        (err: unknown) => failed(err),
      );
    };
    const startRelay = (): void => {
      if (settled || relayState !== 'waiting' || relayUrl === undefined) return;
      if (!relayHeadStartOver && directFailed < urls.length) return;
      relayState = 'dialing';
      dial(relayUrl, 'relay', (err) => {
        failures.push(`relay ${relayUrl}: ${message(err)}`);
        relayState = 'failed';
        checkAllFailed();
      });
    };
    const startDirect = (): void => {
      clock.clearTimeout(timer);
      if (settled || next >= urls.length) return;
      const url = urls[next++]!;
      dial(url, 'direct', (err) => {
        failures.push(`${url}: ${message(err)}`);
        directFailed++;
        if (settled) return;
        checkAllFailed();
        startDirect();
        startRelay();
      });
      if (next < urls.length) timer = clock.setTimeout(startDirect, options.staggerMs);
    };
    if (urls.length === 0 && relay === undefined) {
      resolve({ ok: false, reason: 'the offer names no candidate address and no relay' });
      return;
    }
    if (signal.aborted) {
      resolve({ ok: false, reason: 'the race was called off' });
      return;
    }
    signal.addEventListener('abort', abort, { once: true });
    if (relay !== undefined) {
      relayTimer = clock.setTimeout(() => {
        relayHeadStartOver = true;
        startRelay();
      }, relay.headStartMs);
      relay.url.then(
        (url) => {
          relayUrl = url;
          startRelay();
        },
        (err: unknown) => {
          if (settled) return;
          failures.push(`relay: ${message(err)}`);
          relayState = 'failed';
          checkAllFailed();
        },
      );
    }
    startDirect();
  });
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Hex (two digits a byte, any case) to bytes. */
export function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const pairs = hex.match(/[0-9a-f]{2}/gi) ?? [];
  return Uint8Array.from(pairs.map((p) => Number.parseInt(p, 16)));
}
