// An Nsight Systems profile's decode step by layer: a horizontal bar per layer, stacked by module type
// (attention, MLP, MoE, all-reduce...), each type a theme colour and a hatching of its own so that the
// bars read without colour, the same figures in a table, the slow layer named, and a click on a layer
// (its bar or its row) listing that layer's kernels. The kernel-category charts stay beside it.
import { Chart, type ChartConfiguration, type Plugin } from 'chart.js';
import type { NsysModulesView, NsysRankView } from '../../src/shared/nsysView';
import { saveCsv, savePng } from './exports';
import { button, el, renderTable } from './dom';
import { type ChartTheme, distinctColours, readTheme } from './theme';
import { layerBars, layerKernelTable, layerTable, moduleTable, slowLayerSentence } from './views/nsysModules';
import { RunReadout } from './readout';

// Pixels per bar, and the room the axis and legend take: a 61-layer model gets a tall chart, not thin bars.
const BAR_PX = 22;
const CHROME_PX = 110;

/** A hatching per module type (its index): the bars and the legend tell the types apart without colour. */
function hatch(colour: string, index: number, background: string): CanvasPattern | string {
  const size = 8;
  const c = document.createElement('canvas');
  c.width = size;
  c.height = size;
  const g = c.getContext('2d');
  if (!g) return colour;
  g.fillStyle = colour;
  g.fillRect(0, 0, size, size);
  g.strokeStyle = background;
  g.fillStyle = background;
  g.lineWidth = 1.5;
  const line = (x1: number, y1: number, x2: number, y2: number) => {
    g.beginPath();
    g.moveTo(x1, y1);
    g.lineTo(x2, y2);
    g.stroke();
  };
  switch (index % 7) {
    case 0:
      break; // solid
    case 1:
      line(0, size, size, 0);
      break;
    case 2:
      line(0, 0, size, size);
      break;
    case 3:
      line(0, size / 2, size, size / 2);
      break;
    case 4:
      line(size / 2, 0, size / 2, size);
      break;
    case 5:
      g.fillRect(3, 3, 2, 2);
      break;
    default:
      line(0, size, size, 0);
      line(0, 0, size, size);
  }
  return g.createPattern(c, 'repeat') ?? colour;
}

export class NsysModulesCard {
  readonly element: HTMLElement;
  private chart: Chart | undefined;
  private readonly canvas: HTMLCanvasElement;
  private readonly holder: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly rankSelect: HTMLSelectElement;
  private readonly tables: HTMLElement;
  private readonly picked: HTMLElement;
  private readonly readout: RunReadout<Node>;
  private theme: ChartTheme = readTheme();
  private rankIndex = 0;
  private selectedLayer: number | undefined;

  constructor(
    private view: NsysModulesView,
    private runId: string,
  ) {
    this.element = el('section', undefined, 'card nsys-card');
    this.element.id = 'nsys-modules';
    const header = el('div', undefined, 'card-header');
    const heading = el('h3', 'Decode step by layer and module (Nsight Systems, NVTX ranges)');
    heading.id = 'title-nsys-modules';
    const actions = el('div', undefined, 'card-actions');
    this.rankSelect = el('select');
    this.rankSelect.setAttribute('aria-label', 'Rank shown');
    this.rankSelect.addEventListener('change', () => {
      this.rankIndex = Number(this.rankSelect.value) || 0;
      this.selectedLayer = undefined;
      this.readout.follow(`${this.runId}#${this.rankIndex}`);
      this.render();
    });
    actions.append(
      this.rankSelect,
      button('PNG', 'Save the layer chart as a PNG image', () => void savePng(this.canvas, 'nsys-layers'), 'file-media'),
      button('CSV', 'Save the layer table as CSV', () => void saveCsv(layerTable(this.rank()), 'nsys-layers'), 'table'),
    );
    header.append(heading, actions);
    this.summary = el('div', undefined, 'nsys-summary');
    this.holder = el('div', undefined, 'chart-holder nsys-holder');
    this.canvas = el('canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-labelledby', heading.id);
    this.holder.append(this.canvas);
    this.picked = el('div', undefined, 'nsys-picked');
    this.picked.id = 'nsys-layer-kernels';
    this.picked.setAttribute('aria-live', 'polite');
    this.readout = new RunReadout(this.picked, () => el('p', "Click a layer's bar or its row to list its kernels.", 'meta'), `${runId}#0`);
    this.tables = el('div', undefined, 'nsys-tables');
    this.element.append(header, this.summary, this.holder, this.picked, this.tables);
    this.render();
  }

  update(view: NsysModulesView, runId: string): void {
    const same = runId === this.runId;
    this.view = view;
    this.runId = runId;
    if (!same) {
      this.rankIndex = 0;
      this.selectedLayer = undefined;
    }
    if (this.readout.follow(`${runId}#${this.rankIndex}`)) this.selectedLayer = undefined;
    this.render();
  }

  retheme(): void {
    this.theme = readTheme();
    this.draw();
  }

