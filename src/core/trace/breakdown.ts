import { badTimesWarning, CollectedTrace, LaunchIndex, RuntimeKind } from './collect';
import { printable } from '../../shared/printable';
import { IDLE_CATEGORY, KernelClassifier } from './families';
import { StepConfidence, StepFinding, StepKind } from './steps';
import {
  CategoryShare,
  Distribution,
  FrontEndTrace,
  KernelStat,
  LaunchStats,
  RankBreakdown,
  RankSkew,
  StepDetail,
  StepGroupBreakdown,
  StepSource,
  TRACE_BREAKDOWN_VERSION,
  TraceBreakdown,
} from './types';

/** The category of all-reduce, whichever library ran it (families.ts puts NCCL's and vLLM's custom kernels in it). */
const ALL_REDUCE_CATEGORY = 'all-reduce';

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

/** One step, reduced to what the breakdown needs: filled from kernels in start order, then the kernels can go. */
export interface StepAggregate {
  kind: StepKind | undefined;
  label: string;
  /** First kernel start and last kernel end, us. */
  start: number;
  end: number;
  kernels: number;
  /** Sum of kernel durations, us. */
  busyUs: number;
  /** category -> [attributed us, raw us, kernels] */
  byCategory: Map<string, [number, number, number]>;
  /** kernel name id -> [count, total us, min us, max us] */
  byName: Map<number, [number, number, number, number]>;
  /** What the step kept of its own sums when they were folded (the first STEP_DETAIL_LIMIT steps of a kind). */
  detail?: StepSums;
}

/** How many steps of a rank keep their own categories and kernels for the run's timeline; the rest are only summed. */
export const STEP_DETAIL_LIMIT = 500;
/** The largest kernels each of those steps lists. */
const STEP_DETAIL_KERNELS = 10;

/** A step's own sums, kept small: its categories' attributed time and its largest kernels. */
export interface StepSums {
  byCategory: [string, number][];
  /** [name id, launches, total us], largest first. */
  kernels: [number, number, number][];
}

function stepSums(step: StepAggregate): StepSums {
  const kernels = [...step.byName].map(([id, [count, total]]): [number, number, number] => [id, count, total]);
  kernels.sort((a, b) => b[2] - a[2] || a[0] - b[0]);
  return { byCategory: [...step.byCategory].map(([cat, [attr]]) => [cat, attr]), kernels: kernels.slice(0, STEP_DETAIL_KERNELS) };
}

// Hundredths of a microsecond are more than a trace's clock resolves, and keep a rank's 500 steps short in result.json.
const centi = (us: number): number => Math.round(us * 100) / 100;

/**
 * The first STEP_DETAIL_LIMIT steps, in time order, each with its categories and largest kernels; times
 * from the first step's start. A kernel is named by its place in the rank's `kernelTotals`, so that 500
 * steps do not repeat long C++ names thousands of times.
 */
function stepDetails(steps: readonly StepAggregate[], names: readonly string[], totals: readonly KernelStat[]): StepDetail[] {
  const out: StepDetail[] = [];
  const origin = steps[0]?.start ?? 0;
  const place = new Map(totals.map((k, i) => [k.name, i]));
  for (const step of steps.slice(0, STEP_DETAIL_LIMIT)) {
    const sums = step.detail ?? (step.byCategory.size ? stepSums(step) : undefined);
    // A step folded past the limit of its kind kept nothing: the list stops there, as it never skips a step.
    if (!sums) break;
    const kernels = sums.kernels.map(([id, count, total]): [number, number, number] => [place.get(names[id]) ?? -1, count, total]);
    // Equal times in kernelTotals' order, so that the streaming and in-memory ways list a step alike.
    kernels.sort((a, b) => b[2] - a[2] || a[0] - b[0]);
    out.push({
      kind: step.kind ?? null,
      label: step.label,
      startUs: centi(step.start - origin),
      durUs: centi(step.end - step.start),
      byCategory: Object.fromEntries(sums.byCategory.map(([c, us]) => [c, centi(us)])),
      kernels: kernels.map(([at, count, total]) => [at, count, centi(total)]),
    });
  }
  return out;
}

