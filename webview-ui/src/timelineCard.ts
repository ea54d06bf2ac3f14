// The run's timeline card: every request as a bar on lanes (queued, waiting for the first token,
// decoding; failed ones crossed), and beneath it on the same time axis the client's output tokens/s and
// requests in flight per second and the server's running, waiting and KV cache. Drawn on one canvas
// (10,000 bars as four filled paths, one per kind of part, not 10,000 chart.js elements), zoomed with the wheel, a drag or
// the buttons, exported as PNG through the host's save dialog like every chart card.
import { saveCsv, savePng, saveTrace } from './exports';
import { button, el, renderTable } from './dom';
import { ChartTheme, readTheme } from './theme';
import { PLOT_LEFT as LEFT, PLOT_RIGHT as RIGHT, TimeAxis } from './timeAxis';
import type { SegmentKind } from '../../src/shared/requestTimeline';
import { timelineTable, type GpuSample, type ServerSample, type TimelineData } from './views/timeline';
import { RunReadout } from './readout';

const HINT = 'Turn the mouse wheel over the timeline to zoom, drag to move along it; + and - zoom, 0 resets.';

const TOP = 20;
const STRIP = 58;
const GAP = 14;
const AXIS = 28;
const FONT = '11px var(--vscode-font-family, sans-serif)';

interface Strip {
  title: string;
  unit: string;
  lines: { label: string; colour: number; dash: number[]; points: (i: number) => [number, number] | undefined; count: number }[];
}

/** Bar parts in drawing order, each with how it reads without colour. */
const PARTS: { kind: SegmentKind; label: string }[] = [
  { kind: 'queued', label: 'queued in the load generator (hatched)' },
  { kind: 'waiting', label: 'waiting for the first token (dotted)' },
  { kind: 'decoding', label: 'decoding (solid)' },
  { kind: 'failed', label: 'failed (cross-hatched)' },
];

function shortNumber(v: number): string {
  if (v >= 10_000) return `${(v / 1000).toFixed(0)}k`;
  if (v >= 1000) return `${(v / 1000).toFixed(1)}k`;
  return v >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(1);
}

export class TimelineCard {
  readonly element: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly holder: HTMLElement;
  private readonly readout: RunReadout<Node>;
  private readonly details: HTMLDetailsElement;
  private readonly tableHolder: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly serverNote: HTMLElement;
  private theme: ChartTheme = readTheme();
  private readonly axis: TimeAxis;
  private readonly resize: ResizeObserver;
  private width = 0;

  constructor(private data: TimelineData) {
    this.element = el('section', undefined, 'card timeline-card');
    this.element.id = 'run-timeline';
    const header = el('div', undefined, 'card-header');
    const heading = el('h3', 'Timeline: each request, the load and the server, on one time axis');
    heading.id = 'title-run-timeline';
    const actions = el('div', undefined, 'card-actions');
    // No closer than 10 ms across.
    this.axis = new TimeAxis(data.t0, data.t1, () => this.draw(), 0.01);
    actions.append(
      ...this.axis.buttons(),
      button('PNG', 'Save the timeline as a PNG image', () => void this.exportPng(), 'file-media'),
      button('CSV', 'Save the timeline’s per-second figures as CSV', () => void this.exportCsv(), 'table'),
      button(
        'Chrome Trace',
        'Export Chrome Trace: save every request and the server’s samples as a trace to open in Perfetto (ui.perfetto.dev) or chrome://tracing beside a profiler trace',
        () => void saveTrace(this.data.runId),
        'export',
      ),
    );
    header.append(heading, actions);
    this.legend = el('ul', undefined, 'timeline-legend');
    this.serverNote = el('p', undefined, 'meta timeline-server-note');
    this.holder = el('div', undefined, 'timeline-holder');
    this.canvas = el('canvas');
    this.canvas.setAttribute('role', 'img');
    // Its aria-label, set at each draw, says what is drawn (the heading beside it names the card).
    this.canvas.tabIndex = 0;
    this.holder.append(this.canvas);
    const readout = el('p', undefined, 'meta timeline-readout');
    this.readout = new RunReadout(readout, () => HINT, data.runId);
    this.details = el('details', undefined, 'table-details');
    this.details.append(el('summary', 'Data table (per second)'));
    this.tableHolder = el('div', undefined, 'table-scroll');
    this.details.append(this.tableHolder);
    this.details.addEventListener('toggle', () => this.fillTable());
    this.element.append(header, this.legend, this.holder, this.serverNote, readout, this.details);

    this.axis.attach(this.canvas, (px, py) => this.describe(px, py));
    // Redrawn on the next frame: a redraw inside the callback changes the holder's height, which the
    // browser would report as a resize loop.
    this.resize = new ResizeObserver(() => {
      if (this.holder.clientWidth !== this.width) requestAnimationFrame(() => this.draw());
    });
    this.resize.observe(this.holder);
    this.draw();
  }

