import type { TraceBreakdown } from './types';
import { KernelStat, ProfileSummary, RunSummary } from '../../shared/results';
import { isNsysBreakdown, nsysViewOf } from './nsysView';

/** True for the trace analyser's result (what the profiler phase and Analyze Trace File produce). */
export function isTraceBreakdown(value: unknown): value is TraceBreakdown {
  const v = value as Partial<TraceBreakdown> | undefined;
  return (
    !!v &&
    typeof v === 'object' &&
    Array.isArray(v.ranks) &&
    Array.isArray(v.categoryOrder) &&
    typeof v.overall === 'object' &&
    v.ranks.every((r) => typeof r === 'object' && r !== null && 'decode' in r)
  );
}

/**
 * What the views draw from a trace breakdown: per rank, microseconds per decode step by category;
 * per kernel, launches and time per decode step (merged over ranks), min/mean/max per launch.
 */
export function profileSummaryOf(b: TraceBreakdown): ProfileSummary {
  const ranks = b.ranks.map((r) => {
    const byCategory = Object.fromEntries(r.decode.categories.map((c) => [c.category, c.msPerStep * 1000]));
    const stepUs = r.decode.categories.reduce((s, c) => s + c.msPerStep, 0) * 1000;
    return { rank: r.rank, step_us: stepUs, by_category: byCategory };
  });
  const merged = new Map<string, { k: KernelStat; steps: number }>();
  for (const r of b.ranks) {
    const steps = Math.max(1, r.decode.count);
    for (const k of r.topKernels) {
      const m = merged.get(k.name);
      if (!m) {
        merged.set(k.name, {
          k: { name: k.name, category: k.category, count: k.count, total_us: k.totalMs * 1000, mean_us: k.meanUs, min_us: k.minUs, max_us: k.maxUs },
          steps,
        });
        continue;
      }
      const total = m.k.total_us + k.totalMs * 1000;
      const count = m.k.count + k.count;
      m.k = {
        ...m.k,
        count,
        total_us: total,
        mean_us: count ? total / count : 0,
        min_us: Math.min(m.k.min_us, k.minUs),
        max_us: Math.max(m.k.max_us, k.maxUs),
      };
      m.steps += steps;
    }
  }
  // The step the headline divides by: the mean over the ranks that had decode steps.
  const meanStepUs = b.overall.stepMs ? b.overall.stepMs.mean * 1000 : ranks.length ? ranks.reduce((s, r) => s + r.step_us, 0) / ranks.length : 0;
  // Per decode step: what one step of one rank spends on the kernel, on average.
  const kernels = [...merged.values()].map(({ k, steps }) => {
    const perStep = k.total_us / steps;
    return { ...k, count: k.count / steps, total_us: perStep, share: meanStepUs ? perStep / meanStepUs : undefined };
  });
  kernels.sort((a, c) => c.total_us - a.total_us);
  // The headline's own figures: categories averaged over the ranks that had decode steps.
  const overallStepUs = b.overall.stepMs ? b.overall.stepMs.mean * 1000 : undefined;
  const overall = overallStepUs
    ? { step_us: overallStepUs, by_category: Object.fromEntries(b.overall.categories.map((c) => [c.category, c.msPerStep * 1000])) }
    : undefined;
  const kernelsByRank = b.ranks
    .filter((r) => r.decode.count > 0)
    .map((r) => {
      const steps = r.decode.count;
      const stepUs = r.decode.stepMs ? r.decode.stepMs.mean * 1000 : 0;
      return {
        rank: r.rank,
        kernels: r.topKernels
          .map((k) => ({
            name: k.name,
            category: k.category,
            count: k.count / steps,
            total_us: (k.totalMs * 1000) / steps,
            mean_us: k.meanUs,
            min_us: k.minUs,
            max_us: k.maxUs,
            share: stepUs ? (k.totalMs * 1000) / steps / stepUs : undefined,
            rank: r.rank,
          }))
          .sort((a, c) => c.total_us - a.total_us),
      };
    });
  // The first rank that kept its steps: the lowest-numbered, as the other views list ranks.
  const stepped = [...b.ranks].sort((x, y) => x.rank - y.rank).find((r) => r.steps?.length);
  const stepTimeline = stepped && {
    rank: stepped.rank,
    steps: stepped.steps!.map((s) => ({
      kind: s.kind,
      label: s.label,
      start_us: s.startUs,
      dur_us: s.durUs,
      by_category: s.byCategory,
      kernels: s.kernels.map(([at, count, total]) => {
        const k = stepped.kernelTotals[at];
        return { name: k?.name ?? '?', category: k?.category ?? 'other', count, total_us: total };
      }),
    })),
  };
  return { categories: b.categoryOrder, ranks, kernels, steps: b.overall.count, overall, kernelsByRank, ...(stepTimeline ? { stepTimeline } : {}) };
}

/**
 * Puts a run's profile in the shape the views draw. The host owns the data, so the conversion
 * happens here once, not in every view.
 */
export function viewableRun(run: RunSummary): RunSummary {
  const p = run.profile as unknown;
  // An Nsight Systems profile carries its layer and module breakdown beside the categories.
  const nsys = (p as { nsys?: unknown } | undefined)?.nsys;
  const modules = isNsysBreakdown(nsys) ? { nsys: nsysViewOf(nsys) } : {};
  if (isTraceBreakdown(p))
    return {
      ...run,
      headline: run.headline ?? (modules.nsys?.headline || p.headline),
      profile: { ...profileSummaryOf(p), breakdownHeadline: p.headline, warnings: p.warnings, ...modules },
    };
  const nested = (p as { breakdown?: unknown } | undefined)?.breakdown;
  if (isTraceBreakdown(nested))
    return {
      ...run,
      headline: run.headline ?? nested.headline,
      profile: { ...(p as object), ...profileSummaryOf(nested), breakdown: undefined, breakdownHeadline: nested.headline },
    };
  return run;
}
