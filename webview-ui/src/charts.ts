// A chart card: a titled chart.js chart with its data as a table beside it (for screen readers and
// for copying), and PNG / CSV export through the host's save dialog. Cards update in place so that a
// live run gains points without the page flickering.
import { Chart, ChartConfiguration, ChartDataset, Plugin, registerables } from 'chart.js';
import { formatBytes } from '../../src/shared/table';
import { saveCsv, savePng } from './exports';
import { button, el, renderTable } from './dom';
import type { ChartSpec, LineChartSpec } from './specs';
import { ChartTheme, distinctColours, readTheme } from './theme';

Chart.register(...registerables);

let theme: ChartTheme = readTheme();

// Paints the theme's background under the chart so that exported PNGs look like the view.
const backgroundPlugin: Plugin = {
  id: 'themeBackground',
  beforeDraw(chart) {
    const { ctx, width, height } = chart;
    ctx.save();
    ctx.globalCompositeOperation = 'destination-over';
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, width, height);
    ctx.restore();
  },
};

function colour(i: number): string {
  return theme.series[i % theme.series.length];
}

function lineDatasets(spec: LineChartSpec): ChartDataset<'line', { x: number; y: number }[]>[] {
  return spec.series.map((s, i) => {
    if (s.marker) {
      return {
        label: s.label,
        data: s.points,
        borderColor: theme.warning,
        backgroundColor: 'transparent',
        borderWidth: 2,
        pointRadius: 8,
        pointHoverRadius: 10,
        pointStyle: s.marker === 'cut' ? 'crossRot' : 'triangle',
        showLine: false,
        parsing: false,
        normalized: true,
      };
    }
    const c = s.reference ? theme.muted : colour(s.colorIndex ?? i);
    const many = s.points.length > 200;
    return {
      label: s.label,
      data: s.points,
      borderColor: c,
      backgroundColor: c,
      borderWidth: s.reference ? 1 : theme.highContrast ? 3 : 2,
      borderDash: s.dashed || s.reference ? [6, 4] : undefined,
      pointRadius: s.reference ? 0 : s.scatter ? (many ? 1.5 : 3) : many ? 0 : 3,
      pointStyle: s.dashed ? 'rectRot' : 'circle',
      showLine: !s.scatter,
      parsing: false,
      normalized: true,
    };
  });
}

function axisOptions(title: string, log: boolean | undefined, ticksAt?: number[], format: 'number' | 'bytes' = 'number') {
  return {
    type: log ? ('logarithmic' as const) : ('linear' as const),
    // Every quantity drawn is a time, a rate or a size: an axis from zero keeps 20.0 vs 20.3 ms from reading as a trend.
    beginAtZero: !log,
    title: { display: true, text: title, color: theme.foreground },
    ticks: {
      color: theme.foreground,
      maxTicksLimit: 12,
      autoSkip: true,
      callback: (value: number | string) => (format === 'bytes' ? formatBytes(Number(value)) : Number(value).toLocaleString()),
    },
    grid: { color: theme.grid },
    border: { color: theme.grid },
    // A log axis under a 1..64 sweep reads best with a tick at each level, not at 1, 3, 10, 20.
    ...(ticksAt?.length ? { afterBuildTicks: (axis: { ticks: { value: number }[] }) => void (axis.ticks = ticksAt.map((value) => ({ value }))) } : {}),
  };
}

function configFor(spec: ChartSpec): ChartConfiguration {
  const common = {
    animation: false as const,
    responsive: true,
    maintainAspectRatio: false,
    color: theme.foreground,
    plugins: {
      legend: { labels: { color: theme.foreground, boxWidth: 14 } },
      tooltip: { mode: 'nearest' as const, intersect: false },
    },
  };
  if (spec.kind === 'line') {
    return {
      type: 'line',
      data: { datasets: lineDatasets(spec) },
      options: { ...common, scales: { x: axisOptions(spec.xLabel, spec.xLog, spec.xTicks, spec.xFormat), y: axisOptions(spec.yLabel, spec.yLog) } },
      plugins: [backgroundPlugin],
    } as ChartConfiguration;
  }
  if (spec.kind === 'waterfall') {
    const fill = (k: string) => (k === 'total' ? colour(0) : k === 'gap' ? theme.muted : colour(1));
    return {
      type: 'bar',
      data: {
        labels: spec.bars.map((b) => b.label),
        datasets: [
          {
            label: 'measured',
            data: spec.bars.map((b) => [Math.min(b.from, b.to), Math.max(b.from, b.to)]),
            backgroundColor: spec.bars.map((b) => fill(b.kind)),
            borderWidth: 0,
            grouped: false,
            barPercentage: 0.8,
          },
          // The micro phase's prediction, outlined over the measured bar it predicts.
          {
            label: 'micro predicts',
            data: spec.bars.map((b) => (b.predicted === undefined ? null : [b.from, b.from + b.predicted])),
            backgroundColor: 'transparent',
            borderColor: colour(2),
            borderWidth: 2,
            grouped: false,
            barPercentage: 0.5,
          },
        ],
      },
      options: {
        ...common,
        indexAxis: 'y',
        scales: {
          x: axisOptions(spec.xLabel, false),
          y: { ticks: { color: theme.foreground, autoSkip: false }, grid: { display: false } },
        },
      },
      plugins: [backgroundPlugin],
    } as ChartConfiguration;
  }
  return {
    type: 'bar',
    data: {
      labels: spec.labels,
      // Every category its own colour, however many there are (the theme's palette has fewer).
      datasets: (() => {
        const colours = distinctColours(theme, Math.max(0, ...spec.stacks.map((s) => s.colorIndex + 1)));
        return spec.stacks.map((s) => ({
          label: s.label,
          data: s.values,
          backgroundColor: colours[s.colorIndex],
          borderColor: theme.background,
          borderWidth: 1,
        }));
      })(),
    },
    options: {
      ...common,
      scales: {
        x: { stacked: true, ticks: { color: theme.foreground }, grid: { color: theme.grid } },
        y: { ...axisOptions(spec.yLabel, false), stacked: true },
      },
    },
    plugins: [backgroundPlugin],
  } as ChartConfiguration;
}