/** Kernel columns that a step's kernels are read from, by row: typed arrays all, so that each read is of one kind. */
export interface KernelRows {
  ts: Float64Array;
  dur: Float64Array;
  name: Int32Array;
}

/**
 * Reduces one step's kernels (rows `order[0..count)`, or the first `count`, in start-time order): wall time from the first kernel's start to
 * the last kernel's end; every microsecond of it goes to exactly one category. Where kernels on
 * several streams overlap, the kernel that started first keeps the overlap (as vLLM's nsys tool
 * does); what no kernel covers is idle.
 */
export function aggregateStep(
  label: string,
  kind: StepKind | undefined,
  count: number,
  rows: KernelRows,
  order: readonly number[] | undefined,
  category: readonly string[],
): StepAggregate {
  const { ts, dur, name } = rows;
  let start = Infinity;
  let end = -Infinity;
  for (let i = 0; i < count; i++) {
    const r = order === undefined ? i : order[i];
    start = Math.min(start, ts[r]);
    end = Math.max(end, ts[r] + dur[r]);
  }
  const byCategory = new Map<string, [number, number, number]>();
  const byName = new Map<number, [number, number, number, number]>();
  let covered = start;
  let attributedTotal = 0;
  let busy = 0;
  for (let i = 0; i < count; i++) {
    const r = order === undefined ? i : order[i];
    const t = ts[r];
    const d = dur[r];
    const kEnd = t + d;
    const attributed = Math.max(0, kEnd - Math.max(t, covered));
    if (kEnd > covered) covered = kEnd;
    attributedTotal += attributed;
    busy += d;
    const id = name[r];
    const cat = category[id];
    let acc = byCategory.get(cat);
    if (!acc) byCategory.set(cat, (acc = [0, 0, 0]));
    acc[0] += attributed;
    acc[1] += d;
    acc[2] += 1;
    const n = byName.get(id);
    if (!n) byName.set(id, [1, d, d, d]);
    else {
      n[0]++;
      n[1] += d;
      if (d < n[2]) n[2] = d;
      if (d > n[3]) n[3] = d;
    }
  }
  byCategory.set(IDLE_CATEGORY, [Math.max(0, end - start - attributedTotal), 0, 0]);
  return { kind, label, start, end, kernels: count, busyUs: busy, byCategory, byName };
}

/** Category and kernel sums of steps of one kind, folded as the steps closed (their aggregates keep only their times). */
export interface FoldedSteps {
  byCategory: Map<string, [number, number, number]>;
  byName: Map<number, [number, number, number, number]>;
  /** Steps folded that kept their own sums (up to STEP_DETAIL_LIMIT). */
  detailed: number;
}

export function newFolded(): FoldedSteps {
  return { byCategory: new Map(), byName: new Map(), detailed: 0 };
}

/** Adds a step's sums into `into` and empties the step's own maps. */
export function foldStep(into: FoldedSteps, step: StepAggregate): void {
  if (into.detailed < STEP_DETAIL_LIMIT) {
    step.detail = stepSums(step);
    into.detailed++;
  }
  for (const [cat, [attr, raw, k]] of step.byCategory) {
    const acc = into.byCategory.get(cat);
    if (!acc) into.byCategory.set(cat, [attr, raw, k]);
    else {
      acc[0] += attr;
      acc[1] += raw;
      acc[2] += k;
    }
  }
  for (const [id, [c, t, mn, mx]] of step.byName) {
    const m = into.byName.get(id);
    if (!m) into.byName.set(id, [c, t, mn, mx]);
    else {
      m[0] += c;
      m[1] += t;
      m[2] = Math.min(m[2], mn);
      m[3] = Math.max(m[3], mx);
    }
  }
  step.byCategory = EMPTY_CATEGORIES;
  step.byName = EMPTY_NAMES;
}

// What a folded step keeps: nothing. Shared, never written to.
const EMPTY_CATEGORIES: Map<string, [number, number, number]> = new Map();
const EMPTY_NAMES: Map<number, [number, number, number, number]> = new Map();

