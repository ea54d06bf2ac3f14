// The report's Pareto picture: output tokens/s per user (x) against output tokens/s per GPU or per
// watt (y), every configuration's every load a point, the front joined by a line and the dominated
// points hollow and grey, as inline SVG with no script. Text is escaped; numbers written by toFixed.
import { escapeHtml } from '../../shared/html';
import { ParetoFront, ParetoPoint, paretoFront } from '../../shared/pareto';

const W = 420;
const H = 260;
const LEFT = 56;
const RIGHT = 20;
const TOP = 26;
const BOTTOM = 42;
const COLOURS = ['#2f81f7', '#d4760a', '#1a7f37', '#a371f7', '#cf222e', '#0598bc'];

function niceMax(max: number): { top: number; step: number } {
  const raw = (max * 1.1 || 1) / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const n = raw / mag;
  const step = (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
  return { top: Math.ceil((max * 1.1 || 1) / step) * step, step };
}

function num(v: number): string {
  return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(3);
}

/** One front as an SVG: a point per configuration and load, the front's points filled and joined. */
export function paretoSvg(front: ParetoFront, title: string): string {
  if (front.points.length < 2) return '';
  const axis = front.axis;
  const yName = axis === 'perWatt' ? 'output tok/s per W' : 'output tok/s per GPU';
  const xs = niceMax(Math.max(...front.points.map((p) => p.perUser)));
  const ys = niceMax(Math.max(...front.points.map((p) => p[axis] as number)));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const x = (v: number) => LEFT + (plotW * v) / xs.top;
  const y = (v: number) => TOP + plotH - (plotH * v) / ys.top;
  const series = [...new Set(front.points.map((p) => p.series))];
  const colour = (p: ParetoPoint) => COLOURS[series.indexOf(p.series) % COLOURS.length];
  const label = `${title}: output tok/s per user against ${yName}`;
  const out = [
    `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escapeHtml(label)}">`,
    `<title>${escapeHtml(label)}</title>`,
    `<text x="${LEFT}" y="16" class="chart-title">${escapeHtml(title)}</text>`,
  ];
  const decimals = (step: number) => Math.max(0, -Math.floor(Math.log10(step)));
  for (let v = 0; v <= ys.top + ys.step / 2; v += ys.step)
    out.push(
      `<line x1="${LEFT}" x2="${W - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid"/>`,
      `<text x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" class="tick">${v.toFixed(decimals(ys.step))}</text>`,
    );
  for (let v = 0; v <= xs.top + xs.step / 2; v += xs.step)
    out.push(`<text x="${x(v).toFixed(1)}" y="${H - BOTTOM + 16}" text-anchor="middle" class="tick">${v.toFixed(decimals(xs.step))}</text>`);
  out.push(
    `<text x="${LEFT + plotW / 2}" y="${H - 6}" text-anchor="middle" class="tick">output tok/s per user</text>`,
    `<text x="12" y="${TOP + plotH / 2}" text-anchor="middle" class="tick" transform="rotate(-90 12 ${TOP + plotH / 2})">${escapeHtml(yName)}</text>`,
  );
  const line = front.front.map((p) => `${x(p.perUser).toFixed(1)},${y(p[axis] as number).toFixed(1)}`).join(' ');
  if (front.front.length > 1) out.push(`<polyline points="${line}" fill="none" stroke="#8c959f" stroke-width="1.5" stroke-dasharray="4 3"/>`);
  for (const p of front.points) {
    const tip = `${p.series} at ${p.load}: ${num(p.perUser)} tok/s per user, ${num(p[axis] as number)} ${yName}${p.dominated ? ' (dominated)' : ' (on the front)'}`;
    out.push(
      p.dominated
        ? `<circle cx="${x(p.perUser).toFixed(1)}" cy="${y(p[axis] as number).toFixed(1)}" r="3.5" fill="none" stroke="#8c959f" stroke-width="1.5" class="dominated"><title>${escapeHtml(tip)}</title></circle>`
        : `<circle cx="${x(p.perUser).toFixed(1)}" cy="${y(p[axis] as number).toFixed(1)}" r="4.5" fill="${colour(p)}" class="front"><title>${escapeHtml(tip)}</title></circle>`,
    );
  }
  // A legend of the configurations, then what the hollow points are.
  series.forEach((s, i) =>
    out.push(
      `<circle cx="${W - RIGHT - 130}" cy="${TOP + 8 + i * 14}" r="4" fill="${COLOURS[i % COLOURS.length]}"/>`,
      `<text x="${W - RIGHT - 122}" y="${TOP + 12 + i * 14}" class="tick">${escapeHtml(s.length > 22 ? `${s.slice(0, 21)}…` : s)}</text>`,
    ),
  );
  out.push(
    `<circle cx="${W - RIGHT - 130}" cy="${TOP + 8 + series.length * 14}" r="3.5" fill="none" stroke="#8c959f" stroke-width="1.5"/>`,
    `<text x="${W - RIGHT - 122}" y="${TOP + 12 + series.length * 14}" class="tick">dominated</text>`,
    '</svg>',
  );
  return out.join('\n');
}

/** The pictures for a set of points: per GPU, and per watt where the GPUs' power was sampled. */
export function paretoPictures(points: readonly ParetoPoint[], what: string): string {
  return [
    paretoSvg(paretoFront(points, 'perGpu'), `Pareto front ${what} (per GPU)`),
    paretoSvg(paretoFront(points, 'perWatt'), `Pareto front ${what} (per watt)`),
  ]
    .filter(Boolean)
    .join('\n');
}
