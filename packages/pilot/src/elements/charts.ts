import uPlot from 'uplot';
import { HISTORY_WINDOW_MS, type History } from './hud.js';

/** One small chart of the stats panel. */
interface ChartSpec {
  readonly key: 'picture-age' | 'bitrate' | 'loss';
  readonly label: string;
  readonly unit: string;
  readonly color: string;
  readonly values: (history: History) => (number | null)[];
}

const SPECS: readonly ChartSpec[] = [
  { key: 'picture-age', label: 'Picture age', unit: 'ms', color: '#f0b75e', values: (h) => h.pictureAgeMs },
  { key: 'bitrate', label: 'Bitrate', unit: 'kbit/s', color: '#6cb6ff', values: (h) => h.bitrateKbps },
  { key: 'loss', label: 'Loss', unit: '%', color: '#ff7b72', values: (h) => h.lossPercent },
];

/** The charts show this many seconds up to the latest sample. */
const HISTORY_SECONDS = HISTORY_WINDOW_MS / 1000;

/** Chart size, CSS px. */
const WIDTH = 260;
const HEIGHT = 110;

/**
 * The stats panel's three live charts (the last minute of picture age, bitrate and loss), drawn
 * by uPlot into `container`: one `figure` per chart with its caption.
 */
export class StatsCharts {
  readonly #charts: { readonly spec: ChartSpec; readonly plot: uPlot }[] = [];

  constructor(container: HTMLElement) {
    const document = container.ownerDocument;
    for (const spec of SPECS) {
      const figure = document.createElement('figure');
      figure.dataset.svcChart = spec.key;
      const caption = document.createElement('figcaption');
      caption.textContent = `${spec.label} (${spec.unit}), last minute`;
      const target = document.createElement('div');
      figure.append(caption, target);
      container.append(figure);
      const plot = new uPlot(
        {
          width: WIDTH,
          height: HEIGHT,
          legend: { show: false },
          cursor: { show: false },
          scales: {
            x: { time: true, range: (_u, _min, max) => [max - HISTORY_SECONDS, max] },
            y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
          },
          axes: [
            { stroke: '#8c95a6', grid: { stroke: '#2a2f3a' }, ticks: { stroke: '#2a2f3a' }, size: 24 },
            { stroke: '#8c95a6', grid: { stroke: '#2a2f3a' }, ticks: { stroke: '#2a2f3a' }, size: 52 },
          ],
          series: [{}, { label: spec.label, stroke: spec.color, width: 1.5, spanGaps: false }],
        },
        [[], []],
        target,
      );
      this.#charts.push({ spec, plot });
    }
  }

  /** Redraws every chart from `history`. */
  update(history: History): void {
    for (const { spec, plot } of this.#charts) plot.setData([history.times, spec.values(history)]);
  }

  /** Removes the charts. */
  destroy(): void {
    for (const { plot } of this.#charts.splice(0)) plot.destroy();
  }
}

/**
 * uPlot's layout rules the charts need, for a shadow root (the page's styles do not reach it):
 * the plot's layers stacked in its box, the axes placed around it.
 */
export const CHART_CSS = `
.uplot { box-sizing: border-box; width: min-content; font: 10px/1.2 system-ui, sans-serif; }
.uplot * { box-sizing: border-box; }
.u-wrap { position: relative; user-select: none; }
.u-over, .u-under, .u-axis { position: absolute; }
.u-under { overflow: hidden; }
.uplot canvas { display: block; position: relative; width: 100%; height: 100%; }
.u-legend, .u-title, .u-select, .u-cursor-x, .u-cursor-y, .u-cursor-pt { display: none; }
`;