/** Decode or prefill steps of one rank, from their aggregates in time order (and what was folded already). */
function groupBreakdown(all: StepAggregate[], kind: StepKind, folded?: FoldedSteps): StepGroupBreakdown {
  const totals = new Map<string, [number, number, number]>();
  for (const [cat, v] of folded?.byCategory ?? []) totals.set(cat, [...v]);
  let spanUs = 0;
  let count = 0;
  const stepMs: number[] = [];
  const periods: number[] = [];
  for (let i = 0; i < all.length; i++) {
    const a = all[i];
    if (a.kind !== kind) continue;
    count++;
    spanUs += a.end - a.start;
    stepMs.push((a.end - a.start) / 1000);
    if (i > 0 && all[i - 1].kind === kind) periods.push((a.start - all[i - 1].start) / 1000);
    for (const [cat, [attr, raw, k]] of a.byCategory) {
      const acc = totals.get(cat) ?? [0, 0, 0];
      acc[0] += attr;
      acc[1] += raw;
      acc[2] += k;
      totals.set(cat, acc);
    }
  }
  const categories: CategoryShare[] = [];
  for (const [category, [attributed, raw, kernels]] of totals) {
    categories.push({
      category,
      msPerStep: attributed / 1000 / count,
      sharePct: spanUs > 0 ? (100 * attributed) / spanUs : 0,
      rawMsPerStep: raw / 1000 / count,
      kernelsPerStep: kernels / count,
    });
  }
  categories.sort((a, b) => b.msPerStep - a.msPerStep);
  return { count, stepMs: distribution(stepMs), periodMs: distribution(periods), categories };
}

/** Per-name statistics merged over steps of one kind. */
function stepKernelStats(
  all: StepAggregate[],
  kind: StepKind,
  names: readonly string[],
  category: readonly string[],
  limit: number,
  folded?: FoldedSteps,
): KernelStat[] {
  const merged = new Map<number, [number, number, number, number]>();
  for (const [id, v] of folded?.byName ?? []) merged.set(id, [...v]);
  for (const a of all) {
    if (a.kind !== kind) continue;
    for (const [id, [c, t, mn, mx]] of a.byName) {
      const m = merged.get(id);
      if (!m) merged.set(id, [c, t, mn, mx]);
      else {
        m[0] += c;
        m[1] += t;
        m[2] = Math.min(m[2], mn);
        m[3] = Math.max(m[3], mx);
      }
    }
  }
  return statsFrom(merged, names, category, limit);
}

export function statsFrom(
  byName: Map<number, [number, number, number, number]>,
  names: readonly string[],
  category: readonly string[],
  limit: number,
): KernelStat[] {
  const stats: KernelStat[] = [];
  for (const [id, [count, total, min, max]] of byName) {
    stats.push({ name: names[id], category: category[id], count, totalMs: total / 1000, meanUs: total / count, minUs: min, maxUs: max });
  }
  stats.sort((a, b) => b.totalMs - a.totalMs);
  return stats.slice(0, limit);
}

function launchStats(trace: CollectedTrace): LaunchStats | null {
  const r = trace.runtime;
  if (!r.count) return null;
  // Typed arrays and a sorted index, not a Map per launch: a trace with no step names keeps every
  // kernel of the part it collects, and a Map of them would double the analysis's memory at its peak.
  const calls = new Float64Array(r.count);
  let launches = 0;
  let graphLaunches = 0;
  let syncUs = 0;
  for (let i = 0; i < r.count; i++) {
    const kind = r.kind[i];
    if (kind === RuntimeKind.KernelLaunch || kind === RuntimeKind.GraphLaunch) {
      calls[launches++] = r.dur[i];
      if (kind === RuntimeKind.GraphLaunch) graphLaunches++;
    } else if (kind === RuntimeKind.Sync) {
      syncUs += r.dur[i];
    }
  }
  // A correlation id launches one kernel eagerly; later kernels with it are not eager launches.
  const eager = new LaunchIndex(r, (i) => r.kind[i] === RuntimeKind.KernelLaunch);
  const taken = new Uint8Array(eager.rows.length);
  const k = trace.kernels;
  const queue = new Float64Array(k.count);
  let queued = 0;
  for (let i = 0; i < k.count; i++) {
    const at = eager.slot(k.correlation[i]);
    if (at >= 0 && !taken[at]) {
      taken[at] = 1;
      queue[queued++] = k.ts[i] - r.ts[eager.rows[at]];
    }
  }
  // Each graph launch's first replayed kernel: they all carry the launch's correlation id.
  const graphs = new LaunchIndex(r, (i) => r.kind[i] === RuntimeKind.GraphLaunch);
  const firstKernel = new Float64Array(graphs.rows.length).fill(Infinity);
  for (let i = 0; i < k.count; i++) {
    const at = graphs.slot(k.correlation[i]);
    if (at >= 0 && k.ts[i] < firstKernel[at]) firstKernel[at] = k.ts[i];
  }
  const waits: number[] = [];
  graphs.rows.forEach((row, at) => {
    if (firstKernel[at] !== Infinity) waits.push(firstKernel[at] - r.ts[row]);
  });
  return {
    launches,
    graphLaunches,
    launchCallUs: distribution(calls.subarray(0, launches)),
    launchToStartUs: distribution(queue.subarray(0, queued)),
    syncMs: syncUs / 1000,
    ...(waits.length ? { graphLaunchToFirstKernelUs: distribution(waits) } : {}),
  };
}

