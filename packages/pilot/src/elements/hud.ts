import type { PilotChannelStats, PilotConnectionStats } from '../connection/options.js';
import { formatBitrate, formatMs, formatPercent, formatRate, UNKNOWN } from './format.js';

/** One video channel's rates between two statistics snapshots. */
export interface ChannelRates {
  /** Frames painted per second. */
  readonly fps: number;
  /** Chunks lost on the path over chunks sent, 0..1. */
  readonly chunkLoss: number;
  /** Frames rebuilt from parity per second. */
  readonly repairedPerS: number;
  /** Frames given up per second. */
  readonly lostPerS: number;
  /** Received bits per second (the player's own window). */
  readonly bitrateBps: number;
}

interface Previous {
  readonly atMs: number;
  readonly stats: PilotChannelStats;
}

/**
 * Rates of every video channel from successive {@link PilotConnectionStats} snapshots: frame
 * rate, chunk loss, repairs and losses per second. Pure: time is the caller's.
 */
export class RateTracker {
  readonly #previous = new Map<string, Previous>();
  readonly #rates = new Map<string, ChannelRates>();

  /** Takes a snapshot taken at `nowMs`; returns the rates per channel id. */
  update(stats: PilotConnectionStats, nowMs: number): ReadonlyMap<string, ChannelRates> {
    for (const [id, channel] of Object.entries(stats.channels)) {
      const before = this.#previous.get(id);
      this.#previous.set(id, { atMs: nowMs, stats: channel });
      if (before === undefined || nowMs <= before.atMs || channel.painted < before.stats.painted) {
        // First sight, or a new session's counters started again: no rate yet.
        continue;
      }
      const seconds = (nowMs - before.atMs) / 1000;
      const r = channel.reassembler;
      const b = before.stats.reassembler;
      const arrived = r.datagrams - r.duplicates - r.malformed - (b.datagrams - b.duplicates - b.malformed);
      const expected = r.chunksExpected - b.chunksExpected;
      this.#rates.set(id, {
        fps: (channel.painted - before.stats.painted) / seconds,
        chunkLoss: expected > 0 ? Math.min(1, Math.max(0, expected - arrived) / expected) : 0,
        repairedPerS: (r.framesRepaired - b.framesRepaired) / seconds,
        lostPerS: (r.framesLost - b.framesLost) / seconds,
        bitrateBps: channel.bitrateBps,
      });
    }
    return this.#rates;
  }

  /** Forgets everything (a new robot). */
  clear(): void {
    this.#previous.clear();
    this.#rates.clear();
  }
}

/** What the HUD knows besides the statistics. */
export interface HudFacts {
  /** The channel shown (its id as a string key of the statistics). */
  readonly channelId: string | undefined;
  readonly codec: string | undefined;
  /** The picture's size as decoded, `0×0` before the first. */
  readonly width: number;
  readonly height: number;
  /** The age of the picture on screen, ms (`NaN` unknown). */
  readonly pictureAgeMs: number;
  readonly stale: boolean;
  readonly role: string | undefined;
  /** Who drives: `you`, `someone else`, `nobody`, or unknown. */
  readonly driver: string | undefined;
  /** `direct` or `relay`. */
  readonly path: string | undefined;
  readonly profile: string | undefined;
  /** The Reed-Solomon kernel in use (`simd` or `scalar`). */
  readonly fecKernel: string | undefined;
}

/** One HUD entry: a label, a value, and a stable key tests and styles use. */
export interface HudItem {
  readonly key: string;
  readonly label: string;
  readonly value: string;
}

/**
 * How the session's packets travel, for a person: `direct`, `relay (through the cloud)`, after a
 * move off the relay `direct (moved off the relay, N frames lost)`; on WebRTC `direct (WebRTC)` or
 * `relay (TURN)`.
 */
