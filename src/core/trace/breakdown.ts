import { CollectedTrace, RuntimeKind } from './collect';
import { IDLE_CATEGORY, KernelClassifier } from './families';
import { Step, StepFinding } from './steps';
import { CategoryShare, Distribution, KernelStat, LaunchStats, RankBreakdown, RankSkew, StepGroupBreakdown, TRACE_BREAKDOWN_VERSION, TraceBreakdown } from './types';

/** Categories that are all-reduce, whichever library ran it. */
const ALL_REDUCE_CATEGORIES = ['all-reduce', 'nccl all-reduce'];

export function distribution(values: ArrayLike<number>): Distribution | null {
  const n = values.length;
  if (!n) return null;
  const s = Float64Array.from(values).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += s[i];
  const at = (q: number) => s[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))];
  return { mean: sum / n, median: n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2, min: s[0], max: s[n - 1], p90: at(0.9) };
}

/** Category of each kernel name id, computed once per distinct name. */
export function categoriesOf(trace: CollectedTrace, classifier: KernelClassifier): string[] {
  const { names } = trace.kernels;
  const memoryName = new Uint8Array(names.length);
  for (let i = 0; i < trace.kernels.count; i++) if (trace.kernels.memory[i]) memoryName[trace.kernels.name[i]] = 1;
  return names.map((n, id) => classifier.classify(n, memoryName[id] === 1));
}

interface GroupAccumulator {
  count: number;
  spanUs: number;
  stepMs: number[];
  starts: number[];
  /** category -> [attributed us, raw us, kernels] */
  byCategory: Map<string, [number, number, number]>;
}

function newGroup(): GroupAccumulator {
  return { count: 0, spanUs: 0, stepMs: [], starts: [], byCategory: new Map() };
}

/**
 * Adds one step to a group: wall time from its first kernel's start to its last kernel's end; every
 * microsecond of it goes to exactly one category. Where kernels on several streams overlap, the
 * kernel that started first keeps the overlap (as vLLM's nsys tool does); the rest is idle.
 */
function addStep(group: GroupAccumulator, step: Step, trace: CollectedTrace, category: string[]): void {
  const { ts, dur, name } = trace.kernels;
  const ks = step.kernels;
  let start = Infinity;
  let end = -Infinity;
  for (const ki of ks) {
    start = Math.min(start, ts[ki]);
    end = Math.max(end, ts[ki] + dur[ki]);
  }
  const span = end - start;
  let covered = start;
  let attributedTotal = 0;
  for (const ki of ks) {
    const kEnd = ts[ki] + dur[ki];
    const attributed = Math.max(0, kEnd - Math.max(ts[ki], covered));
    if (kEnd > covered) covered = kEnd;
    attributedTotal += attributed;
    const cat = category[name[ki]];
    let acc = group.byCategory.get(cat);
    if (!acc) group.byCategory.set(cat, (acc = [0, 0, 0]));
    acc[0] += attributed;
    acc[1] += dur[ki];
    acc[2] += 1;
  }
  let idle = group.byCategory.get(IDLE_CATEGORY);
  if (!idle) group.byCategory.set(IDLE_CATEGORY, (idle = [0, 0, 0]));
  idle[0] += Math.max(0, span - attributedTotal);
  group.count++;
  group.spanUs += span;
  group.stepMs.push(span / 1000);
  group.starts.push(start);
}

function finishGroup(g: GroupAccumulator, adjacent: boolean[]): StepGroupBreakdown {
  const categories: CategoryShare[] = [];
  for (const [category, [attributed, raw, kernels]] of g.byCategory) {
    categories.push({
      category,
      msPerStep: attributed / 1000 / g.count,
      sharePct: g.spanUs > 0 ? (100 * attributed) / g.spanUs : 0,
      rawMsPerStep: raw / 1000 / g.count,
      kernelsPerStep: kernels / g.count,
    });
  }
  categories.sort((a, b) => b.msPerStep - a.msPerStep);
  const periods: number[] = [];
  for (let i = 1; i < g.starts.length; i++) if (adjacent[i]) periods.push((g.starts[i] - g.starts[i - 1]) / 1000);
  return { count: g.count, stepMs: distribution(g.stepMs), periodMs: distribution(periods), categories };
}

function kernelStats(trace: CollectedTrace, category: string[], kernels: Iterable<number>, limit: number): KernelStat[] {
  const { dur, name, names } = trace.kernels;
  const count = new Float64Array(names.length);
  const total = new Float64Array(names.length);
  const min = new Float64Array(names.length).fill(Infinity);
  const max = new Float64Array(names.length).fill(-Infinity);
  for (const ki of kernels) {
    const id = name[ki];
    const d = dur[ki];
    count[id]++;
    total[id] += d;
    if (d < min[id]) min[id] = d;
    if (d > max[id]) max[id] = d;
  }
  const stats: KernelStat[] = [];
  for (let id = 0; id < names.length; id++) {
    if (!count[id]) continue;
    stats.push({ name: names[id], category: category[id], count: count[id], totalMs: total[id] / 1000, meanUs: total[id] / count[id], minUs: min[id], maxUs: max[id] });
  }
  stats.sort((a, b) => b.totalMs - a.totalMs);
  return stats.slice(0, limit);
}

