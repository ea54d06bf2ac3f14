// The narrow inputs the decode-step budget reads from each phase's result, and the mappers from the
// result files the phases write. The budget depends on these shapes only, so a phase may add fields freely.
import { LinearShape, ModelStructure, presetFor } from './modelStructure';
import { printable } from '../../shared/printable';
import { finite } from '../../shared/finite';

/** One macro load level, with `vllm bench serve`'s field names. */
export interface MacroLevelInput {
  max_concurrency: number | null;
  request_rate?: number | string | null;
  completed?: number;
  mean_tpot_ms?: number;
  median_tpot_ms?: number;
  p99_tpot_ms?: number;
  std_tpot_ms?: number;
  mean_ttft_ms?: number;
  output_throughput?: number;
  /** The level was cut short (cancelled or interrupted mid-way). */
  partial?: boolean;
}

export interface MacroInput {
  runId: string;
  simulated?: boolean;
  model?: string;
  levels: MacroLevelInput[];
}

/** A decode step as the profiler measured it, averaged over the steps analysed. Times in ms. */
export interface ProfileInput {
  runId: string;
  simulated?: boolean;
  model?: string;
  /** Sequences in each profiled decode step. */
  batch: number;
  steps?: number;
  /** Wall time of one step on the GPU (first kernel start to last kernel end), averaged over ranks. */
  step_ms: number;
  /** Start-to-start time of consecutive decode steps: the step plus the GPU's idle time between steps. */
  period_ms?: number;
  /** Busy time per kernel category plus `idle`, averaged over ranks; adds up to step_ms. */
  by_category_ms: Record<string, number>;
  ranks?: { rank: number; step_ms: number }[];
  /** Kernels launched per step on one GPU, where the profile counts them. */
  kernels_per_step?: number;
  /** Attention kernels per decode step on one GPU (the trace's attention category): about one or a few per layer. */
  attention_kernels_per_step?: number;
  /** GPUs the profiled server ran on (the traces' ranks, or their distributedInfo world size). */
  world_size?: number;
  /**
   * Idle per step before a CUDA graph's first kernel, the GPU waiting while the CPU sits in
   * cudaGraphLaunch (graph launches per step x call start to first kernel), averaged over ranks.
   */
  graph_launch_wait_ms?: number;
  top_kernels?: { name: string; category: string; ms_per_step: number }[];
  /** Every kernel name the traces hold, where the analysis lists them: to tell "gone" from "out of the top". */
  kernel_names?: string[];
}

export interface MicroGemmInput {
  shape: string;
  m: number;
  n: number;
  k: number;
  time_us: number;
  /** Bytes the GEMM reads and writes once (weights, activations, output), where micro counts them. */
  bytes?: number;
}
export interface MicroAllReduceInput {
  size_bytes: number;
  time_us: number;
  busbw_gbps?: number;
  world_size?: number;
}
/** Launch overhead per kernel, eager (one launch per kernel) or replayed from a CUDA graph. */
export interface MicroLaunchInput {
  mode: 'eager' | 'graph';
  us_per_kernel: number;
}