export class ChartCard {
  readonly element: HTMLElement;
  private chart: Chart;
  private readonly tableHolder: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly details: HTMLDetailsElement;
  private readonly heading: HTMLHeadingElement;

  constructor(private spec: ChartSpec) {
    this.element = el('section', undefined, 'card');
    this.element.dataset.chartId = spec.id;
    const header = el('div', undefined, 'card-header');
    const heading = (this.heading = el('h3', spec.title));
    heading.id = `title-${spec.id}`;
    const actions = el('div', undefined, 'card-actions');
    actions.append(
      button('PNG', `Save "${spec.title}" as a PNG image`, () => void this.exportPng(), 'file-media'),
      button('CSV', `Save the data of "${spec.title}" as CSV`, () => void this.exportCsv(), 'table'),
    );
    header.append(heading, actions);
    const holder = el('div', undefined, 'chart-holder');
    this.canvas = el('canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-labelledby', heading.id);
    this.canvas.dataset.points = String(this.pointCount());
    holder.append(this.canvas);
    this.details = el('details', undefined, 'table-details');
    this.details.append(el('summary', `Data table (${spec.table.rows.length} rows)`));
    this.tableHolder = el('div', undefined, 'table-scroll');
    this.details.append(this.tableHolder);
    // The table is built when it is opened: a 10,000-request run would otherwise put 10,000 rows in the page on every update.
    this.details.addEventListener('toggle', () => this.fillTable());
    this.element.append(header, holder, this.details);
    this.chart = new Chart(this.canvas, configFor(spec));
  }

  get id(): string {
    return this.spec.id;
  }

  pointCount(spec = this.spec): number {
    if (spec.kind === 'waterfall') return spec.bars.length;
    return spec.kind === 'line' ? spec.series.reduce((n, s) => n + s.points.length, 0) : spec.stacks.length * spec.labels.length;
  }

  /** Replaces the data in place; returns how long chart.js took to redraw, in milliseconds. */
  update(spec: ChartSpec): number {
    const kindChanged = spec.kind !== this.spec.kind;
    this.spec = spec;
    this.heading.textContent = spec.title;
    const started = performance.now();
    if (kindChanged) {
      this.chart.destroy();
      this.chart = new Chart(this.canvas, configFor(spec));
    } else if (spec.kind === 'line') {
      this.chart.data.datasets = lineDatasets(spec) as never;
      const scales = this.chart.options.scales as Record<string, unknown>;
      scales.x = axisOptions(spec.xLabel, spec.xLog, spec.xTicks, spec.xFormat);
      scales.y = axisOptions(spec.yLabel, spec.yLog);
      this.chart.update('none');
    } else {
      const fresh = configFor(spec);
      this.chart.data = fresh.data;
      this.chart.update('none');
    }
    const ms = performance.now() - started;
    this.canvas.dataset.points = String(this.pointCount());
    this.details.querySelector('summary')!.textContent = `Data table (${spec.table.rows.length} rows)`;
    this.fillTable();
    return ms;
  }

  /** Opens the data table (the UI tests and keyboard users reach it this way too). */
  showTable(): void {
    this.details.open = true;
    this.fillTable();
  }

  private fillTable(): void {
    this.tableHolder.replaceChildren(...(this.details.open ? [renderTable(this.spec.table, this.spec.tableOptions)] : []));
  }

  /** Re-reads colours after a theme change. */
  retheme(): void {
    const fresh = configFor(this.spec);
    this.chart.options = fresh.options!;
    this.chart.data = fresh.data;
    this.chart.update('none');
  }

  destroy(): void {
    this.chart.destroy();
    this.element.remove();
  }

  private async exportPng(): Promise<void> {
    await savePng(this.canvas, this.spec.id);
  }

  private async exportCsv(): Promise<void> {
    await saveCsv(this.spec.table, this.spec.id);
  }
}

export function setTheme(next: ChartTheme): void {
  theme = next;
}
