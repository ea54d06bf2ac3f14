// A profile run's steps on their time axis: each profiled step a bar as long as the step, stacked from
// the bottom by its kernel categories' share of it (the largest category first, idle on top), the
// gaps between steps where the GPU waited on the host. A click on a step (or its row in the table)
// lists that step's categories and largest kernels. Zoom and PNG export as the request timeline.
import type { ResultTable } from '../../src/shared/table';
import { savePng } from './exports';
import { button, el, renderTable } from './dom';
import { ChartTheme, distinctColours, readTheme } from './theme';
import { PLOT_LEFT as LEFT, PLOT_RIGHT as RIGHT, TimeAxis } from './timeAxis';
import { stepTables, type StepTimelineData } from './views/timeline';
import { RunReadout } from './readout';

const LEGEND_ROW = 16;
const PLOT = 180;
const AXIS = 30;
const FONT = '11px var(--vscode-font-family, sans-serif)';

export class StepTimelineCard {
  readonly element: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly holder: HTMLElement;
  private readonly picked: HTMLElement;
  private readonly details: HTMLDetailsElement;
  private readonly tableHolder: HTMLElement;
  private readonly axis: TimeAxis;
  private readonly resize: ResizeObserver;
  private theme: ChartTheme = readTheme();
  private width = 0;
  private selected: number | undefined;
  private readonly readout: RunReadout<Node>;
  private legendRows = 1;

  constructor(private data: StepTimelineData) {
    this.element = el('section', undefined, 'card timeline-card');
    this.element.id = 'step-timeline';
    const header = el('div', undefined, 'card-header');
    const heading = el('h3', `Profiled steps on their time axis (rank ${data.rank}): each step stacked by kernel category`);
    heading.id = 'title-step-timeline';
    const actions = el('div', undefined, 'card-actions');
    this.axis = new TimeAxis(0, this.end(), () => this.draw(), 0.05);
    actions.append(
      ...this.axis.buttons(),
      button('PNG', 'Save the step timeline as a PNG image', () => void this.exportPng(), 'file-media'),
    );
    header.append(heading, actions);
    this.holder = el('div', undefined, 'timeline-holder');
    this.canvas = el('canvas');
    this.canvas.setAttribute('role', 'img');
    // Its aria-label, set at each draw, says what is drawn (the heading beside it names the card).
    this.canvas.tabIndex = 0;
    this.holder.append(this.canvas);
    this.picked = el('div', undefined, 'step-picked');
    this.readout = new RunReadout(
      this.picked,
      () => el('p', 'Click a step (or its row in the table below) to list its kernel categories and largest kernels.', 'meta timeline-readout'),
      data.runId,
    );
    this.details = el('details', undefined, 'table-details');
    this.details.append(el('summary', `Data table (${data.steps.length} steps)`));
    this.tableHolder = el('div', undefined, 'table-scroll');
    this.details.append(this.tableHolder);
    this.details.addEventListener('toggle', () => this.fillTable());
    this.element.append(header, this.holder, this.picked, this.details);
    this.axis.attach(
      this.canvas,
      () => undefined,
      (px) => this.pick(this.stepAt(px)),
    );
    // Redrawn on the next frame: a redraw inside the callback changes the holder's height, which the
    // browser would report as a resize loop.
    this.resize = new ResizeObserver(() => {
      if (this.holder.clientWidth !== this.width) requestAnimationFrame(() => this.draw());
    });
    this.resize.observe(this.holder);
    this.draw();
  }

  update(data: StepTimelineData): void {
    const same = data.runId === this.data.runId;
    this.data = data;
    if (!same) this.selected = undefined;
    // The step picked in the previous run is not one of this run's.
    this.readout.follow(data.runId);
    this.axis.setBounds(0, this.end(), !same);
    this.draw();
    this.fillTable();
  }

  retheme(): void {
    this.theme = readTheme();
    this.draw();
  }

  destroy(): void {
    this.resize.disconnect();
    this.element.remove();
  }

  /** The last step's end, ms. */
  private end(): number {
    return Math.max(0.1, ...this.data.steps.map((s) => (s.start_us + s.dur_us) / 1000));
  }

  private stepAt(px: number): number | undefined {
    const t = this.axis.timeAt(px) * 1000;
    // Within a pixel's time either side, so a thin step is still hit.
    const [a, b] = this.axis.shown();
    const slack = ((b - a) * 1000) / this.axis.width;
    const i = this.data.steps.findIndex((s) => t >= s.start_us - slack && t <= s.start_us + s.dur_us + slack);
    return i < 0 ? undefined : i;
  }

  private pick(index: number | undefined): void {
    if (index === undefined) return;
    this.selected = index;
    const tables = stepTables(this.data.steps[index], index, this.data.categories);
    this.readout.show(
      ...tables.map((t) => {
        const wrap = el('div', undefined, 'table-scroll');
        wrap.append(renderTable(t));
        return wrap;
      }),
    );
    this.picked.querySelector('table')?.setAttribute('aria-live', 'polite');
    this.draw();
  }

