// Charts drawn by uPlot (a small, maintained canvas chart library, bundled into portal.js; its
// stylesheet is served as /portal/assets/uplot.css). A canvas says nothing to a screen reader, so
// each one is an image named by a sentence of its numbers, and every chart comes with its numbers
// as a table under it (`chartFigure`) for reading exact values.
import uPlot from 'uplot';
import { dataTable, h } from './dom.js';

export interface BarRow {
  label: string;
  value: number;
  color?: string;
}

export interface DayPoint {
  date: string;
  value: number;
}

type Format = (value: number) => string;

const TEXT = '#1d1d1f';
const GRID = '#e3e3e8';
const FONT = '12px system-ui, sans-serif';
const DAY_CHART_HEIGHT = 200;
const BAR_ROW_HEIGHT = 34;
/** Counts: whole steps only. */
const COUNT_STEPS = Array.from({ length: 10 }, (_, power) => [1, 2, 5].map((n) => n * 10 ** power)).flat();

/** A chart with its text alternative: a caption, and the numbers in a table that opens under it. */
export function chartFigure(chart: HTMLElement, caption: string, headers: [string, string], rows: [string, string][]): HTMLElement {
  return h(
    'figure',
    { class: 'chart-figure' },
    chart,
    h(
      'figcaption',
      null,
      h(
        'details',
        null,
        h('summary', null, `${caption}: the numbers`),
        dataTable(
          { class: 'chart-data' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              headers.map((t) => h('th', { scope: 'col' }, t)),
            ),
          ),
          h(
            'tbody',
            null,
            rows.map(([a, b]) => h('tr', null, h('td', null, a), h('td', null, b))),
          ),
        ),
      ),
    ),
  );
}

/**
 * The plot in a box as wide as its container and `height` tall; the plot takes the box's width
 * whenever it changes (a phone turned, a window resized). The plot is laid over the box rather
 * than inside its flow, so the box's width never depends on the plot's, and a narrow screen
 * narrows the chart instead of the chart widening the page.
 */
function plotBox(id: string, label: string, height: number, options: Omit<uPlot.Options, 'width' | 'height'>, data: uPlot.AlignedData): HTMLElement {
  const box = h('div', { class: 'chart', id });
  box.style.height = `${height}px`;
  // Drawn before the box is in the page, so at a width narrower than any phone's; the observer
  // below gives it the box's width before the first paint.
  const plot = new uPlot(
    { ...options, width: 300, height, legend: { show: false }, cursor: { show: false }, select: { show: false, left: 0, top: 0, width: 0, height: 0 } },
    data,
    box,
  );
  const canvas = plot.root.querySelector('canvas')!;
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', label);
  const resizes = new ResizeObserver(() => {
    // A view that replaced this one took the box away: the plot lets go of its window listener.
    if (!box.isConnected) {
      resizes.disconnect();
      plot.destroy();
      return;
    }
    // Whole pixels, rounded down: clientWidth rounds to the nearest, which can be a fraction too wide.
    const width = Math.floor(box.getBoundingClientRect().width);
    if (width > 0 && width !== plot.width) plot.setSize({ width, height });
  });
  resizes.observe(box);
  return box;
}

const axisStyle = { font: FONT, stroke: TEXT, grid: { stroke: GRID, width: 1 }, ticks: { show: false } } satisfies uPlot.Axis;

/** The widest of `labels` in the chart's font, in CSS pixels, plus room on either side. */
function labelWidth(labels: string[]): number {
  const ctx = document.createElement('canvas').getContext('2d');
  if (!ctx) return 120;
  ctx.font = FONT;
  return Math.ceil(Math.max(0, ...labels.map((l) => ctx.measureText(l).width))) + 16;
}

/**
 * Horizontal bars, one per row, each with its value written at its end, and with `shares` (rows
 * that are parts of one whole) its share of the total too: "3 (50%)". `format` writes a value.
 */
