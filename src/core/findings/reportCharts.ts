// The report's charts: a macro run's output throughput and median TPOT against load, as inline SVG
// drawn here, so that the report stays one file with no script and nothing loaded. Every piece of
// text in them is escaped; numbers are written by toFixed, never taken as text from a run.
import { escapeHtml } from '../../shared/html';
import { finite } from '../../shared/finite';
import { MacroLevelSummary } from '../../shared/results';
import { levelLabel } from '../macro/tables';

/** One load level as the report draws it. */
export interface ChartLevel {
  /** "c=4", "2 req/s (≤16)". */
  load: string;
  outputThroughput?: number;
  medianTpotMs?: number;
}

/** A level of a run's result, reduced to what the charts draw; a level cut short is left out (it measured less load than it names). */
export function chartLevels(levels: readonly MacroLevelSummary[]): ChartLevel[] {
  return levels
    .filter((l) => !l.partial && !l.cut)
    .map((l) => ({ load: levelLabel(l), outputThroughput: finite(l.output_throughput), medianTpotMs: finite(l.median_tpot_ms) }));
}

const W = 340;
const H = 210;
const LEFT = 52;
const RIGHT = 26;
const TOP = 26;
const BOTTOM = 40;

/** A round step for about five ticks up to `max`. */
function tickStep(max: number): number {
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

function num(v: number): string {
  return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/** One panel: `values` (one per load, undefined where not measured) against the loads, equally spaced. */
function panel(title: string, unit: string, loads: string[], values: (number | undefined)[], colour: string): string {
  const known = values.filter((v): v is number => v !== undefined);
  if (!known.length) return '';
  const top = Math.max(...known) * 1.1 || 1;
  const step = tickStep(top);
  const yMax = Math.ceil(top / step) * step;
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const x = (i: number) => LEFT + (loads.length === 1 ? plotW / 2 : (plotW * i) / (loads.length - 1));
  const y = (v: number) => TOP + plotH - (plotH * v) / yMax;
  const out: string[] = [];
  const label = `${title} (${unit}) against load`;
  out.push(
    `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escapeHtml(label)}">`,
    `<title>${escapeHtml(label)}</title>`,
    `<text x="${LEFT}" y="16" class="chart-title">${escapeHtml(`${title} (${unit})`)}</text>`,
  );
  for (let v = 0; v <= yMax + step / 2; v += step) {
    out.push(
      `<line x1="${LEFT}" x2="${W - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid"/>`,
      `<text x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" class="tick">${v.toFixed(decimals)}</text>`,
    );
  }
  loads.forEach((load, i) => out.push(`<text x="${x(i).toFixed(1)}" y="${H - BOTTOM + 16}" text-anchor="middle" class="tick">${escapeHtml(load)}</text>`));
  out.push(`<text x="${LEFT + plotW / 2}" y="${H - 6}" text-anchor="middle" class="tick">load</text>`);
  const points = values.map((v, i) => (v === undefined ? undefined : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter(Boolean);
  if (points.length > 1) out.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${colour}" stroke-width="2"/>`);
  values.forEach((v, i) => {
    if (v === undefined) return;
    out.push(
      `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3.5" fill="${colour}"><title>${escapeHtml(`${loads[i]}: ${num(v)} ${unit}`)}</title></circle>`,
    );
  });
  out.push('</svg>');
  return out.join('\n');
}

/** A run's two panels (throughput, then median TPOT), or '' when it has no level to draw. */
export function macroChartsSvg(levels: readonly ChartLevel[]): string {
  if (!levels.length) return '';
  const loads = levels.map((l) => l.load);
  return [
    panel(
      'Output throughput',
      'tok/s',
      loads,
      levels.map((l) => l.outputThroughput),
      '#2f81f7',
    ),
    panel(
      'Median TPOT',
      'ms',
      loads,
      levels.map((l) => l.medianTpotMs),
      '#d4760a',
    ),
  ]
    .filter(Boolean)
    .join('\n');
}