export interface MicroInput {
  runId: string;
  simulated?: boolean;
  model?: ModelStructure;
  world_size?: number;
  gemm: MicroGemmInput[];
  allreduce: MicroAllReduceInput[];
  /** A cluster run's all-to-all at expert-parallel decode sizes (graph times where there are), and what sizes them. */
  alltoall?: MicroAllReduceInput[];
  expertParallel?: { moeLayers: number; topK: number; hidden: number; worldSize: number };
  launch: MicroLaunchInput[];
  /** Datasheet or measured peak bus bandwidth, GB/s. */
  peak_busbw_gbps?: number;
  /** The device's measured copy bandwidth (micro's peak point), TB/s: what a fused MoE kernel reads its experts' weights at. */
  copy_tbps?: number;
  gpu?: string;
  /** The micro run had no GPU: its times are CPU figures, useless for a GPU step. */
  on_cpu?: boolean;
  /** The collective library micro's all-reduce went through (nccl, gloo). */
  allreduce_backend?: string;
  /** The GEMM kernel micro timed, and why it is not the server's (Marlin needs vLLM on the host). */
  gemm_kernel?: { label?: string; fallback_reason?: string };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Macro levels from a macro result: `{levels: [...]}` or a bare array of `vllm bench serve`-named objects. */
export function macroLevelsFrom(result: unknown): MacroLevelInput[] {
  const list = Array.isArray(result) ? result : isObj(result) ? arr(result.levels ?? result.results) : [];
  return list.filter(isObj).map((l) => ({
    ...l,
    max_concurrency: finite(l.max_concurrency) ?? null,
    request_rate: (l.request_rate as number | string | null | undefined) ?? null,
  })) as MacroLevelInput[];
}

/**
 * The profile's decode step from a profile result. Understands the shared ProfileSummary
 * (`ranks[].step_us`, `ranks[].by_category` in microseconds) and a breakdown with
 * milliseconds (`step_ms`, `by_category_ms` or `categories: [{category, ms}]`), overall or per rank.
 */
export function profileInputFrom(runId: string, result: unknown, options: Record<string, unknown> = {}): ProfileInput | undefined {
  if (!isObj(result)) return undefined;
  const root: Obj = isObj(result.breakdown) ? { ...result, ...result.breakdown } : result;
  if (isObj(root.overall) && Array.isArray(root.overall.categories)) return fromTraceBreakdown(runId, root, options);
  const ranksRaw = arr(root.ranks).filter(isObj);
  const ranks = ranksRaw
    .map((r, i) => ({
      rank: finite(r.rank) ?? i,
      step_ms: finite(r.step_ms) ?? (finite(r.step_us) !== undefined ? (r.step_us as number) / 1000 : NaN),
      by_category_ms: categoriesMs(r),
    }))
    .filter((r) => Number.isFinite(r.step_ms));
  let step_ms = finite(root.step_ms) ?? (finite(root.step_us) !== undefined ? (root.step_us as number) / 1000 : undefined);
  let byCat = categoriesMs(root);
  if (step_ms === undefined && ranks.length) step_ms = mean(ranks.map((r) => r.step_ms));
  if (!Object.keys(byCat).length && ranks.length) {
    byCat = {};
    for (const r of ranks) for (const [c, ms] of Object.entries(r.by_category_ms)) byCat[c] = (byCat[c] ?? 0) + ms / ranks.length;
  }
  if (step_ms === undefined || !Object.keys(byCat).length) return undefined;
  const busy = Object.entries(byCat)
    .filter(([c]) => c !== 'idle')
    .reduce((s, [, ms]) => s + ms, 0);
  if (byCat.idle === undefined) byCat.idle = Math.max(0, step_ms - busy);
  const steps = finite(root.steps) ?? finite(root.decode_steps) ?? finite(root.step_count);
  const kernels = arr(root.kernels ?? root.top_kernels).filter(isObj);
  const top_kernels = kernels.map((k) => ({
    name: printable(str(k.name) ?? '?'),
    category: str(k.category) ?? 'other',
    ms_per_step:
      finite(k.ms_per_step) ??
      (finite(k.total_us) !== undefined && steps
        ? (k.total_us as number) / 1000 / steps / Math.max(1, ranks.length || 1)
        : ((finite(k.mean_us) ?? 0) * (finite(k.count) ?? 1)) / 1000 / Math.max(1, steps ?? 1)),
  }));
  const countPerStep = finite(root.kernels_per_step);
  return {
    runId,
    simulated: root.simulated === true || undefined,
    model: str(root.model) ?? str(options.model),
    batch: batchOf(root, options),
    steps,
    step_ms,
    by_category_ms: byCat,
    ranks: ranks.length ? ranks.map(({ rank, step_ms: ms }) => ({ rank, step_ms: ms })) : undefined,
    kernels_per_step: countPerStep,
    top_kernels: top_kernels.length ? top_kernels : undefined,
  };
}

/** Sequences per profiled step: the profile phase's workload (capture.workload.concurrency), else its options. */
const batchOf = (root: Obj, options: Record<string, unknown>): number => {
  const workload = isObj(root.capture) && isObj(root.capture.workload) ? root.capture.workload : {};
  return (
    finite(workload.concurrency) ??
    finite(root.batch) ??
    finite(root.batch_size) ??
    finite(root.concurrency) ??
    finite(options.batch) ??
    finite(options.concurrency) ??
    1
  );
};

/** The trace analyzer's TraceBreakdown (src/core/trace/types.ts): decode steps averaged over ranks. */
function fromTraceBreakdown(runId: string, root: Obj, options: Record<string, unknown>): ProfileInput | undefined {
  const overall = root.overall as Obj;
  const stepMs = isObj(overall.stepMs) ? finite(overall.stepMs.mean) : undefined;
  if (stepMs === undefined || !(stepMs > 0)) return undefined;
  const byCat: Record<string, number> = {};
  let kernels = 0;
  let attentionKernels: number | undefined;
  for (const c of arr(overall.categories).filter(isObj)) {
    const name = str(c.category);
    const ms = finite(c.msPerStep);
    if (!name || ms === undefined) continue;
    byCat[name] = (byCat[name] ?? 0) + ms;
    kernels += finite(c.kernelsPerStep) ?? 0;
    if (name === 'attention') attentionKernels = finite(c.kernelsPerStep);
  }
  const rankList = arr(root.ranks).filter(isObj);
  const ranks = rankList
    .map((r) => ({ rank: finite(r.rank) ?? 0, step_ms: isObj(r.decode) && isObj(r.decode.stepMs) ? finite(r.decode.stepMs.mean) : undefined }))
    .filter((r): r is { rank: number; step_ms: number } => r.step_ms !== undefined);
  const names = new Set<string>();
  for (const r of rankList) for (const k of arr(r.kernelTotals).filter(isObj)) if (str(k.name)) names.add(printable(k.name as string));
  // Kernels of every rank, each rank's total over its own decode steps, as ms per step averaged over ranks.
  const perStep = new Map<string, { name: string; category: string; ms: number }>();
  for (const r of rankList) {
    const count = isObj(r.decode) ? finite(r.decode.count) : undefined;
    if (!count) continue;
    for (const k of arr(r.topKernels).filter(isObj)) {
      // Names from a stored result are printed: one written before names were cleaned may hold control characters.
      const name = printable(str(k.name) ?? '');
      const total = finite(k.totalMs);
      if (!name || total === undefined) continue;
      const entry = perStep.get(name) ?? { name, category: str(k.category) ?? 'other', ms: 0 };
      entry.ms += total / count / Math.max(1, rankList.length);
      perStep.set(name, entry);
    }
  }
  const waits: number[] = [];
  for (const r of rankList) {
    const launch = isObj(r.launch) ? r.launch : {};
    const wait = isObj(launch.graphLaunchToFirstKernelUs) ? finite(launch.graphLaunchToFirstKernelUs.mean) : undefined;
    // Steps that decode replay the graphs (a server's prefill-only steps run eager or piecewise).
    const steps = ['decode', 'mixed'].reduce((a, k) => a + (isObj(r[k]) ? (finite((r[k] as Obj).count) ?? 0) : 0), 0);
    const launches = finite(launch.graphLaunches);
    if (wait !== undefined && launches && steps) waits.push(((launches / steps) * wait) / 1000);
  }
  return {
    runId,
    simulated: root.simulated === true || undefined,
    model: str(root.model) ?? str(options.model),
    batch: batchOf(root, options),
    ...(waits.length ? { graph_launch_wait_ms: Math.min(byCat.idle ?? Infinity, mean(waits)) } : {}),
    steps: finite(overall.count),
    step_ms: stepMs,
    period_ms: isObj(overall.periodMs) ? finite(overall.periodMs.mean) : undefined,
    by_category_ms: byCat,
    ranks: ranks.length ? ranks : undefined,
    kernels_per_step: kernels > 0 ? kernels : undefined,
    attention_kernels_per_step: kernels > 0 ? (attentionKernels ?? 0) : undefined,
    // The traces' own world size; else several rank files say at least that many; one file alone says nothing.
    world_size: Math.max(0, ...rankList.map((r) => finite(r.worldSize) ?? 0)) || (rankList.length > 1 ? rankList.length : undefined),
    top_kernels: perStep.size
      ? [...perStep.values()].sort((a, b) => b.ms - a.ms).map((k) => ({ name: k.name, category: k.category, ms_per_step: k.ms }))
      : undefined,
    kernel_names: names.size ? [...names] : undefined,
  };
}

function categoriesMs(o: Obj): Record<string, number> {
  const out: Record<string, number> = {};
  if (isObj(o.by_category_ms)) {
    for (const [c, v] of Object.entries(o.by_category_ms)) if (finite(v) !== undefined) out[c] = v as number;
  } else if (isObj(o.by_category)) {
    // ProfileSummary keeps microseconds.
    for (const [c, v] of Object.entries(o.by_category)) if (finite(v) !== undefined) out[c] = (v as number) / 1000;
  } else if (Array.isArray(o.categories)) {
    for (const c of o.categories.filter(isObj)) {
      const name = str(c.category) ?? str(c.name);
      const ms = finite(c.ms) ?? finite(c.ms_per_step) ?? (finite(c.us) !== undefined ? (c.us as number) / 1000 : undefined);
      if (name && ms !== undefined) out[name] = ms;
    }
  }
  return out;
}

/** The micro phase's points from its result: `points` tagged by kind, or `gemm`/`allreduce`/`launch` lists. */
export function microInputFrom(runId: string, result: unknown, options: Record<string, unknown> = {}): MicroInput {
  const r: Obj = isObj(result) ? result : {};
  const points = arr(r.points).filter(isObj);
  const ofKind = (kind: string, key: string) => [
    ...arr(r[key]).filter(isObj),
    ...points.filter((p) => p.kind === kind).map((p) => (isObj(p.point) ? p.point : p)),
  ];
  const gemm = ofKind('gemm', 'gemm')
    .map((p) => ({
      shape: str(p.shape) ?? str(p.name) ?? `${p.n}x${p.k}`,
      m: finite(p.m) ?? NaN,
      n: finite(p.n) ?? NaN,
      k: finite(p.k) ?? NaN,
      time_us: finite(p.time_us) ?? finite(p.us) ?? finite(p.median_us) ?? NaN,
      bytes: finite(p.bytes),
    }))
    .filter((p) => [p.m, p.n, p.k, p.time_us].every(Number.isFinite));
  // The agent times each size eagerly and replayed from a CUDA graph; vLLM decodes from CUDA graphs,
  // so the graph times are the ones a decode step sees where they exist.
  // A cluster run times each collective across the hosts and within one: the step's collectives span the hosts.
  const collective = (kind: string) => {
    const all = ofKind(kind, kind);
    const scoped = all.some((p) => p.scope === 'inter-node') ? all.filter((p) => p.scope === 'inter-node') : all;
    const graphOnly = scoped.some((p) => p.mode === 'graph');
    return scoped
      .filter((p) => !graphOnly || p.mode === 'graph')
      .map((p) => ({
        size_bytes: finite(p.size_bytes) ?? finite(p.bytes) ?? NaN,
        time_us: finite(p.time_us) ?? finite(p.us) ?? finite(p.median_us) ?? NaN,
        busbw_gbps: finite(p.busbw_gbps),
        world_size: finite(p.world_size),
      }))
      .filter((p) => Number.isFinite(p.size_bytes) && Number.isFinite(p.time_us));
  };
  const allreduce = collective('allreduce');
  const alltoall = collective('alltoall');
  const plan = isObj(r.cluster) && isObj(r.cluster.plan) ? r.cluster.plan : undefined;
  const expertParallel =
    plan && alltoall.length && finite(plan.moe_layers) && finite(plan.top_k) && finite(plan.hidden) && finite(plan.world_size)
      ? { moeLayers: plan.moe_layers as number, topK: plan.top_k as number, hidden: plan.hidden as number, worldSize: plan.world_size as number }
      : undefined;
  const launch: MicroLaunchInput[] = [];
  for (const p of ofKind('launch', 'launch')) {
    const mode = /graph/i.test(String(p.mode ?? p.variant ?? p.name ?? '')) ? 'graph' : 'eager';
    const us = finite(p.us_per_kernel) ?? finite(p.per_kernel_us) ?? finite(p.us_per_launch) ?? finite(p.time_us);
    if (us !== undefined) launch.push({ mode, us_per_kernel: us });
    // One point may carry both modes.
    if (finite(p.eager_us) !== undefined) launch.push({ mode: 'eager', us_per_kernel: p.eager_us as number });
    if (finite(p.graph_us) !== undefined) launch.push({ mode: 'graph', us_per_kernel: p.graph_us as number });
  }
  const peak = ofKind('peak', 'peak').find((p) => finite(p.busbw_gbps) !== undefined) ?? (isObj(r.peak) ? r.peak : undefined);
  const copy = ofKind('peak', 'peak').find((p) => p.what === 'copy' && finite(p.tbps) !== undefined);
  const arInfo = isObj(r.allreduce) ? r.allreduce : {};
  const world_size = finite(arInfo.world_size) ?? finite(r.world_size) ?? allreduce.find((p) => p.world_size)?.world_size ?? finite(r.tp);
  const device = isObj(r.device) ? r.device : {};
  return {
    runId,
    simulated: r.simulated === true || undefined,
    model: modelFromMicro(runId, r, options, world_size),
    world_size,
    gemm,
    allreduce,
    ...(expertParallel ? { alltoall, expertParallel } : {}),
    launch,
    peak_busbw_gbps: peak ? finite(peak.busbw_gbps) : undefined,
    copy_tbps: copy ? finite(copy.tbps) : undefined,
    gpu: str(device.name) ?? (peak ? str(peak.gpu) : str(r.gpu)),
    on_cpu: device.kind === 'cpu' || undefined,
    allreduce_backend: str(arInfo.backend),
    gemm_kernel: isObj(r.kernel) ? { label: str(r.kernel.label), fallback_reason: str(r.kernel.fallback_reason) } : undefined,
  };
}

/** The model structure the micro run measured for: its shapes with per-step counts, else a preset by name. */
function modelFromMicro(runId: string, r: Obj, options: Record<string, unknown>, worldSize: number | undefined): ModelStructure | undefined {
  const m = isObj(r.model) ? r.model : {};
  const name = str(m.name) ?? str(r.model) ?? str(options.model);
  const shapes = arr(r.shapes).filter(isObj);
  const hidden = finite(m.hidden);
  const layers = finite(m.layers);
  const preset = presetFor(name);
  if (!hidden || !layers || !shapes.length) return preset;
  const experts = parseExperts(shapes) ?? preset?.experts;
  const linears: LinearShape[] = shapes.map((s) => ({
    name: str(s.name) ?? '?',
    n: finite(s.n) ?? 0,
    k: finite(s.k) ?? 0,
    perStep: finite(s.per_step) ?? 1,
    routedExpert: /^moe\.(gate_up|down)/.test(str(s.name) ?? ''),
  }));
  const dtype = str(m.dtype) ?? 'bf16';
  return {
    name: name ?? 'model',
    source: `micro run ${runId}`,
    hidden,
    layers,
    tp: finite(r.tp) ?? worldSize ?? preset?.tp ?? 1,
    activationBytes: dtype === 'fp32' ? 4 : 2,
    allReducesPerLayer: 2,
    extraAllReduces: 1,
    experts,
    linears,
  };
}

function parseExperts(shapes: Obj[]): { total: number; active: number } | undefined {
  for (const s of shapes) {
    const m = /(\d+) experts, (\d+) active/.exec(str(s.note) ?? '');
    if (m) return { total: Number(m[1]), active: Number(m[2]) };
  }
  return undefined;
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