export const CUT_STEP_WARNING = 'The file was cut: its last step, cut with it, is left out of the breakdown.';

/** What reading one rank's trace file tells about the file itself, whichever way it was read. */
export interface RankFileFacts {
  file: string;
  fallbackRank: number;
  metadata: Record<string, unknown>;
  events: number;
  jsonBytes: number;
  fileBytes: number;
  compressed: boolean;
  truncated?: string;
}

/** Everything one rank's breakdown is assembled from, whichever way the trace was read. */
export interface RankParts extends RankFileFacts {
  source: StepSource;
  annotation?: string;
  /** Who named the steps, when a name or a module did. */
  stepWriter?: string;
  confidence?: StepConfidence;
  /** In time order, kinds settled. */
  steps: StepAggregate[];
  names: readonly string[];
  /** Category of each name id. */
  category: readonly string[];
  /** name id -> [count, total us, min us, max us] over the whole trace. */
  kernelTotals: Map<number, [number, number, number, number]>;
  launch: LaunchStats | null;
  kernels: number;
  kernelUs: number;
  firstTs: number;
  lastEnd: number;
  kernelsOutside: number;
  warnings: string[];
  analysis: 'streaming' | 'in-memory';
  /** Sums of steps whose kind was known when they closed (streaming); their aggregates keep only times. */
  folded?: Record<StepKind, FoldedSteps>;
  /** Why there are no steps although there are kernels (StepFinding.noSteps). */
  noSteps?: string;
}

/** The in-memory way: every kernel was kept, the steps found afterwards (steps.ts). */
export function partsFromCollected(input: RankInput, classifier: KernelClassifier): RankParts {
  const { trace, steps } = input;
  const k = trace.kernels;
  const category = categoriesOf(trace, classifier);
  const aggregates = steps.steps.map((step) => {
    const ks = step.kernels;
    return aggregateStep(step.label, step.kind, ks.length, k, ks, category);
  });
  aggregates.sort((a, b) => a.start - b.start);
  const warnings = [...steps.warnings];
  if (trace.badTimes) warnings.push(badTimesWarning(trace.badTimes));
  if (input.truncated && aggregates.length) {
    aggregates.pop();
    warnings.push(CUT_STEP_WARNING);
  }
  const totals = new Map<number, [number, number, number, number]>();
  let kernelUs = 0;
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < k.count; i++) {
    const d = k.dur[i];
    kernelUs += d;
    first = Math.min(first, k.ts[i]);
    last = Math.max(last, k.ts[i] + d);
    const t = totals.get(k.name[i]);
    if (!t) totals.set(k.name[i], [1, d, d, d]);
    else {
      t[0]++;
      t[1] += d;
      if (d < t[2]) t[2] = d;
      if (d > t[3]) t[3] = d;
    }
  }
  return {
    file: input.file,
    fallbackRank: input.fallbackRank,
    metadata: input.metadata,
    events: input.events,
    jsonBytes: input.jsonBytes,
    fileBytes: input.fileBytes,
    compressed: input.compressed,
    truncated: input.truncated,
    source: steps.source,
    annotation: steps.annotation,
    stepWriter: steps.writer,
    confidence: steps.confidence,
    steps: aggregates,
    names: k.names,
    category,
    kernelTotals: totals,
    launch: launchStats(trace),
    kernels: k.count,
    kernelUs,
    firstTs: first,
    lastEnd: last,
    kernelsOutside: steps.kernelsOutside,
    warnings,
    analysis: 'in-memory',
    ...(steps.noSteps ? { noSteps: steps.noSteps } : {}),
  };
}