  private draw(): void {
    const d = this.data;
    const th = this.theme;
    this.width = this.holder.clientWidth || 900;
    const w = Math.max(1, this.width - LEFT - RIGHT);
    this.axis.width = w;
    const colours = distinctColours(th, d.categories.length);
    const ratio = window.devicePixelRatio || 1;
    // The legend, on the canvas so that the PNG carries it: categories in stacking order, bottom first.
    const measure = this.canvas.getContext('2d')!;
    measure.font = FONT;
    const items = d.categories.map((c) => `${c}`);
    const rows: string[][] = [[]];
    let used = 0;
    for (const item of items) {
      const need = 18 + measure.measureText(item).width + 14;
      if (used + need > w && rows[rows.length - 1].length) {
        rows.push([]);
        used = 0;
      }
      rows[rows.length - 1].push(item);
      used += need;
    }
    this.legendRows = rows.length;
    const top = 6 + this.legendRows * LEGEND_ROW + 6;
    const height = top + PLOT + AXIS;
    this.canvas.width = Math.round(this.width * ratio);
    this.canvas.height = Math.round(height * ratio);
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.fillStyle = th.background;
    ctx.fillRect(0, 0, this.width, height);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    const hatch = this.hatch(ctx);
    // Every second category hatched as well as coloured, so that neighbours differ without colour.
    const paint = (i: number, x: number, y: number, width: number, h: number) => {
      ctx.fillStyle = colours[i];
      ctx.fillRect(x, y, width, h);
      if (i % 2 === 1 && hatch) {
        ctx.fillStyle = hatch;
        ctx.fillRect(x, y, width, h);
      }
    };
    let k = 0;
    rows.forEach((row, r) => {
      let x = LEFT;
      for (const item of row) {
        paint(k, x, 6 + r * LEGEND_ROW + 2, 12, 10);
        ctx.fillStyle = th.foreground;
        ctx.textAlign = 'left';
        ctx.fillText(item, x + 16, 6 + r * LEGEND_ROW + 7);
        x += 18 + ctx.measureText(item).width + 14;
        k++;
      }
    });
    ctx.textAlign = 'right';
    ctx.fillStyle = th.foreground;
    ctx.fillText('share of', LEFT - 8, top + PLOT / 2 - 7);
    ctx.fillText('each step', LEFT - 8, top + PLOT / 2 + 7);
    ctx.fillStyle = th.muted;
    ctx.fillText('100%', LEFT - 8, top + 6);
    ctx.fillText('0', LEFT - 8, top + PLOT - 4);
    ctx.strokeStyle = th.grid;
    ctx.strokeRect(LEFT, top, w, PLOT);
    const [a, b] = this.axis.shown();
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT, top, w, PLOT);
    ctx.clip();
    let drawn = 0;
    d.steps.forEach((s, i) => {
      const from = s.start_us / 1000;
      const to = (s.start_us + s.dur_us) / 1000;
      if (to < a || from > b) return;
      drawn++;
      const x0 = this.axis.x(from);
      const width = Math.max(1 / ratio, this.axis.x(to) - x0);
      let y = top + PLOT;
      d.categories.forEach((c, ci) => {
        const us = s.by_category[c] ?? 0;
        if (!(us > 0) || !(s.dur_us > 0)) return;
        const h = (us / s.dur_us) * PLOT;
        paint(ci, x0, y - h, width, h);
        y -= h;
      });
      if (i === this.selected) {
        ctx.strokeStyle = th.foreground;
        ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 1, top + 1, width + 2, PLOT - 2);
        ctx.lineWidth = 1;
      }
    });
    ctx.restore();
    this.axis.drawTicks(ctx, top + PLOT + 6, th, 'ms from the first profiled step');
    this.canvas.setAttribute(
      'aria-label',
      `${d.steps.length} profiled steps of rank ${d.rank}, each stacked by kernel category (${d.categories.join(', ')}); ${drawn} in view`,
    );
    this.canvas.dataset.steps = String(drawn);
    this.canvas.dataset.view = this.axis.describe();
    this.canvas.dataset.selected = this.selected === undefined ? '' : String(this.selected);
  }

  private hatch(ctx: CanvasRenderingContext2D): CanvasPattern | null {
    const tile = document.createElement('canvas');
    tile.width = tile.height = 6;
    const t = tile.getContext('2d')!;
    t.strokeStyle = this.theme.background;
    t.globalAlpha = 0.6;
    t.beginPath();
    t.moveTo(0, 6);
    t.lineTo(6, 0);
    t.stroke();
    return ctx.createPattern(tile, 'repeat');
  }

  private fillTable(): void {
    if (!this.details.open) return this.tableHolder.replaceChildren();
    const d = this.data;
    const table: ResultTable = {
      id: 'profile-steps',
      title: `The first ${d.steps.length} profiled steps of rank ${d.rank}`,
      columns: [
        { key: 'step', label: 'Step', digits: 0 },
        { key: 'kind', label: 'Kind', align: 'left' },
        { key: 'start', label: 'Start, ms', digits: 3 },
        { key: 'ms', label: 'ms', digits: 3 },
        { key: 'top', label: 'Largest category', align: 'left' },
      ],
      rows: d.steps.map((s, i) => {
        const top = Object.entries(s.by_category).sort((x, y) => y[1] - x[1])[0];
        return { step: i + 1, kind: s.kind ?? '', start: s.start_us / 1000, ms: s.dur_us / 1000, top: top ? top[0] : '' };
      }),
    };
    this.tableHolder.replaceChildren(renderTable(table, { onRowClick: (row) => this.pick(Number(row.step) - 1) }));
  }

  private async exportPng(): Promise<void> {
    await savePng(this.canvas, `steps-${this.data.runId}`);
  }
}
