// The kernel-breakdown side view, beside the editor so that the findings document stays in sight:
// categories of a decode step → the kernels of one category → one kernel's statistics and its place
// in the step, each insertable into the findings document at the cursor.
import type { BreakdownView } from '../../src/shared/protocol';
import type { KernelStat } from '../../src/shared/results';
import type { ResultTable } from '../../src/shared/table';
import { host, onHostMessage, post, request } from './api';
import { button, el, renderTable } from './dom';
import { categoryOrder, kernelTable, shortKernelName } from './views/profile';

interface BreakdownState {
  runId?: string;
  /** The rank shown; undefined for all ranks (their mean, as the headline counts it). */
  rank?: number;
  category?: string;
  kernel?: string;
}

/** One kernel's statistics as a findings-ready table. */
export function kernelDetailTable(kernel: KernelStat, stepUs: number | undefined, categoryUs?: number): ResultTable {
  const rows = [
    { stat: 'category', value: kernel.category },
    { stat: 'launches per decode step', value: Number.isInteger(kernel.count) ? String(kernel.count) : kernel.count.toFixed(1) },
    { stat: 'time per decode step (µs)', value: kernel.total_us.toFixed(1) },
    { stat: 'mean per launch (µs)', value: kernel.mean_us.toFixed(2) },
    { stat: 'min per launch (µs)', value: kernel.min_us.toFixed(2) },
    { stat: 'max per launch (µs)', value: kernel.max_us.toFixed(2) },
  ];
  const share = kernel.share ?? (stepUs ? kernel.total_us / stepUs : undefined);
  if (share !== undefined) rows.push({ stat: 'share of decode step', value: `${(share * 100).toFixed(1)}%` });
  // Its place in the step: how much of its category it is, and the category's share of the step.
  if (categoryUs && stepUs)
    rows.push({
      stat: `share of ${kernel.category}`,
      value: `${((kernel.total_us / categoryUs) * 100).toFixed(1)}% of ${((categoryUs / stepUs) * 100).toFixed(1)}%`,
    });
  if (kernel.first_offset_us !== undefined) {
    rows.push({
      stat: 'first launch in step',
      value: `${kernel.first_offset_us.toFixed(1)} µs${stepUs ? ` (${((kernel.first_offset_us / stepUs) * 100).toFixed(0)}% into the step)` : ''}`,
    });
  }
  return {
    id: 'kernel-detail',
    title: `Kernel ${shortKernelName(kernel.name)}`,
    note: shortKernelName(kernel.name) === kernel.name ? undefined : `full name: ${kernel.name}`,
    columns: [
      { key: 'stat', label: 'statistic', align: 'left' },
      { key: 'value', label: 'value', align: 'right' },
    ],
    rows,
  };
}