export interface RankInput extends RankFileFacts {
  trace: CollectedTrace;
  order: Uint32Array;
  steps: StepFinding;
}

/**
 * The rank a file is: distributedInfo.rank, else the number its name gives in any naming in use —
 * vLLM's `dp0_pp0_tp1_dcp0_ep0_rank1.<time>...` (vllm/v1/worker/gpu_worker.py profile(), from
 * vllm/distributed/utils.py get_worker_rank_suffix) and the
 * older `<instance>-rank-1`, `rank-1`, SGLang's `<id>-TP-1[-DP-0][-PP-0][-EP-0]`
 * (python/sglang/srt/managers/scheduler_profiler_mixin.py) — else the file's position.
 */
export function rankOf(file: string, metadata: Record<string, unknown>, fallback: number): { rank: number; worldSize: number | null; rankName?: string } {
  const info = metadata.distributedInfo as { rank?: unknown; world_size?: unknown } | undefined;
  const worldSize = typeof info?.world_size === 'number' ? info.world_size : null;
  if (typeof info?.rank === 'number') return { rank: info.rank, worldSize };
  const base = file.split(/[\\/]/).pop() ?? file;
  const sglang = /-TP-(\d+)((?:-(?:DP|PP|EP)-\d+)*)/.exec(base);
  if (sglang) return { rank: Number(sglang[1]), worldSize, rankName: sglang[2] ? `TP-${sglang[1]}${sglang[2]}`.replace(/^-/, '') : undefined };
  const m = /(?:^|[_.-])rank[_-]?(\d+)/i.exec(base) ?? /_tp(\d+)/i.exec(base);
  return { rank: m ? Number(m[1]) : fallback, worldSize };
}

/** What a file with no GPU work is, or undefined for a GPU rank. */
export function frontEndKind(file: string, kernels: number): string | undefined {
  if (kernels > 0) return undefined;
  const base = file.split(/[\\/]/).pop() ?? file;
  // vLLM's AsyncLLM profiles the API server beside its workers unless ignore_frontend is set (vllm/v1/engine/async_llm.py).
  if (/\.async_llm\./.test(base)) return "vLLM's API-server (front-end) trace, CPU only";
  return 'a trace with no GPU kernels (CPU only)';
}

const METHOD: Record<StepSource, string> = {
  annotation: 'step annotations',
  'gpu-annotation': 'GPU-side step annotations',
  'module-forward': 'the outermost module forward (with_stack, no step names)',
  'repeating-pattern': 'the kernel sequence that repeats once per forward pass (no step names)',
  'cuda-graph': 'one CUDA graph launch per step (no step names)',
  none: 'nothing: the steps could not be told apart',
};

/** How one rank's steps were found, in words. */
export function stepMethod(source: StepSource, writer?: string): string {
  return source === 'annotation' && writer ? writer : METHOD[source];
}

/** One rank's breakdown from its parts. */
export function assembleRank(p: RankParts, topKernels = 15): RankBreakdown {
  const kernelTotals = statsFrom(p.kernelTotals, p.names, p.category, Infinity);
  const props = p.metadata.deviceProperties as { name?: unknown }[] | undefined;
  const { rank, worldSize, rankName } = rankOf(p.file, p.metadata, p.fallbackRank);
  const decode = groupBreakdown(p.steps, 'decode', p.folded?.decode);
  const mixed = groupBreakdown(p.steps, 'mixed', p.folded?.mixed);
  const warnings = [...p.warnings];
  if (p.kernels > 0 && decode.count === 0 && p.source !== 'none')
    warnings.push('No decode step was found in this trace: was a decode workload running while the profiler was on?');
  return {
    file: p.file,
    rank,
    rankName,
    worldSize,
    device: Array.isArray(props) && typeof props[0]?.name === 'string' ? printable(props[0].name) : null,
    stepSource: p.source,
    stepAnnotation: p.annotation,
    stepConfidence: p.confidence,
    stepMethod: stepMethod(p.source, p.stepWriter),
    decode,
    prefill: groupBreakdown(p.steps, 'prefill', p.folded?.prefill),
    ...(mixed.count ? { mixed } : {}),
    topKernels: stepKernelStats(p.steps, 'decode', p.names, p.category, topKernels, p.folded?.decode),
    kernelTotals,
    steps: stepDetails(p.steps, p.names, kernelTotals),
    launch: p.launch,
    totals: {
      events: p.events,
      kernels: p.kernels,
      kernelMs: p.kernelUs / 1000,
      gpuSpanMs: p.kernels ? (p.lastEnd - p.firstTs) / 1000 : 0,
      jsonBytes: p.jsonBytes,
      fileBytes: p.fileBytes,
      compressed: p.compressed,
      kernelsOutsideSteps: p.kernelsOutside,
    },
    truncated: p.truncated,
    analysis: p.analysis,
    warnings,
    ...(p.noSteps ? { noSteps: p.noSteps } : {}),
  };
}