  /** New data; the zoom stays when it is the same run. Returns the milliseconds the redraw took. */
  update(data: TimelineData): number {
    this.axis.setBounds(data.t0, data.t1, data.runId !== this.data.runId);
    this.data = data;
    this.readout.follow(data.runId);
    const started = performance.now();
    this.draw();
    this.fillTable();
    return performance.now() - started;
  }

  retheme(): void {
    this.theme = readTheme();
    this.draw();
  }

  destroy(): void {
    this.resize.disconnect();
    this.element.remove();
  }

  private strips(): Strip[] {
    const d = this.data;
    const s = d.perSecond;
    // Each second's figure drawn at the middle of its second.
    const strips: Strip[] = [
      {
        title: 'output tok/s',
        unit: 'tok/s',
        lines: [{ label: 'output tok/s (client)', colour: 0, dash: [], count: s.t.length, points: (i) => [s.t[i] + 0.5, s.tokensPerS[i]] }],
      },
      {
        title: 'in flight',
        unit: 'requests',
        lines: [{ label: 'requests in flight (client)', colour: 2, dash: [], count: s.t.length, points: (i) => [s.t[i] + 0.5, s.inFlight[i]] }],
      },
    ];
    const server = d.server;
    const field =
      (key: keyof ServerSample, scale = 1) =>
      (i: number) =>
        server[i][key] === undefined ? undefined : ([server[i].t, (server[i][key] as number) * scale] as [number, number]);
    const has = (key: keyof ServerSample) => server.some((x) => x[key] !== undefined);
    if (has('running') || has('waiting'))
      strips.push({
        title: 'server queue',
        unit: 'requests',
        lines: [
          ...(has('running') ? [{ label: 'running (server)', colour: 0, dash: [], count: server.length, points: field('running') }] : []),
          ...(has('waiting') ? [{ label: 'waiting (server, dashed)', colour: 1, dash: [5, 3], count: server.length, points: field('waiting') }] : []),
        ],
      });
    if (has('kv_cache_usage'))
      strips.push({
        title: 'KV cache',
        unit: '%',
        lines: [{ label: 'KV cache used % (server)', colour: 4, dash: [], count: server.length, points: field('kv_cache_usage', 100) }],
      });
    strips.push(...gpuStrips(d.gpus ?? []));
    return strips;
  }

  private pattern(ctx: CanvasRenderingContext2D, kind: SegmentKind, colour: string): CanvasPattern | string {
    if (kind === 'decoding') return colour;
    const tile = document.createElement('canvas');
    const size = 6 * Math.max(1, Math.round(window.devicePixelRatio || 1));
    tile.width = tile.height = size;
    const t = tile.getContext('2d')!;
    t.strokeStyle = colour;
    t.fillStyle = colour;
    t.lineWidth = size / 6;
    if (kind === 'waiting') {
      t.globalAlpha = 0.35;
      t.fillRect(0, 0, size, size);
      t.globalAlpha = 1;
      t.beginPath();
      t.arc(size / 2, size / 2, size / 5, 0, 2 * Math.PI);
      t.fill();
    } else {
      t.beginPath();
      t.moveTo(0, size);
      t.lineTo(size, 0);
      if (kind === 'failed') {
        t.moveTo(0, 0);
        t.lineTo(size, size);
      }
      t.stroke();
    }
    return ctx.createPattern(tile, 'repeat') ?? colour;
  }

