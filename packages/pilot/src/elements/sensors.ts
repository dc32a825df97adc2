import { type FormattedPayload, formatPayload } from './format.js';

/** The message rate is counted over this window, ms. */
export const SENSOR_RATE_WINDOW_MS = 5000;

/** What the sensor panel shows of one sensor channel. */
export interface SensorView {
  readonly channel: number;
  readonly name: string;
  /** The latest message, formatted. */
  readonly payload: FormattedPayload;
  readonly bytes: number;
  /** Messages per second over the last {@link SENSOR_RATE_WINDOW_MS}. */
  readonly rateHz: number;
  /** Time since the latest message, ms. */
  readonly ageMs: number;
  /** Messages since the panel started. */
  readonly count: number;
}

interface SensorEntry {
  readonly channel: number;
  readonly name: string;
  latest: Uint8Array;
  latestAtMs: number;
  count: number;
  /** Arrival times within the rate window. */
  readonly arrivals: number[];
  /** Formatted once per message, on demand. */
  formatted: FormattedPayload | undefined;
}

/**
 * The latest message of each sensor channel, with its rate and age: the sensor panel's model.
 * Time comes from the caller, so the rate and the age are testable without waiting.
 */
export class SensorBoard {
  readonly #entries = new Map<number, SensorEntry>();

  /** One whole message of `channel` arrived at `nowMs`. */
  record(channel: number, name: string, bytes: Uint8Array, nowMs: number): void {
    let entry = this.#entries.get(channel);
    if (entry === undefined) {
      entry = {
        channel,
        name,
        latest: bytes,
        latestAtMs: nowMs,
        count: 0,
        arrivals: [],
        formatted: undefined,
      };
      this.#entries.set(channel, entry);
    }
    entry.latest = bytes;
    entry.latestAtMs = nowMs;
    entry.count++;
    entry.formatted = undefined;
    entry.arrivals.push(nowMs);
    trim(entry.arrivals, nowMs);
  }

  /** Every sensor channel heard from, by channel id. */
  views(nowMs: number): SensorView[] {
    return [...this.#entries.values()]
      .sort((a, b) => a.channel - b.channel)
      .map((entry) => {
        trim(entry.arrivals, nowMs);
        entry.formatted ??= formatPayload(entry.latest);
        return {
          channel: entry.channel,
          name: entry.name,
          payload: entry.formatted,
          bytes: entry.latest.byteLength,
          rateHz: entry.arrivals.length / (SENSOR_RATE_WINDOW_MS / 1000),
          ageMs: Math.max(0, nowMs - entry.latestAtMs),
          count: entry.count,
        };
      });
  }

  /** Forgets every channel (a new robot). */
  clear(): void {
    this.#entries.clear();
  }
}

function trim(arrivals: number[], nowMs: number): void {
  let drop = 0;
  while (drop < arrivals.length && arrivals[drop]! <= nowMs - SENSOR_RATE_WINDOW_MS) drop++;
  arrivals.splice(0, drop);
}