/** The breakdown of one rank's trace, from the in-memory collection. */
export function rankBreakdown(input: RankInput, classifier: KernelClassifier, topKernels = 15): RankBreakdown {
  return assembleRank(partsFromCollected(input, classifier), topKernels);
}

/** Combines per-rank breakdowns: categories averaged over ranks, rank skew, the headline. Files with no GPU work are set apart, never ranks. */
export function combineRanks(all: RankBreakdown[], categoryOrder: string[]): TraceBreakdown {
  const frontEnd: FrontEndTrace[] = [];
  const ranks: RankBreakdown[] = [];
  for (const r of all) {
    const what = frontEndKind(r.file, r.totals.kernels);
    if (what && all.some((o) => o.totals.kernels > 0)) frontEnd.push({ file: r.file, what, events: r.totals.events });
    else ranks.push(r);
  }
  // SGLang names ranks TP-n-DP-m...: with several DP or PP groups, the TP number repeats; number them in name order.
  if (ranks.length > 1 && ranks.every((r) => r.rankName) && new Set(ranks.map((r) => r.rank)).size < ranks.length) {
    const key = (r: RankBreakdown) => (r.rankName ?? '').replace(/\d+/g, (d) => d.padStart(6, '0'));
    [...ranks].sort((a, b) => (key(a) < key(b) ? -1 : 1)).forEach((r, i) => (r.rank = i));
  }
  const sorted = [...ranks].sort((a, b) => a.rank - b.rank);
  const withDecode = sorted.filter((r) => r.decode.count > 0 && r.decode.stepMs);
  const warnings: string[] = [];
  const seen = new Set<number>();
  for (const r of sorted) {
    if (seen.has(r.rank)) warnings.push(`Two files claim rank ${r.rank}: are they from different profiling sessions?`);
    seen.add(r.rank);
    if (r.truncated) warnings.push(`rank ${r.rank} (${r.file}): ${r.truncated}`);
  }
  for (const f of frontEnd) warnings.push(`${f.file.split(/[\\/]/).pop()}: ${f.what}; not a GPU rank, left out of the breakdown.`);
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
    const busy = withDecode.map((r) => ({ rank: r.rank, busyMs: r.decode.categories.reduce((a, c) => a + c.rawMsPerStep, 0) }));
    const busiest = busy.reduce((a, b) => (b.busyMs > a.busyMs ? b : a));
    skew = {
      stepMsByRank: byRank,
      minMs: min.stepMs,
      maxMs: max.stepMs,
      spreadPct: min.stepMs > 0 ? (100 * (max.stepMs - min.stepMs)) / min.stepMs : 0,
      slowestRank: max.rank,
      fastestRank: min.rank,
      busyMsByRank: busy,
      busiestRank: busiest.rank,
    };
  }

  const allReducePart = categories.find((c) => c.category === ALL_REDUCE_CATEGORY);
  const allReduce = n && allReducePart ? { msPerStep: allReducePart.msPerStep, sharePct: allReducePart.sharePct } : null;
  const order = [...categoryOrder];
  for (const c of categories) if (!order.includes(c.category)) order.splice(order.length - 1, 0, c.category);
  return {
    version: TRACE_BREAKDOWN_VERSION,
    headline: headlineOf(sorted, withDecode, categories, stepMs, steps),
    files: [...sorted.map((r) => r.file), ...frontEnd.map((f) => f.file)],
    overall: { ranks: n, count: steps, stepMs: distribution(pooled), periodMs: distribution(periods), categories },
    allReduce,
    ranks: sorted,
    ...(frontEnd.length ? { frontEnd } : {}),
    skew,
    categoryOrder: order,
    warnings,
  };
}

