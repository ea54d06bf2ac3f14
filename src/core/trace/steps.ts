import { Annotation, CollectedTrace, RuntimeKind } from './collect';
import { StepSource, TraceAnalysisOptions } from './types';

export type StepKind = 'prefill' | 'decode';

/** One step: its kernels, as indices into the collected kernel columns, in start-time order. */
export interface Step {
  kind: StepKind;
  label: string;
  kernels: number[];
}

export interface StepFinding {
  source: StepSource;
  annotation?: string;
  steps: Step[];
  kernelsOutside: number;
  warnings: string[];
}

export interface StepPattern {
  re: RegExp;
  /** 'prefill' / 'decode' when the name says; undefined to decide from the step's size. */
  kindOf(name: string): StepKind | undefined;
}

export const byName = (name: string): StepKind | undefined => (/prefill|extend/i.test(name) ? 'prefill' : /decode/i.test(name) ? 'decode' : undefined);

// Step annotations, best first. vLLM's worker marks each step `execute_new_{N}_cached_{M}` (N new
// requests: a prefill when N > 0); torch's schedule marks `ProfilerStep#k`; servers and scripts use
// names like execute_model / forward_batch / decode_step.
export const BUILTIN_PATTERNS: StepPattern[] = [
  { re: /^execute_new_(\d+)_cached_(\d+)/, kindOf: (n) => (Number(/^execute_new_(\d+)/.exec(n)?.[1] ?? 0) > 0 ? 'prefill' : 'decode') },
  { re: /^ProfilerStep#\d+$/, kindOf: byName },
  { re: /execute_model|model_forward|forward_batch|run_batch|forward_(decode|extend|idle)|decode_step|prefill_step|^(decode|prefill)$/i, kindOf: byName },
];

/** Sorted kernel order by start time. */
export function kernelOrder(trace: CollectedTrace): Uint32Array {
  const { ts, count } = trace.kernels;
  const order = new Uint32Array(count);
  let sorted = true;
  for (let i = 0; i < count; i++) {
    order[i] = i;
    if (i > 0 && ts[i] < ts[i - 1]) sorted = false;
  }
  if (!sorted) order.sort((a, b) => ts[a] - ts[b] || a - b);
  return order;
}

/** Looks up the launch call (cuda_runtime / cuda_driver event) of a correlation id. */
class LaunchIndex {
  private readonly byCorr: Int32Array;
  constructor(private readonly trace: CollectedTrace) {
    const { correlation, count } = trace.runtime;
    const idx = new Int32Array(count);
    for (let i = 0; i < count; i++) idx[i] = i;
    idx.sort((a, b) => correlation[a] - correlation[b]);
    this.byCorr = idx;
  }
  find(corr: number): number {
    if (corr < 0) return -1;
    const { correlation } = this.trace.runtime;
    let lo = 0;
    let hi = this.byCorr.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = correlation[this.byCorr[mid]];
      if (c === corr) return this.byCorr[mid];
      if (c < corr) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/** Index of the last start <= t in an ascending array, or -1. */
export function lastAtOrBefore(starts: ArrayLike<number>, t: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * Outermost annotations only: a range wholly inside an earlier kept one (same pattern) is nested,
 * not a step. Ranges that merely overlap stay separate steps; a kernel then joins the later one.
 */
export function outermost(list: Annotation[]): Annotation[] {
  const sorted = [...list].sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const kept: Annotation[] = [];
  let end = -Infinity;
  for (const a of sorted) {
    if (a.ts + a.dur <= end) continue;
    kept.push(a);
    end = Math.max(end, a.ts + a.dur);
  }
  return kept;
}

function median(values: number[]): number {
  if (!values.length) return 0;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** What the step-kind rules need to know of a step. */
export interface KindCandidate {
  kind: StepKind | undefined;
  /** Start of the step's first kernel on the GPU, us. */
  firstTs: number;
  kernels: number;
  busyUs: number;
}

/** GPU-side annotations whose names tell a step's kind ("prefill+decode", "decode", SGLang's "extend"...). */
export function isKindAnnotation(a: Annotation): boolean {
  return a.gpu && byName(a.name) !== undefined;
}

/**
 * Decides the kind of steps no name told: first from a nested GPU annotation at the step's first
 * kernel, else by size: much bigger than the typical step means prefill (or mixed), else decode.
 */
export function settleStepKinds(items: KindCandidate[], kindAnnotations: Annotation[]): void {
  settleStepKindsByAnnotation(items, kindAnnotations);
  const unknown = items.filter((p) => p.kind === undefined);
  const typicalCount = median(unknown.map((p) => p.kernels));
  const typicalBusy = median(unknown.map((p) => p.busyUs));
  for (const p of unknown) p.kind = p.kernels > 1.5 * typicalCount || p.busyUs > 2.5 * typicalBusy ? 'prefill' : 'decode';
}

/** Only the annotation rule of settleStepKinds. `kindAnnotations` sorted by ts is fastest; it is sorted here if not. */
export function settleStepKindsByAnnotation(items: KindCandidate[], kindAnnotations: Annotation[]): void {
  let kinds = kindAnnotations;
  for (let i = 1; i < kinds.length; i++) {
    if (kinds[i].ts < kinds[i - 1].ts) {
      kinds = [...kindAnnotations].sort((a, b) => a.ts - b.ts);
      break;
    }
  }
  const starts = kinds.map((a) => a.ts);
  for (const p of items) {
    if (p.kind !== undefined || !p.kernels || !kinds.length) continue;
    // The latest-starting range that holds t is the innermost; a range ending exactly at t is the step before.
    for (let i = lastAtOrBefore(starts, p.firstTs), seen = 0; i >= 0 && seen < 8; i--, seen++) {
      const a = kinds[i];
      if (p.firstTs >= a.ts + a.dur) continue;
      p.kind = byName(a.name);
      break;
    }
  }
}

function settleKinds(trace: CollectedTrace, pending: { step: Step; kind: StepKind | undefined }[]): void {
  const items = pending.map((p) => ({
    kind: p.kind,
    firstTs: p.step.kernels.length ? trace.kernels.ts[p.step.kernels[0]] : 0,
    kernels: p.step.kernels.length,
    busyUs: p.step.kernels.reduce((acc, k) => acc + trace.kernels.dur[k], 0),
  }));
  settleStepKinds(items, trace.annotations.filter(isKindAnnotation));
  pending.forEach((p, i) => (p.step.kind = items[i].kind!));
}

/**
 * Finds the steps of a trace: from step annotations where it has them, else from CUDA graph
 * launches, else from idle gaps on the GPU; and tells prefill from decode.
 */
export function findSteps(trace: CollectedTrace, order: Uint32Array, options: TraceAnalysisOptions = {}): StepFinding {
  const warnings: string[] = [];
  const k = trace.kernels;
  if (k.count === 0) return { source: 'none', steps: [], kernelsOutside: 0, warnings: ['The trace holds no GPU kernels: was the profiler started with CUDA activities, and did the server run any request while it was on?'] };
  const patterns: StepPattern[] = [];
  if (options.stepAnnotation) patterns.push({ re: new RegExp(options.stepAnnotation), kindOf: byName });
  patterns.push(...BUILTIN_PATTERNS);
  const launches = new LaunchIndex(trace);

  // 1. CPU-side step annotations; kernels join the step whose range holds their launch call.
  for (const gpu of [false, true]) {
    for (const pattern of patterns) {
      const matching = trace.annotations.filter((a) => a.gpu === gpu && pattern.re.test(a.name));
      if (!matching.length) continue;
      const ranges = outermost(matching);
      const starts = ranges.map((a) => a.ts);
      const steps: Step[] = ranges.map((a) => ({ kind: 'decode', label: a.name, kernels: [] }));
      let outside = 0;
      let unlaunched = 0;
      for (let o = 0; o < order.length; o++) {
        const ki = order[o];
        let t: number;
        if (gpu) {
          t = k.ts[ki];
        } else {
          const r = launches.find(k.correlation[ki]);
          if (r < 0) {
            unlaunched++;
            outside++;
            continue;
          }
          t = trace.runtime.ts[r];
        }
        const s = lastAtOrBefore(starts, t);
        if (s >= 0 && t <= ranges[s].ts + ranges[s].dur) steps[s].kernels.push(ki);
        else outside++;
      }
      if (unlaunched) warnings.push(`${unlaunched} kernels have no launch call in the trace (no matching correlation id) and were left out of the steps.`);
      const pending: { step: Step; kind: StepKind | undefined }[] = [];
      steps.forEach((step, s) => {
        if (step.kernels.length) pending.push({ step, kind: pattern.kindOf(ranges[s].name) });
      });
      const empty = steps.length - pending.length;
      if (empty) warnings.push(`${empty} step annotation(s) launched no GPU kernel and were skipped.`);
      if (!pending.length) continue;
      settleKinds(trace, pending);
      if (gpu) warnings.push('Steps come from GPU-side annotations only (no CPU annotation matched): nested annotations may cover part of a step.');
      return { source: gpu ? 'gpu-annotation' : 'annotation', annotation: pattern.re.source, steps: pending.map((p) => p.step), kernelsOutside: outside, warnings };
    }
  }

  // 2. CUDA graphs: each cudaGraphLaunch starts a step; its replayed kernels carry its correlation id.
  const graphStarts: number[] = [];
  const graphCorrToStep = new Map<number, number>();
  {
    const r = trace.runtime;
    const graphIdx: number[] = [];
    for (let i = 0; i < r.count; i++) if (r.kind[i] === RuntimeKind.GraphLaunch) graphIdx.push(i);
    graphIdx.sort((a, b) => r.ts[a] - r.ts[b]);
    graphIdx.forEach((gi, s) => {
      graphStarts.push(r.ts[gi]);
      graphCorrToStep.set(r.correlation[gi], s);
    });
  }
  if (graphStarts.length) {
    const steps: Step[] = graphStarts.map((_, s) => ({ kind: 'decode', label: `cudaGraphLaunch #${s + 1}`, kernels: [] }));
    let outside = 0;
    for (let o = 0; o < order.length; o++) {
      const ki = order[o];
      const corr = k.correlation[ki];
      let s = graphCorrToStep.get(corr);
      if (s === undefined) {
        // An eager kernel (sampling, input copies) joins the graph launch before it.
        const r = launches.find(corr);
        s = r >= 0 ? lastAtOrBefore(graphStarts, trace.runtime.ts[r]) : -1;
      }
      if (s >= 0) steps[s].kernels.push(ki);
      else outside++;
    }
    warnings.push('No step annotations: one step per cudaGraphLaunch. A server that replays several graphs per step (piecewise graphs) shows each piece as a step; profile with step annotations for exact steps.');
    const pending = steps.filter((s) => s.kernels.length).map((step) => ({ step, kind: undefined as StepKind | undefined }));
    settleKinds(trace, pending);
    return { source: 'cuda-graph', steps: pending.map((p) => p.step), kernelsOutside: outside, warnings };
  }

  // 3. Idle gaps on the GPU: a gap much longer than the typical one ends a step.
  const gaps: number[] = [];
  let busyEnd = -Infinity;
  for (let o = 0; o < order.length; o++) {
    const ki = order[o];
    if (o > 0 && k.ts[ki] > busyEnd) gaps.push(k.ts[ki] - busyEnd);
    busyEnd = Math.max(busyEnd, k.ts[ki] + k.dur[ki]);
  }
  // Within a step gaps are many and short; between steps, one long gap per step. The lower quartile
  // is a typical in-step gap even when steps hold few kernels.
  const sortedGaps = [...gaps].sort((a, b) => a - b);
  const typicalGap = sortedGaps.length ? sortedGaps[Math.floor(sortedGaps.length / 4)] : 0;
  const threshold = options.minStepGapUs ?? Math.max(10, 5 * typicalGap);
  const steps: Step[] = [];
  let current: Step = { kind: 'decode', label: 'gap step 1', kernels: [] };
  busyEnd = -Infinity;
  for (let o = 0; o < order.length; o++) {
    const ki = order[o];
    if (current.kernels.length && k.ts[ki] - busyEnd > threshold) {
      steps.push(current);
      current = { kind: 'decode', label: `gap step ${steps.length + 1}`, kernels: [] };
    }
    current.kernels.push(ki);
    busyEnd = Math.max(busyEnd, k.ts[ki] + k.dur[ki]);
  }
  steps.push(current);
  warnings.push(`No step annotations and no CUDA graph launches: step boundaries guessed from GPU idle gaps longer than ${threshold.toFixed(1)} us. Check the step count against the workload.`);
  const pending = steps.map((step) => ({ step, kind: undefined as StepKind | undefined }));
  settleKinds(trace, pending);
  return { source: 'idle-gaps', steps, kernelsOutside: 0, warnings };
}