  private colourOf(kind: SegmentKind): string {
    const c = this.theme.series;
    return kind === 'queued' ? this.theme.muted : kind === 'waiting' ? c[1] : kind === 'decoding' ? c[0] : c[3];
  }

  private draw(): void {
    const d = this.data;
    const strips = this.strips();
    const lanes = Math.max(1, d.requests.lanes);
    const laneArea = Math.min(300, Math.max(72, lanes * 10));
    const height = TOP + laneArea + strips.length * (STRIP + GAP) + AXIS;
    this.width = this.holder.clientWidth || 900;
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(this.width * ratio);
    this.canvas.height = Math.round(height * ratio);
    // No style attribute (the page's policy): the stylesheet draws the canvas at the holder's width, its height following the ratio.
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const th = this.theme;
    ctx.fillStyle = th.background;
    ctx.fillRect(0, 0, this.width, height);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    const w = Math.max(1, this.width - LEFT - RIGHT);
    this.axis.width = w;
    const [a, b] = this.axis.shown();
    const x = (t: number) => this.axis.x(t);

    // Levels: a line where each starts, its name above, its steady window as a band under the name.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT, 0, w, height);
    ctx.clip();
    for (const level of d.levels) {
      if (level.end < a || level.start > b) continue;
      ctx.strokeStyle = th.grid;
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(x(level.start), 2);
      ctx.lineTo(x(level.start), height - AXIS);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = th.foreground;
      ctx.textAlign = 'left';
      ctx.fillText(level.label, Math.max(LEFT, x(level.start)) + 3, 8);
      if (level.steady) {
        ctx.fillStyle = th.muted;
        ctx.globalAlpha = 0.5;
        ctx.fillRect(x(level.steady[0]), TOP - 5, Math.max(1, x(level.steady[1]) - x(level.steady[0])), 3);
        ctx.globalAlpha = 1;
      }
    }

    // Requests: one path per part, so 10,000 bars cost four fills.
    const r = d.requests;
    const laneH = laneArea / lanes;
    const barH = laneH > 3 ? laneH - 1 : laneH;
    const paths = new Map<SegmentKind, Path2D>(PARTS.map((p) => [p.kind, new Path2D()]));
    let bars = 0;
    const minW = 1 / ratio;
    const part = (path: Path2D, from: number, to: number, y: number) => {
      if (!(to > from)) return;
      const left = Math.max(x(from), LEFT - 2);
      path.rect(left, y, Math.max(minW, Math.min(x(to), LEFT + w + 2) - left), barH);
    };
    const [queued, waiting, decoding, failedPath] = PARTS.map((p) => paths.get(p.kind)!);
    // The parts as requestSegments gives them, inline: 10,000 requests make no object per part.
    for (let i = 0; i < r.count; i++) {
      if (r.end[i] < a || r.queued[i] > b) continue;
      bars++;
      const y = TOP + r.lane[i] * laneH;
      part(queued, r.queued[i], r.sent[i], y);
      if (!r.ok[i]) {
        // A request refused at once has no length: it still gets a mark a few pixels wide.
        const left = Math.max(x(r.sent[i]), LEFT - 2);
        failedPath.rect(left, y, Math.max(3, Math.min(x(r.end[i]), LEFT + w + 2) - left), barH);
        continue;
      }
      const first = Number.isNaN(r.firstToken[i]) ? r.end[i] : r.firstToken[i];
      part(waiting, r.sent[i], first, y);
      part(decoding, first, r.end[i], y);
    }
    for (const p of PARTS) {
      ctx.fillStyle = this.pattern(ctx, p.kind, this.colourOf(p.kind));
      ctx.fill(paths.get(p.kind)!);
      if (p.kind === 'failed' && laneH >= 4) {
        ctx.strokeStyle = this.colourOf('failed');
        ctx.lineWidth = 1;
        ctx.stroke(paths.get(p.kind)!);
      }
    }
    ctx.restore();
    ctx.fillStyle = th.foreground;
    ctx.textAlign = 'right';
    ctx.fillText('requests', LEFT - 8, TOP + 8);
    ctx.fillStyle = th.muted;
    ctx.fillText(`${lanes} lane${lanes === 1 ? '' : 's'}`, LEFT - 8, TOP + 22);

    // The strips beneath, each scaled to its largest value in view.
    let top = TOP + laneArea + GAP;
    const drawn: string[] = [];
    for (const strip of strips) {
      let max = 0;
      for (const line of strip.lines)
        for (let i = 0; i < line.count; i++) {
          const p = line.points(i);
          if (p && p[0] >= a - 1 && p[0] <= b + 1 && p[1] > max) max = p[1];
        }
      max = strip.unit === '%' ? Math.max(max, 1) : max || 1;
      const y = (v: number) => top + STRIP - (v / max) * STRIP;
      ctx.strokeStyle = th.grid;
      ctx.lineWidth = 1;
      ctx.strokeRect(LEFT, top, w, STRIP);
      ctx.textAlign = 'right';
      ctx.fillStyle = th.foreground;
      ctx.fillText(strip.title, LEFT - 8, top + 8);
      ctx.fillStyle = th.muted;
      ctx.fillText(`max ${shortNumber(max)}${strip.unit === '%' ? '%' : ''}`, LEFT - 8, top + 22);
      ctx.fillText('0', LEFT - 8, top + STRIP - 4);
      ctx.save();
      ctx.beginPath();
      ctx.rect(LEFT, top, w, STRIP);
      ctx.clip();
      for (const line of strip.lines) {
        ctx.strokeStyle = th.series[line.colour % th.series.length];
        ctx.lineWidth = th.highContrast ? 3 : 2;
        ctx.setLineDash(line.dash);
        ctx.beginPath();
        let pen = false;
        for (let i = 0; i < line.count; i++) {
          const p = line.points(i);
          if (!p) {
            pen = false;
            continue;
          }
          if (pen) ctx.lineTo(x(p[0]), y(p[1]));
          else ctx.moveTo(x(p[0]), y(p[1]));
          pen = true;
        }
        ctx.stroke();
        ctx.setLineDash([]);
        drawn.push(line.label);
      }
      ctx.restore();
      top += STRIP + GAP;
    }

    this.axis.drawTicks(ctx, height - AXIS + 4, th, 's from the first send');

    this.legend.replaceChildren(
      ...PARTS.map((p) => el('li', p.label, `part part-${p.kind}`)),
      ...drawn.map((label) => el('li', label, 'line')),
      ...(d.levels.some((l) => l.steady) ? [el('li', "each level's steady window: the band under its name", 'line')] : []),
    );
    this.serverNote.textContent = d.serverMissing ?? '';
    this.serverNote.hidden = !d.serverMissing;
    const failed = r.count - r.ok.reduce((n, v) => n + v, 0);
    this.canvas.setAttribute(
      'aria-label',
      `${r.count} requests on ${lanes} lanes${failed ? `, ${failed} failed` : ''}, from ${a.toFixed(1)} s to ${b.toFixed(1)} s; beneath: ${drawn.join(', ')}${d.serverMissing ? `. ${d.serverMissing}` : ''}`,
    );
    this.canvas.dataset.bars = String(bars);
    this.canvas.dataset.failed = String(failed);
    this.canvas.dataset.series = drawn.join('|');
    this.canvas.dataset.view = this.axis.describe();
    this.canvas.dataset.zoomed = String(this.axis.zoomed);
  }

