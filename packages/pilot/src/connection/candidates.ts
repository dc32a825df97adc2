import type { Clock, TimerHandle } from '@svc/runtime';
import type { PilotTransport, RobotAddress, TransportFactory } from './options.js';

/** Default wait for a candidate before the next one is tried as well (Happy Eyeballs style). */
export const CANDIDATE_STAGGER_MS = 250;

/** Options of {@link raceCandidates}. */
export interface CandidateRaceOptions {
  readonly address: RobotAddress;
  readonly staggerMs: number;
  readonly clock: Clock;
  readonly createTransport: TransportFactory;
  /** Ends the race: every candidate still trying is closed, and the race settles as failed. */
  readonly signal: AbortSignal;
}

/** How a race ended: the first candidate that answered, or why none did. */
export type CandidateRaceResult =
  | { readonly ok: true; readonly transport: PilotTransport; readonly url: string }
  | { readonly ok: false; readonly reason: string };

const LOST_RACE = { closeCode: 0, reason: 'another candidate answered first' } as const;
const CALLED_OFF = { closeCode: 0, reason: 'pilot closed' } as const;

/**
 * Opens a transport to the first candidate that answers: the robot's first candidate at once,
 * each next one when the previous failed or after the stagger, the losers closed. Never rejects.
 */
export function raceCandidates(options: CandidateRaceOptions): Promise<CandidateRaceResult> {
  const { address, clock, signal } = options;
  const serverCertificateHashes = address.certificateHashes.map((h) => ({
    algorithm: 'sha-256',
    value: fromHex(h),
  }));
  return new Promise<CandidateRaceResult>((resolve) => {
    const trying: PilotTransport[] = [];
    const failures: string[] = [];
    let next = 0;
    let settled = false;
    let timer: TimerHandle | undefined;
    const settle = (result: CandidateRaceResult, closeInfo: WebTransportCloseInfo): void => {
      settled = true;
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', abort);
      for (const transport of trying)
        if (!result.ok || transport !== result.transport) transport.close(closeInfo);
      resolve(result);
    };
    const abort = (): void => {
      if (!settled) settle({ ok: false, reason: 'the race was called off' }, CALLED_OFF);
    };
    const failed = (url: string, err: unknown): void => {
      failures.push(`${url}: ${err instanceof Error ? err.message : String(err)}`);
      if (settled) return;
      if (failures.length === address.urls.length)
        settle(
          { ok: false, reason: `no candidate of the robot answered: ${failures.join('; ')}` },
          LOST_RACE,
        );
      else start();
    };
    const start = (): void => {
      clock.clearTimeout(timer);
      if (settled || next >= address.urls.length) return;
      const url = address.urls[next++]!;
      let transport: PilotTransport;
      try {
        transport = options.createTransport(url, { serverCertificateHashes });
      } catch (err) {
        failed(url, err);
        return;
      }
      trying.push(transport);
      transport.closed.catch(() => undefined);
      transport.ready.then(
        () => {
          if (settled) transport.close(LOST_RACE);
          else settle({ ok: true, transport, url }, LOST_RACE);
        },
        (err: unknown) => failed(url, err),
      );
      if (next < address.urls.length) timer = clock.setTimeout(start, options.staggerMs);
    };
    if (address.urls.length === 0) {
      resolve({ ok: false, reason: 'the offer names no candidate address' });
      return;
    }
    if (signal.aborted) {
      resolve({ ok: false, reason: 'the race was called off' });
      return;
    }
    signal.addEventListener('abort', abort, { once: true });
    start();
  });
}

/** Hex (two digits a byte, any case) to bytes. */
export function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const pairs = hex.match(/[0-9a-f]{2}/gi) ?? [];
  return Uint8Array.from(pairs.map((p) => Number.parseInt(p, 16)));
}
