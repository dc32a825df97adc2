import type { Clock, Logger, TimerHandle } from '@svc/runtime';
import type { ControlMessage } from '@svc/wire';
import { fromHex } from './candidates.js';
import { Link, type LinkListener } from './link.js';
import type { PilotTransport, RobotAddress, TransportFactory } from './options.js';

/** How often the mover looks for a direct candidate due for a try, ms. */
export const DIRECT_PROBE_TICK_MS = 250;
/** A try of a direct candidate that has not answered within this long is given up, ms. */
export const DIRECT_PROBE_TIMEOUT_MS = 1500;
/** After a candidate's first failed try it is tried again this long later, doubling each time, ms. */
export const DIRECT_RETRY_FIRST_MS = 1000;
/** ... up to this, ms. */
export const DIRECT_RETRY_MAX_MS = 60_000;
/** Tries under way at once, at most. */
export const MAX_DIRECT_PROBES = 2;
/** How long the robot may take to answer `hello {move: true}` with `moved`, ms. */
export const MOVE_ANSWER_TIMEOUT_MS = 2000;

/** Options of {@link PathMover}. */
export interface PathMoverOptions {
  /** The robot's direct candidates and certificate hashes (the offer's). */
  readonly address: RobotAddress;
  /** The session to move (the offer's id, which the robot knows it by). */
  readonly sessionId: string;
  /** The session's current pilot session token (renewals replace it). */
  readonly token: () => string;
  readonly clock: Clock;
  readonly createTransport: TransportFactory;
  readonly logger: Logger;
  /** The connection's listener: a try's events come back through it to {@link PathMover.control}. */
  readonly listener: LinkListener;
  /** The robot moved the session to `link` (it answered `moved`). */
  readonly onMoved: (link: Link) => void;
  readonly probeTimeoutMs?: number;
  readonly answerTimeoutMs?: number;
}

/** When a direct candidate is tried next, and how often it failed. */
interface CandidateSchedule {
  dueAt: number;
  failures: number;
  trying: boolean;
}

/**
 * Moves a session that runs on the relay to a direct path as soon as one answers.
 *
 * Each direct candidate is tried on its own schedule: at once when it first appears (in the offer,
 * or in a `candidates` message when the robot's port got mapped mid-session), then, while it fails
 * or stays silent, again after 1 s, 2 s, 4 s ... up to a minute. The backoff is not a nicety:
 * Chromium counts every failed WebTransport handshake against the page for minutes (a defence
 * against port scanning) and delays each new connection exponentially in their number, so a
 * candidate tried every half second would soon delay every connection of the page, the move's
 * included. The first candidate that answers gets a control stream and `hello {move: true}` for
 * the same session; when the robot answers `moved` the connection takes the new link
 * ({@link PathMoverOptions.onMoved}). The session, its reassemblers and players carry on across
 * it: nothing is set up again, and frames still in flight on the relay are taken while it lingers.
 */
export class PathMover {
  readonly #options: PathMoverOptions;
  #address: RobotAddress;
  readonly #schedule = new Map<string, CandidateSchedule>();
  readonly #trying = new Set<PilotTransport>();
  #timer: TimerHandle | undefined;
  /** The link that said `hello {move: true}` and waits for `moved`, and its candidate's schedule. */
  #pending:
    | { readonly link: Link; readonly timer: TimerHandle; readonly entry: CandidateSchedule }
    | undefined;
  #closed = false;
  #started = false;
  #probes = 0;

  constructor(options: PathMoverOptions) {
    this.#options = options;
    this.#address = options.address;
    this.#learn(options.address.urls);
  }

  /** The robot announced other direct addresses (a port was mapped): new ones are tried at once. */
  setAddress(address: RobotAddress): void {
    this.#address = address;
    this.#learn(address.urls);
    if (this.#started) this.#tick();
  }

  /** Direct tries made so far. */
  get probes(): number {
    return this.#probes;
  }

  /** Starts trying: the candidates due now at once, the rest on their schedules. */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    this.#tick();
    this.#timer = this.#options.clock.setInterval(() => this.#tick(), DIRECT_PROBE_TICK_MS);
  }

  /** Whether `link` is the one waiting for `moved`. */
  owns(link: Link): boolean {
    return this.#pending?.link === link;
  }

