import { renderTextTable, ResultTable, TableColumn } from '../../shared/table';
import { IDLE_CATEGORY } from './families';
import { printable } from '../../shared/printable';
import { RankBreakdown, StepSource, TraceBreakdown } from './types';

/** Kernel names are C++ templates hundreds of characters long; tables show the head. */
export function shortKernelName(name: string, max = 80): string {
  const plain = printable(name).replace(/^void /, '');
  return plain.length <= max ? plain : `${plain.slice(0, max - 1)}…`;
}

function fileName(path: string): string {
  return printable(path.split(/[\\/]/).pop() ?? path);
}

/** The breakdown as result tables: categories per decode step (overall and per rank), top kernels, rank skew. */
export function breakdownTables(b: TraceBreakdown): ResultTable[] {
  const tables: ResultTable[] = [];
  const o = b.overall;
  const stepNote = o.stepMs ? `${o.count} decode steps over ${o.ranks} rank(s); mean step ${o.stepMs.mean.toFixed(3)} ms` : 'no decode steps';
  const sources = [...new Set(b.ranks.map((r) => r.stepMethod ?? r.stepSource))].join(', ');
  tables.push({
    id: 'profile-categories',
    title: 'Where a decode step goes (GPU time per category)',
    columns: [
      { key: 'category', label: 'category', align: 'left' },
      { key: 'ms', label: 'ms per step', align: 'right', digits: 3 },
      { key: 'pct', label: '% of step', align: 'right', digits: 1 },
      { key: 'raw', label: 'raw ms (overlap twice)', align: 'right', digits: 3 },
      { key: 'kernels', label: 'kernels per step', align: 'right', digits: 1 },
    ],
    rows: o.categories.map((c) => ({
      category: c.category,
      ms: c.msPerStep,
      pct: c.sharePct,
      raw: c.category === IDLE_CATEGORY ? null : c.rawMsPerStep,
      kernels: c.category === IDLE_CATEGORY ? null : c.kernelsPerStep,
    })),
    note: `${stepNote}; steps from ${sources}. Overlapping kernels count once, for the one that started first; idle is GPU time with no kernel running.`,
  });
  if (b.ranks.length > 1) {
    const withSteps = b.ranks.filter((r) => r.decode.count > 0);
    const columns: TableColumn[] = [
      { key: 'category', label: 'category', align: 'left' },
      ...withSteps.map((r) => ({ key: `r${r.rank}`, label: `rank ${r.rank} %`, align: 'right' as const, digits: 1 })),
    ];
    const rows = o.categories.map((c) => {
      const row: Record<string, string | number | null> = { category: c.category };
      for (const r of withSteps) row[`r${r.rank}`] = r.decode.categories.find((x) => x.category === c.category)?.sharePct ?? 0;
      return row;
    });
    const stepRow: Record<string, string | number | null> = { category: 'step ms' };
    for (const r of withSteps) stepRow[`r${r.rank}`] = r.decode.stepMs?.mean ?? null;
    rows.push(stepRow);
    tables.push({
      id: 'profile-ranks',
      title: 'Share of the decode step per rank (%)',
      columns,
      rows,
      note: b.skew
        ? `Rank skew: slowest rank ${b.skew.slowestRank} ${b.skew.maxMs.toFixed(3)} ms, fastest rank ${b.skew.fastestRank} ${b.skew.minMs.toFixed(3)} ms per step (${b.skew.spreadPct.toFixed(1)}% spread)${busiestNote(b)}.`
        : undefined,
    });
  }
  const first = b.ranks.find((r) => r.decode.count > 0) ?? b.ranks[0];
  if (first) tables.push(topKernelTable(first));
  return tables;
}

