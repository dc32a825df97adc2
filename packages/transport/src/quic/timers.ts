/**
 * The two timers of a QUIC connection: quiche's deadline (loss detection, acknowledgements, idle
 * timeout), and the flush deferred to the end of the event loop's current phase.
 */
import type { Clock, TimerHandle } from '@svc/runtime';

/** A timer due this much later than quiche's deadline is re-armed; Node's timers are whole ms anyway. */
const TIMER_SLACK_MS = 1;

/**
 * One timer kept at quiche's next deadline. A timer already set to fire no later than a new
 * deadline is kept (re-arming on every flush cost more than the occasional early wake-up): the
 * owner, woken early, finds quiche's deadline still ahead and arms again.
 */
export class DeadlineTimer {
  readonly #clock: Clock;
  readonly #onDue: () => void;
  #handle: TimerHandle | undefined;
  /** When {@link DeadlineTimer.#handle} fires, on the clock's `now()`. */
  #deadline = 0;

  /** @param onDue - Runs when the timer fires (from a timer callback: it must not throw). */
  constructor(clock: Clock, onDue: () => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  /** Fires in `ms` (quiche's `timeout()`), or never with `null`. */
  arm(ms: number | null): void {
    if (ms === null) {
      this.cancel();
      return;
    }
    const deadline = this.#clock.now() + ms;
    if (this.#handle !== undefined) {
      if (this.#deadline <= deadline + TIMER_SLACK_MS) return;
      this.#clock.clearTimeout(this.#handle);
    }
    this.#deadline = deadline;
    this.#handle = this.#clock.setTimeout(this.#fire, ms);
  }

  /** Disarms. */
  cancel(): void {
    this.#clock.clearTimeout(this.#handle);
    this.#handle = undefined;
  }

  readonly #fire = (): void => {
    this.#handle = undefined;
    this.#onDue();
  };
}

/**
 * A flush deferred to the check phase (`setImmediate`): every datagram of the socket read in
 * progress is processed first, so acknowledgements and stream writes leave in as few packets as
 * possible.
 */
export class DeferredFlush {
  readonly #flush: () => void;
  #immediate: NodeJS.Immediate | undefined;

  /** @param flush - Runs once per {@link DeferredFlush.schedule} burst (it must not throw). */
  constructor(flush: () => void) {
    this.#flush = flush;
  }

  /** Asks for a flush at the end of this phase; asking again before it runs changes nothing. */
  schedule(): void {
    this.#immediate ??= setImmediate(this.#run);
  }

  /** Forgets a flush asked for (one is being done now, or the connection is gone). */
  cancel(): void {
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#immediate = undefined;
  }

  readonly #run = (): void => {
    this.#immediate = undefined;
    this.#flush();
  };
}
