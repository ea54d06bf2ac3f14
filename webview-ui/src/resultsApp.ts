// The results panel: draws the selected run (and a second one overlaid for comparison) from the
// snapshot and increments the host sends. It keeps no truth of its own beyond which runs are picked.
import type { DecodeBudgetView } from '../../src/shared/budget';
import type { HostToWebview, ResultsSnapshot, ResultsViewState } from '../../src/shared/protocol';
import { hasResults, levelProgressText, listedRuns, type RunSummary } from '../../src/shared/results';
import { host, onHostMessage, post } from './api';
import { ChartCard, setTheme } from './charts';
import { button, el, renderTable } from './dom';
import type { ChartSpec } from './specs';
import { watchTheme } from './theme';
import { macroCharts, servingTable } from './views/macro';
import { configurationCharts, configurationTag } from './views/configurations';
import { paretoCharts } from './views/pareto';
import { microCharts } from './views/micro';
import { budgetChart, budgetLeftOutText, budgetScopeText } from './views/budget';
import { profileCharts, profileData, topKernels } from './views/profile';
import { TimelineCard } from './timelineCard';
import { StepTimelineCard } from './stepTimelineCard';
import { stepTimelineData, timelineData } from './views/timeline';
import { NsysModulesCard } from './nsysModulesCard';
import { nsysData } from './views/nsysModules';

const PHASE_NAMES: Record<string, string> = { macro: 'Macro (serving)', micro: 'Micro (GEMM, all-reduce)', profile: 'Profiler (decode step)', probe: 'Probe' };

