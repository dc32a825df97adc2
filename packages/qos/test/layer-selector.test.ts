import { seededRandom } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import { LAYER_UP_HOLD_MS, LAYER_UP_MARGIN, LayerSelector, type SimulcastLayer } from '../src/index.js';

const LAYERS: SimulcastLayer[] = [
  { name: 'low', minBitrateKbps: 0 },
  { name: 'mid', minBitrateKbps: 800 },
  { name: 'high', minBitrateKbps: 2000 },
];

/** Feeds one bitrate a second from `from`; returns the switches made. */
function feed(selector: LayerSelector, from: number, kbps: readonly number[]) {
  const switches: { at: number; index: number; change: 'up' | 'down' }[] = [];
  kbps.forEach((k, i) => {
    const index = selector.handleBitrate(from + i * 1000, k);
    if (selector.lastChange !== null)
      switches.push({ at: from + i * 1000, index, change: selector.lastChange });
  });
  return switches;
}

describe('LayerSelector', () => {
  it('picks the best layer that fits on the first call, without calling it a switch', () => {
    const s = new LayerSelector({ layers: LAYERS });
    expect(s.index).toBe(0);
    expect(s.handleBitrate(0, 2500)).toBe(2);
    expect([s.layer.name, s.lastChange]).toEqual(['high', null]);
  });

  it('goes down at once, past several layers if needed', () => {
    const s = new LayerSelector({ layers: LAYERS });
    s.handleBitrate(0, 2500);
    expect(s.handleBitrate(1000, 1999)).toBe(1);
    expect(s.lastChange).toBe('down');
    const t = new LayerSelector({ layers: LAYERS });
    t.handleBitrate(0, 2500);
    expect(t.handleBitrate(1000, 300)).toBe(0);
  });

  it('goes up only after the hold of headroom above the next minimum with the margin', () => {
    const s = new LayerSelector({ layers: LAYERS });
    s.handleBitrate(0, 500);
    // Above the minimum but under the margin: no headroom at all.
    expect(feed(s, 1000, Array(10).fill(800 * LAYER_UP_MARGIN - 1))).toEqual([]);
    const headroom = 800 * LAYER_UP_MARGIN;
    const switches = feed(s, 20_000, Array(10).fill(headroom));
    expect(switches).toEqual([{ at: 20_000 + LAYER_UP_HOLD_MS, index: 1, change: 'up' }]);
  });

  it('restarts the hold when the headroom is interrupted', () => {
    const s = new LayerSelector({ layers: LAYERS });
    s.handleBitrate(0, 500);
    const input = [1000, 1000, 1000, 1000, 900, 1000, 1000, 1000, 1000, 1000, 1000];
    expect(feed(s, 1000, input)).toEqual([{ at: 1000 + 10_000, index: 1, change: 'up' }]);
  });

  it('jumps up to the best layer with headroom after the hold', () => {
    const s = new LayerSelector({ layers: LAYERS });
    s.handleBitrate(0, 100);
    expect(feed(s, 1000, Array(6).fill(3000))).toEqual([
      { at: 1000 + LAYER_UP_HOLD_MS, index: 2, change: 'up' },
    ]);
  });

  it('switches once under input oscillating around a threshold', () => {
    for (const [a, b] of [
      [790, 810],
      [790, 1300],
      [900, 1000],
    ] as const) {
      const s = new LayerSelector({ layers: LAYERS });
      s.handleBitrate(0, 1000);
      const input = Array.from({ length: 120 }, (_, i) => (i % 2 === 0 ? a : b));
      const switches = feed(s, 1000, input);
      expect(switches.length, `${a}/${b}`).toBeLessThanOrEqual(1);
    }
  });

  it('never switches more than once per hold on random input (seeded)', () => {
    const random = seededRandom(7);
    const s = new LayerSelector({ layers: LAYERS });
    s.handleBitrate(0, 1000);
    const input: number[] = [];
    let level = 1000;
    for (let i = 0; i < 600; i++) {
      if (random() < 0.1) level = random() * 3000;
      input.push(level + (random() - 0.5) * 200);
    }
    const switches = feed(s, 1000, input);
    expect(switches.length).toBeGreaterThan(2);
    // Every up comes after a full hold since the previous switch.
    switches.forEach((sw, i) => {
      if (sw.change === 'up' && i > 0)
        expect(sw.at - switches[i - 1]!.at).toBeGreaterThanOrEqual(LAYER_UP_HOLD_MS);
    });
    const ups = switches.filter((sw) => sw.change === 'up').length;
    expect(ups).toBeLessThanOrEqual(input.length / (LAYER_UP_HOLD_MS / 1000));
  });

  it('rejects layers it cannot order, naming the layer', () => {
    expect(() => new LayerSelector({ layers: [] })).toThrow(/at least one layer/);
    expect(
      () =>
        new LayerSelector({
          layers: [
            { name: 'a', minBitrateKbps: 1000 },
            { name: 'b', minBitrateKbps: 500 },
          ],
        }),
    ).toThrow(/layer 1 \("b"\).*lowest first/);
    expect(() => new LayerSelector({ layers: [{ name: '', minBitrateKbps: 0 }] })).toThrow(/name/);
    const s = new LayerSelector({ layers: LAYERS });
    expect(() => s.handleBitrate(0, -5)).toThrow(/availableKbps/);
  });
});