  /** Says, under the timeline, what is at the pointer: the request on that lane, or the strip's figures at that second. */
  private describe(px: number, py: number): void {
    const d = this.data;
    const t = this.axis.timeAt(px);
    if (px < LEFT || t < d.t0 || t > d.t1) return;
    const lanes = Math.max(1, d.requests.lanes);
    const laneArea = Math.min(300, Math.max(72, lanes * 10));
    const r = d.requests;
    const parts: string[] = [`${t.toFixed(2)} s`];
    if (py >= TOP && py < TOP + laneArea) {
      const lane = Math.floor(((py - TOP) / laneArea) * lanes);
      for (let i = 0; i < r.count; i++) {
        if (r.lane[i] !== lane || r.queued[i] > t || r.end[i] < t) continue;
        const ms = (v: number) => `${(v * 1000).toFixed(0)} ms`;
        parts.push(
          r.ok[i]
            ? `request on lane ${lane + 1}: queued ${ms(r.sent[i] - r.queued[i])}, first token after ${ms(r.firstToken[i] - r.sent[i])}, done after ${ms(r.end[i] - r.sent[i])}${Number.isNaN(r.tokens[i]) ? '' : `, ${r.tokens[i]} tokens`}`
            : `failed request on lane ${lane + 1}, after ${ms(r.end[i] - r.sent[i])}`,
        );
        break;
      }
    }
    const s = d.perSecond;
    const bin = Math.floor(t - (s.t[0] ?? 0));
    if (bin >= 0 && bin < s.t.length) parts.push(`in flight ${s.inFlight[bin].toFixed(1)}`, `${s.tokensPerS[bin].toFixed(0)} tok/s`);
    const near = d.server.reduce<ServerSample | undefined>((best, x) => (!best || Math.abs(x.t - t) < Math.abs(best.t - t) ? x : best), undefined);
    if (near && Math.abs(near.t - t) <= 2) {
      if (near.running !== undefined) parts.push(`server running ${near.running}`);
      if (near.waiting !== undefined) parts.push(`waiting ${near.waiting}`);
      if (near.kv_cache_usage !== undefined) parts.push(`KV cache ${(near.kv_cache_usage * 100).toFixed(0)}%`);
    }
    this.readout.show(parts.join(' · '));
  }