/** Kernel time over the whole capture by category, for a trace whose steps are not known: totals, never per step. */
function totalsLine(r: RankBreakdown): string {
  const byCategory = new Map<string, number>();
  for (const k of r.kernelTotals) byCategory.set(k.category, (byCategory.get(k.category) ?? 0) + k.totalMs);
  const top = [...byCategory].sort((a, b) => b[1] - a[1]).slice(0, 3);
  const total = r.totals.kernelMs;
  const parts = top.map(([c, v]) => `${c} ${total > 0 ? ((100 * v) / total).toFixed(1) : '0'}%`);
  return `Totals over the capture: ${r.totals.kernels} kernels, ${total.toFixed(2)} ms of kernel time${parts.length ? ` (${parts.join(', ')})` : ''}.`;
}

/** GPU idle above this share of the decode step means the step waits on the CPU, not on kernels. */
const CPU_BOUND_IDLE_PCT = 50;

/**
 * The line a user reads first, in the categories the tables show: the largest part of the decode
 * step; or, when the GPU idles through most of it, that the CPU and kernel launches bound it; and
 * how the steps were found. When they could not be found, it says so instead of a breakdown.
 */
function headlineOf(ranks: RankBreakdown[], withDecode: RankBreakdown[], categories: CategoryShare[], stepMs: number, steps: number): string {
  const n = withDecode.length;
  const ms = (v: number) => v.toFixed(v < 1 ? 3 : 2);
  const methods = [...new Set(withDecode.map((r) => r.stepMethod ?? r.stepSource))];
  const how = `steps from ${methods.join(' / ')}`;
  if (!n) {
    const none = ranks.find((r) => r.stepSource === 'none' && r.totals.kernels > 0);
    if (none?.noSteps) return `${none.noSteps.replace(/ Profile .*$/, '')} ${totalsLine(none)}`;
    if (none)
      return `Steps not found: no step annotations and no repeating forward pass; profile through the server, whose steps are named, or give the step annotation. ${totalsLine(none)}`;
    return 'No decode steps found in the trace(s).';
  }
  const scope = `${n} rank${n === 1 ? '' : 's'}, ${steps} decode step${steps === 1 ? '' : 's'}; ${how}`;
  const unsure = withDecode.every((r) => r.stepConfidence === 'unsure');
  const top = categories.filter((c) => c.category !== IDLE_CATEGORY)[0];
  const idle = categories.find((c) => c.category === IDLE_CATEGORY);
  const prefix = unsure ? 'Steps uncertain (check the count against the workload): ' : '';
  if (idle && idle.sharePct >= CPU_BOUND_IDLE_PCT) {
    const kernelsPerStep = categories.reduce((a, c) => a + c.kernelsPerStep, 0);
    const launchUs = withDecode.map((r) => r.launch?.launchCallUs?.median).filter((v): v is number => v !== undefined);
    const launch = launchUs.length ? `, launch call median ${(launchUs.reduce((a, b) => a + b, 0) / launchUs.length).toFixed(1)} us` : '';
    return (
      `${prefix}GPU idle ${idle.sharePct.toFixed(1)}% of a ${ms(stepMs)} ms decode step: bound by the CPU and kernel launches (${kernelsPerStep.toFixed(0)} kernels per step${launch})` +
      (top ? `; largest kernel category ${top.category} ${top.sharePct.toFixed(1)}% (${ms(top.msPerStep)} ms)` : '') +
      ` (${scope})`
    );
  }
  return top
    ? `${prefix}${top.category} ${top.sharePct.toFixed(1)}% (${ms(top.msPerStep)} ms) of a ${ms(stepMs)} ms decode step (${scope})`
    : `${prefix}${ms(stepMs)} ms decode step, all idle (${scope})`;
}
