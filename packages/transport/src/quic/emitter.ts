/** Maps event names to listener argument tuples. */
export type EventMap = Record<string, readonly unknown[]>;

/** A listener for event `K` of `E`. */
export type Listener<E extends EventMap, K extends keyof E> = (...args: E[K]) => void;

/**
 * A minimal typed event emitter. A listener that throws does not stop the others nor the caller:
 * its error goes to the `onListenerError` sink given at construction, so it never vanishes.
 */
export class TypedEmitter<E extends EventMap> {
  readonly #listeners = new Map<keyof E, Set<unknown>>();
  readonly #onListenerError: (err: unknown, event: string) => void;

  /** @param onListenerError - Receives errors thrown by listeners. */
  constructor(onListenerError: (err: unknown, event: string) => void) {
    this.#onListenerError = onListenerError;
  }

  /** Adds `listener` for `event`; returns a function that removes it. */
  on<K extends keyof E>(event: K, listener: Listener<E, K>): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener);
    return () => this.off(event, listener);
  }

  /** Removes `listener` from `event`. */
  off<K extends keyof E>(event: K, listener: Listener<E, K>): void {
    this.#listeners.get(event)?.delete(listener);
  }

  /** Number of listeners of `event`. */
  listenerCount(event: keyof E): number {
    return this.#listeners.get(event)?.size ?? 0;
  }

  /** Calls every listener of `event` in order; errors they throw go to the sink. */
  emit<K extends keyof E>(event: K, ...args: E[K]): void {
    const set = this.#listeners.get(event);
    if (set === undefined || set.size === 0) return;
    for (const listener of [...set]) {
      try {
        (listener as (...a: E[K]) => void)(...args);
      } catch (err) {
        this.#onListenerError(err, String(event));
      }
    }
  }

  /** Removes every listener. */
  clear(): void {
    this.#listeners.clear();
  }
}