  /** A control message on the waiting link. */
  control(link: Link, message: ControlMessage): void {
    const pending = this.#pending;
    if (pending?.link !== link) return;
    if (message.type === 'moved') {
      this.#options.clock.clearTimeout(pending.timer);
      this.#pending = undefined;
      this.#stop();
      this.#options.onMoved(link);
      return;
    }
    if (message.type === 'denied') this.#failed(`the robot refused the move: ${message.reason}`);
  }

  /** The waiting link ended before `moved`. */
  ended(link: Link, reason: string): void {
    if (this.#pending?.link === link) this.#failed(reason);
  }

  /** Stops trying and closes a link still waiting. */
  close(): void {
    this.#stop();
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending !== undefined) {
      this.#options.clock.clearTimeout(pending.timer);
      pending.link.close({ closeCode: 0, reason: 'pilot closed' });
    }
  }

  /** Candidates not seen before are due at once; known ones keep their schedule. */
  #learn(urls: readonly string[]): void {
    const now = this.#options.clock.now();
    for (const url of urls) {
      if (!this.#schedule.has(url)) this.#schedule.set(url, { dueAt: now, failures: 0, trying: false });
    }
  }

  #stop(): void {
    this.#closed = true;
    this.#options.clock.clearInterval(this.#timer);
    for (const transport of this.#trying) transport.close({ closeCode: 0, reason: 'pilot closed' });
    this.#trying.clear();
  }

  #failed(reason: string): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    this.#options.clock.clearTimeout(pending.timer);
    this.#backOff(pending.entry);
    pending.link.close({ closeCode: 0, reason: 'move failed' });
    this.#options.logger.info({ reason }, 'moving the session to a direct path failed; trying again');
  }

  #tick(): void {
    if (this.#closed || this.#pending !== undefined) return;
    const now = this.#options.clock.now();
    for (const url of this.#address.urls) {
      if (this.#trying.size >= MAX_DIRECT_PROBES) return;
      const entry = this.#schedule.get(url);
      if (entry === undefined || entry.trying || entry.dueAt > now) continue;
      this.#try(url, entry);
    }
  }

  #try(url: string, entry: CandidateSchedule): void {
    const { clock } = this.#options;
    entry.trying = true;
    this.#probes++;
    let transport: PilotTransport;
    const retry = () => this.#backOff(entry);
    try {
      transport = this.#options.createTransport(url, {
        serverCertificateHashes: this.#address.certificateHashes.map((h) => ({
          algorithm: 'sha-256',
          value: fromHex(h),
        })),
      });
    } catch {
      retry();
      return;
    }
    this.#trying.add(transport);
    transport.closed.catch(() => undefined);
    let settled = false;
    const timeout = clock.setTimeout(() => {
      if (settled) return;
      settled = true;
      this.#trying.delete(transport);
      transport.close({ closeCode: 0, reason: 'no answer' });
      retry();
    }, this.#options.probeTimeoutMs ?? DIRECT_PROBE_TIMEOUT_MS);
    transport.ready.then(
      () => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timeout);
        this.#trying.delete(transport);
        entry.trying = false;
        void this.#answered(url, transport, entry);
      },
      () => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timeout);
        this.#trying.delete(transport);
        retry();
      },
    );
  }

  /** The candidate failed (no answer, refused, or the move failed): its next try waits longer. */
  #backOff(entry: CandidateSchedule): void {
    entry.trying = false;
    entry.failures++;
    entry.dueAt =
      this.#options.clock.now() +
      Math.min(DIRECT_RETRY_MAX_MS, DIRECT_RETRY_FIRST_MS * 2 ** (entry.failures - 1));
  }

  /** A candidate answered: its control stream and `hello {move: true}`. */
  async #answered(url: string, transport: PilotTransport, entry: CandidateSchedule): Promise<void> {
    if (this.#closed || this.#pending !== undefined) {
      transport.close({ closeCode: 0, reason: 'pilot closed' });
      return;
    }
    let link: Link;
    try {
      link = await Link.open(url, transport, this.#options.logger, 'direct');
    } catch {
      return;
    }
    if (this.#closed || this.#pending !== undefined) {
      link.close({ closeCode: 0, reason: 'pilot closed' });
      return;
    }
    const timer = this.#options.clock.setTimeout(
      () => this.#failed('the robot did not answer the move in time'),
      this.#options.answerTimeoutMs ?? MOVE_ANSWER_TIMEOUT_MS,
    );
    this.#pending = { link, timer, entry };
    link.start(this.#options.listener);
    link.send({
      type: 'hello',
      v: 1,
      token: this.#options.token(),
      session_id: this.#options.sessionId,
      move: true,
    });
  }
}
