// Two profiles side by side: the decode step, each category's time and share, and the kernels that
// appeared or vanished between them.
import { ProfileInput } from '../explain/inputs';
import { differenceTable, summarize } from './macro';
import { judgeFixed } from './noise';
import { Comparison, Difference, RunRef } from './types';

// A profile reports means over its steps and ranks without their spread, so the rule is fixed: a
// category matters when it moves by 5% of itself (replayed decode steps repeat their kernels' times
// to within a few percent) and by at least 1% of the step (anything smaller cannot move the step, and
// so TPOT, by more than 1%). The step itself: 2%.
const CATEGORY_RELATIVE = 0.05;
const CATEGORY_OF_STEP = 0.01;
const STEP_RELATIVE = 0.02;
/** Kernels compared for appearing or vanishing: each run's top by time per step. */
const TOP_KERNELS = 15;

export function compareProfiles(a: RunRef, pa: ProfileInput, b: RunRef, pb: ProfileInput): Comparison {
  const differences: Difference[] = [];
  const unmatched: string[] = [];
  const step = judgeFixed(pa.step_ms, pb.step_ms, STEP_RELATIVE, 0);
  const stepDifference: Difference = {
    where: 'decode step',
    metric: 'ms per step',
    a: pa.step_ms,
    b: pb.step_ms,
    delta: step.delta,
    relative: step.relative,
    threshold: step.threshold,
    flagged: step.flagged,
    better: step.flagged ? (step.delta < 0 ? 'b' : 'a') : undefined,
    reading: step.flagged ? `The decode step went from ${pa.step_ms.toFixed(2)} to ${pb.step_ms.toFixed(2)} ms (${pct(step.relative)}).` : undefined,
  };
  differences.push(stepDifference);
  if (pa.batch !== pb.batch) unmatched.push(`The profiles ran different batches (${pa.batch} and ${pb.batch}); their steps are not like for like.`);

  const categories = [...new Set([...Object.keys(pa.by_category_ms), ...Object.keys(pb.by_category_ms)])];
  const rows = categories
    .map((category) => ({ category, ma: pa.by_category_ms[category] ?? 0, mb: pb.by_category_ms[category] ?? 0 }))
    .sort((x, y) => Math.max(y.ma, y.mb) - Math.max(x.ma, x.mb));
  for (const { category, ma, mb } of rows) {
    const v = judgeFixed(ma, mb, CATEGORY_RELATIVE, CATEGORY_OF_STEP * pa.step_ms);
    const shareA = (ma / pa.step_ms) * 100;
    const shareB = (mb / pb.step_ms) * 100;
    const label = category;
    differences.push({
      where: `category ${label}`,
      metric: 'ms per step',
      a: ma,
      b: mb,
      delta: v.delta,
      relative: v.relative,
      threshold: v.threshold,
      flagged: v.flagged,
      better: v.flagged ? (v.delta < 0 ? 'b' : 'a') : undefined,
      reading: v.flagged
        ? `${label}: ${ma.toFixed(2)} → ${mb.toFixed(2)} ms per step (${pct(v.relative)}), ${shareA.toFixed(1)}% → ${shareB.toFixed(1)}% of the step.`
        : undefined,
    });
    differences.push({
      where: `category ${label}`,
      metric: 'share of step (%)',
      a: shareA,
      b: shareB,
      delta: shareB - shareA,
      relative: shareA ? (shareB - shareA) / shareA : undefined,
      flagged: false,
    });
  }

  const kernelLines: string[] = [];
  const kernelsA = pa.top_kernels ?? [];
  const kernelsB = pb.top_kernels ?? [];
  if (kernelsA.length && kernelsB.length) {
    // Against every kernel a run has where the analysis lists them all, so that a kernel that merely
    // dropped out of the other run's top list is not called gone.
    const namesA = new Set([...(pa.kernel_names ?? []), ...kernelsA.map((k) => k.name)]);
    const namesB = new Set([...(pb.kernel_names ?? []), ...kernelsB.map((k) => k.name)]);
    for (const k of kernelsA.slice(0, TOP_KERNELS)) {
      if (namesB.has(k.name)) continue;
      kernelLines.push(`Vanished in ${b.id}: ${shorten(k.name)} (${k.category}, ${k.ms_per_step.toFixed(3)} ms per step in ${a.id}).`);
      differences.push({
        where: `kernel ${shorten(k.name)}`,
        metric: 'ms per step',
        a: k.ms_per_step,
        b: undefined,
        flagged: true,
        reading: kernelLines[kernelLines.length - 1],
      });
    }
    for (const k of kernelsB.slice(0, TOP_KERNELS)) {
      if (namesA.has(k.name)) continue;
      kernelLines.push(`Appeared in ${b.id}: ${shorten(k.name)} (${k.category}, ${k.ms_per_step.toFixed(3)} ms per step).`);
      differences.push({
        where: `kernel ${shorten(k.name)}`,
        metric: 'ms per step',
        a: undefined,
        b: k.ms_per_step,
        flagged: true,
        reading: kernelLines[kernelLines.length - 1],
      });
    }
  } else {
    unmatched.push('At least one profile lists no kernels, so appeared/vanished kernels are not compared.');
  }
  const numeric = differences.filter((d) => d.a !== undefined && d.b !== undefined);
  // The step first: it is what the categories add up to.
  const summary = summarize(numeric, a, b, stepDifference);
  if (kernelLines.length) {
    // Kernels that appeared or vanished are the news: no "no difference" line above them.
    if (!numeric.some((d) => d.flagged)) summary.length = 0;
    summary.push(...kernelLines);
  }
  const table = differenceTable(
    'compare-profile',
    `Profile: ${a.label} (A) vs ${b.label} (B)`,
    numeric,
    a,
    b,
    `Flagged (▲) when a category moves by more than ${CATEGORY_RELATIVE * 100}% of itself and ${CATEGORY_OF_STEP * 100}% of A's step; the step when it moves by more than ${STEP_RELATIVE * 100}%.`,
  );
  const tables = [table];
  if (kernelLines.length) {
    tables.push({
      id: 'compare-profile-kernels',
      title: "Kernels that appeared or vanished (each run's top 15 by time per step)",
      columns: [{ key: 'line', label: 'kernel', align: 'left' }],
      rows: kernelLines.map((line) => ({ line })),
    });
  }
  return { phase: 'profile', a, b, differences, summary, unmatched, tables };
}

function pct(rel: number): string {
  return `${rel >= 0 ? '+' : '−'}${Math.abs(rel * 100).toFixed(1)}%`;
}

/** Kernel names run to hundreds of characters of template arguments; the head tells them apart. */
function shorten(name: string): string {
  return name.length > 90 ? `${name.slice(0, 87)}...` : name;
}