export function pathText(stats: PilotConnectionStats): string | undefined {
  if (stats.path === undefined) return undefined;
  if (stats.backend === 'webrtc') return stats.path === 'relay' ? 'relay (TURN)' : 'direct (WebRTC)';
  if (stats.path === 'relay') return 'relay (through the cloud)';
  const last = stats.pathSwitches.at(-1);
  if (last === undefined) return 'direct';
  const lost = last.framesLost === 1 ? '1 frame lost' : `${last.framesLost} frames lost`;
  return `direct (moved off the ${last.from}, ${lost})`;
}

/** The HUD's entries, in the order shown. */
export function hudItems(
  stats: PilotConnectionStats,
  rates: ChannelRates | undefined,
  facts: HudFacts,
): HudItem[] {
  const robot = facts.channelId === undefined ? undefined : stats.robot[facts.channelId];
  const abr = robot?.abr_reason;
  const repair =
    rates === undefined
      ? UNKNOWN
      : `${formatRate(rates.repairedPerS, 'repaired/s')}, ${formatRate(rates.lostPerS, 'lost/s')}`;
  return [
    {
      key: 'picture-age',
      label: 'Picture age',
      value: formatMs(facts.pictureAgeMs) + (facts.stale ? ' (frozen)' : ''),
    },
    { key: 'bitrate', label: 'Bitrate', value: formatBitrate(rates?.bitrateBps) },
    { key: 'fps', label: 'Frame rate', value: formatRate(rates?.fps, 'fps') },
    {
      key: 'resolution',
      label: 'Resolution',
      value: facts.width > 0 && facts.height > 0 ? `${facts.width}×${facts.height}` : UNKNOWN,
    },
    { key: 'codec', label: 'Codec', value: facts.codec ?? UNKNOWN },
    { key: 'rtt', label: 'RTT', value: formatMs(stats.rttMs) },
    { key: 'loss', label: 'Loss', value: formatPercent(rates?.chunkLoss) },
    { key: 'repair', label: 'Repair', value: repair },
    { key: 'abr', label: 'ABR', value: typeof abr === 'string' ? abr : UNKNOWN },
    { key: 'path', label: 'Path', value: facts.path ?? UNKNOWN },
    { key: 'profile', label: 'Profile', value: facts.profile ?? stats.profile ?? UNKNOWN },
    { key: 'role', label: 'Role', value: facts.role ?? UNKNOWN },
    { key: 'driver', label: 'Driving', value: facts.driver ?? UNKNOWN },
    { key: 'fec', label: 'FEC kernel', value: facts.fecKernel ?? UNKNOWN },
  ];
}

/** The charts' window, ms: the last minute. */
export const HISTORY_WINDOW_MS = 60_000;

/**
 * The last minute of picture age (ms), bitrate (kbit/s) and loss (%) of the channel shown, as
 * column arrays (x in seconds), the shape uPlot draws.
 */
export class History {
  readonly times: number[] = [];
  readonly pictureAgeMs: (number | null)[] = [];
  readonly bitrateKbps: (number | null)[] = [];
  readonly lossPercent: (number | null)[] = [];

  /** Adds a sample at `wallMs` (ms since the epoch); drops samples older than a minute. */
  push(
    wallMs: number,
    pictureAgeMs: number,
    bitrateBps: number | undefined,
    chunkLoss: number | undefined,
  ): void {
    this.times.push(wallMs / 1000);
    this.pictureAgeMs.push(finiteOrNull(pictureAgeMs));
    this.bitrateKbps.push(bitrateBps === undefined ? null : finiteOrNull(bitrateBps / 1000));
    this.lossPercent.push(chunkLoss === undefined ? null : finiteOrNull(chunkLoss * 100));
    let drop = 0;
    while (drop < this.times.length && this.times[drop]! < (wallMs - HISTORY_WINDOW_MS) / 1000) drop++;
    for (const series of [this.times, this.pictureAgeMs, this.bitrateKbps, this.lossPercent])
      series.splice(0, drop);
  }

  /** Forgets every sample (another channel is shown). */
  clear(): void {
    for (const series of [this.times, this.pictureAgeMs, this.bitrateKbps, this.lossPercent])
      series.length = 0;
  }
}

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}