export function startBreakdownApp(app: HTMLElement): void {
  let view: BreakdownView | undefined;
  let state = (host.getState() ?? {}) as BreakdownState;
  const save = () => host.setState(state);

  const insertButton = (table: ResultTable) =>
    button(
      'Insert into findings',
      'Insert this table into the findings document at the cursor',
      async () => {
        status.textContent = '';
        const reply = await request((requestId) => ({ type: 'insertTable', requestId, table }));
        if (!reply.ok) status.textContent = reply.error ?? 'Could not insert the table.';
        else status.textContent = 'Inserted into the findings document.';
      },
      'insert',
    );
  const status = el('p', undefined, 'meta');
  status.setAttribute('role', 'status');

  function render(): void {
    app.replaceChildren();
    if (!view) {
      app.append(
        el('p', 'Run the profiler phase, or Analyze Trace File…, then pick "Inspect kernels" on a profile run to see its kernel breakdown here.', 'empty'),
      );
      return;
    }
    const { profile } = view;
    if (state.runId !== view.runId) state = { runId: view.runId };
    const rankEntry = state.rank !== undefined ? profile.ranks.find((r) => r.rank === state.rank) : undefined;
    if (!rankEntry) state.rank = undefined;
    // All ranks: the analysis' own overall figures, so the shares are the headline's; one rank: its own.
    const perCategory = new Map<string, number>();
    let stepUs: number | undefined;
    if (rankEntry) {
      stepUs = rankEntry.step_us;
      for (const [c, us] of Object.entries(rankEntry.by_category)) perCategory.set(c, us);
    } else if (profile.overall) {
      stepUs = profile.overall.step_us;
      for (const [c, us] of Object.entries(profile.overall.by_category)) perCategory.set(c, us);
    } else {
      stepUs = profile.ranks.length ? profile.ranks.reduce((s, r) => s + r.step_us, 0) / profile.ranks.length : undefined;
      for (const r of profile.ranks)
        for (const [c, us] of Object.entries(r.by_category)) perCategory.set(c, (perCategory.get(c) ?? 0) + us / profile.ranks.length);
    }
    app.append(el('h2', view.title));
    if (profile.ranks.length > 1) {
      // One rank at a time: a slow rank, or one whose all-reduce waits for the others, shows here.
      const label = el('label', 'Rank ', 'rank-picker');
      const select = el('select');
      select.id = 'rank-select';
      select.setAttribute('aria-label', 'Rank shown');
      const all = el('option', `all ${profile.ranks.length} ranks (mean)`);
      all.value = '';
      select.append(all);
      for (const r of [...profile.ranks].sort((a, b) => a.rank - b.rank)) {
        const o = el('option', `rank ${r.rank} · ${r.step_us.toFixed(1)} µs per step`);
        o.value = String(r.rank);
        select.append(o);
      }
      select.value = state.rank === undefined ? '' : String(state.rank);
      select.addEventListener('change', () => {
        state = { runId: view!.runId, rank: select.value === '' ? undefined : Number(select.value), category: state.category };
        save();
        render();
      });
      label.append(select);
      app.append(label);
    }
    const scope = rankEntry ? `rank ${rankEntry.rank}` : `mean over ${profile.ranks.length} rank${profile.ranks.length === 1 ? '' : 's'}`;
    if (stepUs) app.append(el('p', `decode step ${stepUs.toFixed(1)} µs (${scope}${profile.steps ? `, ${profile.steps} steps` : ''})`, 'meta step-line'));

    const list = el('ul', undefined, 'category-list');
    list.setAttribute('aria-label', 'Kernel categories');
    for (const category of categoryOrder([profile])) {
      const us = perCategory.get(category) ?? 0;
      if (us <= 0) continue;
      const share = stepUs ? us / stepUs : 0;
      const li = el('li');
      const b = el('button', undefined, `category${state.category === category ? ' selected' : ''}`);
      b.type = 'button';
      b.dataset.category = category;
      b.setAttribute('aria-pressed', String(state.category === category));
      b.append(el('span', category, 'category-name'), el('span', `${us.toFixed(1)} µs · ${(share * 100).toFixed(1)}%`, 'category-figure'));
      // A <progress> shows the share without any inline style.
      const bar = el('progress');
      bar.max = 1;
      bar.value = share;
      b.append(bar);
      b.addEventListener('click', () => {
        state = { runId: view!.runId, rank: state.rank, category };
        save();
        render();
        // The side view is short: what the click opened is brought into sight, not left below the fold.
        document.getElementById('category-kernels')?.scrollIntoView({ block: 'nearest' });
      });
      li.append(b);
      list.append(li);
    }
    app.append(list);

    if (state.category) {
      const source = rankEntry ? (profile.kernelsByRank?.find((k) => k.rank === rankEntry.rank)?.kernels ?? []) : profile.kernels;
      const kernels = source.filter((k) => k.category === state.category).sort((a, b) => b.total_us - a.total_us);
      const full = kernelTable(kernels, `Kernels in ${state.category}${rankEntry ? ` on rank ${rankEntry.rank}` : ''}`, stepUs);
      // The side view is narrow: the category is in the heading, min and max are in the kernel's detail.
      const table = { ...full, columns: full.columns.filter((c) => ['name', 'count', 'total_us', 'share_pct'].includes(c.key)) };
      const section = el('section', undefined, 'card');
      section.id = 'category-kernels';
      const head = el('div', undefined, 'card-header');
      head.append(
        el('h3', `${state.category}${rankEntry ? ` on rank ${rankEntry.rank}` : ''}: ${kernels.length} kernel${kernels.length === 1 ? '' : 's'}`),
        insertButton(full),
      );
      const scroll = el('div', undefined, 'table-scroll');
      scroll.append(
        renderTable(table, {
          sortable: true,
          initialSort: { key: 'total_us', descending: true },
          isSelected: (row) => row.full_name === state.kernel,
          onRowClick: (row) => {
            state = { ...state, kernel: String(row.full_name) };
            save();
            render();
            document.getElementById('kernel-detail')?.scrollIntoView({ block: 'nearest' });
          },
        }),
      );
      section.append(head, scroll);
      app.append(section);
      const kernel = kernels.find((k) => k.name === state.kernel);
      if (kernel) {
        const detail = kernelDetailTable(kernel, stepUs, perCategory.get(kernel.category));
        const card = el('section', undefined, 'card');
        card.id = 'kernel-detail';
        const h = el('div', undefined, 'card-header');
        h.append(el('h3', 'Kernel'), insertButton(detail));
        card.append(h, el('p', kernel.name, 'kernel-name'), renderTable({ ...detail, note: undefined }));
        app.append(card);
      }
    }
    app.append(status);
  }

  onHostMessage((m) => {
    if (m.type === 'breakdown') {
      view = m.breakdown;
      render();
    }
  });
  render();
  post({ type: 'ready' });
}
