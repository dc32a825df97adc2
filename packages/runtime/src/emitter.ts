import { type Logger, silentLogger } from './logger.js';

/** The events of an emitter: each name maps to its listener's signature. */
export type EventMap = { [event: string]: (...args: never[]) => void };

/**
 * Calls `call` and logs, instead of throwing, what it throws: a listener's or a callback
 * option's bug must never break the code path that notified it (a receive loop, a timer).
 */
export function safeCall(logger: Logger, what: string, call: () => void): void {
  try {
    call();
  } catch (error) {
    logger.error({ err: error, listener: what }, `a ${what} listener threw; the emitter carries on`);
  }
}

/**
 * A typed event emitter. {@link TypedEmitter.safeEmit} calls every listener and logs a listener's
 * exception instead of throwing it into the emitter's own code path. Listeners added or removed
 * during an emit take effect from the next one.
 */
export class TypedEmitter<Events extends { [K in keyof Events]: (...args: never[]) => void }> {
  readonly #listeners = new Map<keyof Events, Events[keyof Events][]>();
  readonly #logger: Logger;

  /** @param logger - Where a throwing listener is reported. */
  constructor(logger: Logger = silentLogger) {
    this.#logger = logger;
  }

  /** Adds a listener; returns the function that removes it. */
  on<K extends keyof Events>(event: K, listener: Events[K]): () => void {
    // Copy on write: an emit in progress keeps iterating the array it started with.
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), listener]);
    return () => this.off(event, listener);
  }

  /** Adds a listener called at most once. */
  once<K extends keyof Events>(event: K, listener: Events[K]): () => void {
    const wrapper = ((...args: Parameters<Events[K]>) => {
      remove();
      (listener as (...a: Parameters<Events[K]>) => void)(...args);
    }) as unknown as Events[K];
    const remove = this.on(event, wrapper);
    return remove;
  }

  /** Removes a listener added with {@link on}; unknown listeners are ignored. */
  off<K extends keyof Events>(event: K, listener: Events[K]): void {
    const current = this.#listeners.get(event);
    if (current === undefined) return;
    const index = current.indexOf(listener);
    if (index < 0) return;
    const next = current.filter((_, i) => i !== index);
    if (next.length === 0) this.#listeners.delete(event);
    else this.#listeners.set(event, next);
  }

  /** Listeners of one event. */
  listenerCount(event: keyof Events): number {
    return this.#listeners.get(event)?.length ?? 0;
  }

  /** Removes every listener, of one event or of all. */
  removeAllListeners(event?: keyof Events): void {
    if (event === undefined) this.#listeners.clear();
    else this.#listeners.delete(event);
  }

  /** Calls each listener of `event` in order; one that throws is logged and the rest still run. */
  safeEmit<K extends keyof Events>(event: K, ...args: Parameters<Events[K]>): void {
    const listeners = this.#listeners.get(event);
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        (listener as (...a: Parameters<Events[K]>) => void)(...args);
      } catch (error) {
        this.#logger.error(
          { err: error, event: String(event) },
          `a listener of ${String(event)} threw; the emitter carries on`,
        );
      }
    }
  }
}
