// Profiler run charts: a decode step split by kernel category (a stacked bar per rank) and the top
// kernels as a sortable table.
import type { KernelStat, ProfileSummary, RunSummary } from '../../../src/shared/results';
import type { ResultTable, TableCell } from '../../../src/shared/table';
import { printable } from '../../../src/shared/printable';
import type { ChartSpec } from '../specs';
import { drawnRuns } from './common';

/** The profile of a run if it has a breakdown to draw. */
export function profileData(run: RunSummary | undefined): ProfileSummary | undefined {
  const p = run?.profile;
  if (!p || !Array.isArray(p.ranks) || !Array.isArray(p.categories)) return undefined;
  return { categories: p.categories, ranks: p.ranks, kernels: Array.isArray(p.kernels) ? p.kernels : [], steps: p.steps };
}

/** Categories by their time summed over ranks, largest first. */
export function categoryOrder(profiles: ProfileSummary[]): string[] {
  const total = new Map<string, number>();
  for (const p of profiles) {
    for (const c of p.categories) total.set(c, total.get(c) ?? 0);
    for (const r of p.ranks) for (const [c, us] of Object.entries(r.by_category)) total.set(c, (total.get(c) ?? 0) + us);
  }
  // Idle stays last whatever its size: it is the gap, not a kind of work.
  return [...total.entries()].sort((a, b) => (a[0] === 'idle' ? 1 : b[0] === 'idle' ? -1 : b[1] - a[1])).map(([c]) => c);
}

/**
 * A C++ kernel name a person can read in a table: template arguments and the parameter list
 * folded ("void at::native::elementwise_kernel<128, 4, ...>(int, ...)" → "at::native::elementwise_kernel<…>").
 */
export function shortKernelName(name: string): string {
  let out = '';
  let depth = 0;
  let firstArgs: string | undefined;
  let args = '';
  const s = printable(name).replace(/^void\s+/, '');
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '<') {
      if (depth === 0) out += '<…>';
      else if (firstArgs === undefined) args += c;
      depth++;
    } else if (c === '>') {
      depth = Math.max(0, depth - 1);
      if (depth === 0 && firstArgs === undefined) firstArgs = args;
      else if (depth > 0 && firstArgs === undefined) args += c;
    } else if (depth === 0) {
      // The parameter list of a demangled name adds nothing a reader needs.
      if (c === '(' && out.length > 0 && /[\w>]$/.test(out)) break;
      out += c;
    } else if (firstArgs === undefined) args += c;
  }
  // Wrappers such as cutlass::device_kernel<flash::...> are named by what they wrap: keep the first
  // template argument that is a name (not a number), up to its own arguments.
  const inner = firstArgs
    ?.split(',')
    .map((a) => a.trim())
    .find(
      (a) =>
        /^[A-Za-z_]/.test(a) &&
        !/^(unsigned |signed |const )?(int|long|short|char|bool|float|double|half|__half|__nv_bfloat16|c10::(BFloat16|Half)|true|false)\b/.test(a),
    );
  const head = inner?.split(/[<(\s]/)[0];
  const short = (out.trim() || name).replace('<…>', head ? `<${head}…>` : '<…>');
  return short;
}

export function kernelTable(kernels: KernelStat[], title: string, stepUs?: number): ResultTable {
  const shortNames = kernels.map((k) => shortKernelName(k.name));
  const seen = new Map<string, number>();
  // Kernels that fold to the same short name are told apart by a number, in the table's order.
  const labels = shortNames.map((n) => {
    const dupes = shortNames.filter((x) => x === n).length;
    if (dupes === 1) return n;
    const i = (seen.get(n) ?? 0) + 1;
    seen.set(n, i);
    return `${n} #${i}`;
  });
  return {
    id: 'profile-kernels',
    title,
    // The figures read first sit next to the name, so a narrow view shows them without scrolling sideways.
    columns: [
      { key: 'name', label: 'kernel', align: 'left' },
      { key: 'total_us', label: 'µs / step', digits: 1 },
      { key: 'share_pct', label: '% of step', digits: 1 },
      { key: 'count', label: 'launches / step', digits: 1 },
      { key: 'category', label: 'category', align: 'left' },
      { key: 'mean_us', label: 'mean (µs)', digits: 2 },
      { key: 'min_us', label: 'min (µs)', digits: 2 },
      { key: 'max_us', label: 'max (µs)', digits: 2 },
    ],
    rows: kernels.map((k, i): Record<string, TableCell> => ({
      name: labels[i],
      full_name: k.name,
      category: k.category,
      count: k.count,
      total_us: k.total_us,
      mean_us: k.mean_us,
      min_us: k.min_us,
      max_us: k.max_us,
      share_pct: k.share !== undefined ? k.share * 100 : stepUs ? (k.total_us / stepUs) * 100 : undefined,
    })),
  };
}

export function profileCharts(run: RunSummary, compare?: RunSummary): ChartSpec[] {
  const runs = drawnRuns(run, compare).flatMap((r) => {
    const profile = profileData(r.run);
    return profile ? [{ ...r, profile }] : [];
  });
  if (!runs.length) return [];
  const comparing = runs.length > 1;
  const bars = runs.flatMap((r) => [...r.profile.ranks].sort((a, b) => a.rank - b.rank).map((rank) => ({ tag: r.tag, rank })));
  // Categories with no time on any rank would only crowd the legend.
  const categories = categoryOrder(runs.map((r) => r.profile)).filter((c) => bars.some((b) => (b.rank.by_category[c] ?? 0) > 0));
  const labels = bars.map((b) => (comparing ? `${b.tag} rank ${b.rank.rank}` : `rank ${b.rank.rank}`));
  const rows: Record<string, TableCell>[] = bars.map((b, i) => ({
    rank: labels[i],
    step_us: b.rank.step_us,
    ...Object.fromEntries(categories.map((c) => [c, b.rank.by_category[c] ?? 0])),
  }));
  const charts: ChartSpec[] = [
    {
      kind: 'stackedBar',
      id: `${run.id}-step`,
      title: 'Decode step by kernel category, per rank',
      yLabel: 'µs per decode step',
      labels,
      stacks: categories.map((c, i) => ({ label: c, values: bars.map((b) => b.rank.by_category[c] ?? 0), colorIndex: i })),
      table: {
        id: 'profile-step',
        title: 'Decode step time by category (µs)',
        columns: [
          { key: 'rank', label: 'rank', align: 'left' },
          { key: 'step_us', label: 'step (µs)', digits: 1 },
          ...categories.map((c) => ({ key: c, label: c, digits: 1 })),
        ],
        rows,
        note: runs[0].profile.steps ? `averaged over ${runs[0].profile.steps} decode steps` : undefined,
      },
    },
  ];
  return charts;
}

/** The top kernels of a run by total time, for the sortable table under the chart. */
export function topKernels(run: RunSummary, limit = 30): ResultTable | undefined {
  const profile = profileData(run);
  if (!profile?.kernels.length) return undefined;
  const meanStep = profile.ranks.length ? profile.ranks.reduce((s, r) => s + r.step_us, 0) / profile.ranks.length : undefined;
  const top = [...profile.kernels].sort((a, b) => b.total_us - a.total_us).slice(0, limit);
  return kernelTable(top, `Top ${top.length} kernels by time per decode step (mean, min, max per launch)`, meanStep);
}