  destroy(): void {
    this.chart?.destroy();
    this.element.remove();
  }

  private rank(): NsysRankView {
    return this.view.ranks[Math.min(this.rankIndex, this.view.ranks.length - 1)];
  }

  private render(): void {
    const rank = this.rank();
    this.rankSelect.replaceChildren(
      ...this.view.ranks.map((r, i) => {
        const o = el('option', `device ${r.device}${r.pid !== null ? ` · pid ${r.pid}` : ''}`);
        o.value = String(i);
        o.selected = i === this.rankIndex;
        return o;
      }),
    );
    this.rankSelect.hidden = this.view.ranks.length < 2;
    const lines = [el('p', this.view.headline, 'headline')];
    lines[0].id = 'nsys-headline';
    const slow = slowLayerSentence(rank);
    if (slow) {
      const p = el('p', slow, 'nsys-slow');
      p.id = 'nsys-slow-layer';
      lines.push(p);
    }
    for (const w of this.view.warnings) lines.push(el('p', `⚠ ${w}`, 'meta'));
    this.summary.replaceChildren(...lines);
    const bars = layerBars(rank);
    // Sized through the CSSOM (the page's policy forbids style attributes, not this).
    this.holder.style.setProperty('height', `${Math.max(160, bars.labels.length * BAR_PX + CHROME_PX)}px`);
    this.draw();
    const layers = layerTable(rank);
    const layersWrap = el('div', undefined, 'table-scroll');
    layersWrap.append(
      renderTable(layers, {
        onRowClick: (row) => typeof row.layer_number === 'number' && this.pick(row.layer_number),
        isSelected: (row) => row.layer_number === this.selectedLayer,
      }),
    );
    const modulesWrap = el('div', undefined, 'table-scroll');
    modulesWrap.append(renderTable(moduleTable(rank)));
    this.tables.replaceChildren(layersWrap, modulesWrap);
    if (this.selectedLayer !== undefined) this.showLayer(this.selectedLayer);
  }

  private draw(): void {
    const rank = this.rank();
    const bars = layerBars(rank);
    const th = this.theme;
    const colours = distinctColours(th, bars.stacks.length);
    const selected = this.selectedLayer;
    // The picked layer's label in bold: where the kernels listed below come from.
    const tickFont = (ctx: { index: number }) => (bars.layers[ctx.index] === selected ? { weight: 'bold' as const } : {});
    const background: Plugin = {
      id: 'nsysBackground',
      beforeDraw(chart) {
        const { ctx, width, height } = chart;
        ctx.save();
        ctx.globalCompositeOperation = 'destination-over';
        ctx.fillStyle = th.background;
        ctx.fillRect(0, 0, width, height);
        ctx.restore();
      },
    };
    const config: ChartConfiguration<'bar'> = {
      type: 'bar',
      data: {
        labels: bars.labels,
        datasets: bars.stacks.map((s, i) => ({
          label: s.module,
          data: s.values,
          backgroundColor: hatch(colours[i], i, th.background),
          borderColor: th.background,
          borderWidth: 1,
        })),
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        indexAxis: 'y',
        color: th.foreground,
        onClick: (_e, elements) => {
          const at = elements[0]?.index;
          const layer = at === undefined ? undefined : bars.layers[at];
          if (layer !== undefined && layer !== null) this.pick(layer);
        },
        plugins: {
          legend: { labels: { color: th.foreground, boxWidth: 18 } },
          tooltip: {
            mode: 'nearest',
            intersect: true,
            callbacks: { label: (item) => `${item.dataset.label}: ${Number(item.raw).toFixed(3)} ms per step` },
          },
        },
        scales: {
          x: {
            stacked: true,
            beginAtZero: true,
            title: { display: true, text: 'ms per decode step', color: th.foreground },
            ticks: { color: th.foreground },
            grid: { color: th.grid },
          },
          y: { stacked: true, ticks: { color: th.foreground, autoSkip: false, font: tickFont }, grid: { display: false } },
        },
      },
      plugins: [background],
    };
    this.chart?.destroy();
    this.chart = new Chart(this.canvas, config as ChartConfiguration);
    this.canvas.dataset.layers = String(rank.layers.length);
  }

  private pick(layer: number): void {
    this.selectedLayer = layer;
    this.showLayer(layer);
    this.draw();
    for (const tr of this.tables.querySelectorAll('tr.clickable')) {
      const on = tr.firstElementChild?.textContent === `layer ${layer}`;
      tr.classList.toggle('selected', on);
      if (on) tr.setAttribute('aria-selected', 'true');
      else tr.removeAttribute('aria-selected');
    }
  }

  private showLayer(layer: number): void {
    const l = this.rank().layers.find((x) => x.layer === layer);
    if (!l) return;
    const wrap = el('div', undefined, 'table-scroll');
    wrap.append(renderTable(layerKernelTable(l), { sortable: true, initialSort: { key: 'ms', descending: true } }));
    this.readout.show(wrap);
  }
}