export function barChart(rows: BarRow[], { title, id, format = String, shares = false }: { title: string; id: string; format?: Format; shares?: boolean }): HTMLElement {
  const total = rows.reduce((sum, r) => sum + r.value, 0);
  const share = (value: number) => (total === 0 ? 0 : Math.round((value / total) * 100));
  const endLabel = (r: BarRow) => (shares ? `${format(r.value)} (${share(r.value)}%)` : format(r.value));
  const top = Math.max(1, ...rows.map((r) => r.value));
  // Room right of the longest bar for its number.
  const max = top * 1.4;
  const label = `${title}: ${rows.map((r) => `${r.label} ${endLabel(r)}`).join(', ')}`;
  const positions = rows.map((_, i) => i);
  return plotBox(
    id,
    label,
    rows.length * BAR_ROW_HEIGHT + 30,
    {
      // The categories run down the left side (the first at the top), the values along the bottom.
      scales: { x: { time: false, ori: 1, dir: -1, range: [-0.5, rows.length - 0.5] }, y: { ori: 0, range: [0, max] } },
      axes: [
        {
          ...axisStyle,
          side: 3,
          grid: { show: false },
          size: labelWidth(rows.map((r) => r.label)),
          splits: () => positions,
          values: (_, splits) => splits.map((i) => rows[i]?.label ?? ''),
        },
        // No grid: its lines would cross the numbers written after the short bars.
        { ...axisStyle, side: 2, size: 30, grid: { show: false }, space: labelWidth([format(top)]), incrs: COUNT_STEPS, values: (_, splits) => splits.map(format) },
      ],
      series: [
        {},
        {
          label: title,
          // No outline: each bar is filled with its own color (which needs no stroke in uPlot).
          width: 0,
          paths: uPlot.paths.bars!({
            size: [0.7, 26],
            disp: { fill: { unit: 3, values: () => rows.map((r) => r.color ?? '#0b5fff') } },
          }),
          points: { show: false },
        },
      ],
      // Each bar's number at its end, inside the plot when the bar reaches far enough to the right.
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            ctx.save();
            ctx.font = FONT.replace('12px', `${12 * uPlot.pxRatio}px`);
            ctx.textBaseline = 'middle';
            rows.forEach((r, i) => {
              const text = endLabel(r);
              const x = u.valToPos(r.value, 'y', true);
              const y = u.valToPos(i, 'x', true);
              const width = ctx.measureText(text).width;
              const inside = x + width + 8 * uPlot.pxRatio > u.bbox.left + u.bbox.width;
              ctx.fillStyle = inside ? '#fff' : TEXT;
              ctx.textAlign = inside ? 'right' : 'left';
              ctx.fillText(text, inside ? x - 6 * uPlot.pxRatio : x + 6 * uPlot.pxRatio, y);
            });
            ctx.restore();
          },
        ],
      },
    },
    [positions, rows.map((r) => r.value)],
  );
}

/** Midnight UTC of a `YYYY-MM-DD` day, in seconds (uPlot's time unit). */
const dayStart = (date: string) => Date.parse(`${date}T00:00:00Z`) / 1000;

/** Vertical bars over days (UTC): `points` [{ date: 'YYYY-MM-DD', value }], one per day. */
export function dayChart(points: DayPoint[], { title, color, id }: { title: string; color: string; id: string }): HTMLElement {
  const total = points.reduce((n, p) => n + p.value, 0);
  const busiest = points.reduce<DayPoint | undefined>((best, p) => (p.value > (best?.value ?? 0) ? p : best), undefined);
  const span = points.length ? `${points[0]!.date} to ${points.at(-1)!.date}` : 'no days';
  const label = `${title}, ${span} (UTC): ${total} in all${busiest ? `, most on ${busiest.date} (${busiest.value})` : ''}`;
  const max = Math.max(1, ...points.map((p) => p.value));
  const xs = points.map((p) => dayStart(p.date));
  const half = 43_200;
  return plotBox(
    id,
    label,
    DAY_CHART_HEIGHT,
    {
      // Days are UTC days, whatever the browser's time zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true, range: [(xs[0] ?? 0) - half, (xs.at(-1) ?? 0) + half] }, y: { range: [0, max] } },
      axes: [
        // A little further down than uPlot's default, clear of the count axis's 0.
        { ...axisStyle, grid: { show: false }, gap: 9, space: 70, values: '{MMM} {D}' },
        { ...axisStyle, size: 40, incrs: COUNT_STEPS },
      ],
      series: [{}, { label: title, fill: color, width: 0, paths: uPlot.paths.bars!({ size: [0.7, 24] }), points: { show: false } }],
    },
    [xs, points.map((p) => p.value)],
  );
}