/** Which rank does the most GPU work per step, when that is not the rank with the longest steps. */
function busiestNote(b: TraceBreakdown): string {
  const s = b.skew;
  if (!s?.busyMsByRank || s.busiestRank === undefined || s.busiestRank === s.slowestRank) return '';
  const most = s.busyMsByRank.find((r) => r.rank === s.busiestRank)!;
  const least = s.busyMsByRank.reduce((a, c) => (c.busyMs < a.busyMs ? c : a));
  return `; rank ${s.busiestRank} does the most GPU work per step (${most.busyMs.toFixed(3)} ms of kernels vs ${least.busyMs.toFixed(3)} ms on rank ${least.rank}), so the others wait for it at each collective`;
}

export function topKernelTable(r: RankBreakdown, limit = 10): ResultTable {
  return {
    id: `profile-top-kernels-rank${r.rank}`,
    title: `Top kernels in decode steps (rank ${r.rank})`,
    columns: [
      { key: 'name', label: 'kernel', align: 'left' },
      { key: 'category', label: 'category', align: 'left' },
      { key: 'count', label: 'count', align: 'right', digits: 0 },
      { key: 'total', label: 'total ms', align: 'right', digits: 3 },
      { key: 'mean', label: 'mean us', align: 'right', digits: 2 },
      { key: 'min', label: 'min us', align: 'right', digits: 2 },
      { key: 'max', label: 'max us', align: 'right', digits: 2 },
    ],
    rows: r.topKernels
      .slice(0, limit)
      .map((k) => ({ name: shortKernelName(k.name, 60), category: k.category, count: k.count, total: k.totalMs, mean: k.meanUs, min: k.minUs, max: k.maxUs })),
    note: `${fileName(r.file)}: ${r.decode.count} decode steps.`,
  };
}

// Without step names a step's kind comes from its size: a big one is a prefill, or a mixed step
// (prefill and decode at once), and nothing in the trace tells the two apart.
const KIND_BY_SIZE: readonly StepSource[] = ['module-forward', 'repeating-pattern', 'cuda-graph'];

function prefillWord(source: StepSource): string {
  return KIND_BY_SIZE.includes(source) ? 'prefill or mixed' : 'prefill';
}

/** The whole breakdown for a terminal: headline, tables, launch statistics, warnings. */
export function renderBreakdownText(b: TraceBreakdown): string {
  const parts: string[] = [`${b.headline}\n`];
  for (const r of b.ranks) {
    const d = r.decode.stepMs;
    parts.push(
      `rank ${r.rank}${r.rankName ? ` (${r.rankName})` : ''}: ${fileName(r.file)} (${(r.totals.jsonBytes / 1e6).toFixed(1)} MB JSON, ${r.totals.kernels} kernels${r.device ? `, ${r.device}` : ''}); ` +
        `steps from ${r.stepMethod ?? r.stepSource}${r.stepConfidence && r.stepConfidence !== 'exact' ? ` (${r.stepConfidence})` : ''}: ${r.decode.count} decode, ${r.prefill.count} ${prefillWord(r.stepSource)}${r.mixed ? `, ${r.mixed.count} mixed` : ''}` +
        (d ? `; decode step median ${d.median.toFixed(3)} ms, mean ${d.mean.toFixed(3)} ms` : '') +
        (r.launch?.launchCallUs
          ? `; launch call median ${r.launch.launchCallUs.median.toFixed(1)} us over ${r.launch.launches} launches (${r.launch.graphLaunches} graph)`
          : '') +
        '\n',
    );
  }
  for (const f of b.frontEnd ?? []) parts.push(`not a rank: ${fileName(f.file)} (${f.what}, ${f.events} events)\n`);
  for (const t of breakdownTables(b)) parts.push(`\n${renderTextTable(t)}\n`);
  const warnings = [...b.warnings, ...b.ranks.flatMap((r) => r.warnings.map((w) => `rank ${r.rank}: ${w}`))];
  if (warnings.length) parts.push(`\n${warnings.map((w) => `warning: ${w}`).join('\n')}\n`);
  return parts.join('');
}