  private fillTable(): void {
    this.tableHolder.replaceChildren(...(this.details.open ? [renderTable(timelineTable(this.data))] : []));
  }

  private async exportPng(): Promise<void> {
    await savePng(this.canvas, `timeline-${this.data.runId}`);
  }

  private async exportCsv(): Promise<void> {
    await saveCsv(timelineTable(this.data), `timeline-${this.data.runId}`);
  }
}

/** The GPUs' power and SM clock, one line per GPU (nvidia-smi's samples on the host), beside the server's series. */
function gpuStrips(samples: readonly GpuSample[]): Strip[] {
  if (!samples.length) return [];
  const ids = [...new Set(samples.map((s) => s.gpu))].sort((a, b) => a - b);
  const per = ids.map((id) => samples.filter((s) => s.gpu === id));
  const lines = (key: 'powerW' | 'smClockMhz', what: string) =>
    per.map((rows, i) => ({
      label: `GPU ${ids[i]} ${what}`,
      colour: i % 6,
      dash: i >= 6 ? [5, 3] : [],
      count: rows.length,
      points: (j: number) => (rows[j][key] === undefined ? undefined : ([rows[j].t, rows[j][key] as number] as [number, number])),
    }));
  const strips: Strip[] = [];
  if (samples.some((s) => s.powerW !== undefined)) strips.push({ title: 'GPU power', unit: 'W', lines: lines('powerW', 'power W') });
  if (samples.some((s) => s.smClockMhz !== undefined)) strips.push({ title: 'GPU SM clock', unit: 'MHz', lines: lines('smClockMhz', 'SM clock MHz') });
  return strips;
}
