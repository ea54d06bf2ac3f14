// Repeated trials (--trials N): the agent runs each load N times and puts on its last trial each figure's
// mean, 95% confidence interval (Student's t over the trials) and coefficient of variation
// (agent/infbench_agent/macro/trials.py). Here: one row per load, "mean ± half-width (CV x%)", and whether
// two loads' intervals tell a difference.
//
// Two figures differ only when their 95% intervals do not overlap. Chosen over Welch's t-test because it
// is what a reader checks in the table by eye, it needs nothing beyond the intervals the table shows, and
// it errs towards "no difference": non-overlapping 95% intervals mean a difference significant at about
// the 0.6% level for equal spreads (Schenker & Gentleman, "On judging the significance of differences by
// examining the overlap between confidence intervals", The American Statistician 55(3), 2001), so a
// call it makes holds; where the intervals overlap yet the means are apart it says the spread is too
// wide to decide instead of "no difference".
import { MacroLevelSummary } from '../../shared/results';
import { ResultTable } from '../../shared/table';
import { finite } from '../../shared/finite';
import { levelLabel } from './tables';
import { TrialStat, TrialStats } from '../../shared/trialLevels';

export { collapseTrials } from '../../shared/trialLevels';
export type { TrialStat, TrialStats } from '../../shared/trialLevels';

export function trialStatsOf(level: MacroLevelSummary): TrialStats | undefined {
  const stats = level.trial_stats;
  return stats && typeof stats === 'object' ? (stats as TrialStats) : undefined;
}

/** Trials a run made of each load (1 when it made no repeats). */
export function trialsOf(levels: readonly MacroLevelSummary[]): number {
  return Math.max(1, ...levels.map((l) => finite(l.trials) ?? 1));
}

/** "41.2 ± 1.3 (CV 2.1%)"; with one trial the mean alone. */
export function intervalText(s: TrialStat | undefined, digits: number): string {
  if (!s) return '';
  const mean = s.mean.toFixed(digits);
  if (s.half_width === null || s.half_width === undefined) return mean;
  const cv = s.cv !== null && s.cv !== undefined ? ` (CV ${(s.cv * 100).toFixed(1)}%)` : '';
  return `${mean} ± ${s.half_width.toFixed(digits)}${cv}`;
}

export type IntervalVerdict = 'differ' | 'same' | 'too wide';

/**
 * Whether b differs from a: `differ` when the intervals do not overlap; `too wide` when they overlap yet the
 * means are more than `floor` (relative) apart; `same` otherwise (a change too small to matter either way).
 */
export function compareIntervals(a: TrialStat, b: TrialStat, floor = 0.01): IntervalVerdict {
  const ha = a.half_width ?? 0;
  const hb = b.half_width ?? 0;
  if (a.mean + ha < b.mean - hb || b.mean + hb < a.mean - ha) return 'differ';
  return Math.abs(b.mean - a.mean) > floor * Math.abs(a.mean) ? 'too wide' : 'same';
}

export const TRIAL_FIGURES: { key: string; label: string; digits: number }[] = [
  { key: 'p50_ttft_ms', label: 'TTFT p50 ms', digits: 1 },
  { key: 'p90_ttft_ms', label: 'TTFT p90 ms', digits: 1 },
  { key: 'p99_ttft_ms', label: 'TTFT p99 ms', digits: 1 },
  { key: 'p50_tpot_ms', label: 'TPOT p50 ms', digits: 2 },
  { key: 'p90_tpot_ms', label: 'TPOT p90 ms', digits: 2 },
  { key: 'p99_tpot_ms', label: 'TPOT p99 ms', digits: 2 },
  { key: 'p50_itl_ms', label: 'ITL p50 ms', digits: 2 },
  { key: 'p90_itl_ms', label: 'ITL p90 ms', digits: 2 },
  { key: 'p99_itl_ms', label: 'ITL p99 ms', digits: 2 },
  { key: 'p50_e2el_ms', label: 'E2EL p50 ms', digits: 0 },
  { key: 'p90_e2el_ms', label: 'E2EL p90 ms', digits: 0 },
  { key: 'p99_e2el_ms', label: 'E2EL p99 ms', digits: 0 },
  { key: 'output_throughput', label: 'Output tok/s', digits: 1 },
  { key: 'request_throughput', label: 'Req/s', digits: 2 },
  { key: 'request_goodput', label: 'Goodput req/s', digits: 2 },
];

/** The figures the findings document quotes (the full set is the run folder's and the results view's). */
export const QUOTED_TRIAL_FIGURES = ['p50_ttft_ms', 'p99_ttft_ms', 'p50_tpot_ms', 'p99_tpot_ms', 'output_throughput', 'request_goodput'];

/** The seed policy and how to read the table, for its note. */
export function trialsNote(trials: number): string {
  return (
    `Each load ran ${trials} times; each figure is the mean over the trials ± the half-width of its 95% confidence interval (Student's t, ${trials - 1} degree${trials - 1 === 1 ? '' : 's'} of freedom) and its coefficient of variation. ` +
    "Every trial draws fresh prompts from the run's seed and request numbers no other trial uses, so the run's seed repeats all of them. " +
    'Two figures differ only where their intervals do not overlap.'
  );
}

/** One row per load with every figure as "mean ± half-width (CV x%)", or undefined when no load has trials. */
export function trialsTable(levels: readonly MacroLevelSummary[], keys?: readonly string[], id = 'macro-trials'): ResultTable | undefined {
  const loads = levels.filter((l) => trialStatsOf(l));
  if (!loads.length) return undefined;
  const figures = TRIAL_FIGURES.filter((f) => (!keys || keys.includes(f.key)) && loads.some((l) => trialStatsOf(l)?.[f.key]));
  const rows = loads.map((l) => {
    const stats = trialStatsOf(l)!;
    const row: ResultTable['rows'][number] = { level: levelLabel(l), trials: finite(l.trials) ?? null };
    for (const f of figures) row[f.key] = intervalText(stats[f.key], f.digits);
    const slo = l.slo as { verdict?: string } | undefined;
    if (slo?.verdict) row.slo = slo.verdict === 'undecided' ? 'spread too wide to decide' : slo.verdict;
    return row;
  });
  const anySlo = rows.some((r) => r.slo !== undefined);
  return {
    id,
    title: 'Serving figures over repeated trials (mean ± 95% CI half-width, CV)',
    columns: [
      { key: 'level', label: 'Load', align: 'left' },
      { key: 'trials', label: 'Trials', digits: 0 },
      ...figures.map((f) => ({ key: f.key, label: f.label, align: 'right' as const })),
      ...(anySlo ? [{ key: 'slo', label: 'SLO', align: 'left' as const }] : []),
    ],
    rows,
    note: trialsNote(trialsOf(loads)),
  };
}
