import { checkNow } from './clock.js';

/** One simulcast layer as the selector sees it (`[[channel.layer]]` `name`, `min_bitrate_kbps`). */
export interface SimulcastLayer {
  readonly name: string;
  /** The bitrate above which the layer may be used, kbit/s. */
  readonly minBitrateKbps: number;
}

/** Default of {@link LayerSelectorOptions.upHoldMs}. */
export const LAYER_UP_HOLD_MS = 5000;

/** Default of {@link LayerSelectorOptions.upMargin}. */
export const LAYER_UP_MARGIN = 1.2;

/** Construction options of a {@link LayerSelector}. */
export interface LayerSelectorOptions {
  /** The layers in declared order, lowest first: `minBitrateKbps` never decreasing. */
  readonly layers: readonly SimulcastLayer[];
  /** How long the headroom must last before a switch up, ms (default {@link LAYER_UP_HOLD_MS}). */
  readonly upHoldMs?: number;
  /** A layer above is wanted when the bitrate is at least its minimum times this (default {@link LAYER_UP_MARGIN}). */
  readonly upMargin?: number;
}

/**
 * Chooses which simulcast layer of a channel to forward from the bitrate the link allows (the
 * controller's request): down at once when it falls below the current layer's minimum, up only
 * after {@link LayerSelectorOptions.upHoldMs} of headroom above the next layer's minimum times
 * the margin, so an input oscillating around a threshold switches at most once per hold. The
 * first call picks the best layer that fits at once. Pure: every call takes `now` (ms).
 */
export class LayerSelector {
  readonly layers: readonly SimulcastLayer[];
  readonly upHoldMs: number;
  readonly upMargin: number;
  #index = 0;
  #chosen = false;
  #headroomSince: number | undefined;
  #lastChange: 'up' | 'down' | null = null;
  #lastNow: number | undefined;

  constructor(options: LayerSelectorOptions) {
    const { layers, upHoldMs = LAYER_UP_HOLD_MS, upMargin = LAYER_UP_MARGIN } = options;
    if (layers.length === 0) throw new TypeError('a layer selector needs at least one layer');
    layers.forEach((layer, i) => {
      if (typeof layer.name !== 'string' || layer.name === '') {
        throw new TypeError(`layer ${i} needs a name`);
      }
      if (!Number.isFinite(layer.minBitrateKbps) || layer.minBitrateKbps < 0) {
        throw new TypeError(
          `layer ${i} ("${layer.name}") minBitrateKbps must be a finite number of 0 or more, got ${layer.minBitrateKbps}`,
        );
      }
      const before = layers[i - 1];
      if (before !== undefined && layer.minBitrateKbps < before.minBitrateKbps) {
        throw new TypeError(
          `layer ${i} ("${layer.name}") has minBitrateKbps ${layer.minBitrateKbps} below layer ${i - 1} ("${before.name}", ${before.minBitrateKbps}): declare layers lowest first`,
        );
      }
    });
    if (!Number.isFinite(upHoldMs) || upHoldMs < 0) {
      throw new TypeError(`upHoldMs must be a number of ms of 0 or more, got ${upHoldMs}`);
    }
    if (!Number.isFinite(upMargin) || upMargin < 1) {
      throw new TypeError(`upMargin must be a factor of at least 1, got ${upMargin}`);
    }
    this.layers = Object.freeze([...layers]);
    this.upHoldMs = upHoldMs;
    this.upMargin = upMargin;
  }

  /** Index of the wanted layer (0 before the first call). */
  get index(): number {
    return this.#index;
  }

  /** The wanted layer. */
  get layer(): SimulcastLayer {
    return this.layers[this.#index]!;
  }

  /**
   * Direction of the switch made by the last call (the `layer` datagram's `reason`), or `null`;
   * the first call's pick is not a switch.
   */
  get lastChange(): 'up' | 'down' | null {
    return this.#lastChange;
  }

  /**
   * The bitrate the link allows at `now`, kbit/s: returns the index of the wanted layer. Throws
   * `TypeError` for a bitrate that is not a finite number of zero or more.
   */
  handleBitrate(now: number, availableKbps: number): number {
    checkNow(now, this.#lastNow);
    this.#lastNow = now;
    if (!Number.isFinite(availableKbps) || availableKbps < 0) {
      throw new TypeError(`availableKbps must be a finite number of 0 or more, got ${availableKbps}`);
    }
    const before = this.#index;
    this.#lastChange = null;
    if (!this.#chosen) {
      this.#chosen = true;
      this.#index = this.#highest(availableKbps, 1);
      return this.#index;
    }
    if (availableKbps < this.layer.minBitrateKbps) {
      this.#index = this.#highest(availableKbps, 1);
      this.#headroomSince = undefined;
    } else {
      const next = this.layers[this.#index + 1];
      if (next !== undefined && availableKbps >= next.minBitrateKbps * this.upMargin) {
        this.#headroomSince ??= now;
        if (now - this.#headroomSince >= this.upHoldMs) {
          this.#index = Math.max(this.#index, this.#highest(availableKbps, this.upMargin));
          this.#headroomSince = undefined;
        }
      } else {
        this.#headroomSince = undefined;
      }
    }
    if (this.#index !== before) this.#lastChange = this.#index > before ? 'up' : 'down';
    return this.#index;
  }

  /** The highest layer whose minimum times `margin` is within `kbps` (layer 0 when none is). */
  #highest(kbps: number, margin: number): number {
    for (let i = this.layers.length - 1; i > 0; i--) {
      if (kbps >= this.layers[i]!.minBitrateKbps * margin) return i;
    }
    return 0;
  }
}
