// Inline SVG charts, drawn element by element (no markup strings): readable at a glance, with
// every number written next to its bar, and each one's numbers as a table beside it (`chartFigure`)
// for screen readers and for reading exact values.
import { h, svg } from './dom.js';

export interface BarRow {
  label: string;
  value: number;
  color?: string;
  key?: string;
}

export interface DayPoint {
  date: string;
  value: number;
}

/** A chart with its text alternative: a caption, and the numbers in a table that opens under it. */
export function chartFigure(chart: SVGSVGElement, caption: string, headers: [string, string], rows: [string, string][]): HTMLElement {
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
        h(
          'table',
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
 * Horizontal bars, one per row: label, bar, "count (share %)". `rows`: [{ label, value, color, key }].
 */
export function barChart(rows: BarRow[], { title, id }: { title?: string; id?: string } = {}): SVGSVGElement {
  const labelWidth = 170;
  const barWidth = 320;
  const rowHeight = 30;
  const width = labelWidth + barWidth + 110;
  const height = rows.length * rowHeight + 8;
  const total = rows.reduce((sum, r) => sum + r.value, 0);
  const max = Math.max(1, ...rows.map((r) => r.value));
  const chart = svg('svg', { class: 'chart bars', id, role: 'img', viewBox: `0 0 ${width} ${height}`, width: '100%', 'aria-label': title ?? 'Chart' });
  if (title) chart.append(svg('title', null, title));
  rows.forEach((row, i) => {
    const y = i * rowHeight + 4;
    const w = row.value === 0 ? 0 : Math.max(2, Math.round((row.value / max) * barWidth));
    const share = total === 0 ? 0 : Math.round((row.value / total) * 100);
    const g = svg('g', { 'data-key': row.key ?? row.label, 'data-value': row.value });
    g.append(
      svg('text', { x: 0, y: y + 17 }, row.label),
      svg('rect', { x: labelWidth, y, width: barWidth, height: 22, fill: '#f0f0f3', rx: 3 }),
      svg('rect', { x: labelWidth, y, width: w, height: 22, fill: row.color ?? '#0b5fff', rx: 3 }, svg('title', null, `${row.label}: ${row.value}`)),
      svg('text', { x: labelWidth + barWidth + 8, y: y + 17, class: 'value' }, `${row.value} (${share}%)`),
    );
    chart.append(g);
  });
  return chart;
}

/** Vertical bars over days: `points` [{ date: 'YYYY-MM-DD', value }]. */
export function dayChart(
  points: DayPoint[],
  { title, color = '#0b5fff', id, format = (v: number) => String(v) }: { title?: string; color?: string; id?: string; format?: (v: number) => string } = {},
): SVGSVGElement {
  const width = 640;
  const height = 200;
  const left = 48;
  const bottom = 24;
  const top = 12;
  const plotW = width - left - 8;
  const plotH = height - bottom - top;
  const max = Math.max(1, ...points.map((p) => p.value));
  const step = points.length ? plotW / points.length : plotW;
  const chart = svg('svg', { class: 'chart', id, role: 'img', viewBox: `0 0 ${width} ${height}`, width: '100%', height, 'aria-label': title ?? 'Chart' });
  if (title) chart.append(svg('title', null, title));
  chart.append(
    svg('line', { class: 'axis', x1: left, y1: top + plotH, x2: width - 8, y2: top + plotH }),
    svg('line', { class: 'axis', x1: left, y1: top, x2: width - 8, y2: top, 'stroke-dasharray': '3 3' }),
    svg('text', { x: left - 6, y: top + 4, 'text-anchor': 'end' }, format(max)),
    svg('text', { x: left - 6, y: top + plotH, 'text-anchor': 'end' }, format(0)),
  );
  points.forEach((p, i) => {
    const h = p.value === 0 ? 0 : Math.max(2, (p.value / max) * plotH);
    const x = left + i * step + step * 0.15;
    chart.append(
      svg(
        'rect',
        { x, y: top + plotH - h, width: Math.max(1, step * 0.7), height: h, fill: color, 'data-date': p.date, 'data-value': p.value },
        svg('title', null, `${p.date}: ${format(p.value)}`),
      ),
    );
  });
  const ticks = points.length > 1 ? [0, Math.floor((points.length - 1) / 2), points.length - 1] : points.length ? [0] : [];
  for (const i of ticks) {
    chart.append(svg('text', { x: left + i * step + step / 2, y: height - 6, 'text-anchor': 'middle' }, points[i]!.date.slice(5)));
  }
  return chart;
}