export function startResultsApp(app: HTMLElement): void {
  let snapshot: ResultsSnapshot = { runs: [] };
  const saved = (host.getState() ?? {}) as ResultsViewState;
  let selectedRunId = saved.selectedRunId;
  let compareRunId = saved.compareRunId;
  let cards: ChartCard[] = [];
  let budget: DecodeBudgetView | undefined;
  let verdict: Extract<HostToWebview, { type: 'verdict' }> | undefined;
  let budgetCard: ChartCard | undefined;
  let timeline: TimelineCard | undefined;
  let stepTimeline: StepTimelineCard | undefined;
  let nsysCard: NsysModulesCard | undefined;
  // The serving table's column choice: it holds across runs, so switching run keeps what the user picked.
  let servingAllColumns = false;

  const toolbar = el('div', undefined, 'toolbar');
  const header = el('header', undefined, 'run-header');
  const chartsHolder = el('div', undefined, 'charts');
  const timelineHolder = el('div', undefined, 'timeline');
  const extras = el('div', undefined, 'extras');
  const budgetHolder = el('section', undefined, 'budget');
  app.replaceChildren(toolbar, header, chartsHolder, timelineHolder, extras, budgetHolder);

  const runLabel = (r: RunSummary) =>
    `${r.phase} · ${r.target}${configurationTag(r)} · ${new Date(r.startedAt).toLocaleString()}${r.status === 'running' ? ' · running' : ''}`;
  const selected = () => snapshot.runs.find((r) => r.id === selectedRunId) ?? snapshot.runs[0];
  const compared = () => {
    const run = selected();
    const other = snapshot.runs.find((r) => r.id === compareRunId);
    return run && other && other.phase === run.phase && other.id !== run.id ? other : undefined;
  };

  const saveState = () => host.setState({ selectedRunId, compareRunId } satisfies ResultsViewState);

  function renderToolbar(): void {
    const run = selected();
    const runSelect = el('select');
    runSelect.id = 'run-select';
    runSelect.setAttribute('aria-label', 'Run shown');
    // Failed runs that kept nothing are left out, but for a target's newest and the one shown.
    const listed = listedRuns(snapshot.runs);
    if (run && !listed.includes(run)) listed.push(run);
    for (const r of listed) {
      const o = el('option', runLabel(r));
      o.value = r.id;
      o.selected = r.id === run?.id;
      runSelect.append(o);
    }
    runSelect.addEventListener('change', () => {
      selectedRunId = runSelect.value;
      if (compareRunId === selectedRunId) compareRunId = undefined;
      post({ type: 'selectRun', runId: selectedRunId, compareRunId });
      saveState();
      renderAll();
    });
    const compareSelect = el('select');
    compareSelect.id = 'compare-select';
    compareSelect.setAttribute('aria-label', 'Run overlaid for comparison');
    const none = el('option', 'no comparison');
    none.value = '';
    compareSelect.append(none);
    for (const r of snapshot.runs.filter((x) => run && x.phase === run.phase && x.id !== run.id && hasResults(x))) {
      const o = el('option', `B: ${runLabel(r)}`);
      o.value = r.id;
      o.selected = r.id === compared()?.id;
      compareSelect.append(o);
    }
    compareSelect.disabled = compareSelect.options.length < 2;
    compareSelect.addEventListener('change', () => {
      compareRunId = compareSelect.value || undefined;
      post({ type: 'selectRun', runId: selected()!.id, compareRunId });
      saveState();
      renderAll();
    });
    const runLabelEl = el('label', 'Run ');
    runLabelEl.append(runSelect);
    const compareLabel = el('label', 'Compare with ');
    compareLabel.append(compareSelect);
    toolbar.replaceChildren(runLabelEl, compareLabel);
    if (run && profileData(run))
      toolbar.append(
        button('Inspect kernels', 'Open the kernel breakdown beside the editor', () => post({ type: 'inspectBreakdown', runId: run.id }), 'list-tree'),
      );
  }

  function renderHeader(run: RunSummary | undefined, other: RunSummary | undefined): void {
    header.replaceChildren();
    if (!run) return;
    const title = el('h2', `${PHASE_NAMES[run.phase] ?? run.phase} · ${run.target}`);
    if (run.simulated) title.append(el('span', 'simulator', 'badge'));
    header.append(title);
    const status = el('p', undefined, `status status-${run.status}`);
    status.id = 'run-status';
    status.append(
      el('span', undefined, `codicon codicon-${run.status === 'running' ? 'loading codicon-modifier-spin' : run.status === 'completed' ? 'pass' : 'warning'}`),
    );
    status.append(el('span', ` ${run.status}${run.reason ? ` — ${run.reason}` : ''}`));
    // A macro level running: requests done of its total and the time left at its pace so far.
    if (run.status === 'running' && run.levelProgress) {
      const going = el('span', ` · ${levelProgressText(run.levelProgress)}`);
      going.id = 'level-progress';
      status.append(going);
    }
    header.append(status);
    if (run.headline) {
      const headline = el('p', run.headline, 'headline');
      headline.id = 'run-headline';
      header.append(headline);
    }
    if (other) header.append(el('p', `A (solid): ${runLabel(run)} — B (dashed): ${runLabel(other)}${other.headline ? ` — ${other.headline}` : ''}`, 'meta'));
    // Compare's answer in one line (the biggest change beyond noise), the others under it.
    if (other && verdict && verdict.runId === run.id && verdict.compareRunId === other.id) {
      const line = el(
        'p',
        `${verdict.flagged ? `▲ ${verdict.flagged} change${verdict.flagged === 1 ? '' : 's'} beyond noise: ` : ''}${verdict.lines[0] ?? ''}`,
        'verdict',
      );
      line.id = 'compare-verdict';
      header.append(line);
      if (verdict.lines.length > 1) {
        const more = el('ul', undefined, 'meta verdict-more');
        for (const l of verdict.lines.slice(1)) more.append(el('li', l));
        header.append(more);
      }
    }
  }

  function specsFor(run: RunSummary, other: RunSummary | undefined): ChartSpec[] {
    switch (run.phase) {
      case 'macro':
        // A configuration of a comparison: the others beside it first, then its own charts.
        return [...configurationCharts(run, snapshot.runs), ...macroCharts(run, other), ...paretoCharts(run, snapshot.runs)];
      case 'micro':
        return microCharts(run, other);
      case 'profile':
        return profileCharts(run, other);
      default:
        return [];
    }
  }

  /** Draws the charts, reusing cards with the same id so that a live run's charts update in place. */
  function renderCharts(): void {
    const started = performance.now();
    const run = selected();
    const other = compared();
    renderHeader(run, other);
    if (!run) {
      cards.forEach((c) => c.destroy());
      cards = [];
      chartsHolder.replaceChildren(
        el('p', 'No runs yet. Run a phase from the Inference Bench sidebar or the command palette (Inference Bench: Run Macro Phase).', 'empty'),
      );
      extras.replaceChildren();
      renderTimeline(undefined);
      return;
    }
    const specs = specsFor(run, other);
    const next: ChartCard[] = [];
    for (const spec of specs) {
      const existing = cards.find((c) => c.id === spec.id);
      if (existing) {
        existing.update(spec);
        next.push(existing);
      } else next.push(new ChartCard(spec));
    }
    cards.filter((c) => !next.includes(c)).forEach((c) => c.destroy());
    cards = next;
    chartsHolder.replaceChildren(...cards.map((c) => c.element));
    // A probe has facts, not figures: its tables stand where the charts would.
    for (const table of run.phase === 'probe' ? (run.probe?.tables ?? []) : []) {
      const section = el('section', undefined, 'card');
      section.append(el('h3', table.title), el('div', undefined, 'table-scroll'));
      section.lastElementChild!.append(renderTable(table));
      if (table.note) section.append(el('p', table.note, 'meta'));
      chartsHolder.append(section);
    }
    if (!specs.length && !(run.phase === 'probe' && run.probe?.tables.length))
      chartsHolder.append(el('p', run.status === 'running' ? 'Waiting for the first results…' : 'This run has no results to draw.', 'empty'));
    renderTimeline(run);
    const kernels = run.phase === 'profile' ? topKernels(run) : undefined;
    extras.replaceChildren();
    // An Nsight Systems profile: the step by layer and module, above the kernel table.
    const nsys = run.phase === 'profile' ? nsysData(run) : undefined;
    if (nsys) {
      if (nsysCard) nsysCard.update(nsys, run.id);
      else nsysCard = new NsysModulesCard(nsys, run.id);
      extras.append(nsysCard.element);
    } else {
      nsysCard?.destroy();
      nsysCard = undefined;
    }
    // The full serving table (the findings document quotes only a few of its columns).
    const full = run.phase === 'macro' ? servingTable(run) : undefined;
    if (full) {
      const section = el('section', undefined, 'card');
      section.id = 'serving-table';
      const scroll = el('div', undefined, 'table-scroll');
      const toggle = button('', '', () => {
        servingAllColumns = !servingAllColumns;
        fillServing();
      });
      toggle.id = 'serving-columns';
      const fillServing = () => {
        const shown = servingTable(run, { fewer: !servingAllColumns })!;
        scroll.replaceChildren(renderTable(shown));
        const more = full.columns.length - shown.columns.length;
        toggle.lastElementChild!.textContent = servingAllColumns ? 'Fewer columns' : `All ${full.columns.length} columns`;
        toggle.title = servingAllColumns
          ? 'Show the load, p50 and p99 latencies and throughput only'
          : `Show the ${more} more columns too: the means, the duration and total tok/s`;
        toggle.setAttribute('aria-pressed', String(servingAllColumns));
      };
      const header = el('div', undefined, 'card-header');
      const actions = el('div', undefined, 'card-actions');
      actions.append(toggle);
      header.append(el('h3', full.title), actions);
      section.append(header, scroll);
      fillServing();
      extras.append(section);
    }
    if (kernels) {
      const section = el('section', undefined, 'card');
      section.append(el('h3', kernels.title), el('div', undefined, 'table-scroll'));
      section.lastElementChild!.append(renderTable(kernels, { sortable: true, initialSort: { key: 'total_us', descending: true } }));
      extras.append(section);
    }
    const points = cards.reduce((n, c) => n + c.pointCount(), 0);
    const ms = performance.now() - started;
    document.body.dataset.lastRenderMs = ms.toFixed(2);
    document.body.dataset.points = String(points);
    post({ type: 'rendered', points, ms });
  }

  /**
   * The run's timeline: a macro run's requests, or a profile run's steps. Updated in place, so that a
   * live run keeps the user's zoom.
   */
  function renderTimeline(run: RunSummary | undefined): void {
    const started = performance.now();
    const data = run ? timelineData(run) : undefined;
    const steps = run && !data ? stepTimelineData(run) : undefined;
    if (data) {
      if (timeline) timeline.update(data);
      else timeline = new TimelineCard(data);
    } else {
      timeline?.destroy();
      timeline = undefined;
    }
    if (steps) {
      if (stepTimeline) stepTimeline.update(steps);
      else stepTimeline = new StepTimelineCard(steps);
    } else {
      stepTimeline?.destroy();
      stepTimeline = undefined;
    }
    const shown = timeline?.element ?? stepTimeline?.element;
    if (shown) {
      if (timelineHolder.firstElementChild !== shown) timelineHolder.replaceChildren(shown);
    } else timelineHolder.replaceChildren();
    // What the timeline's part of a render cost (its shaping and drawing), for the benchmark.
    document.body.dataset.timelineMs = (performance.now() - started).toFixed(2);
  }

  function renderAll(): void {
    renderToolbar();
    renderCharts();
    renderBudget();
  }

  /** Where the milliseconds go, across the newest macro, micro and profile runs (not one run's view). */
  function renderBudget(): void {
    if (!budget || !budget.bars.length) {
      budgetCard?.destroy();
      budgetCard = undefined;
      budgetHolder.replaceChildren();
      return;
    }
    const spec = budgetChart(budget);
    if (budgetCard) budgetCard.update(spec);
    else budgetCard = new ChartCard(spec);
    const heading = el('h2', 'Where the milliseconds go');
    if (budget.simulated) heading.append(el('span', 'simulator', 'badge'));
    const s = budget.scope;
    // Whose runs these are: the budget never sets one server's runs beside another's.
    const scope = s ? el('p', budgetScopeText(budget)!, 'meta budget-scope') : undefined;
    const readings = el('ul', undefined, 'readings');
    for (const r of budget.readings) readings.append(el('li', r));
    const missing = el('ul', undefined, 'meta budget-missing');
    for (const m of budget.missing) missing.append(el('li', `Missing the ${m.phase} phase${s ? ` for ${s.target}` : ''}: run ${m.action}. It adds ${m.adds}`));
    for (const l of budget.leftOut ?? []) missing.append(el('li', budgetLeftOutText(l)));
    budgetHolder.replaceChildren(heading, ...(scope ? [scope] : []), readings, budgetCard.element, ...(missing.childElementCount ? [missing] : []));
  }

  onHostMessage((m) => {
    switch (m.type) {
      case 'snapshot':
        snapshot = m.snapshot;
        budget = m.snapshot.budget;
        // The host's choice wins when it names a run (a click in the sidebar); otherwise keep the view's own.
        if (m.snapshot.selectedRunId) selectedRunId = m.snapshot.selectedRunId;
        if (m.snapshot.compareRunId !== undefined) compareRunId = m.snapshot.compareRunId;
        saveState();
        renderAll();
        // A run the view kept from before a reload may have come trimmed: ask for it in full.
        {
          const trimmed = new Set(m.snapshot.trimmedRunIds ?? []);
          const run = selected();
          if (run && (trimmed.has(run.id) || (compared() && trimmed.has(compared()!.id))))
            post({ type: 'selectRun', runId: run.id, compareRunId: compared()?.id });
        }
        break;
      case 'runUpdated': {
        const i = snapshot.runs.findIndex((r) => r.id === m.run.id);
        const isNew = i < 0;
        if (isNew) snapshot.runs.unshift(m.run);
        else snapshot.runs[i] = m.run;
        // A new run takes the view over: the user just started it and wants to watch it.
        if (isNew) {
          selectedRunId = m.run.id;
          compareRunId = undefined;
          saveState();
          // The host answers a selection with that run's target's budget: it must know of this one.
          post({ type: 'selectRun', runId: m.run.id });
        }
        renderToolbar();
        if (m.run.id === selected()?.id || m.run.id === compared()?.id) renderCharts();
        break;
      }
      case 'budget':
        budget = m.budget;
        renderBudget();
        break;
      case 'verdict':
        verdict = m;
        renderHeader(selected(), compared());
        break;
      case 'reveal': {
        // The budget's heading takes focus, so that a keyboard or screen-reader user lands where the command said.
        const heading = budgetHolder.querySelector('h2');
        budgetHolder.scrollIntoView({ block: 'start' });
        if (heading) {
          heading.tabIndex = -1;
          heading.focus({ preventScroll: true });
        }
        document.body.dataset.revealed = m.section;
        break;
      }
      case 'select':
        selectedRunId = m.runId;
        compareRunId = m.compareRunId;
        saveState();
        renderAll();
        break;
      default:
        break;
    }
  });

  watchTheme((theme) => {
    setTheme(theme);
    cards.forEach((c) => c.retheme());
    budgetCard?.retheme();
    timeline?.retheme();
    stepTimeline?.retheme();
    nsysCard?.retheme();
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