function* range(n: number): Iterable<number> {
  for (let i = 0; i < n; i++) yield i;
}

function launchStats(trace: CollectedTrace): LaunchStats | null {
  const r = trace.runtime;
  if (!r.count) return null;
  const calls: number[] = [];
  let graphLaunches = 0;
  let syncUs = 0;
  const launchTsByCorr = new Map<number, number>();
  for (let i = 0; i < r.count; i++) {
    const kind = r.kind[i];
    if (kind === RuntimeKind.KernelLaunch || kind === RuntimeKind.GraphLaunch) {
      calls.push(r.dur[i]);
      if (kind === RuntimeKind.GraphLaunch) graphLaunches++;
      else if (r.correlation[i] >= 0) launchTsByCorr.set(r.correlation[i], r.ts[i]);
    } else if (kind === RuntimeKind.Sync) {
      syncUs += r.dur[i];
    }
  }
  const queue: number[] = [];
  const k = trace.kernels;
  for (let i = 0; i < k.count; i++) {
    const t = launchTsByCorr.get(k.correlation[i]);
    if (t !== undefined) {
      queue.push(k.ts[i] - t);
      // a correlation id launches one kernel eagerly; later kernels with it are not eager launches
      launchTsByCorr.delete(k.correlation[i]);
    }
  }
  return { launches: calls.length, graphLaunches, launchCallUs: distribution(calls), launchToStartUs: distribution(queue), syncMs: syncUs / 1000 };
}

export interface RankInput {
  file: string;
  fallbackRank: number;
  trace: CollectedTrace;
  order: Uint32Array;
  steps: StepFinding;
  metadata: Record<string, unknown>;
  events: number;
  jsonBytes: number;
  fileBytes: number;
  compressed: boolean;
  truncated?: string;
}

function rankOf(file: string, metadata: Record<string, unknown>, fallback: number): { rank: number; worldSize: number | null } {
  const info = metadata.distributedInfo as { rank?: unknown; world_size?: unknown } | undefined;
  const worldSize = typeof info?.world_size === 'number' ? info.world_size : null;
  if (typeof info?.rank === 'number') return { rank: info.rank, worldSize };
  const base = file.split(/[\\/]/).pop() ?? file;
  const m = /rank[_-]?(\d+)/i.exec(base) ?? /TP-(\d+)/.exec(base) ?? /_tp(\d+)/i.exec(base);
  return { rank: m ? Number(m[1]) : fallback, worldSize };
}

/** The breakdown of one rank's trace. */
export function rankBreakdown(input: RankInput, classifier: KernelClassifier, topKernels = 15): RankBreakdown {
  const { trace, steps } = input;
  const category = categoriesOf(trace, classifier);
  const decode = newGroup();
  const prefill = newGroup();
  const decodeAdjacent: boolean[] = [];
  const prefillAdjacent: boolean[] = [];
  let previous: string | undefined;
  const decodeKernels: number[] = [];
  for (const step of steps.steps) {
    if (step.kind === 'decode') {
      decodeAdjacent.push(previous === 'decode');
      addStep(decode, step, trace, category);
      for (const ki of step.kernels) decodeKernels.push(ki);
    } else {
      prefillAdjacent.push(previous === 'prefill');
      addStep(prefill, step, trace, category);
    }
    previous = step.kind;
  }
  const k = trace.kernels;
  let kernelUs = 0;
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < k.count; i++) {
    kernelUs += k.dur[i];
    first = Math.min(first, k.ts[i]);
    last = Math.max(last, k.ts[i] + k.dur[i]);
  }
  const props = input.metadata.deviceProperties as { name?: unknown }[] | undefined;
  const { rank, worldSize } = rankOf(input.file, input.metadata, input.fallbackRank);
  const warnings = [...steps.warnings];
  if (k.count > 0 && decode.count === 0) warnings.push('No decode step was found in this trace: was a decode workload running while the profiler was on?');
  return {
    file: input.file,
    rank,
    worldSize,
    device: Array.isArray(props) && typeof props[0]?.name === 'string' ? props[0].name : null,
    stepSource: steps.source,
    stepAnnotation: steps.annotation,
    decode: finishGroup(decode, decodeAdjacent),
    prefill: finishGroup(prefill, prefillAdjacent),
    topKernels: kernelStats(trace, category, decodeKernels, topKernels),
    kernelTotals: kernelStats(trace, category, range(k.count), Infinity),
    launch: launchStats(trace),
    totals: {
      events: input.events,
      kernels: k.count,
      kernelMs: kernelUs / 1000,
      gpuSpanMs: k.count ? (last - first) / 1000 : 0,
      jsonBytes: input.jsonBytes,
      fileBytes: input.fileBytes,
      compressed: input.compressed,
      kernelsOutsideSteps: steps.kernelsOutside,
    },
    truncated: input.truncated,
    warnings,
  };
}

