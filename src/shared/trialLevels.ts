// A macro load run several times (--trials N) is one level per trial; the agent puts each figure's mean,
// 95% interval and CV over the trials on the load's last trial. Shared by core and the results view.
import { finite } from './finite';

/** One figure over a load's trials, as the agent reports it. */
export interface TrialStat {
  n: number;
  mean: number;
  /** Half-width of the 95% confidence interval; null with one trial. */
  half_width: number | null;
  /** Sample standard deviation over the mean; null with one trial or a zero mean. */
  cv: number | null;
  values?: number[];
}

export type TrialStats = Record<string, TrialStat>;

/**
 * One level per load: the last trial of each, its figures replaced by their means over the trials (so that
 * whatever reads a level reads the mean) and `trial_stats` kept. Levels of a run without trials are returned
 * as they are; a load whose trials did not all finish keeps its trials' levels, each for itself.
 */
export function collapseTrials<T extends Record<string, unknown>>(levels: readonly T[]): T[] {
  if (!levels.some((l) => (finite(l.trials) ?? 1) > 1)) return [...levels];
  const out: T[] = [];
  const pending: T[] = [];
  for (const l of levels) {
    const stats = l.trial_stats as TrialStats | undefined;
    if ((finite(l.trials) ?? 1) <= 1) {
      out.push(l);
      continue;
    }
    if (!stats) {
      pending.push(l);
      continue;
    }
    // This load is complete: its earlier trials are folded into it.
    const load = levelKey(l);
    for (let i = pending.length - 1; i >= 0; i--) if (levelKey(pending[i]) === load) pending.splice(i, 1);
    const means: Record<string, unknown> = {};
    for (const [k, s] of Object.entries(stats)) if (k in l) means[k] = s.mean;
    out.push({ ...l, ...means });
  }
  return [...out, ...pending];
}

function levelKey(l: Record<string, unknown>): string {
  return `${String(l.max_concurrency)}|${String(l.request_rate)}`;
}
