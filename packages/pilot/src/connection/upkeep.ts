import type { Clock, Logger, TimerHandle } from '@svc/runtime';
import type { ControlMessage } from '@svc/wire';
import type { Link, LinkListener } from './link.js';
import type { PathSwitch, RobotAddress, TransportFactory } from './options.js';
import { PathMover } from './path-move.js';
import { tokenExpiryMs } from './refusal.js';
import type { Session } from './session.js';
import type { SignalSession } from './signal-session.js';

/** How long the old link is still read after the session moved off it, ms (what was in flight). */
export const RETIRED_LINK_LINGER_MS = 1000;
/** A token is renewed when this share of its lifetime is over. */
export const RENEW_AT_SHARE = 0.75;
/** And at least this long before it expires, ms. */
export const RENEW_LEAD_MS = 20_000;
/** A renewal that failed is tried again after this long, ms (while the token lasts). */
export const RENEW_RETRY_MS = 5000;

/** Options of {@link SessionUpkeep}. */
export interface SessionUpkeepOptions {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly createTransport: TransportFactory;
  /** The robot's direct candidates (the offer's); none: nothing to move to. */
  readonly direct: RobotAddress;
  /** The offer's session id. */
  readonly sessionId: string;
  /** The link the session started on. */
  readonly link: Link;
  readonly session: Session;
  /** The connection's link listener (probe and retired links report through it too). */
  readonly listener: LinkListener;
  /** The session's token as the robot last accepted it. */
  readonly token: string;
  /** A fresh pilot session token; absent when the page gave a fixed token (no renewal then). */
  readonly freshToken?: () => Promise<string>;
  /** The session's signalling connection: svc-cloud hears renewals (the relay lives on with them). */
  readonly signalling?: SignalSession;
  /** The robot moved the session to `link`: the connection makes it the current one. */
  readonly onMoved: (link: Link) => void;
  /** A path switch, once its cost in frames is known. */
  readonly onSwitched: (change: PathSwitch) => void;
}

/**
 * What keeps a connected session going beyond its first transport: on the relay, the move to a
 * direct path as soon as one answers ({@link PathMover}), with the old link read a little longer
 * for what was in flight; and renewal of the pilot session token before it expires, told to the
 * robot on the control stream (it checks the token itself) and to svc-cloud over signalling (the
 * relay, and the cloud's view of the session, follow it).
 */
export class SessionUpkeep {
  readonly #options: SessionUpkeepOptions;
  readonly #mover: PathMover | undefined;
  readonly #retired = new Set<Link>();
  readonly #timers = new Set<TimerHandle>();
  #link: Link;
  #token: string;
  #renewTimer: TimerHandle | undefined;
  #closed = false;

  constructor(options: SessionUpkeepOptions) {
    this.#options = options;
    this.#link = options.link;
    this.#token = options.token;
    this.#mover =
      options.link.path === 'relay'
        ? new PathMover({
            address: options.direct,
            sessionId: options.sessionId,
            token: () => this.#token,
            clock: options.clock,
            createTransport: options.createTransport,
            logger: options.logger,
            listener: options.listener,
            onMoved: (link) => this.#moved(link),
          })
        : undefined;
  }

  /** The token the robot last accepted (renewals replace it). */
  get token(): string {
    return this.#token;
  }

  /** Starts the move to a direct path (on the relay) and the renewal timer. */
  start(): void {
    this.#mover?.start();
    this.#scheduleRenewal();
  }

  /** Whether `link` is this session's besides the current one: waiting for `moved`, or retired. */
  owns(link: Link): boolean {
    return this.#retired.has(link) || (this.#mover?.owns(link) ?? false);
  }

  /** A control message on a link this upkeep owns. */
  control(link: Link, message: ControlMessage): void {
    this.#mover?.control(link, message);
  }

  /** A link this upkeep owns ended. */
  ended(link: Link, reason: string): void {
    if (this.#retired.delete(link)) return;
    this.#mover?.ended(link, reason);
  }

  /** The robot announced other direct addresses: a session on the relay tries them. */
  directAddresses(urls: readonly string[], certificateHashes: readonly string[]): void {
    this.#mover?.setAddress({ urls, certificateHashes, sessionId: this.#options.sessionId });
  }

  /** The robot accepted a renewal (`renewed` on the control stream). */
  renewed(exp: number): void {
    this.#options.logger.debug({ exp }, 'the robot accepted the renewed session token');
  }

  /** Stops everything and closes the links it holds (the session ended). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#mover?.close();
    this.#options.clock.clearTimeout(this.#renewTimer);
    for (const timer of this.#timers) this.#options.clock.clearTimeout(timer);
    for (const link of this.#retired) link.close({ closeCode: 0, reason: 'pilot closed' });
    this.#retired.clear();
  }

  #moved(link: Link): void {
    const { clock, session } = this.#options;
    const old = this.#link;
    const lostBefore = session.framesLost();
    const atMs = clock.now();
    this.#retired.add(old);
    this.#link = link;
    session.useLink(link);
    this.#options.onMoved(link);
    this.#options.logger.info({ url: link.url }, 'the session moved from the relay to a direct path');
    const timer = clock.setTimeout(() => {
      this.#timers.delete(timer);
      if (this.#retired.delete(old)) old.close({ closeCode: 0, reason: 'moved to a direct path' });
      this.#options.onSwitched({
        from: old.path,
        to: link.path,
        atMs,
        framesLost: Math.max(0, session.framesLost() - lostBefore),
      });
    }, RETIRED_LINK_LINGER_MS);
    this.#timers.add(timer);
  }

  #scheduleRenewal(): void {
    const { clock, freshToken } = this.#options;
    this.#renewTimer = undefined;
    if (this.#closed || freshToken === undefined) return;
    const exp = tokenExpiryMs(this.#token);
    if (exp === undefined) return;
    const left = exp - clock.wallNow();
    if (left <= 0) return;
    const delay = Math.max(0, Math.min(left * RENEW_AT_SHARE, left - RENEW_LEAD_MS));
    this.#renewTimer = clock.setTimeout(() => void this.#renew(freshToken), delay);
  }

  async #renew(freshToken: () => Promise<string>): Promise<void> {
    let token: string;
    try {
      token = await freshToken();
    } catch (err) {
      if (this.#closed) return;
      this.#options.logger.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'cannot get a fresh session token to renew the session; trying again',
      );
      this.#renewTimer = this.#options.clock.setTimeout(() => void this.#renew(freshToken), RENEW_RETRY_MS);
      return;
    }
    if (this.#closed) return;
    this.#token = token;
    this.#link.send({ type: 'renew', token });
    this.#options.signalling
      ?.renew(token)
      .catch((err: unknown) =>
        this.#options.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'svc-cloud did not take the renewal; a relayed session may end when the old token expires',
        ),
      );
    this.#scheduleRenewal();
  }
}
