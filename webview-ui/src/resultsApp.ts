// The results panel: draws the selected run (and a second one overlaid for comparison) from the
// snapshot and increments the host sends. It keeps no truth of its own beyond which runs are picked.
// Its parts, each in results/: the picks, the toolbar, the run's header, charts, timeline and extras,
// and the budget.
import type { DecodeBudgetView } from '../../src/shared/budget';
import type { ResultsSnapshot } from '../../src/shared/protocol';
import type { RunSummary } from '../../src/shared/results';
import { onHostMessage, post } from './api';
import { ChartCard, setTheme } from './charts';
import { el, renderTable } from './dom';
import type { ChartSpec } from './specs';
import { watchTheme } from './theme';
import { BudgetSection } from './results/budgetSection';
import { ChartCards, chartSpecs } from './results/chartCards';
import { RunExtras } from './results/runExtras';
import { renderRunHeader, type Verdict } from './results/runHeader';
import { RunSelection } from './results/selection';
import { TimelineSlot } from './results/timelineSlot';
import { renderToolbar } from './results/toolbar';

export function startResultsApp(app: HTMLElement): void {
  const selection = new RunSelection();
  let budget: DecodeBudgetView | undefined;
  let verdict: Verdict | undefined;

  const toolbar = el('div', undefined, 'toolbar');
  const header = el('header', undefined, 'run-header');
  const chartsHolder = el('div', undefined, 'charts');
  const timelineHolder = el('div', undefined, 'timeline');
  const extrasHolder = el('div', undefined, 'extras');
  const budgetHolder = el('section', undefined, 'budget');
  app.replaceChildren(toolbar, header, chartsHolder, timelineHolder, extrasHolder, budgetHolder);
  const charts = new ChartCards();
  const timeline = new TimelineSlot(timelineHolder);
  const extras = new RunExtras(extrasHolder);
  const budgetSection = new BudgetSection(budgetHolder);

  const renderHeader = () => renderRunHeader(header, selection.selected(), selection.compared(), verdict);

  /** Draws the shown run: its header, charts (or a probe's tables), timeline and extras; reports the render's cost. */
  function renderRun(): void {
    const started = performance.now();
    const run = selection.selected();
    const other = selection.compared();
    renderHeader();
    if (!run) {
      charts.clear();
      chartsHolder.replaceChildren(
        el('p', 'No runs yet. Run a phase from the Inference Bench sidebar or the command palette (Inference Bench: Run Macro Phase).', 'empty'),
      );
      extras.clear();
      timeline.render(undefined);
      return;
    }
    const specs = chartSpecs(run, other, selection.snapshot.runs);
    charts.show(chartsHolder, specs);
    renderProbeTables(run);
    if (!specs.length && !(run.phase === 'probe' && run.probe?.tables.length))
      chartsHolder.append(el('p', run.status === 'running' ? 'Waiting for the first results…' : 'This run has no results to draw.', 'empty'));
    timeline.render(run);
    extras.render(run);
    const points = charts.pointCount();
    const ms = performance.now() - started;
    document.body.dataset.lastRenderMs = ms.toFixed(2);
    document.body.dataset.points = String(points);
    post({ type: 'rendered', points, ms });
  }

  /** A probe has facts, not figures: its tables stand where the charts would. */
  function renderProbeTables(run: RunSummary): void {
    for (const table of run.phase === 'probe' ? (run.probe?.tables ?? []) : []) {
      const section = el('section', undefined, 'card');
      section.append(el('h3', table.title), el('div', undefined, 'table-scroll'));
      section.lastElementChild!.append(renderTable(table));
      if (table.note) section.append(el('p', table.note, 'meta'));
      chartsHolder.append(section);
    }
  }

  function renderAll(): void {
    renderToolbar(toolbar, selection, renderAll);
    renderRun();
    budgetSection.render(budget);
  }

  function onSnapshot(snapshot: ResultsSnapshot): void {
    selection.snapshot = snapshot;
    budget = snapshot.budget;
    // The host's choice wins when it names a run (a click in the sidebar); otherwise keep the view's own.
    if (snapshot.selectedRunId) selection.selectedRunId = snapshot.selectedRunId;
    if (snapshot.compareRunId !== undefined) selection.compareRunId = snapshot.compareRunId;
    selection.save();
    renderAll();
    // A run the view kept from before a reload may have come trimmed: ask for it in full.
    const trimmed = new Set(snapshot.trimmedRunIds ?? []);
    const run = selection.selected();
    if (run && (trimmed.has(run.id) || (selection.compared() && trimmed.has(selection.compared()!.id))))
      post({ type: 'selectRun', runId: run.id, compareRunId: selection.compared()?.id });
  }

  function onRunUpdated(run: RunSummary): void {
    const runs = selection.snapshot.runs;
    const i = runs.findIndex((r) => r.id === run.id);
    const isNew = i < 0;
    if (isNew) runs.unshift(run);
    else runs[i] = run;
    // A new run takes the view over: the user just started it and wants to watch it.
    if (isNew) {
      selection.selectedRunId = run.id;
      selection.compareRunId = undefined;
      selection.save();
      // The host answers a selection with that run's target's budget: it must know of this one.
      post({ type: 'selectRun', runId: run.id });
    }
    renderToolbar(toolbar, selection, renderAll);
    if (run.id === selection.selected()?.id || run.id === selection.compared()?.id) renderRun();
  }

  onHostMessage((m) => {
    switch (m.type) {
      case 'snapshot':
        onSnapshot(m.snapshot);
        break;
      case 'runUpdated':
        onRunUpdated(m.run);
        break;
      case 'budget':
        budget = m.budget;
        budgetSection.render(budget);
        break;
      case 'verdict':
        verdict = m;
        renderHeader();
        break;
      case 'reveal':
        budgetSection.reveal();
        document.body.dataset.revealed = m.section;
        break;
      case 'select':
        selection.selectedRunId = m.runId;
        selection.compareRunId = m.compareRunId;
        selection.save();
        renderAll();
        break;
      default:
        break;
    }
  });

  watchTheme((theme) => {
    setTheme(theme);
    charts.retheme();
    budgetSection.retheme();
    timeline.retheme();
    extras.retheme();
  });

  // Exposed for the benchmark in the UI tests: a chart update of N points, timed inside the page.
  (window as unknown as { infbenchBench: (n: number) => Promise<{ ms: number; painted: number }> }).infbenchBench = (n: number) => benchUpdate(chartsHolder, n);
  post({ type: 'ready' });
}

/**
 * Draws a scatter of `n` points into a scratch card, waits until it is laid out, then times one
 * update with fresh data (what a live run does) and returns the milliseconds and the pixels painted.
 */
async function benchUpdate(holder: HTMLElement, n: number): Promise<{ ms: number; painted: number }> {
  const points = (seed: number) => Array.from({ length: n }, (_, i) => ({ x: i / 10, y: 100 + 50 * Math.sin(i / 200 + seed) + ((i * 7919) % 97) }));
  const spec = (seed: number): ChartSpec => ({
    kind: 'line',
    id: 'bench',
    title: `Benchmark: ${n} points`,
    xLabel: 's',
    yLabel: 'ms',
    series: [{ label: 'latency', points: points(seed), scatter: true }],
    table: { id: 'bench', title: 'bench', columns: [], rows: [] },
  });
  const card = new ChartCard(spec(0));
  holder.prepend(card.element);
  const frame = () => new Promise((r) => requestAnimationFrame(() => r(undefined)));
  await frame();
  await frame();
  const ms = card.update(spec(1));
  const canvas = card.element.querySelector('canvas')!;
  const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++;
  card.destroy();
  return { ms, painted };
}