/** Combines per-rank breakdowns: categories averaged over ranks, rank skew, the headline. */
export function combineRanks(ranks: RankBreakdown[], categoryOrder: string[]): TraceBreakdown {
  const sorted = [...ranks].sort((a, b) => a.rank - b.rank);
  const withDecode = sorted.filter((r) => r.decode.count > 0 && r.decode.stepMs);
  const warnings: string[] = [];
  const seen = new Set<number>();
  for (const r of sorted) {
    if (seen.has(r.rank)) warnings.push(`Two files claim rank ${r.rank}: are they from different profiling sessions?`);
    seen.add(r.rank);
    if (r.truncated) warnings.push(`rank ${r.rank} (${r.file}): ${r.truncated}`);
  }
  const sums = new Map<string, [number, number, number]>();
  let stepMsSum = 0;
  const pooled: number[] = [];
  const periods: number[] = [];
  let steps = 0;
  for (const r of withDecode) {
    stepMsSum += r.decode.stepMs!.mean;
    steps += r.decode.count;
    if (r.decode.periodMs) periods.push(r.decode.periodMs.mean);
    pooled.push(r.decode.stepMs!.mean);
    for (const c of r.decode.categories) {
      const acc = sums.get(c.category) ?? [0, 0, 0];
      acc[0] += c.msPerStep;
      acc[1] += c.rawMsPerStep;
      acc[2] += c.kernelsPerStep;
      sums.set(c.category, acc);
    }
  }
  const n = withDecode.length;
  const stepMs = n ? stepMsSum / n : 0;
  const categories: CategoryShare[] = [...sums].map(([category, [ms, raw, kernels]]) => ({
    category,
    msPerStep: ms / n,
    sharePct: stepMs > 0 ? (100 * ms) / n / stepMs : 0,
    rawMsPerStep: raw / n,
    kernelsPerStep: kernels / n,
  }));
  categories.sort((a, b) => b.msPerStep - a.msPerStep);

  let skew: RankSkew | null = null;
  if (withDecode.length > 1) {
    const byRank = withDecode.map((r) => ({ rank: r.rank, stepMs: r.decode.stepMs!.mean }));
    const min = byRank.reduce((a, b) => (b.stepMs < a.stepMs ? b : a));
    const max = byRank.reduce((a, b) => (b.stepMs > a.stepMs ? b : a));
    skew = { stepMsByRank: byRank, minMs: min.stepMs, maxMs: max.stepMs, spreadPct: min.stepMs > 0 ? (100 * (max.stepMs - min.stepMs)) / min.stepMs : 0, slowestRank: max.rank, fastestRank: min.rank };
  }

  // The headline names the biggest part of the step; vLLM's custom all-reduce and NCCL's count as one.
  const allReduceParts = categories.filter((c) => ALL_REDUCE_CATEGORIES.includes(c.category));
  const allReduce = n && allReduceParts.length
    ? { msPerStep: allReduceParts.reduce((a, c) => a + c.msPerStep, 0), sharePct: allReduceParts.reduce((a, c) => a + c.sharePct, 0) }
    : null;
  const candidates = categories.filter((c) => c.category !== IDLE_CATEGORY && !ALL_REDUCE_CATEGORIES.includes(c.category)).map((c) => ({ name: c.category, msPerStep: c.msPerStep, sharePct: c.sharePct }));
  if (allReduce) candidates.push({ name: 'all-reduce', ...allReduce });
  const top = candidates.sort((a, b) => b.msPerStep - a.msPerStep)[0];
  const ms = (v: number) => v.toFixed(v < 1 ? 3 : 2);
  const scope = `${n} rank${n === 1 ? '' : 's'}, ${steps} decode step${steps === 1 ? '' : 's'}`;
  const headline = !n
    ? 'No decode steps found in the trace(s).'
    : top
      ? `${top.name} ${top.sharePct.toFixed(1)}% (${ms(top.msPerStep)} ms) of a ${ms(stepMs)} ms decode step (${scope})`
      : `${ms(stepMs)} ms decode step, all idle (${scope})`;
  const order = [...categoryOrder];
  for (const c of categories) if (!order.includes(c.category)) order.splice(order.length - 1, 0, c.category);
  return {
    version: TRACE_BREAKDOWN_VERSION,
    headline,
    files: sorted.map((r) => r.file),
    overall: { ranks: n, count: steps, stepMs: distribution(pooled), periodMs: distribution(periods), categories },
    allReduce,
    ranks: sorted,
    skew,
    categoryOrder: order,
    warnings,
  };
}
